"""Non-contiguous tensor arguments (transposed, sliced, expanded views; reversed numpy arrays).

As upstream accepts them: reads see the logical values, writes to a strided output land in the
caller's tensor (and nowhere else in its storage). Expanded outputs are refused
(tests/unit/test_errors.py::test_expanded_output_tensor).
"""

import numpy as np
import pytest
import torch

import pypto
from tests.golden.helper import assert_matches, check_kernel, rand


@pypto.jit
def affine(x: pypto.Tensor([pypto.DYNAMIC, 32], pypto.DT_FP32), w: pypto.Tensor([32], pypto.DT_FP32),
           out: pypto.Tensor([pypto.DYNAMIC, 32], pypto.DT_FP32)):
    pypto.set_vec_tile_shapes(8, 32)
    for b in pypto.loop(pypto.ceildiv(x.shape[0], 8)):
        out[b * 8:(b + 1) * 8, :] = x[b * 8:(b + 1) * 8, :] * w + 1.0


def want(x, w):
    return x * w + 1.0


@pytest.mark.parametrize("make_x", [
    lambda: rand((32, 20), seed=1).t(),  # transposed
    lambda: rand((20, 64), seed=1)[:, ::2],  # every other column
    lambda: rand((40, 32), seed=1)[5:25],  # a row slice: contiguous, with an offset
    lambda: rand((1, 32), seed=1).expand(20, 32),  # expanded rows
    lambda: rand((20, 32, 2), seed=1)[..., 1],  # the last dim strided
], ids=["transposed", "column-step", "row-slice", "expanded", "inner-stride"])
def test_strided_inputs_read_their_logical_values(make_x):
    x, w = make_x(), rand((64,), seed=2)[::2]
    assert x.shape == (20, 32)
    before = x.clone()
    out = torch.zeros(20, 32)
    check_kernel(affine, [x, w, out], want(x, w), out=2)
    assert torch.equal(x, before)  # inputs are not written back


def test_a_transposed_output_is_written_through_to_the_callers_tensor():
    x, w = rand((20, 32), seed=3), rand((32,), seed=4)
    storage = torch.full((32, 20), -5.0)
    out = storage.t()
    check_kernel(affine, [x, w, out], want(x, w), out=2)
    assert_matches(storage, want(x, w).t().contiguous())


def test_a_strided_output_slice_changes_only_its_own_elements():
    x, w = rand((20, 32), seed=5), rand((32,), seed=6)
    storage = torch.full((20, 96), -5.0)
    out = storage[:, 1::3]  # every third column, from column 1
    check_kernel(affine, [x, w, out], want(x, w), out=2)
    untouched = torch.ones(96, dtype=torch.bool)
    untouched[1::3] = False
    assert torch.equal(storage[:, untouched], torch.full((20, 64), -5.0))


def test_strided_and_contiguous_calls_share_one_compiled_version():
    affine.cache_clear()
    x, w = rand((20, 32), seed=7), rand((32,), seed=8)
    out = torch.zeros(20, 32)
    affine(x, w, out)
    affine(x.t().contiguous().t(), w, out)  # same logical values, strided
    affine(x, w, torch.zeros(32, 20).t())
    info = affine.cache_info()
    assert (info.misses, info.hits) == (1, 2)


@pypto.jit
def inplace_scale(x: pypto.Tensor([16, 8], pypto.DT_FP32)):
    pypto.set_vec_tile_shapes(16, 8)
    x[:] = x * 2.0 - 1.0


def test_a_strided_tensor_read_and_written_in_place():
    base = rand((8, 16), seed=9)
    x = base.t()
    expected = x * 2.0 - 1.0
    inplace_scale(x)
    assert_matches(base, expected.t().contiguous())


@pypto.jit
def returns_sum(x: pypto.Tensor([pypto.DYNAMIC, 32], pypto.DT_FP32)):
    pypto.set_vec_tile_shapes(8, 32)
    return pypto.sum(x, 0, keepdim=True)


def test_numpy_arrays_with_negative_strides():
    a = rand((12, 32), seed=10).numpy()
    rev = a[::-1]
    assert any(s < 0 for s in rev.strides)
    check_kernel(returns_sum, [rev], torch.from_numpy(a.sum(0, keepdims=True)))
    out = np.zeros((12, 32), dtype=np.float32)[::-1]
    w = rand((32,), seed=11)
    affine(torch.from_numpy(a), w, out)  # a reversed numpy output is written through
    np.testing.assert_allclose(out, want(torch.from_numpy(a), w).numpy(), rtol=1e-6, atol=1e-6)
