"""The cached call's replay keeps its views of the plan's workspaces (runtime/replay.py): made once
per set of workspaces, reused while the next call gets the very same ones, and dropped when the
workspace budget drops the workspaces (a view holds its memory). The numbers are those of calls
that make every view again."""

from __future__ import annotations

import torch

from tests.kernels._examples import load_example


def _flash_attention():
    return load_example("flash_attention", "fa_workspace_views")


def _inputs(fa, seed, seq=160):
    g = torch.Generator().manual_seed(seed)
    return [torch.randn(1, seq, fa.D, generator=g) for _ in range(3)]


def _held(plan):
    return plan.replay.__globals__["HELD"][0]


def test_workspace_views_are_kept_across_cached_calls_with_the_same_workspaces():
    fa = _flash_attention()
    kernel = fa.flash_attention
    outs = []
    for seed in range(5):  # plan, compile the replay, then replays on new values in the same memory
        q, k, v = _inputs(fa, seed)
        out = torch.zeros(1, 160, fa.D)
        kernel(q, k, v, out)
        torch.testing.assert_close(out, fa.reference(q, k, v), rtol=1e-4, atol=1e-4)
        outs.append((q, k, v, out))
    plan = next(iter(kernel.last_run.compiled.executor._plans.values()))
    held = _held(plan)
    assert held is not None and plan.spare is not None
    slabs = plan.spare[0]
    assert all(a is b for a, b in zip(held[:-1], slabs))  # the views are of the kept workspaces
    q, k, v, want = outs[2]
    out = torch.zeros(1, 160, fa.D)
    kernel(q, k, v, out)
    assert _held(plan)[-1] is held[-1]  # the same view objects, not made again
    assert torch.equal(out, want)  # and the same numbers as the call that made them


def test_workspace_views_are_dropped_with_the_workspaces():
    fa = _flash_attention()
    kernel = fa.flash_attention
    q, k, v = _inputs(fa, 7)
    want = None
    for _ in range(3):
        out = torch.zeros(1, 160, fa.D)
        kernel(q, k, v, out)
        want = out if want is None else want
        assert torch.equal(out, want)
    plan = next(iter(kernel.last_run.compiled.executor._plans.values()))
    assert _held(plan) is not None
    kernel.workspace_bytes = 0  # nothing kept: every call allocates, no view outlives its call
    assert _held(plan) is None
    for _ in range(2):
        out = torch.zeros(1, 160, fa.D)
        kernel(q, k, v, out)
        assert torch.equal(out, want)
        assert _held(plan) is None
