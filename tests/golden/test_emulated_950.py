"""The emulated Ascend 950 (machine ``A5``): upstream's 950 buffer sizes and core counts, the SoC
number upstream's test filters read, chosen in code or by ``PYPTO_MACHINE`` before the process
starts; its numbers are the same computation as on the 910B, its timing is not calibrated."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest
import torch

import pypto
from pypto.passes.buffers import BufferOverflowError
from pypto.runtime.machine import A2A3, A5, MACHINES, soc_of

try:
    from tests.golden.helper import check_kernel, check_op, check_raises, rand
except ImportError:  # run without the repo root on sys.path: pytest puts this dir there
    from helper import check_kernel, check_op, check_raises, rand

ROOT = Path(__file__).resolve().parents[2]
INI = "950PR_958x.ini"


@pytest.fixture
def on_a5():
    before = pypto.get_machine()
    pypto.set_machine("A5")
    yield A5
    pypto.set_machine(before)


def _exp_add(cols):
    @pypto.jit
    def exp_add(x: pypto.Tensor([128, cols], pypto.DT_FP32), y: pypto.Tensor([128, cols], pypto.DT_FP32)):
        pypto.set_vec_tile_shapes(128, cols)  # one tile: x, y and the result side by side in UB
        return pypto.exp(x) + y
    return exp_add


def test_a_tile_too_big_for_the_910b_fits_the_950s_ub_and_computes_the_same_numbers(on_a5):
    # 3 buffers of 128 x 160 fp32 = 240 KiB: over the 910B's 192 KiB UB, under the 950's 248 KiB
    x, y = rand((128, 160), torch.float32, seed=1), rand((128, 160), torch.float32, seed=2)
    check_kernel(_exp_add(160), [x, y], torch.exp(x) + y, loose=True)
    pypto.set_machine("A2A3")
    with pytest.raises(BufferOverflowError, match="does not fit in UB"):
        _exp_add(160)(x, y)


def test_the_950s_own_parameters_are_upstreams_950_figures_and_the_rest_say_whose_they_are():
    assert (A5.aic_cores, A5.aiv_cores, A5.ub_bytes, A5.l0c_bytes) == (32, 64, 253952, 262144)
    assert A5.capacity("UB") > A2A3.capacity("UB") and A5.cube_macs_per_cycle[4] == 2 * A2A3.cube_macs_per_cycle[4]
    lines = {line.split(" = ")[0]: line for line in A5.describe().splitlines()}
    for name in ("aic_cores", "ub_bytes", "l0c_bytes", "clock_ghz", "l2_bytes", "gm_read_bw"):
        assert "[default]" in lines[name] and INI in lines[name], lines[name]
    assert "[fitted (the A2's)]" in lines["hbm_bw"]  # fitted on 910B points, not refit: it says so


def test_the_emulated_npu_reports_the_machines_soc(on_a5):
    import pypto.emulate  # noqa: F401  (the torch_npu stand-in)
    from pypto.emulate.torch_npu import npu

    assert soc_of("A5") == (260, "Ascend950PR_9589") and soc_of("A2A3")[0] == soc_of("A3")[0] == 220
    assert npu.get_soc_version() == 260 and npu.get_device_name().startswith("Ascend950PR_9589")
    assert npu.get_device_properties().cube_core_num == 32
    pypto.set_machine("A2A3")
    assert npu.get_soc_version() == 220 and npu.get_device_properties().vector_core_num == 48


def test_a_timeline_on_the_950_says_its_model_error_is_not_measured(on_a5):
    x, y = rand((128, 96), torch.float32, seed=3), rand((128, 96), torch.float32, seed=4)
    kernel = _exp_add(96)
    check_kernel(kernel, [x, y], torch.exp(x) + y, loose=True)
    error = kernel.last_run.timeline.model_error
    assert error is not None and error.status == "uncalibrated" and not error.measured


def _python(code, **env):
    environ = {k: v for k, v in os.environ.items() if k != "PYPTO_MACHINE"}
    environ.update(env, PYTHONPATH=str(ROOT))
    return subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env=environ, cwd=ROOT,
                          timeout=120)


def test_pypto_machine_chooses_the_machine_before_the_process_starts():
    done = _python("import pypto; from pypto.emulate.torch_npu import npu; "
                   "print(pypto.get_machine().name, npu.get_soc_version())", PYPTO_MACHINE="A5")
    assert done.returncode == 0, done.stderr
    assert done.stdout.split() == ["A5", "260"]
    bad = _python("import pypto", PYPTO_MACHINE="A9")
    assert bad.returncode != 0
    assert "PYPTO_MACHINE" in bad.stderr and "'A9'" in bad.stderr and "A5" in bad.stderr


def test_every_named_machine_reports_a_soc():
    for name in MACHINES:
        version, soc = soc_of(name)
        assert version in (220, 260) and soc.startswith("Ascend")


def _mm_bias(x, y, c):
    return pypto.matmul(x, y, pypto.DT_BF16, extend_params={"bias_tensor": c})


def test_a_bf16_bias_of_a_bf16_matmul_on_the_950_and_refused_on_the_910b(on_a5):
    """Upstream's matmul doc: A2/A3 refuse a bf16 bias for bf16 operands; the 950 takes one."""
    a, b = rand((7, 12), torch.bfloat16, seed=1), rand((12, 5), torch.bfloat16, seed=2)
    bias = rand((1, 5), torch.bfloat16, lo=-4, hi=4, seed=3)
    check_op(_mm_bias, [a, b, bias], lambda x, y, c: x.float() @ y.float() + c.float().reshape(-1),
             out_dtype=torch.bfloat16)
    pypto.set_machine("A2A3")
    error = check_raises(pypto.DTypeError, _mm_bias, [a, b, bias])
    assert "bias_tensor" in str(error) and "A5" in str(error)


def _conv_bias(x, w, c):
    return pypto.conv(x, w, pypto.DT_BF16, [1, 1], [1, 1, 1, 1], [1, 1], extend_params={"bias_tensor": c})


def _ref_conv_bias(x, w, c):
    out = torch.nn.functional.conv2d(torch.nn.functional.pad(x.double(), [1, 1, 1, 1]), w.double(), c.double())
    return out.float()


def test_a_bf16_conv_takes_a_bias_of_its_own_dtype_on_the_950(on_a5):
    """Upstream's conv doc: on the 950 input, weight, bias and output share one dtype; on A2/A3 a
    bf16 conv takes an fp32 bias."""
    x, w = rand((2, 3, 6, 6), torch.bfloat16, seed=4), rand((4, 3, 3, 3), torch.bfloat16, seed=5)
    bias16, bias32 = rand((4,), torch.bfloat16, seed=6), rand((4,), torch.float32, seed=6)
    check_op(_conv_bias, [x, w, bias16], _ref_conv_bias, out_dtype=torch.bfloat16)
    check_raises(pypto.DTypeError, _conv_bias, [x, w, bias32])
    pypto.set_machine("A2A3")
    check_op(_conv_bias, [x, w, bias32], _ref_conv_bias, out_dtype=torch.bfloat16)
    check_raises(pypto.DTypeError, _conv_bias, [x, w, bias16])


E4M3, E5M2, E8M0 = torch.float8_e4m3fn, torch.float8_e5m2, torch.float8_e8m0fnu


def _fp8(shape, dtype, seed, scale=2.0):
    return (rand(shape, torch.float32, lo=-scale, hi=scale, seed=seed)).to(dtype)


@pytest.mark.parametrize("a_dt, b_dt", [(E4M3, E4M3), (E4M3, E5M2), (E5M2, E5M2)], ids=str)
@pytest.mark.parametrize("out", [torch.float32, torch.bfloat16], ids=str)
def test_an_fp8_matmul_on_the_950_accumulates_in_fp32_and_rounds_once(on_a5, a_dt, b_dt, out):
    """Upstream's matmul table 3 on the 950: e4m3 / e5m2 operands (mixed), fp16 / bf16 / fp32 results."""
    a, b = _fp8((40, 96), a_dt, 1), _fp8((96, 24), b_dt, 2)
    pt = {torch.float32: pypto.DT_FP32, torch.bfloat16: pypto.DT_BF16}[out]
    check_op(lambda x, y: pypto.matmul(x, y, pt), [a, b], lambda x, y: x.float() @ y.float(), out_dtype=out)


def test_fp8_is_refused_on_the_910b_at_the_matmul_and_moved_bit_for_bit_anywhere():
    a, b = _fp8((16, 32), E4M3, 3), _fp8((32, 8), E4M3, 4)
    error = check_raises(pypto.DTypeError, lambda x, y: pypto.matmul(x, y, pypto.DT_FP32), [a, b])
    assert "A5" in str(error) and "DT_FP8E4M3" in str(error)

    @pypto.jit
    def move(x: pypto.Tensor([16, 32], pypto.DT_FP8E4M3), out: pypto.Tensor([16, 32], pypto.DT_FP8E4M3)):
        for i in pypto.loop(2):
            pypto.assemble(pypto.view(x, [8, 32], [i * 8, 0]), [i * 8, 0], out)

    out = torch.zeros(16, 32, dtype=E4M3)
    move(a, out)
    assert torch.equal(out.view(torch.uint8), a.view(torch.uint8))
    error = check_raises(pypto.DTypeError, lambda x: pypto.cast(x, pypto.DT_FP8E4M3), [rand((4, 8))])
    assert "cast" in str(error)  # no vector op computes fp8 (its rounding on the device is not modelled)


def _mx_reference(a, b, sa, sb):
    """Upstream's golden: each 32 elements of K share one e8m0 scale, ``(a * sa) @ (b * sb)``."""
    k = a.shape[1]
    sa = sa.float().reshape(sa.shape[0], -1).repeat_interleave(32, dim=1)[:, :k]
    sb = sb.float().permute(1, 0, 2).reshape(sb.shape[1], -1).repeat_interleave(32, dim=1)[:, :k]
    return (a.float() * sa) @ (b.float() * sb.T)


def test_an_mx_fp8_scaled_mm_with_e8m0_scales_on_the_950(on_a5):
    m, k, n = 24, 96, 16
    kb = (k + 63) // 64
    a, b = _fp8((m, k), E4M3, 5), _fp8((k, n), E5M2, 6)
    sa = rand((m, kb, 2), torch.float32, lo=0.05, hi=4, seed=7).to(E8M0)
    sb = rand((kb, n, 2), torch.float32, lo=0.05, hi=4, seed=8).to(E8M0)
    check_op(lambda x, y, p, q: pypto.scaled_mm(x, y, pypto.DT_FP32, p, q), [a, b, sa, sb], _mx_reference,
             out_dtype=torch.float32)
    pypto.set_machine("A2A3")
    error = check_raises(pypto.DTypeError, lambda x, y, p, q: pypto.scaled_mm(x, y, pypto.DT_FP32, p, q),
                         [a, b, sa, sb])
    assert "A5" in str(error)


def test_an_mx_scaled_mm_quantised_to_int8_through_the_fixpipe_on_the_950(on_a5):
    """Upstream's scaled_mm tables 2 and 4: bias, relu and a per-tensor scale, then int8."""
    m, k, n = 16, 64, 24
    a, b = _fp8((m, k), E4M3, 9), _fp8((k, n), E4M3, 10)
    sa = rand((m, 1, 2), torch.float32, lo=0.5, hi=2, seed=11).to(E8M0)
    sb = rand((1, n, 2), torch.float32, lo=0.5, hi=2, seed=12).to(E8M0)
    bias = rand((1, n), torch.float32, lo=-4, hi=4, seed=13)

    def body(x, y, p, q, c):
        return pypto.scaled_mm(x, y, pypto.DT_INT8, p, q, extend_params={
            "bias_tensor": c, "relu_type": pypto.ReLuType.RELU, "scale": 0.5})

    def want(x, y, p, q, c):
        return torch.round((torch.relu(_mx_reference(x, y, p, q) + c) * 0.5).clamp(-128, 127))

    check_op(body, [a, b, sa, sb, bias], want, out_dtype=torch.int8)
    error = check_raises(pypto.DTypeError, lambda x, y, p, q: pypto.scaled_mm(x, y, pypto.DT_INT8, p, q),
                         [a, b, sa, sb])
    assert "scale" in str(error) and "scaled_mm" in str(error)
