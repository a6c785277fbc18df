"""Views, assembles and shape operators: view, assemble, reshape, transpose, concat,
expand_clone, clone, and element reads of INT32/INT64 parameters."""

from __future__ import annotations

import math
import weakref

from .._lazy import torch

from ..dtypes import DT_INT32, DT_INT64
from ..errors import ArgumentTypeError, DTypeError, KernelRuntimeError, KernelSyntaxError, ShapeError
from ..frontend.builder import require
from ..frontend.scalar import SymbolicScalar
from ..frontend.tensor import Tensor
from ..ir import expr as E
from .common import dims_equal, emit, emit_inplace, loc, norm_dim, same_size, shape_list, tensor_arg
from .elementwise import align_valid
from .registry import register


# ---- view ------------------------------------------------------------------------------------------

def view(input, shape=None, offsets=None, *, valid_shape=None, dtype=None):
    """A window of ``input`` of size ``shape`` at ``offsets`` (ints or symbolic scalars).

    Its valid shape is clipped at the parent's edge (``min(max(valid - offset, 0), size)``) unless
    ``valid_shape`` is given. Writing into a view writes into ``input``. With ``dtype`` alone
    (upstream's ``view(x, dtype=...)``) the same bytes are read as another dtype: the last dim
    (and its valid extent) scales by the ratio of the element sizes.
    """
    tensor_arg(input, "view", "input")
    if dtype is not None and dtype is not input.dtype:
        return _view_dtype(input, dtype, shape, offsets, valid_shape)
    if shape is None or offsets is None:
        missing = "shape" if shape is None else "offsets"
        raise ArgumentTypeError(f"pypto.view needs '{missing}' (only a dtype view takes neither)",
                                expected="view(input, shape, offsets) or view(input, dtype=...)",
                                got=f"{missing}=None", param=missing, loc=loc())
    v = input._value
    shape = shape_list(shape, "view")
    offs = shape_list(offsets, "view", "offsets")
    if len(shape) != v.rank or len(offs) != v.rank:
        raise ShapeError("pypto.view: 'shape' and 'offsets' must have one entry per dim",
                         expected=f"{v.rank} entries", got=f"shape {len(shape)}, offsets {len(offs)}",
                         param="shape", loc=loc())
    for d, (o, s, full) in enumerate(zip(offs, shape, v.shape)):
        if isinstance(o, int) and isinstance(s, int) and isinstance(full, int) and o + s > full and o >= full:
            raise ShapeError(f"pypto.view: the window starts outside the tensor in dim {d}",
                             expected=f"offset < {full}", got=f"offset {o}", param="offsets", loc=loc())
    if valid_shape is not None:
        valid = shape_list(valid_shape, "view", "valid_shape")
        if len(valid) != v.rank:
            raise ShapeError("pypto.view: 'valid_shape' must have one entry per dim",
                             expected=f"{v.rank} entries", got=len(valid), param="valid_shape", loc=loc())
        for d, (vs, s) in enumerate(zip(valid, shape)):
            if isinstance(vs, int) and isinstance(s, int) and vs > s:
                raise ShapeError(f"pypto.view: 'valid_shape' exceeds the view's shape in dim {d}",
                                 expected=f"valid_shape[{d}] <= {s}", got=vs, param="valid_shape", loc=loc())
    else:
        valid = tuple(E.clamp_extent(pv, o, s) for pv, o, s in zip(v.valid_shape, offs, shape))
    attrs = {"shape": shape, "offsets": offs, "valid": valid if valid_shape is not None else None}
    out = emit("view", [input], [(input.dtype, shape, valid, v)], attrs)
    if valid_shape is not None or v in _window_extents:
        # a given valid shape may reach past the memory the view has (read: the rows that exist;
        # written: refused by `_check_window`), so remember that memory's extents
        _window_extents[out._value] = tuple(E.clamp_extent(have, o, s)
                                            for have, o, s in zip(_window_of(v), offs, shape))
    return out


# view value -> the extents of the memory under it per dim (min(max(parent's - offset, 0), size)),
# for views whose valid shape was given and the views of those
_window_extents: "weakref.WeakKeyDictionary" = weakref.WeakKeyDictionary()


def _window_of(v) -> tuple:
    """The extents of the memory under value ``v``: its shape, or less for a view (`view`)."""
    return _window_extents.get(v, v.shape)


def _check_window(src, offs, dst) -> None:
    """``assemble(src, offs, dst)`` into a view whose valid shape reaches past the memory it
    views: the write would be cut at that memory's edge (the rest of the valid values dropped
    without a word, where torch refuses the shapes). A PyptoError when the sizes are static, else
    a size guard checked before each call."""
    window = _window_extents.get(dst._value)
    if window is None:
        return
    sv, dv = src._value, dst._value
    for d, (o, have, declared) in enumerate(zip(offs, sv.valid_shape, dv.valid_shape)):
        wanted = E.simplify_dim(E.emin(have, E.emax(E.sub(declared, o), 0)))  # what the valid shapes say
        require_room("pypto.assemble", "dst", wanted, o, dst, d)


def require_room(op: str, param: str, wanted, offset, dst, d: int) -> None:
    """``wanted`` values written into ``dst`` from ``offset`` in dim ``d`` must fit the memory
    under ``dst`` (its shape, or less for a view whose valid shape was given): a ShapeError
    naming ``param`` for static sizes, else a size guard checked before each call."""
    window = _window_of(dst._value)
    fits = E.simplify_dim(E.emax(E.sub(window[d], offset), 0))
    if isinstance(wanted, int) and isinstance(fits, int):
        if wanted > fits:
            raise ShapeError(f"{op}: the write reaches past the memory of 'dst' in dim {d}: {wanted} valid "
                             f"positions from offset {E.render(offset)} would be cut to {fits} (torch refuses "
                             f"these shapes)" + (" ('dst' is a view whose valid shape reaches past the memory "
                                                 "it views)" if dst._value in _window_extents else ""),
                             expected=f"at most {fits} (the memory under 'dst' ends there)",
                             got=f"{wanted} (valid shape {E.render_dims(dst._value.valid_shape)} over "
                                 f"{E.render_dims(window)} of memory)", param=param, loc=loc())
    else:
        require(op).require_equal(wanted, fits, f"{op} into '{dst._value.root.name}': the values written and "
                                                f"the memory under 'dst', in dim {d}", loc(), rel="le")


@register("view", kind="move", aliases_input=True)
def _view(ins, attrs, ev):
    """A window of the input (an alias: no copy)."""
    x = ins[0]
    offs, sizes = ev(attrs["offsets"]), ev(attrs["shape"])
    valid = ev(attrs["valid"]) if attrs["valid"] is not None else None
    index = []
    for d, (o, s) in enumerate(zip(offs, sizes)):
        if o < 0:
            raise KernelRuntimeError(f"view offset is negative in dim {d}", got=o)
        n = x.shape[d]
        start = min(o, n)
        end = min(o + s, n)
        if valid is not None:
            end = min(end, start + max(valid[d], 0))
        index.append(slice(start, end))
    return x[tuple(index)]


def _view_dtype(input, dtype, shape, offsets, valid_shape):
    """``view(x, dtype=...)``: a bitwise reinterpretation (upstream ``View(input, dtype)``)."""
    if shape is not None or offsets is not None or valid_shape is not None:
        raise ArgumentTypeError("pypto.view with a new 'dtype' takes no shape, offsets or valid_shape",
                                expected="view(input, dtype=...)", got="a window as well", param="dtype",
                                loc=loc())
    if not isinstance(dtype, type(input.dtype)) or not dtype.supported or not input.dtype.supported:
        raise DTypeError("pypto.view: this dtype cannot be reinterpreted here", expected="a supported dtype",
                         got=repr(dtype), param="dtype", loc=loc())
    v = input._value
    if v.rank == 0:
        raise ShapeError("pypto.view with a new 'dtype' needs a tensor of rank >= 1", got="rank 0",
                         param="input", loc=loc())
    src, dst = input.dtype.itemsize, dtype.itemsize

    def scaled(n, what):
        if src >= dst:
            return E.simplify_dim(E.mul(n, src // dst)) if isinstance(n, E.Expr) else n * (src // dst)
        ratio = dst // src
        if isinstance(n, int):
            if n % ratio:
                raise ShapeError(f"pypto.view: the last dim's {what} is not a whole number of {dtype.name} "
                                 f"elements", expected=f"a multiple of {ratio}", got=n, param="dtype",
                                 loc=loc())
            return n // ratio
        return E.exact_quotient(E.lift(n), E.lift(ratio)) or E.simplify_dim(E.floordiv(n, ratio))

    shape = list(v.shape[:-1]) + [scaled(v.shape[-1], "size")]
    valid = list(v.valid_shape[:-1]) + [scaled(v.valid_shape[-1], "valid extent")]
    return emit("view_dtype", [input], [(dtype, shape, valid)], {"dtype": dtype})


@register("view_dtype", kind="vector")
def _view_dtype_leaf(ins, attrs, ev):
    """The input's bytes read as another dtype (a copy: the last dim scales)."""
    x = ins[0].contiguous()
    target = attrs["dtype"].torch()
    ratio = attrs["dtype"].itemsize / x.element_size()
    if ratio > 1 and x.shape[-1] % int(ratio):
        raise KernelRuntimeError("view with a new dtype: the last dim's valid extent is not a whole number "
                                 "of the new elements", expected=f"a multiple of {int(ratio)}", got=x.shape[-1])
    return x.view(target).clone()


# ---- assemble --------------------------------------------------------------------------------------

def assemble(src, offsets, dst=None, parallel=False):
    """Write the valid part of ``src`` into ``dst`` at ``offsets`` (clipped at ``dst``'s edge).

    Also ``assemble([(src, offsets), ...], dst)``. Returns ``dst``.
    """
    if isinstance(src, list):  # list form: the 2nd positional argument is dst
        dst = offsets if offsets is not None else dst
        if dst is None:
            raise ShapeError("pypto.assemble([(src, offsets), ...], dst) needs 'dst'", param="dst", loc=loc())
        for s, o in src:
            assemble(s, o, dst, parallel)
        return dst
    tensor_arg(src, "assemble", "src")
    tensor_arg(dst, "assemble", "dst")
    if src.dtype is not dst.dtype:
        raise DTypeError("pypto.assemble: 'src' and 'dst' have different dtypes", expected=dst.dtype.name,
                         got=src.dtype.name, param="src", loc=loc())
    offs = shape_list(offsets, "assemble", "offsets")
    if src.dim != dst.dim or len(offs) != dst.dim:
        raise ShapeError("pypto.assemble: 'src', 'offsets' and 'dst' must have the same rank",
                         expected=f"rank {dst.dim}", got=f"src rank {src.dim}, {len(offs)} offsets",
                         param="src", loc=loc())
    for d, (o, s, full) in enumerate(zip(offs, src._value.shape, dst._value.shape)):
        if all(isinstance(x, int) for x in (o, s, full)) and o + s > full:
            raise ShapeError(f"pypto.assemble: 'src' does not fit into 'dst' in dim {d}",
                             expected=f"offset + size <= {full}", got=f"{o} + {s}", param="offsets",
                             loc=loc())
    _check_window(src, offs, dst)
    return emit_inplace("assemble", [src, dst], dst, {"offsets": offs, "parallel": bool(parallel)})


@register("assemble", kind="move", writes_input=1)
def _assemble(ins, attrs, ev):
    """Copy src into a region of dst (in place)."""
    src, dst = ins
    index, crop = [], []
    for d, o in enumerate(ev(attrs["offsets"])):
        n = max(min(src.shape[d], dst.shape[d] - o), 0)
        index.append(slice(o, o + n))
        crop.append(slice(0, n))
    dst[tuple(index)] = src[tuple(crop)]
    return dst


# ---- reshape ---------------------------------------------------------------------------------------

def _numel(shape):
    n = 1
    for s in shape:
        n = E.mul(n, s) if isinstance(s, E.Expr) or isinstance(n, E.Expr) else n * s
    return E.simplify_dim(n)


def reshape(input, shape, *, valid_shape=None, inplace=False):
    """The same elements with a new shape (one entry may be -1)."""
    tensor_arg(input, "reshape", "input")
    v = input._value
    raw = list(shape) if isinstance(shape, (list, tuple)) else [shape]
    if sum(1 for s in raw if isinstance(s, int) and s == -1) > 1:
        raise ShapeError("pypto.reshape: at most one -1 in 'shape'", got=raw, param="shape", loc=loc())
    if -1 in [s for s in raw if isinstance(s, int)]:
        known = [s for s in raw if not (isinstance(s, int) and s == -1)]
        total, rest = _numel(v.shape), _numel(shape_list(known, "reshape"))
        if isinstance(total, int) and isinstance(rest, int):
            raw = [total // rest if (isinstance(s, int) and s == -1) else s for s in raw]
        else:
            raw = [E.simplify_dim(E.floordiv(total, rest)) if (isinstance(s, int) and s == -1) else s
                   for s in raw]
            raw = [SymbolicScalar(s) if isinstance(s, E.Expr) else s for s in raw]
    new = shape_list(raw, "reshape")
    old_n, new_n = _numel(v.shape), _numel(new)
    if isinstance(old_n, int) and isinstance(new_n, int) and old_n != new_n:
        raise ShapeError("pypto.reshape: the new 'shape' changes the number of elements",
                         expected=f"{old_n} elements ({E.render_dims(v.shape)})",
                         got=f"{new_n} elements ({E.render_dims(new)})", param="shape", loc=loc())
    valid = shape_list(valid_shape, "reshape", "valid_shape") if valid_shape is not None else None
    kept = _reshaped_valid(v, new) if valid is None else None
    attrs = {"shape": new, "valid": valid, "source": tuple(v.shape)}
    if kept is not None and tuple(kept) != tuple(new):
        attrs["keeps_valid"] = True  # the executors keep the tail's extents too (`_squeezed`)
    out = emit("reshape", [input], [(input.dtype, new, valid or kept or new, v)], attrs)
    if inplace:  # one memory under two names: writes through either are seen through the other
        require("pypto.reshape").aliases.add(out._value, v, loc())
    return out


def _reshaped_valid(v, new):
    """The valid shape after a reshape that only drops or inserts size-1 dims (a tail tile keeps
    its valid extents); None for any other reshape (taken as fully valid)."""
    keep_in = [(s, vs) for s, vs in zip(v.shape, v.valid_shape) if not _is_one(s)]
    keep_out = [s for s in new if not _is_one(s)]
    if len(keep_in) != len(keep_out) or any(not dims_equal(a, b) for (a, _), b in zip(keep_in, keep_out)):
        return None
    it = iter(vs for _, vs in keep_in)
    return tuple(1 if _is_one(s) else next(it) for s in new)


def _is_one(s) -> bool:
    return isinstance(s, int) and s == 1


def _squeezed(x, attrs, nb):
    """A reshape that only drops or inserts size-1 dims, on the valid part ``x``: its extents move
    to the new shape's other dims. Laying a tail into the whole shape would count the rows past
    the tail as valid ones (flash attention's last K block, 32 valid rows of 64, was a softmax over
    64 columns in the reference). None when a dropped dim is empty (nothing to move)."""
    kept = iter(n for n, s in zip(x.shape[nb:], attrs["source"]) if not _is_one(s))
    shape = [1 if _is_one(s) else next(kept) for s in attrs["shape"]]
    if math.prod(shape) * math.prod(x.shape[:nb]) != x.numel():
        return None
    return x.reshape(*x.shape[:nb], *shape)


def squeeze_dims(input, dims, keep):
    """Drop size-1 dims (integer indexing)."""
    v = input._value
    valid = tuple(s for d, s in enumerate(v.valid_shape) if d not in dims)
    return emit("reshape", [input], [(input.dtype, tuple(keep), valid, v)],
                {"shape": tuple(keep), "valid": None, "squeeze": tuple(dims)})


def unsqueeze_dims(input, dims, sizes):
    """Insert size-1 dims at ``dims`` (assignment through integer indexing)."""
    v = input._value
    shape, valid, it = [], [], iter(zip(v.shape, v.valid_shape))
    for d in range(len(sizes)):
        if d in dims:
            shape.append(1)
            valid.append(1)
        else:
            s, vs = next(it, (None, None))
            if s is None:
                raise ShapeError("slice assignment: the source has too few dims", loc=loc())
            shape.append(s)
            valid.append(vs)
    if next(it, None) is not None:
        raise ShapeError("slice assignment: the source has too many dims",
                         expected=f"rank {len(sizes) - len(dims)}", got=f"rank {v.rank}", loc=loc())
    return emit("reshape", [input], [(input.dtype, tuple(shape), tuple(valid), v)],
                {"shape": tuple(shape), "valid": None, "unsqueeze": tuple(dims)})


@register("reshape", kind="move", aliases_input=True)
def _reshape(ins, attrs, ev):
    """Same data, new shape (the valid part when a tail is partial)."""
    x = ins[0]
    if "squeeze" in attrs:
        drop = attrs["squeeze"]
        return x.reshape([s for d, s in enumerate(x.shape) if d not in drop])
    if "unsqueeze" in attrs:
        shape, it = [], iter(x.shape)
        for d in range(len(attrs["shape"])):
            shape.append(1 if d in attrs["unsqueeze"] else next(it))
        return x.reshape(shape)
    source = ev(attrs["source"]) if "source" in attrs else None
    nb = x.dim() - len(source) if source is not None else 0  # leading batch dims (codegen batches)
    if attrs.get("keeps_valid") and nb >= 0:
        out = _squeezed(x, attrs, nb)
        if out is not None:
            return out
    if source is not None and nb >= 0 and tuple(x.shape[nb + 1:]) != tuple(source[1:]):
        # a dim after the first is partly valid (e.g. [T, 4] valid of [T, 8]): the data is not a
        # row-major prefix of the tensor, and the device reshapes its memory, valid or not. Lay the
        # valid part into the whole shape (zeros elsewhere: the device leaves it unspecified) and
        # reshape that; packing the valid elements together would shift every row after the first
        batch = tuple(x.shape[:nb])
        whole = x.new_zeros(batch + tuple(source))
        whole[(..., *(slice(0, n) for n in x.shape[nb:]))] = x
        out = whole.reshape(batch + tuple(ev(attrs["shape"])))
        if attrs["valid"] is not None:
            out = out[(..., *(slice(0, n) for n in ev(attrs["valid"])))]
        return out
    target = ev(attrs["valid"]) if attrs["valid"] is not None else ev(attrs["shape"])
    if math.prod(target) == x.numel():
        return x.reshape(target)
    full = ev(attrs["shape"])
    if attrs["valid"] is not None and source is not None and nb >= 0 \
            and tuple(x.shape[nb:]) == tuple(source) and math.prod(source) == math.prod(full):
        # the whole tile came, padding rows too (qwen3_next's chunk output [l, d], computed over
        # padded inputs, reshaped to [l, 1, d] with valid [actual_l, 1, d]): reshape its memory,
        # as the device does, and keep the valid part (leading batch dims of a batched leaf kept)
        out = x.reshape(tuple(x.shape[:nb]) + tuple(full))
        return out[(..., *(slice(0, n) for n in target))]
    rest = math.prod(target[1:]) if len(target) > 1 else 1
    if rest and x.numel() % rest == 0 and x.numel() <= math.prod(target):
        return x.reshape([x.numel() // rest, *target[1:]])
    raise KernelRuntimeError("reshape of a partial (tail) tile is ambiguous",
                             expected=f"{math.prod(target)} valid elements ({list(target)})",
                             got=f"{x.numel()} elements ({list(x.shape)})",
                             hint="pass valid_shape=[...] to pypto.reshape")


# ---- transpose, concat, expand_clone, clone --------------------------------------------------------

def transpose(input, dim0=-2, dim1=-1):
    """Swap two dims."""
    tensor_arg(input, "transpose", "input")
    v = input._value
    d0, d1 = norm_dim(dim0, v.rank, "transpose", "dim0"), norm_dim(dim1, v.rank, "transpose", "dim1")
    shape, valid = list(v.shape), list(v.valid_shape)
    shape[d0], shape[d1] = shape[d1], shape[d0]
    valid[d0], valid[d1] = valid[d1], valid[d0]
    return emit("transpose", [input], [(input.dtype, shape, valid)], {"dims": (d0, d1)})


@register("transpose", kind="vector")
def _transpose(ins, attrs, ev):
    """Swap two dims (a copy)."""
    return ins[0].transpose(*attrs["dims"]).contiguous()


def concat(tensors, dim=0):
    """Join tensors of the same dtype and rank along ``dim``."""
    if not isinstance(tensors, (list, tuple)) or not tensors:
        raise ShapeError("pypto.concat needs a non-empty list of tensors", got=repr(tensors),
                         param="tensors", loc=loc())
    for i, t in enumerate(tensors):
        tensor_arg(t, "concat", f"tensors[{i}]")
    first = tensors[0]._value
    d = norm_dim(dim, first.rank, "concat")
    size, valid = 0, 0
    for i, t in enumerate(tensors):
        v = t._value
        if v.dtype is not first.dtype:
            raise DTypeError("pypto.concat: tensors have different dtypes", expected=first.dtype.name,
                             got=f"{v.dtype.name} for tensors[{i}]", param=f"tensors[{i}]", loc=loc())
        if v.rank != first.rank or any(
                not same_size(a, b, f"pypto.concat: dim {k} of 'tensors[{i}]' and of 'tensors[0]'", loc())
                for k, (a, b) in enumerate(zip(v.shape, first.shape)) if k != d):
            raise ShapeError(f"pypto.concat: tensors[{i}] does not match tensors[0] outside dim {d}",
                             expected=E.render_dims(first.shape), got=E.render_dims(v.shape),
                             param=f"tensors[{i}]", loc=loc())
        for k, (a, b) in enumerate(zip(first.valid_shape, v.valid_shape)):
            if k != d and a != b and (isinstance(a, E.Expr) or isinstance(b, E.Expr)):
                require("pypto.concat").require_equal(
                    a, b, f"pypto.concat: valid extents of dim {k} of 'tensors[0]' and 'tensors[{i}]'", loc())
        size = E.simplify_dim(E.add(size, v.shape[d]))
        valid = E.simplify_dim(E.add(valid, v.valid_shape[d]))
    shape = list(first.shape)
    shape[d] = size
    vshape = list(first.valid_shape)
    vshape[d] = valid
    return emit("concat", list(tensors), [(first.dtype, shape, vshape)], {"dim": d})


@register("concat", kind="vector")
def _concat(ins, attrs, ev):
    """Join along a dim (other dims cropped to their common valid extent)."""
    d = attrs["dim"]
    rank = ins[0].dim()
    flags = tuple(tuple(k == d for k in range(rank)) for _ in ins)
    return torch.cat(align_valid(ins, flags), dim=d)


def expand_clone(input, shape, *, valid_shape=None):
    """Broadcast size-1 dims of ``input`` to ``shape`` and materialise the result."""
    tensor_arg(input, "expand_clone", "input")
    v = input._value
    target = shape_list(shape, "expand_clone")
    if len(target) != v.rank:
        raise ShapeError("pypto.expand_clone: 'shape' must have the input's rank", expected=v.rank,
                         got=len(target), param="shape", loc=loc())
    for d, (a, b) in enumerate(zip(v.shape, target)):
        if not (isinstance(a, int) and a == 1) and not dims_equal(a, b):
            raise ShapeError(f"pypto.expand_clone: dim {d} of size {E.render(a)} cannot expand",
                             expected=f"size 1 or {E.render(b)}", got=E.render(a), param="shape", loc=loc())
    valid = shape_list(valid_shape, "expand_clone", "valid_shape") if valid_shape is not None else \
        tuple(t if (isinstance(a, int) and a == 1) else vs for a, t, vs in zip(v.shape, target, v.valid_shape))
    bdims = tuple(d for d, a in enumerate(v.shape) if isinstance(a, int) and a == 1)
    return emit("expand_clone", [input], [(input.dtype, target, valid)],
                {"shape": target, "valid": valid, "bdims": bdims})


def expand(input, shape):
    """Broadcast ``input`` to ``shape`` (torch's ``expand``, materialised): size-1 dims grow to the
    target size, ``-1`` keeps a dim's size, and extra leading dims are added in front."""
    tensor_arg(input, "expand", "input")
    v = input._value
    if isinstance(shape, (int, SymbolicScalar)):
        shape = [shape]
    if not isinstance(shape, (list, tuple)) or len(shape) < v.rank:
        raise ShapeError("pypto.expand: 'shape' must have at least the input's rank",
                         expected=f"a list of >= {v.rank} sizes", got=repr(shape), param="shape", loc=loc())
    lead = len(shape) - v.rank
    target = []
    for d, s in enumerate(shape):
        if isinstance(s, int) and not isinstance(s, bool) and s == -1:
            if d < lead:
                raise ShapeError(f"pypto.expand: -1 in new leading dim {d}", expected="a size for a new dim",
                                 got=list(shape), param="shape", loc=loc())
            s = input.shape[d - lead]
        target.append(s)
    if lead:
        input = unsqueeze_dims(input, tuple(range(lead)), [1] * lead + list(v.shape))
    return expand_clone(input, target)


@register("expand_clone", kind="vector")
def _expand_clone(ins, attrs, ev):
    """Broadcast and copy."""
    x = ins[0]
    valid = ev(attrs["valid"])
    size = [valid[d] if d in attrs["bdims"] else x.shape[d] for d in range(x.dim())]
    return x.expand(size).clone()


def clone(input):
    """A copy of ``input``."""
    tensor_arg(input, "clone", "input")
    v = input._value
    return emit("clone", [input], [(input.dtype, v.shape, v.valid_shape)])


@register("clone", kind="vector")
def _clone(ins, attrs, ev):
    """Copy."""
    return ins[0].clone()


# ---- element reads ---------------------------------------------------------------------------------

def read_element(t: Tensor, indices):
    """``t[i, j]`` on an INT32/INT64 kernel parameter: a SymbolicScalar read at run time."""
    v = t._value
    if v.dtype not in (DT_INT32, DT_INT64):
        raise DTypeError("reading a tensor element as a scalar needs an INT32 or INT64 tensor",
                         expected="DT_INT32 or DT_INT64", got=v.dtype.name, loc=loc())
    if v.kind != "param":
        raise KernelSyntaxError("element reads are supported on kernel parameters only",
                                got=f"an element of %{v.name}", hint="index the parameter tensor directly",
                                loc=loc())
    return SymbolicScalar.wrap(E.Load(v.name, tuple(indices)))
