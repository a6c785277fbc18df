"""The other runtime options as the timing simulator models them: stitch_function_max_num,
ready_on_host_tensors, valid_shape_optimize, launch_early_mode and device_sched_parallelism,
each through RunRecord.simulate({...}) and, where it matters, through a real call's jit option."""

from __future__ import annotations

import pytest

from pypto.runtime.machine import A2A3

try:
    from tests.timing import _timing_checks as C
    from tests.timing import _timing_kernels as K
except ImportError:
    import _timing_checks as C
    import _timing_kernels as K


def _roots_per_device_task(tl):
    out: dict = {}
    for e in tl.events:
        out.setdefault(e.device_task, set()).add(e.root)
    return {dt: len(roots) for dt, roots in out.items()}


# ---- stitch_function_max_num --------------------------------------------------------------------------

@pytest.fixture(scope="module")
def rows16():
    return K.run_rows(K.rows, iterations=16)


def test_lower_stitch_max_gives_more_device_tasks(rows16):
    tiles = K.executed_tiles(rows16)
    tls = {n: C.check_invariants(rows16.simulate({"stitch_function_max_num": n}), tiles) for n in (1, 2, 128)}
    counts = {n: tl.stats["device_tasks"] for n, tl in tls.items()}
    assert counts[1] == 16
    assert counts[2] >= 8
    assert counts[1] > counts[2] > counts[128], counts
    for n, tl in tls.items():
        assert max(_roots_per_device_task(tl).values()) <= n
        assert sum(_roots_per_device_task(tl).values()) == 16
    # the default is what the call ran with
    assert rows16.timeline.stats["device_tasks"] == counts[128]


def test_stitch_max_as_a_jit_option_of_a_real_call(rows16):
    record = K.run_rows(K.rows_stitch2, iterations=16)
    tl = C.check_invariants(record.timeline, K.executed_tiles(record))
    assert tl.options["stitch_function_max_num"] == 2
    assert tl.stats["device_tasks"] >= 8
    assert tl.stats["device_tasks"] > rows16.timeline.stats["device_tasks"]
    assert max(_roots_per_device_task(tl).values()) <= 2
    # the functional executor stitched the same way: 16 roots, 2 per device task
    done, _ = record.compiled.executor.last
    assert len(done) == 8 and all(len(dt.roots) == 2 for dt in done)


def test_jit_option_and_simulate_option_give_the_same_schedule(rows16):
    tl = K.run_rows(K.rows_stitch2, iterations=16).timeline
    same = rows16.simulate({"stitch_function_max_num": 2})
    assert [(e.task, e.start, e.end) for e in tl.events] == [(e.task, e.start, e.end) for e in same.events]


def test_simulate_can_raise_stitch_max_above_the_calls():
    record = K.run_rows(K.rows_stitch2, iterations=16)
    deeper = record.simulate({"stitch_function_max_num": 128})
    default = K.run_rows(K.rows, iterations=16).timeline
    assert deeper.stats["device_tasks"] == default.stats["device_tasks"]


def test_a_device_task_is_submitted_full():
    """A device task is submitted when it holds stitch_function_max_num roots (or at the end),
    never early: device tasks run one after another, so an early half-full one would serialise
    the roots upstream's stitching lets run in parallel."""
    record = K.run_rows(K.rows, iterations=16)
    assert record.simulate({"stitch_function_max_num": 128}).stats["device_tasks"] == 1
    assert record.simulate({"stitch_function_max_num": 4}).stats["device_tasks"] == 4
    tl = record.simulate({"stitch_function_max_num": 128})
    submits = [a for a in tl.aicpu if a.thread == "control" and a.name == "submit"]
    stitches = [a for a in tl.aicpu if a.thread == "control" and a.name == "stitch"]
    assert len(submits) == 1 and submits[0].start >= max(a.end for a in stitches)


# ---- ready_on_host_tensors ---------------------------------------------------------------------------

def _waits(tl):
    return [a for a in tl.aicpu if a.thread == "control" and a.name == "wait device"]


def test_element_read_in_loop_bound_waits_for_the_device():
    record = K.run_count_loop(n=8)
    tiles = K.executed_tiles(record)
    wait = C.check_invariants(record.timeline, tiles)
    host = C.check_invariants(record.simulate({"ready_on_host_tensors": ["lens"]}), tiles)
    assert wait.stats["control_wait_cycles"] > 0
    assert len(_waits(wait)) == 1
    assert sum(a.end - a.start for a in _waits(wait)) == wait.stats["control_wait_cycles"]
    assert host.stats["control_wait_cycles"] == 0 and not _waits(host)
    assert host.stats["makespan_cycles"] <= wait.stats["makespan_cycles"]
    # while waiting, the control did not stitch: the loop's first root starts after the device work
    w = _waits(wait)[0]
    y_tasks = [e for e in wait.events if e.root == 0]
    assert w.end >= max(e.end for e in y_tasks)
    stitches = [a for a in wait.aicpu if a.name == "stitch"]
    assert all(not (w.start < a.start < w.end) for a in stitches)
    # with the tensor ready on host, the loop is stitched while the first device task runs
    first_end = max(e.end for e in host.events if e.root == 0)
    assert any(a.start < first_end for a in host.aicpu if a.name == "stitch" and "root1" in a.detail)


def test_ready_on_host_as_a_jit_option_of_a_real_call():
    wait = K.run_count_loop(K.count_loop, n=8).timeline
    record = K.run_count_loop(K.count_loop_host, n=8)
    host = C.check_invariants(record.timeline, K.executed_tiles(record))
    assert list(host.options["ready_on_host_tensors"]) == ["lens"]
    assert host.stats["control_wait_cycles"] == 0 and not _waits(host)
    assert wait.stats["control_wait_cycles"] > 0
    assert host.stats["makespan_cycles"] <= wait.stats["makespan_cycles"]


def test_per_batch_lengths_wait_once_per_read():
    record = K.run_batch_lens()
    tiles = K.executed_tiles(record)
    wait = C.check_invariants(record.timeline, tiles)
    host = C.check_invariants(record.simulate({"ready_on_host_tensors": ["lens"]}), tiles)
    # lens[b] is read once per batch; a batch of length 0 runs no root, so its read is charged to
    # the next root: 5 waits for 6 batches with one empty
    assert len(_waits(wait)) == len(K.BATCH_LENS) - K.BATCH_LENS.count(0)
    assert wait.stats["control_wait_cycles"] >= len(_waits(wait)) * wait.machine.wait_device_cycles
    assert host.stats["control_wait_cycles"] == 0 and not _waits(host)
    assert host.stats["makespan_cycles"] < wait.stats["makespan_cycles"]


def test_no_element_reads_no_wait():
    record = K.run_rows(K.rows, iterations=4)
    for opts in ({}, {"ready_on_host_tensors": ["x"]}):
        tl = record.simulate(opts)
        assert tl.stats["control_wait_cycles"] == 0 and not _waits(tl)


def test_ready_on_host_of_another_tensor_still_waits():
    record = K.run_count_loop(n=8)
    tl = C.check_invariants(record.simulate({"ready_on_host_tensors": ["x"]}))
    assert tl.stats["control_wait_cycles"] > 0


# ---- valid_shape_optimize ----------------------------------------------------------------------------

def test_valid_shape_optimize_main_tasks_skip_dynamic_overhead():
    record = K.run_tails()
    tiles = K.executed_tiles(record)
    # each task's own cost: no loads overlapping the task before it on the core
    serial = A2A3.with_(overlap_pending_loads=False)
    plain = C.check_invariants(record.simulate({"valid_shape_optimize": 0}, machine=serial), tiles)
    vso = C.check_invariants(record.simulate({"valid_shape_optimize": 1}, machine=serial), tiles)
    assert {e.variant for e in plain.events} == {""}
    variants = [e.variant for e in vso.events]
    assert variants.count("main") == K.TAILS_MAIN and variants.count("tail") == K.TAILS_TAIL
    before = {e.task: e for e in plain.events}
    for e in vso.events:
        b = before[e.task]
        assert e.leaf == b.leaf
        if e.variant == "main":
            assert e.duration < b.duration  # static code: no per-op scalar bookkeeping
            assert "S" not in dict(e.pipes) and dict(b.pipes).get("S", 0) > 0
        else:
            assert e.duration == b.duration and dict(e.pipes) == dict(b.pipes)
    busy = lambda tl: sum(e.duration for e in tl.events)  # noqa: E731
    assert busy(vso) < busy(plain)
    assert vso.stats["makespan_cycles"] <= plain.stats["makespan_cycles"]


def test_valid_shape_optimize_on_static_shapes_changes_nothing():
    """Static shapes never pay the dynamic overhead: every task costs the same either way."""
    record = K.run_wide(tiles=8)  # [128, 64]: DYNAMIC rows, but every tile is full
    plain, vso = record.simulate({"valid_shape_optimize": 0}), record.simulate({"valid_shape_optimize": 1})
    assert {e.variant for e in vso.events} == {"main"}
    by = {e.task: e.duration for e in plain.events}
    assert all(e.duration <= by[e.task] for e in vso.events)


# ---- launch_early_mode -------------------------------------------------------------------------------

@pytest.mark.parametrize("runner", ["rows", "chains", "count_loop", "tails"])
@pytest.mark.parametrize("mode", [0, 1, 2, 3])
def test_launch_early_never_increases_makespan(runner, mode):
    record = {"rows": K.run_rows, "chains": K.run_chains, "count_loop": K.run_count_loop,
              "tails": K.run_tails}[runner]()
    late = C.check_invariants(record.simulate({"launch_early_mode": 0, "device_sched_mode": mode}))
    early = C.check_invariants(record.simulate({"launch_early_mode": 1, "device_sched_mode": mode}))
    assert early.stats["makespan_cycles"] <= late.stats["makespan_cycles"]
    # the control AICPU starts at 0 instead of after the launch; the cores start at launch either way
    first = lambda tl: min(a.start for a in tl.aicpu if a.thread == "control")  # noqa: E731
    assert first(early) == 0 and first(late) == late.machine.launch_cycles
    assert min(e.start for e in early.events) >= early.machine.launch_cycles


# ---- device_sched_parallelism ------------------------------------------------------------------------

def test_parallelism_divides_stitch_time_of_parallel_loops():
    record = K.run_rows(K.rows_parallel, iterations=16)
    tls = {p: C.check_invariants(record.simulate({"device_sched_parallelism": p})) for p in (1, 2, 4, 8)}
    stitch = {p: C.span_cycles(tl, "control", "stitch") for p, tl in tls.items()}
    assert stitch[1] == 16 * tls[1].machine.root_stitch_cycles
    assert stitch[1] > stitch[2] > stitch[4] > stitch[8], stitch
    assert stitch[4] * 4 == pytest.approx(stitch[1], rel=0.01)
    assert tls[4].stats["makespan_cycles"] <= tls[1].stats["makespan_cycles"]


def test_parallelism_leaves_sequential_loops_alone():
    record = K.run_rows(K.rows, iterations=16)
    one, four = (record.simulate({"device_sched_parallelism": p}) for p in (1, 4))
    assert C.span_cycles(one, "control", "stitch") == C.span_cycles(four, "control", "stitch")
    assert one.events == four.events


# ---- the control AICPU submits early when the cores run dry ---------------------------------------------

def _idle_while_stitching(tl):
    """Stitch spans after which the control kept stitching although every submitted task had
    finished (the cores were idle and it held unsubmitted roots)."""
    control = sorted((a for a in tl.aicpu if a.thread == "control"), key=lambda a: a.start)
    submit_of = {}
    for a in control:
        if a.name == "submit":
            submit_of[int(a.detail.split(":")[0].split()[-1])] = a.start
    bad = []
    for a, b in zip(control, control[1:]):
        if a.name != "stitch" or b.name != "stitch":
            continue
        t = a.end
        submitted = [e for e in tl.events if submit_of[e.device_task] <= t]
        if submitted and all(e.end < t for e in submitted):
            bad.append(a)
    return bad


@pytest.mark.parametrize("runner", ["rows", "rows_parallel", "chains"])
@pytest.mark.parametrize("mode", [0, 1, 2, 3])
def test_control_does_not_stitch_on_while_the_cores_are_idle(runner, mode):
    record = {"rows": lambda: K.run_rows(K.rows, 16), "rows_parallel": lambda: K.run_rows(K.rows_parallel, 16),
              "chains": lambda: K.run_chains(16)}[runner]()
    tl = C.check_invariants(record.simulate({"device_sched_mode": mode}))
    assert _idle_while_stitching(tl) == []


def test_element_read_in_a_view_offset_waits_for_the_device():
    record = K.run_gather_rows()
    wait = C.check_invariants(record.timeline)
    host = C.check_invariants(record.simulate({"ready_on_host_tensors": ["idx"]}))
    assert wait.stats["control_wait_cycles"] > 0 and _waits(wait)
    # the first loop root (root1, after the exp root) reads idx[0]: it is stitched after a wait
    first = next(a for a in wait.aicpu if a.name == "stitch" and a.detail.startswith("root1 "))
    assert any(w.end <= first.start for w in _waits(wait))
    assert len(_waits(wait)) == 4  # one per idx[b] read, each before its own root
    assert host.stats["control_wait_cycles"] == 0
    assert host.stats["makespan_cycles"] <= wait.stats["makespan_cycles"]
