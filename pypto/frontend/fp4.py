"""The Ascend 950's 4-bit float DT_FP4_E2M1: packed two to a byte, as upstream passes it.

Upstream's kernels take an fp4 tensor as a torch ``uint8`` (or ``torch.float4_e2m1fn_x2``) tensor
of shape ``[..., K / 2]``: each byte holds two e2m1 values, the even element of the last dim in
the low nibble and the odd one in the high nibble. Inside the kernel the tensor is DT_FP4_E2M1 with
its logical shape ``[..., K]``. An e2m1 nibble is sign (bit 3), a 2-bit exponent and a 1-bit
mantissa: magnitudes 0, 0.5, 1, 1.5, 2, 3, 4, 6.

This build decodes such an argument once per call into its exact values (bf16 holds each of them
exactly) and computes with those; only the cube (``scaled_mm``) takes the dtype, so an fp4 tensor
is read, never written.
"""

from __future__ import annotations

from .._lazy import torch
from ..errors import ArgumentTypeError, ArgumentValueError

E2M1_MAGNITUDES = (0.0, 0.5, 1.0, 1.5, 2.0, 3.0, 4.0, 6.0)
_TABLE: dict = {}  # torch dtype -> the 16 nibble values, built on first use


def _values(dtype):
    table = _TABLE.get(dtype)
    if table is None:
        table = _TABLE[dtype] = torch.tensor(E2M1_MAGNITUDES + tuple(-v for v in E2M1_MAGNITUDES), dtype=dtype)
    return table


def unpack_e2m1(packed, param: str, loc=None, dtype=None):
    """The fp4 values of ``packed`` (uint8 or float4_e2m1fn_x2, ``[..., K/2]``) as a ``[..., K]``
    tensor of ``dtype`` (bf16 by default). ``param`` names the argument in errors."""
    if packed.dtype == getattr(torch, "float4_e2m1fn_x2", None):  # the same bytes, torch's own name
        packed = packed.view(torch.uint8)
    if packed.dtype != torch.uint8:
        raise ArgumentTypeError(f"tensor argument '{param}' is DT_FP4_E2M1 (two values packed in each byte) but "
                                f"its torch dtype is not a byte type",
                                expected="torch.uint8 or torch.float4_e2m1fn_x2, shape [..., K / 2]",
                                got=str(packed.dtype), param=param, loc=loc)
    if packed.dim() == 0:
        raise ArgumentValueError(f"tensor argument '{param}' (DT_FP4_E2M1, packed) has no dims to unpack",
                                 expected="rank >= 1: [..., K / 2] bytes", got="a 0-d tensor", param=param, loc=loc)
    table = _values(dtype if dtype is not None else torch.bfloat16)
    idx = packed.to(torch.int64)
    pairs = torch.stack((idx & 0x0F, idx >> 4), dim=-1)  # low nibble first: the even element
    return table[pairs].reshape(*packed.shape[:-1], packed.shape[-1] * 2)


def pack_e2m1(values):
    """Encode a float tensor whose values are all e2m1 values (``[..., K]``, K even) as ``uint8``
    ``[..., K / 2]`` (the inverse of `unpack_e2m1`); any other value is an error, not a rounding."""
    if values.dim() == 0 or values.shape[-1] % 2:
        raise ArgumentValueError("pack_e2m1 needs an even last dim", expected="[..., K] with K even",
                                 got=f"shape {list(values.shape)}", param="values")
    v = values.to(torch.float32)
    hit = v.abs().unsqueeze(-1) == torch.tensor(E2M1_MAGNITUDES)
    code = torch.where(torch.signbit(v), 8, 0) + hit.to(torch.int64).argmax(-1)  # the sign bit keeps -0
    ok = hit.any(-1)
    if not bool(ok.all()):
        bad = v[~ok].flatten()[:4].tolist()
        raise ArgumentValueError("pack_e2m1: values are not all e2m1 values",
                                 expected="0, ±0.5, ±1, ±1.5, ±2, ±3, ±4, ±6", got=f"e.g. {bad}", param="values")
    code = code.reshape(*v.shape[:-1], -1, 2)
    return (code[..., 0] | (code[..., 1] << 4)).to(torch.uint8)
