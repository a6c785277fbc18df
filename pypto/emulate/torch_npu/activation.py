"""Emulated activation ops of torch_npu, computed in fp32 and returned in the input's dtype."""

from __future__ import annotations

import torch


def npu_swiglu(input: torch.Tensor, dim: int = -1) -> torch.Tensor:
    """SwiGLU: ``silu(a) * b`` where ``a`` and ``b`` are the first and second halves of ``input``
    along ``dim`` (whose size must be even)."""
    if input.shape[dim] % 2:
        raise ValueError(f"torch_npu.npu_swiglu (emulated): dim {dim} has odd size {input.shape[dim]}")
    a, b = input.float().chunk(2, dim=dim)
    return (torch.nn.functional.silu(a) * b).to(input.dtype)
