"""Schedule invariants on every kind of timeline the simulator produces (each kernel under each
device_sched_mode and the other runtime options), and proof that `check_invariants` catches a
broken schedule."""

from __future__ import annotations

import dataclasses

import pytest

try:
    from tests.timing import _timing_checks as C
    from tests.timing import _timing_kernels as K
except ImportError:
    import _timing_checks as C
    import _timing_kernels as K

RUNNERS = {
    "chains": K.run_chains,
    "wide": K.run_wide,
    "rows": K.run_rows,
    "rows_parallel": lambda: K.run_rows(K.rows_parallel),
    "count_loop": K.run_count_loop,
    "batch_lens": K.run_batch_lens,
    "tails": K.run_tails,
}

OPTION_SETS = [
    {"device_sched_mode": 0},
    {"device_sched_mode": 1},
    {"device_sched_mode": 2},
    {"device_sched_mode": 3},
    {"launch_early_mode": 1, "device_sched_mode": 3},
    {"stitch_function_max_num": 1},
    {"stitch_function_max_num": 3, "device_sched_parallelism": 4},
    {"valid_shape_optimize": 1, "device_sched_mode": 1},
    {"ready_on_host_tensors": ["lens"], "device_sched_mode": 2},
    {"launch_sched_aicpu_num": 1},
]


@pytest.mark.parametrize("kernel", sorted(RUNNERS))
def test_invariants_under_every_option_set(kernel):
    record = RUNNERS[kernel]()
    tiles = K.executed_tiles(record)
    C.check_invariants(record.timeline, expected_tasks=tiles)
    for opts in OPTION_SETS:
        tl = record.simulate(opts)
        C.check_invariants(tl, expected_tasks=tiles)
        for key, value in opts.items():  # the timeline records the options it was simulated with
            got = tl.options[key]
            assert (list(got) if isinstance(got, (list, tuple)) else got) == value


@pytest.mark.parametrize("mode", [0, 1, 2, 3])
def test_invariants_on_the_small_machine(mode):
    with C.machine("small"):
        record = K.run_chains(blocks=12)
        tl = C.check_invariants(record.simulate({"device_sched_mode": mode}), K.executed_tiles(record))
    assert tl.machine.name == "small"
    # the small machine has 2 AIC and 4 AIV cores and at most 3 schedule threads
    assert {e.core for e in tl.events} <= {"AIC0", "AIC1", "AIV0", "AIV1", "AIV2", "AIV3"}
    assert len(tl.stats["dispatches_per_thread"]) == 3
    assert tl.deps, "the chains kernel has producer -> consumer edges"


def test_dependency_edges_cover_producer_consumer_pairs():
    tl = K.run_chains(blocks=8).timeline
    by_task = {e.task: e for e in tl.events}
    raw = [(by_task[i], by_task[j]) for i, j, kind in tl.deps if kind == "RAW"]
    # every matmul reads the exp of its block: one RAW edge from an AIV task to an AIC task per block
    cross = [(a, b) for a, b in raw if a.core_type == "AIV" and b.core_type == "AIC"]
    assert len(cross) == 8
    assert all(a.loop_indices == b.loop_indices for a, b in cross)


# ---- the checker itself fails on broken schedules -----------------------------------------------------

def _broken(tl, events=None, deps=None, aicpu=None):
    return dataclasses.replace(tl, events=events if events is not None else list(tl.events),
                               deps=deps if deps is not None else list(tl.deps),
                               aicpu=aicpu if aicpu is not None else list(tl.aicpu))


@pytest.fixture(scope="module")
def good():
    return K.run_chains(blocks=8).timeline


def test_checker_accepts_the_real_schedule(good):
    C.check_invariants(good)


def test_checker_rejects_overlap_on_a_core(good):
    evs = sorted(good.events, key=lambda e: e.start)
    a, b = evs[0], evs[1]
    # b moved onto a's core, starting while a runs
    moved = dataclasses.replace(b, core=a.core, core_type=a.core_type, start=a.start,
                                end=max(b.end - b.start + a.start, a.start + 1))
    events = [moved if e is b else e for e in good.events]
    with pytest.raises(AssertionError, match="while"):
        C.check_invariants(_broken(good, events=events, deps=[]))


def test_checker_rejects_a_violated_dependency(good):
    i, j, _ = good.deps[0]
    by_task = {e.task: e for e in good.events}
    early = dataclasses.replace(by_task[j], start=by_task[i].end - 1)
    events = [early if e.task == j else e for e in good.events]
    with pytest.raises(AssertionError, match="edge"):
        C.check_invariants(_broken(good, events=events))


def test_checker_rejects_a_task_scheduled_twice_or_missing(good):
    with pytest.raises(AssertionError):
        C.check_invariants(_broken(good, events=list(good.events) + [good.events[0]]))
    with pytest.raises(AssertionError):
        C.check_invariants(_broken(good, events=list(good.events)[1:]))
    with pytest.raises(AssertionError):
        C.check_invariants(good, expected_tasks=len(good.events) + 1)
