"""pypto.emulate: upstream-style NPU scripts run on the CPU simulator, only when asked for.

Emulation patches torch for the whole process, so every check runs a small script in a fresh
interpreter (``python -m pypto.emulate script.py`` or ``install()`` inside the script).
"""

import subprocess
import sys
import textwrap

import pytest

from pypto.emulate import NOTICE

KERNEL = """
import pypto

@pypto.frontend.jit(runtime_options={"run_mode": pypto.RunMode.NPU})
def scale_add(x: pypto.Tensor([pypto.DYNAMIC, 32], pypto.DT_FP32),
              y: pypto.Tensor([pypto.DYNAMIC, 32], pypto.DT_FP32),
              out: pypto.Tensor([pypto.DYNAMIC, 32], pypto.DT_FP32)):
    pypto.set_vec_tile_shapes(8, 32)
    for b in pypto.loop(pypto.ceildiv(x.shape[0], 8)):
        rows = slice(b * 8, (b + 1) * 8)
        out[rows, :] = x[rows, :] * 2.0 + y[rows, :]
"""


def run(tmp_path, body: str, *args: str, emulate: bool = True, name: str = "script.py"):
    script = tmp_path / name
    script.write_text(textwrap.dedent(body))
    cmd = [sys.executable] + (["-m", "pypto.emulate"] if emulate else []) + [str(script), *args]
    proc = subprocess.run(cmd, capture_output=True, text=True, cwd=tmp_path, timeout=300)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    return proc


def test_npu_devices_are_cpu_tensors_and_npu_mode_kernels_compute(tmp_path):
    proc = run(tmp_path, KERNEL + """
import os, sys
import torch, torch_npu

torch.npu.set_device(int(os.environ.get("TILE_FWK_DEVICE_ID", 0)))
assert torch_npu.npu is torch.npu and torch.npu.is_available() and torch.npu.device_count() == 1
assert torch.npu.current_device() == 0 and isinstance(torch.npu.get_device_name(), str)
torch.npu.synchronize(); torch.npu.empty_cache()
torch.manual_seed(3); first = torch.randn(4, device="npu")
torch.npu.manual_seed(3); assert torch.equal(first, torch.randn(4, device="npu"))  # one generator: the CPU's
torch.npu.config.allow_internal_format = True
torch_npu.npu.config.allow_internal_format = False
s = torch.npu.Stream()
with torch.npu.stream(s):
    torch.npu.current_stream().wait_stream(s)
made = [torch.randn(17, 32, device="npu"), torch.randn(17, 32, device="npu:0"),
        torch.zeros(17, 32, device=torch.device("npu", 0)), torch.tensor([[1.0] * 32] * 17, device="npu"),
        torch.randn(17, 32).npu(), torch.randn(17, 32).to("npu"), torch.randn(17, 32).to(device="npu:0"),
        torch.randn(17, 32, dtype=torch.float64).to("npu", torch.float32), torch.empty_like(torch.ones(17, 32), device="npu")]
for t in made:
    assert t.device.type == "cpu" and t.shape == (17, 32) and t.dtype == torch.float32, (t.device, t.shape, t.dtype)
x, y = made[0], made[3]
out = torch.empty(17, 32, device="npu")
scale_add(x, y, out)
torch.npu.synchronize()
torch.testing.assert_close(out, x * 2.0 + y)
print("ARGV", sys.argv[1:], "PATH0", sys.path[0] == os.path.dirname(os.path.abspath(__file__)))
""", "first", "--second")
    assert "ARGV ['first', '--second'] PATH0 True" in proc.stdout
    assert proc.stderr.count(NOTICE) == 1


def test_graph_capture_records_npu_kernels_and_replay_reruns_them(tmp_path):
    run(tmp_path, KERNEL + """
import torch, torch_npu

x, y = torch.randn(9, 32, device="npu"), torch.randn(9, 32, device="npu")
out = torch.zeros(9, 32, device="npu")
g = torch.npu.NPUGraph()
assert not torch_npu.npu.is_current_stream_capturing()
with torch.npu.graph(g):
    assert torch_npu.npu.is_current_stream_capturing()
    scale_add(x, y, out)
torch.testing.assert_close(out, x * 2.0 + y)      # capture ran the kernel eagerly
x.copy_(torch.randn(9, 32))
g.replay()
torch.testing.assert_close(out, x * 2.0 + y)      # replay launched it again on the new input
g2 = torch_npu.npu.NPUGraph()
g2.capture_begin(); scale_add(y, x, out); g2.capture_end()
g.replay()
torch.testing.assert_close(out, x * 2.0 + y)      # each graph keeps its own recording
g.reset()
try:
    g.replay()
except RuntimeError as e:
    assert "capture" in str(e)
else:
    raise AssertionError("replay after reset must fail")
""")


def test_npu_dispatch_key_registrations_serve_cpu_tensors(tmp_path):
    run(tmp_path, """
import torch

lib = torch.library.Library("emulate_demo", "DEF")
lib.define("twice(Tensor x) -> Tensor")

@torch.library.impl(lib, "twice", "NPU")
def twice(x):
    return x * 2

x = torch.arange(6.0, device="npu")
torch.testing.assert_close(torch.ops.emulate_demo.twice(x), x * 2)
""")


def test_a_format_cast_tensor_reports_the_npu_and_its_format(tmp_path):
    # scripts look at a tensor's storage format only once it is on the NPU (device.type "npu")
    run(tmp_path, KERNEL + """
import torch, torch_npu

w = torch.randn(17, 32, device="npu")
assert w.device.type == "cpu" and torch_npu.get_npu_format(w) == torch_npu.Format.ND
nz = torch_npu.npu_format_cast(w, 29)
assert nz.device == torch.device("npu", 0) and nz.device.type == "npu" and nz.is_npu and not w.is_npu
assert torch_npu.get_npu_format(nz) == 29 == torch_npu.Format.FRACTAL_NZ and nz.is_contiguous()
assert nz.data_ptr() == w.data_ptr() and torch.equal(nz, w)  # an alias in the logical layout
for derived in (nz.cpu(), nz + 1, nz.to(torch.float16), nz[0], nz.reshape(-1), torch.split(nz, 8)[0]):
    assert derived.device.type == "cpu" and torch_npu.get_npu_format(derived) == torch_npu.Format.ND
assert nz.mul_(2) is nz and torch.equal(w, nz)  # an in-place op returns the tensor itself
out = torch.empty(32, 32, device="npu")
scale_add(nz, nz, out)  # as upstream's from_torch: the kernel sees the NZ-aligned shape, 17 rows -> 32, zeros below
torch.testing.assert_close(out[:17], w * 3.0)
assert torch.equal(out[17:], torch.zeros(15, 32)) and nz.shape == (17, 32)
o = torch_npu.npu_format_cast(torch.full((17, 32), 7.0, device="npu"), 29)
src = torch.randn(32, 32, device="npu")
scale_add(src, src, o)  # a written NZ argument: its logical 17 rows come back, its shape stays
assert o.shape == (17, 32) and torch_npu.get_npu_format(o) == 29
torch.testing.assert_close(o.cpu(), src[:17] * 3.0)
m = torch.zeros(4, 4, device="npu")
assert torch_npu.npu_format_cast_(m, 29) is m and m.device.type == "npu" and torch_npu.get_npu_format(m) == 29
assert "format 29" in repr(nz)
""")


def test_torch_npu_quantisation_ops_follow_their_formulas(tmp_path):
    # checked against plain torch arithmetic written out here (float64, explicit tie handling)
    run(tmp_path, """
import torch, torch_npu

g = torch.Generator().manual_seed(0)
x = (torch.randn(5, 12, generator=g) * 3).bfloat16()
scale, offset = torch.rand(12, generator=g).bfloat16() + 0.5, torch.rand(12, generator=g).bfloat16()

# npu_quantize, multiply mode: round(x * scale + offset), saturated to int8
y = torch_npu.npu_quantize(x, scale, offset, torch.qint8, -1, False)
want = (x.double() * scale.double() + offset.double()).round().clamp(-128, 127).to(torch.int8)
assert y.dtype == torch.int8 and torch.equal(y, want)
big = torch_npu.npu_quantize(x * 1000, scale, None, torch.qint8, -1, False)
assert big.max() == 127 and big.min() == -128  # saturates instead of wrapping
# divide mode along dim 0, to uint8
col = torch.tensor([0.5, 1.0, 2.0, 4.0, 8.0])
u = torch_npu.npu_quantize(x.float().abs(), col, None, torch.quint8, 0)
assert u.dtype == torch.uint8 and torch.equal(u, (x.double().abs() / col.double()[:, None]).round().clamp(0, 255).to(torch.uint8))
ties = torch_npu.npu_quantize(torch.tensor([[0.5, 1.5, 2.5, -0.5]]), torch.ones(4), None, torch.qint8, -1, False)
assert ties.tolist() == [[0, 2, 2, 0]]  # to nearest, ties to even

# npu_dynamic_quant: per-row scale max|x| / 127
q, s = torch_npu.npu_dynamic_quant(x)
rows = x.double().abs().amax(-1) / 127
assert q.dtype == torch.int8 and s.dtype == torch.float32 and s.shape == (5,)
torch.testing.assert_close(s.double(), rows, rtol=1e-6, atol=0)
assert (q.double() - x.double() / rows[:, None]).abs().max() <= 0.5 + 1e-4
assert torch.equal(q.abs().amax(-1), torch.full((5,), 127, dtype=torch.int8))
sm = torch.rand(12, generator=g).bfloat16() + 0.5
q2, s2 = torch_npu.npu_dynamic_quant(x, smooth_scales=sm)
torch.testing.assert_close(s2.double(), (x.double() * sm.double()).abs().amax(-1) / 127, rtol=1e-6, atol=0)

# npu_quant_matmul: exact int32 accumulation, then dequantised in fp32
a = torch.randint(-128, 128, (4, 300), dtype=torch.int8, generator=g)
b = torch_npu.npu_format_cast(torch.randint(-128, 128, (300, 6), dtype=torch.int8, generator=g), 29)
acc = a.long() @ b.long()
assert torch.equal(torch_npu.npu_quant_matmul(a, b, torch.ones(6), output_dtype=torch.int32), acc.int())
w = torch.rand(6, generator=g) / 100
tok = torch.rand(4, generator=g)
bias = torch.randint(-50, 50, (6,), dtype=torch.int32, generator=g)
out = torch_npu.npu_quant_matmul(a, b, w, pertoken_scale=tok, bias=bias, output_dtype=torch.bfloat16)
assert out.dtype == torch.bfloat16
torch.testing.assert_close(out.double(), ((acc + bias).double() * w.double() * tok.double()[:, None]), rtol=8e-3, atol=0)
fb = torch.randn(6, generator=g).bfloat16()
out = torch_npu.npu_quant_matmul(a, b, w.bfloat16(), pertoken_scale=tok, bias=fb, output_dtype=torch.bfloat16)
torch.testing.assert_close(out.double(), acc.double() * w.bfloat16().double() * tok.double()[:, None] + fb.double(),
                           rtol=8e-3, atol=1e-2)
i8 = torch_npu.npu_quant_matmul(a, b, w / 10, offset=torch.full((6,), 3.0))
assert i8.dtype == torch.int8 and torch.equal(i8, (acc.double() * (w / 10).float().double() + 3).round().clamp(-128, 127).to(torch.int8))
bits = torch.tensor([2.0, 0.25], dtype=torch.float32).view(torch.int32).long() & 0xFFFFFFFF
two = torch.ones(2, 3, dtype=torch.int8)
assert torch_npu.npu_quant_matmul(two, torch.ones(3, 2, dtype=torch.int8), bits, output_dtype=torch.float16).tolist() == [[6.0, 0.75]] * 2

# npu_swiglu: silu(first half) * second half
h = torch.randn(3, 8, generator=g).bfloat16()
sw = torch_npu.npu_swiglu(h)
ref = torch.nn.functional.silu(h[:, :4].double()) * h[:, 4:].double()
assert sw.dtype == torch.bfloat16 and sw.shape == (3, 4)
torch.testing.assert_close(sw.double(), ref, rtol=8e-3, atol=1e-3)
for bad in (lambda: torch_npu.npu_swiglu(torch.randn(2, 5)), lambda: torch_npu.npu_quant_matmul(a.float(), b, w)):
    try:
        bad()
    except (ValueError, TypeError):
        pass
    else:
        raise AssertionError("must be rejected")
""")


def test_install_is_explicit_idempotent_and_runs_modules(tmp_path):
    (tmp_path / "mod_under_test.py").write_text(textwrap.dedent("""
        import sys, torch
        assert sys.argv[1:] == ["x"], sys.argv
        print("MODULE", torch.ones(2, device="npu").device)
    """))
    proc = subprocess.run([sys.executable, "-m", "pypto.emulate", "-m", "mod_under_test", "x"],
                          capture_output=True, text=True, cwd=tmp_path, timeout=300)
    assert proc.returncode == 0, proc.stderr
    assert "MODULE cpu" in proc.stdout and proc.stderr.count(NOTICE) == 1
    proc = run(tmp_path, """
import sys, torch
import pypto
assert not hasattr(torch, "npu"), "importing pypto must not emulate anything"
import pypto.emulate
assert not pypto.emulate.is_installed()
pypto.emulate.install(); pypto.emulate.install()
import torch_npu
print("OK", torch.zeros(1, device="npu").device)
""", emulate=False)
    assert "OK cpu" in proc.stdout and proc.stderr.count(NOTICE) == 1


def test_without_emulation_npu_mode_still_refuses(tmp_path):
    proc = run(tmp_path, KERNEL + """
import torch

try:
    import torch_npu
except ModuleNotFoundError:
    pass
else:
    raise AssertionError("torch_npu must not be importable without emulation")
x = torch.randn(8, 32)
out = torch.zeros(8, 32)
try:
    scale_add(x, x, out)
except pypto.BackendUnavailableError as e:
    assert isinstance(e, RuntimeError) and "no NPU backend" in str(e) and "pypto.emulate" in str(e)
    assert torch.count_nonzero(out) == 0
    print("REFUSED")
else:
    raise AssertionError("run_mode NPU must fail without emulation")
""", emulate=False)
    assert "REFUSED" in proc.stdout and NOTICE not in proc.stderr


@pytest.mark.parametrize("argv, code", [([], 2), (["-m"], 2), (["no_such_script.py"], 2), (["--help"], 0)])
def test_command_line_usage_errors(tmp_path, argv, code):
    proc = subprocess.run([sys.executable, "-m", "pypto.emulate", *argv], capture_output=True, text=True,
                          cwd=tmp_path, timeout=300)
    assert proc.returncode == code
    assert "usage: python -m pypto.emulate" in proc.stdout + proc.stderr or "can't open" in proc.stderr


def test_child_processes_get_the_emulated_npu_when_they_import_torch_npu(tmp_path):
    proc = run(tmp_path, """
import multiprocessing as mp
import subprocess
import sys


def child(queue):
    import torch, torch_npu  # a spawned child imports this module afresh
    queue.put((torch.ones(2, device="npu").device.type, torch_npu.npu is torch.npu))


if __name__ == "__main__":
    out = subprocess.run([sys.executable, "-c", "import torch, torch_npu; print(torch.zeros(1, device='npu:0').device)"],
                         capture_output=True, text=True)
    assert out.returncode == 0, out.stderr
    print("SUBPROCESS", out.stdout.strip())
    mp.set_start_method("spawn", force=True)
    queue = mp.Queue()
    p = mp.Process(target=child, args=(queue,))
    p.start(); p.join()
    print("SPAWNED", queue.get(timeout=60))
""")
    assert "SUBPROCESS cpu" in proc.stdout and "SPAWNED ('cpu', True)" in proc.stdout


def test_without_emulation_a_child_has_no_torch_npu(tmp_path):
    proc = run(tmp_path, """
import subprocess, sys
out = subprocess.run([sys.executable, "-c", "import torch_npu"], capture_output=True, text=True)
print("RC", out.returncode)
""", emulate=False)
    assert "RC 1" in proc.stdout


def test_explicit_sim_kernels_write_the_cost_model_swimlane(tmp_path):
    run(tmp_path, """
import json, os
import torch, torch_npu
import pypto

def body(x: pypto.Tensor([16, 32], pypto.DT_FP32), out: pypto.Tensor([16, 32], pypto.DT_FP32)):
    pypto.set_vec_tile_shapes(8, 32)
    out[:] = x + 1.0

default = pypto.frontend.jit(body)
sim = pypto.frontend.jit(runtime_options={"run_mode": pypto.RunMode.SIM})(body)
x, out = torch.randn(16, 32), torch.zeros(16, 32)
default(x, out)
assert not os.path.exists("output")  # an unset run mode stands for the NPU: nothing is written
sim(x, out)
torch.testing.assert_close(out, x + 1.0)
folder = pypto.artefacts.output_folder(create=False)
assert os.path.basename(folder).startswith("output_") and str(os.getpid()) in os.path.basename(folder)
with open(os.path.join(folder, "CostModelSimulationOutput", "merged_swimlane.json")) as f:
    trace = json.load(f)
names = [e["name"] for e in trace["traceEvents"] if e["ph"] == "X" and e.get("cat") in ("AIC", "AIV")]
assert len(names) == sim.last_run.timeline.stats["tasks"] and trace["otherData"]["kernel"] == "body"
with pypto.options(runtime_options={"run_mode": pypto.RunMode.SIM}):  # chosen by a scope
    default(x, out)
assert sorted(os.listdir(folder)) == ["CostModelSimulationOutput", "dyn_topo.txt", "program.json"]
""")


def test_profiler_stand_in_accepts_the_api_and_records_nothing(tmp_path):
    run(tmp_path, """
import os
import torch_npu
cfg = torch_npu.profiler._ExperimentalConfig(export_type=[torch_npu.profiler.ExportType.Text],
                                             profiler_level=torch_npu.profiler.ProfilerLevel.Level1,
                                             aic_metrics=torch_npu.profiler.AiCMetrics.PipeUtilization)
with torch_npu.profiler.profile(activities=[torch_npu.profiler.ProfilerActivity.NPU], experimental_config=cfg,
                                schedule=torch_npu.profiler.schedule(wait=0, warmup=0, active=1, repeat=1),
                                on_trace_ready=torch_npu.profiler.tensorboard_trace_handler("prof")) as prof:
    prof.step()
assert not os.path.exists("prof") and prof.step_num == 1
""")


def test_npu_trans_quant_param_packs_masked_fp32_scales_in_int64():
    import torch

    from pypto.emulate.torch_npu.quant import npu_trans_quant_param

    scales = torch.tensor([[1.0, 0.5, 1 + 2 ** -11, -3.25]])
    packed = npu_trans_quant_param(scales)
    assert packed.dtype == torch.int64 and packed.shape == (1, 4)
    # the low 32 bits are the float32 bits, the 13 lowest mantissa bits cleared (1 + 2**-11 -> 1.0)
    assert torch.equal(packed.to(torch.int32).view(torch.float32), torch.tensor([[1.0, 0.5, 1.0, -3.25]]))
    assert (packed >= 0).all() and (packed < 2 ** 32).all()
    assert npu_trans_quant_param(torch.tensor([2.0])).shape == (1,)
    with pytest.raises(TypeError):
        npu_trans_quant_param(torch.tensor([1.0], dtype=torch.float16))
    with pytest.raises(ValueError):
        npu_trans_quant_param(torch.ones(2, 3))
    with pytest.raises(NotImplementedError):
        npu_trans_quant_param(torch.ones(3), torch.zeros(3))


def test_npu_rand_fills_integer_dtypes_with_the_discrete_uniform_over_0_1(tmp_path):
    run(tmp_path, """
import pytest, torch

for dtype in (torch.int32, torch.int64, torch.int16, torch.int8, torch.uint8):
    ids = torch.rand((3, 5), dtype=dtype, device="npu:0")
    assert ids.dtype == dtype and ids.shape == (3, 5)
    assert torch.equal(ids, torch.zeros(3, 5, dtype=dtype))
# floating dtypes draw exactly what CPU torch draws from the same generator state
torch.manual_seed(7)
on_npu = torch.rand((4, 6), dtype=torch.bfloat16, device="npu")
torch.manual_seed(7)
torch.testing.assert_close(on_npu, torch.rand((4, 6), dtype=torch.bfloat16), rtol=0, atol=0)
g1, g2 = torch.Generator().manual_seed(3), torch.Generator().manual_seed(3)
torch.testing.assert_close(torch.rand(8, generator=g1, device="npu"), torch.rand(8, generator=g2),
                           rtol=0, atol=0)
# the CPU refuses integer dtypes, and the device's uniform has no bool
with pytest.raises(NotImplementedError, match="check_uniform_bounds"):
    torch.rand(3, dtype=torch.int32)
with pytest.raises(NotImplementedError, match="check_uniform_bounds"):
    torch.rand(3, dtype=torch.bool, device="npu")
""")


def test_topk_returns_the_npu_order_sorted_and_ties_lowest_index_first(tmp_path):
    run(tmp_path, """
import torch

def npu_order(row, k, largest):
    # written out: larger (smaller) first, equal values by lower index
    keyed = sorted(range(len(row)), key=lambda i: ((-row[i]) if largest else row[i], i))
    return keyed[:k]

torch.manual_seed(0)
# few distinct values, so every row has ties, and the k-th value is tied across the cut
x = torch.randint(0, 6, (16, 160)).float() / 4
for largest in (True, False):
    want = torch.tensor([npu_order(r, 8, largest) for r in x.tolist()])
    for got in (torch.topk(x, 8, -1, largest, False),
                torch.topk(x, k=8, dim=-1, largest=largest, sorted=False),
                torch.topk(x, 8, largest=largest),
                x.topk(8, -1, largest, True),
                x.topk(8, dim=-1, largest=largest, sorted=False)):
        assert torch.equal(got.indices, want)
        assert torch.equal(got.values, x.gather(-1, want))
# another dim, and out=
values, indices = torch.empty(0), torch.empty(0, dtype=torch.long)
got = torch.topk(x.t(), 3, dim=0, out=(values, indices))
want = torch.tensor([npu_order(r, 3, True) for r in x.tolist()]).t()
assert torch.equal(indices, want) and torch.equal(got.indices, want)
assert torch.equal(values, x.t().gather(0, want))
""")


def test_core_limits_cut_the_cores_kernels_run_on(tmp_path):
    # upstream's runtime launches min(cube, vector // 2) AIC cores and twice as many AIV cores,
    # a stream's limit within its device's, a limit above the chip ignored
    run(tmp_path, """
import json, os
import pytest, torch, torch_npu
import pypto

@pypto.frontend.jit(runtime_options={"run_mode": pypto.RunMode.NPU}, debug_options={"runtime_debug_mode": 1})
def mm_add(a: pypto.Tensor([256, 256], pypto.DT_FP16), b: pypto.Tensor([256, 256], pypto.DT_FP16),
           c: pypto.Tensor([256, 256], pypto.DT_FP32), out: pypto.Tensor([256, 256], pypto.DT_FP32)):
    pypto.set_cube_tile_shapes([32, 32], [32, 32], [32, 32])
    pypto.set_vec_tile_shapes(32, 32)
    out[:] = pypto.matmul(a, b, pypto.DT_FP32) + c

def cores_used():
    a, b = torch.randn(256, 256).half(), torch.randn(256, 256).half()
    c, out = torch.randn(256, 256), torch.zeros(256, 256)
    mm_add(a, b, c, out)
    torch.testing.assert_close(out, a.float() @ b.float() + c, rtol=1e-3, atol=1e-3)
    with open(os.path.join(pypto.artefacts.output_folder(), "tilefwk_L1_prof_data.json")) as f:
        data = json.load(f)
    return (sum(1 for core in data if core["coreType"] == "AIC"), sum(1 for core in data if core["coreType"] == "AIV"))

stream = torch.npu.current_stream()
full = torch.npu.get_device_limit(0)
assert full == {"cube_core_num": 24, "vector_core_num": 48}
aic, aiv = cores_used()
assert aic > 8 and aiv > 16, (aic, aiv)  # the kernel spreads over more cores than the limits below allow
torch.npu.set_stream_limit(stream, 8, 27)
assert torch.npu.get_stream_limit(stream) == {"cube_core_num": 8, "vector_core_num": 27}
aic, aiv = cores_used()
assert aic == 8 and aiv <= 16, (aic, aiv)
torch.npu.set_device_limit(0, 3, 16)  # the tighter of the stream's and the device's
aic, aiv = cores_used()
assert aic == 3 and aiv <= 6, (aic, aiv)
torch.npu.set_device_limit(0, vector_num=4)  # -1 / unset keeps the cube count: min(3, 4 // 2) = 2
assert torch.npu.get_device_limit(0) == {"cube_core_num": 3, "vector_core_num": 4}
assert cores_used()[0] == 2
torch.npu.set_device_limit(0, 100, 100)
torch.npu.reset_stream_limit(stream)
assert torch.npu.get_device_limit(0) == full  # above the chip: ignored
assert cores_used()[0] > 8
other = torch.npu.Stream()
torch.npu.set_stream_limit(other, 1, 2)  # kernels launch on the current stream only
assert torch.npu.get_stream_limit(other)["cube_core_num"] == 1 and cores_used()[0] > 8
assert torch.npu.get_device_name().startswith("Ascend910B")  # the SoC stays
for bad in (0, -2, 1.5, True):
    with pytest.raises(ValueError, match="cube_num"):
        torch.npu.set_device_limit(0, bad, 8)
with pytest.raises(TypeError, match="Stream"):
    torch.npu.set_stream_limit(0, 8, 16)
""")
