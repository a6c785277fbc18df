"""More indexing and region ops: atomic_add, index_put_, fillpad, gathermask, the UB variants of
index_add (``index_add_ub`` / ``index_add__ub``) and the paged gathers of ``pypto.experimental``
(``gather_in_ub`` / ``gather_in_l1``).

Memory placement is not modelled: upstream's ``*_ub`` / ``*_in_l1`` / ``*_in_ub`` variants keep
their operands in UB or L1 on the NPU; here they lower like their GM forms (index_add_ub is an
``index_add``; the paged gathers are whole-tensor GM->GM ops like `pypto.gather`).

``atomic_add(src, offsets, dst)`` adds ``src`` into the region of ``dst`` at ``offsets``. It is
built from the ops it consists of: a view of that region, an add, and an assemble back into
``dst``. The assemble reads and writes ``dst``, so iterations of a loop adding into the same
region are ordered by their RAW/WAW dependencies (upstream's atomic accumulation in GM makes the
order of concurrent adds unspecified; the sum is the same up to rounding).
"""

from __future__ import annotations

import math

from .._lazy import torch

from ..dtypes import (DT_BF16, DT_FP16, DT_FP32, DT_INT8, DT_INT16, DT_INT32, DT_INT64, DT_UINT8,
                      SUPPORTED_DTYPES)
from ..errors import DTypeError, ShapeError
from ..frontend.tensor import Tensor
from ..ir import expr as E
from .common import check_dtype, emit, loc, shape_list, tensor_arg
from .indexing import _check_range, _in_place, _index_add_args, _index_arg, _same_dtype, _static_ne
from .registry import register

# A2/A3 dtypes from upstream's docs, less those this build lacks (UINT16/32/64)
ATOMIC_ADD_DTYPES = (DT_FP32, DT_FP16, DT_BF16, DT_INT16, DT_INT32)  # those of the add it lowers to
INDEX_PUT_DTYPES = (DT_INT8, DT_UINT8, DT_INT16, DT_INT32, DT_INT64, DT_BF16, DT_FP16, DT_FP32)
INDEX_PUT_ACC_DTYPES = (DT_BF16, DT_FP16, DT_FP32, DT_INT8, DT_INT16, DT_INT32)
INDEX_PUT_INDEX_DTYPES = (DT_INT8, DT_UINT8, DT_INT16, DT_INT32, DT_INT64)
FILLPAD_DTYPES = (DT_FP32, DT_FP16, DT_BF16, DT_INT8, DT_INT16, DT_INT32, DT_UINT8)
GATHERMASK_DTYPES = (DT_INT16, DT_INT32, DT_FP16, DT_BF16, DT_FP32)
INDEX_ADD_UB_DTYPES = (DT_FP32, DT_FP16, DT_BF16, DT_INT16, DT_INT32)
# the docs list fp32/fp16, but the op only moves rows: upstream's device kernel copies elements of
# any type, its frontend checks none, and its own models gather bf16 KV caches (DeepSeek V4) and
# int8 quantized ones (DeepSeek V3.2) with it. Every dtype this build computes with is accepted.
GATHER_IN_UB_DTYPES = SUPPORTED_DTYPES
GATHER_IN_L1_DTYPES = (DT_FP32, DT_FP16, DT_BF16, DT_INT8)
# pattern_mode -> (first element, step) along the last dim
_PATTERNS = {1: (0, 2), 2: (1, 2), 3: (0, 4), 4: (1, 4), 5: (2, 4), 6: (3, 4), 7: (0, 1)}


# ---- atomic_add ------------------------------------------------------------------------------------

def atomic_add(src, offsets, dst):
    """``dst[o0:o0+s0, o1:o1+s1, ..] += src`` (in place; returns ``dst``).

    ``src`` and ``dst`` share dtype and rank, ``offsets`` has one int or symbolic scalar per dim
    and ``src`` must fit into ``dst`` at ``offsets`` (its shape checked for static sizes, its valid
    part before each call). Only ``src``'s valid part is added (a tail tile adds its valid rows).
    Lowered as a view of the region, an add and an assemble (see the module doc).
    """
    from .elementwise import add
    from .shape import assemble, require_room, view

    tensor_arg(src, "atomic_add", "src")
    tensor_arg(dst, "atomic_add", "dst")
    check_dtype("atomic_add", dst, "dst", ATOMIC_ADD_DTYPES)
    if src.dtype is not dst.dtype:
        raise DTypeError("pypto.atomic_add: 'src' and 'dst' have different dtypes", expected=dst.dtype.name,
                         got=src.dtype.name, param="src", loc=loc())
    offs = shape_list(offsets, "atomic_add", "offsets")
    sv, dv = src._value, dst._value
    if sv.rank != dv.rank or len(offs) != dv.rank:
        raise ShapeError("pypto.atomic_add: 'src', 'offsets' and 'dst' must have the same rank",
                         expected=f"rank {dv.rank}", got=f"src rank {sv.rank}, {len(offs)} offsets", param="src",
                         loc=loc())
    shape = []
    for d, (o, s, full) in enumerate(zip(offs, sv.shape, dv.shape)):
        if not isinstance(s, int):
            raise ShapeError(f"pypto.atomic_add: 'src' needs a static size in dim {d}", got=E.render(s),
                             param="src", loc=loc())
        if isinstance(o, int) and isinstance(full, int) and o + s > full:
            raise ShapeError(f"pypto.atomic_add: 'src' does not fit into 'dst' in dim {d}",
                             expected=f"offset + size <= {full}", got=f"{o} + {s}", param="offsets", loc=loc())
        shape.append(s)
        require_room("pypto.atomic_add", "src", sv.valid_shape[d], o, dst, d)
    # the region added to is src's valid part (a tail tile adds its valid rows), not dst's
    region = view(dst, shape, list(offs), valid_shape=list(sv.valid_shape))
    assemble(add(region, src), list(offs), dst)
    return dst


# ---- index_put_ ------------------------------------------------------------------------------------

def index_put_(input, indices, values, accumulate=False):
    """``input[indices[0][i], .., indices[k-1][i], ...] = values[i, ...]`` for every i (torch's
    ``index_put_`` with a tuple of k 1-D index tensors of one length t); with ``accumulate=True``
    the values are added instead (repeated positions accumulate; without accumulate, which value
    lands at a repeated position is unspecified). ``values`` is ``[t, *input.shape[k:]]``, so
    ``input.dim + 1 == k + values.dim``. In place: ``input`` is updated and returned.
    """
    op = "index_put_"
    tensor_arg(input, op, "input")
    check_dtype("index_put", input, "input")
    if not isinstance(accumulate, bool):
        raise ShapeError("pypto.index_put_: 'accumulate' must be a bool", got=repr(accumulate), param="accumulate",
                         loc=loc())
    if accumulate:
        check_dtype("index_put", input, "input", INDEX_PUT_ACC_DTYPES)
    if isinstance(indices, Tensor) or not isinstance(indices, (tuple, list)) or not indices:
        raise ShapeError("pypto.index_put_: 'indices' must be a non-empty tuple of 1-D index tensors",
                         got=type(indices).__name__, param="indices", loc=loc())
    v = input._value
    if len(indices) > v.rank:
        raise ShapeError("pypto.index_put_: more index tensors than 'input' has dims", expected=f"<= {v.rank}",
                         got=len(indices), param="indices", loc=loc())
    for k, idx in enumerate(indices):
        _index_arg(idx, op, INDEX_PUT_INDEX_DTYPES, f"indices[{k}]")
        iv = idx._value
        if iv.rank != 1:
            raise ShapeError(f"pypto.index_put_: 'indices[{k}]' must be 1-D", expected="rank 1",
                             got=f"rank {iv.rank}", param=f"indices[{k}]", loc=loc())
        if _static_ne(iv.shape[0], indices[0]._value.shape[0]):
            raise ShapeError("pypto.index_put_: the index tensors differ in length",
                             expected=E.render(indices[0]._value.shape[0]), got=E.render(iv.shape[0]),
                             param=f"indices[{k}]", loc=loc())
    tensor_arg(values, op, "values")
    _same_dtype(op, input, values, "values")
    vv, n = values._value, len(indices)
    want = (indices[0]._value.shape[0], *v.shape[n:])
    if vv.rank != len(want) or any(_static_ne(a, b) for a, b in zip(vv.shape, want)):
        raise ShapeError("pypto.index_put_: 'values' must be [t, *input.shape[k:]] for k index tensors of length t",
                         expected=E.render_dims(want), got=E.render_dims(vv.shape), param="values", loc=loc())
    out = emit("index_put", [input, *indices, values], [(input.dtype, v.shape, v.valid_shape)],
               {"accumulate": accumulate, "n_idx": n})
    return _in_place(out, input)


@register("index_put", kind="vector", fp32_math=True, dtypes=INDEX_PUT_DTYPES)
def _index_put(ins, attrs, ev):
    """torch.index_put on a copy of the input (index values checked against each dim)."""
    n = attrs["n_idx"]
    x, idx, vals = ins[0], ins[1:1 + n], ins[1 + n]
    t = min([i.shape[0] for i in idx] + [vals.shape[0]])
    for d, i in enumerate(idx):
        _check_range(i[:t], x.shape[d], "index_put_", f"indices[{d}]")
    out = x.clone(memory_format=torch.contiguous_format)
    rest = tuple(slice(0, s) for s in out.shape[n:])
    return out.index_put_(tuple(i[:t].long() for i in idx), vals[(slice(0, t), *rest)],
                          accumulate=attrs["accumulate"])


# ---- fillpad ---------------------------------------------------------------------------------------

def fillpad(input, mode="constant", value=0):
    """A tensor of ``input``'s shape and dtype: the valid part of ``input``, every element beyond
    its valid shape set to ``value`` (right and bottom padding). 1-D or 2-D; only
    ``mode='constant'``. ``value`` is an int or float (or a string such as ``"-inf"``) and is
    converted to the input's dtype (a non-integral or infinite value for an integer tensor is a
    DTypeError). The result is fully valid.
    """
    tensor_arg(input, "fillpad", "input")
    check_dtype("fillpad", input, "input")
    v = input._value
    if v.rank not in (1, 2):
        raise ShapeError("pypto.fillpad supports 1-D and 2-D tensors", expected="rank 1 or 2", got=f"rank {v.rank}",
                         param="input", loc=loc())
    if mode != "constant":
        raise ShapeError("pypto.fillpad supports mode='constant' only", expected="'constant'", got=repr(mode),
                         param="mode", loc=loc())
    if isinstance(value, str):
        try:
            value = float(value)
        except ValueError:
            raise DTypeError("pypto.fillpad: 'value' must be a number", got=repr(value), param="value",
                             loc=loc()) from None
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        raise DTypeError("pypto.fillpad: 'value' must be an int or float", got=type(value).__name__, param="value",
                         loc=loc())
    if not input.dtype.is_float:
        if isinstance(value, float) and not (math.isfinite(value) and value.is_integer()):
            raise DTypeError("pypto.fillpad: an integer tensor needs an integral 'value'",
                             expected="an int", got=repr(value), param="value", loc=loc())
        value = int(value)
    return emit("fillpad", [input], [(input.dtype, v.shape, v.shape)], {"value": value, "shape": v.shape})


@register("fillpad", kind="vector", dtypes=FILLPAD_DTYPES)
def _fillpad(ins, attrs, ev):
    """``value`` everywhere, the valid input in the top-left corner."""
    x = ins[0]
    out = torch.full(tuple(ev(attrs["shape"])), attrs["value"], dtype=x.dtype)
    out[tuple(slice(0, s) for s in x.shape)] = x
    return out


# ---- gathermask ------------------------------------------------------------------------------------

def gathermask(input, pattern_mode):
    """Elements of the last dim picked by a built-in mask: ``pattern_mode`` 1/2 keep the 1st/2nd of
    every 2 elements, 3..6 the 1st..4th of every 4, 7 keeps all. The last dim shrinks by the
    pattern's step (2, 4 or 1) and must be a multiple of it; the other dims are unchanged.
    """
    tensor_arg(input, "gathermask", "input")
    check_dtype("gathermask", input, "input")
    if isinstance(pattern_mode, bool) or pattern_mode not in _PATTERNS:
        raise ShapeError("pypto.gathermask: 'pattern_mode' must be an int in 1..7", got=repr(pattern_mode),
                         param="pattern_mode", loc=loc())
    v = input._value
    first, step = _PATTERNS[pattern_mode]
    last = v.shape[-1]
    if isinstance(last, int) and last % step:
        raise ShapeError(f"pypto.gathermask: the last dim must be a multiple of {step} for pattern_mode "
                         f"{pattern_mode}", expected=f"a multiple of {step}", got=last, param="input", loc=loc())
    shape = (*v.shape[:-1], E.simplify_dim(E.floordiv(last, step)))
    valid = (*v.valid_shape[:-1], E.simplify_dim(E.floordiv(v.valid_shape[-1], step)))
    return emit("gathermask", [input], [(input.dtype, shape, valid)], {"first": first, "step": step})


@register("gathermask", kind="vector", dtypes=GATHERMASK_DTYPES)
def _gathermask(ins, attrs, ev):
    """Every step-th element of the last dim from ``first`` on."""
    x = ins[0]
    return x[..., attrs["first"]::attrs["step"]][..., :x.shape[-1] // attrs["step"]].contiguous()


# ---- index_add_ub / index_add__ub ------------------------------------------------------------------

def index_add_ub(input, dim, index, source, *, alpha=1):
    """`index_add` with upstream's UB-resident operands (same semantics; the placement is not
    modelled). Accepts DT_FP32, DT_FP16, DT_BF16, DT_INT16 and DT_INT32 tensors."""
    tensor_arg(input, "index_add_ub", "input")
    check_dtype("index_add_ub", input, "input", INDEX_ADD_UB_DTYPES)
    return _index_add_args("index_add_ub", input, dim, index, source, alpha)


def index_add__ub(input, dim, index, source, *, alpha=1):
    """In-place `index_add_ub`: the sums are written over ``input``, which is returned."""
    tensor_arg(input, "index_add__ub", "input")
    check_dtype("index_add__ub", input, "input", INDEX_ADD_UB_DTYPES)
    return _in_place(_index_add_args("index_add__ub", input, dim, index, source, alpha), input)


# ---- experimental.gather_in_ub / gather_in_l1 ------------------------------------------------------

def _paged_args(op, src, indices, block_table, block_size, dtypes, index_dtypes):
    tensor_arg(src, op, "src" if op == "gather_in_l1" else "param")
    check_dtype(op, src, "src" if op == "gather_in_l1" else "param", dtypes)
    _index_arg(indices, op, index_dtypes, "indices")
    _index_arg(block_table, op, (DT_INT32,), "block_table")
    for name, t in (("src" if op == "gather_in_l1" else "param", src), ("indices", indices),
                    ("block_table", block_table)):
        if t._value.rank != 2:
            raise ShapeError(f"pypto.experimental.{op}: '{name}' must be 2-D", expected="rank 2",
                             got=f"rank {t._value.rank}", param=name, loc=loc())
    for name, t in (("indices", indices), ("block_table", block_table)):
        if _static_ne(t._value.shape[0], 1):
            raise ShapeError(f"pypto.experimental.{op}: '{name}' must be [1, n]", expected="shape[0] == 1",
                             got=E.render_dims(t._value.shape), param=name, loc=loc())
    if isinstance(block_size, bool) or not isinstance(block_size, int) or block_size <= 0:
        raise ShapeError(f"pypto.experimental.{op}: 'block_size' must be a positive int", got=repr(block_size),
                         param="block_size", loc=loc())


def gather_in_ub(param, indices, block_table, block_size, axis=-2):
    """Rows of a paged KV cache ``param [tokens, hidden]`` for the logical token ids in
    ``indices [1, k]``: token ``t`` sits in physical row ``block_table[0, t // block_size] *
    block_size + t % block_size``. Returns ``[k, hidden]``. ``axis`` must be -2. Upstream loads the
    rows into UB; here it is a whole-tensor GM->GM op (the placement is not modelled).

    As on the device, ``param`` is the cache's base: a view of it gives the first row and the row
    length, and physical rows past the view's own extent (up to the end of its tensor) are read.
    """
    _paged_args("gather_in_ub", param, indices, block_table, block_size, GATHER_IN_UB_DTYPES, (DT_INT32,))
    if isinstance(axis, bool) or axis not in (-2, 0):
        raise ShapeError("pypto.experimental.gather_in_ub supports axis=-2 only", expected="-2", got=repr(axis),
                         param="axis", loc=loc())
    v, iv = param._value, indices._value
    return emit("gather_in_ub", [param, indices, block_table],
                [(param.dtype, (iv.shape[1], v.shape[1]), (iv.valid_shape[1], v.valid_shape[1]))],
                {"block_size": block_size})


def gather_in_l1(src, indices, block_table, block_size, size, is_b_matrix=False, is_trans=False):
    """The first ``size`` elements of the rows of a paged ``src [tokens, d]`` picked by the
    logical token ids in ``indices [1, n]`` (addressed through ``block_table`` as in
    `gather_in_ub`): ``[n, size]``. Upstream loads the rows into L1, where ``is_b_matrix`` and
    ``is_trans`` choose the layout of a matmul operand; the result is ``[n, size]`` either way
    (the flags are layout, not shape). Placement and layout are not modelled: here it is a
    whole-tensor GM->GM op. ``src`` is the cache's base, as in `gather_in_ub`.
    """
    _paged_args("gather_in_l1", src, indices, block_table, block_size, GATHER_IN_L1_DTYPES, (DT_INT32, DT_INT64))
    v, iv = src._value, indices._value
    if isinstance(size, bool) or not isinstance(size, int) or size <= 0:
        raise ShapeError("pypto.experimental.gather_in_l1: 'size' must be a positive int", got=repr(size),
                         param="size", loc=loc())
    if isinstance(v.shape[1], int) and size > v.shape[1]:
        raise ShapeError("pypto.experimental.gather_in_l1: 'size' exceeds the row length of 'src'",
                         expected=f"size <= {v.shape[1]}", got=size, param="size", loc=loc())
    for name, flag in (("is_b_matrix", is_b_matrix), ("is_trans", is_trans)):
        if not isinstance(flag, bool):
            raise ShapeError(f"pypto.experimental.gather_in_l1: '{name}' must be a bool", got=repr(flag),
                             param=name, loc=loc())
    shape, valid = (iv.shape[1], size), (iv.valid_shape[1], size)
    return emit("gather_in_l1", [src, indices, block_table], [(src.dtype, shape, valid)],
                {"block_size": block_size, "size": size, "is_trans": is_trans, "is_b_matrix": is_b_matrix})


def _paged_rows(op, x, idx, table, block_size):
    logical = idx.reshape(-1).long()
    pages = table.reshape(-1).long()
    _check_range(logical, pages.numel() * block_size, op, "indices")
    physical = pages[logical // block_size] * block_size + logical % block_size
    _check_range(physical, x.shape[0], op, "block_table")
    return x.index_select(0, physical)


@register("gather_in_ub", kind="vector", dtypes=GATHER_IN_UB_DTYPES)
def _gather_in_ub(ins, attrs, ev):
    """Rows at the physical positions of the logical token ids."""
    x, idx, table = ins
    return _paged_rows("gather_in_ub", x, idx, table, attrs["block_size"])


@register("gather_in_l1", kind="vector", dtypes=GATHER_IN_L1_DTYPES)
def _gather_in_l1(ins, attrs, ev):
    """The first ``size`` columns of the rows at the physical positions (is_trans is layout only)."""
    x, idx, table = ins
    return _paged_rows("gather_in_l1", x, idx, table, attrs["block_size"])[:, :attrs["size"]]
