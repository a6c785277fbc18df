"""Golden tests of matmul: ranks 2-4 with batch broadcast, transposes, the out_dtype table,
bias epilogues (the rest of extend_params: test_matmul_fixpipe.py), unaligned sizes and the ``@`` operator."""

from __future__ import annotations

import pytest
import torch

import pypto

try:
    from tests.golden.helper import check_kernel, check_op, check_raises, rand
except ImportError:  # run without the repo root on sys.path: pytest puts this dir there
    from helper import check_kernel, check_op, check_raises, rand

FP32, FP16, BF16 = torch.float32, torch.float16, torch.bfloat16
I32, I8 = torch.int32, torch.int8
PT = {FP32: pypto.DT_FP32, FP16: pypto.DT_FP16, BF16: pypto.DT_BF16, I32: pypto.DT_INT32, I8: pypto.DT_INT8}

# operand dtype -> accepted out dtypes (the first is the default)
OUT_TABLE = {FP16: [FP16, FP32], BF16: [BF16, FP32], FP32: [FP32], I8: [I32]}
OUT_CASES = [(a, o) for a, outs in OUT_TABLE.items() for o in outs]


def operand(shape, dtype, seed):
    if dtype == I8:
        return rand(shape, I8, lo=-8, hi=8, seed=seed)
    return rand(shape, dtype, lo=-1, hi=1, seed=seed)


def ref_mm(a, b, a_trans=False, b_trans=False):
    """fp32 (int32 for int8) accumulation, as the cube unit does."""
    a = a.transpose(-1, -2) if a_trans else a
    b = b.transpose(-1, -2) if b_trans else b
    if a.dtype == I8:
        return (a.to(torch.int64) @ b.to(torch.int64)).to(I32)
    return a.float() @ b.float()


@pytest.mark.parametrize("dtype,out", OUT_CASES, ids=str)
@pytest.mark.parametrize("sa,sb", [((8, 16), (16, 12)), ((3, 8, 16), (3, 16, 12)),
                                   ((2, 3, 8, 16), (2, 3, 16, 12))], ids=str)
def test_matmul_ranks_and_out_dtypes(sa, sb, dtype, out):
    a, b = operand(sa, dtype, 1), operand(sb, dtype, 2)
    check_op(lambda x, y: pypto.matmul(x, y, PT[out]), [a, b], ref_mm, out_dtype=out)


@pytest.mark.parametrize("dtype", list(OUT_TABLE))
def test_matmul_default_out_dtype(dtype):
    a, b = operand((4, 8), dtype, 1), operand((8, 5), dtype, 2)
    check_op(pypto.matmul, [a, b], ref_mm, out_dtype=OUT_TABLE[dtype][0])


@pytest.mark.parametrize("sa,sb", [((2, 1, 5, 6), (1, 3, 6, 4)), ((1, 5, 6), (4, 6, 3)), ((3, 5, 6), (1, 6, 2)),
                                   ((2, 3, 5, 6), (1, 1, 6, 4))], ids=str)
@pytest.mark.parametrize("dtype", [FP32, FP16])
def test_matmul_batch_broadcast(sa, sb, dtype):
    a, b = operand(sa, dtype, 3), operand(sb, dtype, 4)
    got = check_op(pypto.matmul, [a, b], ref_mm)[0]
    assert got.shape == torch.broadcast_shapes(sa[:-2], sb[:-2]) + (sa[-2], sb[-1])


@pytest.mark.parametrize("a_trans,b_trans", [(False, True), (True, False), (True, True)])
@pytest.mark.parametrize("batch", [(), (2,), (2, 2)], ids=str)
@pytest.mark.parametrize("dtype", [FP32, BF16, I8])
def test_matmul_transposes(a_trans, b_trans, batch, dtype):
    m, k, n = 6, 10, 7
    a = operand((*batch, *((k, m) if a_trans else (m, k))), dtype, 5)
    b = operand((*batch, *((n, k) if b_trans else (k, n))), dtype, 6)
    got = check_op(lambda x, y: pypto.matmul(x, y, a_trans=a_trans, b_trans=b_trans), [a, b],
                   lambda x, y: ref_mm(x, y, a_trans, b_trans), out_dtype=OUT_TABLE[dtype][0])[0]
    assert got.shape[-2:] == (m, n)


@pytest.mark.parametrize("dtype", [FP32, FP16, BF16])
def test_matmul_unaligned(dtype):
    a, b = operand((17, 33), dtype, 7), operand((33, 5), dtype, 8)
    check_op(pypto.matmul, [a, b], ref_mm)
    check_op(lambda x, y: pypto.matmul(x, y, pypto.DT_FP32) if dtype != FP32 else pypto.matmul(x, y),
             [a, b], ref_mm, out_dtype=FP32)


def test_matmul_int8_accumulates_in_int32():
    """Dot products far outside int8 range: an int8 accumulator would wrap."""
    a = torch.full((3, 64), 127, dtype=I8)
    b = torch.full((64, 2), -128, dtype=I8)
    got = check_op(pypto.matmul, [a, b], ref_mm, out_dtype=I32)[0]
    assert got[0, 0] == 127 * -128 * 64


def test_matmul_fp16_accumulates_in_fp32():
    """A long fp16 dot product: fp16 accumulation would lose the small terms."""
    a = torch.ones((1, 512), dtype=FP16)
    b = torch.full((512, 1), 1.0 / 64, dtype=FP16)
    b[0, 0] = 1024.0
    got = check_op(lambda x, y: pypto.matmul(x, y, pypto.DT_FP32), [a, b], ref_mm, out_dtype=FP32)[0]
    assert got.item() == 1024.0 + 511 / 64


@pytest.mark.parametrize("dtype", [FP32, FP16, BF16])
def test_matmul_operator(dtype):
    a, b = operand((4, 9), dtype, 1), operand((9, 3), dtype, 2)
    check_op(lambda x, y: x @ y, [a, b], ref_mm)
    check_op(lambda x, y: x.matmul(y), [a, b], ref_mm)
    a3, b3 = operand((2, 4, 9), dtype, 3), operand((2, 9, 3), dtype, 4)
    check_op(lambda x, y: x @ y, [a3, b3], ref_mm)


@pytest.mark.parametrize("bias_shape", [(5,), (1, 5)], ids=str)
@pytest.mark.parametrize("dtype,out", [(FP32, FP32), (FP16, FP16), (FP16, FP32), (BF16, FP32)], ids=str)
def test_matmul_bias(dtype, out, bias_shape):
    a, b = operand((7, 12), dtype, 1), operand((12, 5), dtype, 2)
    bias = rand(bias_shape, dtype, lo=-4, hi=4, seed=3)
    check_op(lambda x, y, c: pypto.matmul(x, y, PT[out], extend_params={"bias_tensor": c}), [a, b, bias],
             lambda x, y, c: ref_mm(x, y) + c.float().reshape(-1), out_dtype=out)


def test_matmul_tiled_rows_with_tail():
    """Row tiles of a DYNAMIC M (37 = 2 x 16 + 5) against a whole B."""
    a, b = operand((37, 20), FP32, 1), operand((20, 6), FP32, 2)
    check_op(pypto.matmul, [a, b], ref_mm, mode="tiled", tile_inputs=[True, False])


def test_matmul_k_split_accumulation():
    """K split into chunks whose partial products are added: sum_k A[:, k] B[k, :]."""
    @pypto.jit
    def k_split(a: pypto.Tensor(), b: pypto.Tensor()):
        pypto.set_vec_tile_shapes(8, 8)
        p0 = pypto.matmul(a[:, 0:16], b[0:16, :])
        p1 = pypto.matmul(a[:, 16:32], b[16:32, :])
        p2 = pypto.matmul(a[:, 32:40], b[32:40, :])
        return p0 + p1 + p2

    a, b = operand((8, 40), FP32, 1), operand((40, 8), FP32, 2)
    check_kernel(k_split, [a, b], a @ b)


def test_matmul_rejects():
    a32 = rand((4, 4), I32)
    err = check_raises(pypto.DTypeError, pypto.matmul, [a32, a32])  # int32 operands
    assert isinstance(err, TypeError)
    f32 = rand((4, 4))
    check_raises(pypto.DTypeError, lambda x, y: pypto.matmul(x, y, pypto.DT_FP16), [f32, f32])
    h = rand((4, 4), FP16)
    check_raises(pypto.DTypeError, lambda x, y: pypto.matmul(x, y, pypto.DT_BF16), [h, h])
    i8 = rand((4, 4), I8)
    check_raises(pypto.DTypeError, lambda x, y: pypto.matmul(x, y, pypto.DT_INT8), [i8, i8])
    check_raises(pypto.DTypeError, pypto.matmul, [f32, h])  # mixed dtypes
    check_raises(pypto.ShapeError, pypto.matmul, [rand((4, 5)), rand((4, 5))])  # K mismatch
    check_raises(pypto.ShapeError, pypto.matmul, [rand((2, 4, 5)), rand((5, 3))])  # unequal ranks
    check_raises(pypto.ShapeError, pypto.matmul, [rand((2, 4, 5)), rand((3, 5, 3))])  # batch mismatch
    check_raises(pypto.ShapeError, lambda x, y, c: pypto.matmul(x, y, extend_params={"bias_tensor": c}),
                 [rand((4, 5)), rand((5, 3)), rand((4,))])  # bias of the wrong size
