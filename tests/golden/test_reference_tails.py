"""The reference executor (pass verify's definition of the numbers) against torch on tail tiles.

A view of a DYNAMIC sequence in blocks leaves a last block that is only partly valid; a reshape
that drops a size-1 dim must keep that block's valid rows. The reference once laid the tail into
the whole block (zeros past it), so flash attention's last K/V block was a softmax over 64 columns
where 32 were valid: pass verify then reported a mismatch the kernel did not have."""

from __future__ import annotations

import pathlib
import sys

import pytest
import torch

import pypto
from tests.golden.helper import assert_matches, rand, reference_run

sys.path.insert(0, str(pathlib.Path(__file__).resolve().parents[2] / "examples"))

DYN = pypto.DYNAMIC
FP32 = pypto.DT_FP32
BLOCK, WIDTH = 64, 32


@pypto.jit
def block_max(x: pypto.Tensor([DYN, DYN, WIDTH], FP32), out: pypto.Tensor([DYN, DYN, WIDTH], FP32)):
    """``out[b, j]`` is the column-wise max of rows ``j*64 .. j*64+63`` of ``x[b]`` (a tail block
    has fewer rows: a zero row counted in would show, the data is negative)."""
    pypto.set_vec_tile_shapes(BLOCK, WIDTH)
    for b in pypto.loop(x.shape[0]):
        for j in pypto.loop(pypto.ceildiv(x.shape[1], BLOCK)):
            rows = pypto.reshape(x[b:b + 1, j * BLOCK:(j + 1) * BLOCK, :], [BLOCK, WIDTH])
            out[b:b + 1, j:j + 1, :] = pypto.reshape(pypto.amax(rows, 0, keepdim=True), [1, 1, WIDTH])


def _block_max_torch(x):
    return torch.stack([blk.amax(dim=1) for blk in x.split(BLOCK, dim=1)], dim=1)


@pytest.mark.parametrize("seq", [64, 96, 97, 130])
def test_reshape_of_a_tail_block_keeps_its_valid_rows(seq):
    x = rand((2, seq, WIDTH), lo=-3.0, hi=-1.0, seed=seq)
    want = _block_max_torch(x)
    out = torch.zeros(2, -(-seq // BLOCK), WIDTH)
    block_max(x, out)
    assert_matches(out, want, what="the kernel's result")
    copies, _ = reference_run(block_max, (x, torch.zeros_like(out)))
    assert_matches(copies[1], want, what="the reference executor's result")


@pytest.mark.parametrize("seq", [64, 96, 97, 100, 128])
def test_reference_executor_matches_torch_on_flash_attention(seq):
    import flash_attention as fa

    g = torch.Generator().manual_seed(seq)
    q, k, v = (torch.randn(2, seq, fa.D, generator=g) for _ in range(3))
    want = fa.reference(q, k, v)
    out = torch.zeros(2, seq, fa.D)
    fa.flash_attention(q, k, v, out)
    assert_matches(out, want, loose=True, what="the kernel's result")
    copies, _ = reference_run(fa.flash_attention, (q, k, v, torch.zeros(2, seq, fa.D)))
    assert_matches(copies[3], want, loose=True, what="the reference executor's result")
