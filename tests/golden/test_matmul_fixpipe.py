"""Golden tests of matmul's extend_params epilogue (pypto/ops/fixpipe.py): bias, ReLU, per-tensor
and per-channel (de)quantisation with the fixpipe's 19-bit scale, int8 results rounded and
saturated, TF32 rounding of fp32 operands; and the combinations upstream rejects."""

from __future__ import annotations

import struct

import pytest
import torch

import pypto

try:
    from tests.golden.helper import check_op, check_raises, rand
except ImportError:  # run without the repo root on sys.path: pytest puts this dir there
    from helper import check_op, check_raises, rand

FP32, FP16, BF16 = torch.float32, torch.float16, torch.bfloat16
I64, I32, I8 = torch.int64, torch.int32, torch.int8
PT = {FP32: pypto.DT_FP32, FP16: pypto.DT_FP16, BF16: pypto.DT_BF16, I32: pypto.DT_INT32, I8: pypto.DT_INT8}
RELU = pypto.ReLuType.RELU


def operand(shape, dtype, seed):
    if dtype == I8:
        return rand(shape, I8, lo=-6, hi=6, seed=seed)
    return rand(shape, dtype, lo=-1, hi=1, seed=seed)


def masked(scale: float) -> float:
    """The scale as the fixpipe keeps it: sign, exponent and the top 10 mantissa bits."""
    bits = struct.unpack("<I", struct.pack("<f", scale))[0] & 0xFFFFE000
    return struct.unpack("<f", struct.pack("<I", bits))[0]


def packed(scales: torch.Tensor) -> torch.Tensor:
    """fp32 scales packed as npu_trans_quant_param does: masked float bits in an int64."""
    return (scales.contiguous().view(I32).to(I64) & 0xFFFFFFFF) & 0xFFFFE000


def acc(a, b, bias=None, relu=False):
    """The accumulator: int32 for int8 operands, else fp32; then the bias and the ReLU."""
    out = a.to(torch.int64) @ b.to(torch.int64) if a.dtype == I8 else a.float() @ b.float()
    if bias is not None:
        out = out + bias.to(out.dtype)
    return torch.relu(out) if relu else out


def to_int8(x):
    return torch.round(x.float()).clamp(-128, 127).to(I8)


@pytest.mark.parametrize("relu", [False, True])
@pytest.mark.parametrize("with_bias", [False, True])
def test_int8_dequantised_to_fp16_per_tensor(relu, with_bias):
    a, b = operand((9, 40), I8, 1), operand((40, 12), I8, 2)
    bias = rand((1, 12), I32, lo=-50, hi=50, seed=3)
    scale = 0.0123456  # not representable in 19 bits: the masked value is what counts
    params = lambda c: {"scale": scale, "relu_type": RELU if relu else pypto.ReLuType.NO_RELU,  # noqa: E731
                        **({"bias_tensor": c} if with_bias else {})}
    check_op(lambda x, y, c: pypto.matmul(x, y, pypto.DT_FP16, extend_params=params(c)), [a, b, bias],
             lambda x, y, c: acc(x, y, c if with_bias else None, relu).float() * masked(scale), out_dtype=FP16)


def test_the_scale_keeps_19_bits():
    """1 + 2**-11 needs an 11th mantissa bit: the fixpipe uses 1.0, so 1000 stays 1000 (not 1000.5)."""
    a, b = torch.full((2, 20), 5, dtype=I8), torch.full((20, 3), 10, dtype=I8)  # every sum is 1000
    got = check_op(lambda x, y: pypto.matmul(x, y, pypto.DT_FP16, extend_params={"scale": 1 + 2 ** -11}), [a, b],
                   lambda x, y: acc(x, y).float() * masked(1 + 2 ** -11), out_dtype=FP16)[0]
    assert torch.equal(got, torch.full((2, 3), 1000.0, dtype=FP16))


def test_int8_dequantised_to_fp16_per_channel():
    a, b = operand((7, 32), I8, 1), operand((32, 10), I8, 2)
    scales = rand((1, 10), FP32, lo=0.01, hi=2.0, seed=4)
    want_scale = packed(scales).to(I32).view(FP32)
    check_op(lambda x, y, s: pypto.matmul(x, y, pypto.DT_FP16, extend_params={"scale_tensor": s, "relu_type": RELU}),
             [a, b, packed(scales)], lambda x, y, s: acc(x, y, relu=True).float() * want_scale, out_dtype=FP16)


def test_batched_per_channel_scales_follow_the_batch():
    a, b = operand((3, 5, 16), I8, 1), operand((3, 16, 8), I8, 2)
    scales = rand((3, 1, 8), FP32, lo=0.01, hi=2.0, seed=5)
    want_scale = packed(scales).to(I32).view(FP32)
    check_op(lambda x, y, s: pypto.matmul(x, y, pypto.DT_FP16, extend_params={"scale_tensor": s}),
             [a, b, packed(scales)], lambda x, y, s: acc(x, y).float() * want_scale, out_dtype=FP16)


@pytest.mark.parametrize("dtype", [FP16, BF16, FP32, I8])
def test_quantised_to_int8_rounds_and_saturates(dtype):
    a, b = operand((6, 24), dtype, 1), operand((24, 11), dtype, 2)
    scale = 37.5 if dtype != I8 else 0.75  # large enough that some results saturate
    got = check_op(lambda x, y: pypto.matmul(x, y, pypto.DT_INT8, extend_params={"scale": scale}), [a, b],
                   lambda x, y: to_int8(acc(x, y).float() * masked(scale)), out_dtype=I8)[0]
    assert (got == 127).any() or (got == -128).any()


def test_quantised_to_int8_per_channel_with_bias_and_relu():
    a, b = operand((5, 20), FP16, 1), operand((20, 9), FP16, 2)
    bias, scales = rand((9,), FP16, lo=-1, hi=1, seed=3), rand((1, 9), FP32, lo=1, hi=30, seed=4)
    want_scale = packed(scales).to(I32).view(FP32)
    check_op(lambda x, y, c, s: pypto.matmul(x, y, pypto.DT_INT8, extend_params={
        "bias_tensor": c, "scale_tensor": s, "relu_type": RELU}), [a, b, bias, packed(scales)],
        lambda x, y, c, s: to_int8(acc(x, y, c, True) * want_scale), out_dtype=I8)


@pytest.mark.parametrize("dtype,out", [(FP16, FP32), (FP16, FP16), (BF16, FP32), (FP32, FP32), (I8, I32)], ids=str)
def test_relu_after_the_bias(dtype, out):
    a, b = operand((8, 16), dtype, 1), operand((16, 6), dtype, 2)
    bias = operand((1, 6), I32 if dtype == I8 else FP32 if dtype == BF16 else dtype, 3)  # no bf16 bias on A2/A3
    check_op(lambda x, y, c: pypto.matmul(x, y, PT[out], extend_params={"bias_tensor": c, "relu_type": RELU}),
             [a, b, bias], lambda x, y, c: acc(x, y, c, True), out_dtype=out)


def test_a_batched_bias_is_added_per_batch():
    a, b = operand((3, 7, 12), FP16, 1), operand((3, 12, 10), FP16, 2)
    bias = operand((3, 1, 10), FP32, 3)
    check_op(lambda x, y, c: pypto.matmul(x, y, pypto.DT_FP32, extend_params={"bias_tensor": c}), [a, b, bias],
             lambda x, y, c: acc(x, y, c), out_dtype=FP32)


def tf32(x, ties_away):
    """Reference TF32 rounding in float64: keep 10 mantissa bits, to nearest."""
    m, e = torch.frexp(x.double())  # x = m * 2**e, 0.5 <= |m| < 1: 11 significant bits incl. the leading one
    scaled = m * 2.0 ** 11
    r = torch.sign(scaled) * torch.floor(scaled.abs() + 0.5) if ties_away else torch.round(scaled)
    return torch.ldexp(r / 2.0 ** 11, e).float()


@pytest.mark.parametrize("mode", [pypto.TransMode.CAST_RINT, pypto.TransMode.CAST_ROUND])
def test_tf32_rounds_fp32_operands(mode):
    a, b = operand((6, 32), FP32, 1), operand((32, 7), FP32, 2)
    a[0, :4] = torch.tensor([1 + 2 ** -11, 1 + 3 * 2 ** -11, -(1 + 2 ** -11), 1 + 2 ** -12])  # ties and below
    ties_away = mode == pypto.TransMode.CAST_ROUND
    got = check_op(lambda x, y: pypto.matmul(x, y, pypto.DT_FP32, extend_params={"trans_mode": mode}), [a, b],
                   lambda x, y: tf32(x, ties_away) @ tf32(y, ties_away), out_dtype=FP32)[0]
    assert not torch.equal(got, a @ b)


def test_rejects():
    f16, i8 = operand((4, 8), FP16, 1), operand((4, 8), I8, 1)
    f16b, i8b = operand((8, 4), FP16, 2), operand((8, 4), I8, 2)
    mm = pypto.matmul
    # a scale outside the (de)quantising paths, and those paths without one
    check_raises(pypto.DTypeError, lambda x, y: mm(x, y, pypto.DT_FP32, extend_params={"scale": 0.5}), [f16, f16b])
    check_raises(pypto.DTypeError, lambda x, y: mm(x, y, pypto.DT_INT32, extend_params={"scale": 0.5}), [i8, i8b])
    err = check_raises(pypto.DTypeError, lambda x, y: mm(x, y, pypto.DT_FP16), [i8, i8b])
    assert "scale" in str(err) and "DT_FP16" in str(err)
    check_raises(pypto.DTypeError, lambda x, y: mm(x, y, pypto.DT_INT8, extend_params={"scale": 0.0}), [f16, f16b])
    s = packed(torch.ones(1, 4))
    check_raises(pypto.DTypeError, lambda x, y, t: mm(x, y, pypto.DT_FP16, extend_params={
        "scale": 0.5, "scale_tensor": t}), [i8, i8b, s])  # both
    check_raises(pypto.DTypeError, lambda x, y, t: mm(x, y, pypto.DT_FP16, extend_params={"scale_tensor": t}),
                 [i8, i8b, torch.ones(1, 4, dtype=I32)])  # not int64
    check_raises(pypto.ShapeError, lambda x, y, t: mm(x, y, pypto.DT_FP16, extend_params={"scale_tensor": t}),
                 [i8, i8b, packed(torch.ones(1, 5))])  # not N columns
    check_raises(pypto.ShapeError, lambda x, y, t: mm(x, y, pypto.DT_FP16, extend_params={"scale_tensor": t}),
                 [i8, i8b, packed(torch.ones(4))])  # no [1, N] row
    check_raises(pypto.DTypeError, lambda x, y: mm(x, y, pypto.DT_FP32, extend_params={"relu_type": 3}), [f16, f16b])
    err = check_raises(pypto.DTypeError, lambda x, y: mm(x, y, pypto.DT_FP32, extend_params={
        "trans_mode": pypto.TransMode.CAST_RINT}), [f16, f16b])
    assert "DT_FP32" in str(err)
    check_raises(pypto.DTypeError, lambda x, y: mm(x, y, extend_params={"bogus": 1}), [f16, f16b])


def test_split_k_rejects_relu_and_scales():
    @pypto.jit
    def split_k_relu(a: pypto.Tensor([16, 1024], pypto.DT_FP16), b: pypto.Tensor([1024, 16], pypto.DT_FP16),
                     out: pypto.Tensor([16, 16], pypto.DT_FP32)):
        pypto.set_cube_tile_shapes([16, 16], [64, 256], [16, 16], True)
        out[:] = pypto.matmul(a, b, pypto.DT_FP32, extend_params={"relu_type": RELU})

    with pytest.raises(pypto.DTypeError, match="split-K"):
        split_k_relu(operand((16, 1024), FP16, 1), operand((1024, 16), FP16, 2), torch.zeros(16, 16))
