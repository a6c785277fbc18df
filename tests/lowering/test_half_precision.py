"""fp16/bf16 kernels through the lowering: autocast makes the fp32 detour of bf16 vector math (and
of fp16 add/sub/mul) explicit casts in the graph, a chain of such ops keeps fp32 intermediates
and rounds once; other fp16 ops compute natively; results stay within half-precision tolerance
of torch."""

from __future__ import annotations

import re

import pytest
import torch

import pypto

try:
    from tests.lowering import _checks as C
except ImportError:
    import _checks as C

D = pypto.DYNAMIC
FP32, FP16, BF16 = pypto.DT_FP32, pypto.DT_FP16, pypto.DT_BF16
BF16_TOL = dict(rtol=1.6e-2, atol=1e-2)
FP16_TOL = dict(rtol=1e-3, atol=1e-3)


def _rand(*shape, seed=0, dtype=torch.float32):
    return torch.randn(*shape, generator=torch.Generator().manual_seed(seed)).to(dtype)


def _casts(text):
    return re.findall(r"= cast\(%[\w.]+, dtype=(\w+)", text)


@pypto.jit
def bf16_math(x: pypto.Tensor([40, 48], BF16), y: pypto.Tensor([40, 48], BF16), out: pypto.Tensor([40, 48], BF16)):
    pypto.set_vec_tile_shapes(16, 16)
    out[:] = pypto.exp(x) * y + 1.0


def test_autocast_inserts_fp32_casts_around_bf16_vector_math():
    x, y = _rand(40, 48, dtype=torch.bfloat16), _rand(40, 48, seed=1, dtype=torch.bfloat16)
    out = torch.zeros(40, 48, dtype=torch.bfloat16)
    bf16_math(x, y, out)
    compiled = bf16_math.inspect(x, y, out)
    trace, auto = C.snapshot(compiled, "trace").text, C.snapshot(compiled, "autocast").text
    assert _casts(trace) == []
    casts = _casts(auto)
    assert casts == ["fp32", "fp32", "bf16"]  # x and y widened; one rounding where the chain ends
    for kind in ("exp", "mul", "add"):
        (line,) = [ln for ln in auto.splitlines() if f"= {kind}(" in ln]
        assert re.search(r"fp32\[40, 48\] = " + kind, line), line  # computes in fp32
    # the numbers: fp32 through the chain, one bf16 rounding at the end (not one per op)
    want = (torch.exp(x.float()) * y.float() + 1.0).bfloat16()
    per_op = ((torch.exp(x.float()).bfloat16().float() * y.float()).bfloat16().float() + 1.0).bfloat16()
    torch.testing.assert_close(out, want, rtol=0, atol=0)
    assert (want != per_op).any()  # the test tells the two apart
    assert out.dtype == torch.bfloat16
    C.check_all(compiled)


def test_fp16_add_sub_mul_chain_rounds_once():
    @pypto.jit
    def chain(a: pypto.Tensor([72, 144], FP16), b: pypto.Tensor([72, 144], FP16),
              out: pypto.Tensor([72, 144], FP16), e: pypto.Tensor([72, 144], FP16)):
        pypto.set_vec_tile_shapes(32, 32)
        out[:] = ((a * (a + b)) - b) * b
        e[:] = pypto.exp(a + b) * 2.0  # exp has an fp16 form: its input is rounded to fp16 first

    a, b = torch.rand(72, 144, dtype=torch.float16), torch.rand(72, 144, dtype=torch.float16)
    out, e = torch.zeros_like(a), torch.zeros_like(a)
    chain(a, b, out, e)
    af, bf = a.float(), b.float()
    torch.testing.assert_close(out, (((af * (af + bf)) - bf) * bf).half(), rtol=0, atol=0)
    torch.testing.assert_close(e, (torch.exp((af + bf).half().float()).half().float() * 2.0).half(), rtol=0, atol=0)
    auto = C.snapshot(chain.inspect(a, b, out, e), "autocast").text
    assert _casts(auto).count("fp16") == 3  # the chain's result, a + b before exp, and the last mul


def test_fp32_kernels_and_native_fp16_ops_get_no_casts():
    @pypto.jit
    def f(x: pypto.Tensor(), out: pypto.Tensor()):
        out[:] = pypto.exp(x) / 2.0

    for dt in (torch.float32, torch.float16):
        x = _rand(24, 40, dtype=dt)
        out = torch.zeros(24, 40, dtype=dt)
        f(x, out)
        torch.testing.assert_close(out.float(), (torch.exp(x.float()).to(dt).float() / 2).to(dt).float(), **FP16_TOL)
        assert _casts(C.snapshot(f.inspect(x, out), "autocast").text) == []


@pypto.jit
def bf16_softmax(x: pypto.Tensor([D, 70], BF16), out: pypto.Tensor([D, 70], BF16), s: pypto.Tensor([D, 1], FP32)):
    pypto.set_vec_tile_shapes(16, 32)
    for b in pypto.loop(pypto.ceildiv(x.shape[0], 16)):
        rows = slice(b * 16, (b + 1) * 16)
        out[rows, :] = pypto.softmax(x[rows, :], dim=1)
        s[rows, :] = pypto.sum(pypto.cast(x[rows, :], FP32), dim=1, keepdim=True)


@pytest.mark.parametrize("n", [5, 37])
def test_bf16_softmax_and_sum_across_tiles_with_tails(n):
    x = _rand(n, 70, seed=n, dtype=torch.bfloat16) * 2
    out, s = torch.zeros(n, 70, dtype=torch.bfloat16), torch.zeros(n, 1)
    bf16_softmax(x, out, s)
    torch.testing.assert_close(out.float(), torch.softmax(x.float(), 1), **BF16_TOL)
    torch.testing.assert_close(s, x.float().sum(1, keepdim=True), rtol=1e-5, atol=1e-4)
    C.check_all(bf16_softmax.inspect(x, out, s))


@pytest.mark.parametrize("dt, tol", [(torch.float16, dict(rtol=2e-3, atol=2e-3)), (torch.bfloat16, BF16_TOL)])
def test_half_matmul_accumulates_in_fp32(dt, tol):
    @pypto.jit
    def mm(a: pypto.Tensor(), b: pypto.Tensor(), out: pypto.Tensor()):
        pypto.set_cube_tile_shapes([32, 32], [32, 64], [32, 32])
        out[:] = pypto.matmul(a, b, FP32)

    a, b = _rand(64, 96, dtype=dt) / 4, _rand(96, 48, seed=1, dtype=dt) / 4
    out = torch.zeros(64, 48)
    mm(a, b, out)
    torch.testing.assert_close(out, a.float() @ b.float(), **tol)
    compiled = mm.inspect(a, b, out)
    assert any(leaf.core == "AIC" for leaf in compiled.lowered.leaves.values())
    C.check_all(compiled)


def test_each_reader_of_a_half_tensor_gets_the_value_upstreams_autocast_gives_it():
    """Issue 20, D2: with ``t = x - 3.0`` in fp16, the sub that reads ``t`` through the cast chain
    gets the unrounded fp32 value (upstream's RemoveRedundantCastChain), while maximum and where,
    which have fp16 forms, read the rounded copy; a user cast gives every reader the rounded value.
    Each output is modelled exactly, as the device computes it."""
    S = [16, 16]

    @pypto.jit
    def two_readers(x: pypto.Tensor(S, FP16), y: pypto.Tensor(S, FP16), a: pypto.Tensor(S, FP16),
                    b: pypto.Tensor(S, FP16), c: pypto.Tensor(S, FP16)):
        pypto.set_vec_tile_shapes(16, 16)
        t = x - 3.0
        a[:] = t - pypto.maximum(t, t)
        b[:] = t - pypto.where(t < 1.0, t, y)
        r = pypto.cast(pypto.cast(t, FP32), FP16)  # the user's own rounding: never removed
        c[:] = r - pypto.maximum(r, r)

    g = torch.Generator().manual_seed(11)
    x = (torch.rand(*S, generator=g) * 8).half()
    y = (torch.rand(*S, generator=g) * 8).half()
    a, b, c = (torch.full(S, 9.0, dtype=torch.float16) for _ in range(3))
    two_readers(x, y, a, b, c)
    t32 = x.float() - 3.0  # what the fp32 chain holds
    t16 = t32.half().float()  # the rounded copy native fp16 ops read
    torch.testing.assert_close(a, (t32 - t16).half(), rtol=0, atol=0)
    torch.testing.assert_close(b, (t32 - torch.where(t16 < 1.0, t16, y.float())).half(), rtol=0, atol=0)
    torch.testing.assert_close(c, torch.zeros(S, dtype=torch.float16), rtol=0, atol=0)
    assert (a != 0).any()  # the two values really differ (x has bits below fp16's step at |t| < |x|)
