"""Cached calls allocate nothing they had last time (issue 18, item 2): leaves write their results
straight into the output views, temporaries and workspaces are kept for the next call with the
same sizes, and what a kernel keeps is bounded in bytes (``workspace_bytes``, in cache_info())."""

from __future__ import annotations

import pytest
import torch

import pypto

try:
    from tests.golden.helper import check_kernel
except ImportError:
    from helper import check_kernel

D = pypto.DYNAMIC
FP32 = pypto.DT_FP32
T = pypto.Tensor([D, 64], FP32)


def _add_mul(**jit):
    @pypto.jit(**jit)
    def add_mul(x: T, y: T, out: T):
        pypto.set_vec_tile_shapes(8, 64)
        for b in pypto.loop(pypto.ceildiv(x.shape[0], 16)):
            r = slice(b * 16, (b + 1) * 16)
            out[r, :] = (x[r, :] + y[r, :]) * y[r, :]
    return add_mul


def _rms(**jit):
    @pypto.jit(**jit)
    def rms(x: T, out: T):
        pypto.set_vec_tile_shapes(8, 64)
        for b in pypto.loop(pypto.ceildiv(x.shape[0], 16)):
            r = slice(b * 16, (b + 1) * 16)
            xb = x[r, :]
            out[r, :] = xb * pypto.rsqrt(pypto.sum(xb * xb, -1, keepdim=True) * (1.0 / 64) + 1e-6)
    return rms


def _rand(*shape, seed):
    return torch.randn(*shape, generator=torch.Generator().manual_seed(seed))


def _rms_ref(x):
    return x * torch.rsqrt((x * x).sum(-1, keepdim=True) * (1.0 / 64) + 1e-6)


@pytest.mark.parametrize("rows", [64, 70])  # whole blocks, and a tail block
def test_results_written_into_the_output_views(rows):
    kernel = _add_mul()
    for seed in (1, 2):  # the cached call computes into the same views again
        x, y = _rand(rows, 64, seed=seed), _rand(rows, 64, seed=seed + 10)
        check_kernel(kernel, [x, y, torch.full((rows, 64), 7.0)], (x + y) * y, out=2)
    source = "\n".join(ex.source for exs in kernel.inspect(x, y, torch.empty(rows, 64)).lowered.executables.values()
                       for ex in exs.values())
    assert "_into(" in source  # the add computes into the output's view, the mul in place there


def test_output_that_is_also_an_input_is_not_written_early():
    @pypto.jit
    def twice(x: T, y: T):
        pypto.set_vec_tile_shapes(8, 64)
        x[:] = (x + y) * x  # x read after the add: writing the add into x first would be wrong

    x, y = _rand(24, 64, seed=3), _rand(24, 64, seed=4)
    want = (x + y) * x
    for _ in range(2):
        x2 = x.clone()
        twice(x2, y)
        torch.testing.assert_close(x2, want, rtol=0, atol=0)


def test_temporaries_kept_for_the_next_call_and_bounded():
    kernel = _rms()
    for seed in (5, 6, 7):
        x = _rand(48, 64, seed=seed)
        check_kernel(kernel, [x, torch.zeros(48, 64)], _rms_ref(x), out=1)
    info = kernel.cache_info()
    assert info.workspace_limit == kernel.workspace_bytes == 256 << 20
    assert 0 < info.workspace_bytes <= info.workspace_limit  # x * x of the last call, kept
    assert "workspaces kept for the next call" in str(info)
    kernel.workspace_bytes = 0  # nothing kept any more, and the numbers do not change
    assert kernel.cache_info().workspace_bytes == 0
    x = _rand(48, 64, seed=8)
    check_kernel(kernel, [x, torch.zeros(48, 64)], _rms_ref(x), out=1)
    assert kernel.cache_info().workspace_bytes == 0


def test_budget_drops_the_least_recently_used_plan_first():
    kernel = _rms()
    x = _rand(32, 64, seed=9)
    check_kernel(kernel, [x, torch.zeros(32, 64)], _rms_ref(x), out=1)
    one = kernel.cache_info().workspace_bytes
    assert one > 0
    kernel.workspace_bytes = one  # room for one size's temporaries
    for rows in (64, 32, 64):
        x = _rand(rows, 64, seed=rows)
        check_kernel(kernel, [x, torch.zeros(rows, 64)], _rms_ref(x), out=1)
        assert kernel.cache_info().workspace_bytes <= one


def test_workspace_bytes_is_checked():
    with pytest.raises(pypto.ArgumentValueError, match="workspace_bytes"):
        _add_mul(workspace_bytes=-1)
    with pytest.raises(pypto.ArgumentTypeError, match="workspace_bytes"):
        _add_mul(workspace_bytes="1G")
    kernel = _add_mul()
    with pytest.raises(pypto.ArgumentTypeError, match="workspace_bytes"):
        kernel.workspace_bytes = 1.5
    assert kernel.workspace_bytes == 256 << 20


def test_one_tensor_for_two_written_parameters_is_not_written_early():
    """``kernel(a, a)`` with both parameters written: one memory, so no leaf may write its output
    view before reading the other parameter (the add into q's view would change p)."""
    @pypto.jit
    def both(p: T, q: T):
        pypto.set_vec_tile_shapes(8, 64)
        q[:] = (p + 1.0) * p
        p[:] = p * 1.0

    a = _rand(16, 64, seed=12)
    want = (a + 1.0) * a
    for _ in range(2):
        b = a.clone()
        both(b, b)
        torch.testing.assert_close(b, want, rtol=0, atol=0)
