"""Can integer conditions hold together? (``SymbolicScalar.check``, upstream's ``SatStatus``.)

The answer is one of three, and it is never wrong; it may be ``UNKNOWN`` where a complete
solver would decide:

- ``SAT``: the conditions hold once the values the equalities force on symbols are put in (every
  condition then folds to true), so they can hold together;
- ``UNSAT``: the conditions contradict each other;
- ``UNKNOWN``: neither could be shown.

How. The conjunction is split into atoms (``a && b`` gives both; ``!(x < y)`` is ``y <= x``).
An atom comparing two integer-linear sides is a row ``sum(k * term) + c (op) 0``; a term is a
symbol or any other sub-expression taken as an unknown integer (``n // 8``, ``min(a, b)``, a
tensor read); an atom with a product of two unknowns is not linear and is only folded (as
upstream). Equality rows: the gcd of the coefficients must divide the constant; a coefficient of
+-1 solves the row for its term, which is substituted everywhere, to a fixed point; what is left
goes through fraction-free integer elimination. Inequality rows become bounds on their linear part
(strict made non-strict first, then divided by the gcd with the rounding that keeps integers), and
a lower bound above an upper one is a contradiction; so is ``t != v`` where ``t`` is pinned to
``v``. Symbols the equalities pin to a constant are put into every atom, which then folds, and the
rounds repeat while that pins more. Division and modulo fold with this package's semantics
(Python's floor rounding; upstream's C++ truncates toward zero).
"""

from __future__ import annotations

import enum
import math

from . import expr as E
from .expr import Bin, Const, Expr, Load, Not, Sym
from .simplify import negation

_MAX_ROUNDS = 8
_STRICT = {"gt", "lt"}


class SatStatus(enum.Enum):
    """The answer of `check_conditions` (upstream's ``pypto.SatStatus``)."""

    SAT = "SAT"
    UNSAT = "UNSAT"
    UNKNOWN = "UNKNOWN"

    def __repr__(self) -> str:
        return f"SatStatus.{self.name}"


class _Contradiction(Exception):
    pass


def check_conditions(conds) -> SatStatus:
    """Whether the conjunction of ``conds`` (Exprs or ints) can hold; see the module docstring."""
    atoms = [a for c in conds for a in _split(E.lift(c))]
    pins: dict = {}
    for _ in range(_MAX_ROUNDS):
        atoms = [_substitute(a, pins) for a in atoms] if pins else atoms
        if any(isinstance(a, Const) and not a.value for a in atoms):
            return SatStatus.UNSAT
        atoms = [a for a in atoms if not isinstance(a, Const)]
        if not atoms:
            return SatStatus.SAT
        try:
            solved = _linear_reasoning(atoms)
        except _Contradiction:
            return SatStatus.UNSAT
        # only a symbol's pin can make the atoms fold for a SAT: an opaque term such as x % 4
        # pinned to 7 may have no value of x behind it
        new = {t: Const(c) for t, (terms, c) in solved.items() if isinstance(t, Sym) and not terms and t not in pins}
        if not new:
            return SatStatus.UNKNOWN
        pins.update(new)
    return SatStatus.UNKNOWN


# ---- atoms ----------------------------------------------------------------------------------------------

def _split(e: Expr) -> list:
    if isinstance(e, Bin) and e.op == "and":
        return _split(e.a) + _split(e.b)
    if isinstance(e, Not):
        n = negation(e.a)
        return [n] if isinstance(n, Not) else _split(n)
    return [E.truth(e)]


def _substitute(e: Expr, pins: dict) -> Expr:
    """``e`` with pinned symbols replaced by their values, folded."""
    if isinstance(e, Sym):
        return pins.get(e, e)
    if isinstance(e, Not):
        return E.logical_not(_substitute(e.a, pins))
    if isinstance(e, Load):
        return Load(e.param, tuple(_substitute(i, pins) for i in e.indices))
    if isinstance(e, Bin):
        a, b = _substitute(e.a, pins), _substitute(e.b, pins)
        try:
            return E.binary(e.op, a, b)
        except ZeroDivisionError:  # a divisor pinned to 0: leave the atom undecided
            return Bin(e.op, a, b)
    return e


def _affine(e: Expr) -> tuple[dict, int] | None:
    terms, c = E.linear_form(e)
    if any(isinstance(t, Bin) and t.op == "mul" for t in terms):
        return None
    return terms, int(c)


def _rows(atoms):
    eq, ge, ne = [], [], []
    for a in atoms:
        if not (isinstance(a, Bin) and a.op in ("eq", "ne", "lt", "le", "gt", "ge")):
            continue
        left, right = _affine(a.a), _affine(a.b)
        if left is None or right is None:
            continue
        terms = dict(left[0])
        for t, k in right[0].items():
            terms[t] = terms.get(t, 0) - k
        row = (_clean(terms), left[1] - right[1])  # left - right (op) 0
        if a.op == "eq":
            eq.append(row)
        elif a.op == "ne":
            ne.append(row)
        else:
            flip = a.op in ("lt", "le")  # left - right <= 0  is  right - left >= 0
            terms, c = _scaled(row, -1) if flip else row
            ge.append((terms, c - 1) if a.op in _STRICT else (terms, c))
    return eq, ge, ne


# ---- linear rows: {term: coefficient}, constant ---------------------------------------------------------

def _clean(terms: dict) -> dict:
    return {t: k for t, k in terms.items() if k}


def _scaled(row, k: int):
    terms, c = row
    return {t: v * k for t, v in terms.items()}, c * k


def _plus(a, b, k: int = 1):
    """``a + k * b``."""
    terms = dict(a[0])
    for t, v in b[0].items():
        terms[t] = terms.get(t, 0) + k * v
    return _clean(terms), a[1] + k * b[1]


def _apply(row, solved: dict):
    terms, c = row
    out = ({}, c)
    for t, k in terms.items():
        out = _plus(out, solved[t], k) if t in solved else _plus(out, ({t: 1}, 0), k)
    return out


def _order(t) -> tuple:
    return (not isinstance(t, Sym), E.render(t))


def _normal_equality(row):
    """The row divided by the gcd of its coefficients; a contradiction when that leaves a fraction."""
    terms, c = row
    if not terms:
        if c:
            raise _Contradiction
        return None
    g = math.gcd(*terms.values())
    if c % g:
        raise _Contradiction
    return {t: k // g for t, k in terms.items()}, c // g


def _linear_reasoning(atoms) -> dict:
    """Raise `_Contradiction` or return the solved terms, ``{term: row}`` (a constant row pins)."""
    eq, ge, ne = _rows(atoms)
    solved: dict = {}
    pending = list(eq)
    residual = []
    while pending:
        row = _normal_equality(_apply(pending.pop(0), solved))
        if row is None:
            continue
        units = sorted((t for t, k in row[0].items() if abs(k) == 1), key=_order)
        if not units:
            residual.append(row)
            continue
        t = units[0]
        k = row[0][t]
        rest = ({u: v for u, v in row[0].items() if u != t}, row[1])
        value = _scaled(rest, -k)  # k * t + rest == 0 with k = +-1
        for u in list(solved):
            solved[u] = _apply(solved[u], {t: value})
        solved[t] = value
        pending.extend(residual)  # the new substitution may give them a unit coefficient
        residual = []
    residual = _eliminate(residual)
    bounds: dict = {}
    for row in residual:
        _bound(bounds, row, "eq")
    for row in ge:
        row = _apply(row, solved)
        if not row[0]:
            if row[1] < 0:
                raise _Contradiction
            continue
        _bound(bounds, row, "ge")
    for row in ne:
        row = _apply(row, solved)
        if not row[0]:
            if row[1] == 0:
                raise _Contradiction
            continue
        key, sign, g = _canonical(row[0])
        if row[1] % g == 0:
            value = -row[1] // g * sign
            lo, hi = bounds.get(key, (None, None))
            if lo == hi == value:
                raise _Contradiction
    return solved


def _eliminate(rows: list) -> list:
    """Fraction-free integer elimination; every derived row holds for every integer solution.
    Returns the rows left (each reduced by its gcd)."""
    rows = [r for r in rows if r[0]]
    out = []
    while rows:
        pivot_row = rows.pop(0)
        t = min(pivot_row[0], key=lambda u: (abs(pivot_row[0][u]), _order(u)))
        a = pivot_row[0][t]
        reduced = []
        for row in rows:
            b = row[0].get(t, 0)
            derived = _plus(_scaled(row, a), pivot_row, -b) if b else row
            derived = _normal_equality(derived)
            if derived is not None:
                reduced.append(derived)
        out.append(pivot_row)
        rows = reduced
    return out


def _canonical(terms: dict):
    """(key, sign, g): ``terms == sign * g * L`` with ``L`` (the key) led by a positive coefficient."""
    g = math.gcd(*terms.values())
    first = min(terms, key=_order)
    sign = 1 if terms[first] > 0 else -1
    key = frozenset((t, k * sign // g) for t, k in terms.items())
    return key, sign, g


def _bound(bounds: dict, row, kind: str) -> None:
    """Tighten the bounds of the row's linear part ``L``: ``sign*g*L + c >= 0`` (or ``== 0``)."""
    key, sign, g = _canonical(row[0])
    c = row[1]
    lo, hi = bounds.get(key, (None, None))
    if kind == "eq":
        value = -c // (g * sign)
        lo = value if lo is None else max(lo, value)
        hi = value if hi is None else min(hi, value)
    elif sign > 0:  # L >= -c / g
        value = -(c // g)
        lo = value if lo is None else max(lo, value)
    else:  # L <= c / g
        value = c // g
        hi = value if hi is None else min(hi, value)
    if lo is not None and hi is not None and lo > hi:
        raise _Contradiction
    bounds[key] = (lo, hi)
