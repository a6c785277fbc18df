"""Indexing operators: gather, index_select, index_add(_), scatter(_), scatter_update, one_hot.

Index tensors are DT_INT32 or DT_INT64 (scatter_update also takes DT_INT16); an index value outside
``[0, size)`` of its dim is a `KernelRuntimeError` when the kernel runs. Ops whose addressing
depends on index *values* lower as one whole-tensor GM->GM instance (`Expander.whole`); one_hot is
tiled over its leading dims with the class dim whole.

The in-place forms (``index_add_``, ``scatter_``, ``scatter_update``) compute the updated tensor
and write it back over ``input`` (an assemble), then return ``input``, so a kernel parameter
passed as ``input`` is updated for the caller. ``index_add`` / ``scatter`` return a new tensor
and leave ``input`` alone.
"""

from __future__ import annotations

from .._lazy import torch

from ..dtypes import (DT_BF16, DT_FP16, DT_FP32, DT_INT8, DT_INT16, DT_INT32, DT_INT64, DT_UINT8)
from ..errors import DTypeError, KernelRuntimeError, ShapeError
from ..frontend.tensor import Tensor
from ..ir import expr as E
from .common import check_dtype, emit, loc, norm_dim, scalar_arg, tensor_arg
from .registry import register

INDEX_DTYPES = (DT_INT32, DT_INT64)
# A2/A3 dtypes of each op's data operand (upstream docs), less those this build lacks (UINT16/32)
GATHER_DTYPES = (DT_FP32, DT_FP16, DT_BF16, DT_INT16, DT_INT32)
INDEX_SELECT_DTYPES = (DT_FP32, DT_FP16, DT_BF16, DT_INT8, DT_INT16, DT_INT32, DT_UINT8)
INDEX_ADD_DTYPES = (DT_FP32, DT_FP16, DT_BF16, DT_INT8, DT_INT16, DT_INT32)
SCATTER_DTYPES = (DT_FP32, DT_FP16, DT_BF16, DT_INT8, DT_UINT8, DT_INT16, DT_INT32)
# the docs list fp32/fp16/bf16/int32/int16, but the op only moves rows and upstream's own int8 KV
# caches (DeepSeek V3.2 indexer) go through it: int8 is accepted as upstream's kernel does
SCATTER_UPDATE_DTYPES = (DT_FP32, DT_FP16, DT_BF16, DT_INT32, DT_INT16, DT_INT8)
ONE_HOT_DTYPES = (DT_INT8, DT_INT16, DT_INT32, DT_INT64)
_REDUCE = {"add": "sum", "multiply": "prod"}


# ---- argument checks -------------------------------------------------------------------------------

def _index_arg(index, op: str, allowed=INDEX_DTYPES, param: str = "index") -> Tensor:
    tensor_arg(index, op, param)
    if index.dtype not in allowed:
        raise DTypeError(f"pypto.{op}: '{param}' must be an integer index tensor",
                         expected=" or ".join(d.name for d in allowed), got=index.dtype.name, param=param,
                         loc=loc())
    return index


def _static_gt(a, b) -> bool:
    """a > b for two static sizes (symbolic sizes are not compared at compile time)."""
    return isinstance(a, int) and isinstance(b, int) and a > b


def _static_ne(a, b) -> bool:
    return isinstance(a, int) and isinstance(b, int) and a != b


def _same_dtype(op: str, input: Tensor, other: Tensor, param: str) -> None:
    if other.dtype is not input.dtype:
        raise DTypeError(f"pypto.{op}: '{param}' and 'input' have different dtypes", expected=input.dtype.name,
                         got=other.dtype.name, param=param, loc=loc())


def _check_range(idx, size: int, op: str, what: str = "index") -> None:
    if idx.numel() == 0:
        return
    lo, hi = int(idx.min()), int(idx.max())
    if lo < 0 or hi >= size:
        raise KernelRuntimeError(f"pypto.{op}: a value of '{what}' is out of range", expected=f"0 <= {what} < {size}",
                                 got=f"values in [{lo}, {hi}]")


def _in_place(result: Tensor, input: Tensor) -> Tensor:
    from .shape import assemble

    return assemble(result, [0] * input.dim, input)


# ---- gather ----------------------------------------------------------------------------------------

def gather(input, dim, index):
    """``out[i][j][k] = input[index[i][j][k]][j][k]`` for dim 0 (likewise for other dims).

    ``index`` has the rank of ``input`` and no larger size in any dim but ``dim``; the result has
    the shape of ``index`` and the dtype of ``input``.
    """
    tensor_arg(input, "gather", "input")
    check_dtype("gather", input, "input")
    _index_arg(index, "gather")
    v, iv = input._value, index._value
    d = norm_dim(dim, v.rank, "gather")
    if iv.rank != v.rank:
        raise ShapeError("pypto.gather: 'index' must have the rank of 'input'", expected=f"rank {v.rank}",
                         got=f"rank {iv.rank}", param="index", loc=loc())
    for k, (a, b) in enumerate(zip(iv.shape, v.shape)):
        if k != d and _static_gt(a, b):
            raise ShapeError(f"pypto.gather: 'index' is larger than 'input' in dim {k}",
                             expected=f"index.shape[{k}] <= {b}", got=a, param="index", loc=loc())
    return emit("gather", [input, index], [(input.dtype, iv.shape, iv.valid_shape)], {"dim": d})


@register("gather", kind="vector", dtypes=GATHER_DTYPES)
def _gather(ins, attrs, ev):
    """torch.gather along dim (index values checked against the input's extent)."""
    x, idx = ins
    d = attrs["dim"]
    _check_range(idx, x.shape[d], "gather")
    return torch.gather(x, d, idx.long())


# ---- index_select ----------------------------------------------------------------------------------

def index_select(input, dim, index):
    """Slices of ``input`` along ``dim`` picked by a 1-D or 2-D ``index``.

    The result's dim ``dim`` is replaced by the whole shape of ``index``:
    ``[S0, .., S(d-1), *index.shape, S(d+1), ..]``.
    """
    tensor_arg(input, "index_select", "input")
    check_dtype("index_select", input, "input")
    _index_arg(index, "index_select")
    v, iv = input._value, index._value
    d = norm_dim(dim, v.rank, "index_select")
    if iv.rank not in (1, 2):
        raise ShapeError("pypto.index_select: 'index' must be 1-D or 2-D", expected="rank 1 or 2",
                         got=f"rank {iv.rank}", param="index", loc=loc())
    shape = tuple(v.shape[:d]) + tuple(iv.shape) + tuple(v.shape[d + 1:])
    valid = tuple(v.valid_shape[:d]) + tuple(iv.valid_shape) + tuple(v.valid_shape[d + 1:])
    return emit("index_select", [input, index], [(input.dtype, shape, valid)], {"dim": d})


@register("index_select", kind="vector", dtypes=INDEX_SELECT_DTYPES)
def _index_select(ins, attrs, ev):
    """torch.index_select with the flattened index, reshaped to the index's shape."""
    x, idx = ins
    d = attrs["dim"]
    _check_range(idx, x.shape[d], "index_select")
    picked = torch.index_select(x, d, idx.reshape(-1).long())
    return picked.reshape(*x.shape[:d], *idx.shape, *x.shape[d + 1:])


# ---- index_add -------------------------------------------------------------------------------------

def _index_add_args(op, input, dim, index, source, alpha):
    tensor_arg(input, op, "input")
    check_dtype("index_add", input, "input")
    _index_arg(index, op)
    tensor_arg(source, op, "source")
    _same_dtype(op, input, source, "source")
    v, iv, sv = input._value, index._value, source._value
    d = norm_dim(dim, v.rank, op)
    if iv.rank != 1:
        raise ShapeError(f"pypto.{op}: 'index' must be 1-D", expected="rank 1", got=f"rank {iv.rank}",
                         param="index", loc=loc())
    if sv.rank != v.rank:
        raise ShapeError(f"pypto.{op}: 'source' must have the rank of 'input'", expected=f"rank {v.rank}",
                         got=f"rank {sv.rank}", param="source", loc=loc())
    for k, (a, b) in enumerate(zip(sv.shape, v.shape)):
        if k != d and _static_ne(a, b):
            raise ShapeError(f"pypto.{op}: 'source' and 'input' differ in dim {k}",
                             expected=f"source.shape[{k}] == {b}", got=a, param="source", loc=loc())
    if _static_ne(sv.shape[d], iv.shape[0]):
        raise ShapeError(f"pypto.{op}: 'index' needs one entry per slice of 'source' along dim {d}",
                         expected=f"{E.render(sv.shape[d])} entries", got=E.render(iv.shape[0]), param="index",
                         loc=loc())
    if isinstance(alpha, Tensor):
        raise DTypeError(f"pypto.{op}: 'alpha' must be a scalar", got="a tensor", param="alpha", loc=loc())
    a = scalar_arg(alpha, op, "alpha", input.dtype)
    return emit("index_add", [input, index, source], [(input.dtype, v.shape, v.valid_shape)],
                {"dim": d, "alpha": a})


def index_add(input, dim, index, source, *, alpha=1):
    """A new tensor: ``input`` with ``alpha * source[.., i, ..]`` added at ``input[.., index[i], ..]``
    along ``dim`` (repeated indices accumulate)."""
    return _index_add_args("index_add", input, dim, index, source, alpha)


def index_add_(input, dim, index, source, *, alpha=1):
    """In-place `index_add`: the sums are written over ``input``, which is returned."""
    return _in_place(_index_add_args("index_add_", input, dim, index, source, alpha), input)


@register("index_add", kind="vector", fp32_math=True, dtypes=INDEX_ADD_DTYPES)
def _index_add(ins, attrs, ev):
    """torch.index_add (fp16/bf16 accumulate in fp32)."""
    x, idx, src = ins
    d = attrs["dim"]
    _check_range(idx, x.shape[d], "index_add")
    n = min(idx.shape[0], src.shape[d])
    alpha = ev(attrs["alpha"])
    return x.index_add(d, idx[:n].long(), src.narrow(d, 0, n), alpha=alpha)


# ---- scatter ---------------------------------------------------------------------------------------

def _scatter_args(op, input, dim, index, src, reduce):
    tensor_arg(input, op, "input")
    check_dtype("scatter", input, "input")
    _index_arg(index, op)
    v, iv = input._value, index._value
    d = norm_dim(dim, v.rank, op)
    if reduce is not None and reduce not in _REDUCE:
        raise ShapeError(f"pypto.{op}: unknown 'reduce'", expected="None, 'add' or 'multiply'", got=repr(reduce),
                         param="reduce", loc=loc())
    if iv.rank != v.rank:
        raise ShapeError(f"pypto.{op}: 'index' must have the rank of 'input'", expected=f"rank {v.rank}",
                         got=f"rank {iv.rank}", param="index", loc=loc())
    for k, (a, b) in enumerate(zip(iv.shape, v.shape)):
        if k != d and _static_gt(a, b):
            raise ShapeError(f"pypto.{op}: 'index' is larger than 'input' in dim {k}",
                             expected=f"index.shape[{k}] <= {b}", got=a, param="index", loc=loc())
    ins, attrs = [input, index], {"dim": d, "reduce": reduce}
    if isinstance(src, Tensor):
        _same_dtype(op, input, src, "src")
        sv = src._value
        if sv.rank != v.rank:
            raise ShapeError(f"pypto.{op}: 'src' must have the rank of 'input'", expected=f"rank {v.rank}",
                             got=f"rank {sv.rank}", param="src", loc=loc())
        for k, (a, b) in enumerate(zip(iv.shape, sv.shape)):
            if _static_gt(a, b):
                raise ShapeError(f"pypto.{op}: 'index' is larger than 'src' in dim {k}",
                                 expected=f"index.shape[{k}] <= {b}", got=a, param="index", loc=loc())
        ins.append(src)
    else:
        attrs["value"] = scalar_arg(src, op, "src", input.dtype)
    return emit("scatter", ins, [(input.dtype, v.shape, v.valid_shape)], attrs)


def scatter(input, dim, index, src, *, reduce=None):
    """A new tensor: ``input`` with ``out[index[i][j]][j] = src[i][j]`` for dim 0 (likewise for other
    dims); ``src`` is a tensor or a scalar. ``reduce='add'`` / ``'multiply'`` combine with the
    existing value instead of replacing it. With repeated indices and no reduce, which value lands is
    unspecified upstream (here: the last one torch writes)."""
    return _scatter_args("scatter", input, dim, index, src, reduce)


def scatter_(input, dim, index, src, *, reduce=None):
    """In-place `scatter`: the result is written over ``input``, which is returned."""
    return _in_place(_scatter_args("scatter_", input, dim, index, src, reduce), input)


@register("scatter", kind="vector", fp32_math=True, dtypes=SCATTER_DTYPES)
def _scatter(ins, attrs, ev):
    """torch.scatter / scatter_reduce (include_self) on a copy of the input."""
    x, idx = ins[0], ins[1].long()
    d = attrs["dim"]
    _check_range(idx, x.shape[d], "scatter")
    out = x.clone(memory_format=torch.contiguous_format)
    if len(ins) == 3:
        src = ins[2][tuple(slice(0, s) for s in idx.shape)]
    else:
        src = torch.full(tuple(idx.shape), ev(attrs["value"]), dtype=x.dtype)
    if attrs["reduce"] is None:
        return out.scatter_(d, idx, src)
    return out.scatter_reduce_(d, idx, src, _REDUCE[attrs["reduce"]], include_self=True)


# ---- scatter_update --------------------------------------------------------------------------------

def scatter_update(input, dim, index, src):
    """Write rows of ``src`` into ``input`` at the row positions in ``index`` (a KV-cache update).

    2-D: ``input [T, d]``, ``index [b, s]``, ``src [b*s, d]``: ``input[index[i][j]] = src[i*s + j]``.
    4-D (paged cache): ``input [blocks, block_size, 1, d]``, ``src [b, s, 1, d]``:
    ``input[index[i][j] // block_size][index[i][j] % block_size][0] = src[i][j][0]``.
    ``dim`` must be -2, as upstream. In place: ``input`` is updated and returned.
    """
    tensor_arg(input, "scatter_update", "input")
    check_dtype("scatter_update", input, "input")
    _index_arg(index, "scatter_update", (DT_INT64, DT_INT32, DT_INT16))
    tensor_arg(src, "scatter_update", "src")
    _same_dtype("scatter_update", input, src, "src")
    v, iv, sv = input._value, index._value, src._value
    if v.rank not in (2, 4):
        raise ShapeError("pypto.scatter_update: 'input' must be 2-D [T, d] or 4-D [blocks, block_size, 1, d]",
                         expected="rank 2 or 4", got=f"rank {v.rank}", param="input", loc=loc())
    if isinstance(dim, bool) or dim not in (-2, v.rank - 2):
        raise ShapeError("pypto.scatter_update supports dim=-2 only", expected="-2", got=repr(dim), param="dim",
                         loc=loc())
    if iv.rank != 2:
        raise ShapeError("pypto.scatter_update: 'index' must be 2-D [b, s]", expected="rank 2",
                         got=f"rank {iv.rank}", param="index", loc=loc())
    if sv.rank != v.rank:
        raise ShapeError("pypto.scatter_update: 'src' must have the rank of 'input'", expected=f"rank {v.rank}",
                         got=f"rank {sv.rank}", param="src", loc=loc())
    if _static_ne(sv.shape[-1], v.shape[-1]):
        raise ShapeError("pypto.scatter_update: 'src' rows and 'input' rows differ in length",
                         expected=f"src.shape[-1] == {v.shape[-1]}", got=sv.shape[-1], param="src", loc=loc())
    if v.rank == 2:
        rows = E.simplify_dim(E.mul(iv.shape[0], iv.shape[1]))
        if _static_ne(sv.shape[0], rows):
            raise ShapeError("pypto.scatter_update: 2-D 'src' needs one row per index entry",
                             expected=f"src.shape[0] == b*s = {E.render(rows)}", got=sv.shape[0], param="src",
                             loc=loc())
    else:
        for k, (a, b) in enumerate(zip(sv.shape[:2], iv.shape)):
            if _static_ne(a, b):
                raise ShapeError("pypto.scatter_update: 4-D 'src' must be [b, s, 1, d] for 'index' [b, s]",
                                 expected=f"src.shape[{k}] == {b}", got=a, param="src", loc=loc())
        if _static_ne(v.shape[2], 1) or _static_ne(sv.shape[2], 1):
            raise ShapeError("pypto.scatter_update: dim 2 of a 4-D 'input' and 'src' must be 1",
                             expected="[blocks, block_size, 1, d]", got=E.render_dims(v.shape), param="input",
                             loc=loc())
    out = emit("scatter_update", [input, index, src], [(input.dtype, v.shape, v.valid_shape)], {"dim": -2})
    return _in_place(out, input)


@register("scatter_update", kind="vector", dtypes=SCATTER_UPDATE_DTYPES)
def _scatter_update(ins, attrs, ev):
    """Row updates of the input seen as [rows, d] (block * block_size + offset for the 4-D form)."""
    x, idx, src = ins
    out = x.clone(memory_format=torch.contiguous_format)
    rows = out.view(-1, out.shape[-1])
    flat = idx.reshape(-1).long()
    _check_range(flat, rows.shape[0], "scatter_update")
    s = src.reshape(-1, src.shape[-1])
    n = min(flat.numel(), s.shape[0])
    rows[flat[:n]] = s[:n, :rows.shape[1]]
    return out


# ---- one_hot ---------------------------------------------------------------------------------------

def one_hot(input, num_classes):
    """``[*input.shape, num_classes]`` DT_INT64 tensor with a 1 at each value of ``input``."""
    tensor_arg(input, "one_hot", "input")
    check_dtype("one_hot", input, "input")
    if isinstance(num_classes, bool) or not isinstance(num_classes, int) or num_classes <= 0:
        raise ShapeError("pypto.one_hot: 'num_classes' must be a positive int", got=repr(num_classes),
                         param="num_classes", loc=loc())
    v = input._value
    return emit("one_hot", [input], [(DT_INT64, (*v.shape, num_classes), (*v.valid_shape, num_classes))],
                {"num_classes": num_classes, "in_rank": v.rank})


@register("one_hot", kind="vector", dtypes=ONE_HOT_DTYPES)
def _one_hot(ins, attrs, ev):
    """torch.nn.functional.one_hot (values checked against num_classes)."""
    x = ins[0]
    if x.dim() > attrs["in_rank"] + 1:  # batched tiles: the leaf padded the lower-rank input at dim 1
        x = x.squeeze(1)
    _check_range(x, attrs["num_classes"], "one_hot", "input")
    return torch.nn.functional.one_hot(x.long(), attrs["num_classes"])
