"""Timelines: what the timing simulator produced, with stats and a Chrome-trace export.

Times are in cycles of the simulated machine; the Chrome trace (Perfetto, chrome://tracing)
converts them to microseconds at the machine's clock.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from functools import cached_property

FORMAT_VERSION = 1


@dataclass(frozen=True)
class TaskEvent:
    """One leaf-function instance (one tile) run on one core."""

    task: int
    core: str  # e.g. "AIV3"
    core_type: str  # "AIC" or "AIV"
    leaf: str
    root: int  # root-instance sequence number
    root_function: str
    loop_indices: tuple  # ((index name, value), ...)
    device_task: int
    thread: int  # schedule AICPU thread that dispatched it
    start: int
    end: int
    pipes: tuple  # ((pipe, busy cycles), ...)
    l2_hits: int = 0
    variant: str = ""

    @property
    def duration(self) -> int:
        return self.end - self.start


@dataclass(frozen=True)
class AicpuEvent:
    """A span of AICPU work: the control thread (stitch, submit, wait) or a schedule thread."""

    thread: str  # "control" or "sched<i>"
    name: str
    start: int
    end: int
    detail: str = ""


@dataclass(eq=False)
class Timeline:
    """A simulated schedule: ``events`` (one per task), ``deps`` (task -> task edges),
    ``aicpu`` spans, the ``options`` and ``machine`` it was simulated with, and ``stats``."""

    events: list
    deps: list  # (from task, to task, "RAW"|"WAR"|"WAW")
    aicpu: list
    machine: object
    options: dict
    device_tasks: int
    extra_stats: dict = field(default_factory=dict)
    version: int = FORMAT_VERSION

    @cached_property
    def stats(self) -> dict:
        """makespan_cycles, tasks, device_tasks, critical_path_cycles, utilization per core type,
        bubbles (idle gaps between tasks on a core), and the simulator's extra counters."""
        from .eventlog import AicpuSpans, TaskEvents

        m = self.machine
        if isinstance(self.events, TaskEvents):
            makespan, busy, used, gaps, gap_count = _task_stats(self.events)
        else:
            makespan, busy, used, gaps, gap_count = _task_stats_of_list(self.events)
        if isinstance(self.aicpu, AicpuSpans):
            makespan = max(makespan, int(self.aicpu.ends.max()) if len(self.aicpu) else 0)
        else:
            makespan = max(makespan, max((a.end for a in self.aicpu), default=0))
        counts = {"AIC": m.aic_cores, "AIV": m.aiv_cores}
        util = {k: (busy[k] / (counts[k] * makespan) if makespan and counts[k] else 0.0) for k in busy}
        return {"makespan_cycles": makespan, "makespan_us": m.cycles_to_us(makespan), "tasks": len(self.events),
                "device_tasks": self.device_tasks, "critical_path_cycles": self.critical_path_cycles,
                "utilization": util, "busy_cycles": busy, "cores_used": used,
                "bubbles": {"cycles": gaps, "count": gap_count}, **self.extra_stats}

    @cached_property
    def critical_path_cycles(self) -> int:
        """Longest chain of task durations along the dependency edges."""
        from .eventlog import DepEdges, TaskEvents

        if isinstance(self.events, TaskEvents) and isinstance(self.deps, DepEdges):
            return _critical_path(self.events, self.deps)
        longest = {}
        succ: dict = {}
        for i, j, _ in self.deps:
            succ.setdefault(i, []).append(j)
        order = sorted(self.events, key=lambda e: e.start)
        dur = {e.task: e.duration for e in self.events}
        for e in order:
            longest.setdefault(e.task, dur[e.task])
        for e in order:
            base = longest[e.task]
            for j in succ.get(e.task, ()):
                if j in dur:
                    longest[j] = max(longest.get(j, dur[j]), base + dur[j])
        return max(longest.values(), default=0)

    def to_chrome_trace(self) -> dict:
        """The timeline in Chrome Trace Event format (µs): one process per core type and one for
        the AICPU, one thread per core, flow events for dependencies, task details in args."""
        us = self.machine.cycles_to_us
        out = []
        pids = {"AIC": 1, "AIV": 2, "AICPU": 3}
        for name, pid in pids.items():
            out.append({"ph": "M", "name": "process_name", "pid": pid, "tid": 0, "args": {"name": name}})
        tids: dict = {}

        def tid(pid, lane):
            key = (pid, lane)
            if key not in tids:
                tids[key] = len(tids) + 1
                out.append({"ph": "M", "name": "thread_name", "pid": pid, "tid": tids[key], "args": {"name": lane}})
            return tids[key]

        by_task = {}
        for e in sorted(self.events, key=lambda e: (e.core_type, _core_no(e.core), e.start)):
            pid = pids[e.core_type]
            t = tid(pid, e.core)
            by_task[e.task] = (pid, t, e)
            out.append({"ph": "X", "name": e.leaf, "cat": e.core_type, "pid": pid, "tid": t, "ts": us(e.start),
                        "dur": max(us(e.duration), 0.001),
                        "args": {"task": e.task, "root": e.root, "root_function": e.root_function,
                                 "device_task": e.device_task, "loop": dict(e.loop_indices),
                                 "thread": e.thread, "cycles": e.duration, "pipes": dict(e.pipes),
                                 "l2_hits": e.l2_hits, "variant": e.variant}})
        for a in self.aicpu:
            t = tid(pids["AICPU"], a.thread)
            out.append({"ph": "X", "name": a.name, "cat": "AICPU", "pid": pids["AICPU"], "tid": t,
                        "ts": us(a.start), "dur": max(us(a.end - a.start), 0.001), "args": {"detail": a.detail}})
        for n, (i, j, kind) in enumerate(self.deps):
            if i not in by_task or j not in by_task:
                continue
            pi, ti, ei = by_task[i]
            pj, tj, ej = by_task[j]
            out.append({"ph": "s", "id": n, "name": kind, "cat": "dep", "pid": pi, "tid": ti, "ts": us(ei.end)})
            out.append({"ph": "f", "id": n, "name": kind, "cat": "dep", "pid": pj, "tid": tj, "ts": us(ej.start),
                        "bp": "e"})
        return {"traceEvents": out, "displayTimeUnit": "ns",
                "otherData": {"version": self.version, "machine": self.machine.name,
                              "options": {k: _jsonable(v) for k, v in self.options.items()}}}

    def save(self, path) -> str:
        """Write the Chrome trace JSON to ``path`` (open it in Perfetto or chrome://tracing)."""
        with open(path, "w") as f:
            json.dump(self.to_chrome_trace(), f)
        return str(path)

    def _repr_html_(self) -> str:
        from ..display import timeline_html

        return timeline_html(self)

    def __repr__(self) -> str:
        s = self.stats
        util = ", ".join(f"{k} {v:.0%}" for k, v in s["utilization"].items())
        from .model_error import error_text

        error = error_text(self)
        return (f"<Timeline {s['tasks']} tasks, {s['device_tasks']} device task(s), makespan "
                f"{s['makespan_cycles']} cycles ({s['makespan_us']:.1f} µs), utilization {util}"
                + (f"; model error {error}>" if error else ">"))

    def explain(self, task: int, lowered=None):
        """Why ``task`` started when it did: a `runtime.explain.StartReason` (the dependency and
        its GM tensor, the busy core, the schedule thread's queue, or the launch/stitch)."""
        from .explain import explain

        return explain(self, task, lowered)

    def why_late(self, task: int, lowered=None) -> list:
        """The chain of start reasons from ``task`` back to the launch (`runtime.explain.why_late`)."""
        from .explain import why_late

        return why_late(self, task, lowered)

    def critical_chain(self, lowered=None) -> list:
        """The critical path as segments (runs and waits) that sum to the makespan
        (`runtime.explain.critical_chain`)."""
        from .explain import critical_chain

        return critical_chain(self, lowered)

    @property
    def model_error(self):
        """The timing model's measured error for this kernel's class (`runtime.model_error`)."""
        from .model_error import model_error

        return model_error(self)


def _task_stats_of_list(events):
    """(last end, busy cycles per core type, cores used, bubble cycles, bubble count)."""
    busy = {"AIC": 0, "AIV": 0}
    per_core: dict = {}
    for e in events:
        busy[e.core_type] += e.duration
        per_core.setdefault(e.core, []).append(e)
    gaps, gap_count = 0, 0
    for items in per_core.values():
        items.sort(key=lambda e: e.start)
        for a, b in zip(items, items[1:]):
            if b.start > a.end:
                gaps += b.start - a.end
                gap_count += 1
    return max((e.end for e in events), default=0), busy, len(per_core), gaps, gap_count


def _task_stats(ev):
    """`_task_stats_of_list` from the columns of a `TaskEvents`."""
    import numpy as np

    if not len(ev):
        return 0, {"AIC": 0, "AIV": 0}, 0, 0, 0
    dur = ev.end - ev.start
    aiv = ev.core_type_codes().astype(bool)
    busy = {"AIC": int(dur[~aiv].sum()), "AIV": int(dur[aiv].sum())}
    order = np.lexsort((ev.start, ev.core))
    core, start, end = ev.core[order], ev.start[order], ev.end[order]
    same = core[1:] == core[:-1]
    gap = start[1:] - end[:-1]
    bubble = same & (gap > 0)
    return (int(ev.end.max()), busy, int(len(np.unique(ev.core))), int(gap[bubble].sum()),
            int(np.count_nonzero(bubble)))


def _critical_path(ev, deps) -> int:
    """Longest path over the edges. The graph is the call's task table, shared by every timeline
    simulated from it (a tuning sweep: thousands), so its levels are found once (`_levels`) and
    each timeline's path is a few array operations per level; a graph too deep for that (long
    chains) is walked in start order, a topological order (a successor starts after its
    predecessor ends)."""
    import numpy as np

    dur = (ev.end - ev.start).astype(np.int64)
    if not len(dur):
        return 0
    if not len(deps):
        return int(dur.max())
    levels = _levels(ev, deps, len(dur))
    if levels is not None:
        longest = dur.copy()
        for src, starts, dst in levels:  # a task's predecessors all sit in earlier levels
            longest[dst] = np.maximum(longest[dst], np.maximum.reduceat(longest[src], starts) + dur[dst])
        return int(longest.max())
    src, dst = deps.src, deps.dst
    linked = np.unique(np.concatenate([src, dst]))
    order = linked[np.argsort(ev.start[linked], kind="stable")]
    by_src = np.argsort(src, kind="stable")
    ptr = np.zeros(len(dur) + 1, dtype=np.int64)
    np.cumsum(np.bincount(src, minlength=len(dur)), out=ptr[1:])
    succ = dst[by_src].tolist()
    ptr = ptr.tolist()
    longest = dur.tolist()
    d = longest[:]
    for i in order.tolist():
        base = longest[i]
        for j in succ[ptr[i]:ptr[i + 1]]:
            if base + d[j] > longest[j]:
                longest[j] = base + d[j]
    return max(longest)


# the levels of the last few task graphs, by the identity of their edge arrays (kept alive by
# the Replayer whose timelines share them; a weak reference tells a reused id from the same array)
_LEVELS: dict = {}
_LEVELS_KEPT = 16


def _levels(ev, deps, n):
    """The edges of a dependency graph grouped by the level of their destination (the longest
    chain of edges reaching it): a list of (sources, group starts, destinations) per level, the
    edges of each level sorted by destination; None when the graph has too many levels for
    per-level array operations to beat a walk of its edges."""
    import weakref

    import numpy as np

    src, dst = deps.src, deps.dst
    key = (id(src), id(dst))
    hit = _LEVELS.get(key)
    if hit is not None and hit[0]() is src and hit[1]() is dst:
        return hit[2]
    # the depth of each task, walking the edges in a topological order (this timeline's start order)
    by_src = np.argsort(src, kind="stable")
    ptr = np.zeros(n + 1, dtype=np.int64)
    np.cumsum(np.bincount(src, minlength=n), out=ptr[1:])
    succ, p = dst[by_src].tolist(), ptr.tolist()
    depth = [0] * n
    for i in np.argsort(ev.start, kind="stable").tolist():
        di = depth[i] + 1
        for j in succ[p[i]:p[i + 1]]:
            if di > depth[j]:
                depth[j] = di
    depth = np.asarray(depth, dtype=np.int64)
    n_levels = int(depth.max()) + 1
    levels = None
    if n_levels * 48 <= len(src):  # a level's array operations cost about what a walk of 48 edges does
        edge_depth = depth[dst]
        order = np.lexsort((dst, edge_depth))
        s, d, e = src[order], dst[order], edge_depth[order]
        cut = np.flatnonzero(np.diff(e)) + 1
        levels = []
        for lo, hi in zip(np.concatenate([[0], cut]).tolist(), np.concatenate([cut, [len(e)]]).tolist()):
            ls, ld = s[lo:hi], d[lo:hi]
            starts = np.concatenate([[0], np.flatnonzero(np.diff(ld)) + 1])
            levels.append((ls, starts, ld[starts]))
    try:
        refs = weakref.ref(src), weakref.ref(dst)
    except TypeError:  # not arrays that take weak references: nothing to key on, nothing kept
        return levels
    for k in [k for k, (a, b, _) in _LEVELS.items() if a() is None or b() is None]:
        del _LEVELS[k]  # their task table is gone: so are its timelines
    while len(_LEVELS) >= _LEVELS_KEPT:
        _LEVELS.pop(next(iter(_LEVELS)))
    _LEVELS[key] = (*refs, levels)
    return levels


def _core_no(core: str) -> int:
    digits = "".join(ch for ch in core if ch.isdigit())
    return int(digits) if digits else 0


def _jsonable(v):
    if isinstance(v, (int, float, str, bool)) or v is None:
        return v
    if isinstance(v, (list, tuple, frozenset, set)):
        return [_jsonable(x) for x in v]
    if isinstance(v, dict):
        return {str(k): _jsonable(x) for k, x in v.items()}
    return str(v)
