"""SymbolicScalar: an integer known only at run time (dynamic dims, loop indices, element reads).

Arithmetic and comparisons build expressions; ``bool()`` on a comparison inside a kernel becomes a
runtime branch (both sides are traced). Converting to a Python int works only when the value is
constant.
"""

from __future__ import annotations

from typing import Union

from ..errors import ArgumentTypeError, KernelSyntaxError, user_loc
from ..ir import expr as E
from ..ir.simplify import simplify
from ..ir.solver import SatStatus, check_conditions
from .scalar_text import dump


def _expr(x):
    if isinstance(x, SymbolicScalar):
        return x.expr
    if isinstance(x, (bool, int)):
        return E.Const(x)
    if hasattr(x, "__index__") and not isinstance(x, float):
        return E.Const(int(x.__index__()))
    return NotImplemented


class SymbolicScalar:
    """An integer expression evaluated at run time.

    Supports ``+ - * // % /`` (``/`` is integer division, as upstream; inside a kernel a runtime
    size divided with ``/`` must divide exactly, checked before each call), comparisons,
    ``& | ~`` as logical operators, ``.min(other)`` / ``.max(other)``, ``pypto.min``,
    ``pypto.max`` and ``pypto.ceildiv``.
    """

    __slots__ = ("expr",)

    def __init__(self, value=0, concrete=None):
        """``SymbolicScalar(7)`` a constant, ``SymbolicScalar("n")`` the runtime symbol ``n``,
        ``SymbolicScalar("n", 7)`` a named constant (the value is what computes; the name is a
        label), ``SymbolicScalar(other)`` a copy."""
        if concrete is not None:
            if not isinstance(value, str) or isinstance(concrete, bool) or not isinstance(concrete, int):
                raise KernelSyntaxError("pypto.symbolic_scalar(name, value) takes a str name and an int value",
                                        got=f"({value!r}, {concrete!r})", loc=user_loc(2))
            value = concrete
        if isinstance(value, SymbolicScalar):
            value = value.expr
        elif isinstance(value, str):
            if not value:
                raise KernelSyntaxError("pypto.symbolic_scalar: a symbol needs a non-empty name", got="''",
                                        loc=user_loc(2))
            value = E.Sym(value)
        elif not isinstance(value, (int, E.Expr)):
            if hasattr(value, "__index__") and not isinstance(value, float):
                value = int(value.__index__())
            else:
                raise KernelSyntaxError("pypto.symbolic_scalar takes an int, a name or another symbolic scalar",
                                        got=f"{type(value).__name__} {value!r}", loc=user_loc(2))
        self.expr = E.lift(value)

    # -- construction helpers
    @staticmethod
    def wrap(x):
        """An int for a constant expression, else a SymbolicScalar."""
        if isinstance(x, E.Expr):
            v = E.const_value(x)
            if v is not None:
                return v
            return SymbolicScalar(x)
        return x

    def _true_div(self, other, reverse=False):
        """Upstream's ``/`` is integer division. In a kernel, a runtime size divided with ``/`` must
        divide exactly (checked before each call): ``x.shape[0] / 8`` silently rounding down would
        skip rows; ``//`` and `ceildiv` say which rounding is meant."""
        out = self._bin("floordiv", other, reverse)
        if out is NotImplemented:
            return out
        from .builder import current

        tracer = current()
        if tracer is not None:
            num, den = (out.expr.a, out.expr.b) if isinstance(out.expr, E.Bin) and out.expr.op == "floordiv" \
                else ((_expr(other), self.expr) if reverse else (self.expr, _expr(other)))
            tracer.require_exact(num, den, user_loc(3))
        return out

    def _bin(self, op, other, reverse=False):
        o = _expr(other)
        if o is NotImplemented:
            return NotImplemented
        a, b = (o, self.expr) if reverse else (self.expr, o)
        return SymbolicScalar(E.binary(op, a, b))

    def __add__(self, o): return self._bin("add", o)
    def __radd__(self, o): return self._bin("add", o, True)
    def __sub__(self, o): return self._bin("sub", o)
    def __rsub__(self, o): return self._bin("sub", o, True)
    def __mul__(self, o): return self._bin("mul", o)
    def __rmul__(self, o): return self._bin("mul", o, True)
    def __floordiv__(self, o): return self._bin("floordiv", o)
    def __rfloordiv__(self, o): return self._bin("floordiv", o, True)
    def __truediv__(self, o): return self._true_div(o)
    def __rtruediv__(self, o): return self._true_div(o, True)
    def __mod__(self, o): return self._bin("mod", o)
    def __rmod__(self, o): return self._bin("mod", o, True)
    def __neg__(self): return SymbolicScalar(E.sub(0, self.expr))
    def __pos__(self): return self
    def __eq__(self, o): return self._bin("eq", o)  # type: ignore[override]
    def __ne__(self, o): return self._bin("ne", o)  # type: ignore[override]
    def __lt__(self, o): return self._bin("lt", o)
    def __le__(self, o): return self._bin("le", o)
    def __gt__(self, o): return self._bin("gt", o)
    def __ge__(self, o): return self._bin("ge", o)
    def __and__(self, o): return self._bin("and", o)
    def __rand__(self, o): return self._bin("and", o, True)
    def __or__(self, o): return self._bin("or", o)
    def __ror__(self, o): return self._bin("or", o, True)
    def __invert__(self): return SymbolicScalar(E.logical_not(self.expr))
    def __hash__(self): return hash(self.expr)

    def min(self, other) -> "SymbolicScalar":
        return SymbolicScalar(E.emin(self.expr, _expr(other)))

    def max(self, other) -> "SymbolicScalar":
        return SymbolicScalar(E.emax(self.expr, _expr(other)))

    # -- queries
    def is_concrete(self) -> bool:
        return isinstance(self.expr, E.Const)

    def concrete(self) -> int:
        if not isinstance(self.expr, E.Const):
            raise KernelSyntaxError("symbolic scalar has no concrete value at compile time",
                                    got=E.render(self.expr), loc=user_loc(2))
        return self.expr.value

    def is_symbol(self) -> bool:
        return isinstance(self.expr, E.Sym)

    def is_expression(self) -> bool:
        return isinstance(self.expr, (E.Bin, E.Not, E.Load))

    def is_immediate(self) -> bool:
        return self.is_concrete()

    def __bool__(self) -> bool:
        if isinstance(self.expr, E.Const):
            return bool(self.expr.value)
        from .builder import current

        tracer = current()
        if tracer is None:
            raise KernelSyntaxError(
                "a symbolic condition can only be decided inside a @pypto.jit kernel",
                got=E.render(self.expr), loc=user_loc(2))
        return tracer.decide(self.expr)

    def __int__(self) -> int:
        return int(self.concrete())

    def __index__(self) -> int:
        if isinstance(self.expr, E.Const):
            return int(self.expr.value)
        raise KernelSyntaxError(
            "a symbolic value is used where Python needs a plain int",
            expected="an int known at compile time (a static dim or a constant)",
            got=f"the runtime value {E.render(self.expr)}", loc=user_loc(2),
            hint="use pypto.loop(...) instead of range(...) for runtime trip counts; "
                 "symbolic values work as view offsets, loop bounds and in conditions")

    def __repr__(self) -> str:
        return f"SymbolicScalar({dump(self.expr)})"

    def __str__(self) -> str:
        """Upstream's text: fully parenthesised, ``((b>=2)*(b<8))`` (see `scalar_text`)."""
        return dump(self.expr)

    # -- upstream's expression tools
    def simplify(self) -> "SymbolicScalar":
        """The same value as a simpler expression (``(x - y) + y`` is ``x``); see
        `pypto.ir.simplify` for the rules. Every rule keeps the value for every value of the
        symbols."""
        return SymbolicScalar(simplify(self.expr))

    def as_variable(self) -> None:
        """Upstream marks the scalar as an intermediate variable of the generated code (in place).

        The simulator evaluates each expression once per use from the bound sizes, so there is
        nothing to mark: the value and the program are unchanged."""
        return None

    @staticmethod
    def check(conds) -> "SatStatus":
        """Whether the conditions can hold together: ``SatStatus.SAT`` (they hold, once what the
        equalities force is put in), ``UNSAT`` (they contradict each other) or ``UNKNOWN``; see
        `pypto.ir.solver`."""
        if isinstance(conds, (SymbolicScalar, str, bytes)) or not hasattr(conds, "__iter__"):
            raise ArgumentTypeError("SymbolicScalar.check takes a list of conditions",
                                    expected="a list of SymbolicScalar / int / bool", got=type(conds).__name__,
                                    param="conds", loc=user_loc(2))
        exprs = []
        for i, c in enumerate(conds):
            if isinstance(c, SymbolicScalar):
                exprs.append(c.expr)
            elif isinstance(c, int):  # bool included
                exprs.append(E.lift(c))
            else:
                raise ArgumentTypeError(f"SymbolicScalar.check: conds[{i}] is not a condition",
                                        expected="a SymbolicScalar, int or bool", got=f"{type(c).__name__} {c!r}",
                                        param="conds", loc=user_loc(2))
        return check_conditions(exprs)


SymInt = Union[int, SymbolicScalar]  # upstream's annotation for "an int or a symbolic scalar"


def to_expr(x, *, what: str = "value"):
    """Expr or int for an int / SymbolicScalar; anything else is a clear error."""
    if isinstance(x, SymbolicScalar):
        return E.simplify_dim(x.expr)
    if isinstance(x, bool):
        raise KernelSyntaxError(f"{what} must be an int or a symbolic scalar", got="bool",
                                loc=user_loc(2))
    if isinstance(x, int):
        return x
    if hasattr(x, "__index__"):
        return int(x.__index__())
    raise KernelSyntaxError(f"{what} must be an int or a symbolic scalar",
                            got=f"{type(x).__name__} {x!r}", loc=user_loc(2))


def sym_min(a, b):
    """``pypto.min``: the smaller of two ints or symbolic scalars."""
    if isinstance(a, SymbolicScalar) or isinstance(b, SymbolicScalar):
        return SymbolicScalar.wrap(E.emin(to_expr(a), to_expr(b)))
    return min(a, b)


def sym_max(a, b):
    """``pypto.max``: the larger of two ints or symbolic scalars."""
    if isinstance(a, SymbolicScalar) or isinstance(b, SymbolicScalar):
        return SymbolicScalar.wrap(E.emax(to_expr(a), to_expr(b)))
    return max(a, b)


def ceildiv(a, b):
    """``ceil(a / b)`` for ints or symbolic scalars."""
    if isinstance(a, SymbolicScalar) or isinstance(b, SymbolicScalar):
        return SymbolicScalar.wrap(E.ceildiv(to_expr(a), to_expr(b)))
    return -(-a // b)


def builtin_min(*args, **kw):
    """Builtin ``min`` as seen inside kernels: symbolic arguments use ``pypto.min``."""
    if len(args) == 2 and not kw and any(isinstance(a, SymbolicScalar) for a in args):
        return sym_min(*args)
    return min(*args, **kw)


def builtin_max(*args, **kw):
    if len(args) == 2 and not kw and any(isinstance(a, SymbolicScalar) for a in args):
        return sym_max(*args)
    return max(*args, **kw)
