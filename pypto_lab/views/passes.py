"""The pass pipeline of one compiled kernel: a timing table, each pass's IR (coloured), and a
side-by-side diff with the pass before (word level, unchanged runs folded)."""

from __future__ import annotations

import difflib
from itertools import accumulate
import re

from ._html import PRE_STYLE, esc, ms, note, table
from .ir import ir_html, line_styles, styled
from .pass_bisect import bisection_of, pass_verdict_html


def _passes(compiled) -> list:
    return list(getattr(compiled, "passes", None) or ())


def pass_table_html(compiled) -> str:
    """One row per pass snapshot (index, name, graph level, time) and the total time; with a pass
    bisection on ``compiled`` (`pypto.bisect_passes`), each pass's verdict on the numbers too."""
    passes = _passes(compiled)
    if not passes:
        return note("no passes recorded")
    total = sum(p.seconds for p in passes)
    bisection = bisection_of(compiled)
    if bisection is None:
        rows = [(str(i), esc(p.name), esc(p.level), ms(p.seconds)) for i, p in enumerate(passes)]
        return table(("#", "pass", "level", "time"), rows, footer=("", f"total ({len(passes)} passes)", "", ms(total)))
    # a pass bisection was made: each pass's verdict, the first that changes the numbers marked
    checks = {c.index: c for c in bisection.checks}
    bad = bisection.first_bad
    rows = []
    for i, p in enumerate(passes):
        name = esc(p.name)
        if bad is not None and i == bad.index:
            name = f'<b class="pypto-culprit" style="color:#cf222e">\u2716 {name}</b>'
        verdict = pass_verdict_html(checks[i]) if i in checks else ""
        rows.append((str(i), name, esc(p.level), ms(p.seconds), verdict))
    return table(("#", "pass", "level", "time", "numbers"), rows,
                 footer=("", f"total ({len(passes)} passes)", "", ms(total), ""))


def _get(compiled, index: int):
    passes = _passes(compiled)
    if not 0 <= index < len(passes):
        return None
    return passes[index]


def pass_ir_html(compiled, index: int) -> str:
    """The program text after pass ``index``, coloured, in a <pre> that scrolls (long lines too)."""
    p = _get(compiled, index)
    if p is None:
        return note(f"no pass #{index}")
    head = f'<div style="font-family:sans-serif;margin:2px 0">#{index} <b>{esc(p.name)}</b> ({esc(p.level)} graph)</div>'
    return head + f'<pre style="{PRE_STYLE};max-height:600px">{ir_html(p.text)}</pre>'


_WORD = re.compile(r"%?\w+|\s+|[^\w\s]")
_LINE_STYLE = "height:1.45em;line-height:1.45em;white-space:pre;padding:0 6px"
_GUTTER_STYLE = "display:inline-block;min-width:3.5em;color:#8c959f;user-select:none"
_SIDE_COLOURS = {"-": ("#ffebe9", "background:#ffc1c0"), "+": ("#e6ffec", "background:#abf2bc")}
_FOLD_STYLE = "background:#f0f4ff;color:#57606a;font-style:italic"
CONTEXT_LINES = 3  # unchanged lines kept around each change when unchanged lines are folded


def _words(line: str) -> list:
    return _WORD.findall(line)


def _line_html(number, line: str, side: str, changed=()) -> str:
    """One row of one side: its line number and its coloured text, words in ``changed`` (character
    ranges) highlighted; ``side`` is "-", "+" or " "."""
    styles = line_styles(line)
    row_bg, word_bg = _SIDE_COLOURS.get(side, ("", ""))
    parts, pos = [], 0
    for start, end in changed:
        parts.append(styled(line[pos:start], styles, pos))
        parts.append(styled(line[start:end], styles, start, word_bg))
        pos = end
    parts.append(styled(line[pos:], styles, pos))
    gutter = f'<span style="{_GUTTER_STYLE}">{number if number is not None else ""}</span>'
    bg = f";background:{row_bg}" if row_bg else ""
    return f'<div style="{_LINE_STYLE}{bg}">{gutter}{"".join(parts) or " "}</div>'


def _blank_row() -> str:
    return f'<div style="{_LINE_STYLE};background:#f6f8fa"> </div>'


def _fold_row(count: int) -> str:
    return f'<div style="{_LINE_STYLE};{_FOLD_STYLE}">\u22ef {count} unchanged line{"s" if count != 1 else ""}</div>'


def _changed_ranges(old: str, new: str) -> tuple:
    """Character ranges of the words that differ between two lines: (in old, in new)."""
    a, b = _words(old), _words(new)
    a_pos, b_pos = list(accumulate(map(len, a), initial=0)), list(accumulate(map(len, b), initial=0))
    left, right = [], []
    for op, i1, i2, j1, j2 in difflib.SequenceMatcher(None, a, b, autojunk=False).get_opcodes():
        if op != "equal":
            if i2 > i1:
                left.append((a_pos[i1], a_pos[i2]))
            if j2 > j1:
                right.append((b_pos[j1], b_pos[j2]))
    return left, right


def _side_by_side(old: list, new: list, context) -> tuple:
    """(left rows, right rows, changed line count): the two texts aligned row by row."""
    left, right, changed = [], [], 0
    opcodes = difflib.SequenceMatcher(None, old, new, autojunk=False).get_opcodes()
    for n, (op, i1, i2, j1, j2) in enumerate(opcodes):
        if op == "equal":
            count = i2 - i1
            keep_head = 0 if n == 0 else context
            keep_tail = 0 if n == len(opcodes) - 1 else context
            if context is None or count <= keep_head + keep_tail + 1:
                ranges = [range(count)]
            else:
                ranges = [range(keep_head), None, range(count - keep_tail, count)]
            for r in ranges:
                if r is None:
                    left.append(_fold_row(count - keep_head - keep_tail))
                    right.append(_fold_row(count - keep_head - keep_tail))
                    continue
                for k in r:
                    left.append(_line_html(i1 + k + 1, old[i1 + k], " "))
                    right.append(_line_html(j1 + k + 1, new[j1 + k], " "))
            continue
        changed += max(i2 - i1, j2 - j1)
        for k in range(max(i2 - i1, j2 - j1)):
            a = old[i1 + k] if i1 + k < i2 else None
            b = new[j1 + k] if j1 + k < j2 else None
            if a is not None and b is not None:  # a changed line: highlight the words that changed
                ra, rb = _changed_ranges(a, b)
                left.append(_line_html(i1 + k + 1, a, "-", ra))
                right.append(_line_html(j1 + k + 1, b, "+", rb))
            else:
                left.append(_line_html(i1 + k + 1, a, "-") if a is not None else _blank_row())
                right.append(_line_html(j1 + k + 1, b, "+") if b is not None else _blank_row())
    return left, right, changed


def _pane(title: str, rows: list) -> str:
    head = f'<div style="font-family:sans-serif;font-weight:bold;padding:2px 6px;background:#f3f3f3">{esc(title)}</div>'
    # each side scrolls sideways on its own; the frame around both scrolls them down together
    return (f'<div style="flex:1 1 0;min-width:0;border:1px solid #eee">{head}'
            f'<div style="overflow-x:auto"><div style="display:inline-block;min-width:100%">'
            + "".join(rows) + "</div></div></div>")


def pass_diff_html(compiled, index: int, context: int | None = CONTEXT_LINES) -> str:
    """Pass ``index``'s text side by side with the previous pass's: changed lines red (before) and
    green (after), the words that changed in a line highlighted, the IR coloured. Runs of unchanged
    lines longer than ``2 * context + 1`` are folded to one row (``context=None``: show them all)."""
    p = _get(compiled, index)
    if p is None:
        return note(f"no pass #{index}")
    if index == 0:
        return note(f"#{index} {p.name} is the first pass: there is no previous pass to compare with.")
    prev = _passes(compiled)[index - 1]
    old, new = prev.text.splitlines(), p.text.splitlines()
    if old == new:
        return note(f"#{index} {p.name} did not change the program text.")
    left, right, changed = _side_by_side(old, new, context)
    summary = (f'<div style="font-family:sans-serif;margin:2px 0">{changed} line(s) changed: '
               f'#{index - 1} {esc(prev.name)} &rarr; #{index} <b>{esc(p.name)}</b></div>')
    body = (f'<div style="display:flex;gap:4px;max-height:600px;overflow-y:auto;font-family:monospace;'
            f'font-size:12px">{_pane(f"#{index - 1} {prev.name}", left)}'
            f'{_pane(f"#{index} {p.name}", right)}</div>')
    return summary + body


__all__ = ["CONTEXT_LINES", "pass_table_html", "pass_ir_html", "pass_diff_html"]
