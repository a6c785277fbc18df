"""Why each task of a simulated timeline started when it did, and the chain of such reasons.

A task starts at the latest of three moments: its last dependency resolved (or its device task
opened), its schedule AICPU thread had dispatched it, and its core was free. The simulator
records, per task, when it became ready, which dependency made it ready and when it was
dispatched (``TaskEvents.why``); this module turns them into a `StartReason`:

* ``core busy``: the core was still running the task before it on that core;
* ``dependency``: it waited for task j (the edge kind and, given the compiled program, the GM
  tensor they share), then the completion bookkeeping of j's thread, the queue and the dispatch;
* ``scheduler queue``: as a dependency, but most of the wait was the ready task queued for a
  busy schedule thread;
* ``device task``: it had no dependency left when its device task opened, after the previous
  device task finished and the device synchronised;
* ``launch``: the first device task opened after the launch and the control thread's stitching.

Following each reason's ``cause`` back gives "why is this late"; from the task that ends last
it is the critical path, whose segments tile ``[0, makespan]`` exactly (`critical_chain`).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np  # imported with the simulator, never by `import pypto`

KINDS = ("core busy", "dependency", "scheduler queue", "device task", "launch")


@dataclass(frozen=True)
class StartReason:
    """Why task ``task`` started at ``start``: ``kind`` (see the module doc), the ``cause`` task
    whose end it waited for (None at a launch or for the control thread), ``since`` (the cycle
    the wait began: the cause's end, or 0), ``parts`` (``(what, cycles)`` from ``since`` to
    ``start``, summing to ``start - since``) and a one-line ``text``."""

    task: int
    kind: str
    cause: int | None
    since: int
    start: int
    parts: tuple
    text: str
    edge: str = ""  # RAW / WAR / WAW for a dependency
    region: str = ""  # the GM tensor (and tile) the dependency is on, when known

    @property
    def wait(self) -> int:
        """Cycles from ``since`` to ``start``."""
        return self.start - self.since


@dataclass(frozen=True)
class Segment:
    """One piece of a chain: ``[start, end)`` cycles spent on ``what`` (a task's run when
    ``task`` is set, else the overhead or wait before it)."""

    start: int
    end: int
    what: str
    task: int | None = None

    @property
    def cycles(self) -> int:
        return self.end - self.start


class _Index:
    """Per-timeline lookups built once: each task's previous task on its core, predecessors."""

    def __init__(self, tl):
        ev = tl.events
        self.start, self.end = np.asarray(ev.start, dtype=np.int64), np.asarray(ev.end, dtype=np.int64)
        self.core, self.thread = np.asarray(ev.core), np.asarray(ev.thread)
        n = len(self.start)
        order = np.lexsort((self.end, self.start, self.core))
        self.prev_on_core = np.full(n, -1, dtype=np.int64)
        if n > 1:
            same = self.core[order[1:]] == self.core[order[:-1]]
            self.prev_on_core[order[1:][same]] = order[:-1][same]
        deps = tl.deps
        src, dst, kind = (np.asarray(deps.src, dtype=np.int64), np.asarray(deps.dst, dtype=np.int64),
                          np.asarray(deps.kind, dtype=np.int64))
        by_dst = np.argsort(dst, kind="stable")
        self.pred_src, self.pred_kind = src[by_dst], kind[by_dst]
        self.pred_ptr = np.zeros(n + 1, dtype=np.int64)
        np.cumsum(np.bincount(dst, minlength=n), out=self.pred_ptr[1:])
        why = getattr(ev, "why", None)
        if why is None:  # recorded by an older simulator: the last-ending predecessor, dispatched at start
            self.by = np.full(n, -1, dtype=np.int64)
            self.ready = self.start.copy()
            for k in range(n):
                p = self.preds(k)[0]
                if len(p):
                    j = int(p[np.argmax(self.end[p])])
                    self.by[k], self.ready[k] = j, self.end[j]
            self.dispatched = self.start.copy()
        else:
            self.by = np.asarray(why["by"], dtype=np.int64)
            self.ready, self.dispatched = np.asarray(why["ready"]), np.asarray(why["dispatched"])
        self.dt_first = np.asarray(ev.dt_first, dtype=np.int64)
        self.device = np.searchsorted(self.dt_first, np.arange(n), "right") - 1
        self.dt_last = {}  # device task -> its task that ends last
        self._classify(tl)

    def _classify(self, tl):
        """``kind`` (index into KINDS) and ``cause`` (task id or -1) of every task at once, by
        the rules `explain` states task by task."""
        m, n = tl.machine, len(self.start)
        scale = getattr(m, "aicpu_task_scale", 1)
        fair = int(tl.options.get("device_sched_mode", 0)) in (2, 3)
        self.dispatch_cost = int((m.dispatch_cycles + (m.fair_extra_cycles if fair else 0)) * scale)
        self.bookkeeping = int((m.completion_cycles + m.resolve_cycles) * scale)
        self.sync = int(getattr(m, "device_task_sync_cycles", 0))
        s, d, by, prev = self.start, self.dispatched, self.by, self.prev_on_core
        # a thread polling the shared queue may take a task before the completion bookkeeping
        # that made it ready has finished on another thread: count it ready when it was taken
        by_end = self.end[np.maximum(by, 0)]
        taken = np.maximum(d - self.dispatch_cost, np.where(by >= 0, by_end, 0))
        self.ready = r = np.minimum(self.ready, taken)
        kind = np.full(n, KINDS.index("launch"), dtype=np.int8)
        cause = np.full(n, -1, dtype=np.int64)
        prev_end = np.where(prev >= 0, self.end[np.maximum(prev, 0)], 0)
        busy = (prev >= 0) & (s > d) & (prev_end <= s)
        dep = ~busy & (by >= 0)
        waited = np.maximum(r - by_end, 0)
        book = np.minimum(waited, self.bookkeeping)
        queued_until = np.maximum(r, d - self.dispatch_cost)
        queue = (queued_until - r) + (waited - book)
        is_queue = queue > book + (s - queued_until)
        kind[dep] = np.where(is_queue[dep], KINDS.index("scheduler queue"), KINDS.index("dependency"))
        cause[dep] = by[dep]
        kind[busy] = KINDS.index("core busy")
        cause[busy] = prev[busy]
        rest = np.nonzero(~busy & ~dep & (self.device > 0))[0]
        for k in rest.tolist():
            last = self.last_of_device(int(self.device[k]) - 1)
            if last >= 0 and int(self.end[last]) + self.sync >= int(r[k]):
                kind[k], cause[k] = KINDS.index("device task"), last
        self.kind, self.cause = kind, cause

    def preds(self, k):
        a, b = self.pred_ptr[k], self.pred_ptr[k + 1]
        return self.pred_src[a:b], self.pred_kind[a:b]

    def last_of_device(self, dt):
        got = self.dt_last.get(dt)
        if got is None:
            lo = int(self.dt_first[dt])
            hi = int(self.dt_first[dt + 1]) if dt + 1 < len(self.dt_first) else len(self.start)
            got = self.dt_last[dt] = lo + int(np.argmax(self.end[lo:hi])) if hi > lo else -1
        return got


def _index(tl) -> _Index:
    idx = getattr(tl, "_explain_index", None)
    if idx is None:
        idx = _Index(tl)
        try:
            tl._explain_index = idx
        except AttributeError:
            pass
    return idx


def explain(tl, task: int, lowered=None) -> StartReason:
    """The `StartReason` of ``task`` (a task id) in simulated timeline ``tl``. With ``lowered``
    (a compiled kernel's lowered program) a dependency names the GM tensor and tile it is on."""
    _validate(tl, task)
    task = int(task)
    idx = _index(tl)
    kind, cause = KINDS[int(idx.kind[task])], int(idx.cause[task])
    s, core, th = int(idx.start[task]), tl.events.core_names[int(idx.core[task])], int(idx.thread[task])
    d, r = int(idx.dispatched[task]), int(idx.ready[task])
    if kind == "core busy":
        since = int(idx.end[cause])
        parts = ((f"{core} busy", s - since),) if s > since else ()
        return StartReason(task, kind, cause, since, s, parts,
                           f"task {task} was dispatched by sched{th} at cycle {d:,} into {core}'s pending slot and "
                           f"waited {s - d:,} cycles for {core} to finish task {cause}")
    queued_until = max(r, d - idx.dispatch_cost)
    tail = []
    if queued_until > r:
        tail.append((f"queued for sched{th}", queued_until - r))
    if s > queued_until:
        tail.append((f"dispatch by sched{th}", s - queued_until))
    queue = queued_until - r
    dt = int(idx.device[task])
    if kind in ("dependency", "scheduler queue"):
        since = int(idx.end[cause])
        from .regions import KINDS as EDGE_KINDS

        srcs, kinds = idx.preds(task)
        edge = "/".join(sorted({EDGE_KINDS[int(kd)] for j, kd in zip(srcs.tolist(), kinds.tolist()) if j == cause}))
        region = dependency_region(tl, lowered, cause, task) if lowered is not None else ""
        owner = int(idx.thread[cause])
        bookkeeping = min(max(r - since, 0), idx.bookkeeping)
        parts = ((f"sched{owner} busy before completing task {cause}", max(r - since, 0) - bookkeeping),
                 (f"completion of task {cause} on sched{owner}", bookkeeping), *tail)
        on = f" on {region}" if region else ""
        text = (f"task {task} waited for task {cause} ({edge}{on}), which ended at cycle {since:,}; ready at {r:,}, "
                + (f"queued {queue:,} cycles for sched{th}, " if queue else "")
                + f"dispatched by sched{th}, started on {core} at {s:,}")
        return StartReason(task, kind, cause, since, s, _exact(parts, s - since), text, edge, region)
    if kind == "device task":
        since = int(idx.end[cause])
        parts = (("device sync", max(r - since, 0)), *tail)
        return StartReason(task, kind, cause, since, s, _exact(parts, s - since),
                           f"task {task} had no dependency left; its device task {dt} opened at cycle {r:,}, "
                           f"after device task {dt - 1} ended with task {cause} at {since:,} and the sync; "
                           f"started on {core} at {s:,}")
    if dt > 0:
        parts = ((f"control thread: stitch and submit device task {dt}", r), *tail)
        return StartReason(task, kind, None, 0, s, _exact(parts, s),
                           f"task {task} had no dependency left; its device task {dt} opened at cycle {r:,}, when "
                           f"the control thread had stitched and submitted it; started on {core} at {s:,}")
    early = int(tl.options.get("launch_early_mode", 0)) == 1
    launch = min(0 if early else int(tl.machine.launch_cycles), r)
    parts = (("launch", launch), ("control thread: stitch and submit device task 0", r - launch), *tail)
    return StartReason(task, kind, None, 0, s, _exact(parts, s),
                       f"task {task} is in the first device task, which opened at cycle {r:,} after the launch "
                       f"and the stitching; started on {core} at {s:,}")


def _exact(parts, total):
    """``parts`` with zero parts dropped and the last one adjusted so that they sum to ``total``
    (the recorded cycles are whole numbers of fractional AICPU costs)."""
    parts = [(w, int(c)) for w, c in parts]
    diff = total - sum(c for _, c in parts)
    if parts and diff:
        w, c = parts[-1]
        parts[-1] = (w, c + diff)
    return tuple((w, c) for w, c in parts if c)


def _validate(tl, task):
    from ..errors import ArgumentTypeError, ArgumentValueError
    from .eventlog import TaskEvents

    if not isinstance(getattr(tl, "events", None), TaskEvents):
        raise ArgumentTypeError("explain needs a simulated timeline (its events in columns)", param="timeline",
                                expected="a Timeline from the simulator", got=type(getattr(tl, "events", None)).__name__)
    n = len(tl.events.start)
    if isinstance(task, bool) or not isinstance(task, (int, np.integer)):
        raise ArgumentTypeError("explain: 'task' must be a task id", param="task", expected="an int",
                                got=type(task).__name__)
    if not 0 <= int(task) < n:
        raise ArgumentValueError("explain: 'task' is not a task of this timeline", param="task",
                                 expected=f"0..{n - 1}", got=repr(task))


def why_late(tl, task: int, lowered=None) -> list:
    """The chain of `StartReason`s from ``task`` back to the launch: each entry's ``cause`` is
    the next entry's task."""
    chain = []
    k = int(task)
    while True:
        reason = explain(tl, k, lowered)
        chain.append(reason)
        if reason.cause is None:
            return chain
        k = reason.cause


def critical_chain(tl, lowered=None) -> list:
    """The critical path as `Segment`s tiling ``[0, makespan]`` in time order: the `why_late`
    chain of the task that ends last, each task's run and the waits between, then the completion
    of the last task (the AICPU's bookkeeping after it). Their cycles sum to the makespan."""
    idx = _index(tl)
    if not len(idx.end):
        return []
    last = int(np.argmax(idx.end))
    segments = []
    for reason in why_late(tl, last, lowered):
        k = reason.task
        segments.append(Segment(int(idx.start[k]), int(idx.end[k]), f"task {k} ({_leaf(tl, k)}) on "
                                f"{tl.events.core_names[int(idx.core[k])]}", k))
        at = reason.start
        for what, cycles in reversed(reason.parts):
            segments.append(Segment(at - cycles, at, what))
            at -= cycles
    segments.reverse()
    makespan = int(tl.stats["makespan_cycles"])
    end = int(idx.end[last])
    if makespan > end:
        segments.append(Segment(end, makespan, f"completion of task {last} on sched{int(idx.thread[last])}"))
    return segments


def causes(tl) -> tuple:
    """``(kind, cause)`` arrays over all task ids: the index into `KINDS` of each task's start
    reason and the task it waited for (-1 at a launch or for the control thread)."""
    idx = _index(tl)
    return idx.kind, idx.cause


def critical_tasks(tl) -> np.ndarray:
    """Task ids on the critical path (`critical_chain`), in time order."""
    if not len(tl.events):
        return np.zeros(0, dtype=np.int64)
    idx = _index(tl)
    chain = []
    k = int(np.argmax(idx.end))
    while k >= 0:
        chain.append(k)
        k = int(idx.cause[k])
    return np.asarray(chain[::-1], dtype=np.int64)


def _leaf(tl, k) -> str:
    ev = tl.events
    return ev.classes[int(ev.cls[k])].leaf.name


def task_operands(tl, lowered, task: int) -> list:
    """``(operand label, tensor name, role, offsets, valid extent, tile shape)`` of each GM
    operand of ``task``, found by evaluating its call under its root instance's loop values (the
    simulator's own rule); empty when the call reads tensor values to decide its tiles."""
    from .control import evaluate_call

    ev = tl.events
    seq = int(np.searchsorted(ev.root_first, task, "right")) - 1
    name = ev.root_names[seq]
    root = next((r for r in lowered.roots if r.name == name), None)
    if root is None:
        return []
    env, local = ev.root_env(seq), task - int(ev.root_first[seq])
    for call in root.calls:
        try:
            _grid, points, offsets, valid, tiles = evaluate_call(call, env, None)
        except Exception:  # tiles that depend on tensor values need the run's reads: not kept
            return []
        count = points.shape[0]
        if local < count:
            out = []
            for k, (off, val, tile) in enumerate(zip(offsets, valid, tiles)):
                tensor = call.args[k].value.name
                role = "write" if k in call.writes else "read"
                out.append((f"P{k} {role} %{tensor}", tensor, role, off[local].tolist(), val[local].tolist(), tile))
            return out
        local -= count
    return []


def dependency_region(tl, lowered, src: int, dst: int) -> str:
    """The GM tensor (and the tile of ``dst``) through which ``dst`` depends on ``src``: a
    tensor one of them writes and the other accesses; "" when it cannot be told."""
    a, b = task_operands(tl, lowered, src), task_operands(tl, lowered, dst)

    def box(off, val):
        return ", ".join(f"{o}:{o + v}" for o, v in zip(off, val))

    for _, tensor, role, off, val, _tile in b:
        for _, t2, role2, _o2, _v2, _t2 in a:
            if t2 == tensor and "write" in (role, role2):
                return f"%{tensor}[{box(off, val)}]"
    # a view of the written tensor under another name (a reshape): one write read by one read
    writes = [t for _, t, role, *_ in a if role == "write"]
    reads = [(t, off, val) for _, t, role, off, val, _tile in b if role == "read"]
    if len(writes) == 1 and len(reads) == 1:
        tensor, off, val = reads[0]
        return f"%{writes[0]} (read as %{tensor}[{box(off, val)}])"
    return ""
