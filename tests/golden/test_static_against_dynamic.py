"""A STATIC (or fixed) size against a DYNAMIC one where an op needs them equal (issue 11, item 7):
accepted at compile time, as elementwise ops always did, and checked at run time where the op
checks its sizes (matmul K and the bias N). Golden-checked against torch."""

import pytest
import torch

import pypto
from tests.golden.helper import check_kernel, rand

D, S = pypto.DYNAMIC, pypto.STATIC
FP32 = pypto.DT_FP32
CUBE = ([16, 16], [16, 16], [16, 16])


@pypto.jit
def concat_rows(a: pypto.Tensor([D, 16], FP32), b: pypto.Tensor([S, 16], FP32),
                out: pypto.Tensor([D, 32], FP32)):
    pypto.set_vec_tile_shapes(8, 16)
    out[:] = pypto.concat([a, b], 1)


@pypto.jit
def concat_static_first(a: pypto.Tensor([6, 16], FP32), b: pypto.Tensor([D, 8], FP32)):
    pypto.set_vec_tile_shapes(8, 16)
    return pypto.concat([a, b], -1)


@pypto.jit
def matmul_dyn_k(a: pypto.Tensor([16, D], FP32), b: pypto.Tensor([S, 16], FP32)):
    pypto.set_cube_tile_shapes(*CUBE)
    return pypto.matmul(a, b, FP32)


@pypto.jit
def matmul_fixed_k(a: pypto.Tensor([D, 32], FP32), b: pypto.Tensor([D, 16], FP32)):
    pypto.set_cube_tile_shapes(*CUBE)
    return pypto.matmul(a, b, FP32)


@pypto.jit
def matmul_bias(a: pypto.Tensor([D, 16], FP32), b: pypto.Tensor([16, D], FP32), bias: pypto.Tensor([1, S], FP32)):
    pypto.set_cube_tile_shapes(*CUBE)
    return pypto.matmul(a, b, FP32, extend_params={"bias_tensor": bias})


def test_concat_dynamic_with_static():
    a, b = rand((6, 16)), rand((6, 16), seed=1)
    check_kernel(concat_rows, [a, b, torch.zeros(6, 32)], torch.cat([a, b], 1), out=2)


def test_concat_static_with_dynamic():
    a, b = rand((6, 16)), rand((6, 8), seed=2)
    check_kernel(concat_static_first, [a, b], torch.cat([a, b], -1))


@pytest.mark.parametrize("k", [16, 40])
def test_matmul_dynamic_k_against_static_k(k):
    a, b = rand((16, k)), rand((k, 16), seed=3)
    check_kernel(matmul_dyn_k, [a, b], a @ b, loose=True)


def test_matmul_static_k_against_dynamic_k():
    a, b = rand((24, 32)), rand((32, 16), seed=4)
    check_kernel(matmul_fixed_k, [a, b], a @ b, loose=True)


def test_matmul_k_mismatch_at_run_time_is_an_error():
    out = None
    with pytest.raises(pypto.ArgumentValueError, match="K of 'input' and K of 'mat2': sizes differ at run time") as e:
        out = matmul_dyn_k(rand((16, 24)), rand((40, 16)))
    assert out is None and "got:      a.shape[1] = 24\n" in str(e.value)  # checked before the run


def test_matmul_bias_static_n_against_dynamic_n():
    a, b, bias = rand((20, 16)), rand((16, 48), seed=5), rand((1, 48), seed=6)
    check_kernel(matmul_bias, [a, b, bias], a @ b + bias, loose=True)


def test_matmul_bias_n_mismatch_at_run_time_is_an_error():
    with pytest.raises(pypto.ArgumentValueError, match="N of extend_params\\['bias_tensor'\\] and of the product: "
                                                      "sizes differ at run time"):
        matmul_bias(rand((20, 16)), rand((16, 48)), rand((1, 32)))


def test_a_runtime_size_that_provably_exceeds_a_static_one_is_still_refused():
    @pypto.jit
    def kernel(a: pypto.Tensor([D, 16], FP32), b: pypto.Tensor([4, 16], FP32)):
        pypto.set_vec_tile_shapes(8, 16)
        taller = pypto.concat([a, pypto.full([8, 16], 1.0, FP32)], 0)  # a.shape[0] + 8 rows: never 4
        return pypto.concat([taller, b], 1)

    with pytest.raises(pypto.ShapeError, match="does not match tensors\\[0\\] outside dim 1"):
        kernel(rand((8, 16)), rand((4, 16)))
