"""The timeline is simulated lazily (only when looked at, once) and deterministically, and a
20,000-task timeline simulates in seconds."""

from __future__ import annotations

import time

import pytest

import torch

import pypto
import pypto.runtime.scheduler as scheduler

try:
    from tests.timing import _timing_checks as C
    from tests.timing import _timing_kernels as K
except ImportError:
    import _timing_checks as C
    import _timing_kernels as K


def _counting(monkeypatch):
    calls = []
    real = scheduler.simulate

    def counted(*args, **kwargs):
        calls.append(args[2])
        return real(*args, **kwargs)

    monkeypatch.setattr(scheduler, "simulate", counted)
    return calls


def test_a_call_whose_timeline_is_never_read_does_not_simulate(monkeypatch):
    calls = _counting(monkeypatch)
    for _ in range(3):
        K.run_chains(blocks=4)
        K.run_count_loop()
    record = K.run_wide(tiles=4)
    assert calls == [] and record._timeline is None
    # the stats of a record are only computed from a timeline: reading other fields is free
    assert record.cache_hit in (True, False) and record.run_seconds >= 0 and record.compiled is not None
    assert calls == []


def test_timeline_is_simulated_once_on_first_access(monkeypatch):
    calls = _counting(monkeypatch)
    record = K.run_chains(blocks=4)
    assert calls == []
    tl = record.timeline
    assert len(calls) == 1
    assert record.timeline is tl and record.timeline.stats is tl.stats
    assert len(calls) == 1
    # simulate() is explicit: it runs every time and leaves the cached timeline alone
    other = record.simulate({"device_sched_mode": 1})
    assert len(calls) == 2 and calls[-1]["device_sched_mode"] == 1
    assert other is not tl and record.timeline is tl
    C.check_invariants(tl)
    C.check_invariants(other)


def test_each_call_gets_its_own_record(monkeypatch):
    calls = _counting(monkeypatch)
    first = K.run_wide(tiles=4)
    second = K.run_wide(tiles=6)
    assert first is not second and calls == []
    assert second.timeline.stats["tasks"] == 6
    assert first.timeline.stats["tasks"] == 4  # the earlier record still simulates its own call
    assert len(calls) == 2


def _snapshot(tl):
    return tl.events, tl.deps, tl.aicpu, tl.device_tasks, {k: v for k, v in tl.stats.items()}


def test_identical_calls_give_identical_timelines():
    a = K.run_chains(blocks=12).timeline
    b = K.run_chains(blocks=12).timeline
    assert a is not b
    assert a.events == b.events  # TaskEvent is a frozen dataclass: compared field by field
    assert _snapshot(a) == _snapshot(b)
    assert a.to_chrome_trace() == b.to_chrome_trace()


def test_resimulating_is_deterministic_under_every_mode():
    record = K.run_batch_lens()
    for mode in range(4):
        opts = {"device_sched_mode": mode, "valid_shape_optimize": mode % 2}
        assert _snapshot(record.simulate(opts)) == _snapshot(record.simulate(opts))


def test_different_inputs_same_sizes_same_timeline():
    """Timing depends on sizes and control flow, not on the float values."""
    a = K.run_tails().timeline

    x = torch.full(K.TAILS_SHAPE, 0.5)
    out = torch.zeros_like(x)
    K.tails(x, out)
    b = K.tails.last_run.timeline
    assert a.events == b.events


def test_twenty_thousand_tasks_simulate_quickly():
    @pypto.jit
    def flat(x: pypto.Tensor([2560, 2048], pypto.DT_FP32), out: pypto.Tensor([2560, 2048], pypto.DT_FP32)):
        pypto.set_vec_tile_shapes(16, 16)
        out[:] = pypto.exp(x) + 1.0

    x = torch.randn(2560, 2048)
    out = torch.empty_like(x)
    flat(x, out)
    torch.testing.assert_close(out, torch.exp(x) + 1.0)
    t0 = time.perf_counter()
    tl = flat.last_run.timeline
    seconds = time.perf_counter() - t0
    assert tl.stats["tasks"] == (2560 // 16) * (2048 // 16) == 20480
    assert seconds < 30, f"simulating 20480 tasks took {seconds:.1f} s"
    C.check_invariants(tl, expected_tasks=20480)
    # 48 AIV cores all used, none of the 24 AIC cores
    assert tl.stats["cores_used"] == 48 and tl.stats["busy_cycles"]["AIC"] == 0


def test_lazy_timeline_uses_the_machine_of_the_call():
    with C.machine("small"):
        record = K.run_chains(blocks=4)
    tl = record.timeline  # read after the machine was switched back
    assert tl.machine.name == "small"
