"""Symbolic integer expressions: dynamic dimensions, loop indices, offsets and valid shapes.

Expressions are immutable and compared structurally. The builders (`add`, `mul`, ...) normalise
sums into a canonical linear form, so ``(i*32 + 32) - i*32`` folds to ``32``: slice extents and
tail sizes stay readable and often become plain ints.

An expression is evaluated against an environment ``{symbol name: int}``; `compile_expr` turns it
into a Python closure once, so the runtime never walks the tree per element.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Callable, Union


class Expr:
    """Base class of expression nodes."""

    __slots__ = ()

    def __str__(self) -> str:
        return render(self)

    def __repr__(self) -> str:
        return f"Expr({render(self)})"


@dataclass(frozen=True, repr=False)
class Const(Expr):
    value: Union[int, bool]


@dataclass(frozen=True, repr=False)
class Sym(Expr):
    """A free symbol: a dynamic dimension (``x.shape[0]``, a named dim ``N``) or a loop index.

    ``nonneg`` says the value is never negative (a size, or the index of a loop starting at 0 or
    above); folding relies on it (``max(n, 0)`` is ``n``). It is a fact about the symbol, not part
    of its identity: symbols compare and hash by name.
    """

    name: str
    nonneg: bool = field(default=False, compare=False)


@dataclass(frozen=True, repr=False)
class Bin(Expr):
    op: str  # add sub mul floordiv mod min max eq ne lt le gt ge and or
    a: Expr
    b: Expr


@dataclass(frozen=True, repr=False)
class Not(Expr):
    a: Expr


@dataclass(frozen=True, repr=False)
class Load(Expr):
    """An element of a kernel argument tensor, read at run time (value-dependent control flow)."""

    param: str
    indices: tuple


Dim = Union[int, Expr]

_ARITH = {"add": "+", "sub": "-", "mul": "*", "floordiv": "//", "mod": "%"}
_CMP = {"eq": "==", "ne": "!=", "lt": "<", "le": "<=", "gt": ">", "ge": ">="}
_LOGIC = {"and": "and", "or": "or"}
_PY = {**_ARITH, **_CMP, **_LOGIC}
_FOLD = {
    "add": lambda a, b: a + b, "sub": lambda a, b: a - b, "mul": lambda a, b: a * b,
    "floordiv": lambda a, b: a // b, "mod": lambda a, b: a % b,
    "min": min, "max": max,
    "eq": lambda a, b: a == b, "ne": lambda a, b: a != b, "lt": lambda a, b: a < b,
    "le": lambda a, b: a <= b, "gt": lambda a, b: a > b, "ge": lambda a, b: a >= b,
    "and": lambda a, b: bool(a) and bool(b), "or": lambda a, b: bool(a) or bool(b),
}


def const(v) -> Const:
    return Const(v)


def lift(x) -> Expr:
    """An Expr for an int/bool or Expr."""
    if isinstance(x, Expr):
        return x
    if isinstance(x, bool):
        return Const(x)
    if isinstance(x, int):
        return Const(int(x))
    raise TypeError(f"cannot use {type(x).__name__} {x!r} as a symbolic integer")


def is_const(x) -> bool:
    return not isinstance(x, Expr) or isinstance(x, Const)


def const_value(x):
    """The int value of an int or Const; None for a non-constant expression."""
    if isinstance(x, Const):
        return x.value
    if isinstance(x, Expr):
        return None
    return x


def simplify_dim(x) -> Dim:
    """An int when the expression is constant, else the expression."""
    v = const_value(x)
    return int(v) if v is not None and not isinstance(v, bool) else (v if v is not None else x)


# ---- linear normal form for + - and multiplication by constants -------------------------------

def _linear(e: Expr) -> tuple[dict, int]:
    if isinstance(e, Const):
        return {}, int(e.value)
    if isinstance(e, Bin) and e.op in ("add", "sub"):
        ta, ca = _linear(e.a)
        tb, cb = _linear(e.b)
        sign = 1 if e.op == "add" else -1
        terms = dict(ta)
        for t, c in tb.items():
            terms[t] = terms.get(t, 0) + sign * c
        return terms, ca + sign * cb
    if isinstance(e, Bin) and e.op == "mul":
        ka, kb = const_value(e.a), const_value(e.b)
        if ka is not None or kb is not None:
            k, other = (ka, e.b) if ka is not None else (kb, e.a)
            t, c = _linear(other)
            return {term: coef * k for term, coef in t.items()}, c * k
    return {e: 1}, 0


def linear_form(e) -> tuple[dict, int]:
    """``e`` as ``({term: coefficient}, constant)``: sums and multiples by constants are opened,
    anything else is a term."""
    return _linear(lift(e))


def from_linear(terms: dict, c: int) -> Expr:
    """The normal-form expression of ``sum(k * term) + c``."""
    return _from_linear(terms, c)


def _from_linear(terms: dict, c: int) -> Expr:
    # positive terms first, so ``N - i * 32`` rather than ``i * -32 + N``; plain symbols before
    # compound terms, so ``x + min(y, z)``
    items = sorted(((t, k) for t, k in terms.items() if k != 0),
                   key=lambda tk: (tk[1] < 0, not isinstance(tk[0], Sym), render(tk[0])))
    out: Expr | None = None
    for t, k in items:
        piece = t if abs(k) == 1 else Bin("mul", t, Const(abs(k)))
        if out is None:
            if k > 0:
                out = piece
            else:  # every term so far negative: lead with the constant, ``32 - N`` / ``0 - N``
                out, c = Bin("sub", Const(c), piece), 0
        else:
            out = Bin("add" if k > 0 else "sub", out, piece)
    if out is None:
        return Const(c)
    if c > 0:
        return Bin("add", out, Const(c))
    if c < 0:
        return Bin("sub", out, Const(-c))
    return out


def binary(op: str, a, b) -> Expr:
    """Build ``a <op> b`` with constant folding and linear normalisation."""
    a, b = lift(a), lift(b)
    if isinstance(a, Const) and isinstance(b, Const):
        if op in ("floordiv", "mod") and b.value == 0:
            raise ZeroDivisionError(f"symbolic {op} by zero")
        return Const(_FOLD[op](a.value, b.value))
    if op in ("add", "sub") or (op == "mul" and (isinstance(a, Const) or isinstance(b, Const))):
        if op == "mul":
            k, other = (a.value, b) if isinstance(a, Const) else (b.value, a)
            if k == 0:
                return Const(0)
        return _from_linear(*_linear(Bin(op, a, b)))
    if op in ("min", "max") and a == b:
        return a
    if op == "max":  # sizes and loop indices are never negative
        for x, y in ((a, b), (b, a)):
            if isinstance(y, Const) and y.value <= 0 and is_nonneg(x):
                return x
    if op == "floordiv" and isinstance(b, Const) and b.value == 1:
        return a
    if op in ("floordiv", "mod"):
        q = exact_quotient(a, b)
        if q is not None:  # ``n * 168 // (n * 2)`` is 84: the divisor divides every term
            return q if op == "floordiv" else Const(0)
    if op == "mod" and isinstance(b, Const) and b.value == 1:
        return Const(0)
    if op in ("eq", "le", "ge") and a == b:
        return Const(True)
    if op in ("ne", "lt", "gt") and a == b:
        return Const(False)
    if op in _CMP:  # compare a - b against 0 when that folds to a constant
        diff = binary("sub", a, b) if not isinstance(a, (Load,)) else None
        if isinstance(diff, Const):
            return Const(_FOLD[op](diff.value, 0))
    # A constant that decides the result folds, a neutral one goes when the other side is 0/1
    # already; ``n && 20`` is kept as written (upstream prints it so), simplify() makes it n != 0.
    if op in _LOGIC:
        for x, y in ((a, b), (b, a)):
            if isinstance(x, Const):
                if bool(x.value) == (op == "or"):
                    return Const(op == "or")
                if is_truth_value(y):
                    return y
    return Bin(op, a, b)


def _monomial(e: Expr) -> tuple[int, list]:
    """``e`` as ``coefficient * product of factors`` (factors that are not constants or products)."""
    if isinstance(e, Const) and not isinstance(e.value, bool) and isinstance(e.value, int):
        return e.value, []
    if isinstance(e, Bin) and e.op == "mul":
        ka, fa = _monomial(e.a)
        kb, fb = _monomial(e.b)
        return ka * kb, fa + fb
    terms, c = _linear(e)
    if c == 0 and len(terms) == 1:
        (t, k), = terms.items()
        if t is not e:
            kt, ft = _monomial(t)
            return k * kt, ft
    return 1, [e]


def exact_quotient(a: Expr, b: Expr) -> Expr | None:
    """``a / b`` when ``b`` (a product of a constant and factors) divides every term of ``a``
    exactly (its constant divides the term's, its factors are among the term's), else None."""
    kb, fb = _monomial(b)
    if kb == 0 or (not fb and abs(kb) == 1):
        return None
    terms, c = _linear(a)
    if c % kb or (c and fb):
        return None
    out: Expr = Const(c // kb)
    for t, k in terms.items():
        kt, ft = _monomial(t)
        kt *= k
        if kt % kb:
            return None
        rest = list(ft)
        for f in fb:
            if f not in rest:
                return None
            rest.remove(f)
        piece: Expr = Const(kt // kb)
        for f in rest:
            piece = binary("mul", piece, f)
        out = binary("add", out, piece)
    return out


def is_truth_value(e: Expr) -> bool:
    """True when ``e`` is always 0 or 1 (a comparison, ``and`` / ``or`` / ``not``, a bool)."""
    if isinstance(e, Const):
        return isinstance(e.value, bool) or e.value in (0, 1)
    return isinstance(e, Not) or (isinstance(e, Bin) and (e.op in _CMP or e.op in _LOGIC))


def truth(e) -> Expr:
    """``e`` as a 0/1 truth value: ``n && 20`` is ``n != 0``, not ``n``."""
    e = lift(e)
    if isinstance(e, Const):
        return Const(bool(e.value))
    return e if is_truth_value(e) else Bin("ne", e, Const(0))


def is_nonneg(e) -> bool:
    """True when ``e`` is known never to be negative."""
    if isinstance(e, Const):
        return e.value >= 0
    if isinstance(e, Sym):
        return e.nonneg
    if isinstance(e, Bin) and e.op in ("add", "mul", "floordiv", "min", "max", "mod"):
        return is_nonneg(e.a) and is_nonneg(e.b)
    return False


def add(a, b): return binary("add", a, b)
def sub(a, b): return binary("sub", a, b)
def mul(a, b): return binary("mul", a, b)
def floordiv(a, b): return binary("floordiv", a, b)
def mod(a, b): return binary("mod", a, b)
def emin(a, b): return binary("min", a, b)
def emax(a, b): return binary("max", a, b)


def ceildiv(a, b) -> Expr:
    """``ceil(a / b)`` for non-negative a and positive b."""
    return floordiv(add(a, sub(b, 1)), b)


def logical_not(a) -> Expr:
    a = lift(a)
    if isinstance(a, Const):
        return Const(not a.value)
    return Not(a)


def clamp_extent(valid, offset, size) -> Dim:
    """Valid extent of a view: ``min(max(valid - offset, 0), size)`` (upstream's view rule)."""
    return simplify_dim(emin(emax(sub(valid, offset), 0), size))


# ---- printing ---------------------------------------------------------------------------------

_PREC = {"or": 1, "and": 2, **{k: 3 for k in _CMP}, "add": 4, "sub": 4, "mul": 5, "floordiv": 5, "mod": 5}


def render(e, parent_prec: int = 0) -> str:
    """Readable infix text of an expression (ints print as themselves)."""
    if not isinstance(e, Expr):
        return str(e)
    if isinstance(e, Const):
        return str(e.value)
    if isinstance(e, Sym):
        return e.name
    if isinstance(e, Load):
        return f"{e.param}[{', '.join(render(i) for i in e.indices)}]"
    if isinstance(e, Not):
        return f"not {render(e.a, 6)}"
    if e.op in ("min", "max"):
        return f"{e.op}({render(e.a)}, {render(e.b)})"
    prec = _PREC[e.op]
    right_prec = prec + 1 if e.op in ("sub", "floordiv", "mod") else prec
    text = f"{render(e.a, prec)} {_PY[e.op]} {render(e.b, right_prec)}"
    return f"({text})" if prec < parent_prec else text


def render_dims(dims) -> str:
    return "[" + ", ".join(render(d) for d in dims) + "]"


def render_attr(v) -> str:
    """An op attribute as text: dims as a list, dtypes by their short name, scalars as text."""
    if isinstance(v, tuple):
        return render_dims(v)
    if hasattr(v, "short"):
        return v.short
    return render(v)


# ---- evaluation -------------------------------------------------------------------------------

def free_symbols(e) -> set:
    out: set = set()

    def walk(x):
        if isinstance(x, Sym):
            out.add(x.name)
        elif isinstance(x, Bin):
            walk(x.a)
            walk(x.b)
        elif isinstance(x, Not):
            walk(x.a)
        elif isinstance(x, Load):
            for i in x.indices:
                walk(i)

    walk(e)
    return out


def _source(e) -> str:
    if not isinstance(e, Expr):
        return repr(e)
    if isinstance(e, Const):
        return repr(e.value)
    if isinstance(e, Sym):
        return f"env[{e.name!r}]"
    if isinstance(e, Load):
        return f"load({e.param!r}, ({''.join(_source(i) + ', ' for i in e.indices)}))"
    if isinstance(e, Not):
        return f"(not {_source(e.a)})"
    if e.op in ("min", "max"):
        return f"{e.op}({_source(e.a)}, {_source(e.b)})"
    if e.op in _LOGIC:  # 0/1 like upstream's && and ||, never one of the operands
        return f"(bool({_source(e.a)}) {e.op} bool({_source(e.b)}))"
    return f"({_source(e.a)} {_PY[e.op]} {_source(e.b)})"


_COMPILED: dict = {}


def compile_expr(e) -> Callable:
    """A function ``f(env, load)`` computing ``e``; ``load(param, indices)`` reads tensor elements."""
    fn = _COMPILED.get(e)
    if fn is None:
        fn = eval(f"lambda env, load: {_source(e)}", {"min": min, "max": max})  # noqa: S307
        _COMPILED[e] = fn
    return fn


def evaluate(e, env: dict, load=None):
    """The value of ``e`` (an int/bool or Expr) under ``env``."""
    if not isinstance(e, Expr):
        return e
    if isinstance(e, Const):
        return e.value
    return compile_expr(e)(env, load)
