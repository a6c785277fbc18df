"""Every script under examples/ runs and matches torch (their `check` functions assert it)."""

import importlib.util
import pathlib
import subprocess
import sys

import pytest

EXAMPLES = pathlib.Path(__file__).resolve().parents[2] / "examples"


def load(name):
    spec = importlib.util.spec_from_file_location(f"example_{name}", EXAMPLES / f"{name}.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_ffn_matches_torch_on_several_batches():
    ffn = load("ffn")
    for batch in (1, 32, 70):
        assert ffn.check(batch) < 0.05
    assert ffn.ffn.cache_info().misses == 1
    kinds = {leaf.core for leaf in ffn.ffn.last_run.compiled.lowered.leaves.values()}
    assert kinds == {"AIC", "AIV"}  # matmuls on the cube, SiLU on the vector cores


@pytest.mark.parametrize("batch,seq", [(1, 32), (2, 100), (1, 200)])
def test_flash_attention_online_softmax_over_a_dynamic_sequence(batch, seq):
    fa = load("flash_attention")
    assert fa.check(batch, seq) < 1e-4


def test_flash_attention_compiles_once_for_all_sizes():
    fa = load("flash_attention")
    for batch, seq in ((1, 64), (2, 100), (3, 37)):
        fa.check(batch, seq)
    assert fa.flash_attention.cache_info().misses == 1


def test_rms_norm_and_layer_norm_in_bf16():
    norms = load("norms")
    for batch in (1, 16, 37):
        err_rms, err_ln = norms.check(batch)
        assert err_rms < 0.05 and err_ln < 0.05


def test_moe_top_k_routing():
    moe = load("moe_routing")
    for tokens in (5, 50):
        assert moe.check(tokens) < 1e-5


@pytest.mark.parametrize("script", ["hello_world.py", "moe_routing.py"])
def test_scripts_run_as_programs(script):
    done = subprocess.run([sys.executable, str(EXAMPLES / script)], capture_output=True, text=True, timeout=120,
                          cwd=EXAMPLES)
    assert done.returncode == 0, done.stderr
    assert "True" in done.stdout or "match" in done.stdout
