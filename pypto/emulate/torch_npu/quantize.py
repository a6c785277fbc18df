"""Emulated quantisation ops of torch_npu: ``npu_quantize`` (static scales) and
``npu_dynamic_quant`` (per-token scales), computed in fp32 on the CPU.

Rounding is to nearest, ties to even (``torch.round``, the ``"round"`` mode of the device's
quantise kernels), then saturation to the output type's range.
"""

from __future__ import annotations

import torch

# torch's quantised dtypes name the storage type the device writes
_STORAGE = {torch.qint8: torch.int8, torch.quint8: torch.uint8, torch.int8: torch.int8, torch.uint8: torch.uint8,
            torch.int32: torch.int32, torch.qint32: torch.int32}


def saturate(x: torch.Tensor, dtype: torch.dtype) -> torch.Tensor:
    """``x`` (float) rounded to nearest even and clamped to the range of integer ``dtype``."""
    info = torch.iinfo(dtype)
    return torch.round(x).clamp(info.min, info.max).to(dtype)


def along(t: torch.Tensor, x: torch.Tensor, axis: int, what: str) -> torch.Tensor:
    """A 1-D ``t`` (size 1 or ``x.shape[axis]``) shaped to broadcast along ``axis`` of ``x``."""
    if t.dim() != 1:
        return t
    axis = axis % x.dim()
    if t.numel() not in (1, x.shape[axis]):
        raise ValueError(f"torch_npu (emulated): '{what}' has {t.numel()} elements, expected 1 or "
                         f"{x.shape[axis]} (the size of dim {axis} of the input)")
    shape = [1] * x.dim()
    shape[axis] = t.numel()
    return t.reshape(shape)


def npu_quantize(input: torch.Tensor, scales: torch.Tensor, zero_points: torch.Tensor | None, dtype,
                 axis: int = 1, div_mode: bool = True) -> torch.Tensor:
    """``round(input / scales + zero_points)`` (``div_mode``) or ``round(input * scales +
    zero_points)``, saturated to ``dtype`` (torch.qint8 / quint8 / int32 give int8 / uint8 /
    int32 tensors). ``scales`` and ``zero_points`` broadcast along ``axis``."""
    if dtype not in _STORAGE:
        raise NotImplementedError(f"torch_npu.npu_quantize (emulated): dtype {dtype} is not emulated "
                                  f"(supported: torch.qint8, torch.quint8, torch.int32)")
    if not input.is_floating_point():
        raise TypeError(f"torch_npu.npu_quantize (emulated): 'input' must be a float tensor, got {input.dtype}")
    x = input.float()
    s = along(scales.float(), x, axis, "scales")
    y = x / s if div_mode else x * s
    if zero_points is not None:
        y = y + along(zero_points.float(), x, axis, "zero_points")
    return saturate(y, _STORAGE[dtype])


def npu_dynamic_quant(input: torch.Tensor, *, smooth_scales: torch.Tensor | None = None, group_index=None,
                      dst_type=None):
    """Per-token symmetric quantisation to int8: ``scale = max(|x|) / 127`` over the last dim
    (after multiplying by ``smooth_scales``) and ``y = round(x / scale)``. Returns ``(y int8,
    scale float32 of shape input.shape[:-1])``."""
    if group_index is not None or dst_type not in (None, torch.int8, torch.qint8):
        raise NotImplementedError("torch_npu.npu_dynamic_quant (emulated): only int8 output without "
                                  "group_index is emulated")
    if input.dim() < 2:
        raise ValueError(f"torch_npu.npu_dynamic_quant (emulated): 'input' needs at least 2 dims, got {input.dim()}")
    x = input.float()
    if smooth_scales is not None:
        x = x * smooth_scales.float()
    scale = x.abs().amax(dim=-1) / 127.0
    return saturate(x / scale.unsqueeze(-1), torch.int8), scale
