"""``pypto.reshape(t, shape, valid_shape=...)`` of a whole tile: a tile computed over all its rows
(padded inputs, as qwen3_next's gated delta rule pads the last chunk) is reshaped whole, as the
device reshapes its memory, and keeps the valid part the call names; the tail's assemble writes
only those rows. Before issue 20 this raised "reshape of a partial (tail) tile is ambiguous"
(a first version of the fix dropped a batched leaf's leading dim: rows 9-12 came out 0 here).
"""

import pytest
import torch

import pypto
from tests.golden.helper import check_kernel, rand

FP32 = pypto.DT_FP32


@pypto.jit
def padded_rows(x: pypto.Tensor([pypto.DYNAMIC, 16], FP32), out: pypto.Tensor([pypto.DYNAMIC, 1, 16], FP32)):
    for b in pypto.loop(pypto.ceildiv(x.shape[0], 8)):
        valid = pypto.min(x.shape[0] - b * 8, 8)
        pypto.set_vec_tile_shapes(8, 16)
        whole = pypto.full([8, 16], 2.0, FP32) + pypto.view(x, [1, 16], [0, 0])  # every row valid
        pypto.set_vec_tile_shapes(8, 1, 16)
        rows = pypto.reshape(whole, [8, 1, 16], valid_shape=[valid, 1, 16])
        pypto.assemble(rows, [b * 8, 0, 0], out)


@pytest.mark.parametrize("n", [16, 13, 3])
def test_reshape_of_a_whole_tile_keeps_the_valid_rows(n):
    x = rand((n, 16), seed=n)
    want = (x[0:1] + 2.0).expand(n, 16).reshape(n, 1, 16)
    check_kernel(padded_rows, [x, torch.full((n, 1, 16), float("nan"))], want, out=1)
