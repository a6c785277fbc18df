"""Golden tests of pypto/ops/bitwise.py: bitwise and/or/xor/not and shifts, logical_and/logical_not
and the predicates isfinite/isnan."""

from __future__ import annotations

import math

import pytest
import torch

import pypto

try:
    from tests.golden.helper import check_op, check_raises, rand
except ImportError:  # run without the repo root on sys.path: pytest puts this dir there
    from helper import check_op, check_raises, rand

FP32, FP16, BF16 = torch.float32, torch.float16, torch.bfloat16
I64, I32, I16, I8, U8, BOOL = torch.int64, torch.int32, torch.int16, torch.int8, torch.uint8, torch.bool
FLOATS = [FP32, FP16, BF16]
INTS = [I8, U8, I16, I32]
LOGICAL = FLOATS + [I8, U8, BOOL, I16, I32]
MODES = ["direct", "tiled"]
SHAPE = {"direct": (5, 7), "tiled": (37, 8)}  # 37 rows = two full 16-row tiles + a 5-row tail
RANGE = {I8: (-128, 128), U8: (0, 256), I16: (-30000, 30000), I32: (-2 ** 30, 2 ** 30)}


def full_range(shape, dtype, seed=0):
    lo, hi = RANGE[dtype]
    return rand(shape, dtype, lo=lo, hi=hi, seed=seed)


def with_zeros(shape, dtype, seed=0):
    """Values with plenty of zeros (about a third), for the logical ops."""
    if dtype == BOOL:
        return rand(shape, BOOL, seed=seed)
    x = rand(shape, FP32, lo=-1.5, hi=1.5, seed=seed).round()
    if dtype == U8:
        x = x.abs()
    return x.to(dtype)


# ---- and / or / xor ------------------------------------------------------------------------------

BITWISE = {
    "bitwise_and": (pypto.bitwise_and, torch.bitwise_and),
    "bitwise_or": (pypto.bitwise_or, torch.bitwise_or),
    "bitwise_xor": (pypto.bitwise_xor, torch.bitwise_xor),
}


@pytest.mark.parametrize("mode", MODES)
@pytest.mark.parametrize("dtype", INTS)
@pytest.mark.parametrize("op", list(BITWISE))
def test_bitwise(op, dtype, mode):
    fn, ref = BITWISE[op]
    a, b = full_range(SHAPE[mode], dtype, 1), full_range(SHAPE[mode], dtype, 2)
    check_op(fn, [a, b], ref, mode=mode)
    s = 0x5A
    check_op(lambda t: fn(t, s), [a], lambda t: ref(t, torch.tensor(s, dtype=t.dtype)), mode=mode)


@pytest.mark.parametrize("op", list(BITWISE))
def test_bitwise_broadcast_and_values(op):
    fn, ref = BITWISE[op]
    a, b = full_range((37, 1), I32, 1), full_range((1, 8), I32, 2)
    check_op(fn, [a, b], ref, mode="tiled")
    x = torch.tensor([[0b1100, 0b1010, -1, 0]], dtype=I16)
    y = torch.tensor([[0b1010, 0b0110, 0x0F0F, -1]], dtype=I16)
    want = {"bitwise_and": [0b1000, 0b0010, 0x0F0F, 0], "bitwise_or": [0b1110, 0b1110, -1, -1],
            "bitwise_xor": [0b0110, 0b1100, ~0x0F0F, -1]}[op]
    check_op(fn, [x, y], lambda p, q: torch.tensor([want]))


@pytest.mark.parametrize("op", list(BITWISE))
def test_bitwise_rejects(op):
    fn = BITWISE[op][0]
    err = check_raises(pypto.DTypeError, fn, [rand((4, 4)), rand((4, 4))])
    assert op in str(err)
    check_raises(pypto.DTypeError, fn, [rand((4, 4), I64, lo=0, hi=9), rand((4, 4), I64, lo=0, hi=9)])
    check_raises(pypto.DTypeError, fn, [rand((4, 4), I32, lo=0, hi=9), rand((4, 4), I16, lo=0, hi=9)])
    check_raises(pypto.DTypeError, lambda t: fn(3, t), [rand((4, 4), I32, lo=0, hi=9)])  # input is a tensor
    check_raises(pypto.DTypeError, lambda t: fn(t, 1.5), [rand((4, 4), I32, lo=0, hi=9)])


# ---- not -------------------------------------------------------------------------------------------

@pytest.mark.parametrize("mode", MODES)
@pytest.mark.parametrize("dtype", [BOOL] + INTS)
def test_bitwise_not(dtype, mode):
    x = rand(SHAPE[mode], BOOL, seed=3) if dtype == BOOL else full_range(SHAPE[mode], dtype, 3)
    check_op(pypto.bitwise_not, [x], torch.bitwise_not, mode=mode)


def test_bitwise_not_values_and_rejects():
    check_op(pypto.bitwise_not, [torch.tensor([[2, 5, 0, -1]], dtype=I16)],
             lambda t: torch.tensor([[-3, -6, -1, 0]]))
    err = check_raises(pypto.DTypeError, pypto.bitwise_not, [rand((4, 4))])
    assert "bitwise_not" in str(err)


# ---- shifts ----------------------------------------------------------------------------------------

SHIFTS = {
    "bitwise_left_shift": (pypto.bitwise_left_shift, torch.bitwise_left_shift),
    "bitwise_right_shift": (pypto.bitwise_right_shift, torch.bitwise_right_shift),
}


@pytest.mark.parametrize("mode", MODES)
@pytest.mark.parametrize("op", list(SHIFTS))
def test_shift(op, mode):
    fn, ref = SHIFTS[op]
    x = full_range(SHAPE[mode], I16, 1)
    k = rand(SHAPE[mode], I16, lo=0, hi=16, seed=2)
    check_op(fn, [x, k], ref, mode=mode)
    check_op(lambda t: fn(t, 3), [x], lambda t: ref(t, 3), mode=mode)  # scalar shift
    check_op(lambda t: fn(-1000, t), [k], lambda t: ref(torch.tensor(-1000, dtype=I16), t), mode=mode)
    col = rand((SHAPE[mode][0], 1), I16, lo=0, hi=16, seed=4)  # broadcast amounts
    check_op(fn, [x, col], ref, mode=mode)


def test_shift_values():
    x = torch.tensor([[1, -1, 0x4000, 3, 0x7FFF]], dtype=I16)
    k = torch.tensor([[1, 15, 1, 0, 4]], dtype=I16)
    check_op(pypto.bitwise_left_shift, [x, k], lambda a, b: torch.tensor([[2, -32768, -32768, 3, -16]]))
    y = torch.tensor([[-8, 8, -1, 0x7FFF, -32768]], dtype=I16)
    check_op(pypto.bitwise_right_shift, [y, k], lambda a, b: torch.tensor([[-4, 0, -1, 0x7FFF, -2048]]))


@pytest.mark.parametrize("op", list(SHIFTS))
def test_shift_rejects(op):
    fn = SHIFTS[op][0]
    err = check_raises(pypto.DTypeError, fn, [rand((4, 4), I32, lo=0, hi=9), rand((4, 4), I32, lo=0, hi=9)])
    assert op in str(err)  # A2/A3 shift 16-bit integers only
    check_raises(pypto.DTypeError, lambda t: fn(t, 1.5), [rand((4, 4), I16, lo=0, hi=9)])


# ---- logical ---------------------------------------------------------------------------------------

@pytest.mark.parametrize("mode", MODES)
@pytest.mark.parametrize("dtype", LOGICAL)
def test_logical(dtype, mode):
    a, b = with_zeros(SHAPE[mode], dtype, 1), with_zeros(SHAPE[mode], dtype, 2)
    got = check_op(pypto.logical_and, [a, b], torch.logical_and, mode=mode)[0]
    assert got.dtype == BOOL and got.any() and not got.all()
    got = check_op(pypto.logical_not, [a], torch.logical_not, mode=mode)[0]
    assert got.dtype == BOOL and got.any() and not got.all()
    check_op(lambda t: t.logical_not(), [b], torch.logical_not, mode=mode)


@pytest.mark.parametrize("mode", MODES)
@pytest.mark.parametrize("da,db", [(FP32, BOOL), (I8, FP16), (BF16, I32), (U8, I16)])
def test_logical_and_mixed_dtypes_and_broadcast(da, db, mode):
    n, m = SHAPE[mode]
    a, b = with_zeros((n, m), da, 1), with_zeros((n, 1), db, 2)
    check_op(pypto.logical_and, [a, b], torch.logical_and, mode=mode)
    check_op(pypto.logical_and, [with_zeros((m,), db, 3), a], torch.logical_and, mode=mode)


def test_logical_of_compare():
    x, y = rand((6, 8), seed=1), rand((6, 8), seed=2)
    check_op(lambda a, b: pypto.logical_not(pypto.logical_and(a > 0.0, b < 0.5)), [x, y],
             lambda a, b: ~((a > 0) & (b < 0.5)))


def test_logical_rejects():
    err = check_raises(pypto.DTypeError, pypto.logical_and, [rand((4, 4), I64, lo=0, hi=3)] * 2)
    assert "logical_and" in str(err)
    check_raises(pypto.DTypeError, lambda t: pypto.logical_and(t, 1), [rand((4, 4), BOOL)])  # two tensors
    err = check_raises(pypto.DTypeError, pypto.logical_not, [rand((4, 4), I64, lo=0, hi=3)])
    assert "logical_not" in str(err)


# ---- predicates ------------------------------------------------------------------------------------

def with_specials(shape, dtype, seed=0):
    x = rand(shape, dtype, lo=-100, hi=100, seed=seed)
    if dtype.is_floating_point:
        flat = x.view(-1)
        flat[0:5] = torch.tensor([math.nan, math.inf, -math.inf, -0.0, -math.nan])
        flat[-3:] = torch.tensor([math.nan, math.inf, 0.0])
    return x


@pytest.mark.parametrize("mode", MODES)
@pytest.mark.parametrize("dtype", FLOATS + [U8, I8, I16, I32, I64])
def test_isfinite(dtype, mode):
    x = with_specials(SHAPE[mode], dtype if dtype != U8 else I16, seed=1)
    x = x.abs().to(U8) if dtype == U8 else x
    got = check_op(pypto.isfinite, [x], torch.isfinite, mode=mode)[0]
    assert got.dtype == BOOL
    assert got.all() != dtype.is_floating_point  # floats hold inf/NaN; integers are always finite


@pytest.mark.parametrize("mode", MODES)
@pytest.mark.parametrize("dtype", FLOATS)
def test_isnan(dtype, mode):
    x = with_specials(SHAPE[mode], dtype, seed=2)
    got = check_op(pypto.isnan, [x], torch.isnan, mode=mode)[0]
    assert got.dtype == BOOL and got.sum() == 3


def test_predicate_values_and_rejects():
    x = torch.tensor([[1.0, math.nan, 3.0], [math.inf, 1.0, 1.0], [1.0, 1.0, -math.inf]])
    check_op(pypto.isfinite, [x], lambda t: torch.tensor([[True, False, True], [False, True, True],
                                                          [True, True, False]]))
    check_op(pypto.isnan, [x], lambda t: torch.tensor([[False, True, False], [False, False, False],
                                                       [False, False, False]]))
    check_op(lambda t: pypto.where(pypto.isnan(t), 0.0, t), [x], lambda t: torch.nan_to_num(t, nan=0.0,
                                                                                           posinf=math.inf,
                                                                                           neginf=-math.inf))
    err = check_raises(pypto.DTypeError, pypto.isfinite, [rand((4, 4), BOOL)])
    assert "isfinite" in str(err)
    err = check_raises(pypto.DTypeError, pypto.isnan, [rand((4, 4), I32)])
    assert "isnan" in str(err)
