"""Golden tests of quantize (fp32 -> int8 / uint8) and dequantize (int8 / int16 / uint8 -> fp32):
per-row (axis -1) and per-column (axis -2) scales, optional zero points, round-half-to-even and
saturation."""

from __future__ import annotations

import pytest
import torch

import pypto

try:
    from tests.golden.helper import check_op, check_raises, rand
except ImportError:  # run without the repo root on sys.path: pytest puts this dir there
    from helper import check_op, check_raises, rand

FP32, FP16, I8, I16, U8, I32 = torch.float32, torch.float16, torch.int8, torch.int16, torch.uint8, torch.int32
PT = {I8: pypto.DT_INT8, U8: pypto.DT_UINT8}


def expand(s, axis):
    return s.unsqueeze(axis)


def torch_quantize(x, s, axis, zp, dtype):
    y = x * expand(s, axis)
    if zp is not None:
        y = y + expand(zp, axis)  # the sign of upstream's on-device tests (see pypto/ops/quant.py)
    info = torch.iinfo(dtype)
    return torch.round(y).clamp(info.min, info.max).to(dtype)


def scale_shape(shape, axis):
    return shape[:-1] if axis == -1 else shape[:-2] + shape[-1:]


@pytest.mark.parametrize("axis", [-1, -2])
@pytest.mark.parametrize("shape", [(4, 6), (2, 3, 8), (2, 2, 3, 5)], ids=str)
@pytest.mark.parametrize("otype", [I8, U8])
def test_quantize(otype, shape, axis):
    x = rand(shape, lo=-3, hi=3)
    s = rand(scale_shape(shape, axis), lo=5, hi=60, seed=1)
    zp = rand(scale_shape(shape, axis), lo=100, hi=150, seed=2) if otype == U8 else None
    inputs = [x, s] + ([zp] if zp is not None else [])
    check_op(lambda a, b, *z: pypto.quantize(a, b, PT[otype], axis, *z), inputs,
             lambda a, b, *z: torch_quantize(a, b, axis, z[0] if z else None, otype), out_dtype=otype)


def test_quantize_worked_example():
    # upstream's API example with the zero point's sign of its on-device tests (+5 maps 1.1 to 6)
    x = torch.tensor([[1.1, -2.2, 3.3, -4.4]] * 3)
    s, zp = torch.ones(3), torch.full((3,), 5.0)
    check_op(lambda a, b: pypto.quantize(a, b, pypto.DT_INT8, -1, None), [x, s],
             lambda a, b: torch.tensor([[1, -2, 3, -4]] * 3, dtype=I8), out_dtype=I8)
    check_op(lambda a, b, z: pypto.quantize(a, b, pypto.DT_UINT8, -1, z), [x, s, zp],
             lambda a, b, z: torch.tensor([[6, 3, 8, 1]] * 3, dtype=U8), out_dtype=U8)


def test_quantize_rounds_half_to_even_and_saturates():
    x = torch.tensor([[0.5, 1.5, 2.5, -0.5, -1.5, 200.0, -200.0, float("nan")]])
    s = torch.ones(1)
    want = torch.tensor([[0, 2, 2, 0, -2, 127, -128, 0]], dtype=I8)
    check_op(lambda a, b: pypto.quantize(a, b, pypto.DT_INT8, -1), [x, s], lambda a, b: want, out_dtype=I8)


def test_quantize_tiled_rows_with_tail():
    x, s = rand((37, 8), lo=-3, hi=3), rand((37,), lo=5, hi=40, seed=1)
    check_op(lambda a, b: pypto.quantize(a, b, pypto.DT_INT8, -1), [x, s],
             lambda a, b: torch_quantize(a, b, -1, None, I8), out_dtype=I8, mode="tiled", tile_inputs=[True, True])


@pytest.mark.parametrize("axis", [-1, -2])
@pytest.mark.parametrize("shape", [(4, 6), (2, 3, 8), (2, 2, 3, 5)], ids=str)
@pytest.mark.parametrize("dtype", [I8, I16, U8])
def test_dequantize(dtype, shape, axis):
    x = rand(shape, dtype, lo=0 if dtype == U8 else -100, hi=100)
    s = rand(scale_shape(shape, axis), lo=0.01, hi=0.5, seed=1)
    zp = rand(scale_shape(shape, axis), lo=-10, hi=10, seed=2)
    check_op(lambda a, b: pypto.dequantize(a, b, pypto.DT_FP32, axis), [x, s],
             lambda a, b: a.float() * expand(b, axis), out_dtype=FP32)
    check_op(lambda a, b, z: pypto.dequantize(a, b, pypto.DT_FP32, axis, z), [x, s, zp],
             lambda a, b, z: (a.float() - expand(z, axis)) * expand(b, axis), out_dtype=FP32)


def test_dequantize_worked_example():
    # upstream's API example with the zero point's sign of its on-device tests: x - 2
    x = torch.tensor([[1, 2, 3, 4]] * 3, dtype=I8)
    s, zp = torch.ones(3), torch.full((3,), 2.0)
    check_op(lambda a, b, z: pypto.dequantize(a, b, pypto.DT_FP32, -1, z), [x, s, zp],
             lambda a, b, z: torch.tensor([[-1.0, 0.0, 1.0, 2.0]] * 3), out_dtype=FP32)


def test_round_trip():
    x = rand((8, 16), lo=-1, hi=1)
    s = 127 / x.abs().amax(-1)
    got = check_op(lambda a, b: pypto.dequantize(pypto.quantize(a, b, pypto.DT_INT8, -1), 1.0 / b, pypto.DT_FP32, -1),
                   [x, s], lambda a, b: torch.round(a * b[:, None]) / b[:, None], out_dtype=FP32, loose=True)
    assert torch.allclose(got[0], x, atol=1 / 127)


def test_quant_rejects():
    x, s = rand((4, 6)), rand((4,), lo=1, hi=2)
    q = lambda a, b: pypto.quantize(a, b, pypto.DT_INT8, -1)  # noqa: E731
    check_raises(pypto.DTypeError, q, [x.half(), s])  # input must be fp32
    check_raises(pypto.DTypeError, q, [x, s.half()])
    check_raises(pypto.DTypeError, lambda a, b: pypto.quantize(a, b, pypto.DT_INT16, -1), [x, s])
    check_raises(pypto.ShapeError, q, [x, rand((6,))])  # axis -1 wants [row]
    check_raises(pypto.ShapeError, lambda a, b: pypto.quantize(a, b, pypto.DT_INT8, 0), [rand((2, 4, 6)), s])
    check_raises(pypto.ShapeError, q, [rand((6,)), rand((1,))])  # rank 2..4
    check_raises(pypto.DTypeError, lambda a, b: pypto.dequantize(a, b, pypto.DT_FP32, -1),
                 [rand((4, 6), I32), s])
    check_raises(pypto.DTypeError, lambda a, b: pypto.dequantize(a, b, pypto.DT_FP16, -1),
                 [rand((4, 6), I8), s])
