"""Golden tests of the operators added for upstream's programs (issue 9): copysign, expand,
greater, the ``zeros``/``ones(*size, dtype=...)`` call forms, and the Tensor methods fillpad,
greater, copysign, fill_ and ``dst.assemble(src, offsets)``."""

from __future__ import annotations

import pytest
import torch

import pypto

try:
    from tests.golden.helper import check_kernel, check_op, check_raises, rand
except ImportError:  # run without the repo root on sys.path: pytest puts this dir there
    from helper import check_kernel, check_op, check_raises, rand

FP32, FP16, BF16, I32, I16, I8 = torch.float32, torch.float16, torch.bfloat16, torch.int32, torch.int16, torch.int8
MODES = ["direct", "tiled"]
SHAPE = {"direct": (5, 7), "tiled": (37, 8)}  # 37 rows = two full 16-row tiles + a 5-row tail


# ---- copysign ----------------------------------------------------------------------------------------

@pytest.mark.parametrize("mode", MODES)
@pytest.mark.parametrize("dtype", [FP32, FP16, BF16])
def test_copysign_floats(dtype, mode):
    a = rand(SHAPE[mode], dtype, lo=-100, hi=100, seed=1)
    b = rand(SHAPE[mode], dtype, lo=-100, hi=100, seed=2)
    check_op(pypto.copysign, [a, b], torch.copysign, mode=mode)


@pytest.mark.parametrize("dtype", [I32, I16])
def test_copysign_integers_give_fp32(dtype):
    a = rand((6, 9), dtype, lo=-50, hi=50, seed=3)
    b = rand((6, 9), dtype, lo=-50, hi=50, seed=4)
    check_op(pypto.copysign, [a, b], lambda x, y: torch.copysign(x.float(), y.float()), out_dtype=FP32)


def test_copysign_signed_zero_broadcast_and_method():
    a = torch.tensor([[1.0, -2.0, 3.0, 0.0, -0.0, float("inf")]])
    b = torch.tensor([[-0.0, 0.0, -1.0, -5.0, 5.0, -1.0]])
    got = check_op(lambda x, y: x.copysign(y), [a, b], torch.copysign)[0]
    assert torch.equal(torch.signbit(got), torch.signbit(torch.copysign(a, b)))  # -0.0 counts as negative
    row = torch.tensor([[-1.0, 1.0, -1.0, 1.0, -1.0, 1.0]])
    check_op(pypto.copysign, [rand((4, 6), lo=-3, hi=3), row], torch.copysign)  # b broadcast over rows


def test_copysign_rejects():
    check_raises(pypto.DTypeError, pypto.copysign, [rand((2, 3)), rand((2, 3), FP16)])  # dtypes differ
    check_raises(pypto.DTypeError, pypto.copysign, [rand((2, 3), I8, lo=-3, hi=3)] * 2)  # int8 not supported
    check_raises(pypto.DTypeError, lambda x: pypto.copysign(x, 1.0), [rand((2, 3))])  # tensors only


# ---- expand --------------------------------------------------------------------------------------------

@pytest.mark.parametrize("dtype", [FP32, FP16, I32])
def test_expand_size_one_dims(dtype):
    x = rand((4, 1), dtype, lo=-9, hi=9)
    check_op(lambda t: pypto.expand(t, [4, 6]), [x], lambda t: t.expand(4, 6).clone())


def test_expand_minus_one_and_new_leading_dims():
    x = rand((1, 5))
    check_op(lambda t: pypto.expand(t, [3, -1, 5]), [x], lambda t: t.expand(3, -1, 5).clone())
    y = rand((3, 1), seed=2)
    check_op(lambda t: pypto.expand(t, [2, 3, 4]), [y], lambda t: t.expand(2, 3, 4).clone())


def test_expand_rejects():
    check_raises(pypto.ShapeError, lambda t: pypto.expand(t, [4, 6]), [rand((4, 2))])  # 2 cannot grow to 6
    check_raises(pypto.ShapeError, lambda t: pypto.expand(t, [6]), [rand((4, 1))])  # fewer dims than the input
    check_raises(pypto.ShapeError, lambda t: pypto.expand(t, [-1, 4, 1]), [rand((4, 1))])  # -1 on a new dim


# ---- greater and the Tensor method forms ----------------------------------------------------------------

@pytest.mark.parametrize("mode", MODES)
def test_greater_is_gt(mode):
    a, b = rand(SHAPE[mode], seed=5), rand(SHAPE[mode], seed=6)
    check_op(pypto.greater, [a, b], torch.gt, mode=mode)
    check_op(lambda x: x.greater(0.5), [a], lambda x: x > 0.5, mode=mode)


def test_fillpad_method_matches_the_function():
    x = rand((4, 8))

    @pypto.jit
    def pad_tail(a: pypto.Tensor([4, 8], pypto.DT_FP32), out: pypto.Tensor([4, 8], pypto.DT_FP32)):
        pypto.set_vec_tile_shapes(4, 8)
        v = pypto.view(a, [4, 8], [0, 0], valid_shape=[3, 5])
        out[:] = v.fillpad("constant", -7.0)

    want = torch.full((4, 8), -7.0)
    want[:3, :5] = x[:3, :5]
    check_kernel(pad_tail, [x, torch.zeros(4, 8)], want, out=1)


def test_fill_and_assemble_methods():
    @pypto.jit
    def fill_then_place(a: pypto.Tensor([2, 4], pypto.DT_FP32), out: pypto.Tensor([4, 4], pypto.DT_FP32)):
        pypto.set_vec_tile_shapes(4, 4)
        out.fill_(3.0)  # out is an argument: written in place
        out.assemble(a, [2, 0])  # upstream's dst.assemble(src, offsets)

    a = rand((2, 4))
    want = torch.full((4, 4), 3.0)
    want[2:] = a
    check_kernel(fill_then_place, [a, torch.zeros(4, 4)], want, out=1)


# ---- zeros / ones call forms ----------------------------------------------------------------------------

@pytest.mark.parametrize("make,ref", [(pypto.zeros, torch.zeros), (pypto.ones, torch.ones)])
def test_zeros_ones_size_forms(make, ref):
    check_op(lambda: make(2, 3, dtype=pypto.DT_INT32), [], lambda: ref(2, 3, dtype=I32))
    check_op(lambda: make([2, 3]), [], lambda: ref(2, 3))  # one list, fp32 by default
    check_op(lambda: make(4), [], lambda: ref(4))
    check_op(lambda: make([2, 3], pypto.DT_FP16), [], lambda: ref(2, 3, dtype=FP16))  # the older positional dtype


def test_zeros_dtype_given_twice():
    check_raises(pypto.DTypeError, lambda: pypto.zeros(2, pypto.DT_FP16, dtype=pypto.DT_FP32), [])


# ---- pypto.Element as a scalar operand ----------------------------------------------------------------

@pytest.mark.parametrize("mode", MODES)
@pytest.mark.parametrize("dtype,pdt,value", [(FP16, pypto.DT_FP16, 1.5), (BF16, pypto.DT_BF16, -0.75),
                                              (I32, pypto.DT_INT32, -7), (FP32, pypto.DT_FP32, 3)])
def test_where_with_an_element(dtype, pdt, value, mode):
    c = rand(SHAPE[mode], torch.bool, seed=5)
    x = rand(SHAPE[mode], dtype, lo=-20, hi=20, seed=6)
    el = pypto.Element(pdt, value)
    want = float(value) if dtype.is_floating_point else value
    check_op(lambda c_, t: pypto.where(c_, t, el), [c, x], lambda c_, t: torch.where(c_, t, want), mode=mode)
    check_op(lambda c_, t: pypto.where(c_, el, t), [c, x], lambda c_, t: torch.where(c_, want, t), mode=mode)


@pytest.mark.parametrize("dtype,pdt,value", [(FP16, pypto.DT_FP16, 2.5), (I16, pypto.DT_INT16, -3)])
def test_full_with_an_element(dtype, pdt, value):
    check_op(lambda: pypto.full([3, 4], pypto.element(pdt, value), pdt), [],
             lambda: torch.full((3, 4), value, dtype=dtype))
    check_op(lambda: pypto.full([2, 5], pypto.Element(pdt, value)), [],  # dtype from the element
             lambda: torch.full((2, 5), value, dtype=dtype))


def test_element_dtype_must_match_the_tensor():
    c, x = rand((4, 4), torch.bool), rand((4, 4), FP16)
    check_raises(pypto.DTypeError, lambda c_, t: pypto.where(c_, t, pypto.Element(pypto.DT_FP32, 1.0)), [c, x])
    check_raises(pypto.DTypeError, lambda: pypto.full([2, 2], pypto.Element(pypto.DT_FP32, 1.0), pypto.DT_FP16), [])
