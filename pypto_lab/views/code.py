"""Generated code of each leaf function: the PTO-style listing, the executable CPU form and, with
``valid_shape_optimize``, the main/tail variants, highlighted with Pygments (inline styles)."""

from __future__ import annotations

from pygments import highlight
from pygments.formatters import HtmlFormatter
from pygments.lexer import RegexLexer, bygroups
from pygments.lexers import PythonLexer
from pygments.token import Comment, Keyword, Name, Number, Punctuation, Text, Whitespace

from ._html import note


class PtoLexer(RegexLexer):
    """The PTO listing: ``//`` comment lines, ``; attr=...`` annotations, one mnemonic per line
    (TLOAD, TMOV.L0A, ...) with buffers (ub0, l0c4), GM params (P0) and memory names."""

    name = "PTO"
    aliases = ["pto"]
    tokens = {
        "root": [
            (r"//.*?$", Comment.Single),
            (r";.*?$", Comment.Special),
            (r"^([ \t]*)([A-Z][A-Z0-9_]*(?:\.[A-Z0-9_]+)*)", bygroups(Whitespace, Keyword)),
            (r"\b(for|in|step|if|else)\b", Keyword.Reserved),
            (r"\bP\d+\b", Name.Variable),
            (r"\b(?:ub|l1|l0a|l0b|l0c|gm)\d+\w*\b", Name.Builtin),
            (r"\b(?:UB|L1|L0A|L0B|L0C|GM)\b", Name.Class),
            (r"0x[0-9a-fA-F]+", Number.Hex),
            (r"\d+", Number.Integer),
            (r"[\[\](),=:@+\-*/<>]", Punctuation),
            (r"\w+", Name),
            (r"\n", Whitespace),
            (r"[ \t]+", Whitespace),
            (r".", Text),
        ],
    }


_FORMATTER = HtmlFormatter(noclasses=True, style="default", nobackground=False)


def leaf_names(compiled) -> list[str]:
    """The leaf functions with generated code, in leaf order."""
    return list(getattr(compiled, "source", None) or {})


def code_forms(compiled, leaf: str) -> list[str]:
    """The forms of ``leaf``'s code: "pto" and "cpu", plus "main"/"tail" when variants exist."""
    src = (getattr(compiled, "source", None) or {}).get(leaf)
    if src is None:
        return []
    return ["pto", "cpu"] + [v for v in ("main", "tail") if v in (getattr(src, "variants", None) or {})]


def _text(src, form: str):
    if form == "pto":
        return str(getattr(src, "pto", src))
    if form == "cpu":
        return getattr(src, "cpu", None)
    variant = (getattr(src, "variants", None) or {}).get(form)
    return None if variant is None else str(variant)


def code_html(compiled, leaf: str, form: str = "pto") -> str:
    """``leaf``'s code in ``form`` ("pto", "cpu", "main" or "tail") as highlighted HTML."""
    src = (getattr(compiled, "source", None) or {}).get(leaf)
    if src is None:
        return note(f"no generated code for leaf {leaf}")
    text = _text(src, form)
    if text is None:
        return note(f"leaf {leaf} has no {form} form (forms: {', '.join(code_forms(compiled, leaf))})")
    lexer = PythonLexer() if form == "cpu" else PtoLexer()
    return highlight(text, lexer, _FORMATTER)


__all__ = ["PtoLexer", "leaf_names", "code_forms", "code_html"]
