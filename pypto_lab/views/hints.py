"""The hints of `pypto.hints` (what a kernel engineer would fix) as a short, collapsible list."""

from __future__ import annotations

from ._html import esc

_ICONS = {"gm_round_trip": "\u21c4", "idle_pipes": "\u23f8", "idle_cores": "\u25a1", "redundant_loads": "\u29c9"}
MAX_SHOWN = 12  # hints listed; the rest are counted


def hints_html(run) -> str:
    """The hints for a call's compiled kernel and its timeline (a ``RunRecord``), in a <details>
    that opens on click; an empty string when there is nothing to say."""
    from pypto.hints import kernel_hints

    if run is None:
        return ""
    hints = kernel_hints(run.compiled, run.timeline)
    if not hints:
        return ""
    items = [f'<li style="margin:2px 0"><b>{_ICONS.get(h.kind, "")} {esc(h.title)}</b>'
             f'<div style="color:#555">{esc(h.detail)}</div></li>' for h in hints[:MAX_SHOWN]]
    if len(hints) > MAX_SHOWN:
        items.append(f'<li style="color:#777">\u2026 {len(hints) - MAX_SHOWN} more</li>')
    kinds = sorted({h.kind.replace("_", " ") for h in hints})
    return (f'<details class="pypto-hints" style="font-family:sans-serif;font-size:12px;margin:2px 0">'
            f'<summary style="cursor:pointer;color:#9a6700">{len(hints)} hint(s): {esc(", ".join(kinds))}'
            f'</summary><ul style="margin:2px 0;padding-left:20px">{"".join(items)}</ul></details>')


def leaf_hints_html(compiled, leaf: str) -> str:
    """The compile-time hints about one leaf (e.g. a GM tile loaded several times), as a
    banner above its code in the Code tab; "" when there are none."""
    from pypto.hints import gm_round_trips, redundant_loads

    if compiled is None or not leaf:
        return ""
    mine = [h for h in redundant_loads(compiled) + gm_round_trips(compiled) if leaf in h.leaves]
    if not mine:
        return ""
    items = "".join(f'<div><b>{_ICONS.get(h.kind, "")} {esc(h.title)}</b>: {esc(h.detail)}</div>' for h in mine)
    return (f'<div class="pypto-leaf-hints" style="font-family:sans-serif;font-size:12px;background:#fff8c5;'
            f'border:1px solid #d4a72c;padding:4px 6px;margin:4px 0">{items}</div>')


__all__ = ["hints_html", "leaf_hints_html"]
