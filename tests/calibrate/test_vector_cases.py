"""The vector and GatedDeltaRule calibration kernels: each computed for real at a small size
against torch (through the golden helper), and every registered case built and simulated."""

from __future__ import annotations

import pytest
import torch

import pypto
from pypto.calibrate import cases
from pypto.calibrate.corpus import gated_delta_rule as gdr
from pypto.calibrate.corpus import vector as vec
from pypto.runtime.machine import A2A3

try:
    from tests.golden.helper import check_kernel, rand
except ImportError:  # run without the repo root on sys.path
    import sys
    from pathlib import Path

    sys.path.insert(0, str(Path(__file__).resolve().parents[2]))
    from tests.golden.helper import check_kernel, rand

FP32, FP16, BF16 = torch.float32, torch.float16, torch.bfloat16


def _filled(shape, dtype):
    """An output buffer no correct result equals (NaN, or -1 for ints)."""
    return torch.full(shape, float("nan") if dtype.is_floating_point else -1, dtype=dtype)


@pytest.mark.parametrize("dtype", [FP32, FP16])
def test_topk_rows_of_a_strided_matrix(dtype):
    # 11 rows in blocks of 4 (a tail block of 3), sorted 2 rows at a time; 40 valid of 48 columns
    rows, cols, valid, k = 11, 48, 40, 12
    x = torch.randperm(rows * cols, generator=torch.Generator().manual_seed(1)).reshape(rows, cols).to(dtype)
    pdt = pypto.DT_FP32 if dtype == FP32 else pypto.DT_FP16
    v, i = _filled((rows, k), dtype), _filled((rows, k), torch.int32)
    want = torch.topk(x[:, :valid].float(), k, dim=-1)
    check_kernel(vec.topk_kernel(cols, valid, k, pdt, 4, 2), [x, v, i],
                 [want.values.to(dtype), want.indices.to(torch.int32)], out=[1, 2])


def test_copy_through_ub():
    x = rand((13, 64), FP16, seed=2)
    check_kernel(vec.copy_kernel(64, pypto.DT_FP16, 5, 2), [x, _filled((13, 64), FP16)], x.clone(), out=1)


def _mhc_want(x, h):
    b, s, d = x.shape[0], x.shape[-2], x.shape[-1]
    return (x.reshape(b, 1, s, d) * h.reshape(1, -1, 1, 1))


def test_mhc_post_read_once():
    x, h = rand((3, 1, 10, 16), seed=3), rand((1, 4, 1, 1), seed=4)
    check_kernel(vec.mhc_post_read_once(10, 16, 4, pypto.DT_FP32, 4), [x, h, _filled((3, 4, 10, 16), FP32)],
                 _mhc_want(x, h), out=2)


def test_mhc_post_per_stream():
    x, h = rand((2, 10, 16), seed=5), rand((1, 4), seed=6)
    check_kernel(vec.mhc_post_per_stream(10, 16, 4, pypto.DT_FP32, 4), [x, h, _filled((8, 10, 16), FP32)],
                 _mhc_want(x, h).reshape(8, 10, 16), out=2)


def test_sinkhorn():
    n, batch, repeats, eps = 8, 3, 4, 1e-6
    x = rand((batch * n, n), FP16, seed=7)
    m = torch.softmax(x.float().reshape(batch, n, n), -1)
    for _ in range(repeats):
        m = m / (m.sum(-1, keepdim=True) + eps)
        m = m / (m.sum(-2, keepdim=True) + eps)
    check_kernel(vec.sinkhorn_kernel(n, repeats, eps, pypto.DT_FP16), [x, _filled(x.shape, FP16)],
                 m.reshape(batch * n, n).to(FP16), out=1)


def test_int8_quant():
    x = rand((7, 64), FP16, lo=-3, hi=3, seed=8)
    s = x.float().abs().amax(-1, keepdim=True) / 127.0
    q = torch.round(x.float() / s).to(torch.int8)
    check_kernel(vec.int8_quant_kernel(64, 3, 1), [x, _filled((7, 64), torch.int8), _filled((7, 1), FP32)],
                 [q, s], out=[1, 2])


def test_poly_norm():
    hidden, eps = 32, 1e-6
    x, w, b = rand((9, hidden), BF16, seed=9), rand((1, 3), seed=10), rand((1, 1), seed=11)
    xf = x.float()

    def norm(u):
        return u * torch.rsqrt((u * u).mean(-1, keepdim=True) + eps)

    want = (w[:, 0:1] * norm(xf ** 3) + w[:, 1:2] * norm(xf ** 2) + w[:, 2:3] * norm(xf) + b).to(BF16)
    check_kernel(vec.poly_norm_kernel(hidden, eps, pypto.DT_BF16, 4, 1), [x, w, b, _filled(x.shape, BF16)],
                 want, out=3)


def test_add():
    x, y = rand((40,), seed=12), rand((40,), seed=13)
    check_kernel(vec.add_kernel(pypto.DT_FP32, 16), [x, y, _filled((40,), FP32)], x + y, out=2)


def test_gelu():
    x = rand((40,), FP16, lo=-4, hi=4, seed=14)
    want = torch.nn.functional.gelu(x.float(), approximate="tanh").to(FP16)
    check_kernel(vec.gelu_kernel(pypto.DT_FP16, 16), [x, _filled((40,), FP16)], want, out=1)


def test_gdr_chunk_inverse():
    # chunk 32: 8 diagonal [4, 4] blocks per chunk, two chunks; strictly lower triangular as in GDR
    chunk, chunks = 32, 2
    m = chunk // 8
    attn = rand((chunks * chunk, chunk), lo=-0.3, hi=0.3, seed=15) * torch.tril(torch.ones(chunk, chunk), -1).repeat(chunks, 1)
    eye = torch.eye(m).repeat(1, 8)
    want = torch.cat([torch.cat([torch.linalg.inv(torch.eye(m) - attn[c * chunk + b * m:c * chunk + (b + 1) * m,
                                                                       b * m:(b + 1) * m]) for b in range(8)], 1)
                      for c in range(chunks)], 0)
    check_kernel(gdr.chunk_inverse_kernel(chunk), [attn, eye, _filled((chunks * m, chunk), FP32)], want, out=2,
                 loose=True)


OWN = [cid for cid, c in cases.CASES.items() if c.build.__module__ in (vec.__name__, gdr.__name__)]


def test_own_cases_registered():
    want = {"topk_a3_f32_4800", "topk_a3_f32_2304", "topk_a3_f16_4800", "torch_clone_4096x4096_fp16",
            "ub_copy_gm_ub_gm_256x16384_fp16", "mhc_post_910b2_32x2048x1024_ns4", "mhc_post_910b2_16x1024x1024_ns4",
            "mhc_post_910b2_4x512x256_ns4", "sinkhorn_pto_b64_n128", "int8_quant_pto_plateau",
            "poly_norm_liger_910b4_2048x4096", "torch_add_910b4_16384_fp32", "ascend_rs_gelu_910b3_16384",
            "pypto_gdr_inverse"}
    assert want <= set(OWN)


@pytest.mark.parametrize("case_id", OWN)
def test_case_builds_and_simulates(case_id):
    c = cases.CASES[case_id]
    assert c.published_us > 0 and 0 < c.weight <= 1 and c.how and c.source
    timeline = c.build().simulate(A2A3, **c.runtime)
    assert timeline.stats["tasks"] > 0
    simulated = cases.kernel_span_us(timeline) if c.measures == "kernel" else cases.end_to_end_us(timeline)
    assert simulated > 0
    assert cases.end_to_end_us(timeline) >= cases.kernel_span_us(timeline)
