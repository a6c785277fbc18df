"""A split reduction that one step computes whole runs as one reduction (runtime/reduction_fold.py):
its partials' step goes, the combine reads the operand with the dim whole. Checked against torch,
between the interpreted first call and the replays (both fold), and where it must not fold."""

from __future__ import annotations

import pytest
import torch

import pypto

try:
    from tests.golden.helper import assert_matches, check_kernel, rand
except ImportError:
    from helper import assert_matches, check_kernel, rand

D = pypto.DYNAMIC


def _split(op, dtype=pypto.DT_FP32, cols=256):
    """``out = op(x, -1)`` per loop iteration over 4-row blocks, with 64-wide tiles: the row is cut
    in ``cols / 64`` tiles, partials then a combine."""
    @pypto.jit
    def split(x: pypto.Tensor([D, cols], dtype), out: pypto.Tensor([D, 1], dtype)):
        pypto.set_vec_tile_shapes(4, 64)
        for b in pypto.loop(pypto.ceildiv(x.shape[0], 4)):
            out[b * 4:(b + 1) * 4, :] = getattr(pypto, op)(x[b * 4:(b + 1) * 4, :], -1, keepdim=True)
    return split


def _plan(kernel):
    return list(kernel.last_run.compiled.executor._plans.values())[-1]


@pytest.mark.parametrize("op", ["amax", "amin"])
def test_a_split_reduction_runs_as_one(op):
    k = _split(op)
    x = rand((20, 256), seed=11)
    want = getattr(torch, op)(x, -1, keepdim=True)
    outs = []
    for _ in range(3):  # interpreted, replay generated, replayed
        out = torch.full((20, 1), -7.0)
        check_kernel(k, (x, out), want, out=1)
        outs.append(out)
    assert all(torch.equal(o, outs[0]) for o in outs[1:])  # every call folds alike
    assert torch.equal(outs[0], want)  # a maximum is exact in any order
    plan = _plan(k)
    assert len(plan.folded) == len(plan.steps) - 1  # the partials' step is gone
    assert {t.id for s in plan.folded for t in s.tasks} == {t.id for s in plan.steps for t in s.tasks}


def test_the_timeline_keeps_the_partial_tasks(monkeypatch):
    """Only the numeric steps fold: the device still runs (and the simulator times) the partials,
    so the timeline is the one of the same kernel run without the fold."""
    from pypto.runtime import execute

    x = rand((20, 256), seed=12)
    stats = []
    for fold in (True, False):
        if not fold:
            monkeypatch.setattr(execute, "fold_split_reductions", lambda steps, layout: list(steps))
        k = _split("amax")
        out = torch.zeros(20, 1)
        k(x, out)
        assert torch.equal(out, torch.amax(x, -1, keepdim=True))
        plan = _plan(k)
        assert (len(plan.folded) < len(plan.steps)) is fold
        stats.append(dict(k.last_run.timeline.stats))
    assert stats[0] == stats[1]


@pytest.mark.parametrize("dtype", [pypto.DT_FP32, pypto.DT_BF16])
def test_a_split_sum_keeps_its_partials(dtype):
    """A sum of 64-wide partials summed whole would change its last bits (and bf16 partials are
    fp32, rounded once at the combine): it keeps its two steps, and the numbers of the partials
    then the combine."""
    k = _split("sum", dtype)
    tdt = dtype.torch()
    x = rand((20, 256), tdt, seed=13)
    out = torch.zeros(20, 1, dtype=tdt)
    for _ in range(3):
        k(x, out)
    want = x.float().reshape(20, 4, 64).sum(-1).sum(-1, keepdim=True).to(tdt)
    assert torch.equal(out, want)
    plan = _plan(k)
    assert len(plan.folded) == len(plan.steps)


def test_half_precision_maxima_are_not_folded():
    """bf16 partials are fp32: a maximum of bf16 values keeps its partials' step (the rule is the
    partials' dtype, whatever the op)."""
    k = _split("amax", pypto.DT_BF16)
    x = rand((20, 256), torch.bfloat16, seed=16)
    out = torch.zeros(20, 1, dtype=torch.bfloat16)
    for _ in range(2):
        k(x, out)
    assert torch.equal(out, torch.amax(x, -1, keepdim=True))
    plan = _plan(k)
    assert len(plan.folded) == len(plan.steps)


def test_a_tail_tile_along_the_dim_keeps_the_partials():
    """250 columns: three full tiles and a tail, two steps of partials: nothing to fold into one."""
    k = _split("amax", cols=250)
    x = rand((20, 250), seed=14)
    for _ in range(3):
        out = torch.zeros(20, 1)
        check_kernel(k, (x, out), torch.amax(x, -1, keepdim=True), out=1)
    assert torch.equal(out, torch.amax(x, -1, keepdim=True))


def test_seed_softmax_folds_its_split_maximum():
    @pypto.jit
    def softmax(x: pypto.Tensor([D, 4, 1, 256], pypto.DT_FP32), out: pypto.Tensor([D, 4, 1, 256], pypto.DT_FP32)):
        pypto.set_vec_tile_shapes(1, 4, 1, 64)
        for i in pypto.loop(x.shape[0]):
            out[i:i + 1, :, :, :] = pypto.softmax(x[i:i + 1, :, :, :], -1)
    x = rand((6, 4, 1, 256), seed=15)
    for _ in range(3):
        check_kernel(softmax, (x, torch.zeros_like(x)), torch.softmax(x, -1), out=1, loose=True)
    plan = _plan(softmax)
    assert len(plan.folded) == len(plan.steps) - 1
    assert pypto.bisect_passes(softmax, x, torch.zeros_like(x)).ok


def test_flash_attention_row_sums_of_one_wide_tiles_fold_bit_for_bit(monkeypatch):
    """Flash attention sums ``p`` in ``(BQ, 1)`` tiles: each partial is one element, laid out as
    ``p`` is, so the combine over ``p`` itself adds the same values in the same order: the output
    is bit for bit the one of the same kernel without the fold."""
    import importlib.util
    import pathlib

    from pypto.runtime import execute

    path = pathlib.Path(__file__).resolve().parents[2] / "examples" / "flash_attention.py"
    g = torch.Generator().manual_seed(3)
    q, kk, v = (torch.randn(1, 256, 64, generator=g) for _ in range(3))
    outs, counts = [], []
    for fold in (True, False):
        if not fold:
            monkeypatch.setattr(execute, "fold_split_reductions", lambda steps, layout: list(steps))
        spec = importlib.util.spec_from_file_location(f"example_flash_fold_{fold}", path)
        ex = importlib.util.module_from_spec(spec)
        spec.loader.exec_module(ex)
        for _ in range(3):
            out = torch.zeros(1, 256, 64)
            ex.flash_attention(q, kk, v, out)
        assert_matches(out, ex.reference(q, kk, v), loose=True)
        outs.append(out)
        plan = _plan(ex.flash_attention)
        counts.append(len(plan.steps) - len(plan.folded))
    assert counts[0] > 0 and counts[1] == 0
    assert torch.equal(outs[0], outs[1])


def test_views_of_interleaved_instances_share_no_element():
    """The fold's overlap test, against the elements each view really addresses."""
    from pypto.runtime.reduction_fold import _meets

    def elements(v):
        _, _, size, stride, off = v
        return set((torch.arange(1) + off + sum(
            torch.arange(n).reshape([-1 if k == d else 1 for k in range(len(size))]) * st
            for d, (n, st) in enumerate(zip(size, stride)))).flatten().tolist())

    base = (0, 14, (8, 64, 32, 1), (8192, 1, 64, 1), 0)
    views = [base, base[:4] + (2048,), base[:4] + (2047,), base[:4] + (64,), base[:4] + (8192 * 7,),
             (0, 14, (8, 32, 64), (8192, 64, 1), 2048), (0, 14, (8, 32, 64), (8192, 64, 1), 1),
             (0, 14, (4, 4), (3, 1), 0), (0, 14, (4, 4), (3, 1), 5), (0, 14, (2, 3), (0, 1), 3)]
    for a in views:
        for b in views:
            truth = bool(elements(a) & elements(b))
            got = _meets(a, b)
            assert got or not truth, (a, b)  # never "disjoint" when they share an element
            if a[2:4] == b[2:4] and a[2] == (8, 64, 32, 1):
                assert got == truth, (a, b)  # exact for one box shape that nests
