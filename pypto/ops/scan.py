"""Reductions beyond sum/amax/amin (prod, argmax, argmin, var), scans (cumsum, cumprod) and argsort.

``prod`` splits like ``sum`` (partial products per tile, then a combine). The others need the
whole dim in one tile, as upstream requires ("the dim axis is not split"): tile expansion keeps
the dims named in ``dim``/``dims`` whole and runs the grid over the other dims.

Ties: ``argmax``/``argmin`` return the first (lowest) index among equal extremes; ``argsort`` is
stable (equal values keep their input order, ascending or descending), as upstream documents.
"""

from __future__ import annotations

from .._lazy import torch

from ..dtypes import DT_BF16, DT_FP16, DT_FP32, DT_INT16, DT_INT32, DT_INT64
from ..errors import ArgumentTypeError, ShapeError
from .common import check_dtype, emit, loc, norm_dim, tensor_arg
from .reduce import dim_reduce_compute, reduce_over
from .registry import register

FLOATS = (DT_FP32, DT_FP16, DT_BF16)


# ---- prod -----------------------------------------------------------------------------------------

def prod(input, dim, keepdim=False):
    """Product over ``dim`` (FP32, INT32, INT16; integer products wrap like the dtype)."""
    return reduce_over("prod", input, dim, keepdim)


register("prod", kind="vector", fp32_math=True, dtypes=(DT_FP32, DT_INT32, DT_INT16))(
    dim_reduce_compute("prod", "Product"))


# ---- argmax / argmin ------------------------------------------------------------------------------

def _arg_reduce(op, x, dim, keepdim):
    return reduce_over(op, x, dim, keepdim, DT_INT32)


def argmax(input, dim=-1, keepdim=False):
    """INT32 index of the maximum along ``dim`` (the first one among ties)."""
    return _arg_reduce("argmax", input, dim, keepdim)


def argmin(input, dim=-1, keepdim=False):
    """INT32 index of the minimum along ``dim`` (the first one among ties)."""
    return _arg_reduce("argmin", input, dim, keepdim)


register("argmax", kind="vector", fp32_math=True, dtypes=FLOATS)(
    dim_reduce_compute("argmax", "Index of the first maximum"))
register("argmin", kind="vector", fp32_math=True, dtypes=FLOATS)(
    dim_reduce_compute("argmin", "Index of the first minimum"))


# ---- var ------------------------------------------------------------------------------------------

def var(input, dim=None, correction=1, keepdim=False):
    """Variance over ``dim`` (an int, a list/tuple of distinct dims, or None / [] for all dims):
    ``sum((x - mean)**2) / max(0, N - correction)`` with N the number of reduced elements.

    FP32/FP16/BF16, computed in fp32; the result has the input's dtype.
    """
    tensor_arg(input, "var", "input")
    check_dtype("var", input, "input")
    v = input._value
    if dim is None:
        dims = list(range(v.rank))
    elif isinstance(dim, (list, tuple)):
        dims = [norm_dim(d, v.rank, "var") for d in dim] or list(range(v.rank))
    else:
        dims = [norm_dim(dim, v.rank, "var")]
    if len(set(dims)) != len(dims):
        raise ShapeError("pypto.var: 'dim' repeats a dim", got=list(dim), param="dim", loc=loc())
    if isinstance(correction, bool) or not isinstance(correction, (int, float)):
        raise ArgumentTypeError("pypto.var: 'correction' must be a number", expected="an int or float",
                                got=f"{type(correction).__name__} {correction!r}"[:80], param="correction", loc=loc())
    dims = tuple(sorted(dims))
    if keepdim:
        shape = tuple(1 if k in dims else s for k, s in enumerate(v.shape))
        valid = tuple(1 if k in dims else s for k, s in enumerate(v.valid_shape))
    else:
        shape = tuple(s for k, s in enumerate(v.shape) if k not in dims)
        valid = tuple(s for k, s in enumerate(v.valid_shape) if k not in dims)
    return emit("var", [input], [(input.dtype, shape, valid)],
                {"dims": dims, "correction": float(correction), "keepdim": bool(keepdim)})


@register("var", kind="vector", fp32_math=True, dtypes=FLOATS)
def _var(ins, attrs, ev):
    """torch.var over the dims of the valid region."""
    return torch.var(ins[0], dim=attrs["dims"], correction=attrs["correction"], keepdim=attrs["keepdim"])


# ---- cumsum / cumprod -----------------------------------------------------------------------------

def _scan(op, x, dim):
    tensor_arg(x, op, "input")
    check_dtype(op, x, "input")
    v = x._value
    d = norm_dim(dim, v.rank, op)
    out = DT_INT64 if x.dtype in (DT_INT16, DT_INT32) else x.dtype
    return emit(op, [x], [(out, v.shape, v.valid_shape)], {"dim": d})


def cumsum(input, dim):
    """Cumulative sum along ``dim``; INT16/INT32 inputs give INT64, floats keep their dtype."""
    return _scan("cumsum", input, dim)


def cumprod(input, dim):
    """Cumulative product along ``dim`` (FP32/FP16/BF16)."""
    return _scan("cumprod", input, dim)


@register("cumsum", kind="vector", fp32_math=True, dtypes=(DT_FP32, DT_FP16, DT_BF16, DT_INT32, DT_INT16))
def _cumsum(ins, attrs, ev):
    """Inclusive prefix sum along one dim of the valid region."""
    return torch.cumsum(ins[0], dim=attrs["dim"])


@register("cumprod", kind="vector", fp32_math=True, dtypes=FLOATS)
def _cumprod(ins, attrs, ev):
    """Inclusive prefix product along one dim of the valid region."""
    return torch.cumprod(ins[0], dim=attrs["dim"])


# ---- argsort --------------------------------------------------------------------------------------

def argsort(input, dim=None, descending=True):
    """INT32 indices that sort ``input`` along ``dim`` (None: the last dim); stable for ties.

    FP32/FP16. Like upstream, a 4-D input cannot be sorted along dim 0. The default
    ``descending=True`` is the documented one (upstream's Python wrapper defaults to False).
    """
    tensor_arg(input, "argsort", "input")
    check_dtype("argsort", input, "input")
    v = input._value
    d = norm_dim(-1 if dim is None else dim, v.rank, "argsort")
    if v.rank == 4 and d == 0:
        raise ShapeError("pypto.argsort: a 4-D input cannot be sorted along dim 0 (as upstream)",
                         expected="dim 1, 2 or 3", got=dim, param="dim", loc=loc())
    return emit("argsort", [input], [(DT_INT32, v.shape, v.valid_shape)],
                {"dim": d, "descending": bool(descending)})


@register("argsort", kind="vector", fp32_math=True, dtypes=(DT_FP32, DT_FP16))
def _argsort(ins, attrs, ev):
    """Stable sort indices along one dim of the valid region."""
    return torch.sort(ins[0], dim=attrs["dim"], descending=attrs["descending"], stable=True).indices
