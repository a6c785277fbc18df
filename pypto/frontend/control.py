"""Runtime control flow and tile-shape settings: pypto.loop, loop_unroll, cond, is_loop_begin/end,
set_vec_tile_shapes, set_cube_tile_shapes.

``for i in pypto.loop(...)`` iterates a generator that yields once per control-flow path of the
body: Python runs the body as often as there are paths, each time recording into a fresh block.
"""

from __future__ import annotations

from .. import scopes as _scopes
from ..errors import KernelSyntaxError, ShapeError, user_loc
from ..ir import expr as E
from ..ir.graph import Loop
from .builder import PathExplorer, current, require
from .scalar import SymbolicScalar, to_expr

# Tile shapes set outside any kernel and outside any scope: the starting point of every compile
# (part of the cache key). Set inside ``with pypto.options(...)``, they belong to that scope of
# that thread / task only (scopes.py).
_global_tiles = {"vec": None, "cube": None}
_UNSET = object()


def _bounds(args, loc):
    if not 1 <= len(args) <= 3:
        raise KernelSyntaxError("pypto.loop takes (stop), (start, stop) or (start, stop, step)",
                                got=f"{len(args)} arguments", loc=loc)
    if len(args) == 1:
        start, stop, step = 0, args[0], 1
    else:
        start, stop, step = (*args, 1)[:3]
    start = to_expr(start, what="loop start")
    stop = to_expr(stop, what="loop stop")
    if not isinstance(step, int) or isinstance(step, bool) or step <= 0:
        raise KernelSyntaxError("pypto.loop: 'step' must be a positive int", got=repr(step), loc=loc)
    return start, stop, step


class IgnoredLoopOptionWarning(UserWarning):
    """A keyword ``pypto.loop`` / ``loop_unroll`` does not know: ignored, as upstream ignores it."""


_LOOP_OPTIONS = ("name", "idx_name", "unroll_list", "submit_before_loop", "parallel")


def _warn_ignored(op: str, others: dict, loc) -> None:
    """Upstream's loops take any keyword and read only theirs: an unknown one is ignored there, so
    it is accepted here too, with a warning naming it (a misspelt option changes nothing)."""
    import difflib
    import warnings

    for key in others:
        close = difflib.get_close_matches(key, _LOOP_OPTIONS, n=1, cutoff=0.5)
        hint = f" (did you mean '{close[0]}'?)" if close else ""
        message = f"{op}: unknown keyword '{key}' is ignored{hint}; options: {', '.join(_LOOP_OPTIONS)}"
        if loc is None:
            warnings.warn(message, IgnoredLoopOptionWarning, stacklevel=3)
        else:
            warnings.warn_explicit(message, IgnoredLoopOptionWarning, loc.file, loc.line)


def loop(*args, name: str | None = None, idx_name: str | None = None, unroll_list=None,
         submit_before_loop: bool = False, parallel: bool = False, **others):
    """A runtime loop: ``for i in pypto.loop(stop)`` or ``pypto.loop(start, stop, step)``.

    Bounds may be symbolic; the index is a SymbolicScalar. With ``unroll_list`` the loop is
    traced as upstream's recorder traces it: one path per factor f (1 is always added), whose
    body is the loop body traced f times in a row with the indices i, i + step, ... (one root
    function runs f iterations; the remainder takes the smaller factors).
    `pypto.is_loop_begin` holds only for the first copy, `pypto.is_loop_end` only for the last.
    Use `loop_unroll` to write a body per unroll factor.
    """
    loc = user_loc(2)
    tracer = require("pypto.loop")
    if others:
        _warn_ignored("pypto.loop", others, loc)
    start, stop, step = _bounds(args, loc)
    factors = _factors(unroll_list, loc) if unroll_list is not None else (1,)
    return _trace(tracer, loc, start, stop, step, factors, False, name, idx_name, submit_before_loop, parallel,
                  repeat=unroll_list is not None)


def loop_unroll(*args, unroll_list=(1,), name: str | None = None, idx_name: str | None = None,
                submit_before_loop: bool = False, parallel: bool = False, **others):
    """A runtime loop traced once per unroll factor: ``for i, f in pypto.loop_unroll(n, unroll_list=[4])``.

    Factors are used largest first; the body for factor ``f`` must process ``f`` steps starting
    at ``i``; factor 1 always exists and covers the remainder.
    """
    loc = user_loc(2)
    tracer = require("pypto.loop_unroll")
    if others:
        _warn_ignored("pypto.loop_unroll", others, loc)
    start, stop, step = _bounds(args, loc)
    return _trace(tracer, loc, start, stop, step, _factors(unroll_list, loc), True, name, idx_name,
                  submit_before_loop, parallel)


def _factors(unroll_list, loc) -> tuple:
    if isinstance(unroll_list, int):
        unroll_list = [unroll_list]
    try:
        fs = sorted({int(f) for f in unroll_list} | {1}, reverse=True)
    except (TypeError, ValueError):
        raise KernelSyntaxError("'unroll_list' must be a list of positive ints", got=repr(unroll_list),
                                loc=loc) from None
    if fs[-1] < 1 or any(isinstance(f, bool) for f in unroll_list):
        raise KernelSyntaxError("'unroll_list' must be a list of positive ints", got=repr(unroll_list),
                                loc=loc)
    return tuple(fs)


class _UnrolledIndex(SymbolicScalar):
    """The index of one copy of an unrolled loop body: (loop index name, copy, copies)."""

    __slots__ = ("_unrolled",)

    def __init__(self, expr, unrolled):
        super().__init__(expr)
        self._unrolled = unrolled


def _trace(tracer, loc, start, stop, step, factors, yield_factor, name, idx_name, submit_before_loop,
           parallel, repeat=False):
    index = idx_name or tracer.loop_names.get((loc.file, loc.line) if loc else None)
    if not index:
        index = f"i{len(tracer.active_indices)}"
    if index in tracer.active_indices:
        raise KernelSyntaxError(f"nested pypto.loop reuses the index name '{index}'",
                                expected="a distinct idx_name per nesting level", got=index, loc=loc)
    saved = (tracer.vec_tile, tracer.cube_tile)
    loop_id = tracer.new_id()
    bodies = []
    for factor in factors:
        explorer = PathExplorer(loc)
        more = True
        while more:
            tracer.push_block(explorer)
            tracer.active_indices.append(index)
            tracer.loop_info[index] = (start, stop, step, factor)
            tracer.loop_factors[index] = factors  # the iteration schedule a loop guard replays
            idx = SymbolicScalar(E.Sym(index, nonneg=E.is_nonneg(start)))
            if repeat:  # the body once per iteration of the chunk (upstream's unrolled path)
                for j in range(factor):
                    yield _UnrolledIndex(E.add(idx.expr, E.mul(j, step)) if j else idx.expr, (index, j, factor))
            else:
                yield (idx, factor) if yield_factor else idx
            tracer.active_indices.pop()
            block = tracer.pop_block(explorer, loop_body=True)
            tracer.vec_tile, tracer.cube_tile = saved  # tile settings are scoped to the loop body
            more = explorer.finish(block)
        bodies.append(explorer.region())
    tracer.append(Loop(loop_id, name or "", index, start, stop, step, factors, tuple(bodies),
                       bool(parallel), bool(submit_before_loop), loc))


def cond(scalar, file=None, lineno=None) -> bool:
    """Decide a runtime condition: ``if pypto.cond(i == 0):`` (both branches are traced)."""
    if isinstance(scalar, SymbolicScalar):
        return bool(scalar)
    return bool(scalar)


def _loop_of(idx, what):
    tracer = require(what)
    unrolled = getattr(idx, "_unrolled", None)
    if unrolled is not None and unrolled[0] in tracer.active_indices:
        return tracer.loop_info[unrolled[0]]
    if not (isinstance(idx, SymbolicScalar) and isinstance(idx.expr, E.Sym)
            and idx.expr.name in tracer.active_indices):
        raise KernelSyntaxError(f"{what} needs the index of an enclosing pypto.loop", got=repr(idx),
                                loc=user_loc(3))
    return tracer.loop_info[idx.expr.name]


def is_loop_begin(idx) -> SymbolicScalar:
    """True on the first iteration of the loop whose index is ``idx``."""
    start, _, _, _ = _loop_of(idx, "pypto.is_loop_begin")
    unrolled = getattr(idx, "_unrolled", None)
    if unrolled is not None and unrolled[1] > 0:  # a later copy of an unrolled chunk is never the first
        return SymbolicScalar.wrap(E.const(0))
    return SymbolicScalar.wrap(E.binary("eq", idx.expr, start))


def is_loop_end(idx) -> SymbolicScalar:
    """True on the last iteration of the loop whose index is ``idx``."""
    _, stop, step, factor = _loop_of(idx, "pypto.is_loop_end")
    unrolled = getattr(idx, "_unrolled", None)
    if unrolled is not None:  # one iteration per copy: only a chunk's last copy can end the loop
        if unrolled[1] + 1 < unrolled[2]:
            return SymbolicScalar.wrap(E.const(0))
        return SymbolicScalar.wrap(E.binary("ge", E.add(idx.expr, step), stop))
    return SymbolicScalar.wrap(E.binary("ge", E.add(idx.expr, step * factor), stop))


# ---- tile shapes -----------------------------------------------------------------------------------

def _positive(v, what, loc):
    if isinstance(v, SymbolicScalar) and v.is_concrete():  # pypto.symbolic_scalar(32): upstream takes it
        v = v.concrete()
    if isinstance(v, bool) or not isinstance(v, int) or v <= 0:
        raise ShapeError(f"{what} must be a positive int", expected="an int > 0", got=repr(v), loc=loc)
    return v


def set_vec_tile_shapes(*dims) -> None:
    """Tile shape (one size per dim) of the vector ops created after this call.

    Inside a ``pypto.loop`` body it applies until the end of that body.
    """
    loc = user_loc(2)
    if len(dims) == 1 and isinstance(dims[0], (list, tuple)):
        dims = tuple(dims[0])
    if not 1 <= len(dims) <= 5:
        raise ShapeError("set_vec_tile_shapes takes 1 to 5 sizes", got=len(dims), loc=loc)
    shape = tuple(_positive(d, f"set_vec_tile_shapes: the size for dim {i}", loc)
                  for i, d in enumerate(dims))
    tracer = current()
    if tracer is None:
        if not _scopes.set_extra("vec_tile", shape):
            _global_tiles["vec"] = shape
    else:
        tracer.vec_tile = shape


def get_vec_tile_shapes() -> list:
    tracer = current()
    shape = tracer.vec_tile if tracer is not None else global_tiles()[0]
    return list(shape) if shape else []


def set_cube_tile_shapes(m, k, n, enable_split_k: bool = False) -> None:
    """Cube tiles for the matmuls created after this call: ``m=[mL0, mL1]``, ``k=[kL0, kL1]``
    (or ``[kL0, kAL1, kBL1]``), ``n=[nL0, nL1]``; L1 sizes are multiples of the L0 size."""
    loc = user_loc(2)
    parts = []
    for name, pair, n_ok in (("m", m, (2,)), ("k", k, (2, 3)), ("n", n, (2,))):
        if not isinstance(pair, (list, tuple)) or len(pair) not in n_ok:
            raise ShapeError(f"set_cube_tile_shapes: '{name}' must be [L0, L1]",
                             expected=f"a list of {' or '.join(map(str, n_ok))} ints", got=repr(pair),
                             loc=loc)
        vals = tuple(_positive(v, f"cube tile {name}", loc) for v in pair)
        l0 = vals[0]
        for l1 in vals[1:]:
            if l1 < l0 or l1 % l0:
                raise ShapeError(f"set_cube_tile_shapes: '{name}' L1 size must be a multiple of its L0 size",
                                 expected=f"L1 = c * {l0}", got=repr(list(vals)), loc=loc)
        if len(vals) == 2 and name == "k":
            vals = (vals[0], vals[1], vals[1])
        parts.append(vals)
    cube = (*parts, bool(enable_split_k))
    tracer = current()
    if tracer is None:
        if not _scopes.set_extra("cube_tile", cube):
            _global_tiles["cube"] = cube
    else:
        tracer.cube_tile = cube


def get_cube_tile_shapes():
    tracer = current()
    cube = tracer.cube_tile if tracer is not None else global_tiles()[1]
    if cube is None:
        return None
    m, k, n, split = cube
    return list(m), list(k), list(n), split


def global_tiles() -> tuple:
    """(vec, cube) tile settings outside a kernel: this thread's / task's scopes, else global."""
    extras = _scopes.stack().extras
    if not extras:
        return _global_tiles["vec"], _global_tiles["cube"]
    return extras.get("vec_tile", _global_tiles["vec"]), extras.get("cube_tile", _global_tiles["cube"])
