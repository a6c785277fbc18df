"""Golden tests of the activations: lrelu, prelu, expand_exp_dif, rms_norm, and the experimental
online-softmax pair (block statistics and state update, checked alone and as a flash-attention loop)."""

from __future__ import annotations

import pytest
import torch

import pypto

try:
    from tests.golden.helper import assert_matches, check_kernel, check_op, check_raises, rand
except ImportError:  # run without the repo root on sys.path: pytest puts this dir there
    from helper import assert_matches, check_kernel, check_op, check_raises, rand

FP32, FP16, BF16 = torch.float32, torch.float16, torch.bfloat16
I32 = torch.int32
FLOATS = [FP32, FP16, BF16]
MODES = ["direct", "tiled"]
# tiled mode: a DYNAMIC first dim of 37 rows = two 16-row tiles + a 5-row tail
SHAPES = {"direct": [(5, 7), (3, 4, 6), (2, 3, 4, 5)], "tiled": [(37, 8), (37, 3, 8), (33, 2, 3, 8)]}
CASES = [(mode, shape) for mode in MODES for shape in SHAPES[mode]]


# ---- lrelu ------------------------------------------------------------------------------------------

@pytest.mark.parametrize("slope", [0.01, 0.2, 0.0])
@pytest.mark.parametrize("mode,shape", CASES, ids=str)
@pytest.mark.parametrize("dtype", FLOATS)
def test_lrelu(dtype, mode, shape, slope):
    x = rand(shape, dtype, lo=-3, hi=3, seed=1)
    check_op(lambda t: pypto.lrelu(t, slope), [x], lambda t: torch.nn.functional.leaky_relu(t, slope), mode=mode)


def test_lrelu_default_slope_method_and_1d():
    x = torch.tensor([-1.0, 0.0, 1.0, -0.5])
    got = check_op(lambda t: t.lrelu(), [x], lambda t: torch.where(t >= 0, t, 0.01 * t))[0]
    assert got[0].item() == pytest.approx(-0.01)


def test_lrelu_rejects():
    err = check_raises(pypto.DTypeError, pypto.lrelu, [rand((4, 4), I32)])
    assert isinstance(err, TypeError)
    for bad in (-0.1, float("nan"), float("inf")):
        check_raises(pypto.ArgumentValueError, lambda t, s=bad: pypto.lrelu(t, s), [rand((4, 4))])
    check_raises(pypto.ArgumentTypeError, lambda t: pypto.lrelu(t, "0.1"), [rand((4, 4))])


# ---- prelu ------------------------------------------------------------------------------------------

PRELU_SHAPES = {"direct": [(6,), (5, 7), (3, 4, 6), (2, 3, 4, 5)], "tiled": [(37, 80), (37, 5, 8), (33, 3, 2, 8)]}
PRELU_CASES = [(mode, shape) for mode in MODES for shape in PRELU_SHAPES[mode]]


@pytest.mark.parametrize("mode,shape", PRELU_CASES, ids=str)
@pytest.mark.parametrize("dtype", FLOATS)
def test_prelu(dtype, mode, shape):
    """One weight per channel (dim 1); a 1-D input takes a single weight. (37, 80): the channel
    dim spans two 64-wide tiles with a tail, so the weight is tiled along with it."""
    x = rand(shape, dtype, lo=-3, hi=3, seed=2)
    w = rand((1 if len(shape) == 1 else shape[1],), dtype, lo=0.05, hi=0.9, seed=3)
    check_op(pypto.prelu, [x, w], torch.nn.functional.prelu, mode=mode)


def test_prelu_method_and_upstream_example():
    x = torch.tensor([[-2.0, 1.0, -3.0], [0.5, -1.0, 2.0]])
    w = torch.tensor([0.25, 0.5, 0.1])
    got = check_op(lambda t, u: t.prelu(u), [x, w], torch.nn.functional.prelu)[0]
    torch.testing.assert_close(got, torch.tensor([[-0.5, 1.0, -0.3], [0.5, -0.5, 2.0]]))


def test_prelu_rejects():
    check_raises(pypto.DTypeError, pypto.prelu, [rand((4, 4), I32), rand((4,), I32)])
    check_raises(pypto.DTypeError, pypto.prelu, [rand((4, 4)), rand((4,), FP16)])  # dtype mismatch
    check_raises(pypto.ShapeError, pypto.prelu, [rand((3, 4, 5)), rand((5,))])  # last dim, not dim 1
    check_raises(pypto.ShapeError, pypto.prelu, [rand((4,)), rand((4,))])  # 1-D input: weight [1]
    check_raises(pypto.ShapeError, pypto.prelu, [rand((4, 5)), rand((1, 5))])  # weight not 1-D


# ---- expand_exp_dif ---------------------------------------------------------------------------------

EXP_DIF_SHAPES = [((4, 6), (4, 6)), ((4, 6), (4, 1)), ((4, 6), (1, 6)), ((4, 6), (1, 1)), ((2, 3, 4), (2, 3, 1)),
                  ((2, 3, 4, 5), (5,)), ((2, 3, 4, 5), (2, 1, 4, 1))]


@pytest.mark.parametrize("shapes", EXP_DIF_SHAPES, ids=str)
@pytest.mark.parametrize("dtype", FLOATS)
def test_expand_exp_dif(dtype, shapes):
    a, b = rand(shapes[0], dtype, lo=-2, hi=2, seed=4), rand(shapes[1], dtype, lo=-2, hi=2, seed=5)
    check_op(pypto.expand_exp_dif, [a, b], lambda x, y: torch.exp(x - y), loose=True)


@pytest.mark.parametrize("other", [(37, 8), (37, 1), (1, 8)], ids=str)
@pytest.mark.parametrize("dtype", FLOATS)
def test_expand_exp_dif_tiled(dtype, other):
    a, b = rand((37, 8), dtype, lo=-2, hi=2, seed=6), rand(other, dtype, lo=-2, hi=2, seed=7)
    check_op(pypto.expand_exp_dif, [a, b], lambda x, y: torch.exp(x - y), mode="tiled", loose=True)


def test_expand_exp_dif_upstream_example_and_rejects():
    x = torch.tensor([[1.0, 2, 3], [4, 5, 6]])
    got = check_op(pypto.expand_exp_dif, [x, torch.tensor([[1.0], [2.0]])], lambda a, b: torch.exp(a - b))[0]
    assert got[1, 2].item() == pytest.approx(54.59815, rel=1e-5)
    check_raises(pypto.DTypeError, pypto.expand_exp_dif, [rand((4, 4), I32), rand((4, 4), I32)])
    check_raises(pypto.DTypeError, pypto.expand_exp_dif, [rand((4, 4)), rand((4, 4), BF16)])
    check_raises(pypto.ShapeError, pypto.expand_exp_dif, [rand((4, 4)), rand((3, 4))])


# ---- rms_norm ---------------------------------------------------------------------------------------

def rms_ref(x, gamma=None, eps=1e-6):
    y = x * torch.rsqrt(x.pow(2).mean(-1, keepdim=True) + eps)
    return y if gamma is None else y * gamma.float()


RMS_SHAPES = {"direct": [(4, 16), (3, 5, 32), (2, 3, 4, 8)], "tiled": [(37, 16), (37, 80), (37, 3, 24)]}
RMS_CASES = [(mode, shape) for mode in MODES for shape in RMS_SHAPES[mode]]


@pytest.mark.parametrize("with_gamma", [False, True])
@pytest.mark.parametrize("mode,shape", RMS_CASES, ids=str)
@pytest.mark.parametrize("dtype", FLOATS)
def test_rms_norm(dtype, mode, shape, with_gamma):
    """(37, 80) in tiled mode: the last dim spans two 64-wide tiles, so the mean is a cross-tile sum."""
    x = rand(shape, dtype, lo=-2, hi=2, seed=8)
    if with_gamma:
        g = rand((shape[-1],), dtype, lo=0.5, hi=1.5, seed=9)
        check_op(pypto.rms_norm, [x, g], rms_ref, mode=mode, loose=True)
    else:
        check_op(pypto.rms_norm, [x], rms_ref, mode=mode, loose=True)


def test_rms_norm_epsilon_upstream_example_and_fp32_gamma_on_bf16():
    x = torch.tensor([[1.0, 2, 3, 4], [5, 6, 7, 8]])
    got = check_op(lambda t, g: pypto.rms_norm(t, g), [x, torch.ones(4)], rms_ref)[0]
    torch.testing.assert_close(got[0], torch.tensor([0.3651, 0.7302, 1.0954, 1.4605]), rtol=0, atol=1e-4)
    small = rand((3, 8), lo=-1e-2, hi=1e-2, seed=10)
    check_op(lambda t: pypto.rms_norm(t, epsilon=1e-2), [small], lambda t: rms_ref(t, eps=1e-2), loose=True)
    xb, g = rand((4, 8), BF16, seed=11), rand((8,), FP32, lo=0.5, hi=1.5, seed=12)
    check_op(pypto.rms_norm, [xb, g], rms_ref, loose=True, out_dtype=BF16)


def test_rms_norm_rejects():
    check_raises(pypto.DTypeError, pypto.rms_norm, [rand((4, 8), I32)])
    check_raises(pypto.ShapeError, pypto.rms_norm, [rand((4, 8)), rand((4,))])
    check_raises(pypto.ShapeError, pypto.rms_norm, [rand((4, 8)), rand((1, 8))])


# ---- experimental online softmax --------------------------------------------------------------------

def online_ref(scores, scale):
    s = scores * scale
    m = s.amax(0, keepdim=True)
    e = torch.exp(s - m)
    return e, m, e.sum(0, keepdim=True)


@pytest.mark.parametrize("shape,tile", [((8, 16), None), ((37, 20), None), ((37, 40), (8, 16)), ((128, 64), (128, 32))],
                         ids=str)
def test_online_softmax(shape, tile):
    """Statistics over dim 0; a vec tile smaller than dim 0 still keeps it whole, dim 1 tiles with tails."""
    x = rand(shape, lo=-4, hi=4, seed=13)
    scale = 0.125

    def body(t):
        if tile:
            pypto.set_vec_tile_shapes(*tile)
        return pypto.experimental.online_softmax(t, scale)

    e, m, s = check_op(body, [x], lambda t: online_ref(t, scale), out_dtype=(BF16, FP32, FP32), loose=True)
    assert e.shape == shape and m.shape == s.shape == (1, shape[1])


def update_ref(pm, ps, po, cm, cs, co):
    m = torch.maximum(pm, cm)
    a, b = torch.exp(pm - m), torch.exp(cm - m)
    return m, a * ps + b * cs, a * po + b * co


@pytest.mark.parametrize("hd,q,tile", [(4, 16, None), (10, 40, (4, 16)), (64, 24, (64, 8))], ids=str)
def test_online_softmax_update(hd, q, tile):
    args = [rand((1, q), lo=-3, hi=3, seed=14), rand((1, q), lo=1, hi=5, seed=15), rand((hd, q), seed=16),
            rand((1, q), lo=-3, hi=3, seed=17), rand((1, q), lo=1, hi=5, seed=18), rand((hd, q), seed=19)]

    def body(*ts):
        if tile:
            pypto.set_vec_tile_shapes(*tile)
        return pypto.experimental.online_softmax_update(*ts)

    check_op(body, args, update_ref, loose=True)


def test_online_softmax_flash_attention_loop():
    """Blocks of 16 keys: per-block statistics, P@V per block, merged state; normalised at the end
    equals softmax over all keys (up to the bf16 exponentials)."""
    K_LEN, Q_LEN, HD, BLOCK, SCALE = 64, 24, 8, 16, 0.25

    @pypto.jit
    def attend(scores: pypto.Tensor(), vt: pypto.Tensor()):
        pypto.set_vec_tile_shapes(BLOCK, 8)
        pypto.set_cube_tile_shapes([16, 16], [16, 16], [8, 8])
        m = s = o = None
        for i in range(K_LEN // BLOCK):
            e, cm, cs = pypto.experimental.online_softmax(scores[i * BLOCK:(i + 1) * BLOCK, :], SCALE)
            co = pypto.matmul(vt[:, i * BLOCK:(i + 1) * BLOCK], pypto.cast(e, pypto.DT_FP32), pypto.DT_FP32)
            if m is None:
                m, s, o = cm, cs, co
            else:
                m, s, o = pypto.experimental.online_softmax_update(m, s, o, cm, cs, co)
        return pypto.div(o, s)

    scores, vt = rand((K_LEN, Q_LEN), lo=-6, hi=6, seed=20), rand((HD, K_LEN), seed=21)
    got = attend(scores, vt)
    want = vt @ torch.softmax(scores * SCALE, dim=0)
    torch.testing.assert_close(got, want, rtol=2e-2, atol=2e-2)
    # the same blockwise algorithm in torch, with the bf16 rounding of the exponentials: tight
    m = s = o = None
    for i in range(K_LEN // BLOCK):
        e, cm, cs = online_ref(scores[i * BLOCK:(i + 1) * BLOCK], SCALE)
        co = vt[:, i * BLOCK:(i + 1) * BLOCK] @ e.to(BF16).float()
        m, s, o = (cm, cs, co) if m is None else update_ref(m, s, o, cm, cs, co)
    assert_matches(got, o / s, loose=True)


def test_online_softmax_rejects():
    os_, upd = pypto.experimental.online_softmax, pypto.experimental.online_softmax_update
    check_raises(pypto.DTypeError, lambda t: os_(t, 0.5), [rand((8, 16), FP16)])
    check_raises(pypto.ShapeError, lambda t: os_(t, 0.5), [rand((2, 8, 16))])
    check_raises(pypto.ArgumentTypeError, lambda t: os_(t, "0.5"), [rand((8, 16))])
    stat, out = rand((1, 16)), rand((4, 16))
    check_raises(pypto.DTypeError, upd, [stat, stat, out.to(BF16), stat, stat, out])
    check_raises(pypto.ShapeError, upd, [stat, stat, out, stat, stat, rand((5, 16))])
    check_raises(pypto.ShapeError, upd, [rand((2, 16)), stat, out, stat, stat, out])


# ---- pass verify: the reference executor (whole tensors) agrees with the tiled program ----------------

def test_activations_pass_verify():
    @pypto.jit(verify_options={"enable_pass_verify": True})
    def k(x: pypto.Tensor(), w: pypto.Tensor(), g: pypto.Tensor()):
        pypto.set_vec_tile_shapes(4, 2, 8)
        return pypto.prelu(x, w), pypto.lrelu(x, 0.3), pypto.rms_norm(x, g), pypto.expand_exp_dif(x, g)

    x, w, g = rand((9, 3, 20), seed=22), rand((3,), lo=0.1, hi=0.5, seed=23), rand((20,), seed=24)
    check_kernel(k, [x, w, g], (torch.nn.functional.prelu(x, w), torch.nn.functional.leaky_relu(x, 0.3),
                                rms_ref(x, g), torch.exp(x - g)), loose=True)
