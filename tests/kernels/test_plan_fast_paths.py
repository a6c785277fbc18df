"""Planning a call at a new size takes the dependency engine's shortcuts: the one-pass path for
one-box accesses over a few cells (`RegionIndex._in_few_cells`), buffers seen with one box kept
as that box (`RegionIndex.access_task`), reads of keys no task writes left out (`plan.levels`).
These tests plan real kernels at many sizes, tails included (a partial last block, a single
block), once with the shortcuts and once with every access through the general query-then-commit
path, and require the very same plan: steps (leaf, variant, batch shape, views, tasks),
device-task edges (kinds and order) and workspace slabs; and the numbers against torch."""

from __future__ import annotations

import pytest
import torch

import pypto
from pypto.runtime import plan as plan_module
from pypto.runtime.regions import RegionIndex
from tests.kernels._examples import load_example

try:
    from tests.golden.helper import assert_matches, check_kernel, rand
except ImportError:
    from helper import assert_matches, check_kernel, rand



def _flash():
    return load_example("flash_attention", "example_flash_attention_plan")


def _rows_kernel():
    T = pypto.Tensor([pypto.DYNAMIC, 64], pypto.DT_FP32)

    @pypto.jit
    def rows(x: T, y: T, out: T):
        pypto.set_vec_tile_shapes(8, 64)
        for b in pypto.loop(pypto.ceildiv(x.shape[0], 16)):
            r = slice(b * 16, (b + 1) * 16)
            out[r, :] = pypto.softmax((x[r, :] + y[r, :]) * y[r, :], -1)
    return rows


def _overwrite_kernel():
    """Each block of x read by the first loop, then overwritten by the second: write-after-read
    edges only (the second loop must wait for the reads, no value flows between the loops)."""
    T = pypto.Tensor([pypto.DYNAMIC, 64], pypto.DT_FP32)

    @pypto.jit
    def overwrite(x: T, y: T, out: T):
        pypto.set_vec_tile_shapes(8, 64)
        for b in pypto.loop(pypto.ceildiv(x.shape[0], 16)):
            r = slice(b * 16, (b + 1) * 16)
            out[r, :] = x[r, :] * 2.0
        for b in pypto.loop(pypto.ceildiv(x.shape[0], 16)):
            r = slice(b * 16, (b + 1) * 16)
            x[r, :] = y[r, :] + 1.0
    return overwrite


def _plan_text(kernel):
    """Everything of the kernel's newest plan that the sizes decide, as comparable values."""
    plan = next(reversed(kernel.last_run.compiled.executor._plans.values()))
    steps = [(s.leaf, s.variant, s.B, tuple(sorted(s.S.items())), s.ins, s.outs, s.alias, s.tiles,
              [t.id for t in s.tasks]) for s in plan.steps]
    return steps, [list(dt.edges) for dt in plan.done], list(plan.layout.slabs), plan.info.order


def _one_access_per_operand(self, i, keys, los, his, writes, cells):
    for p, (key, lo, hi, cell) in enumerate(zip(keys, los, his, cells)):
        self.access(key, i, lo, hi, p in writes, cell=cell)


def _both_paths(kernel, args, check):
    """The plan of ``args`` with the one-pass path and with the general path (numbers checked)."""
    executor = kernel.last_run.compiled.executor if kernel.last_run is not None else None
    got = []
    for fast in (True, False):
        with pytest.MonkeyPatch.context() as mp:
            if not fast:  # every access through `RegionIndex.access`, none left out or kept as one box
                mp.setattr(RegionIndex, "_in_few_cells", lambda self, *a: False)
                mp.setattr(RegionIndex, "access_task", _one_access_per_operand)
                mp.setattr(plan_module, "_written_keys", lambda tasks: None)
            if executor is not None:
                executor._plans.clear()
            check()
            executor = kernel.last_run.compiled.executor
            got.append(_plan_text(kernel))
    return got


@pytest.mark.parametrize("rows", [1, 15, 16, 17, 40, 47, 64, 100])
def test_row_kernel_plans_the_same_with_the_one_pass_path(rows):
    k = _rows_kernel()
    x, y, out = rand((rows, 64), seed=rows), rand((rows, 64), seed=rows + 1), torch.zeros(rows, 64)
    fast, general = _both_paths(k, (x, y, out),
                                lambda: check_kernel(k, (x, y, out), torch.softmax((x + y) * y, -1), out=2))
    assert fast == general
    assert len(fast[0]) >= 1


@pytest.mark.parametrize("rows", [1, 16, 33, 64])
def test_write_after_read_plans_the_same_with_the_one_pass_path(rows):
    k = _overwrite_kernel()
    x0, y = rand((rows, 64), seed=rows), rand((rows, 64), seed=rows + 1)
    x, out = x0.clone(), torch.zeros(rows, 64)

    def check():
        x.copy_(x0)
        k(x, y, out)
        assert_matches(out, x0 * 2.0, what="out (read before the overwrite)")
        assert_matches(x, y + 1.0, what="x (overwritten)")
    fast, general = _both_paths(k, (x, y, out), check)
    assert fast == general
    assert any(kind == "WAR" for edges in fast[1] for _, _, kind in edges)


@pytest.mark.parametrize("seq", [33, 64, 96, 97, 130, 191])
def test_flash_attention_plans_the_same_with_the_one_pass_path(seq):
    ex = _flash()
    q, k, v = (rand((1, seq, ex.D), seed=seq + i) for i in range(3))
    out = torch.zeros(1, seq, ex.D)
    fn = ex.flash_attention

    def check():
        out.zero_()
        fn(q, k, v, out)
        assert_matches(out, ex.reference(q, k, v))
    fast, general = _both_paths(fn, (q, k, v, out), check)
    assert fast == general
    assert any(fast[1]), "flash attention's device tasks have dependency edges"


def test_one_pass_path_is_what_planning_takes():
    """Without the path taken, the equality above would compare a path with itself."""
    k = _rows_kernel()
    x, y, out = rand((40, 64), seed=1), rand((40, 64), seed=2), torch.zeros(40, 64)
    taken = []
    few_cells = RegionIndex._in_few_cells
    with pytest.MonkeyPatch.context() as mp:
        mp.setattr(RegionIndex, "_in_few_cells", lambda self, *a: taken.append(few_cells(self, *a)) or taken[-1])
        check_kernel(k, (x, y, out), torch.softmax((x + y) * y, -1), out=2)
    assert taken and all(taken)


def test_one_box_buffers_and_unwritten_keys_are_what_planning_takes():
    """Flash attention's planning keeps most buffers as one box (its per-iteration workspaces)
    and the row kernel's planning leaves out the reads of its inputs: without that, the
    equalities above would compare a path with itself."""
    kept, left_out = [], []
    edge_list, written_keys = RegionIndex.edge_list, plan_module._written_keys

    def edges(self):
        kept.append(len(self._simple))
        return edge_list(self)

    def written(tasks):
        w = written_keys(tasks)
        left_out.append(len({k for t in tasks for k in t.keys} - w))
        return w
    ex = _flash()
    q, k, v = (rand((1, 96, ex.D), seed=i) for i in range(3))
    rows = _rows_kernel()
    x, y, out = rand((40, 64), seed=1), rand((40, 64), seed=2), torch.zeros(40, 64)
    with pytest.MonkeyPatch.context() as mp:
        mp.setattr(RegionIndex, "edge_list", edges)
        mp.setattr(plan_module, "_written_keys", written)
        check_kernel(ex.flash_attention, (q, k, v, torch.zeros(1, 96, ex.D)), ex.reference(q, k, v), out=3)
        assert kept and kept[-1] > 10
        check_kernel(rows, (x, y, out), torch.softmax((x + y) * y, -1), out=2)
        assert left_out and left_out[-1] == 2  # x and y
