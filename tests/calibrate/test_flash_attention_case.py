"""The flash-attention family of the calibration corpus: the kernels compute attention (run for
real at small sizes against torch), and every registered case builds and simulates."""

from __future__ import annotations

import math

import pytest
import torch

import pypto
from pypto.calibrate.cases import CASES, kernel_span_us, load_all
from pypto.calibrate.corpus import flash_attention as fa
from pypto.runtime.machine import A2A3

try:
    from tests.golden.helper import rand, tolerance
except ImportError:  # run without the repo root on sys.path
    import sys
    from pathlib import Path

    sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "golden"))
    from helper import rand, tolerance

KERNELS = {
    "unrolled": fa.unrolled_kernel,
    "unrolled_tile256": lambda s0, s1, d: fa.unrolled_kernel(s0, s1, d, tile_s1=256),
    "loop": fa.loop_kernel,
}


def attention(q, k, v):
    """softmax(Q K^T / sqrt(D)) V in fp32 on the fp16 inputs."""
    q, k, v = q.float(), k.float(), v.float()
    return torch.softmax(q @ k.T / math.sqrt(q.shape[-1]), dim=-1) @ v


@pytest.mark.parametrize("variant", sorted(KERNELS))
@pytest.mark.parametrize("s0,s1,d", [(128, 512, 64), (256, 512, 128)])
def test_kernel_computes_attention(variant, s0, s1, d):
    # inputs spread wide enough that the row max moves between K/V tiles (the rescale is exercised)
    q = rand((s0, d), torch.float16, lo=-3.0, hi=3.0, seed=1)
    k = rand((s1, d), torch.float16, lo=-3.0, hi=3.0, seed=2)
    v = rand((s1, d), torch.float16, seed=3)
    o = torch.full((s0, d), float("nan"))
    KERNELS[variant](s0, s1, d)(q, k, v, o)
    want = attention(q, k, v)
    assert o.dtype == torch.float32 and o.shape == want.shape
    # P is cast to fp16 before P V (as the sources do): fp16 tolerance
    rtol, atol = tolerance(torch.float16)
    torch.testing.assert_close(o, want, rtol=rtol, atol=atol)


def test_running_max_changes_across_tiles():
    # the test inputs above would not test the online rescale if one tile held every row's max
    q = rand((128, 64), torch.float16, lo=-3.0, hi=3.0, seed=1).float()
    k = rand((512, 64), torch.float16, lo=-3.0, hi=3.0, seed=2).float()
    s = q @ k.T
    first, later = s[:, :256].amax(-1), s[:, 256:].amax(-1)
    assert (later > first).any() and (first > later).any()


@pytest.mark.parametrize("param,args,kw", [("s0", (100, 256), {}), ("s1", (128, 200), {}), ("s1", (128, 0), {}),
                                            ("tile_s1", (128, 512), {"tile_s1": 192}),
                                            ("s1", (128, 384), {"tile_s1": 256})])
def test_sizes_off_the_tile_grid_are_refused(param, args, kw):
    with pytest.raises(pypto.ShapeError) as err:
        fa.unrolled_kernel(*args, **kw)
    assert f"'{param}'" in str(err.value)


def _flash_cases():
    load_all()
    return sorted(cid for cid, c in CASES.items() if c.family == "flash_attention")


def test_every_published_point_has_a_case():
    ids = set(_flash_cases())
    hand = {f"ptoisa_fa_s0_{s0}_s1_{s1}" for s0 in (128, 512) for s1 in (1024, 2048, 4096, 8192)}
    jit = {f"ptoisa_jitfa_s0_{s0}_s1_{s1}" for s0 in (128, 256, 512) for s1 in (1024, 2048, 4096, 8192)}
    assert ids == hand | jit


@pytest.mark.parametrize("cid", _flash_cases())
def test_case_builds_and_simulates(cid):
    c = CASES[cid]
    assert c.kind == "mixed" and c.published_us > 0 and c.how
    timeline = c.build().simulate(A2A3)
    assert kernel_span_us(timeline) > 0
    # the structure of the source: per 128-row block, one QK and one PV matmul per 128-row K/V tile
    s0, s1 = (int(x) for x in cid.split("_")[-3::2])
    cube = sum(1 for e in timeline.events if e.core_type == "AIC")
    assert cube == 2 * (s0 // 128) * (s1 // 128)


def test_loop_variant_simulates():
    timeline = fa.build_loop_variant(128, 1024).simulate(A2A3)
    assert kernel_span_us(timeline) > 0
    assert sum(1 for e in timeline.events if e.core_type == "AIC") == 2 * 8
