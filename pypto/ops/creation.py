"""Tensors made from nothing: local tensors, full, zeros, ones."""

from __future__ import annotations

from .._lazy import torch

from ..dtypes import DT_FP32, DType
from ..element import Element, check_scalar_value
from ..errors import DTypeError
from ..frontend.builder import require
from ..frontend.scalar import SymbolicScalar
from ..frontend.tensor import Tensor
from ..ir import expr as E
from .common import dtype_arg, emit, loc, shape_list
from .registry import register


def tensor(shape, dtype=DT_FP32, name: str = ""):
    """Declare a local tensor inside a kernel; write it (assemble) before reading it.

    Upstream leaves it uninitialised; here it starts as zeros so a missed write is visible. It
    is memory, not device work: no tile op fills it (the runtime allocates it zeroed).
    """
    require("pypto.tensor")
    dt = dtype_arg(dtype, "tensor")
    shp = shape_list(shape, "tensor")
    out = emit("tensor", [], [(dt, shp, None)], {"shape": shp, "dtype": dt}, names=[name or "local"],
               value_kind="local")
    return out


@register("tensor", kind="create")
def _tensor(ins, attrs, ev):
    """A zero-filled local buffer."""
    return torch.zeros(ev(attrs["shape"]), dtype=attrs["dtype"].torch())


def full(size, fill_value, dtype=None, *, valid_shape=None):
    """A tensor of ``size`` filled with ``fill_value``: an int, a float, a symbolic scalar or a
    `pypto.Element` (whose dtype is the default ``dtype``, and must equal a ``dtype`` given).
    The value must fit the dtype (no negative value for an unsigned dtype)."""
    if isinstance(fill_value, Tensor):
        raise DTypeError("pypto.full: 'fill_value' must be a scalar", got="a tensor", param="fill_value",
                         loc=loc())
    if isinstance(fill_value, Element):
        if dtype is not None and dtype is not fill_value.dtype:
            raise DTypeError("pypto.full: data type inconsistent: 'fill_value' is an Element of "
                             f"{fill_value.dtype.name} but 'dtype' is {getattr(dtype, 'name', dtype)}",
                             expected=f"dtype={fill_value.dtype.name}", got=repr(dtype), param="dtype", loc=loc())
        dtype, fill_value = fill_value.dtype, fill_value.value
    if dtype is None:
        dtype = DT_FP32
    if isinstance(dtype, DType):
        check_scalar_value(fill_value, dtype, "pypto.full", "fill_value", loc())
    dt = dtype_arg(dtype, "full")
    if isinstance(fill_value, SymbolicScalar):
        value = E.simplify_dim(fill_value.expr)
    elif isinstance(fill_value, bool) or isinstance(fill_value, (int, float)):
        if isinstance(fill_value, float) and not dt.is_float:
            raise DTypeError("pypto.full: a float 'fill_value' for an integer dtype",
                             expected=f"an int for {dt.name}", got=repr(fill_value), param="fill_value",
                             loc=loc())
        value = fill_value
        if isinstance(value, float) and dt.is_float:
            # the value the device fills with: rounded to the dtype, beyond its range an infinity
            # (-sys.float_info.max in fp32 is -inf, upstream's usual padding for a max)
            value = float(torch.tensor(value, dtype=torch.float64).to(dt.torch()))
    else:
        raise DTypeError("pypto.full: 'fill_value' must be a scalar",
                         expected="int, float, SymbolicScalar or pypto.Element",
                         got=type(fill_value).__name__, param="fill_value", loc=loc())
    shp = shape_list(size, "full", "size")
    valid = shape_list(valid_shape, "full", "valid_shape") if valid_shape is not None else shp
    return emit("full", [], [(dt, shp, valid)], {"shape": shp, "valid": valid, "value": value, "dtype": dt})


@register("full", kind="create")
def _full(ins, attrs, ev):
    """A constant-filled tensor (its valid part)."""
    return torch.full(ev(attrs["valid"]), ev(attrs["value"]), dtype=attrs["dtype"].torch())


def _size_and_dtype(size: tuple, dtype, op: str):
    """Upstream's ``zeros(*size, dtype=...)``: sizes as separate ints or one list; a dtype given
    last among the positional arguments (this build's older spelling) is still understood."""
    if size and isinstance(size[-1], DType):
        if dtype is not None:
            raise DTypeError(f"pypto.{op}: dtype given twice", expected="dtype=... once",
                             got=f"{size[-1].name} and dtype={dtype!r}", param="dtype", loc=loc())
        size, dtype = size[:-1], size[-1]
    if len(size) == 1 and isinstance(size[0], (list, tuple)):
        size = tuple(size[0])
    return list(size), DT_FP32 if dtype is None else dtype


def zeros(*size, dtype=None, valid_shape=None):
    """A zero-filled tensor: ``zeros(2, 3, dtype=pypto.DT_INT32)`` or ``zeros([2, 3])`` (fp32)."""
    shape, dt = _size_and_dtype(size, dtype, "zeros")
    return full(shape, 0, dt, valid_shape=valid_shape)


def ones(*size, dtype=None, valid_shape=None):
    """A one-filled tensor: ``ones(2, 3, dtype=pypto.DT_INT32)`` or ``ones([2, 3])`` (fp32)."""
    shape, dt = _size_and_dtype(size, dtype, "ones")
    return full(shape, 1, dt, valid_shape=valid_shape)
