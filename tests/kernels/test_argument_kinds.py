"""Issue 20 D4-D6: arguments torch accepts are computed as torch does, others refused cleanly.

* D4: a read-only input with ``requires_grad=True`` was refused mid-run (an in-place leaf op on a
  value derived from it: "functions with out=... don't support automatic differentiation"); the
  kernel now reads its values (no autograd graph), as torch computes them.
* D5: a sparse COO input ended in torch's raw "unsupported memory format option Contiguous".
* D6: softmax over a DYNAMIC dim of size 0 failed inside the internal amax; torch returns an empty
  result. The user's own amax over an empty dim is refused before the run, as torch refuses it.
"""

from __future__ import annotations

import pytest
import torch

import pypto
from pypto.errors import ArgumentTypeError, ArgumentValueError
from tests.golden.helper import check_kernel, rand

D = pypto.DYNAMIC
FP32 = pypto.DT_FP32
SENTINEL = -7.0


@pypto.jit
def affine_matmul(x: pypto.Tensor([D, 64], FP32), w: pypto.Tensor([64, 64], FP32), out: pypto.Tensor([D, 64], FP32)):
    pypto.set_vec_tile_shapes(8, 64)
    pypto.set_cube_tile_shapes([8, 8], [64, 64], [64, 64])
    out[:] = pypto.matmul(x * 2.0 + 1.0, w, FP32) - 3.0


@pytest.mark.parametrize("calls", [1, 3])  # the first call (full path) and cached ones (fast path)
def test_inputs_that_require_grad_are_read_as_values(calls):
    affine_matmul.cache_clear()
    for k in range(calls):
        x = rand((16, 64), seed=k).requires_grad_()
        w = rand((64, 64), seed=10 + k).requires_grad_()
        want = ((x.detach() * 2.0 + 1.0) @ w.detach() - 3.0)
        check_kernel(affine_matmul, [x, w, torch.full((16, 64), SENTINEL)], want, out=2, loose=True)
        assert x.grad is None and x.requires_grad  # the caller's tensors are left as they were


def test_an_output_that_requires_grad_is_still_refused():
    out = torch.zeros(16, 64, requires_grad=True)
    with pytest.raises(ArgumentValueError, match="requires grad"):
        affine_matmul(rand((16, 64)), rand((64, 64)), out)


@pypto.jit
def doubled(x: pypto.Tensor([D, 64], FP32), out: pypto.Tensor([D, 64], FP32)):
    pypto.set_vec_tile_shapes(8, 64)
    out[:] = x * 2.0


@pytest.mark.filterwarnings("ignore:Sparse CSR tensor support")
@pytest.mark.parametrize("layout", ["coo", "csr"])
def test_a_sparse_input_is_a_clean_error(layout):
    x = rand((8, 64), seed=1)
    check_kernel(doubled, [x, torch.full((8, 64), SENTINEL)], x * 2.0, out=1)  # the fast path is armed
    sparse = x.to_sparse() if layout == "coo" else x.to_sparse_csr()
    out = torch.full((8, 64), SENTINEL)
    with pytest.raises(ArgumentTypeError, match="sparse") as info:
        doubled(sparse, out)
    assert info.value.param == "x" and "to_dense()" in str(info.value)
    assert bool((out == SENTINEL).all())
    check_kernel(doubled, [x, out], x * 2.0, out=1)


@pypto.jit
def softmax_rows(x: pypto.Tensor([8, D], FP32), out: pypto.Tensor([8, D], FP32)):
    pypto.set_vec_tile_shapes(8, 64)
    out[:] = pypto.softmax(x, -1)


@pytest.mark.parametrize("n", [0, 1, 100])
def test_softmax_over_an_empty_dynamic_dim_is_empty_as_in_torch(n):
    x = rand((8, n), seed=n)
    check_kernel(softmax_rows, [x, torch.full((8, n), SENTINEL)], torch.softmax(x, -1), out=1, loose=True)


@pypto.jit
def row_max(x: pypto.Tensor([8, D], FP32), out: pypto.Tensor([8, 1], FP32)):
    pypto.set_vec_tile_shapes(8, 64)
    out[:] = pypto.amax(x, -1, True)


def test_amax_over_an_empty_dynamic_dim_is_refused_before_the_run_as_torch_refuses_it():
    out = torch.full((8, 1), SENTINEL)
    with pytest.raises(IndexError):
        torch.amax(torch.zeros(8, 0), -1, True)
    with pytest.raises(ArgumentValueError, match="empty dim") as info:
        row_max(torch.zeros(8, 0), out)
    assert info.value.param == "x" and "x.shape[1] = 0" in str(info.value)
    assert bool((out == SENTINEL).all())
    x = rand((8, 70), seed=3)
    check_kernel(row_max, [x, out], x.amax(-1, True), out=1)


@pypto.jit
def scans_of_a_whole_dim(x: pypto.Tensor([D], FP32)):
    pypto.set_vec_tile_shapes(1)
    return pypto.concat([pypto.cumsum(pypto.exp(x), 0), x], 0)


@pytest.mark.parametrize("n", [0, 1, 5])
def test_an_op_that_keeps_a_dim_whole_over_a_dim_of_size_0_is_empty_as_in_torch(n):
    """Found by the fuzzer's empty-dim call (issue 20): the grid of a tile that is its whole
    DYNAMIC dim was ceildiv(n, n), a division by zero at n = 0."""
    x = rand((n,), seed=n)
    check_kernel(scans_of_a_whole_dim, [x], torch.cat([torch.cumsum(torch.exp(x), 0), x]), loose=True)
