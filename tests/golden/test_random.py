"""Golden tests of arange, uniform and normal: exact sequences for arange, upstream's documented
Philox example bit for bit, determinism (same key and counter, same numbers), shape, dtype and
rough statistics for the random ops."""

from __future__ import annotations

import pytest
import torch

import pypto

try:
    from tests.golden.helper import check_kernel, check_op, check_raises
except ImportError:  # run without the repo root on sys.path: pytest puts this dir there
    from helper import check_kernel, check_op, check_raises

FP32, FP16, BF16, I32, I16 = torch.float32, torch.float16, torch.bfloat16, torch.int32, torch.int16
PT = {FP32: pypto.DT_FP32, FP16: pypto.DT_FP16, BF16: pypto.DT_BF16, I32: pypto.DT_INT32, I16: pypto.DT_INT16}


# ---- arange ----------------------------------------------------------------------------------------

@pytest.mark.parametrize("args,want", [((4,), torch.arange(4, dtype=I32)),
                                       ((-2, 2), torch.arange(-2, 2, dtype=I32)),
                                       ((10, 0, -2), torch.tensor([10, 8, 6, 4, 2], dtype=I32)),
                                       ((1.0, 4.0, 0.5), torch.tensor([1.0, 1.5, 2.0, 2.5, 3.0, 3.5])),
                                       ((1.0, 4.0), torch.tensor([1.0, 2.0, 3.0])),
                                       ((5.5,), torch.arange(6, dtype=FP32)),
                                       ((0, 1, 0.1), torch.arange(0, 1, 0.1)),
                                       ((3, 1000, 7), torch.arange(3, 1000, 7, dtype=I32))], ids=str)
def test_arange(args, want):
    check_op(lambda: pypto.arange(*args), [], lambda: want)


@pytest.mark.parametrize("dtype", [FP32, FP16, BF16, I32, I16])
def test_arange_dtype(dtype):
    check_op(lambda: pypto.arange(-3, 40, 3, dtype=PT[dtype]), [], lambda: torch.arange(-3, 40, 3, dtype=dtype))


def test_arange_feeds_index_select():
    x = torch.randn(12, 5)
    check_op(lambda t: pypto.index_select(t, 0, pypto.arange(0, 12, 3)), [x], lambda t: t[0::3])


def test_arange_rejects():
    check_raises(pypto.ShapeError, lambda: pypto.arange(0, 4, 0), [])
    check_raises(pypto.ShapeError, lambda: pypto.arange(4, 0), [])
    check_raises(pypto.ShapeError, lambda: pypto.arange(), [])
    check_raises(pypto.ShapeError, lambda: pypto.arange(0, 2 ** 40), [])
    check_raises(pypto.DTypeError, lambda: pypto.arange(0.0, 4.0, dtype=pypto.DT_INT32), [])
    check_raises(pypto.DTypeError, lambda: pypto.arange(4, dtype=pypto.DT_INT8), [])
    check_raises(pypto.DTypeError, lambda: pypto.arange(4, dtype=pypto.DT_FP8), [])


# ---- uniform / normal ------------------------------------------------------------------------------

def make(op, shape, key, counter1, dtype=pypto.DT_FP32):
    @pypto.jit
    def kernel(dummy: pypto.Tensor()):
        return getattr(pypto, op)(shape, [key], [0, counter1], [1], dtype)

    return kernel(torch.zeros(1))


def test_uniform_matches_upstream_example():
    """The values of upstream's pypto-uniform.md example (key [1234], counter [0, 1], shape [4, 4])."""
    got = make("uniform", [4, 4], 1234, 1)
    first = torch.tensor([0.1689806, 0.9725481, 0.90036285, 0.16582811, 0.1454581, 0.48029935])
    assert torch.allclose(got.reshape(-1)[:6], first, atol=1e-7)
    assert abs(float(got[3, 3]) - 0.24039495) < 1e-7


def test_normal_matches_upstream_example():
    """The values of upstream's pypto-normal.md example (the same key and counter)."""
    got = make("normal", [4, 4], 1234, 1)
    first = torch.tensor([-0.32364845, 1.8577391, 0.39556974, 0.2311697, 0.24243996, -1.9485782])
    assert torch.allclose(got.reshape(-1)[:6], first, atol=1e-5)
    assert abs(float(got[3, 3]) - 0.01748212) < 1e-5


@pytest.mark.parametrize("op", ["uniform", "normal"])
@pytest.mark.parametrize("dtype", [FP32, FP16, BF16])
def test_random_shape_dtype_determinism(op, dtype):
    a = make(op, [3, 5, 7], 42, 0, PT[dtype])
    b = make(op, [3, 5, 7], 42, 0, PT[dtype])
    assert a.dtype == dtype and tuple(a.shape) == (3, 5, 7)
    assert torch.equal(a, b)  # same key and counter: same numbers
    assert not torch.equal(a, make(op, [3, 5, 7], 43, 0, PT[dtype]))  # another key
    assert not torch.equal(a, make(op, [3, 5, 7], 42, 1, PT[dtype]))  # another counter
    # the stream does not depend on the shape: a prefix of a longer draw is the same numbers
    flat = make(op, [3 * 5 * 7 + 3], 42, 0, PT[dtype])
    assert torch.equal(a.reshape(-1), flat[:105])


@pytest.mark.parametrize("dtype, bits", [(FP16, 10), (BF16, 7)], ids=str)
def test_half_uniform_takes_its_mantissa_from_the_low_bits_of_each_philox_output(dtype, bits):
    """Upstream's st/test_uniform.py golden: an fp16 (bf16) value is ``1.m - 1`` built in that
    format from the low 10 (7) bits of the 32-bit output, not the fp32 value rounded (which
    differs in about half the elements)."""
    u32 = make("uniform", [8, 16], 1234, 1)  # the same outputs as fp32: their low 23 bits
    low = (u32 + 1.0).view(torch.int32) & 0x7FFFFF
    want = ((low & ((1 << bits) - 1)).double() / (1 << bits)).to(dtype)  # exact in the format
    got = make("uniform", [8, 16], 1234, 1, PT[dtype])
    assert torch.equal(got, want)
    assert not torch.equal(got, u32.to(dtype))


def test_uniform_statistics():
    u = make("uniform", [64, 128], 7, 3)
    assert float(u.min()) >= 0.0 and float(u.max()) < 1.0
    assert abs(float(u.mean()) - 0.5) < 0.01
    assert abs(float(u.var()) - 1 / 12) < 0.005


def test_normal_statistics():
    z = make("normal", [64, 129], 7, 3)  # an odd element count: Box-Muller pairs, cut to size
    assert abs(float(z.mean())) < 0.03
    assert abs(float(z.std()) - 1.0) < 0.03
    assert 0.6 < float((z.abs() < 1).float().mean()) < 0.76  # about 68% within one sigma


@pypto.jit
def uniform_rows(out: pypto.Tensor([4, 16])):
    """A symbolic counter: each loop iteration draws an independent row."""
    pypto.set_vec_tile_shapes(1, 16)
    for i in pypto.loop(4):
        out[i:i + 1, :] = pypto.uniform([1, 16], [9], [0, i], [1], pypto.DT_FP32)


def test_uniform_symbolic_counter():
    out = torch.zeros(4, 16)
    rows = torch.cat([make("uniform", [1, 16], 9, i) for i in range(4)])
    check_kernel(uniform_rows, [out], rows, out=0)
    assert not torch.equal(out[0], out[1])


def test_random_rejects():
    bad = [lambda: pypto.uniform([4, 4], [1], [0, 1], [1], pypto.DT_INT32),
           lambda: pypto.normal([4, 4], [1, 2], [0, 1], [1], pypto.DT_FP32),
           lambda: pypto.uniform([4, 4], [1], [0], [1], pypto.DT_FP32),
           lambda: pypto.uniform([4, 4], [1], [0, 1], [2], pypto.DT_FP32),
           lambda: pypto.normal([1, 1, 1, 1, 1], [1], [0, 1], [1], pypto.DT_FP32),
           lambda: pypto.uniform([4, 0], [1], [0, 1], [1], pypto.DT_FP32)]
    check_raises(pypto.DTypeError, bad[0], [])
    for fn in bad[1:]:
        check_raises(pypto.ShapeError, fn, [])
