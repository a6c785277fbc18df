"""Quantization: quantize (fp32 -> int8 / uint8) and dequantize (int8 / int16 / uint8 -> fp32).

Per upstream (A2/A3): ``input`` is ``[..., row, col]`` (rank 2 to 4) and ``scale`` (and the optional
``zero_points``) has one dim less: ``[..., row]`` for ``axis=-1`` (one scale per row, applied along
the last dim) or ``[..., col]`` for ``axis=-2`` (one scale per column).

* ``quantize``: ``out = saturate(round(input * scale [+ zero_points]))``. Rounding is to nearest,
  ties to even (the vector unit's RINT conversion); out-of-range values saturate to the int8 /
  uint8 limits and NaN becomes 0. Upstream pairs DT_INT8 with symmetric (no zero_points) and
  DT_UINT8 with asymmetric quantization; both accept ``zero_points`` here.
* ``dequantize``: ``out = (float(input) [- zero_points]) * scale`` in fp32.

The sign of ``zero_points`` follows upstream's on-device system tests (``test_quantize_onboard``,
``test_dequantize_onboard``: quantize adds them, dequantize subtracts them before scaling) and its
reference calculator for quantize; the API pages' worked examples use the opposite sign
(quantize subtracting, dequantize adding). Either way the two ops are inverses.

Both are elementwise ops: ``scale`` is reshaped to broadcast (a size-1 dim at ``axis``) and the op
tiles like a binary op.
"""

from __future__ import annotations

from .._lazy import torch

from ..dtypes import DT_FP32, DT_INT8, DT_INT16, DT_UINT8
from ..errors import DTypeError, ShapeError
from ..ir import expr as E
from .common import bcast_flags, check_dtype, dtype_arg, emit, loc, same_size, tensor_arg
from .elementwise import align_valid
from .registry import register


def _args(op, input, scale, otype, axis, zero_points, in_dtypes, out_dtypes):
    from .shape import unsqueeze_dims

    tensor_arg(input, op, "input")
    check_dtype(op, input, "input", in_dtypes)
    v = input._value
    if not 2 <= v.rank <= 4:
        raise ShapeError(f"pypto.{op}: 'input' must be [..., row, col] of rank 2 to 4", expected="rank 2..4",
                         got=f"rank {v.rank}", param="input", loc=loc())
    if isinstance(axis, bool) or axis not in (-1, -2, v.rank - 1, v.rank - 2):
        raise ShapeError(f"pypto.{op}: 'axis' must be one of the last two dims", expected="-1 or -2",
                         got=repr(axis), param="axis", loc=loc())
    a = axis if axis < 0 else axis - v.rank
    dt = dtype_arg(otype, op, "otype")
    if dt not in out_dtypes:
        raise DTypeError(f"pypto.{op} does not produce this dtype", expected=" or ".join(d.name for d in out_dtypes),
                         got=dt.name, param="otype", loc=loc())
    # scale / zero_points [..., row] (axis -1) or [..., col] (axis -2): a size-1 dim goes in at `axis`
    want = tuple(v.shape[:-1]) if a == -1 else tuple(v.shape[:-2]) + (v.shape[-1],)
    ins = [input]
    for name, t in (("scale", scale), ("zero_points", zero_points)):
        if t is None:
            continue
        tensor_arg(t, op, name)
        check_dtype(op, t, name, (DT_FP32,))
        tv = t._value
        if tv.rank != len(want) or any(not same_size(x, y, f"pypto.{op}: '{name}' and 'input'", loc())
                                       for x, y in zip(tv.shape, want)):
            raise ShapeError(f"pypto.{op}: '{name}' must have the input's shape without dim {a}",
                             expected=E.render_dims(want), got=E.render_dims(tv.shape), param=name, loc=loc())
        d = v.rank + a
        sizes = list(tv.shape)
        sizes.insert(d, 1)
        ins.append(unsqueeze_dims(t, (d,), sizes))
    attrs = {"otype": dt, "zero_points": zero_points is not None,
             "bcast": tuple(bcast_flags(t._value.shape, v.shape) for t in ins)}
    return emit(op, ins, [(dt, v.shape, v.valid_shape)], attrs)


def quantize(input, scale, otype, axis, zero_points=None):
    """fp32 ``input`` to DT_INT8 / DT_UINT8: ``saturate(round(input * scale [+ zero_points]))``."""
    return _args("quantize", input, scale, otype, axis, zero_points, (DT_FP32,), (DT_INT8, DT_UINT8))


def dequantize(input, scale, otype, axis, zero_points=None):
    """DT_INT8 / DT_INT16 / DT_UINT8 ``input`` to DT_FP32: ``(input [- zero_points]) * scale``."""
    return _args("dequantize", input, scale, otype, axis, zero_points, (DT_INT8, DT_INT16, DT_UINT8), (DT_FP32,))


@register("quantize", kind="vector", dtypes=(DT_FP32,))
def _quantize(ins, attrs, ev):
    """Scale (and shift), round half to even, saturate."""
    ins = align_valid(ins, attrs["bcast"])
    y = ins[0].float() * ins[1]
    if attrs["zero_points"]:
        y = y + ins[2]
    dt = attrs["otype"].torch()
    info = torch.iinfo(dt)
    y = torch.nan_to_num(torch.round(y), nan=0.0, posinf=info.max, neginf=info.min).clamp(info.min, info.max)
    return y.to(dt)


@register("dequantize", kind="vector", dtypes=(DT_INT8, DT_INT16, DT_UINT8))
def _dequantize(ins, attrs, ev):
    """(float(x) - zero_points) * scale."""
    ins = align_valid(ins, attrs["bcast"])
    y = ins[0].float()
    if attrs["zero_points"]:
        y = y - ins[2]
    return y * ins[1]
