"""Self-contained HTML/SVG reprs so inspection objects display on their own in a notebook.

Plain strings only: pypto never imports IPython; the lab (pypto_lab) offers the interactive views.
"""

from __future__ import annotations

import html


def _table(headers, rows) -> str:
    head = "".join(f"<th style='text-align:left;padding:2px 8px'>{html.escape(str(h))}</th>" for h in headers)
    body = "".join("<tr>" + "".join(f"<td style='padding:2px 8px'>{html.escape(str(c))}</td>" for c in r) + "</tr>"
                   for r in rows)
    return f"<table><thead><tr>{head}</tr></thead><tbody>{body}</tbody></table>"


def cache_info_html(info) -> str:
    rows = [(i, e.hits, f"{e.compile_seconds * 1e3:.1f}", e.key) for i, e in enumerate(info.entries)]
    return (f"<div><b>pypto cache</b>: {info.hits} hit(s), {info.misses} miss(es), {len(info.entries)} version(s)"
            + _table(["#", "hits", "compile ms", "key"], rows) + "</div>")


def compiled_html(ck) -> str:
    rows = [(i, p.name, p.level, f"{p.seconds * 1e3:.2f}") for i, p in enumerate(ck.passes)]
    leaves = ", ".join(html.escape(n) for n in ck.source) or "none"
    return (f"<div><b>CompiledKernel {html.escape(ck.name)}</b> [{html.escape(ck.key_text)}]"
            + _table(["#", "pass", "level", "ms"], rows)
            + f"<div>leaf kernels: {leaves}</div>"
            + f"<details><summary>tensor graph</summary><pre>{html.escape(ck.text())}</pre></details></div>")


_COLORS = ("#4e79a7", "#f28e2b", "#e15759", "#76b7b2", "#59a14f", "#edc948", "#b07aa1", "#ff9da7", "#9c755f")


MAX_BARS = 5000  # beyond this many tasks, bars closer than a pixel are drawn as one


def timeline_svg(tl, width: int = 800, lane: int = 14, max_lanes: int = 64) -> str:
    """A static swimlane picture: one lane per core that ran a task, bars coloured by leaf (on a
    timeline of more than MAX_BARS tasks, tasks less than a pixel apart share one bar)."""
    events = tl.events
    if len(events) > MAX_BARS:
        from .runtime.eventlog import merged_bars

        span = max(tl.stats["makespan_cycles"], 1)
        bars, _ = merged_bars(tl, span / max(width - 60, 1))
        events = [_MergedBar(core, leaf, start, end, count) for core, leaf, start, end, count in bars]
    cores = sorted({e.core for e in events}, key=lambda c: (c[:3], int("".join(ch for ch in c if ch.isdigit()) or 0)))
    cores = cores[:max_lanes]
    span = max(tl.stats["makespan_cycles"], 1)
    leaves = sorted({e.leaf for e in events})
    color = {name: _COLORS[i % len(_COLORS)] for i, name in enumerate(leaves)}
    y = {c: i * lane for i, c in enumerate(cores)}
    left = 60
    scale = (width - left) / span
    parts = [f"<svg xmlns='http://www.w3.org/2000/svg' width='{width}' height='{len(cores) * lane + 20}' "
             "font-family='sans-serif' font-size='10'>"]
    for c in cores:
        parts.append(f"<text x='2' y='{y[c] + lane - 3}'>{html.escape(c)}</text>")
    for e in events:
        if e.core not in y:
            continue
        x = left + e.start * scale
        w = max(e.duration * scale, 0.5)
        what = getattr(e, "label", None) or f"task {e.task}"
        parts.append(f"<rect x='{x:.1f}' y='{y[e.core] + 1}' width='{w:.1f}' height='{lane - 2}' "
                     f"fill='{color[e.leaf]}'><title>{html.escape(e.leaf)} {what} "
                     f"{e.duration} cycles</title></rect>")
    parts.append(f"<text x='{left}' y='{len(cores) * lane + 14}'>0 .. {tl.machine.cycles_to_us(span):.1f} µs</text>")
    parts.append("</svg>")
    return "".join(parts)


class _MergedBar:
    """Tasks drawn as one bar (same attributes as a TaskEvent where the picture reads them)."""

    def __init__(self, core, leaf, start, end, count):
        self.core, self.leaf, self.start, self.end, self.count = core, leaf, start, end, count
        self.duration = end - start
        self.label = f"{count} tasks" if count > 1 else "1 task"


def timeline_html(tl) -> str:
    """The lab's interactive chart when pypto_lab is installed alongside (it ships in the same
    distribution; imported lazily and never IPython), else a static summary and picture."""
    try:
        from pypto_lab.views.timeline import timeline_html as interactive
    except ImportError:
        return static_timeline_html(tl)
    return f"<div><b>Timeline</b></div>{interactive(tl)}"


def static_timeline_html(tl) -> str:
    """One line of stats, the timing model's error and the static swimlane picture."""
    from .runtime.model_error import error_text

    s = tl.stats
    util = ", ".join(f"{k} {v:.1%}" for k, v in s["utilization"].items())
    line = (f"makespan {s['makespan_cycles']} cycles ({s['makespan_us']:.1f} µs), {s['tasks']} tasks, "
            f"{s['device_tasks']} device task(s), utilization {util}, critical path {s['critical_path_cycles']}")
    error = error_text(tl)
    if error:
        line += f"; model error {error}"
    return f"<div><b>Timeline</b>: {html.escape(line)}<br>{timeline_svg(tl)}</div>"
