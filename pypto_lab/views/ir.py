"""Colours for the program text of the pass snapshots (tensor/tile IR, block listings, execute
graph): a Pygments lexer, and a colour per character so a diff can split a line into words
without losing the colours."""

from __future__ import annotations

from pygments.lexer import RegexLexer, bygroups
from pygments.token import Comment, Keyword, Name, Number, Punctuation, Text, Whitespace

from ._html import esc


class IrLexer(RegexLexer):
    """The text pypto prints for a pass snapshot: ``%values``, ``fp32[...]`` types, ``loop``/``if``,
    op names, ``# file:line`` source comments, and the PTO mnemonics and buffers of block listings."""

    name = "pypto IR"
    aliases = ["pypto-ir"]
    tokens = {
        "root": [
            (r"#.*?$", Comment.Single),
            (r"//.*?$", Comment.Single),
            (r"^([ \t]*)([A-Z][A-Z0-9_]*(?:\.[A-Z0-9_]+)*)(?=\s)", bygroups(Whitespace, Keyword)),
            (r"%[\w.]+", Name.Variable),
            (r"\b(?:kernel|loop|in|if|else|elif|for|step|return|root|leaf|call|valid|tile)\b", Keyword),
            (r"\b(?:fp64|fp32|fp16|bf16|hf32|fp8\w*|u?int(?:4|8|16|32|64)|bool)\b", Keyword.Type),
            (r"\b(?:ub|l1|l0a|l0b|l0c)\d+\w*\b", Name.Builtin),
            (r"\bP\d+\b", Name.Variable),
            (r"\b(?:UB|L1|L0A|L0B|L0C|GM|AIV|AIC|AICPU)\b", Name.Class),
            (r"[A-Za-z_]\w*(?=\()", Name.Function),
            (r"0x[0-9a-fA-F]+", Number.Hex),
            (r"\d+(?:\.\d+)?", Number),
            (r"[A-Za-z_]\w*", Name),
            (r"\n", Whitespace),
            (r"[ \t]+", Whitespace),
            (r"[\[\](),=:@+\-*/<>{}.]", Punctuation),
            (r".", Text),
        ],
    }


# token type -> inline style (a small palette close to GitHub's light theme)
_STYLES = (
    (Comment, "color:#6a737d;font-style:italic"),
    (Keyword.Type, "color:#6f42c1"),
    (Keyword, "color:#d73a49;font-weight:bold"),
    (Name.Variable, "color:#005cc5"),
    (Name.Builtin, "color:#e36209"),
    (Name.Class, "color:#b08800;font-weight:bold"),
    (Name.Function, "color:#22863a"),
    (Number, "color:#098658"),
)
_LEXER = IrLexer(stripnl=False, ensurenl=False)


def _style(ttype) -> str:
    for kind, style in _STYLES:
        if ttype in kind:
            return style
    return ""


def line_styles(line: str) -> list:
    """The inline style of each character of one line of IR text."""
    out: list = []
    for ttype, text in _LEXER.get_tokens(line):
        out.extend([_style(ttype)] * len(text))
    return out[:len(line)] + [""] * max(0, len(line) - len(out))


def styled(text: str, styles: list, start: int = 0, extra: str = "") -> str:
    """``text`` (found at ``start`` in a line whose character styles are ``styles``) as HTML spans,
    one per run of equal style; ``extra`` is added to every span (a diff's word highlight)."""
    out, run, run_style = [], [], None
    for i, ch in enumerate(text):
        style = styles[start + i] if start + i < len(styles) else ""
        if style != run_style and run:
            out.append(_span("".join(run), run_style, extra))
            run = []
        run_style = style
        run.append(ch)
    if run:
        out.append(_span("".join(run), run_style, extra))
    return "".join(out)


def _span(text: str, style: str, extra: str) -> str:
    full = ";".join(s for s in (style, extra) if s)
    return f'<span style="{full}">{esc(text)}</span>' if full else esc(text)


def ir_line_html(line: str) -> str:
    """One line of IR text, coloured."""
    return styled(line, line_styles(line))


def ir_html(text: str) -> str:
    """IR text, coloured line by line (no <pre> around it)."""
    return "\n".join(ir_line_html(line) for line in text.split("\n"))


__all__ = ["IrLexer", "ir_html", "ir_line_html", "line_styles", "styled"]
