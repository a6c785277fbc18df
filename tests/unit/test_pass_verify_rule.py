"""Pass verify's comparison rule (upstream's precision check, pypto/runtime/verify.py `_close`):
with ``pass_verify_error_tol`` [rtol, atol], an element is off beyond rtol*(|a|+|b|)/2 + atol and
wrong beyond 128 times that; a result matches when nothing is wrong and at most
max(n*min(rtol, atol), min(16, isqrt(n)//2)) elements are off. Integers compare exactly, and a
NaN/inf on one side only is wrong. Checked through the goldens of `pypto.set_verify_golden_data`."""

from __future__ import annotations

import pytest
import torch

import pypto
from pypto.runtime.verify import PassVerifyError

try:
    from tests.golden.helper import check_kernel, rand
except ImportError:  # run without the repo root on sys.path
    import sys
    from pathlib import Path

    sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "golden"))
    from helper import check_kernel, rand

VERIFY = {"enable_pass_verify": True}  # default tolerance [1e-3, 1e-3]


@pypto.jit(verify_options=VERIFY)
def double(x: pypto.Tensor([64, 8], pypto.DT_FP32), y: pypto.Tensor([64, 8], pypto.DT_FP32)):
    pypto.set_vec_tile_shapes(16, 8)
    y[:] = x + x


@pypto.jit(verify_options=VERIFY)
def double_int(x: pypto.Tensor([64, 8], pypto.DT_INT32), y: pypto.Tensor([64, 8], pypto.DT_INT32)):
    pypto.set_vec_tile_shapes(16, 8)
    y[:] = x + x


def _golden_with(n_off: int, by: float):
    x = rand((64, 8), lo=0.5, hi=2.0)
    golden = x * 2
    golden.view(-1)[:n_off] += by
    return x, golden


def test_a_few_elements_off_match():
    # 512 elements, n*min(rtol, atol) rounds to 0: up to min(16, isqrt(512)//2) = 11 may be off
    x, golden = _golden_with(11, 0.05)
    pypto.set_verify_golden_data(goldens=[None, golden])
    check_kernel(double, (x, torch.zeros(64, 8)), x * 2, out=1)
    last = double.last_run.verify[-1]
    assert last.stage == "golden" and last.ok and last.max_abs_diff == pytest.approx(0.05, rel=1e-3)


def test_more_elements_off_than_allowed_fail():
    x, golden = _golden_with(12, 0.05)
    pypto.set_verify_golden_data(goldens=[None, golden])
    with pytest.raises(PassVerifyError, match="golden stage.*argument 'y'"):
        double(x, torch.zeros(64, 8))


def test_one_wrong_element_fails():
    # 128 * (1e-3 * (4 + 5) / 2 + 1e-3) < 1: beyond the failure bound
    x, golden = _golden_with(1, 1.0)
    pypto.set_verify_golden_data(goldens=[None, golden])
    with pytest.raises(PassVerifyError, match="golden stage"):
        double(x, torch.zeros(64, 8))


def test_nan_on_one_side_fails():
    x, golden = _golden_with(0, 0.0)
    golden[3, 3] = float("nan")
    pypto.set_verify_golden_data(goldens=[None, golden])
    with pytest.raises(PassVerifyError, match="got:.*inf"):
        double(x, torch.zeros(64, 8))


def test_integers_compare_exactly():
    x = rand((64, 8), torch.int32, lo=-50, hi=50)
    golden = x * 2
    pypto.set_verify_golden_data(goldens=[None, golden])
    check_kernel(double_int, (x, torch.zeros(64, 8, dtype=torch.int32)), golden, out=1)
    golden = golden.clone()
    golden[0, 0] += 1
    pypto.set_verify_golden_data(goldens=[None, golden])
    with pytest.raises(PassVerifyError, match="golden stage"):
        double_int(x, torch.zeros(64, 8, dtype=torch.int32))


@pypto.jit(verify_options={**VERIFY, "pass_verify_error_tol": [0.008, 0.001]})
def cross(a: pypto.Tensor([16, 32], pypto.DT_BF16), b: pypto.Tensor([16, 32], pypto.DT_BF16),
          c: pypto.Tensor([16, 32], pypto.DT_BF16), d: pypto.Tensor([16, 32], pypto.DT_BF16),
          out: pypto.Tensor([16, 32], pypto.DT_BF16)):
    pypto.set_vec_tile_shapes(16, 32)
    out[:] = pypto.sub(pypto.mul(a, b), pypto.mul(c, d))


def test_bf16_cancellation_between_stages_passes():
    """a*b - c*d in bf16 (a rotation, as RoPE): the Tensor Graph reference rounds each product to
    bf16, the lowered program keeps them in fp32 (one rounding, as torch in fp32 then cast); where
    the products nearly cancel the two differ by a bf16 step of the products, on a few elements."""
    g = torch.Generator().manual_seed(0)
    a, c = (torch.randn(16, 32, generator=g).to(torch.bfloat16) for _ in range(2))
    b, d = (torch.randn(16, 32, generator=g).clamp(-1, 1).to(torch.bfloat16) for _ in range(2))
    want = (a.float() * b.float() - c.float() * d.float()).to(torch.bfloat16)
    per_op = ((a.float() * b.float()).to(torch.bfloat16).float()
              - (c.float() * d.float()).to(torch.bfloat16).float()).to(torch.bfloat16)
    off = (per_op.double() - want.double()).abs() > (per_op.double().abs() + want.double().abs()) * 0.004 + 0.001
    assert 0 < int(off.sum()) <= 11  # the stages do differ, on fewer elements than allowed
    check_kernel(cross, (a, b, c, d, torch.zeros(16, 32, dtype=torch.bfloat16)), want, out=4)
    assert [r.stage for r in cross.last_run.verify] == ["tile", "block/execute"]
    assert all(r.ok for r in cross.last_run.verify) and cross.last_run.verify[0].max_abs_diff > 0
