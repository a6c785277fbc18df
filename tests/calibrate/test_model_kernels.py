"""The model-kernel calibration cases: registration, the upstream-tree check, and the replay that
reads control-flow elements from the arguments (against the full run it replaces)."""

from __future__ import annotations

import os

import pytest
import torch

import pypto
from pypto.calibrate.cases import CASES, kernel_span_us
from pypto.calibrate.corpus import model_kernels as MK
from pypto.calibrate.replay import timing_only
from pypto.runtime.machine import A2A3


def test_cases_are_registered_with_their_points():
    want = {"pypto_glm_attn_stitch1": ("stitch", 1230.0), "pypto_glm_attn_stitch128": ("stitch", 180.0),
            "pypto_glm_attn_stitch512": ("stitch", 150.0),
            "pypto_quant_indexer_prolog_76us": ("model_kernel", 76.0),
            "pypto_quant_indexer_prolog_56us": ("model_kernel", 56.0),
            "pypto_quant_indexer_prolog_49us": ("model_kernel", 49.0)}
    for cid, (family, us) in want.items():
        c = CASES[cid]
        assert (c.family, c.kind, c.published_us) == (family, "mixed", us)
        assert c.how and c.source
    for n in (1, 128, 512):
        assert CASES[f"pypto_glm_attn_stitch{n}"].runtime == {"stitch_function_max_num": n}


def test_build_without_an_upstream_tree_says_which_variable(monkeypatch):
    monkeypatch.delenv(MK.ENV, raising=False)
    with pytest.raises(MK.UpstreamTreeError, match=MK.ENV) as e:
        CASES["pypto_quant_indexer_prolog_49us"].build()
    assert e.value.param == MK.ENV


def test_build_with_a_tree_without_the_file_says_so(monkeypatch, tmp_path):
    monkeypatch.setenv(MK.ENV, str(tmp_path))
    with pytest.raises(MK.UpstreamTreeError, match="model file"):
        MK._upstream_module("glm_v4_5", "glm_attention")


@pypto.jit
def _gather_rows(x: pypto.Tensor([pypto.DYNAMIC, 64], pypto.DT_FP32),
                 table: pypto.Tensor([pypto.DYNAMIC], pypto.DT_INT32),
                 out: pypto.Tensor([pypto.DYNAMIC, 64], pypto.DT_FP32)):
    pypto.set_vec_tile_shapes(16, 64)
    for i in pypto.loop(table.shape[0], name="L", idx_name="i"):
        row = table[i]
        block = pypto.view(x, [16, 64], [row * 16, 0])
        pypto.assemble(block * 2.0, [i * 16, 0], out)


def test_reading_inputs_replays_what_the_full_run_records():
    """A paged gather (the block table is read by control flow): walking the control program
    with elements read from the arguments gives the timeline the full run gives."""
    n = 12
    x = torch.randn(16 * n, 64)
    table = torch.randperm(n).to(torch.int32)
    out = torch.zeros(16 * n, 64)
    fast = MK.reading_inputs(_gather_rows, x, table, out).simulate(A2A3)
    assert torch.count_nonzero(out) == 0  # no leaf ran
    full = timing_only(_gather_rows, x, table, out).simulate(A2A3)  # runs the call: it reads elements
    assert torch.count_nonzero(out) > 0  # this one did run
    assert fast.stats["tasks"] == full.stats["tasks"] > 0
    assert list(fast.deps) == list(full.deps)
    assert kernel_span_us(fast) == kernel_span_us(full)
    assert fast.stats["makespan_cycles"] == full.stats["makespan_cycles"]


@pytest.mark.skipif(not os.environ.get(MK.ENV), reason=f"needs an upstream tree in ${MK.ENV}")
@pytest.mark.filterwarnings("ignore::pytest.PytestUnknownMarkWarning")  # upstream's own @pytest.mark.soc
@pytest.mark.parametrize("cid", ["pypto_glm_attn_stitch128", "pypto_quant_indexer_prolog_49us"])
def test_cases_build_and_simulate_from_the_upstream_tree(cid):
    c = CASES[cid]
    tl = c.build().simulate(A2A3, **c.runtime)
    assert tl.stats["tasks"] > 0 and kernel_span_us(tl) > 0
