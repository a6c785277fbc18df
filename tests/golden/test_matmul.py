"""Golden tests of matmul: ranks 2-4 with batch broadcast, transposes, the out_dtype table,
bias epilogues (the rest of extend_params: test_matmul_fixpipe.py), unaligned sizes and the ``@`` operator."""

from __future__ import annotations

import importlib

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
    bias = rand(bias_shape, FP32 if dtype == BF16 else dtype, lo=-4, hi=4, seed=3)  # no bf16 bias on A2/A3
    check_op(lambda x, y, c: pypto.matmul(x, y, PT[out], extend_params={"bias_tensor": c}), [a, b, bias],
             lambda x, y, c: ref_mm(x, y) + c.float().reshape(-1), out_dtype=out)


@pytest.mark.parametrize("dtype,out", [(FP32, BF16), (FP32, FP16), (FP16, BF16), (BF16, FP16)], ids=str)
def test_matmul_float_result_of_another_float_dtype(dtype, out):
    """The fp32 accumulator rounds once into any float result (upstream's models: fp32 -> bf16)."""
    a, b = operand((6, 40), dtype, 1), operand((40, 5), dtype, 2)
    got = check_op(lambda x, y: pypto.matmul(x, y, PT[out]), [a, b], ref_mm, out_dtype=out)[0]
    assert got.dtype == out


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
    check_raises(pypto.DTypeError, lambda x, y: pypto.matmul(x, y, pypto.DT_INT32), [f32, f32])
    h = rand((4, 4), FP16)
    check_raises(pypto.DTypeError, lambda x, y: pypto.matmul(x, y, pypto.DT_INT32), [h, h])
    i8 = rand((4, 4), I8)
    check_raises(pypto.DTypeError, lambda x, y: pypto.matmul(x, y, pypto.DT_INT8), [i8, i8])
    check_raises(pypto.DTypeError, pypto.matmul, [f32, h])  # mixed dtypes
    check_raises(pypto.ShapeError, pypto.matmul, [rand((4, 5)), rand((4, 5))])  # K mismatch
    check_raises(pypto.ShapeError, pypto.matmul, [rand((2, 4, 5)), rand((5, 3))])  # unequal ranks
    check_raises(pypto.ShapeError, pypto.matmul, [rand((2, 4, 5)), rand((3, 5, 3))])  # batch mismatch
    check_raises(pypto.ShapeError, lambda x, y, c: pypto.matmul(x, y, extend_params={"bias_tensor": c}),
                 [rand((4, 5)), rand((5, 3)), rand((4,))])  # bias of the wrong size


# ---- the fixpipe epilogue: bias, scale / scale_tensor, relu, int8 (de)quantisation -----------------

def masked(x):
    """A scale as the fixpipe uses it: fp32 with the mantissa cut to 10 bits."""
    bits = torch.as_tensor(x, dtype=FP32).view(torch.int32) & -8192  # 0xFFFFE000
    return bits.view(FP32)


def quant_param(scale):
    """torch_npu.npu_trans_quant_param's layout: the fp32 bits in the low 32 bits of an int64."""
    return (scale.float().view(torch.int32).to(torch.int64) & 0xFFFFFFFF) | (1 << 46)


def test_fixpipe_relu_and_per_tensor_scale():
    a, b = operand((7, 12), FP16, 1), operand((12, 5), FP16, 2)
    bias = rand((1, 5), FP32, lo=-4, hi=4, seed=3)
    relu = pypto.ReLuType.RELU
    check_op(lambda x, y, c: pypto.matmul(x, y, pypto.DT_FP32, extend_params={"bias_tensor": c, "relu_type": relu}),
             [a, b, bias], lambda x, y, c: torch.relu(ref_mm(x, y) + c), out_dtype=FP32)
    s = 0.3  # not a 10-bit mantissa: the fixpipe uses 0.2998046875
    assert masked(s).item() != s
    i, j = operand((7, 12), I8, 4), operand((12, 5), I8, 5)  # a scale only (de)quantises (upstream's tables 4, 5)
    check_op(lambda x, y: pypto.matmul(x, y, pypto.DT_FP16, extend_params={"scale": -s, "relu_type": relu}),
             [i, j], lambda x, y: torch.relu(ref_mm(x, y).float()).mul(masked(-s)).half(), out_dtype=FP16)
    check_raises(pypto.DTypeError, lambda x, y: pypto.matmul(x, y, pypto.DT_FP32, extend_params={"scale": s}),
                 [a, b])  # fp16 -> fp32 neither quantises nor dequantises


def test_fixpipe_int8_dequantises_to_fp16_per_tensor_and_per_channel():
    a, b = operand((9, 40), I8, 1), operand((40, 6), I8, 2)
    bias = rand((6,), I32, lo=-50, hi=50, seed=3)
    check_op(lambda x, y, c: pypto.matmul(x, y, pypto.DT_FP16, extend_params={"bias_tensor": c, "scale": 0.01}),
             [a, b, bias], lambda x, y, c: ((ref_mm(x, y) + c).float() * masked(0.01)).half(), out_dtype=FP16)
    scales = torch.rand(1, 6) + 0.1
    for dtype in (torch.int64, torch.uint64):
        check_op(lambda x, y, q: pypto.matmul(x, y, pypto.DT_FP16, extend_params={"scale_tensor": q}),
                 [a, b, quant_param(scales).to(dtype)],
                 lambda x, y, q: (ref_mm(x, y).float() * masked(scales)).half(), out_dtype=FP16)


@pytest.mark.parametrize("dtype", [FP16, BF16, FP32, I8])
def test_fixpipe_quantises_to_int8_rounding_and_saturating(dtype):
    a, b = operand((6, 16), dtype, 1), operand((16, 8), dtype, 2)
    scales = torch.linspace(0.5, 90.0, 8).reshape(1, 8)  # large scales saturate
    want = lambda x, y, q: torch.round(ref_mm(x, y).float() * masked(scales)).clamp(-128, 127).to(I8)  # noqa: E731
    got = check_op(lambda x, y, q: pypto.matmul(x, y, pypto.DT_INT8, extend_params={"scale_tensor": q}),
                   [a, b, quant_param(scales)], want, out_dtype=I8)[0]
    assert (got == 127).any() and (got == -128).any()
    ties = torch.tensor([[0.5], [1.5], [2.5], [-0.5], [-2.5]]).to(dtype if dtype != I8 else FP16)
    got = check_op(lambda x, y: pypto.matmul(x, y, pypto.DT_INT8, extend_params={"scale": 1.0}),
                   [ties, torch.ones((1, 3), dtype=ties.dtype)], lambda x, y: torch.round(ref_mm(x, y)).to(I8),
                   out_dtype=I8)[0]
    assert got[:, 0].tolist() == [0, 2, 2, 0, -2]  # ties to even


def test_fixpipe_batched_bias_and_scales_follow_the_batch():
    a, b = operand((3, 5, 16), FP16, 1), operand((1, 16, 8), FP16, 2)
    bias = rand((3, 1, 8), FP32, lo=-4, hi=4, seed=3)
    check_op(lambda x, y, c: pypto.matmul(x, y, pypto.DT_FP32, extend_params={"bias_tensor": c}), [a, b, bias],
             lambda x, y, c: ref_mm(x, y) + c, out_dtype=FP32)
    a4, b4 = operand((2, 1, 5, 16), I8, 4), operand((1, 3, 16, 8), I8, 5)
    scales = torch.rand(1, 3, 1, 8) + 0.1
    check_op(lambda x, y, q: pypto.matmul(x, y, pypto.DT_FP16, extend_params={"scale_tensor": q}),
             [a4, b4, quant_param(scales)], lambda x, y, q: (ref_mm(x, y).float() * masked(scales)).half(),
             out_dtype=FP16)


def test_fixpipe_in_a_tiled_kernel_takes_each_tiles_columns():
    @pypto.frontend.jit
    def tiles(a: pypto.Tensor([40, 64], pypto.DT_INT8), b: pypto.Tensor([64, 96], pypto.DT_INT8),
              q: pypto.Tensor([1, 96], pypto.DT_INT64), c: pypto.Tensor([1, 96], pypto.DT_INT32),
              out: pypto.Tensor([40, 96], pypto.DT_FP16)):
        pypto.set_cube_tile_shapes([16, 16], [32, 64], [32, 32])
        for j in pypto.loop(3, name="n", idx_name="j"):
            out[:, j * 32:(j + 1) * 32] = pypto.matmul(
                a, b[:, j * 32:(j + 1) * 32], pypto.DT_FP16,
                extend_params={"scale_tensor": q[:, j * 32:(j + 1) * 32], "bias_tensor": c[:, j * 32:(j + 1) * 32],
                               "relu_type": pypto.ReLuType.RELU})

    a, b = operand((40, 64), I8, 1), operand((64, 96), I8, 2)
    scales, bias = torch.rand(1, 96) + 0.1, rand((1, 96), I32, lo=-100, hi=100, seed=3)
    want = torch.relu((ref_mm(a, b) + bias).float() * masked(scales)).half()
    check_kernel(tiles, [a, b, quant_param(scales), bias, torch.zeros(40, 96, dtype=FP16)], want, out=4)


def test_fixpipe_rejects():
    i8, h = rand((4, 4), I8), rand((4, 4), FP16)
    err = check_raises(pypto.DTypeError, lambda x, y: pypto.matmul(x, y, pypto.DT_FP16), [i8, i8])
    assert "scale" in str(err)  # int8 -> fp16 dequantises: it needs a scale
    check_raises(pypto.DTypeError, lambda x, y: pypto.matmul(x, y, pypto.DT_INT8), [h, h])
    check_raises(pypto.DTypeError, lambda x, y: pypto.matmul(x, y, pypto.DT_BF16, extend_params={"scale": 2.0}),
                 [i8, i8])  # dequantising gives fp16 only
    q = quant_param(torch.ones(1, 4))
    check_raises(pypto.DTypeError, lambda x, y, s: pypto.matmul(x, y, pypto.DT_FP16, extend_params={
        "scale": 2.0, "scale_tensor": s}), [i8, i8, q])
    check_raises(pypto.DTypeError, lambda x, y, s: pypto.matmul(x, y, pypto.DT_FP16, extend_params={
        "scale_tensor": s}), [i8, i8, torch.ones(1, 4)])  # fp32 scales: convert with npu_trans_quant_param
    check_raises(pypto.ShapeError, lambda x, y, s: pypto.matmul(x, y, pypto.DT_FP16, extend_params={
        "scale_tensor": s}), [i8, i8, quant_param(torch.ones(2, 4))])  # not [1, N]
    err = check_raises(pypto.DTypeError, lambda x, y, c: pypto.matmul(x, y, pypto.DT_FP32, extend_params={
        "bias_tensor": c}), [rand((4, 4), BF16), rand((4, 4), BF16), rand((4,), BF16)])
    assert "A2/A3" in str(err)
    check_raises(pypto.DTypeError, lambda x, y: pypto.matmul(x, y, extend_params={"relu_type": 1}), [h, h])
    check_raises(pypto.DTypeError, lambda x, y: pypto.matmul(x, y, extend_params={
        "trans_mode": pypto.TransMode.CAST_RINT}), [h, h])  # TF32 rounds fp32 operands
    check_raises(pypto.DTypeError, lambda x, y: pypto.matmul(x, y, extend_params={"bias": 1}), [h, h])


def test_fixpipe_scale_is_refused_with_split_k():
    @pypto.jit
    def split(a: pypto.Tensor([16, 512], pypto.DT_INT8), b: pypto.Tensor([512, 16], pypto.DT_INT8)):
        pypto.set_cube_tile_shapes([16, 16], [64, 128], [16, 16], enable_split_k=True)
        return pypto.matmul(a, b, pypto.DT_FP16, extend_params={"scale": 2.0})

    with pytest.raises(pypto.DTypeError, match="split-K"):
        split(rand((16, 512), I8), rand((512, 16), I8))


def tf32(x, away):
    """fp32 -> TF32 by integer arithmetic on the bits (10 mantissa bits kept)."""
    bits = x.float().view(torch.int32).to(torch.int64)
    bump = 0x1000 if away else 0xFFF + ((bits >> 13) & 1)
    return ((bits + bump) & 0xFFFFE000).to(torch.int64).apply_(lambda v: v - (1 << 32) if v >= 1 << 31 else v) \
        .to(torch.int32).view(FP32)


@pytest.mark.parametrize("mode", ["CAST_RINT", "CAST_ROUND"])
def test_trans_mode_rounds_fp32_operands_to_tf32(mode):
    step = 2.0 ** -11  # half of a TF32 ulp at 1.0: ties decide between the two modes
    a = torch.tensor([[1.0 + step, 1.0 + 3 * step, -(1.0 + step), 1.0 + step / 2]])
    b = torch.eye(4)
    away = mode == "CAST_ROUND"
    got = check_op(lambda x, y: pypto.matmul(x, y, extend_params={"trans_mode": getattr(pypto.TransMode, mode)}),
                   [a, b], lambda x, y: tf32(x, away) @ tf32(y, away))[0]
    one_up = 1.0 + 2 * step
    assert got[0].tolist() == ([one_up, 1.0 + 4 * step, -one_up, 1.0] if away else
                               [1.0, 1.0 + 4 * step, -1.0, 1.0])
    check_op(lambda x, y: pypto.matmul(x, y, extend_params={"trans_mode": pypto.TransMode.CAST_NONE}),
             [a, b], ref_mm)  # unchanged


# ---- (from the implshim branch) ----
# ---- epilogues: relu_type, trans_mode, batched bias, int8 -> fp16 dequant -----------------------------

@pytest.mark.parametrize("with_bias", [False, True])
@pytest.mark.parametrize("dtype,out", [(FP32, FP32), (FP16, FP16), (BF16, FP32), (I8, I32)], ids=str)
def test_matmul_relu_type(dtype, out, with_bias):
    """RELU zeroes the negative results after the bias; NO_RELU changes nothing."""
    a, b = operand((7, 12), dtype, 1), operand((12, 5), dtype, 2)
    bias = rand((1, 5), I32 if dtype == I8 else FP32 if dtype == BF16 else dtype, lo=-4, hi=4, seed=3)
    if with_bias:
        def body(x, y, c, relu):
            return pypto.matmul(x, y, PT[out], extend_params={"bias_tensor": c, "relu_type": relu})

        def ref(x, y, c, relu):
            acc = ref_mm(x, y) + (c if dtype == I8 else c.float())
            return torch.relu(acc) if relu == pypto.ReLuType.RELU else acc
        inputs = [a, b, bias]
    else:
        def body(x, y, relu):
            return pypto.matmul(x, y, PT[out], extend_params={"relu_type": relu})

        def ref(x, y, relu):
            return torch.relu(ref_mm(x, y)) if relu == pypto.ReLuType.RELU else ref_mm(x, y)
        inputs = [a, b]
    for relu in (pypto.ReLuType.RELU, pypto.ReLuType.NO_RELU):
        check_op(body, inputs + [relu], ref, out_dtype=out)
    assert (ref_mm(a, b) < 0).any()  # the inputs do exercise the ReLU


def test_matmul_relu_then_scale_on_tiles():
    """Tiled rows with a tail: bias, then ReLU, then the scale, on every tile."""
    a, b = operand((37, 20), I8, 1), operand((20, 6), I8, 2)
    c = rand((6,), I32, lo=-200, hi=200, seed=3)
    check_op(lambda x, y, z: pypto.matmul(x, y, pypto.DT_FP16, extend_params={
                 "bias_tensor": z, "relu_type": pypto.ReLuType.RELU, "scale": 0.5}),
             [a, b, c], lambda x, y, z: (torch.relu(ref_mm(x, y) + z).float() * 0.5).half(), mode="tiled",
             tile_inputs=[True, False, False], out_dtype=FP16)


def _tf32(x, mode):
    """TF32 rounding computed another way: 11 significant bits of the frexp mantissa."""
    m, e = torch.frexp(x.double())
    v = m * 2.0 ** 11
    r = torch.round(v) if mode == pypto.TransMode.CAST_RINT else torch.sign(v) * torch.floor(v.abs() + 0.5)
    return torch.ldexp(r / 2.0 ** 11, e).float()


@pytest.mark.parametrize("mode", [pypto.TransMode.CAST_RINT, pypto.TransMode.CAST_ROUND, pypto.TransMode.CAST_NONE])
def test_matmul_trans_mode_rounds_operands_to_tf32(mode):
    a, b = rand((8, 16), lo=-3, hi=3, seed=1), rand((16, 4), lo=-3, hi=3, seed=2)
    if mode == pypto.TransMode.CAST_NONE:
        ref = ref_mm
    else:
        def ref(x, y):
            return _tf32(x, mode) @ _tf32(y, mode)
    got = check_op(lambda x, y: pypto.matmul(x, y, pypto.DT_FP32, extend_params={"trans_mode": mode}), [a, b], ref)
    if mode != pypto.TransMode.CAST_NONE:
        assert not torch.allclose(got[0] if isinstance(got, tuple) else got, a @ b, rtol=1e-6, atol=0)


def test_tf32_rounding_ties():
    """Ties: RINT goes to the even neighbour, ROUND away from zero; inf and NaN pass through."""
    from pypto.ops.matmul import round_to_tf32

    ulp = 2.0 ** -10  # TF32 spacing in [1, 2)
    x = torch.tensor([1 + ulp / 2, 1 + 1.5 * ulp, -(1 + ulp / 2), float("inf"), float("nan")])
    rint = round_to_tf32(x, pypto.TransMode.CAST_RINT)
    away = round_to_tf32(x, pypto.TransMode.CAST_ROUND)
    assert rint[:3].tolist() == [1.0, 1 + 2 * ulp, -1.0]
    assert away[:3].tolist() == [1 + ulp, 1 + 2 * ulp, -(1 + ulp)]
    assert rint[3] == float("inf") and torch.isnan(rint[4]) and torch.isnan(away[4])


@pytest.mark.parametrize("bias_batch", [1, 3])
def test_matmul_batched_bias(bias_batch):
    """A 3-D matmul takes a [B, 1, N] bias: each batch adds its own row (B = 1 broadcasts)."""
    a, b = operand((3, 5, 8), FP16, 1), operand((3, 8, 6), FP16, 2)
    bias = rand((bias_batch, 1, 6), FP32, lo=-2, hi=2, seed=3)
    check_op(lambda x, y, c: pypto.matmul(x, y, pypto.DT_FP32, extend_params={"bias_tensor": c}), [a, b, bias],
             lambda x, y, c: ref_mm(x, y) + c, out_dtype=FP32)


def test_matmul_int8_dequant_to_fp16():
    """int8 x int8 -> fp16 is the dequant path: int32 accumulation (+ bias), ReLU, times the scale."""
    a, b = operand((6, 16), I8, 1), operand((16, 5), I8, 2)
    bias = rand((1, 5), I32, lo=-20, hi=20, seed=3)
    check_op(lambda x, y, c: pypto.matmul(x, y, pypto.DT_FP16, extend_params={"scale": 0.125, "bias_tensor": c,
                                                                                "relu_type": pypto.ReLuType.RELU}),
             [a, b, bias], lambda x, y, c: torch.relu(ref_mm(x, y) + c).float() * 0.125, out_dtype=FP16)


def test_matmul_scale_keeps_19_bits():
    """The scale is applied with 1 sign, 8 exponent and 10 mantissa bits."""
    from pypto.ops.matmul import scale_as_applied

    assert scale_as_applied(0.25) == 0.25
    assert scale_as_applied(1 + 2.0 ** -10 + 2.0 ** -12) == 1 + 2.0 ** -10
    a, b = operand((4, 8), I8, 1), operand((8, 3), I8, 2)
    s = 1 + 2.0 ** -10 + 2.0 ** -12
    check_op(lambda x, y: pypto.matmul(x, y, pypto.DT_FP16, extend_params={"scale": s}), [a, b],
             lambda x, y: (ref_mm(x, y).float() * (1 + 2.0 ** -10)).half(), out_dtype=FP16)


def test_matmul_epilogue_rejects():
    f32, h, i8 = rand((4, 4)), rand((4, 4), FP16), rand((4, 4), I8)
    check_raises(pypto.DTypeError, lambda x, y: pypto.matmul(x, y, extend_params={"relu_type": True}), [f32, f32])
    check_raises(pypto.DTypeError, lambda x, y: pypto.matmul(x, y, pypto.DT_FP16, extend_params={
        "trans_mode": pypto.TransMode.CAST_RINT}), [h, h])  # TF32 needs fp32 operands and result
    check_raises(pypto.DTypeError, lambda x, y: pypto.matmul(x, y, pypto.DT_FP16), [i8, i8])  # dequant needs a scale
    check_raises(pypto.ShapeError, lambda x, y, c: pypto.matmul(x, y, extend_params={"bias_tensor": c}),
                 [rand((2, 4, 5)), rand((2, 5, 3)), rand((3, 1, 3))])  # bias batch 3 vs 2


@pytest.mark.parametrize("order", ["fp32", "torch"])
@pytest.mark.parametrize("dtype", [FP16, BF16], ids=str)
def test_half_precision_matmul_rounds_once(dtype, order):
    """fp16/bf16 -> same dtype, cube tiles over M and N: every tile accumulates in fp32 and rounds
    once. By default that is one fp32 matmul of the upcast operands (fp32 speed); the "torch" sum
    order (what pypto.emulate picks) is torch's own CPU half matmul, bit for bit (upstream's bf16
    goldens check at a tolerance below one ulp)."""
    mm = importlib.import_module("pypto.ops.matmul")  # the module (pypto.ops.matmul is also the op)

    @pypto.jit
    def tiled(a: pypto.Tensor([pypto.DYNAMIC, 256], PT[dtype]), b: pypto.Tensor([256, 512], PT[dtype]),
              out: pypto.Tensor([pypto.DYNAMIC, 512], PT[dtype])):
        pypto.set_cube_tile_shapes([16, 16], [32, 64], [32, 32])
        for i in pypto.loop(a.shape[0] // 16):
            out[i * 16:(i + 1) * 16, :] = pypto.matmul(a[i * 16:(i + 1) * 16, :], b, PT[dtype])

    g = torch.Generator().manual_seed(7)
    before = mm.half_sum_order()
    mm.set_half_sum_order(order)
    try:
        for rows in (16, 48):
            a = (torch.randn(rows, 256, generator=g) / 4).to(dtype)
            b = (torch.randn(256, 512, generator=g) / 4).to(dtype)
            out = torch.empty(rows, 512, dtype=dtype)
            tiled(a, b, out)
            fp32 = torch.matmul(a.float(), b.float())
            if order == "torch":
                assert torch.equal(out, torch.matmul(a, b))
            else:  # one rounding of an fp32 sum: where the rounded fp32 products differ, by one ulp
                near = (out.float() - fp32).abs() <= fp32.abs() * 2 ** -7 + 1e-6
                assert near.all()
                assert (out != fp32.to(dtype)).float().mean() < 1e-2  # sum order decides only near ties
            exact = (a.double() @ b.double()).to(dtype)  # and within one rounding of the exact product
            assert ((out.float() - exact.float()).abs() <= exact.float().abs() * 2 ** -7 + 1e-6).all()
    finally:
        mm.set_half_sum_order(before)
    with pytest.raises(pypto.PyptoError, match="order"):
        mm.set_half_sum_order("fast")


def test_split_k_keeps_fp32_partial_sums():
    """With enable_split_k the K chunks are summed in fp32 before the one rounding to bf16."""
    @pypto.jit
    def split(a: pypto.Tensor([16, 512], pypto.DT_BF16), b: pypto.Tensor([512, 16], pypto.DT_BF16),
              out: pypto.Tensor([16, 16], pypto.DT_BF16)):
        pypto.set_cube_tile_shapes([16, 16], [64, 128], [16, 16], enable_split_k=True)
        out[:] = pypto.matmul(a, b, pypto.DT_BF16)

    g = torch.Generator().manual_seed(3)
    a, b = torch.randn(16, 512, generator=g).bfloat16(), torch.randn(512, 16, generator=g).bfloat16()
    out = torch.empty(16, 16, dtype=torch.bfloat16)
    split(a, b, out)
    exact = a.double() @ b.double()
    assert ((out.double() - exact).abs() <= exact.abs() * 2 ** -7 + 1e-3).all()
