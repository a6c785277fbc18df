"""Emulated ``torch_npu.npu_quant_matmul``: an int8 matmul accumulated exactly in int32, then
dequantised (or requantised to int8) in fp32 on the CPU."""

from __future__ import annotations

import torch

from .quantize import saturate

_OUTPUTS = (None, torch.int8, torch.float16, torch.bfloat16, torch.int32)


def decoded_scale(scale: torch.Tensor) -> torch.Tensor:
    """A scale as float32: an int64 scale (``npu_trans_quant_param``'s form) carries the float32
    bits in its low 32 bits."""
    if scale.dtype != torch.int64:
        return scale.float()
    low = scale & 0xFFFFFFFF
    low = torch.where(low >= 2 ** 31, low - 2 ** 32, low)
    return low.to(torch.int32).view(torch.float32)


def npu_quant_matmul(x1: torch.Tensor, x2: torch.Tensor, scale: torch.Tensor, *, offset=None,
                     pertoken_scale=None, bias=None, output_dtype=None, **unused) -> torch.Tensor:
    """``(x1 @ x2 [+ int32 bias]) * scale [* pertoken_scale] [+ float bias]``, in ``output_dtype``
    (None or torch.int8: ``+ offset``, rounded and saturated to int8; torch.int32: the raw
    accumulation plus an int32 bias). ``scale``/``offset``/``bias`` run along n, ``pertoken_scale``
    along m."""
    for name, extra in unused.items():
        if extra is not None:
            raise NotImplementedError(f"torch_npu.npu_quant_matmul (emulated): '{name}' is not emulated")
    if x1.dtype != torch.int8 or x2.dtype != torch.int8:
        raise TypeError(f"torch_npu.npu_quant_matmul (emulated): x1 and x2 must be int8 "
                        f"(int4 packed in int32 is not emulated), got {x1.dtype} and {x2.dtype}")
    if output_dtype not in _OUTPUTS:
        raise ValueError(f"torch_npu.npu_quant_matmul (emulated): output_dtype {output_dtype} is not one of "
                         f"torch.int8, torch.float16, torch.bfloat16, torch.int32")
    if x1.shape[-1] != x2.shape[-2]:
        raise ValueError(f"torch_npu.npu_quant_matmul (emulated): x1 {list(x1.shape)} and x2 {list(x2.shape)} "
                         f"differ in k")
    # |products| <= 2^14 and k < 2^39 keeps every partial sum exact in float64
    acc = torch.matmul(x1.double(), x2.double())
    int_bias = bias is not None and not bias.is_floating_point()
    if int_bias:
        acc = acc + bias.double()
    if output_dtype == torch.int32:
        return acc.to(torch.int32)
    out = acc.float() * decoded_scale(scale)
    if pertoken_scale is not None:
        out = out * pertoken_scale.float().unsqueeze(-1)
    if bias is not None and not int_bias:
        out = out + bias.float()
    if output_dtype in (None, torch.int8):
        if offset is not None:
            out = out + offset.float()
        return saturate(out, torch.int8)
    return out.to(output_dtype)
