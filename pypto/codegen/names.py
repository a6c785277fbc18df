"""User text in generated code: tensor names become identifier fragments, never code.

A tensor's name (``pypto.tensor(..., name=S)``, a parameter's name) is the user's text: it may hold
spaces, quotes, newlines, brackets or a whole Python expression. Generated leaf source only ever
uses it as part of a local variable name, after the prefix that makes the name unique, so it is
reduced to ASCII letters, digits and underscores (and shortened): the result can neither end the
statement it sits in nor name another variable, and the numbered prefix keeps it apart from
keywords and from every other local.
"""

from __future__ import annotations

import re

_NOT_WORD = re.compile(r"[^A-Za-z0-9_]+")
MAX_PART = 24  # enough to recognise the tensor in a listing, short enough to read


def identifier_part(text) -> str:
    """``text`` as a fragment to append to an identifier: ASCII word characters only, runs of
    anything else (``.``, spaces, quotes, newlines, non-ASCII letters) as one ``_``, at most
    `MAX_PART` characters. ``"x.y"`` -> ``"x_y"``, ``"P[0]"`` -> ``"P_0_"``, ``""`` -> ``""``."""
    return _NOT_WORD.sub("_", str(text))[:MAX_PART]


def listing_text(text) -> str:
    """``text`` for one line of a listing (a comment of the PTO-like text): its ``repr`` without
    the quotes when it holds a line break or a control character, so it stays on its line."""
    s = str(text)
    if s.isprintable():
        return s
    return repr(s)[1:-1]
