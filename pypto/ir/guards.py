"""Size guards: relations between runtime sizes that the compiled program assumes (equal sizes,
an assigned value that fits its slice, a ``/`` of sizes that divides exactly).

Tracing cannot know whether two DYNAMIC dims agree (``x.shape[0]`` and ``y.shape[0]`` are
different symbols that usually hold the same size), so an op that needs them equal (an
elementwise op, a matmul's K, a concat, a slice assignment) records a `SizeGuard` instead of
failing. The compiled version keeps its guards, deduplicated, as one generated function that a
call evaluates from the bound sizes before anything runs: a mismatch is an error naming both
sizes and the kernel line, never a partly computed result (the cropped tile would otherwise
compute the common part and leave the rest of the output untouched).

A runtime size of 1 does not broadcast: broadcasting is decided when the kernel is compiled, from
the annotations (upstream's compiler does the same), so a DYNAMIC dim that is 1 at a call is a
mismatch; declare the dim as 1 to broadcast it.

Only guards over the signature's size symbols are checked before the run; a relation through a
loop index is reduced to the sizes it needs when the two extents have the same form
(``min(max(x.shape[0] - b*32, 0), 32)`` and the same over ``y.shape[0]`` need
``x.shape[0] == y.shape[0]``). Relations of other forms are not checked.
"""

from __future__ import annotations

from dataclasses import dataclass

from . import expr as E


@dataclass(frozen=True)
class SizeGuard:
    """``lhs == rhs`` (``rel`` "eq"), ``lhs <= rhs`` ("le") or ``lhs % rhs == 0`` ("exact": a
    true division of sizes, ``lhs / rhs``) at every call where all of ``when`` hold (the runtime
    branch taken)."""

    lhs: object  # Dim
    rhs: object  # Dim
    what: str  # e.g. "pypto.add: 'input' and 'other' in dim 0"
    loc: object = None  # SourceLoc of the op
    when: tuple = ()  # ((condition Expr, answer bool), ...)
    rel: str = "eq"

    def key(self):
        pair = tuple(sorted((self.lhs, self.rhs), key=E.render)) if self.rel == "eq" else (self.lhs, self.rhs)
        return pair, self.rel, self.when


def size_only(e, loop_symbols) -> bool:
    """Whether ``e`` depends only on sizes (no loop index, no element read)."""
    if not isinstance(e, E.Expr):
        return True
    if "load(" in E._source(e):
        return False
    return not (E.free_symbols(e) & loop_symbols)


def reduce_to_sizes(a, b, loop_symbols, rel: str = "eq"):
    """The size relations that make ``a == b`` (``a <= b`` for ``rel`` "le"): ``[(a, b)]`` when
    both depend on sizes only, else the pairs of differing size symbols when the two have the same
    form (for "le", in places where the expression grows with the symbol), else None."""
    if size_only(a, loop_symbols) and size_only(b, loop_symbols):
        return [(a, b)]
    pairs: list = []
    if not _zip(E.lift(a), E.lift(b), pairs, loop_symbols, rel == "le"):
        return None
    return pairs


_GROWING = {"add": (True, True), "min": (True, True), "max": (True, True), "sub": (True, False)}


def _zip(x, y, pairs, loop_symbols, monotone) -> bool:
    """Walk ``x`` and ``y`` together; collect the size symbols where they differ. With
    ``monotone``, only positions where the value grows with the symbol qualify."""
    if x == y:
        return True
    if isinstance(x, E.Sym) and isinstance(y, E.Sym):
        if x.name in loop_symbols or y.name in loop_symbols:
            return False
        pairs.append((x, y))
        return True
    if isinstance(x, E.Bin) and isinstance(y, E.Bin) and x.op == y.op:
        if monotone:
            grows = _GROWING.get(x.op)
            if x.op in ("mul", "floordiv") and E.const_value(x.b) is not None and E.const_value(x.b) > 0:
                grows = (True, False)
            if grows is None:
                return False
            return ((_zip(x.a, y.a, pairs, loop_symbols, True) if grows[0] else x.a == y.a)
                    and (_zip(x.b, y.b, pairs, loop_symbols, True) if grows[1] else x.b == y.b))
        return _zip(x.a, y.a, pairs, loop_symbols, False) and _zip(x.b, y.b, pairs, loop_symbols, False)
    if isinstance(x, E.Not) and isinstance(y, E.Not) and not monotone:
        return _zip(x.a, y.a, pairs, loop_symbols, False)
    return False


def dedup(guards) -> tuple:
    seen, out = set(), []
    for g in guards:
        k = g.key()
        if k not in seen:
            seen.add(k)
            out.append(g)
    return tuple(out)


def checker(guards, symbols):
    """A function ``check(env)`` that raises `ArgumentValueError` for the first guard that fails
    (None when there is nothing to check). Guards over other symbols than ``symbols`` (the
    signature's dynamic sizes) are left out: they cannot be decided before the run."""
    known = set(symbols)

    def decidable(e):
        return not isinstance(e, E.Expr) or (E.free_symbols(e) <= known and "load(" not in E._source(e))

    usable = [g for g in guards if decidable(g.lhs) and decidable(g.rhs)]
    if not usable:
        return None
    lines = ["def check(env):"]
    for k, g in enumerate(usable):
        conds = [c if answer else E.logical_not(c) for c, answer in g.when if decidable(c)]
        a, b = E._source(g.lhs), E._source(g.rhs)
        test = f"({b} == 0 or {a} % {b} != 0)" if g.rel == "exact" else f"{a} {'!=' if g.rel == 'eq' else '>'} {b}"
        if conds:
            test = " and ".join(f"({E._source(c)})" for c in conds) + f" and {test}"
        lines.append(f"    if {test}: fail({k}, env)")

    def fail(k, env):
        raise _mismatch(usable[k], env)

    namespace = {"min": min, "max": max, "fail": fail}
    exec(compile("\n".join(lines) + "\n", "<pypto size guards>", "exec"), namespace)  # noqa: S102
    check = namespace["check"]
    check.guards = tuple(usable)
    return check


def _mismatch(g, env):
    from ..errors import ArgumentValueError

    a, b = E.evaluate(g.lhs, env), E.evaluate(g.rhs, env)
    la, lb = E.render(g.lhs, 5), E.render(g.rhs, 6)
    if g.rel == "exact":
        return ArgumentValueError(
            f"{g.what}: {la} / {lb} is not a whole number at run time (a true division of a runtime size "
            f"must divide exactly; nothing was written)", expected=f"{la} % {lb} == 0",
            got=f"{la} = {a}" + (f", {lb} = {b}" if isinstance(g.rhs, E.Expr) else ""), param=_param_of(g.lhs) or _param_of(g.rhs), loc=g.loc,
            hint=f"write {la} // {lb} to round down or pypto.ceildiv({E.render(g.lhs)}, {E.render(g.rhs)}) "
                 f"to round up")
    hint = ("a DYNAMIC dim never broadcasts: a size of 1 at run time is not expanded (broadcasting is "
            "decided at compile time; annotate the dim as 1 to broadcast it)") if 1 in (a, b) and g.rel == "eq" else None
    head = "sizes differ at run time (the kernel needs them equal" if g.rel == "eq" else \
        "the value does not fit at run time (it would be cut"
    return ArgumentValueError(
        f"{g.what}: {head}; nothing was written)",
        expected=f"{la} {'==' if g.rel == 'eq' else '<='} {lb}", got=_values(g, la, a, lb, b),
        param=_param_of(g.lhs) or _param_of(g.rhs), loc=g.loc, hint=hint)


def _values(g, la, a, lb, b) -> str:
    """The two sides' values at this call (a constant side is its own value: not "40 = 40")."""
    sides = [f"{text} = {value}" for e, text, value in ((g.lhs, la, a), (g.rhs, lb, b)) if isinstance(e, E.Expr)]
    return " and ".join(sides)


def _param_of(e):
    """The parameter named by the first size symbol of ``e`` (``x.shape[0]`` -> ``x``)."""
    for name in sorted(E.free_symbols(e)) if isinstance(e, E.Expr) else ():
        return name.split(".shape[")[0]
    return None
