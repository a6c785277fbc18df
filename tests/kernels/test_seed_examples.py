"""The two kernels of the seed documents (pypto-DYNAMIC.txt, pypto-jit.txt) with real bodies.

``add_bias``: x [DYNAMIC, STATIC], bias [128] fixed, out [DYNAMIC, ...]; a runtime loop over
row tiles with views and assembles. ``attention_kernel``: q/k/v/out [DYNAMIC, DYNAMIC, HIDDEN];
a runtime loop over the batch with symbolic [S, H] slices. Every size change must reuse the one
compiled version, and the numbers must match torch.
"""

import math

import pytest
import torch

import pypto

HIDDEN_SIZE = 128
TILE = 8


def _rand(*shape, seed=0):
    g = torch.Generator().manual_seed(seed)
    return torch.randn(*shape, generator=g, dtype=torch.float32)


# ---- add_bias -------------------------------------------------------------------------------------

def make_add_bias():
    @pypto.frontend.jit
    def add_bias(
        x: pypto.Tensor([pypto.DYNAMIC, pypto.STATIC], pypto.DT_FP32),
        bias: pypto.Tensor([HIDDEN_SIZE], pypto.DT_FP32),
        out: pypto.Tensor([pypto.DYNAMIC, ...], pypto.DT_FP32),
    ):
        n = x.shape[0]
        for i in pypto.loop(pypto.ceildiv(n, TILE)):
            xt = pypto.view(x, [TILE, HIDDEN_SIZE], [i * TILE, 0])  # the tail tile is clipped
            pypto.assemble(xt + bias, [i * TILE, 0], out)

    return add_bias


def test_add_bias_batches_one_compile():
    add_bias = make_add_bias()
    bias = _rand(HIDDEN_SIZE, seed=1)
    for b in (2, 8, 33):
        x = _rand(b, HIDDEN_SIZE, seed=b)
        out = torch.full((b, HIDDEN_SIZE), float("nan"))
        result = add_bias(x, bias, out)
        assert result is None  # outputs are written in place
        torch.testing.assert_close(out, x + bias, rtol=0, atol=0)
    info = add_bias.cache_info()
    assert (info.misses, info.hits, info.currsize) == (1, 2, 1)
    assert [c.hit for c in info.calls] == [False, True, True]


def test_add_bias_slicing_spelling_matches_view_spelling():
    @pypto.frontend.jit
    def add_bias(
        x: pypto.Tensor([pypto.DYNAMIC, pypto.STATIC], pypto.DT_FP32),
        bias: pypto.Tensor([HIDDEN_SIZE], pypto.DT_FP32),
        out: pypto.Tensor([pypto.DYNAMIC, ...], pypto.DT_FP32),
    ):
        for i in pypto.loop(pypto.ceildiv(x.shape[0], TILE)):
            out[i * TILE:(i + 1) * TILE, :] = x[i * TILE:(i + 1) * TILE, :] + bias

    bias = _rand(HIDDEN_SIZE, seed=3)
    for b in (33, 2, 8):
        x = _rand(b, HIDDEN_SIZE, seed=10 + b)
        out = torch.zeros(b, HIDDEN_SIZE)
        add_bias(x, bias, out)
        torch.testing.assert_close(out, x + bias, rtol=0, atol=0)
    assert add_bias.cache_info().misses == 1


def test_add_bias_rejects_wrong_fixed_bias():
    add_bias = make_add_bias()
    x = _rand(4, HIDDEN_SIZE)
    with pytest.raises(pypto.ArgumentValueError):
        add_bias(x, _rand(64), torch.zeros(4, HIDDEN_SIZE))


# ---- attention_kernel -----------------------------------------------------------------------------

def make_attention(hidden):
    scale = 1.0 / math.sqrt(hidden)
    T = pypto.Tensor([pypto.DYNAMIC, pypto.DYNAMIC, hidden], pypto.DT_FP32)

    @pypto.frontend.jit
    def attention_kernel(q: T, k: T, v: T, out: T):
        # dims 0 and 1 (batch, sequence length) are dynamic; the hidden size is fixed
        for b in pypto.loop(q.shape[0]):
            qb = q[b]  # [S, H] with a symbolic S
            kb = k[b]
            vb = v[b]
            scores = pypto.matmul(qb, kb, b_trans=True) * scale
            probs = pypto.softmax(scores, dim=-1)
            out[b] = pypto.matmul(probs, vb)

    return attention_kernel


def _attention_ref(q, k, v):
    scale = 1.0 / math.sqrt(q.shape[-1])
    return torch.softmax(q @ k.transpose(-1, -2) * scale, dim=-1) @ v


@pytest.mark.parametrize("hidden", [64, 768])
def test_attention_kernel_batch_and_seq_one_compile(hidden):
    attention_kernel = make_attention(hidden)
    for batch, seq in ((4, 128), (2, 256)):
        q, k, v = (_rand(batch, seq, hidden, seed=s + batch) for s in range(3))
        out = torch.full((batch, seq, hidden), float("nan"))
        attention_kernel(q, k, v, out)
        torch.testing.assert_close(out, _attention_ref(q, k, v), rtol=1e-4, atol=1e-5)
    info = attention_kernel.cache_info()
    assert (info.misses, info.hits) == (1, 1)
    assert attention_kernel.last_run.cache_hit


def test_attention_mismatched_dynamic_lengths_fail_at_run_time():
    # k and v have separate DYNAMIC sequence dims: they compile (they may agree), but when they
    # differ at run time probs @ v has no valid K: the size guard refuses the call before it
    # runs, leaving `out` untouched
    attention_kernel = make_attention(64)
    q, k = _rand(2, 8, 64, seed=1), _rand(2, 8, 64, seed=2)
    v = _rand(2, 6, 64, seed=3)
    out = torch.full((2, 8, 64), 3.0)
    with pytest.raises(pypto.errors.ArgumentValueError, match="K of 'input' and K of 'mat2'"):
        attention_kernel(q, k, v, out)
    torch.testing.assert_close(out, torch.full((2, 8, 64), 3.0), rtol=0, atol=0)
    out = torch.zeros(2, 8, 64)
    attention_kernel(q, k, _rand(2, 8, 64, seed=3), out)  # the same compiled version, valid sizes
    assert attention_kernel.last_run.cache_hit


def test_attention_symbolic_slice_shapes():
    attention_kernel = make_attention(64)
    q = _rand(2, 16, 64)
    text = attention_kernel.inspect(q, q, q, torch.empty_like(q)).text()
    # q[b] is an [S, H] tensor whose S is the symbol of q's dim 1, not a number
    assert "q.shape[1], 64]" in text
    assert "matmul" in text and "softmax" in text and "loop" in text


def test_attention_manual_softmax_matches():
    scale = 1.0 / math.sqrt(64)
    T = pypto.Tensor([pypto.DYNAMIC, pypto.DYNAMIC, 64], pypto.DT_FP32)

    @pypto.frontend.jit
    def attention_manual(q: T, k: T, v: T, out: T):
        for b in pypto.loop(q.shape[0]):
            scores = pypto.matmul(q[b], k[b], b_trans=True) * scale
            m = pypto.amax(scores, -1, keepdim=True)
            e = pypto.exp(scores - m)
            p = e / pypto.sum(e, -1, keepdim=True)
            pypto.assemble(pypto.reshape(pypto.matmul(p, v[b]), [1, q.shape[1], 64]), [b, 0, 0], out)

    for batch, seq in ((4, 128), (2, 256), (3, 5)):
        q, k, v = (_rand(batch, seq, 64, seed=7 * s + seq) for s in range(3))
        out = torch.zeros(batch, seq, 64)
        attention_manual(q, k, v, out)
        torch.testing.assert_close(out, _attention_ref(q, k, v), rtol=1e-4, atol=1e-5)
    assert attention_manual.cache_info().misses == 1


# ---- kernels that return their result -------------------------------------------------------------

def test_attention_returns_local_output():
    scale = 1.0 / math.sqrt(64)
    T = pypto.Tensor([pypto.DYNAMIC, pypto.DYNAMIC, 64], pypto.DT_FP32)

    @pypto.frontend.jit
    def attention_ret(q: T, k: T, v: T):
        output = pypto.tensor([q.shape[0], q.shape[1], 64], pypto.DT_FP32)
        for b in pypto.loop(q.shape[0]):
            probs = pypto.softmax(pypto.matmul(q[b], k[b], b_trans=True) * scale, dim=-1)
            output[b] = pypto.matmul(probs, v[b])
        return output

    for batch, seq in ((4, 128), (2, 256)):
        q, k, v = (_rand(batch, seq, 64, seed=s * 5 + seq) for s in range(3))
        got = attention_ret(q, k, v)
        assert isinstance(got, torch.Tensor)
        assert tuple(got.shape) == (batch, seq, 64)
        assert got.dtype == torch.float32
        torch.testing.assert_close(got, _attention_ref(q, k, v), rtol=1e-4, atol=1e-5)
    assert attention_ret.cache_info().misses == 1


def test_returned_computed_tensor_has_runtime_shape():
    @pypto.frontend.jit
    def scaled_softmax(x: pypto.Tensor([pypto.DYNAMIC, pypto.DYNAMIC], pypto.DT_FP32)):
        return pypto.softmax(x * 2.0, dim=-1), x + 1.0

    for shape in ((3, 5), (7, 2), (1, 9)):
        x = _rand(*shape, seed=shape[0])
        got = scaled_softmax(x)
        assert isinstance(got, tuple) and len(got) == 2
        assert tuple(got[0].shape) == shape and tuple(got[1].shape) == shape
        torch.testing.assert_close(got[0], torch.softmax(x * 2.0, dim=-1))
        torch.testing.assert_close(got[1], x + 1.0, rtol=0, atol=0)
    assert scaled_softmax.cache_info().misses == 1


def test_add_bias_returning_its_output_parameter():
    @pypto.frontend.jit
    def add_bias_ret(
        x: pypto.Tensor([pypto.DYNAMIC, pypto.STATIC], pypto.DT_FP32),
        bias: pypto.Tensor([HIDDEN_SIZE], pypto.DT_FP32),
        out: pypto.Tensor([pypto.DYNAMIC, ...], pypto.DT_FP32),
    ):
        for i in pypto.loop(pypto.ceildiv(x.shape[0], TILE)):
            out[i * TILE:(i + 1) * TILE, :] = x[i * TILE:(i + 1) * TILE, :] + bias
        return out

    bias = _rand(HIDDEN_SIZE, seed=4)
    for b in (2, 33):
        x = _rand(b, HIDDEN_SIZE, seed=b)
        out = torch.zeros(b, HIDDEN_SIZE)
        got = add_bias_ret(x, bias, out)
        assert got is out  # the caller's tensor, written in place
        torch.testing.assert_close(out, x + bias, rtol=0, atol=0)
