"""The pass pipeline of one compiled kernel: a timing table, each pass's IR, and diffs."""

from __future__ import annotations

import difflib

from ._html import PRE_STYLE, esc, ms, note, pre, table

_DIFF_COLOURS = {"+": "background:#e6ffec;color:#116329", "-": "background:#ffebe9;color:#82071e",
                 "@": "background:#f0f4ff;color:#57606a"}


def _passes(compiled) -> list:
    return list(getattr(compiled, "passes", None) or ())


def pass_table_html(compiled) -> str:
    """One row per pass snapshot (index, name, graph level, time) and the total time."""
    passes = _passes(compiled)
    if not passes:
        return note("no passes recorded")
    rows = [(str(i), esc(p.name), esc(p.level), ms(p.seconds)) for i, p in enumerate(passes)]
    total = sum(p.seconds for p in passes)
    return table(("#", "pass", "level", "time"), rows, footer=("", f"total ({len(passes)} passes)", "", ms(total)))


def _get(compiled, index: int):
    passes = _passes(compiled)
    if not 0 <= index < len(passes):
        return None
    return passes[index]


def pass_ir_html(compiled, index: int) -> str:
    """The program text after pass ``index``, escaped in a <pre>."""
    p = _get(compiled, index)
    if p is None:
        return note(f"no pass #{index}")
    head = f'<div style="font-family:sans-serif;margin:2px 0">#{index} <b>{esc(p.name)}</b> ({esc(p.level)} graph)</div>'
    return head + pre(p.text)


def pass_diff_html(compiled, index: int) -> str:
    """A unified diff of pass ``index``'s text against the previous pass's, lines coloured +/-."""
    p = _get(compiled, index)
    if p is None:
        return note(f"no pass #{index}")
    if index == 0:
        return note(f"#{index} {p.name} is the first pass: there is no previous pass to compare with.")
    prev = _passes(compiled)[index - 1]
    lines = list(difflib.unified_diff(prev.text.splitlines(), p.text.splitlines(),
                                      fromfile=f"#{index - 1} {prev.name}", tofile=f"#{index} {p.name}",
                                      lineterm=""))
    if not lines:
        return note(f"#{index} {p.name} did not change the program text.")
    out = []
    for line in lines:
        header = line.startswith(("+++", "---"))
        style = "font-weight:bold" if header else _DIFF_COLOURS.get(line[:1], "")
        out.append(f'<span style="display:block;{style}">{esc(line) or " "}</span>')
    return f'<pre style="{PRE_STYLE}">' + "".join(out) + "</pre>"


__all__ = ["pass_table_html", "pass_ir_html", "pass_diff_html"]
