"""The GatedDeltaRule chunk inverse: upstream's performance case (docs/zh/tutorials/debug/
performance_case_GDR.md), whose final version inverts the 8 diagonal [16, 16] blocks of a chunk's
[128, 128] matrix as one [16, 128] tile updated row by row in UB (8 x 28 us -> 49 us).

Each diagonal block ``A_b`` is strictly lower triangular; the module gives ``(I - A_b)^-1`` by
forward substitution, ``M_i = A_i + sum_{j<i} A_ij M_j`` (rows 0 and 1 of M are those of A), then
``I + M``. The eight blocks are side by side along the last dim, so one row update serves all of
them: the row's 8 x i coefficients are laid out as a column ``[8i, 1]`` against the rows computed
so far viewed as ``[8i, 16]``, multiplied, and summed back to one ``[1, 128]`` row. The row loop is a
Python loop (the guide's static-loop advice), and ``+ 0.0`` keeps the growing result in UB.

The figure is the module's time in the swimlane of B=2, T=8192, H=4: one chunk's inverse. The
case runs one chunk (a loop of one iteration), so the kernel span is that module on one core.
"""

from __future__ import annotations

import torch

import pypto

from ..cases import case
from ..replay import timing_only

GUIDE = "hicann+pypto@883e7dfb0:docs/zh/tutorials/debug/performance_case_GDR.md"
BLOCKS = 8  # diagonal blocks of a chunk inverted together


def chunk_inverse_kernel(chunk: int):
    """``out[c]`` (``[chunk/8, chunk]``): the inverses ``(I - A_b)^-1`` of the 8 diagonal blocks of
    chunk c of ``attn`` (``[C*chunk, chunk]``, fp32), side by side; ``eye`` is ``[chunk/8, chunk]``,
    8 identity blocks side by side."""
    m = chunk // BLOCKS

    @pypto.jit
    def chunk_inverse(attn: pypto.Tensor([pypto.DYNAMIC, chunk], pypto.DT_FP32),
                      eye: pypto.Tensor([m, chunk], pypto.DT_FP32),
                      out: pypto.Tensor([pypto.DYNAMIC, chunk], pypto.DT_FP32)):
        pypto.set_vec_tile_shapes(128, 128)
        for c in pypto.loop(attn.shape[0] // chunk):
            # the 8 diagonal [m, m] blocks side by side: one [m, chunk] tile
            rows = pypto.concat([pypto.view(attn, [m, m], [c * chunk + m * b, m * b]) + 0.0
                                 for b in range(BLOCKS)], dim=1)
            inv = rows[0:2, :]
            for i in range(2, m):
                done = inv + 0.0  # the rows so far, kept in UB
                row = rows.view([1, chunk], [i, 0])
                # coefficient A_b[i, j] at [j*8 + b]: against row j of block b in done as [8i, m]
                coeff = row.reshape([BLOCKS, m]).view([BLOCKS, i], [0, 0]).transpose(1, 0).reshape([BLOCKS * i, 1])
                update = (coeff * done.reshape([BLOCKS * i, m])).reshape([i, chunk]).sum(0, keepdim=True)
                inv = pypto.concat([done, row + update], dim=0)
            out[c * m:(c + 1) * m] = inv + eye

    return chunk_inverse


def _build():
    chunk = 128
    m = chunk // BLOCKS
    attn = torch.empty(chunk, chunk)
    eye = torch.empty(m, chunk)
    out = torch.empty(m, chunk)
    return timing_only(chunk_inverse_kernel(chunk), attn, eye, out)


case(id="pypto_gdr_inverse", family="model_kernel", kind="vector", published_us=49.0, source=GUIDE,
     build=_build,
     how="upstream's models/qwen3_next inverse is a function inside the whole GatedDeltaRule kernel, with no "
         "runnable file of its own: written as the guide's final version shows, 8 diagonal [16,16] blocks "
         "concatenated to one [16,128] tile, rows 2..15 updated in a Python loop with the growing result kept in "
         "UB (+0.0), vec tile [128,128], fp32; one chunk, so the kernel span is the module's swimlane time "
         "(the published 49 us). The [16,16]-block matmul merges that follow in upstream's inverse_pto are not "
         "part of this figure")
