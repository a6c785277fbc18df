"""Shared checks for the timing-simulator tests: schedule invariants and a Chrome-trace validator."""

from __future__ import annotations

import contextlib
import json
import math

import pypto


def check_invariants(tl, expected_tasks=None):
    """Every schedule must satisfy these, whatever the options: no overlap on a core, every
    dependency respected, each task exactly once, busy time and events within the makespan."""
    stats = tl.stats
    makespan = stats["makespan_cycles"]
    events = tl.events
    ids = [e.task for e in events]
    assert len(ids) == len(set(ids)), "a task was scheduled more than once"
    assert len(events) == stats["tasks"]
    assert sorted(ids) == list(range(len(ids))), "task ids are not 0..n-1: a task is missing"
    if expected_tasks is not None:
        assert stats["tasks"] == expected_tasks, f"{stats['tasks']} tasks simulated, {expected_tasks} expected"
    by_task = {e.task: e for e in events}
    # every task the dependency edges mention was scheduled
    for i, j, kind in tl.deps:
        assert kind in ("RAW", "WAR", "WAW")
        assert i in by_task and j in by_task, f"edge {i}->{j} names an unscheduled task"
        assert by_task[j].start >= by_task[i].end, \
            f"{kind} edge {i}->{j}: successor starts at {by_task[j].start} before {by_task[i].end}"
    per_core: dict = {}
    for e in events:
        assert 0 <= e.start <= e.end <= makespan, f"event {e.task} [{e.start}, {e.end}] outside [0, {makespan}]"
        assert e.core_type in ("AIC", "AIV") and e.core.startswith(e.core_type)
        per_core.setdefault(e.core, []).append(e)
    for core, items in per_core.items():
        items.sort(key=lambda e: (e.start, e.end))
        for a, b in zip(items, items[1:]):
            assert b.start >= a.end, f"{core}: task {b.task} starts at {b.start} while {a.task} runs until {a.end}"
        busy = sum(e.duration for e in items)
        assert busy <= makespan, f"{core} busy {busy} > makespan {makespan}"
    # a task starts after the cores launched and after its device task was submitted
    submitted = {}
    for a in tl.aicpu:
        if a.thread == "control" and a.name == "submit":
            dt = int(a.detail.split(":")[0].split()[-1])
            assert dt not in submitted, f"device task {dt} submitted twice"
            submitted[dt] = a.end
    assert len(submitted) == stats["device_tasks"]
    for e in events:
        assert e.start >= tl.machine.launch_cycles
        assert e.start >= submitted[e.device_task], f"task {e.task} starts before device task {e.device_task}"
    lanes: dict = {}
    for a in tl.aicpu:
        assert 0 <= a.start <= a.end <= makespan
        lanes.setdefault(a.thread, []).append(a)
    for thread, spans in lanes.items():  # one AICPU thread does one thing at a time
        spans.sort(key=lambda a: (a.start, a.end))
        for a, b in zip(spans, spans[1:]):
            assert b.start >= a.end, f"AICPU {thread}: {b.name} at {b.start} overlaps {a.name} until {a.end}"
    assert stats["busy_cycles"]["AIC"] + stats["busy_cycles"]["AIV"] == sum(e.duration for e in events)
    for v in stats["utilization"].values():
        assert 0.0 <= v <= 1.0
    assert stats["critical_path_cycles"] <= makespan
    assert sum(stats["dispatches_per_thread"]) == stats["tasks"]
    threads = min(int(tl.options.get("launch_sched_aicpu_num", 7)), tl.machine.max_sched_aicpu)
    assert len(stats["dispatches_per_thread"]) == threads
    assert all(0 <= e.thread < threads for e in events)
    assert 0 <= stats["device_tasks"] and all(0 <= e.device_task < stats["device_tasks"] for e in events)
    assert 0.0 <= stats["l2_hit_rate"] <= 1.0
    why = getattr(events, "why", None)
    if why is not None:  # a task readied by a completion is dispatched after that completion ends
        early = (why["by"] >= 0) & (why["dispatched"] < why["ready"])
        assert not early.any(), f"{int(early.sum())} tasks dispatched before the completion that readied them"
    assert stats["control_wait_cycles"] >= 0
    return tl


@contextlib.contextmanager
def machine(name):
    """Use machine model ``name`` inside the block; always restore the one before (A2A3 by default)."""
    from pypto.runtime.machine import current_machine

    before = current_machine()
    pypto.set_machine(name)
    try:
        yield
    finally:
        pypto.set_machine(before)


def span_cycles(tl, thread, name):
    return sum(a.end - a.start for a in tl.aicpu if a.thread == thread and a.name == name)


# ---- Chrome Trace Event Format --------------------------------------------------------------------

def _num(x):
    return isinstance(x, (int, float)) and not isinstance(x, bool) and math.isfinite(x)


def validate_chrome_trace(trace, timeline=None):
    """Raise AssertionError unless ``trace`` is a well-formed Trace Event Format object as this
    project emits it. Returns (process names by pid, thread names by (pid, tid))."""
    assert isinstance(trace, dict) and isinstance(trace.get("traceEvents"), list)
    json.dumps(trace)  # serialisable
    procs, threads = {}, {}
    flows: dict = {}
    used_lanes = set()
    for ev in trace["traceEvents"]:
        assert isinstance(ev, dict)
        ph = ev.get("ph")
        assert ph in ("X", "M", "s", "f"), f"unexpected phase {ph!r}"
        assert isinstance(ev.get("pid"), int) and isinstance(ev.get("tid"), int)
        assert isinstance(ev.get("name"), str) and ev["name"]
        if ph == "M":
            assert ev["name"] in ("process_name", "thread_name")
            assert isinstance(ev.get("args"), dict) and isinstance(ev["args"].get("name"), str)
            if ev["name"] == "process_name":
                assert ev["pid"] not in procs, "process named twice"
                procs[ev["pid"]] = ev["args"]["name"]
            else:
                key = (ev["pid"], ev["tid"])
                assert key not in threads, "thread named twice"
                threads[key] = ev["args"]["name"]
        elif ph == "X":
            assert _num(ev.get("ts")) and ev["ts"] >= 0
            assert _num(ev.get("dur")) and ev["dur"] >= 0
            used_lanes.add((ev["pid"], ev["tid"]))
        else:
            assert _num(ev.get("ts")) and ev["ts"] >= 0
            assert "id" in ev and isinstance(ev.get("cat"), str)
            if ph == "f":
                assert ev.get("bp") == "e"
            flows.setdefault((ev["id"], ev["cat"]), []).append(ev)
    for key, pair in flows.items():
        assert sorted(e["ph"] for e in pair) == ["f", "s"], f"flow {key} is not one s/f pair"
        s = next(e for e in pair if e["ph"] == "s")
        f = next(e for e in pair if e["ph"] == "f")
        assert s["ts"] <= f["ts"] + 1e-9, f"flow {key} goes back in time"
        assert s["name"] == f["name"]
    # every lane an X event uses has a named process and thread
    for pid, tid in used_lanes:
        assert pid in procs and (pid, tid) in threads, f"unnamed lane {(pid, tid)}"
    for (pid, tid) in threads:
        assert pid in procs
    if timeline is not None:
        names = sorted(procs.values())
        assert names == sorted(["AIC", "AIV", "AICPU"]), names
        pid_of = {v: k for k, v in procs.items()}
        # one thread per core used, named after it, in the process of its core type
        cores = {e.core for e in timeline.events}
        for core in cores:
            ctype = "AIC" if core.startswith("AIC") else "AIV"
            lanes = [k for k, v in threads.items() if v == core and k[0] == pid_of[ctype]]
            assert len(lanes) == 1, f"core {core} has {len(lanes)} lanes"
        core_lanes = {v for (pid, _), v in threads.items() if pid in (pid_of["AIC"], pid_of["AIV"])}
        assert core_lanes == cores
        x_core = [e for e in trace["traceEvents"] if e["ph"] == "X" and e["pid"] in (pid_of["AIC"], pid_of["AIV"])]
        assert len(x_core) == len(timeline.events)
        # per lane, task spans do not overlap
        lanes: dict = {}
        for e in x_core:
            lanes.setdefault((e["pid"], e["tid"]), []).append(e)
        for items in lanes.values():
            items.sort(key=lambda e: e["ts"])
            for a, b in zip(items, items[1:]):
                assert b["ts"] >= a["ts"] + a["dur"] - 1e-6
    return procs, threads
