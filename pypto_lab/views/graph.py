"""The program's graph at each level (Tensor, Tile, Block, Execute), rendered with Graphviz."""

from __future__ import annotations

import functools
import shutil
import subprocess

from ._html import note, pre

LEVELS = ("tensor", "tile", "block", "execute")
DOT_TIMEOUT_SECONDS = 60  # a huge Tile Graph can take dot a long time; show the text instead


def levels(compiled) -> list[str]:
    """The graph levels that ``compiled`` has pass snapshots for, in pipeline order."""
    present = {p.level for p in getattr(compiled, "passes", None) or ()}
    return [lv for lv in LEVELS if lv in present]


def level_dot(compiled, level: str) -> str:
    """DOT text of the last pass snapshot of ``level`` ("tensor", "tile", "block", "execute").
    The execute level is the graph of leaf calls (``execute_graph``), not the code listing that
    follows it (the Code tab shows that)."""
    if level not in LEVELS:
        raise ValueError(f"unknown graph level {level!r}: expected one of {', '.join(LEVELS)}")
    snaps = [p for p in getattr(compiled, "passes", None) or () if p.level == level]
    graphs = [p for p in snaps if p.name != "codegen"] or snaps
    if not graphs:
        return ""
    return graphs[-1].to_dot()


@functools.lru_cache(maxsize=64)
def dot_to_svg(dot: str) -> str:
    """Render DOT text as an inline ``<svg>`` with Graphviz's ``dot -Tsvg``.

    Never raises: without a ``dot`` binary, or when it fails or times out, the result is the DOT
    text in a ``<pre>`` with a note saying why."""
    if not dot.strip():
        return note("no graph")
    exe = shutil.which("dot")
    if exe is None:
        return note("Graphviz 'dot' is not installed; showing the DOT text.") + pre(dot)
    try:
        proc = subprocess.run([exe, "-Tsvg"], input=dot.encode(), capture_output=True,
                              timeout=DOT_TIMEOUT_SECONDS, check=False)
    except (OSError, subprocess.TimeoutExpired) as e:
        return note(f"Graphviz could not render this graph ({type(e).__name__}); showing the DOT text.") + pre(dot)
    svg = proc.stdout.decode("utf-8", "replace")
    start = svg.find("<svg")
    if proc.returncode != 0 or start < 0:
        err = proc.stderr.decode("utf-8", "replace").strip().splitlines()
        why = err[0] if err else f"exit code {proc.returncode}"
        return note(f"Graphviz failed: {why}; showing the DOT text.") + pre(dot)
    # drop the XML prologue and doctype so the SVG can sit inside HTML
    return svg[start:].strip()


def graph_svg(compiled, level: str = "tensor") -> str:
    """The graph of ``level`` as inline SVG (or a note when that level is missing)."""
    if compiled is None:
        return note("no compiled kernel")
    dot = level_dot(compiled, level)
    if not dot:
        return note(f"no {level} graph in this compiled kernel")
    return dot_to_svg(dot)


# Pan and zoom without any script file: handlers on the frame (they run in JupyterLab, and a
# stored notebook without them still shows the picture). Drag pans (the frame scrolls), the
# wheel with Ctrl (or Cmd) zooms around the graph, double-click toggles fit-to-frame / full size.
_PAN_ZOOM = " ".join((
    """onmousedown="if(event.button===0){this._p=[event.clientX,event.clientY,this.scrollLeft,this.scrollTop];"""
    """this.style.cursor='grabbing';event.preventDefault()}\"""",
    """onmousemove="if(this._p){this.scrollLeft=this._p[2]-event.clientX+this._p[0];"""
    """this.scrollTop=this._p[3]-event.clientY+this._p[1]}\"""",
    """onmouseup="this._p=null;this.style.cursor='grab'\"""",
    """onmouseleave="this._p=null;this.style.cursor='grab'\"""",
    """onwheel="if(event.ctrlKey||event.metaKey){event.preventDefault();var s=this.querySelector('svg');"""
    """var w=s.getBoundingClientRect().width*(event.deltaY<0?1.25:0.8);s.style.maxWidth='none';s.style.maxHeight='none';"""
    """s.style.width=Math.max(100,w)+'px';s.style.height='auto'}\"""",
    """ondblclick="var s=this.querySelector('svg');var fit=s.style.maxWidth!=='100%';"""
    """s.style.maxWidth=fit?'100%':'none';s.style.maxHeight=fit?'68vh':'none';s.style.width='';s.style.height=''\"""",
))
FRAME_STYLE = ("overflow:auto;max-height:70vh;border:1px solid #ddd;cursor:grab;background:#fff;"
               "user-select:none")

LEGEND = (
    ("box", "#e2f0fd", "AIV (vector) op or leaf"),
    ("box", "#fde2e2", "AIC (cube) op or leaf"),
    ("box", "#fff4d6", "tensor op"),
    ("box", "#e8f0fe", "kernel parameter"),
    ("box", "#fffbe6", "leaf note: GM params, local buffers"),
    ("box", "#f5f5f5", "\u00d7N: a repeated pattern drawn once"),
    ("dash", "#555555", "GM: a tensor written to GM and read back"),
)


def legend_html() -> str:
    """The colours and line styles the graphs use, in one line."""
    items = []
    for kind, colour, text in LEGEND:
        mark = (f'<span style="display:inline-block;width:12px;height:10px;background:{colour};'
                f'border:1px solid #999;margin-right:3px"></span>' if kind == "box" else
                f'<span style="display:inline-block;width:16px;border-top:2px dashed {colour};'
                f'margin:0 3px 3px 0"></span>')
        items.append(f'<span style="margin-right:12px;white-space:nowrap">{mark}{text}</span>')
    return ('<div style="font-family:sans-serif;font-size:11px;color:#444;margin:3px 0">'
            + "".join(items) + "</div>")


def graph_html(compiled, level: str = "tensor", fit: bool = True) -> str:
    """The graph of ``level`` in a frame that pans (drag) and zooms (Ctrl + wheel; double-click
    toggles fit-to-frame), with its legend. Hover a node for its shapes, memory levels and
    source line. ``fit``: start shrunk to fit the frame, never enlarged (else at Graphviz's own size)."""
    body = graph_svg(compiled, level)
    start = body.find("<svg")
    if start < 0:
        return body
    # fit: shrink to the frame (its width and its height), never enlarge: a small graph keeps
    # Graphviz's size instead of being blown up to the frame's width and cut off at the bottom
    size = "max-width:100%;max-height:68vh;width:auto;height:auto" if fit else "max-width:none"
    body = body[:start] + f'<svg style="{size};display:block"' + body[start + 4:]
    hint = ('<div style="font-family:sans-serif;font-size:11px;color:#777">drag to pan, Ctrl + wheel to '
            'zoom, double-click: fit to frame / full size, hover a node for details</div>')
    return legend_html() + f'<div class="pypto-graph-frame" style="{FRAME_STYLE}" {_PAN_ZOOM}>{body}</div>' + hint


__all__ = ["LEVELS", "LEGEND", "levels", "level_dot", "dot_to_svg", "graph_svg", "graph_html", "legend_html"]
