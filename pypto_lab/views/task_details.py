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
    from pypto.runtime.explain import task_operands

    lowered = getattr(compiled, "lowered", None)
    if _task_class(tl, task) is None or lowered is None:
        return []
    return [(label, off, val, tile) for label, _tensor, _role, off, val, tile in task_operands(tl, lowered, task)]


def start_reason_html(tl, compiled, task: int, steps: int = 12) -> str:
    """Why ``task`` started when it did (`Timeline.explain`: the wait split into its parts) and
    the chain of such reasons back to the launch ("why is this late"), latest first."""
    if _task_class(tl, task) is None:
        return ""
    lowered = getattr(compiled, "lowered", None)
    reason = tl.explain(task, lowered)
    cycles_to_us = tl.machine.cycles_to_us
    parts = table(("part of the wait", "cycles", "µs"),
                  [(esc(what), f"{c:,}", f"{cycles_to_us(c):,.2f}") for what, c in reason.parts]
                  or [("none: it started as soon as it could", "0", "0")],
                  caption=f"why it started at cycle {reason.start:,}: {reason.kind}")
    chain = tl.why_late(task)
    waited = sum(r.wait for r in chain)
    rows = []
    ev = tl.events
    for r in chain[:steps]:
        leaf = ev.classes[int(ev.cls[r.task])].leaf.name
        rows.append((f"task {r.task}", esc(leaf), esc(ev.core_names[int(ev.core[r.task])]), esc(r.kind),
                     f"{r.wait:,}", f"task {r.cause}" if r.cause is not None else "–"))
    more = f" (first {steps} of {len(chain)})" if len(chain) > steps else ""
    late = table(("task", "leaf", "core", "started after", "waited (cycles)", "waited for"), rows,
                 caption=(f"why is this late: {len(chain)} tasks back to the launch{more}; "
                          f"{waited:,} of the {reason.start:,} cycles before it started were waits"))
    return (f'<div class="pypto-start-reason" style="font-family:sans-serif;margin:4px 0">{esc(reason.text)}</div>'
            + f'<div style="display:flex;flex-wrap:wrap;gap:12px;align-items:flex-start"><div>{parts}</div>'
            + f"<div>{late}</div></div>")


def task_details_html(tl, compiled, task: int, form: str | None = None) -> str:
    """HTML for the details panel of ``task`` (a task id of simulated timeline ``tl``)."""
    tc = _task_class(tl, task)
    if tc is None:
        return note(f"no details for task {task}")
    leaf = tc.leaf
    ev = tl.events
    parts = []
    why = start_reason_html(tl, compiled, task)
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
    return (why + '<div style="display:flex;flex-wrap:wrap;gap:12px;align-items:flex-start">'
            + "".join(f"<div>{p}</div>" for p in parts[:-1]) + "</div>" + parts[-1])


__all__ = ["task_details_html", "tile_offsets"]
