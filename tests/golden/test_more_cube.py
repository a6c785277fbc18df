"""Golden tests of scaled_mm (MX block scales, operands / scales transposed, bias, batches, cube
tiles), experimental.transposed_batchmatmul and conv (1-D / 2-D / 3-D, groups, asymmetric
padding, bias; one AIC task)."""

from __future__ import annotations

import pytest
import torch

import pypto

try:
    from tests.golden.helper import check_kernel, check_op, check_raises, rand
except ImportError:  # run without the repo root on sys.path: pytest puts this dir there
    from helper import check_kernel, check_op, check_raises, rand

FP32, FP16, BF16, I8 = torch.float32, torch.float16, torch.bfloat16, torch.int8
PT = {FP32: pypto.DT_FP32, FP16: pypto.DT_FP16, BF16: pypto.DT_BF16, I8: pypto.DT_INT8}


def operand(shape, dtype, seed):
    if dtype == I8:
        return rand(shape, I8, lo=-8, hi=8, seed=seed)
    return rand(shape, dtype, lo=-1, hi=1, seed=seed)


def mx_scales(shape, seed):
    """Powers of two (what an e8m0 scale holds)."""
    return torch.exp2(rand(shape, torch.int64, lo=-3, hi=3, seed=seed).float())


def ref_scaled_mm(a, b, sa, sb, a_trans=False, b_trans=False, sa_trans=False, sb_trans=False, bias=None):
    """(a * scale_a) @ (b * scale_b): element k of a row uses scale[k // 64, (k % 64) // 32]."""
    a = (a.transpose(-1, -2) if a_trans else a).double()
    b = (b.transpose(-1, -2) if b_trans else b).double()
    k = a.shape[-1]
    sa = sa.transpose(0, 1) if sa_trans else sa  # [M, KB, 2]
    sb = sb if sb_trans else sb.transpose(0, 1)  # [N, KB, 2]
    blk = torch.arange(k) // 32
    fa = sa.reshape(sa.shape[0], -1)[:, blk].double()  # [M, K]
    fb = sb.reshape(sb.shape[0], -1)[:, blk].double()  # [N, K]
    out = (a * fa) @ (b * fb.T)
    if bias is not None:
        out = out + bias.double().reshape(-1)
    return out.float()


def scales_for(m, k, n, sa_trans, sb_trans, seed=10):
    kb = (k + 63) // 64
    sa = mx_scales((kb, m, 2) if sa_trans else (m, kb, 2), seed)
    sb = mx_scales((n, kb, 2) if sb_trans else (kb, n, 2), seed + 1)
    return sa, sb


@pytest.mark.parametrize("dtype,out", [(I8, FP32), (I8, FP16), (I8, BF16), (FP16, FP32), (BF16, BF16)], ids=str)
def test_scaled_mm_out_dtypes(dtype, out):
    m, k, n = 9, 100, 7  # K: two 64-blocks, the last one partial
    a, b = operand((m, k), dtype, 1), operand((k, n), dtype, 2)
    sa, sb = scales_for(m, k, n, False, False)
    check_op(lambda x, y, p, q: pypto.scaled_mm(x, y, PT[out], p, q), [a, b, sa, sb], ref_scaled_mm, out_dtype=out)


@pytest.mark.parametrize("a_trans,b_trans,sa_trans,sb_trans",
                         [(True, False, False, False), (False, True, False, False), (False, False, True, True),
                          (True, True, True, False)])
def test_scaled_mm_transposes(a_trans, b_trans, sa_trans, sb_trans):
    m, k, n = 6, 130, 5
    a = operand((k, m) if a_trans else (m, k), I8, 3)
    b = operand((n, k) if b_trans else (k, n), I8, 4)
    sa, sb = scales_for(m, k, n, sa_trans, sb_trans)
    check_op(lambda x, y, p, q: pypto.scaled_mm(x, y, pypto.DT_FP32, p, q, a_trans=a_trans, b_trans=b_trans,
                                                scale_a_trans=sa_trans, scale_b_trans=sb_trans),
             [a, b, sa, sb], lambda x, y, p, q: ref_scaled_mm(x, y, p, q, a_trans, b_trans, sa_trans, sb_trans),
             out_dtype=FP32)


@pytest.mark.parametrize("bias_shape", [(6,), (1, 6)], ids=str)
def test_scaled_mm_bias(bias_shape):
    m, k, n = 5, 64, 6
    a, b = operand((m, k), I8, 5), operand((k, n), I8, 6)
    sa, sb = scales_for(m, k, n, False, False)
    bias = rand(bias_shape, FP32, lo=-4, hi=4, seed=7)
    check_op(lambda x, y, p, q, c: pypto.scaled_mm(x, y, pypto.DT_FP32, p, q, extend_params={"bias_tensor": c}),
             [a, b, sa, sb, bias], lambda x, y, p, q, c: ref_scaled_mm(x, y, p, q, bias=c), out_dtype=FP32)


@pytest.mark.parametrize("batch", [(2,), (2, 3)], ids=str)
def test_scaled_mm_batched(batch):
    """3-D and 4-D operands: the scales are shared by every batch."""
    m, k, n = 4, 70, 3
    a, b = operand((*batch, m, k), I8, 8), operand((*batch, k, n), I8, 9)
    sa, sb = scales_for(m, k, n, False, False)

    def ref(x, y, p, q):
        flat = [ref_scaled_mm(xi, yi, p, q) for xi, yi in zip(x.reshape(-1, m, k), y.reshape(-1, k, n))]
        return torch.stack(flat).reshape(*batch, m, n)

    check_op(lambda x, y, p, q: pypto.scaled_mm(x, y, pypto.DT_FP32, p, q), [a, b, sa, sb], ref, out_dtype=FP32)


def test_scaled_mm_cube_tiles():
    """Several output tiles: each AIC op reads its rows / columns of the scales."""
    @pypto.jit
    def kernel(a: pypto.Tensor(), b: pypto.Tensor(), sa: pypto.Tensor(), sb: pypto.Tensor()):
        pypto.set_cube_tile_shapes([16, 16], [64, 128], [16, 16])
        return pypto.scaled_mm(a, b, pypto.DT_FP32, sa, sb)

    m, k, n = 40, 128, 20
    a, b = operand((m, k), I8, 11), operand((k, n), I8, 12)
    sa, sb = scales_for(m, k, n, False, False)
    check_kernel(kernel, [a, b, sa, sb], ref_scaled_mm(a, b, sa, sb))
    events = kernel.last_run.simulate().events  # 3 x 2 output tiles, each a cube task
    assert len(events) == 6 and all(e.core_type == "AIC" and dict(e.pipes)["M"] > 0 for e in events)


def test_scaled_mm_dynamic_row_tiles():
    """Row tiles of a DYNAMIC M (37 = 2 x 16 + 5) with the matching rows of scale_a."""
    dyn = pypto.Tensor([pypto.DYNAMIC, ...])

    @pypto.jit
    def kernel(a: dyn, b: pypto.Tensor(), sa: dyn, sb: pypto.Tensor(), out: dyn):
        for i in pypto.loop(pypto.ceildiv(a.shape[0], 16)):
            out[i * 16:(i + 1) * 16] = pypto.scaled_mm(a[i * 16:(i + 1) * 16], b, pypto.DT_FP32,
                                                       sa[i * 16:(i + 1) * 16], sb)

    m, k, n = 37, 96, 6
    a, b = operand((m, k), I8, 13), operand((k, n), I8, 14)
    sa, sb = scales_for(m, k, n, False, False)
    out = torch.full((m, n), float("nan"))
    check_kernel(kernel, [a, b, sa, sb, out], ref_scaled_mm(a, b, sa, sb), out=4)


def test_scaled_mm_rows_past_the_scales_end():
    """A scale view past its tensor's end (upstream's kernels over an NZ operand's padding rows):
    zero rows of the operand get scale 1 (so stay zero), a non-zero row without a scale is an error."""

    @pypto.jit
    def kernel(a: pypto.Tensor(), b: pypto.Tensor(), sa: pypto.Tensor(), sb: pypto.Tensor(), out: pypto.Tensor()):
        rows = a.shape[0]
        out[:] = pypto.scaled_mm(a, b, pypto.DT_FP32, pypto.view(sa, [rows, 2, 2], [0, 0, 0],
                                                                   valid_shape=[rows, 2, 2]), sb)

    m, k, n = 20, 96, 6
    a, b = operand((m, k), I8, 13), operand((k, n), I8, 14)
    a[16:] = 0  # the padding rows
    sa, sb = scales_for(16, k, n, False, False)  # scales for the 16 real rows only
    out = torch.full((m, n), float("nan"))
    want = torch.cat([ref_scaled_mm(a[:16], b, sa, sb), torch.zeros(4, n)])
    check_kernel(kernel, [a, b, sa, sb, out], want, out=4)
    a[17, 3] = 1
    before = out.clone()
    with pytest.raises(pypto.KernelRuntimeError, match="rows 16..19 of 'mat_a' are not zero"):
        kernel(a, b, sa, sb, out)
    a[17, 3] = 0
    check_kernel(kernel, [a, b, sa, sb, out], want, out=4)  # the next good call works
    assert torch.equal(out, before)


def test_scaled_mm_rejects():
    m, k, n = 4, 64, 4
    sa, sb = scales_for(m, k, n, False, False)
    f32 = rand((m, k))
    err = check_raises(pypto.DTypeError, lambda x, y, p, q: pypto.scaled_mm(x, y, pypto.DT_FP32, p, q),
                       [f32, rand((k, n)), sa, sb])  # fp32 operands
    assert isinstance(err, TypeError)
    a, b = operand((m, k), I8, 1), operand((k, n), I8, 2)
    check_raises(pypto.DTypeError, lambda x, y, p, q: pypto.scaled_mm(x, y, pypto.DT_INT32, p, q), [a, b, sa, sb])
    check_raises(pypto.DTypeError, lambda x, y, p, q: pypto.scaled_mm(x, y, pypto.DT_FP32, p, q),
                 [a, b, sa.half(), sb])  # scales must be fp32
    check_raises(pypto.DTypeError, lambda x, y, p, q: pypto.scaled_mm(x, y, pypto.DT_FP32, p, q),
                 [a, operand((k, n), FP16, 2), sa, sb])  # mixed operand dtypes
    check_raises(pypto.ShapeError, lambda x, y, p, q: pypto.scaled_mm(x, y, pypto.DT_FP32, p, q),
                 [a, b, sb, sb])  # scale_a of the wrong shape
    check_raises(pypto.ShapeError, lambda x, y, p, q: pypto.scaled_mm(x, y, pypto.DT_FP32, p, q),
                 [a, operand((k + 1, n), I8, 2), sa, sb])  # K mismatch


def ref_tbmm(a, b):
    return torch.einsum("mbk,bkn->mbn", a.float(), b.float())


@pytest.mark.parametrize("dtype,out", [(FP16, FP16), (BF16, BF16), (FP16, BF16)], ids=str)
def test_transposed_batchmatmul(dtype, out):
    a, b = operand((16, 2, 32), dtype, 1), operand((2, 32, 24), dtype, 2)
    got = check_op(lambda x, y: pypto.experimental.transposed_batchmatmul(x, y, PT[out]), [a, b], ref_tbmm,
                   out_dtype=out)[0]
    assert got.shape == (16, 2, 24)


def test_transposed_batchmatmul_unaligned():
    a, b = operand((7, 3, 10), FP16, 3), operand((3, 10, 5), FP16, 4)
    check_op(lambda x, y: pypto.experimental.transposed_batchmatmul(x, y, pypto.DT_FP16), [a, b], ref_tbmm)


@pypto.jit
def tbmm_under_2d_tile(a: pypto.Tensor([8, 2, 16], pypto.DT_FP16), b: pypto.Tensor([2, 16, 32], pypto.DT_FP16),
                       x: pypto.Tensor([8, 32], pypto.DT_FP16)):
    pypto.set_vec_tile_shapes(4, 16)  # the caller's 2-D tile, for the 2-D op after
    c = pypto.experimental.transposed_batchmatmul(a, b, pypto.DT_FP16)
    return c, pypto.exp(x)


def test_transposed_batchmatmul_brings_its_own_vector_tile():
    a, b, x = operand((8, 2, 16), FP16, 5), operand((2, 16, 32), FP16, 6), operand((8, 32), FP16, 7)
    check_kernel(tbmm_under_2d_tile, [a, b, x], (ref_tbmm(a, b).to(FP16), x.exp()))
    (snap,) = [p for p in tbmm_under_2d_tile.inspect(a, b, x).passes if p.name == "expand"]
    ops = [op for ops in snap.graph for op in ops]
    assert {op.outputs[0].shape for op in ops if op.kind == "permute"} == {(2, 1, 16), (8, 1, 32)}  # inputs by (1, 128, 128)
    assert {op.outputs[0].shape for op in ops if op.kind == "exp"} == {(4, 16)}  # the caller's tile is back


def test_transposed_batchmatmul_rejects():
    tb = pypto.experimental.transposed_batchmatmul
    f32a, f32b = rand((4, 2, 8)), rand((2, 8, 3))
    err = check_raises(pypto.DTypeError, lambda x, y: tb(x, y, pypto.DT_FP16), [f32a, f32b])  # fp32 operands
    assert isinstance(err, TypeError)
    h_a, h_b = operand((4, 2, 8), FP16, 1), operand((2, 8, 3), FP16, 2)
    check_raises(pypto.DTypeError, lambda x, y: tb(x, y, pypto.DT_FP32), [h_a, h_b])  # fp32 output
    check_raises(pypto.ShapeError, lambda x, y: tb(x, y, pypto.DT_FP16), [h_a, operand((3, 8, 3), FP16, 2)])
    check_raises(pypto.ShapeError, lambda x, y: tb(x, y, pypto.DT_FP16), [operand((4, 8), FP16, 1), h_b])


# ---- conv ---------------------------------------------------------------------------------------

def ref_conv(x, w, strides, paddings, dilations, groups=1, bias=None):
    nd = x.dim() - 2
    pad = []
    for i in reversed(range(nd)):
        pad += [paddings[2 * i], paddings[2 * i + 1]]
    fn = (torch.nn.functional.conv1d, torch.nn.functional.conv2d, torch.nn.functional.conv3d)[nd - 1]
    return fn(torch.nn.functional.pad(x.double(), pad), w.double(), None if bias is None else bias.double(),
              stride=strides, dilation=dilations, groups=groups).float()


CONV2D = [  # (input, weight, strides, paddings [top, bottom, left, right], dilations, groups)
    ((1, 4, 8, 16), (8, 4, 1, 1), [1, 1], [0, 0, 0, 0], [1, 1], 1),
    ((2, 3, 9, 7), (5, 3, 3, 3), [1, 1], [1, 1, 1, 1], [1, 1], 1),
    ((1, 4, 10, 11), (6, 2, 3, 2), [2, 1], [2, 0, 1, 0], [1, 2], 2),
    ((2, 6, 7, 8), (6, 1, 3, 3), [1, 2], [1, 2, 0, 1], [2, 1], 6),
]


@pytest.mark.parametrize("xs,ws,st,pd,dl,g", CONV2D, ids=str)
@pytest.mark.parametrize("dtype", [FP32, FP16, BF16])
def test_conv2d(xs, ws, st, pd, dl, g, dtype):
    x, w = operand(xs, dtype, 1), operand(ws, dtype, 2)
    check_op(lambda a, b: pypto.conv(a, b, PT[dtype], st, pd, dl, groups=g), [x, w],
             lambda a, b: ref_conv(a, b, st, pd, dl, g))


@pytest.mark.parametrize("dtype,bias_dtype", [(FP32, FP32), (FP16, FP16), (BF16, FP32)], ids=str)
def test_conv2d_bias(dtype, bias_dtype):
    x, w = operand((2, 3, 6, 6), dtype, 3), operand((4, 3, 3, 3), dtype, 4)
    bias = rand((4,), bias_dtype, seed=5)
    check_op(lambda a, b, c: pypto.conv(a, b, PT[dtype], [1, 1], [1, 1, 1, 1], [1, 1],
                                        extend_params={"bias_tensor": c}),
             [x, w, bias], lambda a, b, c: ref_conv(a, b, [1, 1], [1, 1, 1, 1], [1, 1], bias=c), out_dtype=dtype)


@pytest.mark.parametrize("relu", [pypto.ConvReLuType.RELU, pypto.ConvReLuType.NO_RELU], ids=str)
def test_conv2d_relu_in_the_fixpipe(relu):
    """extend_params['relu_type'] (upstream's ConvReLuType): the relu of the fp32 result, with a bias."""
    x, w = operand((2, 3, 6, 6), FP16, 8), operand((4, 3, 3, 3), FP16, 9)
    bias = rand((4,), FP16, seed=10)
    on = relu is pypto.ConvReLuType.RELU
    check_op(lambda a, b, c: pypto.conv(a, b, pypto.DT_FP16, [1, 1], [1, 1, 1, 1], [1, 1],
                                        extend_params={"bias_tensor": c, "relu_type": relu}),
             [x, w, bias], lambda a, b, c: (torch.relu if on else (lambda t: t))(
                 ref_conv(a, b, [1, 1], [1, 1, 1, 1], [1, 1], bias=c)), out_dtype=FP16)
    error = check_raises(pypto.ArgumentTypeError, lambda a, b: pypto.conv(
        a, b, pypto.DT_FP16, [1, 1], [1, 1, 1, 1], [1, 1], extend_params={"relu_type": pypto.ReLuType.RELU}), [x, w])
    assert "ConvReLuType" in str(error)


def test_conv1d_and_conv3d():
    x1, w1 = operand((2, 4, 20), FP32, 6), operand((3, 4, 5), FP32, 7)
    check_op(lambda a, b: pypto.conv(a, b, pypto.DT_FP32, [2], [1, 3], [2]), [x1, w1],
             lambda a, b: ref_conv(a, b, [2], [1, 3], [2]))
    x3, w3 = operand((1, 2, 4, 5, 6), FP16, 8), operand((4, 2, 2, 3, 3), FP16, 9)
    check_op(lambda a, b: pypto.conv(a, b, pypto.DT_FP16, [1, 2, 1], [1, 0, 1, 1, 0, 2], [1, 1, 2]), [x3, w3],
             lambda a, b: ref_conv(a, b, [1, 2, 1], [1, 0, 1, 1, 0, 2], [1, 1, 2]))


def test_conv_runs_on_the_cube():
    @pypto.jit
    def kernel(x: pypto.Tensor(), w: pypto.Tensor()):
        return pypto.conv(x, w, pypto.DT_FP32, [1, 1], [1, 1, 1, 1], [1, 1])

    x, w = operand((2, 8, 16, 16), FP32, 1), operand((16, 8, 3, 3), FP32, 2)
    check_kernel(kernel, [x, w], ref_conv(x, w, [1, 1], [1, 1, 1, 1], [1, 1]))
    events = kernel.last_run.simulate().events
    assert len(events) == 1 and events[0].core_type == "AIC"
    assert dict(events[0].pipes)["M"] >= 2 * 16 * 16 * 16 * 8 * 9 // 1024  # MACs over the fp32 cube rate


def test_conv_rejects():
    x, w = operand((1, 4, 8, 8), FP32, 1), operand((4, 4, 3, 3), FP32, 2)
    conv = pypto.conv
    i8 = operand((1, 4, 8, 8), I8, 1)
    err = check_raises(pypto.DTypeError, lambda a, b: conv(a, b, pypto.DT_FP32, [1, 1], [0, 0, 0, 0], [1, 1]),
                       [i8, operand((4, 4, 3, 3), I8, 2)])  # int8 input
    assert isinstance(err, TypeError)
    check_raises(pypto.DTypeError, lambda a, b: conv(a, b, pypto.DT_FP16, [1, 1], [0, 0, 0, 0], [1, 1]), [x, w])
    check_raises(pypto.DTypeError, lambda a, b: conv(a, b, pypto.DT_FP32, [1, 1], [0, 0, 0, 0], [1, 1]),
                 [x, w.half()])  # mixed dtypes
    check_raises(pypto.DTypeError, lambda a, b, c: conv(a, b, pypto.DT_FP32, [1, 1], [0, 0, 0, 0], [1, 1],
                                                        extend_params={"bias_tensor": c}), [x, w, rand((4,), FP16)])
    check_raises(pypto.ShapeError, lambda a, b: conv(a, b, pypto.DT_FP32, [1, 1], [0, 0, 0, 0], [1, 1]),
                 [x, operand((4, 3, 3, 3), FP32, 2)])  # Cin mismatch
    check_raises(pypto.ShapeError, lambda a, b: conv(a, b, pypto.DT_FP32, [1, 1], [0, 0, 0, 0], [1, 1]),
                 [x, operand((4, 4, 3), FP32, 2)])  # rank mismatch
    check_raises(pypto.ShapeError, lambda a, b: conv(a, b, pypto.DT_FP32, [1, 1], [0, 0, 0, 0], [1, 1], groups=3),
                 [x, w])
    check_raises(pypto.ArgumentValueError, lambda a, b: conv(a, b, pypto.DT_FP32, [1], [0, 0, 0, 0], [1, 1]),
                 [x, w])  # strides of the wrong length
    check_raises(pypto.ArgumentValueError, lambda a, b: conv(a, b, pypto.DT_FP32, [1, 1], [3, 0, 0, 0], [1, 1]),
                 [x, w])  # padding not below the kernel size
    check_raises(pypto.ArgumentValueError,
                 lambda a, b: conv(a, b, pypto.DT_FP32, [1, 1], [0, 0, 0, 0], [1, 1], transposed=True), [x, w])


# ---- pack / unpack ------------------------------------------------------------------------------

def torch_pack(x):
    return x.contiguous().reshape(-1).view(torch.uint8)


PT_ALL = {FP32: pypto.DT_FP32, FP16: pypto.DT_FP16, BF16: pypto.DT_BF16, torch.int64: pypto.DT_INT64,
          torch.int32: pypto.DT_INT32, torch.int16: pypto.DT_INT16, I8: pypto.DT_INT8, torch.uint8: pypto.DT_UINT8}
U8 = torch.uint8


def test_pack_doc_example():
    x = torch.tensor([[0x03040506, 0x01050608]], dtype=torch.int32)
    got = check_op(pypto.pack, [x], torch_pack, out_dtype=U8)[0]
    assert got.tolist() == [6, 5, 4, 3, 8, 6, 5, 1]
    y = check_op(lambda b: pypto.unpack(b, pypto.DT_INT32), [got], lambda b: b.view(torch.int32),
                 out_dtype=torch.int32)[0]
    assert y.tolist() == [0x03040506, 0x01050608]


@pytest.mark.parametrize("dtype", list(PT_ALL), ids=str)
def test_pack_unpack_round_trip(dtype):
    if dtype.is_floating_point:
        x = rand((3, 5, 2), dtype)
    else:
        x = rand((3, 5, 2), dtype, lo=0 if dtype == U8 else -100, hi=255 if dtype == U8 else 100, seed=4)
    # the reference gets fp16/bf16 upcast to fp32: cast back (exactly) before taking the bytes
    check_op(pypto.pack, [x], lambda t: torch_pack(t.to(dtype)), out_dtype=U8)
    got = check_op(lambda t: pypto.unpack(pypto.pack(t), PT_ALL[dtype]), [x],
                   lambda t: torch_pack(t.to(dtype)).view(dtype), out_dtype=dtype)[0]
    assert torch.equal(got, x.reshape(-1))


def test_pack_unpack_rejects():
    err = check_raises(pypto.DTypeError, pypto.pack, [torch.ones(4, dtype=torch.bool)])
    assert isinstance(err, TypeError)
    check_raises(pypto.DTypeError, lambda b: pypto.unpack(b, pypto.DT_INT32), [torch.ones(8, dtype=I8)])
    check_raises(pypto.DTypeError, lambda b: pypto.unpack(b, pypto.DT_BOOL), [torch.ones(8, dtype=torch.uint8)])
    check_raises(pypto.ShapeError, lambda b: pypto.unpack(b, pypto.DT_INT32), [torch.ones(6, dtype=torch.uint8)])
    check_raises(pypto.ShapeError, lambda b: pypto.unpack(b, pypto.DT_INT16),
                 [torch.ones((2, 4), dtype=torch.uint8)])
    check_raises(pypto.ShapeError, pypto.pack, [torch.ones((1, 1, 1, 1, 2))])


def test_tile_sizes_given_as_concrete_symbolic_scalars():
    """Upstream's conv tests pass ``pypto.symbolic_scalar(32)`` as tile sizes (its bindings take any
    int-convertible value); a symbol without a value is still refused, naming the size."""
    from pypto.pypto_impl import TileL0Info, TileL1Info

    tile = pypto.symbolic_scalar(4)

    @pypto.jit
    def conv_rows(x: pypto.Tensor([2, 3, 6, 6], pypto.DT_FP32), w: pypto.Tensor([4, 3, 3, 3], pypto.DT_FP32)):
        pypto.set_conv_tile_shapes(TileL1Info(tileN=tile), TileL0Info(tileN=tile))
        pypto.set_vec_tile_shapes(1, tile, 6, 6)
        return pypto.conv(x, w, pypto.DT_FP32, [1, 1], [1, 1, 1, 1], [1, 1])

    x, w = operand((2, 3, 6, 6), FP32, 11), operand((4, 3, 3, 3), FP32, 12)
    check_kernel(conv_rows, [x, w], ref_conv(x, w, [1, 1], [1, 1, 1, 1], [1, 1]))
    with pytest.raises(pypto.ArgumentValueError, match="tileN"):
        pypto.set_conv_tile_shapes(TileL1Info(tileN=pypto.symbolic_scalar("n")), TileL0Info())
