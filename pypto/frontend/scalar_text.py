"""Upstream's text of a SymbolicScalar: what ``str()`` / ``repr()`` of one print.

Every operation is parenthesised and written without spaces, ``((b>=2)*(b<8))``; division is
``/`` (it is integer division), logic is ``&&`` / ``||`` / ``!``, a comparison or a logical
value prints as ``1`` / ``0``, minimum and maximum are calls, ``RUNTIME_Min(x, 5)``, and the runtime
size of dim ``i`` of tensor argument ``x`` is ``RUNTIME_GetInputShapeDim(ARG_x,i)``.

This is the SymbolicScalar's own surface; kernel listings keep the IR printer's readable infix
(``pypto.ir.expr.render``).
"""

from __future__ import annotations

import re

from ..ir import expr as E

_OPS = {"add": "+", "sub": "-", "mul": "*", "floordiv": "/", "mod": "%", "eq": "==", "ne": "!=", "lt": "<",
        "le": "<=", "gt": ">", "ge": ">=", "and": "&&", "or": "||"}
_CALLS = {"min": "RUNTIME_Min", "max": "RUNTIME_Max"}
_INPUT_DIM = re.compile(r"^([A-Za-z_]\w*)\.shape\[(\d+)\]$")


def dump(e) -> str:
    """``e`` (an Expr or an int) in upstream's fully parenthesised form."""
    if not isinstance(e, E.Expr):
        return str(int(e))
    if isinstance(e, E.Const):
        return str(int(e.value))
    if isinstance(e, E.Sym):
        m = _INPUT_DIM.match(e.name)
        return f"RUNTIME_GetInputShapeDim(ARG_{m.group(1)},{m.group(2)})" if m else e.name
    if isinstance(e, E.Not):
        return f"(!{dump(e.a)})"
    if isinstance(e, E.Load):
        return f"{e.param}[{', '.join(dump(i) for i in e.indices)}]"
    if e.op in _CALLS:
        return f"{_CALLS[e.op]}({dump(e.a)}, {dump(e.b)})"
    if e.op == "sub" and e.a == E.Const(0):  # how the normal form writes a negation
        return f"(-{dump(e.b)})"
    return f"({dump(e.a)}{_OPS[e.op]}{dump(e.b)})"
