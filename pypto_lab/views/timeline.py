"""Text views of a schedule: a one-line summary, a per-leaf table, per-lane busy shares, a
before/after comparison, the standalone interactive chart (``timeline_html``) and the Chrome-trace
bytes the chart's download button asks for. The chart itself is drawn by ``swimlane.js``.

Each accepts a simulated `pypto.runtime.timeline.Timeline` or a `TraceTimeline` read by
`load_trace` (e.g. upstream's ``merged_swimlane.json`` measured on an NPU), so a measured
schedule can be drawn next to a simulated one.
"""

from __future__ import annotations

import json

from ._html import esc, note, table
from .model_error import model_error_html
from .swimlane import decode_payload, swimlane_html, swimlane_payload
from .trace import TraceTimeline, load_trace



def _us(x: float) -> str:
    return f"{x:,.2f} µs"


MAX_INLINE_TASKS = 200_000  # beyond this, the standalone HTML shows the static picture only


def leaf_summary_html(tl) -> str:
    """A table with one row per leaf (or trace label): task count, total, mean and max time, the
    share of the makespan during which at least one of its tasks runs, and the time per pipe."""
    import numpy as np

    if tl is None:
        return note("no timeline")
    meta, buffer = swimlane_payload(tl)
    cols = decode_payload(meta, buffer)
    if not meta["n"]:
        return note("no tasks")
    tasks = cols["aicpu"] == 0
    group, start, dur, cost = (cols["group"][tasks].astype(np.int64), cols["start"][tasks],
                               cols["dur"][tasks].astype(np.float64), cols["cost"][tasks].astype(np.int64))
    makespan = meta["makespan"] or 1.0
    pipes, costs = meta["pipes"], meta["costs"]
    per_us = meta.get("cycles_per_us") or 1.0
    rows = []
    for g, name in enumerate(meta["leaves"]):
        mine = np.nonzero(group == g)[0]
        if not len(mine):
            continue
        d = dur[mine]
        order = mine[np.argsort(start[mine], kind="stable")]
        covered, reach = 0.0, -1.0
        for s0, s1 in zip(start[order].tolist(), (start[order] + dur[order]).tolist()):
            if s1 > reach:
                covered += s1 - max(s0, reach)
                reach = s1
        row = [esc(name), f"{len(mine):,}", _us(d.sum()), _us(d.mean()), _us(d.max()), f"{covered / makespan:.1%}"]
        if pipes:
            counts = np.bincount(cost[mine][cost[mine] >= 0], minlength=len(costs))
            for p in pipes:
                cycles = sum(int(c) * costs[i].get(p, 0) for i, c in enumerate(counts.tolist()) if c)
                row.append(_us(cycles / per_us) if cycles else "–")
        rows.append(row)
    header = ["leaf", "tasks", "total", "mean", "max", "share of makespan"] + [f"{p}" for p in pipes]
    return table(header, rows, caption=("per leaf (share of makespan: the part of the makespan during which at least "
                                        "one of its tasks runs; pipe columns: busy time summed over its tasks)"))


def lane_busy_html(tl) -> str:
    """Per-lane busy percentage (time with a task or span / makespan), lanes in display order."""
    if tl is None:
        return note("no timeline")
    meta, _ = swimlane_payload(tl)
    rows = [(esc(lane["name"]), esc(lane["kind"]), f"{lane['busy']:.1%}") for lane in meta["lanes"]]
    return table(("lane", "kind", "busy"), rows, caption="busy share per lane")


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
    return " · ".join([
        f"makespan {_us(m['makespan_us'])} ({m['makespan_cycles']:,} cycles)", f"{m['tasks']} tasks",
        f"{m['device_tasks']} device task(s)", f"utilization {util}", critical_text(tl),
        f"bubbles {m['bubbles']:,} (idle gaps between tasks on a core: {m['bubble_cycles']:,} cycles summed over "
        "cores)"])


def critical_text(tl) -> str:
    """The critical path in one phrase: the chain of start reasons from the last task, its tasks'
    run time and its waits, which add up to the makespan (`Timeline.critical_chain`)."""
    from pypto.runtime.eventlog import TaskEvents

    if not isinstance(tl.events, TaskEvents) or not len(tl.events):
        cp = tl.stats["critical_path_cycles"]
        return f"longest dependency chain {cp:,} cycles of task time"
    chain = tl.critical_chain()
    running = sum(s.cycles for s in chain if s.task is not None)
    tasks = sum(1 for s in chain if s.task is not None)
    total = sum(s.cycles for s in chain)
    return f"critical path {tasks} tasks: {running:,} cycles running + {total - running:,} waiting = {total:,}"


def change_html(old, new, lower_is_better: bool | None, points: bool = False) -> str:
    """The change from ``old`` to ``new`` (relative %, or percentage points with ``points``),
    green when better, red when worse; a change that rounds to zero is shown plain."""
    if old is None or new is None:
        return ""
    if points:
        delta = round((new - old) * 100, 1)  # what is shown: a change that rounds to 0 is none
        text = f"{delta:+.1f} pp" if delta else "0.0 pp"
    elif old == 0:
        return "" if new == 0 else "new"
    else:
        delta = round((new - old) / old, 3)
        text = f"{delta:+.1%}" if delta else "0.0%"
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
        out.append((esc(label), esc(fmt(ma[key], kind)), esc(fmt(mb[key], kind)), change_html(ma[key], mb[key], lower)))
    for core in ("AIC", "AIV"):
        ua, ub = ma["utilization"].get(core), mb["utilization"].get(core)
        if ua is None and ub is None:
            continue
        out.append((f"utilization {core}", esc(fmt(ua, "pct")), esc(fmt(ub, "pct")),
                    change_html(ua, ub, False, points=True)))
    return table(("", str(labels[0]), str(labels[1]), "change"), out)


def trace_json_bytes(tl) -> bytes:
    """The timeline as Chrome-trace JSON (open it in ui.perfetto.dev or chrome://tracing); the
    chart builds it only when its download button is clicked."""
    return json.dumps(tl.to_chrome_trace(), separators=(",", ":")).encode()


_STATIC_COLOURS = ("#4e79a7", "#f28e2b", "#59a14f", "#e15759", "#76b7b2", "#edc948", "#b07aa1", "#ff9da7",
                   "#9c755f", "#86bcb6", "#d37295", "#8cd17d", "#499894", "#f1ce63", "#a0cbe8", "#ffbe7d")


def static_svg(tl, width: int = 900, lane: int = 10, max_lanes: int = 80) -> str:
    """A small static picture of a simulated timeline for places where no script runs (GitHub,
    an untrusted notebook): one row per core, tasks less than a pixel apart drawn as one bar, no
    per-bar tooltips, so it stays a few tens of KB for any number of tasks."""
    from pypto.runtime.eventlog import merged_bars

    from .swimlane import lane_order_key, natural_key

    if tl is None or isinstance(tl, TraceTimeline):
        return ""
    left = 60
    span = max(tl.stats["makespan_cycles"], 1)
    bars, _ = merged_bars(tl, span / max(width - left, 1))
    lanes = sorted({b[0] for b in bars}, key=lane_order_key)[:max_lanes]
    row = {name: i for i, name in enumerate(lanes)}
    leaves = sorted({b[1] for b in bars}, key=natural_key)
    colour = {name: _STATIC_COLOURS[i % len(_STATIC_COLOURS)] for i, name in enumerate(leaves)}
    scale = (width - left) / span
    out = [f'<svg xmlns="http://www.w3.org/2000/svg" width="{width}" height="{len(lanes) * lane + 16}" '
           'font-family="sans-serif" font-size="9">']
    out += [f'<text x="2" y="{row[name] * lane + lane - 2}">{esc(name)}</text>' for name in lanes]
    for name, leaf, start, end, _count in bars:
        if name in row:
            out.append(f'<rect x="{left + start * scale:.1f}" y="{row[name] * lane + 1}" '
                       f'width="{max((end - start) * scale, 0.6):.1f}" height="{lane - 2}" fill="{colour[leaf]}"/>')
    out.append(f'<text x="{left}" y="{len(lanes) * lane + 12}">0 … {esc(_us(tl.stats["makespan_us"]))} · '
               + esc(", ".join(leaves[:8])) + ("…" if len(leaves) > 8 else "") + "</text></svg>")
    return "".join(out)


def timeline_html(tl, title: str | None = None) -> str:
    """The standalone chart: stats line, the model's error, the interactive swimlanes (a static SVG where scripts do
    not run) and the per-leaf table. ``Timeline._repr_html_`` shows this."""
    if tl is None:
        return note("no timeline")
    fallback = static_svg(tl)
    head = f'<div style="font-family:sans-serif;margin:2px 0">{esc(stats_line(tl))}</div>{model_error_html(tl)}'
    if not isinstance(tl, TraceTimeline) and len(tl.events) > MAX_INLINE_TASKS:
        return head + fallback + note(f"{len(tl.events):,} tasks: the interactive chart is in the lab's Timeline tab")
    return (head + swimlane_html(tl, title=title, fallback=fallback)
            + f"<details><summary style='font-family:sans-serif'>per leaf</summary>{leaf_summary_html(tl)}</details>")


__all__ = ["TraceTimeline", "load_trace", "stats_line", "compare_html", "leaf_summary_html", "lane_busy_html",
           "trace_json_bytes", "timeline_html", "static_svg", "change_html"]
