"""GEMM points: upstream's matmul performance guide (a PyPTO program on the device) and the
pto-isa hand-written GEMM (double-buffered L1/L0, no AICPU scheduling)."""

from __future__ import annotations

import torch

import pypto

from ..cases import case
from ..replay import timing_only

GUIDE = "hicann+pypto@883e7dfb0:docs/zh/tutorials/debug/matmul_performance_guide.md"


def _native(m, k, n, dtype=pypto.DT_FP16, out=pypto.DT_FP16, tiles=([128, 128], [64, 256], [256, 256])):
    @pypto.jit
    def matmul(a: pypto.Tensor([m, k], dtype), b: pypto.Tensor([k, n], dtype)):
        pypto.set_cube_tile_shapes(*tiles)
        return pypto.matmul(a, b, out)

    def build():
        a = torch.empty(m, k, dtype=torch.float16)
        b = torch.empty(k, n, dtype=torch.float16)
        return timing_only(matmul, a, b)

    return build


case(id="pypto_mm6144_native", family="gemm", kind="matmul", published_us=2100.0, source=GUIDE,
     build=_native(6144, 6144, 6144),
     how="one pypto.matmul returned from the kernel, the guide's cube tiles [128,128],[64,256],[256,256]")
