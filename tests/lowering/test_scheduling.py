"""The runtime side of the lowering: dependency edges between root instances, batched waves,
stitching into device tasks, and the main/tail variants of valid_shape_optimize."""

from __future__ import annotations

import pytest
import torch

import pypto
from pypto.runtime import execute as rt

try:
    from tests.lowering import _checks as C
except ImportError:
    import _checks as C

D = pypto.DYNAMIC
FP32 = pypto.DT_FP32


def _rand(*shape, seed=0):
    return torch.randn(*shape, generator=torch.Generator().manual_seed(seed))


@pytest.fixture
def batches(monkeypatch):
    """Record every batched leaf call of the runtime: [(leaf name, [root seq of each task])]."""
    seen = []
    original = rt.run_steps

    def run_steps(steps, tensors, *args, **kwargs):
        seen.extend((s.tasks[0].leaf.name, [t.root.seq for t in s.tasks]) for s in steps)
        return original(steps, tensors, *args, **kwargs)

    monkeypatch.setattr(rt, "run_steps", run_steps)
    return seen


# ---- write-then-read across iterations: RAW edges, program order ----------------------------------

def _prefix_kernel(**opts):
    @pypto.jit(**opts)
    def prefix(x: pypto.Tensor([D, 4], FP32), out: pypto.Tensor([D, 4], FP32)):
        out[0:1, :] = x[0:1, :]
        for i in pypto.loop(1, x.shape[0]):
            out[i:i + 1, :] = out[i - 1:i, :] + x[i:i + 1, :]
    return prefix


def _cumsum(x):
    want = x.clone()
    for i in range(1, x.shape[0]):
        want[i] = want[i - 1] + x[i]
    return want


def test_running_prefix_has_raw_edges_between_consecutive_instances(batches):
    prefix = _prefix_kernel()
    n = 9
    x, out = _rand(n, 4), torch.zeros(n, 4)
    prefix(x, out)
    torch.testing.assert_close(out, _cumsum(x), rtol=0, atol=0)
    compiled = prefix.inspect(x, out)
    device_tasks, runner = compiled.executor.last
    assert len(device_tasks) == 1
    (dt,) = device_tasks
    assert len(dt.roots) == n and len(dt.tasks) == n
    seq = [t.root.seq for t in dt.tasks]
    assert seq == list(range(n))
    edges = {(seq[i], seq[j]) for i, j, kind in dt.edges if kind == "RAW"}
    assert edges == {(k, k + 1) for k in range(n - 1)}  # each iteration reads what the previous wrote
    assert all(kind == "RAW" for _, _, kind in dt.edges)
    # program order, one task per wave
    assert [dt.tasks[i].root.seq for _, i in runner.order] == list(range(n))
    assert [len(s) for _, s in batches] == [1] * n
    C.check_all(compiled)


def test_running_prefix_stays_in_order_across_device_tasks():
    prefix = _prefix_kernel(runtime_options={"stitch_function_max_num": 2})
    n = 7
    x, out = _rand(n, 4, seed=3), torch.zeros(n, 4)
    prefix(x, out)
    torch.testing.assert_close(out, _cumsum(x), rtol=0, atol=0)
    device_tasks, runner = prefix.inspect(x, out).executor.last
    assert len(device_tasks) == 4  # 7 root instances (1 before the loop, 6 in it), 2 per device task
    assert [(d, device_tasks[d].tasks[i].root.seq) for d, i in runner.order] == \
        [(k // 2, k) for k in range(n)]


# ---- independent iterations: no edges, one batched wave -------------------------------------------

@pypto.jit
def double_rows(x: pypto.Tensor([D, 4], FP32), out: pypto.Tensor([D, 4], FP32)):
    for i in pypto.loop(x.shape[0]):
        out[i:i + 1, :] = x[i:i + 1, :] * 2.0


def test_independent_iterations_have_no_edges_and_run_as_one_batch(batches):
    n = 7
    x, out = _rand(n, 4), torch.zeros(n, 4)
    double_rows(x, out)
    torch.testing.assert_close(out, x * 2)
    device_tasks, runner = double_rows.inspect(x, out).executor.last
    (dt,) = device_tasks
    assert len(dt.tasks) == n and dt.edges == []
    assert len({t.leaf.name for t in dt.tasks}) == 1
    assert batches == [(dt.tasks[0].leaf.name, list(range(n)))]  # one wave, one batched call
    assert sorted(i for _, i in runner.order) == list(range(n))


def test_same_row_rewritten_by_every_iteration_is_ordered_by_waw():
    @pypto.jit
    def last_wins(x: pypto.Tensor([D, 4], FP32), out: pypto.Tensor([1, 4], FP32)):
        for i in pypto.loop(x.shape[0]):
            out[:] = x[i:i + 1, :] + 0.0

    x, out = _rand(5, 4), torch.zeros(1, 4)
    last_wins(x, out)
    torch.testing.assert_close(out, x[4:5])
    (dt,) = last_wins.inspect(x, out).executor.last[0]
    waw = {(dt.tasks[i].root.seq, dt.tasks[j].root.seq) for i, j, k in dt.edges if k == "WAW"}
    assert {(k, k + 1) for k in range(4)} <= waw


def test_read_then_overwrite_across_iterations_is_ordered_by_war():
    @pypto.jit
    def shift(x: pypto.Tensor([D, 4], FP32), out: pypto.Tensor([D, 4], FP32)):
        for i in pypto.loop(x.shape[0] - 1):
            out[i:i + 1, :] = out[i + 1:i + 2, :] * 1.0  # reads the row the next iteration overwrites
            out[i + 1:i + 2, :] = x[i:i + 1, :] + 0.0

    n = 5
    x, old = _rand(n, 4), _rand(n, 4, seed=1)
    out = old.clone()
    shift(x, out)
    want = old.clone()
    for i in range(n - 1):
        want[i] = want[i + 1]
        want[i + 1] = x[i]
    torch.testing.assert_close(out, want, rtol=0, atol=0)
    (dt,) = shift.inspect(x, out).executor.last[0]
    assert any(kind == "WAR" for _, _, kind in dt.edges)


# ---- stitching ------------------------------------------------------------------------------------

@pytest.mark.parametrize("max_num, n_device_tasks", [(2, 4), (3, 3), (7, 1), (128, 1)])
def test_stitch_function_max_num_groups_root_instances(max_num, n_device_tasks):
    @pypto.jit(runtime_options={"stitch_function_max_num": max_num})
    def scale(x: pypto.Tensor([D, 4], FP32), out: pypto.Tensor([D, 4], FP32)):
        for i in pypto.loop(x.shape[0]):
            out[i:i + 1, :] = x[i:i + 1, :] * 3.0

    x, out = _rand(7, 4), torch.zeros(7, 4)
    scale(x, out)
    torch.testing.assert_close(out, x * 3)
    device_tasks, runner = scale.inspect(x, out).executor.last
    assert len(device_tasks) == n_device_tasks
    assert all(len(dt.roots) <= max_num for dt in device_tasks)
    assert sum(len(dt.roots) for dt in device_tasks) == 7
    assert sorted(d for d, _ in runner.order) == sorted(d for d, dt in enumerate(device_tasks) for _ in dt.tasks)


# ---- valid_shape_optimize: main and tail variants --------------------------------------------------

@pypto.jit(runtime_options={"valid_shape_optimize": 1})
def vso_rows(x: pypto.Tensor([D, 64], FP32), out: pypto.Tensor([D, 64], FP32)):
    pypto.set_vec_tile_shapes(32, 64)
    for b in pypto.loop(pypto.ceildiv(x.shape[0], 32)):
        rows = slice(b * 32, (b + 1) * 32)
        out[rows, :] = x[rows, :] * 2.0 + 1.0


@pytest.mark.parametrize("n, main, tail", [(100, 3, 1), (96, 3, 0), (5, 0, 1)])
def test_valid_shape_optimize_runs_main_and_tail_variants(n, main, tail):
    x, out = _rand(n, 64, seed=n), torch.zeros(n, 64)
    vso_rows(x, out)
    torch.testing.assert_close(out, x * 2 + 1)
    compiled = vso_rows.inspect(x, out)
    for name, src in compiled.source.items():
        assert set(src.variants) == {"main", "tail"}
        assert "variant=main" in src.variants["main"] and "valid[" not in src.variants["main"]
        assert "variant=tail" in src.variants["tail"] and "valid[" in src.variants["tail"]
        assert f"def {name}_main" in src.cpu and f"def {name}_tail" in src.cpu
        assert set(compiled.lowered.executables[name]) == {"main", "tail"}
    assert compiled.executor.last[1].variant_counts == {"main": main, "tail": tail}
    C.check_all(compiled)


def test_without_valid_shape_optimize_there_are_no_variants():
    x, out = _rand(10, 4), torch.zeros(10, 4)
    double_rows(x, out)
    compiled = double_rows.inspect(x, out)
    assert all(src.variants == {} for src in compiled.source.values())
    assert compiled.executor.last[1].variant_counts == {"main": 0, "tail": 0}


@pypto.jit(runtime_options={"valid_shape_optimize": 1})
def vso_static_tails(x: pypto.Tensor([100, 70], FP32), out: pypto.Tensor([100, 70], FP32),
                     s: pypto.Tensor([100, 1], FP32)):
    pypto.set_vec_tile_shapes(32, 32)
    out[:] = pypto.softmax(x, dim=1)
    s[:] = pypto.sum(x, dim=1, keepdim=True)


def test_valid_shape_optimize_with_tails_across_tiles():
    x, out, s = _rand(100, 70), torch.zeros(100, 70), torch.zeros(100, 1)
    vso_static_tails(x, out, s)
    torch.testing.assert_close(out, torch.softmax(x, 1))
    torch.testing.assert_close(s, x.sum(1, keepdim=True), rtol=1e-5, atol=1e-5)
    counts = vso_static_tails.inspect(x, out, s).executor.last[1].variant_counts
    assert counts["main"] > 0 and counts["tail"] > 0
