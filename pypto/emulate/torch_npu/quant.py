"""``torch_npu.npu_trans_quant_param``: fp32 quantisation scales packed for the cube's output path.

Each scale becomes an int64 whose low 32 bits are the float32's bits with the 13 lowest mantissa
bits cleared (the fixpipe keeps sign, exponent and 10 mantissa bits); this is the
``scale_tensor`` a dequantising/quantising ``pypto.matmul`` reads. A 2-D ``[1, n]`` scale keeps
its shape; a 1-D one gives 1-D.
"""

from __future__ import annotations

import torch

_MASK = 0xFFFFE000


def npu_trans_quant_param(scale: torch.Tensor, offset: torch.Tensor | None = None) -> torch.Tensor:
    """The packed int64 form of fp32 ``scale`` (shape ``[t]`` or ``[1, n]``)."""
    if not isinstance(scale, torch.Tensor) or scale.dtype != torch.float32:
        raise TypeError(f"torch_npu.npu_trans_quant_param (emulated): 'scale' must be a float32 tensor, "
                        f"got {getattr(scale, 'dtype', type(scale).__name__)}")
    if scale.dim() not in (1, 2) or (scale.dim() == 2 and scale.shape[0] != 1):
        raise ValueError(f"torch_npu.npu_trans_quant_param (emulated): 'scale' must be [t] or [1, n], "
                         f"got {list(scale.shape)}")
    if offset is not None:
        raise NotImplementedError("torch_npu.npu_trans_quant_param (emulated): 'offset' is not emulated")
    bits = scale.contiguous().view(torch.int32).to(torch.int64) & 0xFFFFFFFF
    return bits & _MASK
