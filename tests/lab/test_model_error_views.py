"""The timing model's measured error beside every simulated time the lab shows: the timeline
header (standalone chart, widget, static fallbacks, the dashboard summary), the Tune tab and the
Sweep tab. The figures come from the packaged calibration file, whatever the fit wrote there."""

from __future__ import annotations

import sys

import pytest
import torch

import pypto
from pypto.runtime.model_error import model_error
from pypto_lab import views as V
from pypto_lab.views._html import esc
from pypto_lab.widgets import TimelineView, TunePanel
from pypto_lab.widgets.sweep import SweepPanel
from pypto_lab.widgets.timeline import static_html
from pypto_lab.widgets.tune import sweep_html

FP32 = pypto.DT_FP32


@pypto.jit
def scores(q: pypto.Tensor([64, 64], FP32), k: pypto.Tensor([64, 64], FP32), out: pypto.Tensor([64, 64], FP32)):
    pypto.set_cube_tile_shapes([32, 32], [64, 64], [32, 32])
    pypto.set_vec_tile_shapes(16, 64)
    out[:] = pypto.softmax(pypto.matmul(q, k), dim=-1)


@pypto.jit
def scaled(x: pypto.Tensor([pypto.DYNAMIC, 64], FP32), out: pypto.Tensor([pypto.DYNAMIC, 64], FP32),
           TILE: int = 32):
    pypto.set_vec_tile_shapes(TILE, 64)
    for b in pypto.loop(pypto.ceildiv(x.shape[0], TILE)):
        r = slice(b * TILE, (b + 1) * TILE)
        out[r, :] = x[r, :] * 3.0


@pytest.fixture(scope="module")
def mixed_run():
    g = torch.Generator().manual_seed(7)
    q, k, out = torch.randn(64, 64, generator=g), torch.randn(64, 64, generator=g), torch.empty(64, 64)
    scores(q, k, out)
    torch.testing.assert_close(out, torch.softmax(q @ k, dim=-1), rtol=1e-4, atol=1e-4)
    return scores.last_run


@pytest.fixture(scope="module")
def vector_kernel():
    x, out = torch.randn(96, 64, generator=torch.Generator().manual_seed(8)), torch.empty(96, 64)
    scaled(x, out)
    torch.testing.assert_close(out, x * 3.0)
    return scaled


def _shown(tl) -> str:
    """The escaped text the views must contain for ``tl``."""
    return esc(f"model error · {model_error(tl).text}")


def test_line_names_the_class_and_says_what_it_is(mixed_run):
    tl = mixed_run.timeline
    html = V.model_error_html(tl)
    assert model_error(tl).kind == "mixed" and _shown(tl) in html
    assert 'class="pypto-model-error"' in html and "|simulated / published - 1|" in html  # the tooltip
    assert V.model_error_text(tl) == f"model error · {model_error(tl).text}"


def test_uncalibrated_machine_says_so(mixed_run):
    small = mixed_run.simulate(machine="small")
    html = V.model_error_html(small)
    assert "mixed-class: machine &#x27;small&#x27; is not calibrated, error not measured" in html
    assert "color:#9a6700" in html  # not measured: amber


def test_modified_machine_says_so(mixed_run):
    modified = mixed_run.simulate(machine=mixed_run.timeline.machine.with_(launch_cycles=1000))
    assert "mixed-class: machine modified (launch_cycles): error not measured" in V.model_error_html(modified)


def test_timeline_header_and_static_paths(mixed_run, monkeypatch):
    tl = mixed_run.timeline
    assert _shown(tl) in V.timeline_html(tl)
    assert _shown(tl) in tl._repr_html_()
    assert _shown(tl) in static_html(tl)
    monkeypatch.setitem(sys.modules, "pypto_lab.views.timeline", None)  # as if pypto_lab were absent
    assert esc(f"model error {model_error(tl).text}") in tl._repr_html_()


def test_timeline_widget_header(mixed_run):
    view = TimelineView(mixed_run.timeline)
    assert _shown(mixed_run.timeline) in view.stats.value and "makespan" in view.stats.value


def test_measured_trace_has_no_model_error(mixed_run):
    trace = V.load_trace(mixed_run.timeline.to_chrome_trace())
    assert V.model_error_html(trace) == "" and "pypto-model-error" not in V.timeline_html(trace)
    assert "pypto-model-error" not in TimelineView(trace).stats.value


def test_dashboard_summary(vector_kernel):
    tl = vector_kernel.last_run.timeline
    assert model_error(tl).kind == "vector"
    assert _shown(tl) in V.kernel_summary_html(vector_kernel)
    assert f"({V.model_error_text(tl)})" in V.dashboard_text(vector_kernel)


def test_tune_tab(mixed_run):
    tune = TunePanel(mixed_run)
    assert _shown(mixed_run.timeline) in tune.model_error.value
    tune.controls["stitch_function_max_num"].value = 1
    assert _shown(tune.timeline) in tune.model_error.value and _shown(tune.timeline) in tune.compare.value
    rows = tune.run_sweep()
    best = min(rows, key=lambda r: r[1].stats["makespan_cycles"])[1]
    assert _shown(best) in tune.sweep.value and tune.sweep.value == sweep_html(rows, tune.values()["device_sched_mode"])


def test_sweep_tab(vector_kernel):
    panel = SweepPanel(vector_kernel, space_text="TILE=16,32; device_sched_mode=0,1")
    results = panel.start()
    assert results.best is not None and panel.best_timeline is not None
    shown = _shown(panel.best_timeline)
    assert model_error(panel.best_timeline).kind == "vector"
    for html in (panel.table.value, panel.scatters.value, panel.pareto.value):
        assert shown in html
    assert shown in V.sweep.results_table_html(results, timeline=panel.best_timeline)
    assert "pypto-model-error" not in V.sweep.results_table_html(results)
    assert panel.open_best() is panel.best_timeline  # simulated once, shown with its error
    for view in panel.compare.children:  # the call's timeline and the best one, each with its own line
        assert _shown(view.timeline) in view.stats.value


def test_unreadable_calibration_file_is_shown_not_raised(mixed_run, tmp_path, monkeypatch):
    from pypto.runtime import model_error as me

    broken = tmp_path / "model_error.json"
    broken.write_text("{")
    monkeypatch.setattr(me, "DATA_FILE", str(broken))
    html = V.model_error_html(mixed_run.timeline)
    assert "model error · not available (" in html and "cannot be read" in html
    assert "not available" in V.timeline_html(mixed_run.timeline)
