"""Byte packing: ``pack`` (any tensor -> its bytes as a 1-D DT_UINT8 tensor) and ``unpack`` (1-D
DT_UINT8 bytes -> elements of another dtype).

Both reinterpret raw bytes in memory order (little endian, as the device): ``pack`` of the int32
``0x03040506`` gives ``[6, 5, 4, 3]`` and ``unpack`` of those bytes as DT_INT32 gives it back. They
address bytes across element boundaries, so each runs as one whole-tensor (GM to GM) task on an AIV
core. Upstream also accepts DT_UINT16 / DT_UINT32 / DT_UINT64, dtypes this build does not support.
"""

from __future__ import annotations

from ..dtypes import DT_BF16, DT_FP16, DT_FP32, DT_INT8, DT_INT16, DT_INT32, DT_INT64, DT_UINT8
from ..errors import DTypeError, KernelRuntimeError, ShapeError
from ..ir import expr as E
from .common import check_dtype, dtype_arg, emit, loc, tensor_arg
from .registry import register

PACK_DTYPES = (DT_BF16, DT_FP16, DT_FP32, DT_INT64, DT_INT32, DT_INT16, DT_INT8, DT_UINT8)


def _numel(dims):
    n = 1
    for d in dims:
        n = E.simplify_dim(E.mul(n, d))
    return n


def pack(input):
    """The bytes of ``input`` (rank 1 to 4) flattened, as a 1-D DT_UINT8 tensor of
    ``numel * itemsize`` elements."""
    tensor_arg(input, "pack", "input")
    dt = check_dtype("pack", input, "input")
    v = input._value
    if not 1 <= v.rank <= 4:
        raise ShapeError("pypto.pack: 'input' must have rank 1 to 4", expected="rank 1..4", got=f"rank {v.rank}",
                         param="input", loc=loc())
    size = int(dt.itemsize)
    shape = (E.simplify_dim(E.mul(_numel(v.shape), size)),)
    valid = (E.simplify_dim(E.mul(_numel(v.valid_shape), size)),)
    return emit("pack", [input], [(DT_UINT8, shape, valid)], {})


def unpack(input, dst_dtype):
    """1-D DT_UINT8 ``input`` read as elements of ``dst_dtype``: ``n / itemsize`` of them (``n`` must
    be a multiple of the itemsize)."""
    tensor_arg(input, "unpack", "input")
    check_dtype("unpack", input, "input")
    dt = dtype_arg(dst_dtype, "unpack", "dst_dtype")
    if dt not in PACK_DTYPES:
        raise DTypeError("pypto.unpack does not produce this dtype", expected=", ".join(d.name for d in PACK_DTYPES),
                         got=dt.name, param="dst_dtype", loc=loc())
    v = input._value
    if v.rank != 1:
        raise ShapeError("pypto.unpack: 'input' must be 1-D", expected="rank 1", got=f"rank {v.rank}",
                         param="input", loc=loc())
    size = int(dt.itemsize)
    if isinstance(v.shape[0], int) and v.shape[0] % size:
        raise ShapeError(f"pypto.unpack: the byte count is not a multiple of the size of {dt.name}",
                         expected=f"a multiple of {size}", got=v.shape[0], param="input", loc=loc())
    shape = (E.simplify_dim(E.floordiv(v.shape[0], size)),)
    valid = (E.simplify_dim(E.floordiv(v.valid_shape[0], size)),)
    return emit("unpack", [input], [(dt, shape, valid)], {"dtype": dt})


@register("pack", kind="vector", dtypes=PACK_DTYPES)
def _pack(ins, attrs, ev):
    """The input's bytes in memory order."""
    return ins[0].contiguous().reshape(-1).view(DT_UINT8.torch())


@register("unpack", kind="vector", dtypes=(DT_UINT8,))
def _unpack(ins, attrs, ev):
    """Consecutive bytes reinterpreted as elements of attrs['dtype']."""
    x = ins[0].contiguous().reshape(-1)
    size = int(attrs["dtype"].itemsize)
    if x.numel() % size:
        raise KernelRuntimeError("pypto.unpack: the byte count is not a multiple of the element size",
                                 expected=f"a multiple of {size}", got=x.numel())
    return x.view(attrs["dtype"].torch())
