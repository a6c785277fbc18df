"""Steps whose results only the memory view reads (runtime/view_only_steps.py): the cached call's
replay leaves flash attention's reshape copies out and runs them when the last call's memory is
read. The outputs and every workspace must then hold exactly what the interpreted first call left
there; a call whose memory nobody reads does not write those workspaces."""

from __future__ import annotations

import torch

from pypto.runtime.view_only_steps import view_only_steps
from tests.kernels._examples import load_example


def _flash_attention():
    return load_example("flash_attention", "fa_view_only")


def _workspaces(executor):
    memory = executor.last_memory
    return [t.clone() for t in memory.tensors[memory.layout.n_params:]]


def test_the_replay_defers_the_reshape_copies_and_the_memory_view_shows_them():
    fa = _flash_attention()
    g = torch.Generator().manual_seed(3)
    q, k, v = (torch.randn(1, 192, fa.D, generator=g) for _ in range(3))
    out = torch.zeros(1, 192, fa.D)  # whole blocks: every workspace element written
    fa.flash_attention(q, k, v, out)  # first call: the interpreter, every step in order
    executor = fa.flash_attention.last_run.compiled.executor
    first_out, first_ws = out.clone(), _workspaces(executor)
    torch.testing.assert_close(out, fa.reference(q, k, v), rtol=1e-4, atol=1e-4)
    for _ in range(3):  # the second run compiles the replay, the third and fourth replay it
        out.zero_()
        fa.flash_attention(q, k, v, out)
    plan = next(iter(executor._plans.values()))
    deferred = plan.replay.deferred
    assert [s.leaf for s in deferred] and all("reshape" in s.leaf for s in deferred)
    assert len(deferred) < len(plan.folded)
    # the deferred steps' workspaces are not written by the call: poison them, then read the view
    memory_slot = executor._mine.call
    assert memory_slot[6] == deferred
    work = memory_slot[4]
    for s in deferred:
        for _, sid, *_ in s.outs:
            work[sid].fill_(12345.0)
    assert torch.equal(out, first_out)
    for a, b in zip(_workspaces(executor), first_ws):
        assert torch.equal(a, b)
    assert memory_slot[6] == ()  # run once, on the first read


class _S:
    def __init__(self, ins, outs, move=False):
        self.ins = [(0, sid, (1,), (1,), 0) for sid in ins]
        self.outs = [(1, sid, (1,), (1,), 0) for sid in outs]
        self.move = move


def test_a_step_is_kept_when_a_later_step_needs_it_or_changes_what_it_reads():
    moves = lambda s: s.move  # noqa: E731
    # storages 0-1 are the caller's, 2+ workspaces
    steps = [_S([0], [2], True),   # read by step 2: kept
             _S([0], [3], True),   # nobody reads 3: deferred
             _S([2], [1]),         # writes the caller's tensor
             _S([1], [4], True),   # its source is written by nothing after it: deferred
             _S([4], [5], True),   # reads a deferred step's result, itself unread: deferred
             _S([0], [6], True),   # 6 written again by the last step: kept
             _S([0], [6])]
    assert view_only_steps(steps, 2, moves) == {1, 3, 4}
    steps[1:1] = [_S([0], [7], True), _S([2], [7])]  # 7 rewritten later by a non-move: kept
    assert 1 not in view_only_steps(steps, 2, moves)
    steps = [_S([2], [3], True), _S([0], [2])]  # its source changes after it: kept
    assert view_only_steps(steps, 2, moves) == frozenset()
    assert view_only_steps([_S([0], [1], True)], 2, moves) == frozenset()  # a caller's tensor: never
