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


@pytest.mark.parametrize("op", ["amax", "amin", "sum"])
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
    if op != "sum":  # a maximum is exact in any order
        assert torch.equal(outs[0], want)
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


def test_half_precision_partials_are_not_folded():
    """bf16 partials are fp32: the combine rounds once; folding would round the operand's own
    dtype elsewhere, so these keep their two steps."""
    k = _split("sum", pypto.DT_BF16)
    x = rand((20, 256), torch.bfloat16, seed=13)
    out = torch.zeros(20, 1, dtype=torch.bfloat16)
    for _ in range(2):
        k(x, out)
    want = x.float().reshape(20, 4, 64).sum(-1).sum(-1, keepdim=True).bfloat16()
    assert_matches(out, want)
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
