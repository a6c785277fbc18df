"""What the timeline's details panel shows for one task: its leaf's generated code, the kernel
lines the leaf came from, the tile each operand of the task covers, and its pipe breakdown."""

from __future__ import annotations

from ._html import esc, note, table
from .code import code_html
from .swimlane import leaf_source_lines


def _task_class(tl, task: int):
    from pypto.runtime.eventlog import TaskEvents

    ev = tl.events
    if not isinstance(ev, TaskEvents) or not 0 <= task < len(ev.start):
        return None
    return ev.classes[int(ev.cls[task])]


def tile_offsets(tl, compiled, task: int) -> list:
    """``(operand, offsets, valid extent, tile shape)`` of each GM operand of ``task``, found by
    evaluating its call under its root instance's loop values (the simulator's own rule); empty
    when the timeline does not hold columns or the call reads tensor values to decide its tiles."""
    import numpy as np

    from pypto.runtime.control import evaluate_call

    ev = tl.events
    lowered = getattr(compiled, "lowered", None)
    if _task_class(tl, task) is None or lowered is None:
        return []
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
        m = points.shape[0]
        if local < m:
            out = []
            for k, (off, val, tile) in enumerate(zip(offsets, valid, tiles)):
                access = call.args[k]
                role = "write" if k in call.writes else "read"
                out.append((f"P{k} {role} %{access.value.name}", off[local].tolist(), val[local].tolist(), tile))
            return out
        local -= m
    return []


def task_details_html(tl, compiled, task: int, form: str | None = None) -> str:
    """HTML for the details panel of ``task`` (a task id of simulated timeline ``tl``)."""
    tc = _task_class(tl, task)
    if tc is None:
        return note(f"no details for task {task}")
    leaf = tc.leaf
    ev = tl.events
    parts = []
    pipes = dict(ev.cost_pipes[int(ev.cost[task])])
    total = max(int(ev.end[task] - ev.start[task]), 1)
    if pipes:
        rows = []
        for pipe, cycles in sorted(pipes.items(), key=lambda kv: -kv[1]):
            share = cycles / total
            bar = (f'<span style="display:inline-block;height:8px;width:{min(share, 1) * 120:.0f}px;'
                   f'background:#4e79a7"></span>')
            rows.append((esc(pipe), f"{cycles:,}", f"{share:.0%}", bar))
        parts.append(table(("pipe", "busy cycles", "of the task", ""), rows, caption="pipe breakdown"))
    offsets = tile_offsets(tl, compiled, task)
    if offsets:
        parts.append(table(("operand", "tile offset", "valid extent", "tile shape"),
                           [(esc(n), esc(o), esc(v), esc(t)) for n, o, v, t in offsets], caption="tile"))
    lines = leaf_source_lines(leaf)
    if lines:
        parts.append(table(("kernel line", "source"), [(esc(loc), f"<code>{esc(text)}</code>") for loc, text in lines],
                           caption=f"{leaf.name} comes from"))
    variant = ("main" if tc.full else "tail") if getattr(ev, "vso", False) else None
    src = (getattr(compiled, "source", None) or {}).get(leaf.name)
    if form is None:
        form = variant if variant and variant in (getattr(src, "variants", None) or {}) else "pto"
    parts.append(f'<div style="font-family:sans-serif;margin:4px 0"><b>{esc(leaf.name)}</b> code ({esc(form)})</div>'
                 f'<div style="max-height:360px;overflow:auto">{code_html(compiled, leaf.name, form)}</div>')
    return ('<div style="display:flex;flex-wrap:wrap;gap:12px;align-items:flex-start">'
            + "".join(f"<div>{p}</div>" for p in parts[:-1]) + "</div>" + parts[-1])


__all__ = ["task_details_html", "tile_offsets"]
