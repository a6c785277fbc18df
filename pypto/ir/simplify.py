"""Algebraic simplification of symbolic expressions (``SymbolicScalar.simplify()``).

The builders in `expr` already fold constants and keep sums in a linear normal form. The rules
here go further, bottom-up until nothing changes:

- logic: ``!!c`` is ``c``, ``!(x < y)`` is ``y <= x``, De Morgan, ``a && a``, ``a && !a``,
  absorption ``a && (a || b)``, a neutral or deciding constant;
- ``min`` / ``max``: constants to the right, ``min(max(a, b), b)`` is ``b``, nested constant
  bounds merge (``min(min(a, 8), 16)`` is ``min(a, 8)``), a common part
  comes out (``min(x + y, x + z)`` is ``x + min(y, z)``), and a clamp of a clamp collapses
  when the inner upper bound cannot bind;
- ``min(x, y) * max(x, y)`` is ``x * y``; ``x*y + x*z`` is ``(y + z) * x``;
- division and modulo by a constant take out the multiples of it, ``(x*6 + y) // 3`` is
  ``x*2 + y // 3``, ``(x + 6) % 3`` is ``x % 3``, ``x // 4 // 2`` is ``x // 8``;
- a comparison drops what both sides share, ``x + y < x + z`` is ``y < z``.

Every rule keeps the value for all integer values of the symbols, negative ones included, under
this package's semantics: ``//`` and ``%`` round toward minus infinity (Python's), ``&&``,
``||`` and ``!`` give 0 or 1. So ``x && 1`` becomes ``x != 0``, not ``x``.
"""

from __future__ import annotations

from . import expr as E
from .expr import Bin, Const, Expr, Load, Not

_MAX_ROUNDS = 32
# not (a OP b) == (b OP' a) with the operands in this order (False: same order)
_NEGATED = {"eq": ("ne", False), "ne": ("eq", False), "lt": ("le", True), "le": ("lt", True),
            "gt": ("le", False), "ge": ("lt", False)}


def simplify(e) -> Expr:
    """``e`` rewritten by the rules above until it no longer changes."""
    e = E.lift(e)
    for _ in range(_MAX_ROUNDS):
        new = _visit(e)
        if new == e:
            return new
        e = new
    return e


def _visit(e: Expr) -> Expr:
    if isinstance(e, Not):
        return _not(_visit(e.a))
    if isinstance(e, Bin):
        a, b = _visit(e.a), _visit(e.b)
        rule = _RULES.get(e.op, E.binary)
        try:
            return rule(e.op, a, b)
        except ZeroDivisionError:  # a divisor that is 0: the expression fails at run time as written
            return Bin(e.op, a, b)
    if isinstance(e, Load):
        return Load(e.param, tuple(_visit(i) for i in e.indices))
    return e


def _int_const(e) -> int | None:
    v = E.const_value(e)
    return None if v is None or isinstance(v, bool) else v


# ---- logic ------------------------------------------------------------------------------------------

def _negate(e: Expr) -> Expr | None:
    """The comparison that is true exactly when ``e`` is false; None when ``e`` is not one."""
    if isinstance(e, Bin) and e.op in _NEGATED:
        op, swap = _NEGATED[e.op]
        return _compare(op, e.b, e.a) if swap else _compare(op, e.a, e.b)
    return None


def _not(a: Expr) -> Expr:
    if isinstance(a, Const):
        return E.logical_not(a)
    if isinstance(a, Not):
        return E.truth(a.a)
    flipped = _negate(a)
    if flipped is not None:
        return flipped
    if isinstance(a, Bin) and a.op == "and":
        return _or("or", _not(a.a), _not(a.b))
    if isinstance(a, Bin) and a.op == "or":
        return _and("and", _not(a.a), _not(a.b))
    return Not(a)


def negation(e) -> Expr:
    """``!e`` simplified: a flipped comparison, De Morgan, ``!!c`` as ``c != 0``."""
    return _not(E.lift(e))


def _complementary(a: Expr, b: Expr) -> bool:
    return a == Not(b) or b == Not(a) or (_negate(a) == b)


def _and(op, a: Expr, b: Expr) -> Expr:
    for x, y in ((a, b), (b, a)):
        if isinstance(x, Const):
            return E.truth(y) if x.value else Const(False)
    if a == b:
        return E.truth(a)
    if _complementary(a, b):
        return Const(False)
    for x, y in ((a, b), (b, a)):  # x && (x || z) == x
        if isinstance(y, Bin) and y.op == "or" and x in (y.a, y.b):
            return E.truth(x)
    return Bin("and", a, b)


def _or(op, a: Expr, b: Expr) -> Expr:
    for x, y in ((a, b), (b, a)):
        if isinstance(x, Const):
            return Const(True) if x.value else E.truth(y)
    if a == b:
        return E.truth(a)
    if _complementary(a, b):
        return Const(True)
    for x, y in ((a, b), (b, a)):  # x || (x && z) == x
        if isinstance(y, Bin) and y.op == "and" and x in (y.a, y.b):
            return E.truth(x)
    return Bin("or", a, b)


# ---- comparisons --------------------------------------------------------------------------------------

def _compare(op, a: Expr, b: Expr) -> Expr:
    """``a op b`` without the terms and the constant both sides share."""
    ta, ca = E.linear_form(a)
    tb, cb = E.linear_form(b)
    common = {t for t, k in ta.items() if tb.get(t) == k}
    base = min(ca, cb)
    if common or base:
        a = E.from_linear({t: k for t, k in ta.items() if t not in common}, ca - base)
        b = E.from_linear({t: k for t, k in tb.items() if t not in common}, cb - base)
    return E.binary(op, a, b)


# ---- arithmetic ---------------------------------------------------------------------------------------

def _sum(op, a: Expr, b: Expr) -> Expr:
    """The linear normal form, then a factor every product shares taken out."""
    e = E.binary(op, a, b)
    terms, c = E.linear_form(e)
    if len(terms) < 2 or not all(isinstance(t, Bin) and t.op == "mul" for t in terms):
        return e
    shared = None
    for t in terms:
        shared = {t.a, t.b} if shared is None else shared & {t.a, t.b}
    if not shared:
        return e
    first = next(iter(terms))
    factor = first.a if first.a in shared else first.b
    rest: dict = {}
    for t, k in terms.items():
        other = t.b if t.a == factor else t.a
        rest[other] = rest.get(other, 0) + k
    return E.add(E.mul(E.from_linear(rest, 0), factor), c)


def _mul(op, a: Expr, b: Expr) -> Expr:
    for x, y in ((a, b), (b, a)):  # min(p, q) * max(p, q) == p * q
        if (isinstance(x, Bin) and x.op == "min" and isinstance(y, Bin) and y.op == "max"
                and {x.a, x.b} == {y.a, y.b}):
            return E.mul(x.a, x.b)
    return E.binary(op, a, b)


def _floordiv(op, a: Expr, b: Expr) -> Expr:
    k = _int_const(b)
    if k is None or k == 0:
        return E.binary(op, a, b)
    inner = _int_const(a.b) if isinstance(a, Bin) and a.op == "floordiv" else None
    if k > 0 and inner is not None and inner > 0:  # (x // p) // q == x // (p * q) for p, q > 0
        return _floordiv(op, a.a, Const(inner * k))
    # (k*Q + R) // k == Q + R // k
    terms, c = E.linear_form(a)
    whole = {t: q // k for t, q in terms.items() if q % k == 0}
    c_whole, c_rest = divmod(c, k)
    if not whole and not c_whole:
        return E.binary(op, a, b)
    rest = E.from_linear({t: q for t, q in terms.items() if q % k}, c_rest)
    return E.add(E.from_linear(whole, c_whole), E.floordiv(rest, k))


def _mod(op, a: Expr, b: Expr) -> Expr:
    k = _int_const(b)
    if k is None or k == 0:
        return E.binary(op, a, b)
    if isinstance(a, Bin) and a.op == "mod" and a.b == b:  # (x % k) % k == x % k
        return a
    # (k*Q + R) % k == R % k, and a coefficient counts modulo k
    terms, c = E.linear_form(a)
    reduced = {t: (q % k if abs(q) >= abs(k) else q) for t, q in terms.items() if q % k}
    if reduced == terms and c % k == c:
        return E.binary(op, a, b)
    return E.mod(E.from_linear(reduced, c % k), k)


# ---- min and max --------------------------------------------------------------------------------------

def _extremum(op, a: Expr, b: Expr) -> Expr:
    if isinstance(a, Const) and not isinstance(b, Const):  # constants on the right
        a, b = b, a
    if a == b:
        return a
    dual = "max" if op == "min" else "min"
    for x, y in ((a, b), (b, a)):  # min(max(p, q), q) == q
        if isinstance(x, Bin) and x.op == dual and y in (x.a, x.b):
            return y
    bound, inner = _int_const(b), _int_const(a.b) if isinstance(a, Bin) and a.op in ("min", "max") else None
    if bound is not None and inner is not None:
        if a.op == op:  # min(min(p, 8), 16) == min(p, 8)
            return E.binary(op, a.a, Const(min(inner, bound) if op == "min" else max(inner, bound)))
        if (inner >= bound) if op == "min" else (inner <= bound):  # min(max(p, 16), 8) == 8
            return Const(bound)
    ta, ca = E.linear_form(a)
    tb, cb = E.linear_form(b)
    common = {t: k for t, k in ta.items() if tb.get(t) == k}
    shared_c = ca if ca == cb else 0
    if common or shared_c:  # min(c + u, c + v) == c + min(u, v)
        rest_a = E.from_linear({t: k for t, k in ta.items() if t not in common}, ca - shared_c)
        rest_b = E.from_linear({t: k for t, k in tb.items() if t not in common}, cb - shared_c)
        return E.add(E.from_linear(common, shared_c), _extremum(op, rest_a, rest_b))
    if op == "min":
        collapsed = _clamp_of_clamp(a, b)
        if collapsed is not None:
            return collapsed
    return E.binary(op, a, b)


def _clamp_of_clamp(a: Expr, b: Expr) -> Expr | None:
    """``min(max(min(max(v, 0), C) - c, 0), M)`` is ``min(max(v - c, 0), M)`` when ``c >= 0`` and
    ``C >= M + c``: the inner upper bound only cuts values the outer one cuts anyway."""
    upper = _int_const(b)
    if upper is None or not (isinstance(a, Bin) and a.op == "max" and _int_const(a.b) == 0):
        return None
    terms, c0 = E.linear_form(a.a)
    if len(terms) != 1 or c0 > 0:
        return None
    (inner, k), = terms.items()
    if k != 1 or not (isinstance(inner, Bin) and inner.op == "min"):
        return None
    inner_upper = _int_const(inner.b)
    if inner_upper is None or inner_upper < upper - c0:
        return None
    v = inner.a
    if isinstance(v, Bin) and v.op == "max" and _int_const(v.b) == 0:
        v = v.a
    elif not E.is_nonneg(v):  # min(v, C) is the inner clamp only when v >= 0
        return None
    return E.emin(E.emax(E.add(v, c0), 0), upper)


_RULES = {"add": _sum, "sub": _sum, "mul": _mul, "floordiv": _floordiv, "mod": _mod, "min": _extremum,
          "max": _extremum, "and": _and, "or": _or, **{op: _compare for op in _NEGATED}}
