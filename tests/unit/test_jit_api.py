"""The public jit surface: decorator spellings, option groups, tile recording, inspection."""

import numpy as np
import pytest
import torch

import pypto
from pypto.ir.graph import Loop


def body(x: pypto.Tensor([pypto.DYNAMIC, 16], pypto.DT_FP32), out: pypto.Tensor([pypto.DYNAMIC, 16], pypto.DT_FP32)):
    pypto.set_vec_tile_shapes(8, 16)
    for b in pypto.loop(pypto.ceildiv(x.shape[0], 8)):
        out[b * 8:(b + 1) * 8, :] = pypto.exp(x[b * 8:(b + 1) * 8, :]) * 2.0


def _run(kernel, n=11):
    x = torch.randn(n, 16)
    out = torch.zeros(n, 16)
    kernel(x, out)
    torch.testing.assert_close(out, torch.exp(x) * 2.0)


@pytest.mark.parametrize("make", [
    lambda: pypto.jit(body),
    lambda: pypto.jit()(body),
    lambda: pypto.jit(runtime_options={"device_sched_mode": 1})(body),
    lambda: pypto.jit(body, pass_options={"enable_slice": True}, debug_options={"runtime_debug_mode": 3}),
    lambda: pypto.frontend.jit(body),
    lambda: pypto.frontend.jit(codegen_options={"support_dynamic_aligned": True}, host_options={},
                               verify_options={"enable_pass_verify": False})(body),
], ids=["bare", "empty-call", "runtime", "fn-with-options", "frontend", "frontend-options"])
def test_every_spelling_compiles_and_runs(make):
    kernel = make()
    assert isinstance(kernel, pypto.JitFunction)
    _run(kernel)
    assert kernel.cache_info().misses == 1


def test_decorator_syntax_on_a_def():
    @pypto.jit(runtime_options={"stitch_function_max_num": 4})
    def scale(x: pypto.Tensor(), out: pypto.Tensor(), factor=3.0):
        out[:] = x * factor

    x = torch.randn(4, 8)
    out = torch.empty(4, 8)
    scale(x, out)
    torch.testing.assert_close(out, x * 3.0)
    assert scale.__name__ == "scale"


def test_numpy_arrays_are_accepted_and_written():
    kernel = pypto.jit(body)
    x = np.random.randn(5, 16).astype(np.float32)
    out = np.zeros((5, 16), np.float32)
    kernel(x, out)
    np.testing.assert_allclose(out, np.exp(x) * 2.0, rtol=1e-5, atol=1e-6)


def test_tile_shapes_are_recorded_on_each_op_and_scoped_to_the_loop():
    @pypto.jit
    def k(x: pypto.Tensor([16, 32], pypto.DT_FP32), out: pypto.Tensor([16, 32], pypto.DT_FP32)):
        pypto.set_vec_tile_shapes(16, 32)
        pypto.set_cube_tile_shapes([16, 32], [16, 32], [16, 32])
        y = x + 1.0
        for i in pypto.loop(1):
            pypto.set_vec_tile_shapes(8, 8)
            z = y * 2.0
            out[:] = z
        w = y - 1.0
        out[0:8, :] = w[0:8, :]

    x = torch.randn(16, 32)
    out = torch.zeros(16, 32)
    k(x, out)
    ref = (x + 1.0) * 2.0
    ref[0:8] = x[0:8]
    torch.testing.assert_close(out, ref)
    program = k.inspect(x, out).program
    tiles = {op.kind: op.tiles for op in program.ops() if op.kind in ("add", "mul", "sub")}
    assert tiles["add"].vec == (16, 32) and tiles["sub"].vec == (16, 32)
    assert tiles["mul"].vec == (8, 8)
    assert tiles["add"].cube == ((16, 32), (16, 32, 32), (16, 32), False)


def test_options_context_and_decorator_reach_the_kernel():
    kernel = pypto.jit(body)
    _run(kernel)
    with pypto.options(pass_options={"sg_set_scope": 3}):
        _run(kernel)
        assert kernel.last_run.cache_hit is False  # a pass option is part of the key
        assert kernel.last_run.compiled.options.get("pass", "sg_set_scope")[0] == 3

    @pypto.options(runtime_options={"device_sched_mode": 2})
    def call():
        _run(kernel)
        return kernel.last_run

    record = call()
    assert record.cache_hit is True  # runtime-only options do not recompile
    assert kernel.cache_info().misses == 2


def test_inspect_compiles_without_running_and_shows_the_graph():
    kernel = pypto.jit(body)
    x = torch.randn(9, 16)
    out = torch.full((9, 16), 7.0)
    compiled = kernel.inspect(x, out)
    assert torch.all(out == 7.0)  # nothing ran
    assert compiled.passes[0].name == "trace" and compiled.passes[0].level == "tensor"
    assert compiled.passes[0].seconds >= 0
    text = compiled.text()
    assert "loop b in [0, (x.shape[0] + 7) // 8)" in text
    assert "exp(" in text and "assemble(" in text
    assert compiled.to_dot().startswith('digraph "body"')
    loops = list(compiled.program.loops())
    assert len(loops) == 1 and isinstance(loops[0], Loop) and loops[0].index == "b"
    kernel(x, out)
    assert kernel.last_run.cache_hit is True


def test_run_record_fields():
    kernel = pypto.jit(body)
    _run(kernel)
    first = kernel.last_run
    assert first.cache_hit is False and first.compile_seconds > 0 and first.run_seconds > 0
    _run(kernel, n=30)
    assert kernel.last_run.cache_hit is True and kernel.last_run.compile_seconds == 0.0
    assert kernel.last_run.timeline.stats["tasks"] >= 1  # simulated on first access


def test_returned_tensors_have_runtime_shapes():
    @pypto.jit
    def k(x: pypto.Tensor([pypto.DYNAMIC, 8], pypto.DT_FP16)):
        pypto.set_vec_tile_shapes(4, 8)
        y = pypto.exp(x)
        return y, pypto.sum(y, 1)

    for n in (3, 6):
        x = torch.randn(n, 8, dtype=torch.float16)
        y, s = k(x)
        assert y.shape == (n, 8) and y.dtype == torch.float16 and s.shape == (n,)
        ref = torch.exp(x.float())
        torch.testing.assert_close(y, ref.half(), rtol=1e-3, atol=1e-3)
        torch.testing.assert_close(s, ref.half().float().sum(1).half(), rtol=2e-3, atol=2e-3)
    assert k.cache_info().misses == 1


def test_forced_options_win_over_the_kernels_own_and_end_with_the_block():
    from pypto.options import forced

    kernel = pypto.jit(body, runtime_options={"device_sched_mode": 2})
    _run(kernel)
    assert kernel.last_run.timeline.options["device_sched_mode"] == 2
    with forced(runtime_options={"device_sched_mode": 3}):
        assert pypto.get_runtime_options()["device_sched_mode"] == 3
        _run(kernel)
        assert kernel.last_run.timeline.options["device_sched_mode"] == 3
        assert kernel.last_run.cache_hit is True  # a runtime-only option: no recompile
    _run(kernel)
    assert kernel.last_run.timeline.options["device_sched_mode"] == 2
    with pytest.raises(pypto.OptionError):
        forced(runtime_options={"device_sched_mode": 9})
