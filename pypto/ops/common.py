"""Helpers shared by the op builders: operand checks, broadcasting and emitting ops."""

from __future__ import annotations

from ..dtypes import DT_BOOL, DType, require_supported
from ..element import Element, check_scalar_value
from ..errors import DTypeError, ShapeError, user_loc
from ..frontend.builder import current, require
from ..frontend.scalar import SymbolicScalar
from ..frontend.tensor import Tensor
from ..ir import expr as E
from ..ir.guards import size_only
from .registry import REGISTRY


def loc():
    return user_loc(3)


def tensor_arg(x, op: str, param: str) -> Tensor:
    if not isinstance(x, Tensor):
        raise DTypeError(f"pypto.{op}: '{param}' must be a tensor", expected="a pypto Tensor",
                         got=f"{type(x).__name__} {x!r}"[:80], param=param, loc=loc())
    return x


def check_dtype(op: str, t: Tensor, param: str, allowed=None) -> DType:
    allowed = allowed if allowed is not None else REGISTRY[op].dtypes
    dt = t.dtype
    if allowed is not None and dt not in allowed:
        raise DTypeError(f"pypto.{op} does not accept dtype {dt.name} for '{param}'",
                         expected=", ".join(d.name for d in allowed), got=dt.name, param=param,
                         loc=loc())
    return dt


def dtype_arg(dt, op: str, param: str = "dtype") -> DType:
    if not isinstance(dt, DType):
        raise DTypeError(f"pypto.{op}: '{param}' must be a pypto dtype", expected="e.g. pypto.DT_FP32",
                         got=repr(dt), param=param, loc=loc())
    return require_supported(dt, param=param, loc=loc())


def norm_dim(dim, rank: int, op: str, param: str = "dim") -> int:
    if isinstance(dim, bool) or not isinstance(dim, int):
        raise ShapeError(f"pypto.{op}: '{param}' must be an int", got=repr(dim), param=param, loc=loc())
    if not -rank <= dim < rank:
        raise ShapeError(f"pypto.{op}: '{param}' is out of range for a tensor of rank {rank}",
                         expected=f"{-rank} <= {param} < {rank}", got=dim, param=param, loc=loc())
    return dim % rank


def dims_equal(a, b) -> bool:
    """Equal sizes, or two symbolic sizes that are not provably different.

    Unnamed DYNAMIC dims of different tensors are different symbols (``k.shape[1]`` and
    ``v.shape[1]``) that may well agree at run time (upstream compares them as -1 == -1), so only
    a constant non-zero difference (``n`` vs ``n + 1``) is a compile-time mismatch.

    A runtime size against a static one (a DYNAMIC dim against a STATIC or fixed one) may agree
    too, unless the runtime size provably exceeds it (``n + 8`` against 4).
    """
    a, b = E.simplify_dim(a), E.simplify_dim(b)
    if isinstance(a, E.Expr) and isinstance(b, E.Expr) and a != b:
        diff = E.simplify_dim(E.sub(a, b))
        return not isinstance(diff, int) or diff == 0
    if isinstance(a, E.Expr) != isinstance(b, E.Expr):
        expr, size = (a, b) if isinstance(a, E.Expr) else (b, a)
        return size >= lower_bound(expr)
    return a == b


def lower_bound(e) -> int:
    """A bound the runtime size ``e`` never goes below: the constant of a sum of non-negative
    terms with non-negative coefficients, else 0 (sizes are never negative)."""
    terms, c = E.linear_form(e)
    if all(k >= 0 and E.is_nonneg(t) for t, k in terms.items()):
        return max(c, 0)
    return 0


def broadcast_shapes(op: str, shapes, params) -> tuple:
    """Numpy-style broadcast of (possibly symbolic) shapes; a mismatch names both operands.

    Two runtime sizes (or a runtime and a static one) are assumed to agree, as upstream does for
    dynamic dims; the assumption becomes a size guard checked before each call (`pypto.ir.guards`).
    """
    rank = max(len(s) for s in shapes)
    out = []
    where = loc()
    params = list(params) + [f"operand {i}" for i in range(len(params), len(shapes))]
    for d in range(rank):
        size, owner = 1, None
        for s, p in zip(shapes, params):
            k = d - (rank - len(s))
            if k < 0:
                continue
            dim = s[k]
            if isinstance(dim, int) and dim == 1:
                continue
            if isinstance(size, int) and size == 1:
                size, owner = dim, (p, k)
            elif (isinstance(size, E.Expr) or isinstance(dim, E.Expr)) and \
                    _may_agree(size, dim, f"pypto.{op}: {owner[0]!r} dim {owner[1]} and {p!r} dim {k}", where):
                if isinstance(dim, int):  # the static one, if any, is the better bound
                    size, owner = dim, (p, k)
            elif not dims_equal(size, dim):
                raise ShapeError(
                    f"pypto.{op}: shapes of {' and '.join(repr(p) for p in params)} do not broadcast",
                    expected="equal sizes or 1 in each dim",
                    got=" vs ".join(E.render_dims(s) for s in shapes), loc=where)
        out.append(size)
    return tuple(out)


def _may_agree(a, b, what: str, where) -> bool:
    """A runtime size against a static one or another runtime size: they may agree (a size guard
    checks it before each call) unless they provably differ (``n`` and ``n + 1``)."""
    if isinstance(a, E.Expr) and isinstance(b, E.Expr) and not dims_equal(a, b):
        return False
    tracer = current()
    if tracer is not None and a != b:
        tracer.require_equal(a, b, what, where)
    return True


def same_size(a, b, what: str, where=None) -> bool:
    """``dims_equal(a, b)``; two different symbolic sizes taken as equal become a size guard (the
    call checks them before it runs) described by ``what`` ("pypto.concat: 'tensors[1]' dim 1 ...")."""
    if not dims_equal(a, b):
        return False
    if (isinstance(a, E.Expr) or isinstance(b, E.Expr)) and a != b:
        tracer = current()
        if tracer is not None:
            tracer.require_equal(a, b, what, where or loc())
    return True


def checked_before_the_run(a, b) -> bool:
    """Whether sizes ``a`` and ``b`` depend on sizes only (no loop index, no element read): then the
    size guard `same_size` records checks them before the call runs (`pypto.ir.guards`), and a leaf
    needs no run-time check of its own."""
    loops = set(require("pypto.matmul").loop_info)
    return size_only(a, loops) and size_only(b, loops)


def relate_valid(op: str, values, params, where=None) -> None:
    """Operands combined element by element must have the same valid extent in every dim they
    span: a tail of one that is shorter than the other's would compute only the common part."""
    tracer = current()
    if tracer is None or len(values) < 2:
        return
    rank = max(v.rank for v in values)
    for d in range(rank):
        first = None
        for v, p in zip(values, params):
            k = d - (rank - v.rank)
            if k < 0 or (isinstance(v.shape[k], int) and v.shape[k] == 1):
                continue
            ext = v.valid_shape[k]
            if first is None:
                first = (ext, p, k)
            elif ext != first[0] and (isinstance(ext, E.Expr) or isinstance(first[0], E.Expr)):
                tracer.require_equal(first[0], ext, f"pypto.{op}: valid extents of {first[1]!r} dim {first[2]} "
                                                    f"and {p!r} dim {k}", where or loc())


def bcast_flags(shape, out_shape) -> tuple:
    """Per output dim: is this operand broadcast along it (size 1, or missing)?"""
    pad = len(out_shape) - len(shape)
    flags = [True] * pad
    for k, dim in enumerate(shape):
        flags.append(isinstance(dim, int) and dim == 1 and not (isinstance(out_shape[pad + k], int)
                                                                 and out_shape[pad + k] == 1))
    return tuple(flags)


def scalar_arg(x, op: str, param: str, like: DType):
    """A scalar operand (Python number, symbolic scalar or `pypto.Element`) checked against the
    dtype of the tensor it combines with: an Element must have that dtype, a number must fit it."""
    if isinstance(x, SymbolicScalar):
        return E.simplify_dim(x.expr)
    if isinstance(x, Element):
        if x.dtype is not like:
            raise DTypeError(f"pypto.{op}: data type inconsistent: '{param}' is an Element of {x.dtype.name} "
                             f"but the tensor it combines with is {like.name}",
                             expected=f"pypto.Element({like.name}, ...)", got=repr(x), param=param, loc=loc())
        x = x.value
    if isinstance(x, bool):
        if like is DT_BOOL:
            return x
        raise DTypeError(f"pypto.{op}: bool scalar for '{param}' with a {like.name} tensor",
                         expected="an int or float", got="bool", param=param, loc=loc())
    if isinstance(x, int):
        check_scalar_value(x, like, f"pypto.{op}", param, loc())
        return x
    if isinstance(x, float):
        if not like.is_float:
            raise DTypeError(f"pypto.{op}: float scalar for '{param}' with an integer tensor",
                             expected=f"an int for a {like.name} tensor", got=repr(x), param=param,
                             loc=loc())
        return x
    kind = type(x)
    got = kind.__name__ if kind.__module__ == "builtins" else f"{kind.__module__}.{kind.__qualname__}"
    raise DTypeError(f"pypto.{op}: '{param}' must be a tensor or a scalar",
                     expected="a pypto Tensor, int, float or Element", got=got, param=param, loc=loc(),
                     hint="a torch tensor cannot enter a kernel's computation: pass it as a kernel "
                          "argument" if kind.__module__ == "torch" else None)


def valid_of(*values, op: str | None = None, params=None):
    """The valid shape of an elementwise result, per dim over the operands spanning it (not
    broadcast along it): the first symbolic extent, else the smallest static one.

    This is the part every operand defines, which is what the run computes: an operand whose
    valid rows end earlier has no values beyond them. (Upstream's generic elementwise rule is
    the same; its add/sub/mul/div/max/min take the first operand's extent, rows that read the
    other operand's undefined tail.) Two extents of which one is symbolic must be equal: with
    ``op`` (and ``params``, the operands' names) that is recorded (`relate_valid`) and checked
    before the run."""
    if op is not None:
        relate_valid(op, values, params or [f"operand {i}" for i in range(len(values))], loc())
    out_rank = max(v.rank for v in values)
    valid = []
    for d in range(out_rank):
        spans = [v.valid_shape[d - (out_rank - v.rank)] for v in values
                 if d - (out_rank - v.rank) >= 0
                 and not (isinstance(v.shape[d - (out_rank - v.rank)], int) and v.shape[d - (out_rank - v.rank)] == 1)]
        symbolic = [e for e in spans if E.const_value(e) is None]
        valid.append(symbolic[0] if symbolic else min(spans, key=E.const_value) if spans else 1)
    return tuple(valid)


def emit(kind: str, inputs, outs, attrs=None, names=None, value_kind: str = "op"):
    """Record op ``kind`` and return Tensor handles for its outputs.

    ``outs`` is a list of (dtype, shape, valid_shape or None) or (dtype, shape, valid, base);
    ``value_kind`` is the kind of the output values ("local" for `pypto.tensor`).
    """
    tracer = require(f"pypto.{kind}")
    where = loc()
    check_vec_tile(tracer, kind, inputs, outs, where)
    values = []
    for i, spec in enumerate(outs):
        dtype, shape, valid = spec[:3]
        base = spec[3] if len(spec) > 3 else None
        values.append(tracer.new_value(dtype, shape, valid, base=base, loc=where, kind=value_kind,
                                       name=(names[i] if names else kind)))
    tracer.emit(kind, [t._value for t in inputs], values, attrs, where)
    handles = [Tensor._wrap(v) for v in values]
    return handles[0] if len(handles) == 1 else tuple(handles)


# ops of other kinds whose tiling upstream also checks against the vector tile (fill, range, random)
_TILED_CREATE = frozenset({"full", "arange", "uniform", "normal"})
# index_add is tiled over the source it adds (its last input here), not its target
_TILED_BY_LAST_INPUT = frozenset({"index_add"})
# index_put tiles the index tensors and the leading dim of the values it writes; a shorter tile
# is completed with the values' own trailing dims (they stay whole), so one size is enough
_TILED_BY_INDICES = frozenset({"index_put"})


def check_vec_tile(tracer, kind, inputs, outs, where):
    """The vector tile needs at least one size per dim of the tensor the op is tiled over.

    As upstream, a tile may have more sizes than that tensor has dims: a rank-R tensor uses the
    first R sizes (`passes.expand.leading_tile`), so one ``set_vec_tile_shapes`` serves ops of
    lower rank too. The tiled tensor is the larger of the first input and the first output (a
    reduction is tiled over its input, a broadcast over its output); index_add is tiled over the
    source it adds (its last input), index_put over its 1-D index tensors (the values' trailing
    dims the tile does not name stay whole, as upstream documents).
    """
    tile = tracer.vec_tile
    if tile is None:
        return
    spec = REGISTRY[kind]
    if spec.kind != "vector" and kind not in _TILED_CREATE:
        return
    if kind in _TILED_BY_LAST_INPUT:
        rank = inputs[-1]._value.rank
    elif kind in _TILED_BY_INDICES:
        rank = 1
    else:
        rank = max(inputs[0]._value.rank if inputs else 0, len(outs[0][1]) if outs else 0)
    if len(tile) < rank:
        raise ShapeError(f"pypto.{kind}: the vector tile has {len(tile)} size(s), fewer than the rank {rank} of "
                         f"the tensor this op is tiled over",
                         expected=f"set_vec_tile_shapes with at least {rank} sizes before this op (the first "
                                  f"{rank} tile the op; further sizes are for ops of higher rank)",
                         got=f"set_vec_tile_shapes{tuple(tile)}", param="vec_tile_shapes", loc=where)


def emit_inplace(kind: str, inputs, target: Tensor, attrs=None) -> Tensor:
    """Record an op that writes ``target`` in place (assemble)."""
    tracer = require(f"pypto.{kind}")
    tracer.emit(kind, [t._value for t in inputs], [target._value], attrs, loc())
    return target


def shape_list(shape, op: str, param: str = "shape") -> tuple:
    """A list of ints / symbolic scalars as a tuple of dims."""
    if isinstance(shape, (int, SymbolicScalar)):
        shape = [shape]
    if not isinstance(shape, (list, tuple)):
        raise ShapeError(f"pypto.{op}: '{param}' must be a list of sizes", got=repr(shape), param=param,
                         loc=loc())
    out = []
    for s in shape:
        if isinstance(s, SymbolicScalar):
            out.append(E.simplify_dim(s.expr))
        elif isinstance(s, E.Expr):
            out.append(E.simplify_dim(s))
        elif isinstance(s, int) and not isinstance(s, bool):
            if s < 0:
                raise ShapeError(f"pypto.{op}: '{param}' has a negative size", got=list(shape),
                                 param=param, loc=loc())
            out.append(s)
        else:
            raise ShapeError(f"pypto.{op}: '{param}' entries must be ints or symbolic scalars",
                             got=repr(s), param=param, loc=loc())
    return tuple(out)
