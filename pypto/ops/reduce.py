"""Reductions over one dim (sum, amax, amin) and softmax."""

from __future__ import annotations

import math

from .._lazy import torch

from ..frontend.builder import current
from ..ir import expr as E
from ..dtypes import DT_BF16, DT_FP16, DT_FP32, DT_INT16, DT_INT32
from .common import check_dtype, emit, norm_dim, tensor_arg
from .registry import register

REDUCE_DTYPES = (DT_FP32, DT_FP16, DT_BF16, DT_INT32, DT_INT16)
FLOATS = (DT_FP32, DT_FP16, DT_BF16)


def reduce_over(op: str, x, dim, keepdim, out_dtype=None):
    """Emit ``op`` reducing ``x`` over one ``dim`` (the shape rule shared by every reduction)."""
    tensor_arg(x, op, "input")
    check_dtype(op, x, "input")
    v = x._value
    d = norm_dim(dim, v.rank, op)
    if keepdim:
        shape = tuple(1 if k == d else s for k, s in enumerate(v.shape))
        valid = tuple(1 if k == d else s for k, s in enumerate(v.valid_shape))
    else:
        shape = tuple(s for k, s in enumerate(v.shape) if k != d)
        valid = tuple(s for k, s in enumerate(v.valid_shape) if k != d)
    if op in EMPTY_REFUSED and isinstance(v.valid_shape[d], E.Expr):
        # as torch: a maximum over no element is an error, checked from the sizes before the run
        # (a split softmax's own amax takes its identity instead, see dim_reduce_compute)
        tracer = current()
        if tracer is not None:
            tracer.require_equal(1, v.valid_shape[d], f"pypto.{op}: the reduced dim {d} of 'input' (torch refuses "
                                                      "to reduce an empty dim)", rel="le")
    return emit(op, [x], [(out_dtype or x.dtype, shape, valid)], {"dim": d, "keepdim": bool(keepdim)})


EMPTY_REFUSED = ("amax", "amin")



def sum(input, dim=-1, keepdim=False):  # noqa: A001 - upstream name
    """Sum over ``dim``."""
    return reduce_over("sum", input, dim, keepdim)


def amax(input, dim=-1, keepdim=False):
    """Maximum over ``dim``."""
    return reduce_over("amax", input, dim, keepdim)


def amin(input, dim=-1, keepdim=False):
    """Minimum over ``dim``."""
    return reduce_over("amin", input, dim, keepdim)


def dim_reduce_compute(name: str, what: str):
    """Reference semantics ``torch.<name>(x, dim, keepdim)`` over the valid region."""

    def compute(ins, attrs, ev):
        x, d = ins[0], attrs["dim"]
        if x.shape[d] == 0 and name in EMPTY_REFUSED:
            # an empty dim at run time (a DYNAMIC size 0 inside a split softmax: the user's own
            # amax/amin over it is refused before the run): the identity, so the result stays empty
            shape = list(x.shape)
            shape[d] = 1
            if not attrs["keepdim"]:
                del shape[d]
            info = torch.finfo(x.dtype) if x.dtype.is_floating_point else torch.iinfo(x.dtype)
            edge = (-math.inf if name == "amax" else math.inf) if x.dtype.is_floating_point else \
                (info.min if name == "amax" else info.max)
            return torch.full(shape, edge, dtype=x.dtype)
        return getattr(torch, name)(x, dim=d, keepdim=attrs["keepdim"])

    compute.__doc__ = f"{what} over one dim of the valid region."
    return compute


def dim_reduce_into(name: str):
    """``torch.<name>(x, dim, keepdim, out=dst)``: the reduction written into ``dst``, an output's
    view of its GM tensor (the same numbers as computing it apart), when ``dst`` has the result's
    shape and ``x``'s float dtype; None otherwise (the caller computes it the usual way)."""

    def into(ins, attrs, ev, dst):
        x, d = ins[0], attrs["dim"]
        if x.dtype is not dst.dtype or not x.dtype.is_floating_point or x.shape[d] == 0 or not attrs["keepdim"]:
            return None
        shape = list(x.shape)
        shape[d] = 1
        if list(dst.shape) != shape:
            return None
        return getattr(torch, name)(x, dim=d, keepdim=True, out=dst)
    return into


for _name, _what in (("sum", "Sum"), ("amax", "Maximum"), ("amin", "Minimum")):
    register(_name, kind="vector", fp32_math=True, dtypes=REDUCE_DTYPES,
             into=dim_reduce_into(_name))(dim_reduce_compute(_name, _what))


def softmax(input, dim=-1):
    """``exp(x - max) / sum(exp(x - max))`` over ``dim``."""
    tensor_arg(input, "softmax", "input")
    check_dtype("softmax", input, "input")
    v = input._value
    d = norm_dim(dim, v.rank, "softmax")
    return emit("softmax", [input], [(input.dtype, v.shape, v.valid_shape)], {"dim": d})


def _softmax_into(ins, attrs, ev, dst):
    return torch.softmax(ins[0], dim=attrs["dim"], out=dst)


@register("softmax", kind="vector", fp32_math=True, dtypes=FLOATS, into=_softmax_into)
def _softmax(ins, attrs, ev):
    """Softmax over one dim of the valid region."""
    return torch.softmax(ins[0], dim=attrs["dim"])
