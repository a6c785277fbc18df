"""device_sched_mode: what each mode exists for, on a producer/consumer kernel.

* 1 (L2 affinity) and 3: a consumer made ready by its producer runs next, while the producer's
  output is still in L2, so on a machine whose L2 is too small for the whole working set
  (the SMALL machine: 256 KB) consumer copy-ins hit L2 at least as often as under FIFO order
  (on this kernel the device tasks, which now run one after another, already keep producers and
  consumers close: the gain is small or none).
* 2 (fair) and 3: a thread fills only idle cores, so with about as many ready tasks as cores the
  dispatches spread over the schedule threads instead of the first threads taking everything.
"""

from __future__ import annotations

import pytest

try:
    from tests.timing import _timing_checks as C
    from tests.timing import _timing_kernels as K
except ImportError:
    import _timing_checks as C
    import _timing_kernels as K

MATMUL = "matmul"


def _consumer_copy_in(tl):
    """MTE2 cycles and L2 hits of the consumer (matmul) tasks."""
    cons = [e for e in tl.events if MATMUL in e.leaf]
    assert cons, "no consumer tasks"
    return sum(dict(e.pipes).get("MTE2", 0) for e in cons), sum(e.l2_hits for e in cons)


@pytest.fixture(scope="module")
def chains_small():
    """The chains kernel on the SMALL machine (48 blocks: 48 x 16 KB of x, y and out each)."""
    with C.machine("small"):
        record = K.run_chains(blocks=48)
        tiles = K.executed_tiles(record)
        tls = {m: C.check_invariants(record.simulate({"device_sched_mode": m}), tiles) for m in range(4)}
    return record, tls


@pytest.mark.parametrize("affine, base", [(1, 0), (3, 2), (3, 0)])
def test_l2_affinity_raises_the_hit_rate_and_lowers_consumer_copy_in(chains_small, affine, base):
    _, tls = chains_small
    a, b = tls[affine], tls[base]
    assert a.machine.l2_bytes == 256 * 1024
    assert a.stats["l2_hit_rate"] >= b.stats["l2_hit_rate"] - 0.01, (a.stats["l2_hit_rate"], b.stats["l2_hit_rate"])
    a_cycles, a_hits = _consumer_copy_in(a)
    b_cycles, b_hits = _consumer_copy_in(b)
    assert a_hits >= b_hits - 1
    assert a_cycles <= b_cycles * 1.05


def test_l2_affinity_runs_consumers_soon_after_their_producers(chains_small):
    """The mechanism: in mode 1 a consumer starts closer to the end of its producer."""
    _, tls = chains_small

    def mean_lag(tl):
        by_task = {e.task: e for e in tl.events}
        lags = [by_task[j].start - by_task[i].end for i, j, kind in tl.deps
                if kind == "RAW" and MATMUL in by_task[j].leaf]
        return sum(lags) / len(lags)

    assert mean_lag(tls[1]) < mean_lag(tls[0])


def test_l2_hits_need_a_small_l2(chains_small):
    """With A2A3's 192 MB L2 every re-read hits whatever the order, so all modes hit equally:
    the mode 1 gain above comes from what stays resident."""
    record, _ = chains_small
    rates = {m: record.simulate({"device_sched_mode": m}, machine="A2A3").stats["l2_hit_rate"] for m in range(4)}
    assert len(set(rates.values())) == 1, rates
    assert rates[0] > 0.5
    # data read once (x) never hits: the rate is below 1
    assert rates[0] < 1.0


def test_an_l2_hit_is_a_cheaper_copy_in(chains_small):
    _, tls = chains_small
    cons = [e for e in tls[1].events if MATMUL in e.leaf]
    by_hits: dict = {}
    for e in cons:
        by_hits.setdefault(e.l2_hits, set()).add(dict(e.pipes)["MTE2"])
    assert len(by_hits) >= 2, by_hits
    # same tile sizes: the more copy-ins hit L2, the fewer MTE2 cycles
    # (one count can come from different operands hitting: a set of values per count)
    ordered = [max(v) for _, v in sorted(by_hits.items())]
    assert ordered == sorted(ordered, reverse=True) and ordered[0] > ordered[-1]


# ---- fairness --------------------------------------------------------------------------------------

@pytest.fixture(scope="module")
def wide48():
    record = K.run_wide(tiles=48)  # A2A3: 48 AIV cores, 5 schedule threads
    tiles = K.executed_tiles(record)
    return {m: C.check_invariants(record.simulate({"device_sched_mode": m}), tiles) for m in range(4)}


def _spread(tl):
    d = tl.stats["dispatches_per_thread"]
    return max(d) - min(d)


@pytest.mark.parametrize("fair, base", [(2, 0), (3, 1), (3, 0)])
def test_fair_mode_spreads_dispatches_over_threads(wide48, fair, base):
    f, b = wide48[fair], wide48[base]
    assert _spread(f) < _spread(b), (f.stats["dispatches_per_thread"], b.stats["dispatches_per_thread"])
    # every thread takes a share, and the tasks land on as many cores as there are tasks
    assert all(n > 0 for n in f.stats["dispatches_per_thread"])
    assert f.stats["cores_used"] == 48 > b.stats["cores_used"]
    # no core gets a pending task in fair mode: one task per core
    assert len({e.core for e in f.events}) == len(f.events)


def test_fifo_fills_pending_slots(wide48):
    tl = wide48[0]
    assert tl.stats["cores_used"] < len(tl.events)
    per_core: dict = {}
    for e in tl.events:
        per_core[e.core] = per_core.get(e.core, 0) + 1
    assert max(per_core.values()) == 2  # running + pending slot


def test_fair_mode_costs_bookkeeping_when_tasks_outnumber_cores():
    record = K.run_wide(tiles=480)
    fifo, fair = (C.check_invariants(record.simulate({"device_sched_mode": m})) for m in (0, 2))
    assert fair.stats["makespan_cycles"] > fifo.stats["makespan_cycles"]
    disp = lambda tl: sum(a.end - a.start for a in tl.aicpu if a.name == "dispatch")  # noqa: E731
    extra = fair.machine.fair_extra_cycles * fair.machine.aicpu_task_scale * fair.stats["tasks"]  # scaled as every AICPU cost
    assert disp(fair) - disp(fifo) >= extra * 0.9


# ---- the L2 model itself ------------------------------------------------------------------------------

@pytest.mark.parametrize("rows, hits", [(512, "all"), (2048, "none")])
def test_written_tiles_take_l2_capacity(rows, hits):
    """Data a task wrote is in L2 until enough other data pushes it out: read back in the same
    order, 128 KB of it fits the SMALL machine's 256 KB L2 (every read hits), 512 KB does not
    (LRU under a sequential scan: every read misses)."""
    with C.machine("small"):
        record = K.make_fill_then_read(rows)
        tl = C.check_invariants(record.timeline)
    readers = [e for e in tl.events if "add" in e.leaf]
    assert len(readers) == rows // 64
    got = sum(e.l2_hits for e in readers)
    assert got == (len(readers) if hits == "all" else 0), got
