"""Which pass broke the numbers: a compiled version's pass bisection (`pypto.bisect_passes`, or the
one pass verify makes on a mismatch), as the Passes tab shows it above the pass table.

A verdict per pass (same numbers / different / not run), the first pass whose program gives other
numbers, and per op that differs there its expected (reference) and computed values side by side.
"""

from __future__ import annotations

from ._html import esc, table

VERDICT = {True: ("same numbers", "#1a7f37"), False: ("different numbers", "#cf222e"), None: ("not run", "#8c959f")}
BANNER_STYLE = ("font-family:sans-serif;margin:4px 0;padding:6px 10px;border-left:4px solid {c};"
                "background:{bg}")


def bisection_of(compiled):
    """The pass bisection kept on ``compiled`` (None when none was made)."""
    return getattr(compiled, "bisection", None)


def pass_verdict_html(check) -> str:
    """One pass's verdict, coloured, with how its program ran as the tooltip. A pass whose program
    could not be run says why beside the verdict (not only in a tooltip); a pass whose results
    have elements computed from memory nothing wrote (past a tail) says how many were not compared."""
    text, colour = VERDICT[check.ok]
    html = f'<span title="{esc(check.how)}" style="color:{colour};font-weight:bold">{text}</span>'
    why = check.how[len("not run: "):] if check.ok is None and check.how.startswith("not run: ") else \
        check.how if check.ok is None else ""
    if why:
        html += f' <span class="pypto-not-run" style="color:#57606a">{esc(why)}</span>'
    skipped = sum(v.unspecified for v in check.values)
    if skipped:
        html += (f' <span class="pypto-unspecified" style="color:#57606a" title="elements computed from workspace '
                 f'memory the program never wrote (past a tail: unspecified on the device); the kernel\'s outputs '
                 f'are compared whole">({skipped:,} elements from unwritten memory not compared)</span>')
    return html


def _where_html(v) -> str:
    if v.op == "output":
        by = f' <span style="color:#57606a">written by {esc(", ".join(v.written_by))}</span>' if v.written_by else ""
        return f"output <b>%{esc(v.value)}</b>{by}"
    loc = f' <span style="color:#57606a">{esc(v.loc)}</span>' if v.loc else ""
    return f"<b>{esc(v.op)}</b> &rarr; %{esc(v.value)}{loc}"


def _elements_html(v) -> str:
    """The first differing elements: index, expected, got (a small inner table)."""
    if not v.elements:
        return '<span style="color:#8c959f">(shapes differ or no element to show)</span>' if not v.ok else ""
    rows = "".join(f'<tr><td style="padding:0 6px;color:#57606a">[{esc(", ".join(map(str, idx)))}]</td>'
                   f'<td style="padding:0 6px">{want:.6g}</td>'
                   f'<td style="padding:0 6px;background:#ffebe9">{got:.6g}</td></tr>' for idx, want, got in v.elements)
    return ('<table style="border-collapse:collapse;font-family:monospace;font-size:12px" class="pypto-values">'
            '<tr><th style="padding:0 6px;text-align:left">index</th><th style="padding:0 6px;text-align:left">'
            'expected</th><th style="padding:0 6px;text-align:left">got</th></tr>' + rows + "</table>")


def pass_bisection_html(compiled) -> str:
    """The bisection banner and, for the first pass that changes the numbers, one row per op (or
    kernel output) that differs, with its values side by side; empty text when no bisection was
    made for this version."""
    b = bisection_of(compiled)
    if b is None:
        return ""
    bad = b.first_bad
    if bad is None:
        return (f'<div class="pypto-bisection" style="{BANNER_STYLE.format(c="#1a7f37", bg="#dafbe1")}">'
                f"pass bisection: every pass keeps the reference's numbers (rtol={b.rtol}, atol={b.atol})</div>")
    suspects = " or ".join(f"<b>{esc(s)}</b>" for s in b.suspects)
    rows = []
    shown = bad.bad_values + tuple(o for o in bad.outputs if not o.ok)  # ops in program order, then outputs
    for v in shown:
        rows.append((_where_html(v), esc(f"{v.max_abs_diff:.3g}"), esc("x".join(map(str, v.shape)) or "scalar"),
                     _elements_html(v)))
    head = (f'<div class="pypto-bisection" data-culprit="{esc(bad.name)}" '
            f'style="{BANNER_STYLE.format(c="#cf222e", bg="#ffebe9")}">'
            f"pass bisection: the numbers first differ after #{bad.index} {suspects} "
            f'<span style="color:#57606a">({esc(bad.how)}; rtol={b.rtol}, atol={b.atol}; '
            f"against {esc(b.reference)})</span></div>")
    caption = (f"{len(shown)} value(s) differ after #{bad.index} {bad.name}"
               + (", the first op first" if bad.bad_values else ": only the kernel's outputs could be compared there"))
    return head + table(("op", "max |diff|", "shape", "first differing elements"), rows, caption=caption)


__all__ = ["pass_bisection_html", "pass_verdict_html", "bisection_of"]
