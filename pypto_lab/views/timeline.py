"""Swimlane views of a schedule: a plotly figure (one lane per core and AICPU thread, one bar per
task), a one-line summary, a before/after comparison and a Chrome-trace download link.

Each accepts a simulated `pypto.runtime.timeline.Timeline` or a `TraceTimeline` read by
`load_trace` (e.g. upstream's ``merged_swimlane.json`` measured on an NPU), so a measured
schedule can be drawn next to a simulated one.
"""

from __future__ import annotations

import base64
import json
from dataclasses import dataclass
from html import escape

from ._html import esc, note, table
from .trace import TraceTimeline, lane_kind, lane_sort_key, load_trace

# Fixed palettes, assigned in sorted-name order, so the same kernel always gets the same colours.
TASK_COLOURS = ("#4e79a7", "#f28e2b", "#59a14f", "#e15759", "#76b7b2", "#edc948", "#b07aa1", "#ff9da7",
                "#9c755f", "#86bcb6", "#d37295", "#8cd17d", "#499894", "#f1ce63", "#a0cbe8", "#ffbe7d")
AICPU_COLOURS = ("#7f7f7f", "#a5a5a5", "#5f5f5f", "#c7c7c7", "#8c8c6c", "#6c7c8c")
_HINT_CHARS = 160  # upstream hints can be long; the hover box shows the start


@dataclass(frozen=True)
class _Bar:
    lane: str
    group: str  # leaf name (tasks) or span name (AICPU): one colour and legend entry each
    start_us: float
    dur_us: float
    hover: str
    aicpu: bool


def _us(x: float) -> str:
    return f"{x:,.2f} µs"


MAX_BARS = 20000  # a simulated timeline with more tasks is drawn with nearby spans merged
MERGE_STEPS = 4000  # ... spans closer than makespan / MERGE_STEPS on one lane become one bar
MAX_INLINE_TASKS = 200_000  # beyond this, the Chrome trace is not inlined into the page


def _merged_bars(tl) -> list:
    from pypto.runtime.eventlog import merged_bars

    us = tl.machine.cycles_to_us
    tasks, spans = merged_bars(tl, max(tl.stats["makespan_cycles"], 1) / MERGE_STEPS)
    bars = []
    for lane, group, start, end, count in tasks:
        hover = (f"<b>{count:,} task(s)</b> on {escape(lane)}, the first: {escape(group)}<br>"
                 f"{end - start:,} cycles ({_us(us(end - start))}) from {_us(us(start))}<br>"
                 f"(a timeline of more than {MAX_BARS:,} tasks: nearby tasks are drawn as one bar)")
        bars.append(_Bar(lane, group, us(start), us(end - start), hover, False))
    for lane, group, start, end, count in spans:
        hover = (f"<b>{count:,} span(s)</b> on AICPU {escape(lane)}, the first: {escape(group)}<br>"
                 f"{end - start:,} cycles ({_us(us(end - start))}) from {_us(us(start))}")
        bars.append(_Bar(lane, group, us(start), us(end - start), hover, True))
    return bars


def _timeline_bars(tl) -> list:
    if len(tl.events) > MAX_BARS:
        return _merged_bars(tl)
    us = tl.machine.cycles_to_us
    bars = []
    for e in sorted(tl.events, key=lambda e: (e.start, e.task)):
        loops = ", ".join(f"{k}={v}" for k, v in e.loop_indices) or "-"
        pipes = ", ".join(f"{p} {c:,}" for p, c in e.pipes) or "-"
        hover = (f"<b>{escape(e.leaf)}</b>{' (' + escape(e.variant) + ')' if e.variant else ''}<br>"
                 f"task {e.task} on {e.core}<br>root {e.root} ({escape(e.root_function)}), loop {escape(loops)}<br>"
                 f"device task {e.device_task}, sched thread {e.thread}<br>"
                 f"{e.duration:,} cycles ({_us(us(e.duration))}) from {_us(us(e.start))}<br>pipes: {escape(pipes)}")
        bars.append(_Bar(e.core, e.leaf, us(e.start), us(e.duration), hover, False))
    for a in sorted(tl.aicpu, key=lambda a: (a.start, a.thread)):
        hover = (f"<b>{escape(a.name)}</b> on AICPU {escape(a.thread)}<br>{escape(a.detail)}<br>"
                 f"{a.end - a.start:,} cycles ({_us(us(a.end - a.start))}) from {_us(us(a.start))}")
        bars.append(_Bar(a.thread, a.name, us(a.start), us(a.end - a.start), hover, True))
    return bars


def _trace_bars(tl: TraceTimeline) -> list:
    bars = []
    for e in tl.events:
        lines = [f"<b>{escape(e.name)}</b> on {escape(e.lane)}", f"{_us(e.dur_us)} from {_us(e.start_us)}"]
        for k, v in e.args.items():
            text = v if isinstance(v, str) else json.dumps(v, sort_keys=True, default=str)
            if len(text) > _HINT_CHARS:
                text = text[:_HINT_CHARS] + "…"
            lines.append(f"{escape(str(k))}: {escape(text)}")
        aicpu = lane_kind(e.lane) == "AICPU"
        bars.append(_Bar(e.lane, e.name if aicpu else e.label, e.start_us, e.dur_us, "<br>".join(lines), aicpu))
    return bars


def _bars(tl) -> list:
    return _trace_bars(tl) if isinstance(tl, TraceTimeline) else _timeline_bars(tl)


def timeline_figure(tl, title: str | None = None, height: int | None = None, aicpu: bool = True):
    """A plotly swimlane figure: one row per core (AICPU lanes "control"/"sched<i>" on top, then
    AIC and AIV cores), one horizontal bar per task coloured by leaf (legend entries toggle them),
    hover text with the task's details, x in µs, zoom along time.

    Each trace carries ``meta={"kind": "task"}`` or ``{"kind": "aicpu"}`` so callers can tell task
    bars from AICPU spans; ``aicpu=False`` leaves the AICPU lanes out."""
    import plotly.graph_objects as go

    fig = go.Figure()
    if tl is None:
        fig.update_layout(title="no timeline", height=height or 200)
        return fig
    bars = [b for b in _bars(tl) if aicpu or not b.aicpu]
    lanes = sorted({b.lane for b in bars}, key=lane_sort_key)
    for is_aicpu, palette in ((False, TASK_COLOURS), (True, AICPU_COLOURS)):
        groups = sorted({b.group for b in bars if b.aicpu == is_aicpu})
        for i, group in enumerate(groups):
            mine = [b for b in bars if b.aicpu == is_aicpu and b.group == group]
            fig.add_trace(go.Bar(
                orientation="h", y=[b.lane for b in mine], x=[b.dur_us for b in mine],
                base=[b.start_us for b in mine], name=("AICPU " if is_aicpu else "") + group,
                marker={"color": palette[i % len(palette)], "line": {"width": 0.5, "color": "white"}},
                hovertext=[b.hover for b in mine], hoverinfo="text",
                legendgroup="aicpu" if is_aicpu else "task", meta={"kind": "aicpu" if is_aicpu else "task"}))
    if title is None:
        title = (f"Trace: {tl.source}" if isinstance(tl, TraceTimeline)
                 else f"Simulated timeline ({tl.machine.name})")
    end = max((b.start_us + b.dur_us for b in bars), default=1.0)
    fig.update_layout(
        title=title, barmode="overlay", bargap=0.25, hovermode="closest", dragmode="zoom",
        height=height or min(max(220, 22 * len(lanes) + 120), 2400),
        margin={"l": 70, "r": 20, "t": 50, "b": 45}, legend={"title": {"text": "leaf"}},
        xaxis={"title": {"text": "time (µs)"}, "range": [0, end * 1.01], "zeroline": False},
        yaxis={"type": "category", "categoryorder": "array", "categoryarray": lanes,
               "autorange": "reversed", "fixedrange": True})
    return fig


def _summary(tl) -> dict:
    """The numbers the text views show, for either kind of timeline."""
    s = tl.stats
    if isinstance(tl, TraceTimeline):
        return {"makespan_us": s["makespan_us"], "makespan_cycles": None, "tasks": s["tasks"],
                "device_tasks": s["device_tasks"], "utilization": s["utilization"],
                "critical_path_cycles": None, "bubbles": s["bubbles"]["count"], "flows": s["flows"]}
    return {"makespan_us": s["makespan_us"], "makespan_cycles": s["makespan_cycles"], "tasks": s["tasks"],
            "device_tasks": s["device_tasks"], "utilization": s["utilization"],
            "critical_path_cycles": s["critical_path_cycles"], "bubbles": s["bubbles"]["count"],
            "bubble_cycles": s["bubbles"]["cycles"], "us_per_cycle": tl.machine.cycles_to_us(1)}


def stats_line(tl) -> str:
    """One line: makespan, tasks, device tasks, AIC/AIV utilization, critical path and bubbles."""
    if tl is None:
        return "no timeline"
    m = _summary(tl)
    util = " / ".join(f"{k} {v:.1%}" for k, v in m["utilization"].items())
    if isinstance(tl, TraceTimeline):
        parts = [f"makespan {_us(m['makespan_us'])}", f"{m['tasks']} tasks"]
        if m["device_tasks"] is not None:
            parts.append(f"{m['device_tasks']} device task(s)")
        parts.append(f"utilization {util} (over the lanes in the trace)" if util else "utilization n/a")
        parts.append(f"bubbles {tl.stats['bubbles']['count']} ({_us(tl.stats['bubbles']['us'])})")
        parts.append(f"{m['flows']} dependencies")
        return " · ".join(parts)
    cp = m["critical_path_cycles"]
    return " · ".join([
        f"makespan {_us(m['makespan_us'])} ({m['makespan_cycles']:,} cycles)", f"{m['tasks']} tasks",
        f"{m['device_tasks']} device task(s)", f"utilization {util}",
        f"critical path {cp:,} cycles ({_us(cp * m['us_per_cycle'])})",
        f"bubbles {m['bubbles']} ({m['bubble_cycles']:,} cycles)"])


def _change(old, new, lower_is_better: bool | None, points: bool = False) -> str:
    if old is None or new is None:
        return ""
    if points:
        delta, text = new - old, f"{(new - old) * 100:+.1f} pp"
    elif old == 0:
        return "" if new == 0 else "new"
    else:
        delta, text = new - old, f"{(new - old) / old:+.1%}"
    if delta == 0 or lower_is_better is None:
        return esc(text)
    good = (delta < 0) == lower_is_better
    return f'<span style="color:{"#116329" if good else "#cf222e"}">{esc(text)}</span>'


def compare_html(a, b, labels=("previous", "new")) -> str:
    """A table of makespan, tasks, device tasks, utilization, critical path and bubbles of two
    timelines, with the change (relative %, percentage points for utilization; green = better)."""
    if a is None or b is None:
        return note("need two timelines to compare")
    ma, mb = _summary(a), _summary(b)

    def fmt(v, kind):
        if v is None:
            return "–"
        return {"us": _us, "pct": lambda x: f"{x:.1%}", "int": lambda x: f"{x:,}"}[kind](v)

    rows = [("makespan", "makespan_us", "us", True), ("makespan (cycles)", "makespan_cycles", "int", True),
            ("tasks", "tasks", "int", None), ("device tasks", "device_tasks", "int", None),
            ("critical path (cycles)", "critical_path_cycles", "int", True), ("bubbles", "bubbles", "int", True)]
    out = []
    for label, key, kind, lower in rows:
        if ma[key] is None and mb[key] is None:
            continue
        out.append((esc(label), esc(fmt(ma[key], kind)), esc(fmt(mb[key], kind)), _change(ma[key], mb[key], lower)))
    for core in ("AIC", "AIV"):
        ua, ub = ma["utilization"].get(core), mb["utilization"].get(core)
        if ua is None and ub is None:
            continue
        out.append((f"utilization {core}", esc(fmt(ua, "pct")), esc(fmt(ub, "pct")),
                    _change(ua, ub, False, points=True)))
    return table(("", str(labels[0]), str(labels[1]), "change"), out)


def trace_download_html(tl, filename: str = "pypto_timeline.json") -> str:
    """A link that downloads the timeline as Chrome-trace JSON (open it in ui.perfetto.dev or
    chrome://tracing); the JSON is inlined as a data: URI."""
    if tl is None:
        return note("no timeline")
    if not isinstance(tl, TraceTimeline) and len(tl.events) > MAX_INLINE_TASKS:
        return note(f"{len(tl.events):,} tasks: too many to inline the trace here; write it with "
                    f"timeline.save(path) and open the file in ui.perfetto.dev")
    data = json.dumps(tl.to_chrome_trace(), separators=(",", ":")).encode()
    uri = "data:application/json;base64," + base64.b64encode(data).decode("ascii")
    return (f'<a download="{esc(filename)}" href="{uri}" style="font-family:sans-serif">'
            f'Download the Chrome trace ({esc(filename)})</a>'
            '<span style="color:#777;font-family:sans-serif"> – open it in ui.perfetto.dev or chrome://tracing</span>')


__all__ = ["TraceTimeline", "load_trace", "timeline_figure", "stats_line", "compare_html",
           "trace_download_html", "TASK_COLOURS"]
