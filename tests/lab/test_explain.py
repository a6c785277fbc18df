"""Start reasons (`Timeline.explain`), the "why is this late" chain and the critical path that
sums to the makespan, on kernels with dependencies, several device tasks and every sched mode."""

from __future__ import annotations

import numpy as np
import pytest
import torch

import pypto
from pypto.runtime import explain as X

D = pypto.DYNAMIC
FP32 = pypto.DT_FP32


def _chain_kernel(mode: int, roots: int):
    @pypto.jit(runtime_options={"device_sched_mode": mode, "stitch_function_max_num": roots})
    def two_stage(x: pypto.Tensor([D, 64], FP32), tmp: pypto.Tensor([D, 64], FP32),
                  out: pypto.Tensor([D, 64], FP32)):
        pypto.set_vec_tile_shapes(16, 64)
        for b in pypto.loop(pypto.ceildiv(x.shape[0], 16)):
            rows = slice(b * 16, (b + 1) * 16)
            tmp[rows, :] = pypto.exp(x[rows, :])
        for b in pypto.loop(pypto.ceildiv(x.shape[0], 16)):
            rows = slice(b * 16, (b + 1) * 16)
            out[rows, :] = tmp[rows, :] * 2.0 + x[rows, :]

    return two_stage


def _run(mode=0, roots=128, batch=400):
    kernel = _chain_kernel(mode, roots)
    x = torch.randn(batch, 64, generator=torch.Generator().manual_seed(3))
    tmp, out = torch.empty(batch, 64), torch.empty(batch, 64)
    kernel(x, tmp, out)
    torch.testing.assert_close(out, torch.exp(x) * 2.0 + x)
    return kernel, kernel.last_run.timeline


@pytest.fixture(scope="module", params=[(0, 128), (1, 128), (2, 4), (3, 8)], ids=lambda p: f"mode{p[0]}-roots{p[1]}")
def run(request):
    return _run(*request.param)


def test_every_reason_is_consistent_with_the_schedule(run):
    _kernel, tl = run
    ev = tl.events
    preds: dict = {}
    for src, dst, _kind in tl.deps:
        preds.setdefault(dst, set()).add(src)
    kinds = set()
    for k in range(len(ev)):
        r = tl.explain(k)
        kinds.add(r.kind)
        assert r.start == int(ev.start[k])
        assert sum(c for _, c in r.parts) == r.start - r.since >= 0
        assert all(c > 0 for _, c in r.parts)
        if r.kind == "core busy":
            assert ev.core[r.cause] == ev.core[k] and int(ev.end[r.cause]) <= r.start
        elif r.kind in ("dependency", "scheduler queue"):
            assert r.cause in preds[k], "the cause of a dependency wait is a predecessor"
            assert r.edge in ("RAW", "WAR", "WAW", "RAW/WAW", "RAW/WAR", "WAR/WAW")
            # the dependency that made it ready is the one that ended last among its predecessors
            assert int(ev.end[r.cause]) == max(int(ev.end[j]) for j in preds[k])
        elif r.kind == "device task":
            assert int(ev.end[r.cause]) <= r.start
        else:
            assert r.kind == "launch" and r.cause is None and r.since == 0
    assert "launch" in kinds
    if tl.device_tasks == 1:  # both stages in one device task: the second waits for the first
        assert {"dependency", "scheduler queue"} & kinds
    else:
        assert "device task" in kinds


def test_critical_chain_tiles_the_makespan(run):
    _kernel, tl = run
    segments = tl.critical_chain()
    makespan = tl.stats["makespan_cycles"]
    assert segments[0].start == 0 and segments[-1].end == makespan
    assert sum(s.cycles for s in segments) == makespan
    for a, b in zip(segments, segments[1:]):
        assert a.end == b.start and a.cycles > 0
    tasks = [s.task for s in segments if s.task is not None]
    last = int(np.argmax(tl.events.end))
    assert tasks[-1] == last
    assert tasks == X.critical_tasks(tl).tolist()
    # each task's run is on the chain with its recorded times
    for s in segments:
        if s.task is not None:
            assert (s.start, s.end) == (int(tl.events.start[s.task]), int(tl.events.end[s.task]))


def test_why_late_follows_causes_back_to_the_launch(run):
    _kernel, tl = run
    chain = tl.why_late(len(tl.events) - 1)
    assert chain[0].task == len(tl.events) - 1
    for a, b in zip(chain, chain[1:]):
        assert a.cause == b.task
    assert chain[-1].cause is None


def test_several_device_tasks_chain_through_the_sync():
    _kernel, tl = _run(mode=0, roots=2, batch=400)
    assert tl.device_tasks > 2
    reasons = [tl.explain(k) for k in range(len(tl.events))]
    synced = [r for r in reasons if r.kind == "device task"]
    assert synced, "tasks of later device tasks wait for the previous one"
    r = synced[0]
    assert any(w == "device sync" for w, _ in r.parts) or r.start == r.since
    assert sum(s.cycles for s in tl.critical_chain()) == tl.stats["makespan_cycles"]


def test_region_names_the_shared_tensor():
    kernel, tl = _run()
    lowered = kernel.last_run.compiled.lowered
    deps = [r for r in (tl.explain(k, lowered) for k in range(len(tl.events)))
            if r.kind in ("dependency", "scheduler queue")]
    assert deps and all(r.region for r in deps)
    assert {r.region.split("[")[0] for r in deps} <= {"%tmp", "%x", "%out"}
    assert "%tmp" in deps[0].text or "%x" in deps[0].text or "%out" in deps[0].text


def test_bad_task_is_a_clear_error():
    _kernel, tl = _run()
    with pytest.raises(pypto.PyptoError, match="task") as err:
        tl.explain(len(tl.events))
    assert isinstance(err.value, ValueError) and err.value.param == "task"
    with pytest.raises(TypeError, match="task"):
        tl.explain("3")
    assert tl.explain(0).task == 0  # the next good call works
