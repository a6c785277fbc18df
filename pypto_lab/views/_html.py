"""Small HTML building blocks shared by the views: escaping, notes, tables and durations.

Every view returns a self-contained fragment with inline styles (no stylesheet to install), and
writes durations as ``<number> <unit>`` so the notebook sanitizer can mask wall-clock timings.
"""

from __future__ import annotations

from html import escape
from typing import Iterable, Sequence

TABLE_STYLE = "border-collapse:collapse;font-family:monospace;font-size:12px"
CELL_STYLE = "border:1px solid #ddd;padding:2px 8px;text-align:left;vertical-align:top"
HEAD_STYLE = CELL_STYLE + ";background:#f3f3f3;font-weight:bold"
PRE_STYLE = ("margin:0;padding:6px;background:#fafafa;border:1px solid #eee;font-size:12px;"
             "line-height:1.35;overflow:auto;white-space:pre")


def esc(value) -> str:
    """``value`` as text, HTML-escaped (quotes too, so it is safe inside attributes)."""
    return escape(str(value), quote=True)


def note(text: str) -> str:
    """A short grey italic remark, e.g. for an empty or missing object."""
    return f'<p style="color:#777;font-style:italic;margin:4px 0">{esc(text)}</p>'


def pre(text: str) -> str:
    """``text`` escaped in a scrollable <pre>."""
    return f'<pre style="{PRE_STYLE}">{esc(text)}</pre>'


def ms(seconds: float) -> str:
    """Seconds as milliseconds, always with the unit next to the number."""
    return f"{seconds * 1e3:.2f} ms"


def table(header: Sequence[str], rows: Iterable[Sequence[str]], caption: str | None = None,
          footer: Sequence[str] | None = None) -> str:
    """An HTML table; header/footer cells are escaped here, row cells are HTML already."""
    out = [f'<table style="{TABLE_STYLE}">']
    if caption:
        out.append(f'<caption style="text-align:left;padding:2px 0;font-family:sans-serif">{esc(caption)}</caption>')
    out.append("<thead><tr>" + "".join(f'<th style="{HEAD_STYLE}">{esc(h)}</th>' for h in header) + "</tr></thead>")
    out.append("<tbody>")
    for row in rows:
        out.append("<tr>" + "".join(f'<td style="{CELL_STYLE}">{c}</td>' for c in row) + "</tr>")
    out.append("</tbody>")
    if footer:
        out.append("<tfoot><tr>" + "".join(f'<td style="{HEAD_STYLE}">{esc(c)}</td>' for c in footer)
                   + "</tr></tfoot>")
    out.append("</table>")
    return "".join(out)
