"""Batched matmul over a tail tile: the batch dims of the result are valid only as far as the
operands' (found by the differential fuzzer: the full batch size claimed the tile's padding as
valid, so a later op and assemble wrote garbage rows)."""

from __future__ import annotations

import torch

import pypto

try:
    from tests.golden.helper import check_kernel, rand
except ImportError:  # run without the repo root on sys.path: pytest puts this dir there
    from helper import check_kernel, rand

TILE = 8


@pypto.jit
def batch_tail_into_accumulator(x: pypto.Tensor([pypto.DYNAMIC, 3, 4], pypto.DT_FP32),
                                w: pypto.Tensor([pypto.DYNAMIC, 4, 5], pypto.DT_FP32),
                                acc: pypto.Tensor([TILE, 3, 5], pypto.DT_FP32)):
    for b in pypto.loop(pypto.ceildiv(x.shape[0], TILE)):
        prod = pypto.matmul(x[b * TILE:(b + 1) * TILE, :, :], w[b * TILE:(b + 1) * TILE, :, :])
        acc[0:TILE, :, :] = prod + acc[0:TILE, :, :]


def _expected(x, w, acc):
    want = acc.clone()
    for start in range(0, x.shape[0], TILE):
        rows = min(TILE, x.shape[0] - start)
        want[:rows] += x[start:start + rows] @ w[start:start + rows]
    return want


def test_batched_matmul_of_a_tail_tile_writes_only_valid_batches():
    for batch in (3, 11):  # a lone tail tile, then a full tile plus a tail
        x, w = rand((batch, 3, 4), seed=1), rand((batch, 4, 5), seed=2)
        acc = rand((TILE, 3, 5), seed=3)
        check_kernel(batch_tail_into_accumulator, (x, w, acc), _expected(x, w, acc), out=2)


def test_the_batch_valid_extent_follows_the_operands():
    x, w, acc = rand((3, 3, 4)), rand((3, 4, 5)), torch.zeros(TILE, 3, 5)
    text = batch_tail_into_accumulator.inspect(x, w, acc).text()
    line = next(ln for ln in text.splitlines() if "= matmul(" in ln)
    assert "valid[min(max(x.shape[0] - b * 8, 0), 8), 3, 5]" in line, line
