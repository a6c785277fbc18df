"""Chrome-trace timelines recorded elsewhere: upstream PyPTO's ``merged_swimlane.json`` from a real
NPU, or this simulator's own ``Timeline.to_chrome_trace()``, read into a small `TraceTimeline` that
the timeline views draw and summarise like a simulated `Timeline`.

Upstream's swimlane (reference/pypto-pipeline.md 6.1): process "Machine View", one thread per core
named ``AIC_<i>`` / ``AIV_<i>``, one ``"ph": "X"`` event per task (``ts``/``dur`` in µs, hints in
``args``), flow events ``"s"``/``"f"`` for dependencies, counters ``"C"`` (ignored here).
"""

from __future__ import annotations

import json
import os
import re
from dataclasses import dataclass, field
from functools import cached_property

_CORE_LANE = re.compile(r"^(AIC|AIV)[_\- ]?(\d+)$", re.IGNORECASE)
_UPSTREAM_NAME = re.compile(r"^[\d\-]+\((.*)\)$")  # seqNo-funcId-opIdx-rootIndex-psgId(label)
_KIND_ORDER = {"AICPU": 0, "AIC": 1, "AIV": 2, "other": 3}


def lane_kind(lane: str) -> str:
    """"AIC", "AIV", "AICPU" (control/schedule threads) or "other"."""
    up = lane.upper()
    if up.startswith("AIC") and not up.startswith("AICPU"):
        return "AIC"
    if up.startswith("AIV"):
        return "AIV"
    if "AICPU" in up or lane == "control" or re.match(r"^sched\d*$", lane):
        return "AICPU"
    return "other"


def lane_sort_key(lane: str):
    """AICPU lanes first (control, then schedule threads), then AIC and AIV cores by number."""
    digits = re.findall(r"\d+", lane)
    return (_KIND_ORDER[lane_kind(lane)], 0 if lane == "control" else 1, int(digits[0]) if digits else -1, lane)


def _normal_lane(name: str) -> str:
    m = _CORE_LANE.match(name)
    return f"{m.group(1).upper()}{int(m.group(2))}" if m else name


@dataclass(frozen=True)
class TraceEvent:
    """One span on one lane: a task on a core, or AICPU work. Times in µs."""

    lane: str
    name: str
    start_us: float
    dur_us: float
    args: dict = field(default_factory=dict, compare=False)

    @property
    def end_us(self) -> float:
        return self.start_us + self.dur_us

    @property
    def label(self) -> str:
        """What to colour by: the semantic label of an upstream task name
        (``seqNo-funcId-opIdx-rootIndex-psgId(label)``), else the name (our leaf name)."""
        m = _UPSTREAM_NAME.match(self.name)
        return m.group(1) if m and m.group(1) else self.name


@dataclass(frozen=True)
class TraceFlow:
    """A dependency arrow: from the end of a task on one lane to the start of one on another."""

    name: str
    from_lane: str
    from_us: float
    to_lane: str
    to_us: float


@dataclass(eq=False)
class TraceTimeline:
    """A schedule read from a Chrome trace: ``lanes`` (ordered), ``events``, where it came from
    (``source``), dependency ``flows`` and ``kind`` ("upstream" or "pypto-lab")."""

    lanes: list
    events: list
    source: str
    flows: list = field(default_factory=list)
    kind: str = "upstream"

    @cached_property
    def stats(self) -> dict:
        """makespan_us, tasks (events on non-AICPU lanes), device_tasks (when the args say),
        utilization per core type over the lanes of that type in the trace, bubbles, flows."""
        tasks = [e for e in self.events if lane_kind(e.lane) != "AICPU"]
        makespan = max((e.end_us for e in self.events), default=0.0)
        util, per_lane = {}, {}
        for e in tasks:
            per_lane.setdefault(e.lane, []).append(e)
        for kind in ("AIC", "AIV"):
            lanes = [ln for ln in per_lane if lane_kind(ln) == kind]
            if lanes and makespan > 0:
                busy = sum(e.dur_us for ln in lanes for e in per_lane[ln])
                util[kind] = busy / (len(lanes) * makespan)
        gaps, count = 0.0, 0
        for items in per_lane.values():
            items = sorted(items, key=lambda e: e.start_us)
            end = items[0].end_us
            for e in items[1:]:
                if e.start_us > end:
                    gaps += e.start_us - end
                    count += 1
                end = max(end, e.end_us)
        device = {e.args["device_task"] for e in tasks if isinstance(e.args, dict) and "device_task" in e.args}
        return {"makespan_us": makespan, "tasks": len(tasks), "device_tasks": len(device) if device else None,
                "utilization": util, "lanes_used": {k: sum(1 for ln in per_lane if lane_kind(ln) == k)
                                                    for k in ("AIC", "AIV")},
                "bubbles": {"us": gaps, "count": count}, "flows": len(self.flows)}

    def to_chrome_trace(self) -> dict:
        """The events back in Chrome Trace Event format (one process, one thread per lane)."""
        out = [{"ph": "M", "name": "process_name", "pid": 1, "tid": 0, "args": {"name": "Machine View"}}]
        tids = {}
        for i, lane in enumerate(self.lanes, 1):
            tids[lane] = i
            out.append({"ph": "M", "name": "thread_name", "pid": 1, "tid": i, "args": {"name": lane}})
        for e in self.events:
            out.append({"ph": "X", "name": e.name, "pid": 1, "tid": tids[e.lane], "ts": e.start_us,
                        "dur": e.dur_us, "args": e.args})
        for n, f in enumerate(self.flows):
            out.append({"ph": "s", "id": n, "name": f.name, "cat": "dep", "pid": 1, "tid": tids[f.from_lane],
                        "ts": f.from_us})
            out.append({"ph": "f", "id": n, "name": f.name, "cat": "dep", "pid": 1, "tid": tids[f.to_lane],
                        "ts": f.to_us, "bp": "e"})
        return {"traceEvents": out, "displayTimeUnit": "ns", "otherData": {"source": self.source}}

    def __repr__(self) -> str:
        s = self.stats
        return (f"<TraceTimeline {self.source}: {len(self.lanes)} lanes, {s['tasks']} tasks, "
                f"makespan {s['makespan_us']:.2f} µs>")


def load_trace(path_or_dict, rebase: bool | None = None) -> TraceTimeline:
    """Read a Chrome trace: a path to a JSON file, a dict ``{"traceEvents": [...]}`` or a list of
    events. Lanes come from the ``thread_name`` metadata (``AIC_3`` is spelled ``AIC3`` like the
    simulator's cores); ``"X"`` events (and ``"B"``/``"E"`` pairs) become events, ``"s"``/``"f"``
    pairs flows. With ``rebase`` (default: for traces not written by this simulator) times are
    shifted so that the first event starts at 0."""
    if isinstance(path_or_dict, (str, os.PathLike)):
        with open(path_or_dict, encoding="utf-8") as f:
            data = json.load(f)
        source = os.path.basename(os.fspath(path_or_dict))
    else:
        data, source = path_or_dict, "<trace>"
    raw = data.get("traceEvents", []) if isinstance(data, dict) else list(data or ())
    ours = isinstance(data, dict) and "machine" in (data.get("otherData") or {})
    if ours and source == "<trace>":
        source = f"pypto-lab simulator ({data['otherData']['machine']})"
    processes, threads = {}, {}
    for ev in raw:
        if ev.get("ph") == "M" and ev.get("name") in ("process_name", "thread_name"):
            name = str((ev.get("args") or {}).get("name", ""))
            if ev["name"] == "process_name":
                processes[ev.get("pid")] = name
            else:
                threads[(ev.get("pid"), ev.get("tid"))] = name
    lane_of, used = {}, set()

    def lane(pid, tid) -> str:
        key = (pid, tid)
        if key not in lane_of:
            name = threads.get(key)
            name = _normal_lane(name) if name else f"{processes.get(pid, pid)}:{tid}"
            if name in used:  # the same thread name in two processes
                name = f"{processes.get(pid, pid)}/{name}"
            used.add(name)
            lane_of[key] = name
        return lane_of[key]

    events, open_spans, flow_starts, flows = [], {}, {}, []
    for ev in raw:
        ph = ev.get("ph")
        if ph == "X" and "ts" in ev:
            events.append(TraceEvent(lane(ev.get("pid"), ev.get("tid")), str(ev.get("name", "")), float(ev["ts"]),
                                     float(ev.get("dur", 0.0)), dict(ev.get("args") or {})))
        elif ph == "B" and "ts" in ev:
            open_spans.setdefault((ev.get("pid"), ev.get("tid")), []).append(ev)
        elif ph == "E" and open_spans.get((ev.get("pid"), ev.get("tid"))):
            b = open_spans[(ev.get("pid"), ev.get("tid"))].pop()
            events.append(TraceEvent(lane(b.get("pid"), b.get("tid")), str(b.get("name", "")), float(b["ts"]),
                                     float(ev["ts"]) - float(b["ts"]), dict(b.get("args") or {})))
        elif ph == "s" and "ts" in ev:
            flow_starts[(ev.get("cat"), ev.get("id"))] = ev
        elif ph == "f" and (ev.get("cat"), ev.get("id")) in flow_starts and "ts" in ev:
            s = flow_starts.pop((ev.get("cat"), ev.get("id")))
            flows.append(TraceFlow(str(ev.get("name", s.get("name", ""))), lane(s.get("pid"), s.get("tid")),
                                   float(s["ts"]), lane(ev.get("pid"), ev.get("tid")), float(ev["ts"])))
    if rebase is None:
        rebase = not ours
    origin = min((e.start_us for e in events), default=0.0) if rebase else 0.0
    if origin:
        events = [TraceEvent(e.lane, e.name, e.start_us - origin, e.dur_us, e.args) for e in events]
        flows = [TraceFlow(f.name, f.from_lane, f.from_us - origin, f.to_lane, f.to_us - origin) for f in flows]
    lanes = sorted({e.lane for e in events} | {f.from_lane for f in flows} | {f.to_lane for f in flows},
                   key=lane_sort_key)
    order = {ln: i for i, ln in enumerate(lanes)}
    events.sort(key=lambda e: (order[e.lane], e.start_us))
    return TraceTimeline(lanes, events, source, flows, "pypto-lab" if ours else "upstream")


__all__ = ["TraceEvent", "TraceFlow", "TraceTimeline", "lane_kind", "lane_sort_key", "load_trace"]
