"""The swimlane chart's data: a timeline packed as a small JSON header and one binary buffer of
typed columns, for the canvas renderer in ``swimlane.js``.

One renderer draws every timeline of the lab: the Timeline and Tune tabs (an anywidget, the
columns travel as one binary websocket frame) and ``Timeline._repr_html_`` (the same script
inlined in the HTML, the columns base64-encoded). A bar costs about 35 bytes, so a 2,000-task
kernel is well under 100 KB, and the browser draws 100,000 bars by coalescing those that share a
pixel. Plain Python and numpy only: no widgets here.
"""

from __future__ import annotations

import base64
import json
import re
import uuid
import weakref
from functools import lru_cache
from pathlib import Path

import numpy as np

from .trace import TraceTimeline, lane_kind

_KIND_ORDER = ("AICPU", "AIC", "AIV", "other")
_REASONS = ("core busy", "dependency", "scheduler queue", "device task", "launch")  # runtime.explain.KINDS
VARIANTS = ("", "main", "tail")


def natural_key(text: str):
    """Sort key that orders digit runs by value: ``leaf2`` before ``leaf10``, ``AIV9`` before ``AIV10``."""
    return [int(part) if part.isdigit() else part for part in re.split(r"(\d+)", str(text))]


def lane_order_key(lane: str):
    """AICPU lanes first (control, then schedule threads), then AIC, AIV and others, each naturally."""
    kind = lane_kind(lane)
    return (_KIND_ORDER.index(kind), 0 if lane == "control" else 1, natural_key(lane))


_BAR_COLUMNS = ("lane", "start", "dur", "group", "loop", "device", "variant", "task", "cost", "reason", "cause",
                "count")


class _Bars:
    """Columns being collected: one row per bar (a task or an AICPU span)."""

    def __init__(self):
        self.lane, self.start, self.dur, self.group, self.loop = [], [], [], [], []
        self.device, self.variant, self.task, self.cost = [], [], [], []
        self.reason, self.cause, self.count = [], [], []

    def extend(self, **cols):
        n = len(cols["start"])
        for name in _BAR_COLUMNS:
            value = cols.get(name)
            if value is None:
                value = np.full(n, -1 if name in ("task", "cost", "loop", "device", "reason", "cause") else 0)
            getattr(self, name).append(np.asarray(value))

    def column(self, name, dtype):
        parts = getattr(self, name)
        return np.concatenate(parts).astype(dtype) if parts else np.zeros(0, dtype=dtype)


class _Index:
    """Names numbered in order of first use."""

    def __init__(self):
        self.names: list = []
        self.codes: dict = {}

    def __call__(self, name) -> int:
        code = self.codes.get(name)
        if code is None:
            code = self.codes[name] = len(self.names)
            self.names.append(name)
        return code


def _sorted_codes(names: list, key=natural_key):
    """(names sorted by ``key``, natural order by default; old code -> new code)."""
    order = sorted(range(len(names)), key=lambda i: key(names[i]))
    remap = np.zeros(max(len(names), 1), dtype=np.int64)
    remap[order] = np.arange(len(order))
    return [names[i] for i in order], remap


# ---- simulated timelines ------------------------------------------------------------------------------

def _simulated(tl, bars: _Bars, lanes: _Index, meta: dict) -> None:
    """Task and AICPU bars of a simulated `Timeline`, and the names they refer to (into ``meta``)."""
    from pypto.runtime.eventlog import AicpuSpans, TaskEvents

    us = tl.machine.cycles_to_us(1)
    ev = tl.events
    leaves, loops, pipes_idx = _Index(), _Index(), _Index()
    if isinstance(ev, TaskEvents) and len(ev):
        n = len(ev.start)
        ids = np.arange(n)
        used = set(np.unique(ev.core).tolist())  # idle cores get no lane: the header counts them
        lane_codes = np.asarray([lanes(c) if i in used else -1 for i, c in enumerate(ev.core_names)],
                                dtype=np.int64)
        meta["cores"] = {kind: sum(1 for t in ev.core_types if t == kind) for kind in ("AIC", "AIV")}
        leaf_of_class = np.asarray([leaves(c.leaf.name) for c in ev.classes], dtype=np.int64)
        full_of_class = np.asarray([bool(c.full) for c in ev.classes], dtype=bool)
        seq = np.searchsorted(ev.root_first, ids, "right") - 1
        seqs, seq_inv = np.unique(seq, return_inverse=True)
        loop_codes = np.asarray([loops(", ".join(f"{k}={v}" for k, v in ev._loop_indices(int(s)))
                                       or ev.root_names[int(s)]) for s in seqs.tolist()], dtype=np.int64)
        device = np.searchsorted(ev.dt_first, ids, "right") - 1
        cls = np.asarray(ev.cls, dtype=np.int64)
        variant = (np.where(full_of_class[cls], 1, 2) if ev.vso else np.zeros(n, dtype=np.int64))
        costs = [dict(p) for p in ev.cost_pipes]
        reason, cause = start_causes(tl)
        bars.extend(lane=lane_codes[ev.core], start=ev.start * us, dur=(ev.end - ev.start) * us,
                    group=leaf_of_class[cls], loop=loop_codes[seq_inv], device=device, variant=variant,
                    task=ids, cost=np.asarray(ev.cost, dtype=np.int64), reason=reason, cause=cause)
    else:
        rows = list(ev)
        costs, cost_codes = [], _Index()
        if rows:
            bars.extend(lane=[lanes(e.core) for e in rows], start=[e.start * us for e in rows],
                        dur=[e.duration * us for e in rows], group=[leaves(e.leaf) for e in rows],
                        loop=[loops(", ".join(f"{k}={v}" for k, v in e.loop_indices) or e.root_function)
                              for e in rows],
                        device=[e.device_task for e in rows], variant=[VARIANTS.index(e.variant) for e in rows],
                        task=[e.task for e in rows], cost=[cost_codes(tuple(e.pipes)) for e in rows])
            costs = [dict(p) for p in cost_codes.names]
    # AICPU spans: the control thread (stitch, submit, wait) and the schedule threads
    spans = tl.aicpu
    span_names = _Index()
    if isinstance(spans, AicpuSpans):
        c_thread = spans.owner(spans.done).astype(np.int64) if len(spans.done) else np.zeros(0, dtype=np.int64)
        threads = ["control"] + [f"sched{i}" for i in range(int(max(c_thread.max(initial=-1),
                                                                     spans.thread.max(initial=-1))) + 1)]
        lane_codes = np.asarray([lanes(t) for t in threads], dtype=np.int64)
        from pypto.runtime.eventlog import SPAN_NAMES

        name_codes = np.asarray([span_names(s) for s in SPAN_NAMES], dtype=np.int64)
        lane_of = lane_codes[np.concatenate([c_thread, spans.thread.astype(np.int64)]) + 1]
        group = np.concatenate([np.full(len(c_thread), span_names("complete")),
                                name_codes[spans.name.astype(np.int64)]])
        start = np.concatenate([spans.c_start, spans.start])
        first, count = _dispatched_by_span(tl, spans)
        bars.extend(lane=lane_of, start=start * us, dur=(spans.ends - start) * us, group=group,
                    task=np.concatenate([spans.done.astype(np.int64), first]),
                    count=np.concatenate([np.ones(len(c_thread), dtype=np.int64), count]))
    elif len(spans):
        rows = list(spans)
        bars.extend(lane=[lanes(a.thread) for a in rows], start=[a.start * us for a in rows],
                    dur=[(a.end - a.start) * us for a in rows], group=[span_names(a.name) for a in rows])
    meta.update(leaves=leaves.names, loops=loops.names, spans=span_names.names, costs=costs,
                pipes=sorted({p for c in costs for p in c}, key=natural_key),
                cycles_per_us=1.0 / us if us else None)


def start_causes(tl) -> tuple:
    """(start-reason code into ``meta["reasons"]``, cause task id or -1) per task id of a
    simulated timeline (`pypto.runtime.explain`)."""
    from pypto.runtime.explain import causes

    kind, cause = causes(tl)
    return np.asarray(kind, dtype=np.int64), np.asarray(cause, dtype=np.int64)


def _dispatched_by_span(tl, spans) -> tuple:
    """For each non-completion AICPU span: the first task a dispatch span dispatched (-1 for
    other spans) and how many it dispatched (the thread's dispatches ending inside the span)."""
    from pypto.runtime.eventlog import SPAN_NAMES

    m = len(spans.start)
    first, count = np.full(m, -1, dtype=np.int64), np.zeros(m, dtype=np.int64)
    why = getattr(tl.events, "why", None)
    disp = np.nonzero(np.asarray(spans.name) == SPAN_NAMES.index("dispatch"))[0]
    if why is None or not len(disp):
        return first, count
    ev = tl.events
    big = int(max(int(np.max(why["dispatched"], initial=0)), int(np.max(spans.end, initial=0)))) + 1
    key = np.asarray(ev.thread, dtype=np.int64) * big + np.asarray(why["dispatched"], dtype=np.int64)
    order = np.argsort(key, kind="stable")
    key = key[order]
    th = np.asarray(spans.thread, dtype=np.int64)[disp]
    lo = np.searchsorted(key, th * big + np.asarray(spans.start, dtype=np.int64)[disp], "right")
    hi = np.searchsorted(key, th * big + np.asarray(spans.end, dtype=np.int64)[disp], "right")
    has = hi > lo
    first[disp[has]] = order[lo[has]]
    count[disp] = hi - lo
    return first, count


def _deps(tl):
    from pypto.runtime.eventlog import DepEdges

    d = tl.deps
    if isinstance(d, DepEdges):
        return np.asarray(d.src, dtype=np.int64), np.asarray(d.dst, dtype=np.int64)
    rows = list(d)
    return (np.asarray([r[0] for r in rows], dtype=np.int64), np.asarray([r[1] for r in rows], dtype=np.int64))


def critical_path(start, end, src, dst) -> np.ndarray:
    """Task ids of one longest chain of task durations along the edges ``src -> dst`` (tasks
    taken in start order, a topological order: a successor starts after its predecessor ends)."""
    n = len(start)
    if not n:
        return np.zeros(0, dtype=np.int64)
    dur = (np.asarray(end) - np.asarray(start)).tolist()
    longest, prev = dur[:], [-1] * n
    if len(src):
        by_src = np.argsort(src, kind="stable")
        ptr = np.zeros(n + 1, dtype=np.int64)
        np.cumsum(np.bincount(src, minlength=n), out=ptr[1:])
        succ, ptr = np.asarray(dst)[by_src].tolist(), ptr.tolist()
        for i in np.argsort(start, kind="stable").tolist():
            base = longest[i]
            for j in succ[ptr[i]:ptr[i + 1]]:
                if base + dur[j] > longest[j]:
                    longest[j], prev[j] = base + dur[j], i
    k = max(range(n), key=longest.__getitem__)
    chain = []
    while k >= 0:
        chain.append(k)
        k = prev[k]
    return np.asarray(chain[::-1], dtype=np.int64)


# ---- measured traces ------------------------------------------------------------------------------------

def _trace(tl: TraceTimeline, bars: _Bars, lanes: _Index, meta: dict):
    groups, spans = _Index(), _Index()
    device, task_ids = [], []
    rows = tl.events
    aicpu = [lane_kind(e.lane) == "AICPU" for e in rows]
    for e, is_aicpu in zip(rows, aicpu):
        device.append(int(e.args["device_task"]) if isinstance(e.args.get("device_task"), int) else -1)
        task_ids.append(int(e.args["task"]) if isinstance(e.args.get("task"), int) else -1)
    bars.extend(lane=[lanes(e.lane) for e in rows], start=[e.start_us for e in rows], dur=[e.dur_us for e in rows],
                group=[spans(e.name) if a else groups(e.label) for e, a in zip(rows, aicpu)],
                device=device, task=task_ids)
    meta.update(leaves=groups.names, loops=[], spans=spans.names, costs=[], pipes=[], cycles_per_us=None)


# ---- the payload ----------------------------------------------------------------------------------------

_COLUMNS = ("start", "dur", "loop", "device", "task", "cost", "lane", "group", "variant", "aicpu", "critical",
            "reason", "cause", "count")


def _compact(arr: np.ndarray) -> np.ndarray:
    """Integers in the smallest little-endian type that holds them (signed: -1 means none)."""
    if arr.dtype.kind == "f":
        return arr.astype("<f8")
    lo, hi = (int(arr.min()), int(arr.max())) if arr.size else (0, 0)
    for dtype in (("|u1", "<u2", "<u4") if lo >= 0 else ("|i1", "<i2", "<i4")):
        info = np.iinfo(np.dtype(dtype))
        if info.min <= lo and hi <= info.max:
            return arr.astype(dtype)
    return arr.astype("<i8")


def _pack(columns: dict) -> tuple:
    """(layout [[name, dtype, byte offset, length], ...], one bytes buffer); every column starts
    at a multiple of 8 bytes so the browser can view it as a typed array in place."""
    layout, chunks, offset = [], [], 0
    for name, arr in columns.items():
        data = np.ascontiguousarray(arr).tobytes()
        layout.append([name, arr.dtype.str, offset, int(arr.size)])
        pad = (-len(data)) % 8
        chunks.append(data + b"\0" * pad)
        offset += len(data) + pad
    return layout, b"".join(chunks)


_PAYLOADS: "weakref.WeakKeyDictionary" = weakref.WeakKeyDictionary()  # timeline -> (meta, buffer)


def swimlane_payload(tl, title: str | None = None, x_max: float | None = None) -> tuple:
    """``(meta, buffer)`` for the renderer: ``meta`` a JSON-able dict (lanes in display order with
    their busy share, names of leaves/loops/spans, pipe costs, the buffer's layout, makespan),
    ``buffer`` the typed columns of every bar (sorted by lane, then start) and of the dependency
    edges between bars. ``x_max`` (µs) fixes the end of the time axis, to share it between charts.
    The packing is done once per timeline (the chart, the per-leaf and per-lane tables share it)."""
    if tl is not None:
        try:
            cached = _PAYLOADS.get(tl)
        except TypeError:  # not weakly referable: pack it every time
            cached = None
        if cached is None:
            cached = _payload(tl)
            try:
                _PAYLOADS[tl] = cached
            except TypeError:
                pass
        meta, buffer = cached
        return {**meta, "title": title or "", "x_max": x_max}, buffer
    meta = {"title": title or "no timeline", "kind": "simulated"}
    meta.update(lanes=[], leaves=[], loops=[], spans=[], costs=[], pipes=[], layout=[], makespan=0.0,
                n=0, edges=0, x_max=x_max, first_task=0.0, critical=0, spans_used=[])
    return meta, b""


def _payload(tl) -> tuple:
    meta: dict = {"kind": "trace" if isinstance(tl, TraceTimeline) else "simulated"}
    bars, lanes = _Bars(), _Index()
    if isinstance(tl, TraceTimeline):
        _trace(tl, bars, lanes, meta)
        src_t = dst_t = np.zeros(0, dtype=np.int64)
    else:
        _simulated(tl, bars, lanes, meta)
        src_t, dst_t = _deps(tl)
    cols = {name: bars.column(name, np.float64 if name in ("start", "dur") else np.int64) for name in _BAR_COLUMNS}
    n = len(cols["start"])
    lane_names, lane_remap = _sorted_codes(lanes.names, key=lane_order_key)
    cols["lane"] = lane_remap[cols["lane"]] if n else cols["lane"]
    is_aicpu = np.asarray([lane_kind(name) == "AICPU" for name in lane_names], dtype=bool)
    cols["aicpu"] = is_aicpu[cols["lane"]].astype(np.int64) if n else np.zeros(0, dtype=np.int64)
    # leaves sorted naturally so that leaf2 comes before leaf10 in the legend and the colours
    leaf_names, leaf_remap = _sorted_codes(meta["leaves"])
    task_bar = cols["aicpu"] == 0
    cols["group"] = np.where(task_bar, leaf_remap[np.where(task_bar, cols["group"], 0)], cols["group"])
    meta["leaves"] = leaf_names
    order = np.lexsort((cols["start"], cols["lane"]))
    cols = {k: v[order] for k, v in cols.items()}
    # dependency edges and the critical path, as bar indices
    task_rows = np.nonzero(cols["aicpu"] == 0)[0]
    first_task = float(cols["start"][task_rows].min()) if len(task_rows) else 0.0
    task_rows = task_rows[cols["task"][task_rows] >= 0]  # a measured trace may not number its tasks
    bar_of_task = np.full(int(cols["task"][task_rows].max(initial=-1)) + 1, -1, dtype=np.int64)
    bar_of_task[cols["task"][task_rows]] = task_rows
    critical = np.zeros(n, dtype=np.int64)
    if len(src_t) and len(bar_of_task):
        keep = (src_t < len(bar_of_task)) & (dst_t < len(bar_of_task))
        src_b, dst_b = bar_of_task[src_t[keep]], bar_of_task[dst_t[keep]]
        ok = (src_b >= 0) & (dst_b >= 0)
        src_b, dst_b = src_b[ok], dst_b[ok]
    else:
        src_b = dst_b = np.zeros(0, dtype=np.int64)
    explained = meta["kind"] == "simulated" and _has_reasons(tl)
    if len(task_rows) and explained:  # the chain of start reasons from the last task: sums to the makespan
        from pypto.runtime.explain import critical_tasks

        chain_bars = bar_of_task[critical_tasks(tl)]
        critical[chain_bars[chain_bars >= 0]] = 1
    elif len(task_rows):
        start_t = np.zeros(len(bar_of_task)), np.zeros(len(bar_of_task))
        start_t[0][cols["task"][task_rows]] = cols["start"][task_rows]
        start_t[1][cols["task"][task_rows]] = cols["start"][task_rows] + cols["dur"][task_rows]
        chain = critical_path(start_t[0], start_t[1], src_t, dst_t) if len(src_t) else \
            np.asarray([int(cols["task"][task_rows][np.argmax(cols["dur"][task_rows])])])
        chain_bars = bar_of_task[chain]
        critical[chain_bars[chain_bars >= 0]] = 1
    cols["critical"] = critical
    # a task's cause as a bar index, so the renderer can walk "why is this late" on its own
    task_bar = cols["aicpu"] == 0
    cause = cols["cause"]
    ok = task_bar & (cause >= 0) & (cause < len(bar_of_task))
    cols["cause"] = (np.where(ok, bar_of_task[np.where(ok, cause, 0)], -1) if len(bar_of_task)
                     else np.full(n, -1, dtype=np.int64))
    packed = {name: _compact(cols[name]) for name in _COLUMNS}
    packed["dur"] = cols["dur"].astype("<f4")  # a duration needs no more than 7 digits
    packed["src"], packed["dst"] = _compact(src_b), _compact(dst_b)
    layout, buffer = _pack(packed)
    ends = cols["start"] + cols["dur"]
    makespan = float(ends.max()) if n else 0.0
    busy = np.bincount(cols["lane"], weights=cols["dur"], minlength=len(lane_names)) if n else np.zeros(0)
    meta.update(lanes=[{"name": name, "kind": lane_kind(name), "busy": float(b / makespan) if makespan else 0.0}
                       for name, b in zip(lane_names, busy.tolist() or [0.0] * len(lane_names))],
                layout=layout, n=n, edges=int(len(src_b)), makespan=makespan, first_task=first_task,
                critical=int(critical.sum()), critical_sums_to_makespan=bool(explained),
                reasons=list(_REASONS),
                spans_used=sorted({int(g) for g in np.unique(cols["group"][cols["aicpu"] == 1]).tolist()}))
    if meta["kind"] == "simulated":  # on-chip buffers over time, as tracks under each core's lane
        from .buffer_tracks import buffer_tracks_meta

        meta["buffers"] = buffer_tracks_meta(tl, lane_names, meta["leaves"])
    return meta, buffer


def _has_reasons(tl) -> bool:
    from pypto.runtime.eventlog import TaskEvents

    return isinstance(tl.events, TaskEvents) and len(tl.events) > 0


def decode_payload(meta: dict, buffer: bytes) -> dict:
    """The columns of a payload as numpy arrays (what the browser sees), for tests and tools."""
    out = {}
    for name, dtype, offset, length in meta["layout"]:
        out[name] = np.frombuffer(buffer, dtype=np.dtype(dtype), count=length, offset=offset)
    return out


# ---- the renderer --------------------------------------------------------------------------------------

@lru_cache(maxsize=1)
def renderer_js() -> str:
    """The renderer's script: defines ``PyptoSwimlane.mount(el, meta, buffer, host)``."""
    return (Path(__file__).with_name("swimlane.js")).read_text(encoding="utf-8")


def widget_esm() -> str:
    """The renderer as the ES module of an anywidget: the script plus a ``render`` that mounts it
    on the widget's ``meta``/``data`` and talks to the kernel for details and the trace file."""
    return renderer_js() + "\nexport default { render: PyptoSwimlane.renderWidget };\n"


def swimlane_html(tl, title: str | None = None, fallback: str = "", height: int | None = None) -> str:
    """The chart as self-contained HTML: ``fallback`` (e.g. a static SVG) in a div that the inlined
    renderer replaces with the interactive canvas where scripts run (a trusted notebook output);
    elsewhere (GitHub, an untrusted notebook) the fallback stays."""
    meta, buffer = swimlane_payload(tl, title=title)
    if height:
        meta["height"] = height
    uid = "pypto-swimlane-" + uuid.uuid4().hex[:12]
    data = base64.b64encode(buffer).decode("ascii")
    meta_json = json.dumps(meta, separators=(",", ":")).replace("</", "<\\/")
    return (f'<div id="{uid}" class="pypto-swimlane-static" style="width:100%">{fallback}</div>'
            f"<script>(function(){{{renderer_js()}\n"
            f"var el=document.getElementById({json.dumps(uid)});"
            f"if(el){{PyptoSwimlane.mountStatic(el,{meta_json},{json.dumps(data)});}}}})();</script>")


def leaf_source_lines(leaf) -> list:
    """``(file:line, source text)`` of each distinct kernel line the leaf's ops came from."""
    seen, out = set(), []
    for op in getattr(leaf, "ops", ()):
        loc = getattr(op, "loc", None)
        if loc is None or (loc.file, loc.line) in seen:
            continue
        seen.add((loc.file, loc.line))
        try:
            text = loc.source_line()
        except Exception:  # the file may be gone (a notebook cell): the location alone still helps
            text = ""
        out.append((str(loc), (text or "").strip()))
    return out


__all__ = ["swimlane_payload", "decode_payload", "swimlane_html", "renderer_js", "widget_esm", "natural_key",
           "lane_order_key", "critical_path", "leaf_source_lines"]
