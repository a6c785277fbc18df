"""Upstream's kernel call steps and the ``_execute_kernel`` hook (pypto/frontend/execute_hook.py):
a set-up that replaces ``_execute_kernel`` on the kernel class gets every call (tensors, their
parameter specs, the non-tensor values in ``self.kwargs``); while nobody replaced it, the call is
the direct one. ``compile`` compiles without running and, with pass verify on, verifies against
the goldens on copies and logs the result in ``LogTopFolder()/verify/interpreter.log``."""

from __future__ import annotations

import os

import pytest
import torch

import pypto
from pypto import pypto_impl
from pypto.frontend.jit import JitFunction
from pypto.frontend.parser.entry import JitCallableWrapper
from pypto.runtime.verify import PassVerifyError

try:
    from tests.golden.helper import check_kernel, rand
except ImportError:  # run without the repo root on sys.path
    import sys
    from pathlib import Path

    sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "golden"))
    from helper import check_kernel, rand

F32 = pypto.DT_FP32
VERIFY = {"enable_pass_verify": True}


def _scale_kernel(**options):
    @pypto.jit(**options)
    def scale(x: pypto.Tensor([pypto.DYNAMIC, 8], F32), y: pypto.Tensor([pypto.DYNAMIC, 8], F32), factor: float):
        pypto.set_vec_tile_shapes(4, 8)
        y[:] = x * factor

    return scale


def _compile_only(self, torch_tensors, tensor_defs):
    """What upstream's interpreter set-up puts in place of ``_execute_kernel``."""
    pto_tensors = self._convert_tensors_with_metadata(torch_tensors, tensor_defs)
    with pypto.options("jit_scope"):
        self._set_config_option()
        pypto_impl.DeviceInit()
        self.compile(pto_tensors)


@pytest.fixture
def log_dir(tmp_path, monkeypatch):
    monkeypatch.setenv("PYPTO_DUMP_DIR", str(tmp_path / "out"))
    return tmp_path / "out"


def test_unpatched_calls_are_direct_and_run():
    assert JitCallableWrapper is JitFunction
    assert JitFunction.__call__ is JitFunction._direct_call  # no hook on the call path
    k = _scale_kernel()
    x = rand((6, 8))
    y = torch.zeros(6, 8)
    check_kernel(k, (x, y, 3.0), x * 3.0, out=1)


def test_a_replaced_hook_gets_every_call_until_restored(monkeypatch):
    seen = []

    def hook(self, torch_tensors, tensor_defs):
        seen.append(([t.data_ptr() for t in torch_tensors], [d.param for d in tensor_defs], dict(self.kwargs)))
        return "from the hook"

    k = _scale_kernel()
    x, y = rand((5, 8)), torch.zeros(5, 8)
    monkeypatch.setattr(JitCallableWrapper, "_execute_kernel", hook)
    assert JitFunction.__call__ is not JitFunction._direct_call
    assert k(x, y, factor=2.0) == "from the hook"
    assert seen == [([x.data_ptr(), y.data_ptr()], ["x", "y"], {"factor": 2.0})]
    assert torch.equal(y, torch.zeros(5, 8))  # the hook did not run the kernel
    monkeypatch.undo()
    assert JitFunction.__call__ is JitFunction._direct_call
    check_kernel(k, (x, y, 2.0), x * 2.0, out=1)
    assert len(seen) == 1


def test_a_hook_can_wrap_the_original_step(monkeypatch):
    original = JitFunction._execute_kernel
    calls = []

    def traced(self, torch_tensors, tensor_defs):
        calls.append(len(torch_tensors))
        return original(self, torch_tensors, tensor_defs)

    monkeypatch.setattr(JitFunction, "_execute_kernel", traced)
    k = _scale_kernel()
    x, y = rand((7, 8), seed=1), torch.zeros(7, 8)
    check_kernel(k, (x, y, -1.5), x * -1.5, out=1)
    assert calls == [2]


def test_a_bad_call_still_names_the_argument(monkeypatch):
    monkeypatch.setattr(JitCallableWrapper, "_execute_kernel", _compile_only)
    k = _scale_kernel()
    with pytest.raises(pypto.ArgumentValueError, match="unknown keyword argument 'factr'"):
        k(rand((4, 8)), torch.zeros(4, 8), factr=2.0)


def test_converted_tensors_carry_names_and_dynamic_axes():
    k = _scale_kernel()
    x, y = rand((3, 8)), torch.zeros(3, 8)
    k._signature()
    hosts = k._convert_tensors_with_metadata([x, y], list(k._sig.tensors))
    assert [h.name for h in hosts] == ["x", "y"]
    assert all(isinstance(h.shape[0], pypto.SymbolicScalar) for h in hosts)  # dim 0 is DYNAMIC
    assert hosts[0].shape[1] == 8
    assert hosts[0].data is x


def test_compile_only_verifies_against_goldens_and_logs(monkeypatch, log_dir):
    monkeypatch.setattr(JitCallableWrapper, "_execute_kernel", _compile_only)
    k = _scale_kernel(verify_options=VERIFY)
    x, y = rand((9, 8), seed=2), torch.full((9, 8), 7.0)
    pypto.set_verify_golden_data(goldens=[None, x * 4.0])
    assert k(x, y, 4.0) is None
    assert torch.equal(y, torch.full((9, 8), 7.0))  # verified on copies: the caller's tensors are untouched
    assert len(k.cache_info().entries) == 1
    # the lines kept so far (this call's, and those of earlier verified calls in this process) go
    # into the folder when it is asked for
    log = os.path.join(pypto_impl.LogTopFolder(), "verify", "interpreter.log")
    assert os.path.dirname(os.path.dirname(log)) == str(log_dir)
    lines = open(log).read().splitlines()
    mine = [line for line in lines if line.startswith("scale ")]
    assert [line.split(" (")[0] for line in mine[-3:]] == ["scale tile", "scale block/execute", "scale golden"]
    assert all("verify result PASS" in line for line in mine[-3:])

    pypto.set_verify_golden_data(goldens=[None, x * 4.5])  # a wrong golden
    with pytest.raises(PassVerifyError, match="golden stage.*argument 'y'"):
        k(x, y, 4.0)
    new = open(log).read().splitlines()[len(lines):]  # once asked for, the log is kept up to date
    assert "scale golden" in new[2] and "result FAILED" in new[2]
    assert new[3] == "[VERIFY:FAIL] scale, golden, argument 'y'"


def test_compile_without_verify_compiles_and_runs_nothing(monkeypatch):
    monkeypatch.setattr(JitCallableWrapper, "_execute_kernel", _compile_only)
    k = _scale_kernel()
    x, y = rand((4, 8)), torch.zeros(4, 8)
    k(x, y, 2.0)
    k(rand((12, 8)), torch.zeros(12, 8), 2.0)  # DYNAMIC rows: the same version
    assert len(k.cache_info().entries) == 1 and torch.equal(y, torch.zeros(4, 8))
    monkeypatch.undo()
    check_kernel(k, (x, y, 2.0), x * 2.0, out=1)
    assert len(k.cache_info().entries) == 1  # the call reuses what compile made


def test_set_config_option_applies_the_kernels_options_in_scope():
    k = _scale_kernel(verify_options=VERIFY)
    with pypto.options("jit_scope"):
        k._set_config_option()
        assert pypto.get_verify_options()["enable_pass_verify"] is True
    assert pypto.get_verify_options()["enable_pass_verify"] is False


def test_setup_verify_data_stages_the_goldens():
    from pypto import runtime

    x, g = rand((2, 8)), rand((2, 8), seed=3)
    pypto.set_verify_golden_data(goldens=[None, g])
    described = runtime._pto_verify_datas.get_data()
    assert [d.GetDataPtr() == 0 for d in described] == [True, False]
    assert described[1].GetShape() == [2, 8] and torch.equal(described[1].read(), g)
    with pypto.options(verify_options=VERIFY):
        runtime.setup_verify_data([pypto.from_torch(x), torch.zeros(2, 8)])
    from pypto.runtime.verify import _pending

    assert _pending["goldens"][0] is None and torch.equal(_pending["goldens"][1], g)
    _pending["goldens"] = None
    runtime._pto_verify_datas.reset()


def test_upstream_module_names_for_the_verify_set_up():
    import pypto.frontend.parser.entry as entry
    import pypto.pil.compile_pipeline as compile_pipeline
    from pypto import runtime
    from pypto._build_online import BuildOnlineCalculatorManager

    assert entry.setup_verify_data is compile_pipeline.setup_verify_data is runtime.setup_verify_data
    assert BuildOnlineCalculatorManager() is BuildOnlineCalculatorManager()
    assert BuildOnlineCalculatorManager().build_and_load_calculator() is True


def test_count_mismatch_is_a_clear_error():
    k = _scale_kernel()
    k._signature()
    with pytest.raises(pypto.ArgumentValueError, match="got 1 tensor\\(s\\) for 2 tensor definition"):
        k.compile([rand((4, 8))], list(k._sig.tensors))


@pytest.mark.parametrize("stage", [pypto.CompStage.TILE_GRAPH, pypto.CompStage.EXECUTE_GRAPH], ids=lambda s: s.name)
def test_compile_only_to_a_stage_still_verifies_every_pass(monkeypatch, log_dir, stage):
    # upstream's interpreter set-up compiles to EXECUTE_GRAPH with pass verify on: the version has
    # no executor, so verify lowers in full for itself and checks the goldens on copies
    monkeypatch.setattr(JitCallableWrapper, "_execute_kernel", _compile_only)
    k = _scale_kernel(verify_options=VERIFY, host_options={"compile_stage": stage})
    x, y = rand((9, 8), seed=3), torch.full((9, 8), 7.0)
    pypto.set_verify_golden_data(goldens=[None, x * 4.0])
    assert k(x, y, 4.0) is None
    assert torch.equal(y, torch.full((9, 8), 7.0))
    pypto.set_verify_golden_data(goldens=[None, x * 4.5])  # a wrong golden is still caught
    with pytest.raises(PassVerifyError, match="golden stage.*argument 'y'"):
        k(x, y, 4.0)
