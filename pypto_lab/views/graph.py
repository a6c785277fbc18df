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
    """DOT text of the last pass snapshot of ``level`` ("tensor", "tile", "block", "execute")."""
    if level not in LEVELS:
        raise ValueError(f"unknown graph level {level!r}: expected one of {', '.join(LEVELS)}")
    snaps = [p for p in getattr(compiled, "passes", None) or () if p.level == level]
    if not snaps:
        return ""
    return snaps[-1].to_dot()


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


__all__ = ["LEVELS", "levels", "level_dot", "dot_to_svg", "graph_svg"]
