"""pypto.runtime.model_error: which kernel class a timeline is in, the calibration file's schema,
and the text shown for a calibrated class, a class without points, another machine and a
modified machine."""

from __future__ import annotations

import json

import pytest
import torch

import pypto
from pypto.runtime import model_error as me
from pypto.runtime.machine import A2A3, SMALL
from pypto.runtime.timeline import TaskEvent, Timeline

FP32 = pypto.DT_FP32
D, S = pypto.DYNAMIC, pypto.STATIC

FITTED = {"status": "fitted", "machine": "A2A3", "corpus": "shared/calibration/points.json", "date": "2026-12-01",
          "kinds": {"matmul": {"points": 9, "median": 0.07, "worst": 0.18, "loo_median": 0.10,
                               "families": ["gemm", "skinny_matmul"]},
                    "mixed": {"points": 0}},
          "overall": {"points": 47, "median": 0.2, "worst": 0.9}}


@pypto.jit
def matmul_only(a: pypto.Tensor([64, 64], FP32), b: pypto.Tensor([64, 64], FP32)):
    pypto.set_cube_tile_shapes([32, 32], [64, 64], [32, 32])
    return pypto.matmul(a, b, FP32)


@pypto.jit
def matmul_into_output(a: pypto.Tensor([64, 64], FP32), b: pypto.Tensor([64, 64], FP32),
                       out: pypto.Tensor([64, 64], FP32), out2: pypto.Tensor([64, 64], FP32)):
    # the result is copied into two outputs by vector cores (one alone would be written by the
    # cube's copy-out: passes/fold.py): data movement, still a matmul kernel
    pypto.set_cube_tile_shapes([32, 32], [64, 64], [32, 32])
    r = pypto.matmul(a, b)
    out[:] = r
    out2[:] = r


@pypto.jit
def elementwise(x: pypto.Tensor([D, S], FP32), y: pypto.Tensor([D, S], FP32), out: pypto.Tensor([D, S], FP32)):
    pypto.set_vec_tile_shapes(32, 64)
    out[:] = x * y + 1.0


@pypto.jit
def matmul_softmax(a: pypto.Tensor([64, 64], FP32), b: pypto.Tensor([64, 64], FP32),
                   out: pypto.Tensor([64, 64], FP32)):
    pypto.set_cube_tile_shapes([32, 32], [64, 64], [32, 32])
    pypto.set_vec_tile_shapes(16, 64)
    out[:] = pypto.softmax(pypto.matmul(a, b), dim=-1)


def _rand(*shape, seed):
    return torch.randn(*shape, generator=torch.Generator().manual_seed(seed))


def _timeline(kernel, *args):
    got = kernel(*args)
    return kernel.last_run.timeline, got


@pytest.fixture(scope="module")
def timelines():
    a, b = _rand(64, 64, seed=1), _rand(64, 64, seed=2)
    out = {}
    tl, got = _timeline(matmul_only, a, b)
    torch.testing.assert_close(got, a @ b, rtol=1e-4, atol=1e-4)
    out["matmul_only"] = tl
    o = torch.empty(64, 64)
    o2 = torch.empty(64, 64)
    out["matmul_into_output"], _ = _timeline(matmul_into_output, a, b, o, o2)
    torch.testing.assert_close(o, a @ b, rtol=1e-4, atol=1e-4)
    torch.testing.assert_close(o2, a @ b, rtol=1e-4, atol=1e-4)
    o = torch.empty(64, 64)
    out["matmul_softmax"], _ = _timeline(matmul_softmax, a, b, o)
    torch.testing.assert_close(o, torch.softmax(a @ b, dim=-1), rtol=1e-4, atol=1e-4)
    x, y, o = _rand(100, 64, seed=3), _rand(100, 64, seed=4), torch.empty(100, 64)
    out["elementwise"], _ = _timeline(elementwise, x, y, o)
    torch.testing.assert_close(o, x * y + 1.0)
    return out


# ---- kernel classes ----------------------------------------------------------------------------------

@pytest.mark.parametrize("name, kind", [("matmul_only", "matmul"), ("matmul_into_output", "matmul"),
                                        ("elementwise", "vector"), ("matmul_softmax", "mixed")])
def test_kernel_kind_of_small_kernels(timelines, name, kind):
    assert me.kernel_kind(timelines[name]) == kind


def test_matmul_copied_out_moves_data_on_vector_cores(timelines):
    # the case the compute-cycle rule is for: AIV busy, yet no vector work
    tl = timelines["matmul_into_output"]
    cycles = me.compute_cycles(tl)
    assert tl.stats["busy_cycles"]["AIV"] > 0
    assert cycles["vector"] == 0 and cycles["movement"] == tl.stats["busy_cycles"]["AIV"]
    assert cycles["cube"] == tl.stats["busy_cycles"]["AIC"]


@pytest.mark.parametrize("name", ["matmul_into_output", "matmul_softmax", "elementwise"])
def test_columns_and_event_list_agree(timelines, name):
    tl = timelines[name]
    as_list = Timeline(list(tl.events), list(tl.deps), list(tl.aicpu), tl.machine, tl.options, tl.device_tasks)
    assert me.compute_cycles(as_list) == me.compute_cycles(tl)
    assert sum(me.compute_cycles(tl).values()) == sum(tl.stats["busy_cycles"].values())


def _event(task, core_type, cycles, pipes):
    return TaskEvent(task, f"{core_type}0", core_type, "leaf", 0, "root", (), 0, 0, 0, cycles, pipes)


def _synthetic(cube: int, vector: int, copy: int = 0) -> Timeline:
    events = []
    if cube:
        events.append(_event(0, "AIC", cube, (("M", cube),)))
    if vector:
        events.append(_event(1, "AIV", vector, (("V", vector),)))
    if copy:
        events.append(_event(2, "AIV", copy, (("MTE_IN", copy),)))
    return Timeline(events, [], [], A2A3, {}, 1)


@pytest.mark.parametrize("cube, vector, copy, kind", [
    (100, 0, 0, "matmul"), (91, 9, 50, "matmul"), (90, 10, 0, "mixed"), (50, 50, 0, "mixed"),
    (10, 90, 0, "mixed"), (9, 91, 0, "vector"), (0, 100, 0, "vector"), (0, 0, 100, "vector"), (0, 0, 0, None)])
def test_kind_threshold(cube, vector, copy, kind):
    assert me.MINOR_SHARE == 0.10  # the rows below sit on either side of it
    assert me.kernel_kind(_synthetic(cube, vector, copy)) == kind


# ---- texts -------------------------------------------------------------------------------------------

def test_text_for_a_calibrated_kind(timelines):
    error = me.model_error(timelines["matmul_only"], FITTED)
    assert error.text == "matmul-class: median 7%, worst 18%, 9 published points (10% with its family left out)"
    assert (error.kind, error.machine, error.points, error.median, error.worst, error.loo_median) == \
        ("matmul", "A2A3", 9, 0.07, 0.18, 0.10)
    assert error.measured and error.status == "fitted" and error.families == ("gemm", "skinny_matmul")
    with pytest.raises(AttributeError):
        error.median = 0.0  # frozen


def test_text_for_a_kind_without_points(timelines):
    for name in ("matmul_softmax", "elementwise"):  # "mixed" has points 0, "vector" is missing
        error = me.model_error(timelines[name], FITTED)
        assert error.text == f"{error.kind}-class: no published point for this family"
        assert error.status == "no_points" and not error.measured and error.median is None


def test_text_for_an_uncalibrated_machine(timelines):
    tl = timelines["matmul_only"]
    small = matmul_only.last_run.simulate(machine=SMALL)
    assert tl.machine.name == "A2A3"
    assert small.machine.name == "small"
    error = me.model_error(small, FITTED)
    assert error.text == "matmul-class: machine 'small' is not calibrated, error not measured"
    assert error.status == "uncalibrated" and not error.measured
    renamed = me.error_of("vector", A2A3.with_(name="mine"), FITTED)
    assert renamed.text == "vector-class: machine 'mine' is not calibrated, error not measured"


@pytest.mark.parametrize("change, field", [({"gm_read_bw": 40.0}, "gm_read_bw"),
                                           ({"cube_macs_per_cycle": {4: 2048}}, "cube_macs_per_cycle")])
def test_text_for_a_modified_machine(change, field):
    # cube_macs_per_cycle is left out of MachineModel's ==: the check compares every field
    error = me.error_of("matmul", A2A3.with_(**change), FITTED)
    assert error.text == f"matmul-class: machine modified ({field}): error not measured"
    assert error.status == "modified" and not error.measured
    assert me.error_of("matmul", A2A3.with_(), FITTED).status == "fitted"


def test_placeholder_figures_say_so():
    table = {**FITTED, "status": "placeholder"}
    error = me.error_of("matmul", A2A3, table)
    assert error.text.endswith("[placeholder figures, not a fit]") and error.status == "placeholder"
    assert not error.measured and error.median == 0.07


def test_no_error_without_tasks_or_for_a_measured_trace():
    assert me.model_error(_synthetic(0, 0), FITTED) is None
    assert me.model_error(object(), FITTED) is None
    assert me.error_text(None) is None


def test_repr_and_property_show_it(timelines):
    tl = timelines["matmul_softmax"]
    text = tl.model_error.text
    assert text.startswith("mixed-class: ")
    assert repr(tl).endswith(f"; model error {text}>")
    from pypto.display import static_timeline_html

    assert f"model error {text}" in static_timeline_html(tl).replace("&#x27;", "'")


# ---- the file ----------------------------------------------------------------------------------------

def test_packaged_file_follows_the_schema():
    table = me.load_table()
    assert table["machine"] == "A2A3" and table["status"] in me.STATUSES
    assert set(table["kinds"]) <= set(me.KINDS)
    error = me.error_of("matmul", A2A3)
    assert error.text.startswith("matmul-class: ")
    assert ("placeholder" in error.text) == (table["status"] == "placeholder")


@pytest.mark.parametrize("patch, field", [
    ({"status": "draft"}, "status"), ({"machine": 3}, "machine"),
    ({"kinds": {"attention": {"points": 1, "median": 0.1, "worst": 0.2}}}, "kinds.attention"),
    ({"kinds": {"matmul": {"points": 2, "median": "7%", "worst": 0.2}}}, "kinds.matmul.median"),
    ({"kinds": {"matmul": {"points": 2, "median": 0.1}}}, "kinds.matmul.worst"),
    ({"kinds": {"matmul": {"points": -1}}}, "kinds.matmul.points"),
    ({"overall": {"points": 1.5}}, "overall.points")])
def test_a_bad_file_names_the_field(patch, field):
    with pytest.raises(me.ModelErrorDataError, match=field.replace(".", r"\.")) as info:
        me.check_table({**FITTED, **patch})
    assert isinstance(info.value, pypto.PyptoError) and isinstance(info.value, ValueError)
    assert info.value.param == f"model_error.json {field}"


def test_file_is_reread_after_a_new_fit(tmp_path):
    path = tmp_path / "model_error.json"
    path.write_text(json.dumps(FITTED))
    assert me.load_table(str(path))["kinds"]["matmul"]["median"] == 0.07
    refit = {**FITTED, "kinds": {"matmul": {"points": 10, "median": 0.05, "worst": 0.12}}}
    path.write_text(json.dumps(refit))
    import os

    os.utime(path, ns=(1, 1))  # a different stamp, even on a coarse clock
    assert me.load_table(str(path))["kinds"]["matmul"]["median"] == 0.05


def test_unreadable_file_is_an_error_and_displays_degrade(tmp_path, monkeypatch, timelines):
    with pytest.raises(me.ModelErrorDataError, match="cannot read"):
        me.load_table(str(tmp_path / "missing.json"))
    broken = tmp_path / "broken.json"
    broken.write_text("{not json")
    with pytest.raises(me.ModelErrorDataError, match="not JSON"):
        me.load_table(str(broken))
    monkeypatch.setattr(me, "DATA_FILE", str(broken))
    assert me.error_text(timelines["elementwise"]).startswith("not available (")
    assert "model error not available" in repr(timelines["elementwise"])
