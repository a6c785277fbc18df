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

Guards are checked before the run. A relation through a loop index is reduced to the sizes it
needs when the two extents have the same form (``min(max(x.shape[0] - b*32, 0), 32)`` and the
same over ``y.shape[0]`` need ``x.shape[0] == y.shape[0]``). One of other forms (``y`` viewed one
row further, ``y[b*32 + 1 : ...]``) keeps its enclosing loops (`LoopRange`) and is checked for
every iteration they run, replaying the runtime's schedule (unroll factors included) and the
branch conditions on sizes and loop indices; its verdict is remembered per sizes. A guard whose
loops or sides read tensor elements is checked the same way, reading the elements of the
caller's inputs (see `checker`).
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
    loops: tuple = ()  # LoopRange per enclosing loop (outermost first): held at every iteration

    def key(self):
        pair = tuple(sorted((self.lhs, self.rhs), key=E.render)) if self.rel == "eq" else (self.lhs, self.rhs)
        return pair, self.rel, self.when, self.loops


@dataclass(frozen=True)
class LoopRange:
    """An enclosing ``pypto.loop`` of a guard: its index, bounds and unroll schedule; the guard
    holds at every index value the body traced for ``factor`` runs with."""

    index: str
    start: object  # Dim
    stop: object  # Dim
    step: int
    factors: tuple = (1,)
    factor: int = 1

    def values(self, env, load=None):
        """The index values of the body for ``factor``, in the order the runtime runs them
        (runtime/control.walk: the largest factor's chunks first, then the rest)."""
        start, stop = int(E.evaluate(self.start, env, load)), int(E.evaluate(self.stop, env, load))
        remaining = max(0, -(-(stop - start) // self.step))
        cur = start
        for f in self.factors:
            for _ in range(remaining // f):
                if f == self.factor:
                    yield cur
                cur += self.step * f
            remaining %= f


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
    """A function ``check(env, load=None)`` that raises `ArgumentValueError` for the first guard
    that fails and returns the guards it could not decide (None when there is nothing to check).

    Guards over the signature's dynamic sizes (``symbols``) and the indices of their loops are
    checked from the call's sizes (see `_LoopChecks` for the looped ones). A guard that reads a
    tensor element is checked only when ``load(param, indices)`` is given (the caller's inputs);
    one whose ``load`` raises `Undecidable` (an element the kernel writes before it reads it),
    and one over other symbols, cannot be decided before the run: ``check`` returns them, and the
    run checks each where the op it guards runs (`runtime_check`), on arguments it can restore.
    """
    known = set(symbols)

    def decidable(e):
        return not isinstance(e, E.Expr) or (E.free_symbols(e) <= known and "load(" not in E._source(e))

    usable = [g for g in guards if not g.loops and decidable(g.lhs) and decidable(g.rhs)]
    looped = [g for g in guards if g not in usable and _loop_decidable(g, known)]
    at_run = tuple(g for g in guards if g not in usable and g not in looped)
    if not usable and not looped and not at_run:
        return None
    lines = ["def check(env, load=None):"]
    for k, g in enumerate(usable):
        conds = [c if answer else E.logical_not(c) for c, answer in g.when if decidable(c)]
        a, b = E._source(g.lhs), E._source(g.rhs)
        test = f"({b} == 0 or {a} % {b} != 0)" if g.rel == "exact" else f"{a} {'!=' if g.rel == 'eq' else '>'} {b}"
        if conds:
            test = " and ".join(f"({E._source(c)})" for c in conds) + f" and {test}"
        lines.append(f"    if {test}: fail({k}, env)")
    lines.append("    return at_run + every_iteration(env, load)" if looped else "    return at_run")

    def fail(k, env):
        raise _mismatch(usable[k], env)

    namespace = {"min": min, "max": max, "fail": fail, "every_iteration": _LoopChecks(looped, known),
                 "at_run": at_run}
    exec(compile("\n".join(lines) + "\n", "<pypto size guards>", "exec"), namespace)  # noqa: S102
    check = namespace["check"]
    check.guards = tuple(usable) + tuple(looped)
    check.reads_elements = bool(namespace["every_iteration"].reading)
    return check


def runtime_check(guards, env, load) -> None:
    """Check the guards left to the run (`checker`) at one point of it: ``env`` binds the sizes
    and the indices of the loops around the op they guard, ``load`` reads elements as they are
    now (what the op's views read). Raises `ArgumentValueError` for the first that fails."""
    for g in guards:
        if any(lr.index not in env for lr in g.loops):
            continue
        if any(bool(E.evaluate(c, env, load)) != answer for c, answer in g.when):
            continue
        a, b = E.evaluate(g.lhs, env, load), E.evaluate(g.rhs, env, load)
        if g.rel == "exact":
            ok = b != 0 and a % b == 0
        else:
            ok = a == b if g.rel == "eq" else a <= b
        if not ok:
            raise _mismatch(g, env, load)


def input_loader(params, written_ids, tensors):
    """``load(param, indices)`` for a checker: an element of the caller's tensor for a parameter
    the kernel never writes (its value before the run is the one the run reads), `Undecidable`
    for one it writes, an index out of range also `Undecidable` (the run reports it)."""
    by_name = {p.value.name: (p.value.id in written_ids, t) for p, t in zip(params, tensors)}

    def load(param, indices):
        written, t = by_name.get(param, (True, None))
        if written:
            raise Undecidable(param)
        try:
            return int(t[tuple(int(i) for i in indices)])
        except IndexError:
            raise Undecidable(param) from None
    return load


class Undecidable(Exception):
    """Raised by a checker's ``load`` for an element the guard cannot read before the run."""


def _reads(g) -> tuple:
    """Every expression a loop guard evaluates: its sides, its conditions, its loops' bounds."""
    out = [g.lhs, g.rhs] + [c for c, _ in g.when]
    for lr in g.loops:
        out += [lr.start, lr.stop]
    return tuple(e for e in out if isinstance(e, E.Expr))


def _loop_decidable(g, known) -> bool:
    indices = {lr.index for lr in g.loops}
    return all(E.free_symbols(e) <= known | indices for e in _reads(g))


class _LoopChecks:
    """The loop guards of one compiled version, each checked at every iteration of its loops. A
    verdict of guards that read no element is remembered per value of the sizes they read (a
    new size costs one pass over the iterations, a repeated one a lookup)."""

    MEMO = 256  # distinct size combinations remembered (cleared when full)

    def __init__(self, guards, known):
        self.size_only = tuple(g for g in guards if not any("load(" in E._source(e) for e in _reads(g)))
        self.reading = tuple(g for g in guards if g not in self.size_only)
        self.names = tuple(sorted(set().union(*(E.free_symbols(e) for g in self.size_only for e in _reads(g))) & known))
        self.passed: dict = {}

    def __call__(self, env, load=None) -> tuple:
        """Check; return the guards that read an element the run writes first (left to the run)."""
        if self.size_only:
            key = tuple(env.get(n) for n in self.names)
            if key not in self.passed:
                for g in self.size_only:
                    _check_every_iteration(g, env, None)
                if len(self.passed) >= self.MEMO:
                    self.passed.clear()
                self.passed[key] = True
        if load is None:
            return self.reading
        undecided = []
        for g in self.reading:
            try:
                _check_every_iteration(g, env, load)
            except Undecidable:
                undecided.append(g)
        return tuple(undecided)


def _check_every_iteration(g, env, load) -> None:
    """Raise the guard's error at the first iteration (in run order) where it does not hold."""
    e = dict(env)
    loops = g.loops

    def walk(level):
        if level == len(loops):
            for c, answer in g.when:
                if bool(E.evaluate(c, e, load)) != answer:
                    return
            a, b = E.evaluate(g.lhs, e, load), E.evaluate(g.rhs, e, load)
            if not (a == b if g.rel == "eq" else a <= b):
                raise _mismatch(g, e, load)
            return
        lr = loops[level]
        for v in lr.values(e, load):
            e[lr.index] = v
            walk(level + 1)

    walk(0)


def _mismatch(g, env, load=None):
    from ..errors import ArgumentValueError

    a, b = E.evaluate(g.lhs, env, load), E.evaluate(g.rhs, env, load)
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
        "a size is below what the op needs at run time (an empty dim" if not isinstance(g.lhs, E.Expr) else \
        "the value does not fit at run time (it would be cut"
    got = _values(g, la, a, lb, b)
    if g.loops:  # which iteration, and the sizes behind it
        at = ", ".join(f"{lr.index} = {env[lr.index]}" for lr in g.loops)
        head = ("valid extents differ at run time (torch would refuse the shapes" if g.rel == "eq" else
                "the value does not fit its slice at run time (it would be cut") + f", at {at}"
        sizes = sorted(n for e in (g.lhs, g.rhs) if isinstance(e, E.Expr) for n in E.free_symbols(e)
                       if ".shape[" in n)
        got += "".join(f", {n} = {env[n]}" for n in dict.fromkeys(sizes) if n in env)
    return ArgumentValueError(
        f"{g.what}: {head}; nothing was written)",
        expected=f"{la} {'==' if g.rel == 'eq' else '<='} {lb}", got=got,
        param=_param_of(g.lhs) or _param_of(g.rhs), loc=g.loc, hint=hint)


def _values(g, la, a, lb, b) -> str:
    """The two sides' values at this call (a constant side is its own value: not "40 = 40")."""
    sides = [f"{text} = {value}" for e, text, value in ((g.lhs, la, a), (g.rhs, lb, b)) if isinstance(e, E.Expr)]
    return " and ".join(sides)


def _param_of(e):
    """The parameter named by the first size symbol of ``e`` (``x.shape[0]`` -> ``x``)."""
    names = sorted(E.free_symbols(e)) if isinstance(e, E.Expr) else ()
    for name in [n for n in names if ".shape[" in n] or names:  # a size before a loop index
        return name.split(".shape[")[0]
    return None
