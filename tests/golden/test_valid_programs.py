"""Valid programs that were refused (issue 11, item 7), each checked against torch.

- ``reshape(x, [n * 2, -1])``: the inferred size simplifies (``n * 168 // (n * 2)`` is 84);
- a reduction split over many tiles combines its partials in groups that fit UB;
- default tiles fit UB for ops with many operands (``where`` in fp32 has four tiles);
- ops on rank-0 tensors under a vector tile shape of any rank.
"""

import pytest
import torch

import pypto
from tests.golden.helper import check_kernel, check_op, rand

D, FP32 = pypto.DYNAMIC, pypto.DT_FP32


@pypto.jit
def rows_in_halves(x: pypto.Tensor([D, 168], FP32)):
    pypto.set_vec_tile_shapes(16, 84)
    y = pypto.reshape(x, [x.shape[0] * 2, -1])
    assert y.shape[1] == 84 and isinstance(y.shape[1], int), y.shape  # a plain int, not an expression
    return y + 1.0


@pytest.mark.parametrize("n", [3, 8])
def test_reshape_infers_a_simplified_size(n):
    x = rand((n, 168))
    check_kernel(rows_in_halves, [x], x.reshape(n * 2, 84) + 1.0)
    assert rows_in_halves.cache_info().misses == 1


def _reduce(op, rows, tile, dim=0, keepdim=True, dtype=FP32):
    @pypto.jit
    def kernel(x: pypto.Tensor([rows, tile[-1] if tile[-1] > 16 else 16], dtype)):
        pypto.set_vec_tile_shapes(*tile)
        return getattr(pypto, op)(x, dim, keepdim=keepdim)

    return kernel


@pytest.mark.parametrize("op", ["sum", "amax", "amin"])
@pytest.mark.parametrize("rows", [4096, 5003])
def test_reduction_over_many_tiles_combines_in_groups(op, rows):
    x = rand((rows, 16), seed=rows)
    kernel = _reduce(op, rows, (1, 16))
    check_kernel(kernel, [x], getattr(torch, op)(x, 0, keepdim=True), loose=True)
    # the combines read at most FRAMEWORK_TILE_BYTES of partials per tile
    tile_text = next(p.text for p in kernel.inspect(x).passes if p.name == "expand")
    assert "fp32[4096, 16]" not in tile_text and "fp32[5003, 16]" not in tile_text


def test_product_over_many_tiles():
    x = 1.0 + (rand((4096, 16), seed=5) * 1e-4)
    check_kernel(_reduce("prod", 4096, (1, 16)), [x], torch.prod(x, 0, keepdim=True), loose=True)


def test_int_sum_over_many_tiles_without_keepdim():
    x = rand((4100, 16), torch.int32, lo=-50, hi=50, seed=6)
    check_kernel(_reduce("sum", 4100, (2, 16), keepdim=False, dtype=pypto.DT_INT32), [x], torch.sum(x, 0).int())


def test_dynamic_rows_reduction_over_many_tiles():
    x = rand((4096, 16), seed=7)
    check_kernel(_reduce("sum", D, (1, 16)), [x], torch.sum(x, 0, keepdim=True), loose=True)


def test_a_partial_too_wide_for_ub_says_to_shrink_the_other_dims():
    kernel = _reduce("sum", 64, (1, 32768))
    with pytest.raises(pypto.ShapeError, match="does not fit in UB") as e:
        kernel.inspect(torch.empty(64, 32768))
    assert "smaller tile along the dims other than 0" in str(e.value)
    assert "use smaller tile shapes" not in str(e.value)


@pytest.mark.parametrize("dtype", [torch.float32, torch.bfloat16, torch.int32])
@pytest.mark.parametrize("shape", [(64, 4096), (4, 128, 128), (37, 1031)])
def test_default_tiles_fit_a_four_operand_where(shape, dtype):
    a, b, c, d = (rand(shape, dtype, lo=-8, hi=8, seed=s) for s in range(4))
    check_op(lambda a, b, c, d: pypto.where(a < b, c, d), [a, b, c, d],
             lambda a, b, c, d: torch.where(a < b, c, d))


def test_default_tiles_fit_a_four_input_chain():
    a, b, c, d = (rand((64, 4096), seed=s) for s in range(4))
    check_op(lambda a, b, c, d: pypto.where(a > b, c * d, d - c) + a, [a, b, c, d],
             lambda a, b, c, d: torch.where(a > b, c * d, d - c) + a)


@pytest.mark.parametrize("tile", [(16,), (8, 16), (1,), (4, 4, 4)])
@pytest.mark.parametrize("body, want", [
    (lambda x, y: pypto.exp(x) * y + x, lambda x, y: torch.exp(x) * y + x),
    (lambda x, y: pypto.where(x < y, x, y - 1.0), lambda x, y: torch.where(x < y, x, y - 1.0)),
    (lambda x, y: pypto.cast(pypto.maximum(x, y), pypto.DT_FP16), lambda x, y: torch.maximum(x, y).half()),
])
def test_rank0_ops_under_a_vector_tile(tile, body, want):
    @pypto.jit
    def kernel(x: pypto.Tensor([], FP32), y: pypto.Tensor([], FP32)):
        pypto.set_vec_tile_shapes(*tile)
        return body(x, y)

    x, y = torch.tensor(0.25), torch.tensor(-1.5)
    check_kernel(kernel, [x, y], want(x, y))


def test_softmax_split_over_many_tiles_combines_in_groups():
    # found by the fuzzer: softmax's max and sum combine their partials in groups too
    @pypto.jit
    def kernel(x: pypto.Tensor([D, D, 7, D], pypto.DT_FP32)):
        pypto.set_vec_tile_shapes(3, 32, 1, 32)
        return pypto.softmax(x, 2)

    x = rand((5, 33, 7, 40), seed=8)
    check_kernel(kernel, [x], torch.softmax(x, 2), loose=True)
