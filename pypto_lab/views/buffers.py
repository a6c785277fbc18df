"""Buffers over time: per core, the bytes of UB / L1 / L0A / L0B / L0C live while it runs its
tasks (`pypto.runtime.buffers`), one track per memory with the capacity as a dashed line, a
tooltip per step naming the task, its leaf, the op, the live buffers and the kernel line; plans
that do not fit and leaves whose pipes idle are flagged above."""

from __future__ import annotations

from ._html import esc, note

TRACK_H, GAP, LEFT, RIGHT = 44, 10, 150, 12


def _kb(n: int) -> str:
    return f"{n / 1024:,.1f} KB" if n < 1024 * 1024 else f"{n / 1024 / 1024:,.2f} MB"


def buffer_flags_html(tl) -> str:
    """Over-capacity plans and idle-pipe leaves of the timeline's kernel, one line each."""
    from pypto.hints import idle_pipes
    from pypto.runtime.buffers import over_capacity
    from pypto.runtime.eventlog import TaskEvents

    ev = tl.events
    if not isinstance(ev, TaskEvents):
        return ""
    leaves = list({id(c.leaf): c.leaf for c in ev.classes}.values())
    lines = [f'<div style="color:#cf222e">&#9888; {esc(leaf)} plans {_kb(fp)} of {esc(mem)}, over its capacity of '
             f"{_kb(cap)}</div>" for leaf, mem, fp, cap in over_capacity(leaves, tl.machine)]
    lines += [f'<div style="color:#9a6700">&#9208; {esc(h.title)}</div>' for h in idle_pipes(tl)]
    return "".join(lines)


def buffers_svg(tl, core: str, width: int = 1000) -> str:
    """The tracks of ``core`` (e.g. "AIV3") as an SVG."""
    from pypto.runtime.buffers import core_tracks, leaf_occupancy

    tracks = core_tracks(tl, core)
    plans: dict = {}
    if not tracks:
        return note(f"{core} holds no on-chip buffer")
    ev = tl.events
    span = max(int(tl.stats["makespan_cycles"]), 1)
    scale = (width - LEFT - RIGHT) / span
    height = len(tracks) * (TRACK_H + GAP) + 18
    out = [f'<svg class="pypto-buffers" xmlns="http://www.w3.org/2000/svg" width="{width}" height="{height}" '
           'font-family="sans-serif" font-size="10">']
    for row, t in enumerate(tracks):
        top = row * (TRACK_H + GAP) + 4
        ymax = max(t.capacity, t.peak, 1)
        over = t.peak > t.capacity
        colour = "#e15759" if over else "#4e79a7"
        out.append(f'<text x="4" y="{top + 14}" font-weight="bold">{esc(core)} {esc(t.mem)}</text>')
        out.append(f'<text x="4" y="{top + 27}" fill="{"#cf222e" if over else "#555"}">peak {_kb(t.peak)}</text>')
        out.append(f'<text x="4" y="{top + 39}" fill="#777">of {_kb(t.capacity)} ({t.peak / t.capacity:.0%})</text>')
        out.append(f'<rect x="{LEFT}" y="{top}" width="{width - LEFT - RIGHT}" height="{TRACK_H}" fill="#fafafa" '
                   'stroke="#e4e4e4"/>')
        for k in range(len(t.bytes)):
            b = int(t.bytes[k])
            if b <= 0:
                continue
            x0, x1 = LEFT + t.times[k] * scale, LEFT + t.times[k + 1] * scale
            h = TRACK_H * b / ymax
            task, op = int(t.task[k]), int(t.op[k])
            leaf = ev.classes[int(ev.cls[task])].leaf
            occ = plans.get(leaf.name)
            if occ is None:
                occ = plans[leaf.name] = leaf_occupancy(leaf)
            names = occ.names[t.mem][op]
            loc = getattr(leaf.ops[op], "loc", None) if op < len(leaf.ops) else None
            tip = (f"task {task} ({leaf.name}) op {op} {getattr(leaf.ops[op], 'kind', '')}: {_kb(b)} of {t.mem} live "
                   f"({', '.join(names)})" + (f" · {loc}" if loc is not None else ""))
            out.append(f'<rect x="{x0:.2f}" y="{top + TRACK_H - h:.2f}" width="{max(x1 - x0, 0.5):.2f}" '
                       f'height="{h:.2f}" fill="{colour}" fill-opacity="0.75"><title>{esc(tip)}</title></rect>')
        cap_y = top + TRACK_H - TRACK_H * t.capacity / ymax
        out.append(f'<line x1="{LEFT}" x2="{width - RIGHT}" y1="{cap_y:.2f}" y2="{cap_y:.2f}" stroke="#cf222e" '
                   'stroke-dasharray="4 3"><title>capacity</title></line>')
    us = tl.machine.cycles_to_us
    out.append(f'<text x="{LEFT}" y="{height - 4}" fill="#555">0 … {us(span):,.1f} µs · dashed: capacity · '
               "ops of a task drawn equally long · hover a step for its task, op, buffers and kernel line</text>")
    out.append("</svg>")
    return "".join(out)


def buffers_html(tl, cores=None, width: int = 1000) -> str:
    """Flags, then the buffer tracks of ``cores`` (default: the busiest core of each type)."""
    from pypto.runtime.buffers import busiest_cores
    from pypto.runtime.eventlog import TaskEvents

    if tl is None or not isinstance(getattr(tl, "events", None), TaskEvents):
        return note("no simulated timeline")
    cores = list(cores) if cores else busiest_cores(tl)
    body = "".join(f'<div style="margin:4px 0">{buffers_svg(tl, c, width)}</div>' for c in cores)
    return f'<div class="pypto-buffers-view" style="font-family:sans-serif;font-size:12px">{buffer_flags_html(tl)}{body}</div>'


__all__ = ["buffers_html", "buffers_svg", "buffer_flags_html"]
