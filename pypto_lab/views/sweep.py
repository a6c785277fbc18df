"""Views of a tuning sweep (`pypto.tune.Results`): the results table, makespan against one
parameter, and the Pareto front of makespan against compile time or UB usage. Pure functions
returning HTML or a small inline SVG (no chart library)."""

from __future__ import annotations

from ._html import esc, note, table
from .model_error import model_error_html

FIGURE_LABELS = {"makespan_cycles": "makespan", "critical_path_cycles": "crit path", "utilization_aic": "AIC",
                 "utilization_aiv": "AIV", "l2_hit_rate": "L2 hit", "device_tasks": "dev tasks",
                 "compile_seconds": "compile", "ub_bytes": "UB bytes"}
PARETO_AXES = {"compile_seconds": "compile time (s)", "ub_bytes": "UB bytes (largest leaf)",
               "device_tasks": "device tasks", "tasks": "tasks"}
_OK, _BEST, _BAD, _FRONT = "#4c78a8", "#e45756", "#bbbbbb", "#f58518"


def results_table_html(results, sort_by: str = "makespan_cycles", descending: bool = False,
                       limit: int | None = 50, timeline=None) -> str:
    """The trials as an HTML table sorted by ``sort_by`` (a figure or a parameter name); the best
    trial's row is marked, a failed trial shows its error's first line. With ``timeline`` (a
    simulated timeline of the swept kernel, e.g. the best trial's), the timing model's error for
    its kernel class and machine is shown under the table."""
    if not len(results):
        return note("no trials yet")
    names = results.names
    best = results.best
    header = ["#", *names, "status", *FIGURE_LABELS.values()]
    rows = []
    for r in results.sorted(sort_by, descending)[:limit]:
        mark = " ★" if best is not None and r is best else ""
        status = esc(r.status) if r.ok else f'<span title="{esc(r.error)}">{esc(r.status)}: ' \
                                             f'{esc(r.error.splitlines()[0][:60])}</span>'
        rows.append([f"{r.number}{mark}", *(esc(r.config.get(n, "")) for n in names), status,
                     *(_figure(f, getattr(r, f)) for f in FIGURE_LABELS)])
    caption = f"{len(results)} trial(s), {len(results.failed)} not ok, sorted by {sort_by}" + \
        (" (descending)" if descending else "")
    return table(header, rows, caption=caption) + model_error_html(timeline)


def _figure(name, v) -> str:
    if v is None:
        return "-"
    if name.startswith(("utilization", "l2_")):
        return f"{v:.0%}"
    if name == "compile_seconds":
        return f"{v * 1e3:.1f} ms"
    return esc(v)


def _frame(width, height, title, x_label, body) -> str:
    return (f'<svg xmlns="http://www.w3.org/2000/svg" width="{width}" height="{height}" '
            f'class="pypto-sweep-chart" style="font:10px sans-serif;background:#fff">'
            f'<text x="{width / 2}" y="12" text-anchor="middle" font-weight="bold">{esc(title)}</text>'
            f'<text x="{width / 2}" y="{height - 2}" text-anchor="middle">{esc(x_label)}</text>'
            f'<line x1="40" y1="{height - 24}" x2="{width - 8}" y2="{height - 24}" stroke="#999"/>'
            f'<line x1="40" y1="18" x2="40" y2="{height - 24}" stroke="#999"/>{body}</svg>')


def _y_scale(values, height):
    lo, hi = min(values), max(values)
    span = (hi - lo) or 1
    return lambda v: 18 + (1 - (v - lo) / span) * (height - 46), lo, hi


def scatter_svg(results, param: str, width: int = 260, height: int = 170) -> str:
    """Makespan (cycles) against ``param``: one dot per ok trial (the best in red), one grey tick
    at the top per failed trial. Parameter values are placed as categories, in sorted order."""
    ok = [r for r in results.ok if param in r.config]
    bad = [r for r in results.failed if param in r.config]
    values = sorted({repr(r.config[param]) for r in ok + bad}, key=_value_order(ok + bad, param))
    if not values or not ok:
        return _frame(width, height, f"makespan vs {param}", param, "")
    slot = (width - 56) / len(values)
    x = {v: 48 + slot * (i + 0.5) for i, v in enumerate(values)}
    y, lo, hi = _y_scale([r.makespan_cycles for r in ok], height)
    best = results.best
    body = [f'<text x="36" y="22" text-anchor="end">{hi}</text>',
            f'<text x="36" y="{height - 26}" text-anchor="end">{lo}</text>']
    for v in values:
        body.append(f'<text x="{x[v]:.1f}" y="{height - 13}" text-anchor="middle">{esc(v)}</text>')
    for r in ok:
        color = _BEST if r is best else _OK
        body.append(f'<circle cx="{x[repr(r.config[param])]:.1f}" cy="{y(r.makespan_cycles):.1f}" r="3" '
                    f'fill="{color}" fill-opacity="0.7"><title>#{r.number} {esc(r.config)}: '
                    f'{r.makespan_cycles} cycles</title></circle>')
    for r in bad:
        body.append(f'<text x="{x[repr(r.config[param])]:.1f}" y="24" text-anchor="middle" fill="{_BAD}" '
                    f'class="failed">×<title>#{r.number} {esc(r.status)}</title></text>')
    return _frame(width, height, f"makespan vs {param}", param, "".join(body))


def _value_order(records, param):
    originals = {repr(r.config[param]): r.config[param] for r in records}

    def key(text):
        v = originals[text]
        return (0, v, "") if isinstance(v, (int, float)) and not isinstance(v, bool) else (1, 0, text)
    return key


def pareto_front(records, x: str = "compile_seconds") -> list:
    """The ok trials no other trial beats on both makespan and ``x`` (both minimised), by ``x``."""
    pts = sorted((r for r in records if r.ok and getattr(r, x) is not None),
                 key=lambda r: (getattr(r, x), r.makespan_cycles, r.number))
    front, best = [], None
    for r in pts:
        if best is None or r.makespan_cycles < best:
            front.append(r)
            best = r.makespan_cycles
    return front


def pareto_svg(results, x: str = "compile_seconds", width: int = 360, height: int = 200) -> str:
    """Makespan against ``x`` (``compile_seconds`` or ``ub_bytes``), the Pareto front joined in
    orange (class ``front``)."""
    ok = [r for r in results.ok if getattr(r, x) is not None]
    label = PARETO_AXES.get(x, x)
    if not ok:
        return _frame(width, height, f"makespan vs {label}", label, "")
    xs = [getattr(r, x) for r in ok]
    x_lo, x_hi = min(xs), max(xs)
    span = (x_hi - x_lo) or 1
    px = lambda v: 48 + (v - x_lo) / span * (width - 64)  # noqa: E731
    y, lo, hi = _y_scale([r.makespan_cycles for r in ok], height)
    front = pareto_front(ok, x)
    on_front = {id(r) for r in front}
    fmt = lambda v: _figure(x, v)  # noqa: E731
    body = [f'<text x="36" y="22" text-anchor="end">{hi}</text>',
            f'<text x="36" y="{height - 26}" text-anchor="end">{lo}</text>',
            f'<text x="48" y="{height - 13}">{esc(fmt(x_lo))}</text>',
            f'<text x="{width - 8}" y="{height - 13}" text-anchor="end">{esc(fmt(x_hi))}</text>']
    path = " ".join(f"{px(getattr(r, x)):.1f},{y(r.makespan_cycles):.1f}" for r in front)
    body.append(f'<polyline points="{path}" fill="none" stroke="{_FRONT}" class="front-line"/>')
    for r in ok:
        front_dot = id(r) in on_front
        body.append(f'<circle cx="{px(getattr(r, x)):.1f}" cy="{y(r.makespan_cycles):.1f}" '
                    f'r="{4 if front_dot else 3}" fill="{_FRONT if front_dot else _OK}" fill-opacity="0.75"'
                    f'{" class=" + chr(34) + "front" + chr(34) if front_dot else ""}><title>#{r.number} '
                    f'{esc(r.config)}: {r.makespan_cycles} cycles, {esc(fmt(getattr(r, x)))}</title></circle>')
    return _frame(width, height, f"makespan vs {label}", label, "".join(body))
