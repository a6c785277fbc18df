"""Build and execute the tutorial notebooks (notebooks/*.ipynb) from the cell lists below.

    .venv/bin/python tools/make_notebooks.py          # rebuild and execute all
    .venv/bin/python tools/make_notebooks.py 00 03    # only these

Cells whose output is a picture or a widget start with ``# NBVAL_IGNORE_OUTPUT``; every other
text output is compared strictly by ``pytest --nbval`` (tests/nbval_sanitize.cfg normalises
timings and addresses). Re-run this script whenever pypto or pypto_lab changes what a notebook
shows.
"""

from __future__ import annotations

import pathlib
import sys

import nbformat
from nbclient import NotebookClient

ROOT = pathlib.Path(__file__).resolve().parents[1]
OUT = ROOT / "notebooks"
IGNORE = "# NBVAL_IGNORE_OUTPUT\n"

SETUP = """import torch
import pypto
import pypto_lab

torch.manual_seed(0)
torch.set_printoptions(precision=4)"""

NOTEBOOKS = {
    "00_quickstart": [
        ("md", """# 00 · Quickstart

A PyPTO kernel is a Python function decorated with `@pypto.jit`. Its tensor parameters are annotated
with a shape (`pypto.DYNAMIC` dims may change between calls without recompiling) and a dtype.
pypto compiles it into tiled leaf kernels and runs them on a CPU simulator of an Ascend-like NPU:
you get the real numbers and a modelled schedule."""),
        ("code", SETUP),
        ("md", "## Hello world: a tiled add over a dynamic batch"),
        ("code", """@pypto.jit
def add(x: pypto.Tensor([pypto.DYNAMIC, 64], pypto.DT_FP32),
        y: pypto.Tensor([pypto.DYNAMIC, 64], pypto.DT_FP32),
        out: pypto.Tensor([pypto.DYNAMIC, 64], pypto.DT_FP32)):
    pypto.set_vec_tile_shapes(32, 64)
    for b in pypto.loop(pypto.ceildiv(x.shape[0], 32)):
        rows = slice(b * 32, (b + 1) * 32)
        out[rows, :] = x[rows, :] + y[rows, :]

x, y = torch.randn(100, 64), torch.randn(100, 64)
out = torch.empty(100, 64)
add(x, y, out)
print("matches torch:", torch.allclose(out, x + y))"""),
        ("md", "A second call with another batch size reuses the compiled kernel: the batch is `DYNAMIC`."),
        ("code", """x2, y2 = torch.randn(7, 64), torch.randn(7, 64)
out2 = torch.empty(7, 64)
add(x2, y2, out2)
print("matches torch:", torch.allclose(out2, x2 + y2))
info = add.cache_info()
print(f"hits={info.hits} misses={info.misses} versions={len(info.entries)}")
print(info.entries[0].key)"""),
        ("md", "## What the compiler made of it\n\nThe traced Tensor Graph, with the valid shape that clips the last tile:"),
        ("code", """compiled = add.inspect(x, y, out)
print(compiled.text())"""),
        ("code", """for p in compiled.passes:
    print(f"{p.name:24} {p.level}")"""),
        ("md", "One leaf kernel serves every tile; this is its PTO-style listing:"),
        ("code", """leaf = next(iter(compiled.source))
print(compiled.source[leaf])"""),
        ("md", "## The simulated schedule\n\n`add.last_run.timeline` is simulated the first time you look at it."),
        ("code", """tl = add.last_run.timeline
s = tl.stats
print("tasks:", s["tasks"], "| device tasks:", s["device_tasks"])
print("makespan cycles:", s["makespan_cycles"])"""),
        ("md", "## The dashboard\n\n`pypto_lab.show(kernel)` opens every stage in one place: graph, passes, code, cache, "
               "timeline and a Tune tab that re-simulates with other runtime options."),
        ("code", IGNORE + "pypto_lab.show(add)"),
    ],
    "01_dynamic_shapes_and_cache": [
        ("md", """# 01 · Dynamic shapes and the compile cache

A dim annotated `pypto.DYNAMIC` never recompiles, `pypto.STATIC` compiles a new version per size,
an int accepts only that size, and `...` makes the remaining dims static. The cache tells you why
each compile happened."""),
        ("code", SETUP),
        ("code", """@pypto.jit
def scale(x: pypto.Tensor([pypto.DYNAMIC, pypto.STATIC], pypto.DT_FP32),
          out: pypto.Tensor([pypto.DYNAMIC, ...], pypto.DT_FP32),
          factor=2.0):
    pypto.set_vec_tile_shapes(8, 16)
    for b in pypto.loop(pypto.ceildiv(x.shape[0], 8)):
        out[b * 8:(b + 1) * 8, :] = x[b * 8:(b + 1) * 8, :] * factor

def call(rows, cols, **kw):
    x = torch.randn(rows, cols)
    out = torch.empty(rows, cols)
    scale(x, out, **kw)
    return scale.last_run.cache_hit

for rows, cols, kw in [(5, 16, {}), (40, 16, {}), (3, 32, {}), (9, 16, {}), (9, 16, {"factor": 3.0})]:
    print(f"x[{rows}, {cols}] {kw}: cache hit = {call(rows, cols, **kw)}")"""),
        ("md", "Every call is logged with the reason for each compile:"),
        ("code", """for entry in scale.cache_info().calls:
    print("hit " if entry.hit else "MISS", "|", entry.reason or "")"""),
        ("md", "## Errors point at your code\n\nA fixed dim that does not match, or a wrong dtype, is "
               "reported before anything runs, naming the parameter:"),
        ("code", """@pypto.jit
def fixed(x: pypto.Tensor([4, 128], pypto.DT_FP32), out: pypto.Tensor([4, 128], pypto.DT_FP32)):
    out[:] = x + 1.0

try:
    fixed(torch.randn(4, 64), torch.empty(4, 64))
except pypto.PyptoError as e:
    print(type(e).__name__)
    print(str(e).splitlines()[0])
    print(str(e).splitlines()[1])"""),
        ("code", """try:
    fixed(torch.randn(4, 128, dtype=torch.float16), torch.empty(4, 128))
except TypeError as e:   # pypto errors also derive from the matching builtin
    print(type(e).__name__, "|", str(e).splitlines()[0])"""),
        ("md", "Named dynamic dims must agree across tensors:"),
        ("code", """N = pypto.frontend.dynamic("N")

@pypto.jit
def pair(a: pypto.Tensor([N, 8], pypto.DT_FP32), b: pypto.Tensor([N, 8], pypto.DT_FP32),
         out: pypto.Tensor([N, 8], pypto.DT_FP32)):
    out[:] = a + b

try:
    pair(torch.randn(3, 8), torch.randn(4, 8), torch.empty(3, 8))
except ValueError as e:
    print(str(e).splitlines()[0])"""),
        ("code", IGNORE + "pypto_lab.show(scale)"),
    ],
    "02_compiler_passes": [
        ("md", """# 02 · The compiler passes

A kernel goes through the Tensor Graph, the Tile Graph (every op expanded into tiles, with copies
between GM and the on-chip buffers), the Block Graph (fused leaf functions, deduplicated) and the
Execute Graph (root functions calling leaves). Each pass leaves a snapshot."""),
        ("code", SETUP),
        ("code", """@pypto.jit
def softmax_rows(x: pypto.Tensor([pypto.DYNAMIC, 128], pypto.DT_FP32),
                 out: pypto.Tensor([pypto.DYNAMIC, 128], pypto.DT_FP32)):
    pypto.set_vec_tile_shapes(16, 128)
    for b in pypto.loop(pypto.ceildiv(x.shape[0], 16)):
        rows = slice(b * 16, (b + 1) * 16)
        out[rows, :] = pypto.softmax(x[rows, :] * 2.0, -1)

x = torch.randn(50, 128)
out = torch.empty(50, 128)
softmax_rows(x, out)
print("matches torch:", torch.allclose(out, torch.softmax(x * 2.0, -1), atol=1e-6))
compiled = softmax_rows.inspect(x, out)"""),
        ("code", """for i, p in enumerate(compiled.passes):
    print(i, p.name, "->", p.level)"""),
        ("md", "### Tile Graph after memory assignment: copies in and out of UB around the fused ops"),
        ("code", """print(next(p.text for p in compiled.passes if p.name == "assign_memory"))"""),
        ("md", "### Execute Graph: one root function per loop body, calling one leaf per tile"),
        ("code", """print(next(p.text for p in compiled.passes if p.name == "execute_graph"))"""),
        ("md", "### Generated code: the PTO listing and the executable form of the leaf"),
        ("code", """leaf = next(iter(compiled.source))
print(compiled.source[leaf])
print(compiled.source[leaf].cpu)"""),
        ("md", "A matmul becomes an AIC (cube) leaf per output tile; the vector work around it runs on AIV "
               "leaves, with dependencies across the core types:"),
        ("code", """@pypto.jit
def linear_relu(x: pypto.Tensor([64, 64], pypto.DT_FP16), w: pypto.Tensor([64, 32], pypto.DT_FP16)):
    pypto.set_cube_tile_shapes([32, 32], [32, 64], [32, 32])
    pypto.set_vec_tile_shapes(32, 32)
    return pypto.relu(pypto.matmul(x, w, pypto.DT_FP32))

xh, wh = torch.randn(64, 64).half(), torch.randn(64, 32).half()
y = linear_relu(xh, wh)
print("matches torch:", torch.allclose(y, torch.relu(xh.float() @ wh.float()), atol=1e-3))
print(next(p.text for p in linear_relu.inspect(xh, wh).passes if p.name == "execute_graph"))"""),
        ("code", IGNORE + "pypto_lab.show(softmax_rows)"),
        ("md", """## Which pass broke the numbers?

`pypto.bisect_passes(kernel, *args)` runs the program each pass leaves on the same inputs (a
Tensor Graph by the reference executor, a Tile or Block Graph with its leaves interpreted op by
op, the last one with the generated code) and compares every op it can see with the reference.
Pass verify (`verify_options={"enable_pass_verify": True}`) does the same when it finds a
mismatch: the error names the first pass whose program gives other numbers, and the Passes tab
marks it, with the values side by side."""),
        ("code", """print("every pass keeps the numbers:", pypto.bisect_passes(softmax_rows, x, out).ok)"""),
        ("md", "A deliberately broken pass (every `add` of the Tile Graph made to add 3) is found:"),
        ("code", """from types import MappingProxyType
from pypto.passes import pipeline

@pypto.jit(verify_options={"enable_pass_verify": True})
def shifted(x: pypto.Tensor([pypto.DYNAMIC, 64], pypto.DT_FP32),
            out: pypto.Tensor([pypto.DYNAMIC, 64], pypto.DT_FP32)):
    pypto.set_vec_tile_shapes(16, 64)
    for b in pypto.loop(pypto.ceildiv(x.shape[0], 16)):
        out[b * 16:(b + 1) * 16, :] = x[b * 16:(b + 1) * 16, :] + 1.0

real = pipeline.assign_memory

def broken_assign_memory(ops, *args, **kw):
    ops, groups = real(ops, *args, **kw)
    return [op.replace(attrs=MappingProxyType({**op.attrs, "scalar": 3.0})) if op.kind == "add" else op
            for op in ops], groups

pipeline.assign_memory = broken_assign_memory
try:
    shifted(torch.randn(40, 64), torch.zeros(40, 64))
except pypto.PyptoError as e:
    print(type(e).__name__)
    bisection = e.bisection
finally:
    pipeline.assign_memory = real
print("culprit:", bisection.culprit, "| first wrong values:", bisection.first_bad_value.where.split(" (")[0])
for c in bisection.checks:
    print(f"#{c.index} {c.name:<24} {({True: 'same numbers', False: 'different numbers'}).get(c.ok, 'not run')}")"""),
        ("code", IGNORE + 'pypto_lab.show(shifted, tabs="passes")'),
    ],
    "03_runtime_options": [
        ("md", """# 03 · Runtime options and schedules

The runtime options change how the compiled program is scheduled, not what it computes:
`device_sched_mode` (0 FIFO, 1 L2 affinity, 2 fair, 3 both), `stitch_function_max_num` (root
instances per device task) and `valid_shape_optimize` (static main blocks, dynamic tails). The
`%%pypto` magic applies them to every kernel a cell calls and shows its dashboard."""),
        ("code", SETUP + "\n%load_ext pypto_lab"),
        ("md", "A GELU over 4096 rows: each loop iteration handles 512 rows as 32 tiles of 16 rows, so "
               "every root instance gives the schedule threads 32 tasks to place on the 48 vector cores."),
        ("code", """@pypto.jit
def gelu_rows(x: pypto.Tensor([pypto.DYNAMIC, 256], pypto.DT_FP32),
              out: pypto.Tensor([pypto.DYNAMIC, 256], pypto.DT_FP32)):
    pypto.set_vec_tile_shapes(16, 256)
    for b in pypto.loop(pypto.ceildiv(x.shape[0], 512)):
        rows = slice(b * 512, (b + 1) * 512)
        t = x[rows, :]
        out[rows, :] = t * pypto.sigmoid(t * 1.702)

x = torch.randn(4096, 256)
out = torch.empty(4096, 256)"""),
        ("code", """%%pypto --sched-mode 1 --stitch 8 --show timeline,tune
# NBVAL_IGNORE_OUTPUT  (the dashboard is a widget)
gelu_rows(x, out)
print("matches torch:", torch.allclose(out, x * torch.sigmoid(x * 1.702), atol=1e-6))"""),
        ("md", "## The four scheduling modes side by side\n\nThe same call, re-simulated under each mode "
               "(the numbers are not recomputed):"),
        ("code", """run = gelu_rows.last_run
for mode in range(4):
    s = run.simulate({"device_sched_mode": mode}).stats
    print(f"mode {mode}: makespan {s['makespan_cycles']:>7} cycles, AIV utilization {s['utilization']['AIV']:.1%}, "
          f"tasks per schedule thread {s['dispatches_per_thread']}")"""),
        ("md", "Fair scheduling (2, 3) spreads the dispatches more evenly over the schedule threads at the "
               "price of extra bookkeeping per task; L2 affinity (1, 3) matters when consumers read what "
               "producers just wrote (see `tests/timing/test_sched_modes.py`)."),
        ("md", "## Stitching: fewer roots per device task means more submissions"),
        ("code", """for stitch in (1, 2, 4, 8):
    s = run.simulate({"stitch_function_max_num": stitch}).stats
    print(f"stitch {stitch:>3}: {s['device_tasks']:>3} device tasks, makespan {s['makespan_cycles']} cycles")"""),
        ("md", "## valid_shape_optimize: static main blocks, a dynamic tail"),
        ("code", """@pypto.jit(runtime_options={"valid_shape_optimize": 1})
def gelu_vso(x: pypto.Tensor([pypto.DYNAMIC, 256], pypto.DT_FP32),
             out: pypto.Tensor([pypto.DYNAMIC, 256], pypto.DT_FP32)):
    pypto.set_vec_tile_shapes(8, 256)
    for b in pypto.loop(pypto.ceildiv(x.shape[0], 8)):
        rows = slice(b * 8, (b + 1) * 8)
        t = x[rows, :]
        out[rows, :] = t * pypto.sigmoid(t * 1.702)

xt = torch.randn(300, 256)   # 37 full tiles of 8 rows and a 4-row tail
out_t = torch.empty(300, 256)
gelu_vso(xt, out_t)
print("matches torch:", torch.allclose(out_t, xt * torch.sigmoid(xt * 1.702), atol=1e-6))
compiled = gelu_vso.inspect(xt, out_t)
print(sorted(compiled.source[next(iter(compiled.source))].variants))
variants = [e.variant for e in gelu_vso.last_run.timeline.events]
print("main tasks:", variants.count("main"), "| tail tasks:", variants.count("tail"))"""),
        ("code", IGNORE + "pypto_lab.show(gelu_vso)"),
    ],
    "04_real_kernels": [
        ("md", """# 04 · Real kernels

Softmax, LayerNorm, an FFN and attention, each checked against torch, with its timeline. The same
kernels live in `examples/` and run in the test suite."""),
        ("code", SETUP + """
import sys, pathlib
sys.path.insert(0, str(pathlib.Path.cwd().parent / "examples"))"""),
        ("md", "## Softmax over a dynamic batch"),
        ("code", """@pypto.jit
def softmax(x: pypto.Tensor([pypto.DYNAMIC, 256], pypto.DT_FP32),
            out: pypto.Tensor([pypto.DYNAMIC, 256], pypto.DT_FP32)):
    pypto.set_vec_tile_shapes(16, 256)
    for b in pypto.loop(pypto.ceildiv(x.shape[0], 16)):
        rows = slice(b * 16, (b + 1) * 16)
        out[rows, :] = pypto.softmax(x[rows, :], -1)

x = torch.randn(100, 256)
out = torch.empty(100, 256)
softmax(x, out)
print("softmax matches torch:", torch.allclose(out, torch.softmax(x, -1), atol=1e-6))
print("tasks:", softmax.last_run.timeline.stats["tasks"])"""),
        ("code", IGNORE + "softmax.last_run.timeline"),
        ("md", "## LayerNorm and RMSNorm in bf16"),
        ("code", """import norms
err_rms, err_ln = norms.check(37)
print("RMSNorm ok:", err_rms < 0.05, "| LayerNorm ok:", err_ln < 0.05)
print("tasks:", norms.layer_norm.last_run.timeline.stats["tasks"])"""),
        ("md", "## FFN: matmul on the cube, SiLU on the vector cores"),
        ("code", """import ffn
print("FFN ok:", ffn.check(70) < 0.05)
print(sorted({leaf.core for leaf in ffn.ffn.last_run.compiled.lowered.leaves.values()}))"""),
        ("code", IGNORE + "ffn.ffn.last_run.timeline"),
        ("md", "## Attention with online softmax over a dynamic sequence"),
        ("code", """import flash_attention
for batch, seq in ((2, 100), (1, 200)):
    print(f"batch {batch}, seq {seq}: ok =", flash_attention.check(batch, seq) < 1e-4)
print("compiles:", flash_attention.flash_attention.cache_info().misses)
s = flash_attention.flash_attention.last_run.timeline.stats
print("tasks:", s["tasks"], "| device tasks:", s["device_tasks"])"""),
        ("code", IGNORE + "pypto_lab.show(flash_attention.flash_attention)"),
        ("md", """Every pass keeps its numbers on a sequence that ends in a partial block (100 = 3 query
blocks of 32 and 4 rows): `pypto.bisect_passes` runs each pass's program, assign_memory's in its
own fused groups. The rows past the tail that the device computes from memory nothing wrote are
counted, not compared (the kernel's outputs are compared whole)."""),
        ("code", """g = torch.Generator().manual_seed(0)
q, k, v = (torch.randn(2, 100, flash_attention.D, generator=g) for _ in range(3))
b = pypto.bisect_passes(flash_attention.flash_attention, q, k, v, torch.zeros(2, 100, flash_attention.D))
print("every pass keeps the numbers:", b.ok, "| passes not run:", [c.name for c in b.checks if c.ok is None])
print("passes with elements from unwritten memory not compared:",
      [c.name for c in b.checks if any(v.unspecified for v in c.values)])"""),
        ("md", """## Why did a task start when it did?

`timeline.explain(task)` gives a task's start reason: the dependency it waited for (and the GM
tensor they share), the core still busy with the task before it, the schedule thread's queue, or
the launch and stitching. Following the causes back is "why is this late"; from the task that
ends last it is the critical path, whose runs and waits add up to the makespan. In the Timeline
tab, click a bar: the details say why it started then, and "why is this late?" draws the chain.
Tick "buffer tracks" to see, under each core, the bytes of UB / L1 / L0A / L0B / L0C live over
time with the capacity dashed (hover a track for the op, its buffers and the kernel line)."""),
        ("code", """tl = flash_attention.flash_attention.last_run.timeline
lowered = flash_attention.flash_attention.last_run.compiled.lowered
last = max(range(len(tl.events)), key=lambda k: int(tl.events.end[k]))
print(tl.explain(last, lowered).text)
chain = tl.critical_chain()
print(sum(1 for s in chain if s.task is not None), "tasks on the critical path; its", len(chain),
      "segments add up to the makespan:", sum(s.cycles for s in chain) == tl.stats["makespan_cycles"])
for s in chain[-4:]:
    print(f"{s.start:>9,} .. {s.end:>9,} cycles  {s.what}")"""),
        ("md", """## A one-page report

`pypto_lab.save_html(kernel, path)` writes the dashboard as one self-contained HTML file (summary,
graph, passes with diffs, code, cache and the interactive timeline) that opens offline, without
Python; the dashboard's "save HTML report" button does the same."""),
        ("code", """import os, tempfile
path = pypto_lab.save_html(flash_attention.flash_attention,
                           os.path.join(tempfile.gettempdir(), "flash_attention_report.html"))
print("under 2 MB:", os.path.getsize(path) < 2_000_000)"""),
    ],
    "05_tuning": [
        ("md", """# 05 · Tuning sweeps

Which block sizes and runtime options make a kernel fastest? Upstream answers that on hardware, by
hand. Here the timing simulator gives a makespan for any configuration, so `pypto.tune` can search
for it: it compiles a version only when a compile-affecting value (a tile parameter, a pass option)
changes, re-simulates the cached call for runtime-only options, and checks each compiled version's
numbers once against a baseline (`baseline=`: a configuration or a torch function; by default the
kernel's defaults; a sweep with neither is refused), comparing the outputs the baseline writes,
exactly first, so a tile choice that breaks the numbers, or leaves part of an output unwritten, is
rejected, not ranked."""),
        ("code", SETUP + """
import sys, pathlib, tempfile
sys.path.insert(0, str(pathlib.Path.cwd().parent / "examples"))
import pypto.tune as tune
import flash_attention as fa"""),
        ("md", """## The kernel and its default configuration

`examples/flash_attention.py` takes its query and KV block sizes as compile-time parameters
(`BQ=32`, `BK=64`). `tune.render` shows a configuration as the decorator, signature and tile
calls to paste; with no tuned values, the kernel as it is:"""),
        ("code", """print(tune.render(fa.flash_attention, {}))"""),
        ("code", """q, k, v = (torch.randn(1, 256, 64) for _ in range(3))
out = torch.zeros(1, 256, 64)
fa.flash_attention(q, k, v, out)
print("matches torch:", torch.allclose(out, fa.reference(q, k, v), atol=1e-4))
print("default makespan:", fa.flash_attention.last_run.timeline.stats["makespan_cycles"], "cycles")"""),
        ("md", """## A grid sweep over block sizes and runtime options

The space: 4 query block sizes x 3 KV block sizes (compile-affecting: 12 compiles) x 4 scheduling
modes x 2 stitch limits (runtime-only: re-simulations of the cached call), on one call shape.
`runner="inprocess"` keeps the notebook quick; the default runner is Dask (below)."""),
        ("code", """shape = {name: (1, 256, 64) for name in ("q", "k", "v", "out")}
space = tune.space(shape, BQ=[16, 32, 64, 128], BK=[32, 64, 128],
                   options={"device_sched_mode": [0, 1, 2, 3], "stitch_function_max_num": [8, 128]})
results = tune.sweep(fa.flash_attention, space, runner="inprocess")
print(f"{len(results)} trials of {space.size}, {results.evaluator.compiles} compiles, "
      f"{len(results.ok)} ok, {len(results.failed)} not ok")
print(results.table(8, timing=False))"""),
        ("md", "## Best against default"),
        ("code", """default = next(r for r in results if r.config == {"BQ": 32, "BK": 64, "device_sched_mode": 0,
                                                    "stitch_function_max_num": 128})
best = results.best
print("default:", default.makespan_cycles, "cycles   best:", best.makespan_cycles, "cycles", best.config)
print(f"the best configuration is {default.makespan_cycles / best.makespan_cycles:.2f}x faster")"""),
        ("md", """### Why: read it from the two timelines

Each task costs a schedule AICPU thread a dispatch and a completion, and the AI cores are mostly
idle in both schedules (utilisation 9-26%): the makespan is bound by the schedule threads'
per-task work, not by the cores. Larger blocks make far fewer, larger tasks, so that work shrinks
about as much as the task count; and the online-softmax chain over KV blocks has fewer links, so
the critical path is shorter too. The figures, from the simulated timelines:"""),
        ("code", """import collections

def aicpu_work(tl):
    work = collections.Counter()
    for span in tl.aicpu:
        if span.thread != "control":
            work[span.name] += span.end - span.start
    return work

timelines = {}
for name, rec in (("default", default), ("best", best)):
    tl = timelines[name] = results.evaluator.timeline(rec.config)
    s, work = tl.stats, aicpu_work(tl)
    busiest = max(s["dispatches_per_thread"])
    print(f"{name:8} tasks {s['tasks']:5}  critical path {s['critical_path_cycles']:7}  "
          f"AIV busy {s['utilization']['AIV']:.0%}  schedule-thread work {sum(work.values()):8} cycles "
          f"(busiest thread: {busiest} dispatches)  makespan {s['makespan_cycles']}")
d, b = timelines["default"].stats, timelines["best"].stats
print(f"tasks {d['tasks'] / b['tasks']:.1f}x fewer, schedule work "
      f"{sum(aicpu_work(timelines['default']).values()) / sum(aicpu_work(timelines['best']).values()):.1f}x less, "
      f"critical path {d['critical_path_cycles'] / b['critical_path_cycles']:.1f}x shorter")"""),
        ("code", IGNORE + """timelines["default"]"""),
        ("code", IGNORE + """timelines["best"]"""),
        ("md", """## Use the best configuration

`tune.render` gives the text to paste; `tune.apply` returns a kernel compiled with it (the tuned
parameters become its defaults, the options its jit options)."""),
        ("code", """print(tune.render(fa.flash_attention, best))"""),
        ("code", """tuned = tune.apply(fa.flash_attention, best)
tuned(q, k, v, out)
print("matches torch:", torch.allclose(out, fa.reference(q, k, v), atol=1e-4))
print(f"makespan: {tuned.last_run.timeline.stats['makespan_cycles']} cycles (the sweep said {best.makespan_cycles})")"""),
        ("md", """## A sampler for larger spaces

With the AICPU thread count added the space has 432 configurations; optuna's TPE sampler
(seeded, so repeatable) looks at 40 of them and lands near the best."""),
        ("code", """big = tune.space(shape, BQ=[16, 32, 64, 128], BK=[32, 64, 128],
                 options={"device_sched_mode": [0, 1, 2, 3], "stitch_function_max_num": [1, 8, 128],
                          "launch_sched_aicpu_num": [1, 3, 5]})
sampled = tune.sweep(fa.flash_attention, big, strategy="tpe", budget=40, seed=0, runner="inprocess")
print(f"{len(sampled)} of {big.size} configurations tried; best {sampled.best.makespan_cycles} cycles:",
      sampled.best.config)"""),
        ("md", """## Results: CSV, and a store to resume from

`results.to_csv()` gives one row per trial (failed ones with their error). With `store=`, each
trial is appended to a journal (one JSON line per trial, after a first line naming what the
results depend on: the kernel and a hash of its source, the shapes, the space, the machine model
and the baseline). Running the same sweep again skips the finished trials (the budget counts
them: 20 in all), with new trial numbers; a sweep of other shapes into the same file is refused,
never answered from trials of another problem."""),
        ("code", """store = str(pathlib.Path(tempfile.mkdtemp()) / "sweep.jsonl")
first = tune.sweep(fa.flash_attention, space, budget=10, store=store, runner="inprocess")
new = []
again = tune.sweep(fa.flash_attention, space, budget=20, store=store, runner="inprocess",
                   on_trial=lambda r, _: new.append(r))
print(len(first), "trials, then", len(new), "more on resume:", len(again), "in the file; numbers unique:",
      len({r.number for r in again}) == len(again))
print(again.to_csv().splitlines()[0])
other = tune.space({name: (1, 128, 64) for name in ("q", "k", "v", "out")}, BQ=[16, 32, 64, 128],
                   BK=[32, 64, 128], options={"device_sched_mode": [0, 1, 2, 3], "stitch_function_max_num": [8, 128]})
try:
    tune.sweep(fa.flash_attention, other, store=store, runner="inprocess")
except pypto.PyptoError as e:
    print(str(e).splitlines()[0])"""),
        ("md", """## Kernels that remember their best

`tune.autotune` wraps a kernel: the first call with a new key (here the shape of `q`) runs a sweep
on that call's shapes, or reads the best from the cache folder (the user's cache folder, or
`$PYPTO_TUNE_CACHE_DIR`), then every call runs the kernel compiled with it. A second process with
the same kernel, candidates and key reads the stored best at once, without sweeping."""),
        ("code", """import os, subprocess
os.environ["PYPTO_TUNE_CACHE_DIR"] = tempfile.mkdtemp()  # a fresh cache for this notebook
candidates = dict(BQ=[32, 64], BK=[64, 128], options={"device_sched_mode": [0, 1]}, key=["q"])
auto = tune.autotune(**candidates)(fa.flash_attention)
auto(q, k, v, out)
print("matches torch:", torch.allclose(out, fa.reference(q, k, v), atol=1e-4), "| sweeps here:", auto.sweeps)
for e in auto.cache_info():
    print(e.source, e.key, e.config, e.makespan_cycles, "cycles")
second = "\\n".join([
    "import sys, pathlib, torch",
    "sys.path.insert(0, str(pathlib.Path.cwd().parent / 'examples'))",
    "import pypto.tune as tune, flash_attention as fa",
    f"auto = tune.autotune(**{candidates!r})(fa.flash_attention)",
    "q, k, v = (torch.randn(1, 256, 64) for _ in range(3)); out = torch.zeros(1, 256, 64)",
    "auto(q, k, v, out)",
    "[e] = auto.cache_info()",
    "print('second process: sweeps', auto.sweeps, '| from', e.source, '|', e.config)"])
print(subprocess.run([sys.executable, "-c", second], capture_output=True, text=True).stdout.strip())"""),
        ("md", """## On a cluster, and from the command line

Trials are independent, so they spread over Dask workers. By default `tune.sweep` starts an
embedded `LocalCluster` (one worker process per core); `scheduler_address="tcp://host:8786"`
joins a running one. The kernel travels by its source (its module file, or `source=` text), the
results stream back as they finish, and a trial whose worker dies is run again.

```python
results = tune.sweep(fa.flash_attention, big, strategy="tpe", budget=200)            # LocalCluster
results = tune.sweep(fa.flash_attention, big, scheduler_address="tcp://host:8786")   # a cluster
```

```bash
python -m pypto.tune examples/flash_attention.py:flash_attention \\
    --shape q=1,256,64 --shape k=1,256,64 --shape v=1,256,64 --shape out=1,256,64 \\
    --param BQ=16,32,64,128 --param BK=32,64,128 --option device_sched_mode=0,1,2,3 \\
    --strategy tpe --budget 200 --scheduler tcp://host:8786 --store sweep.jsonl
```

In a script, put the sweep under `if __name__ == "__main__":` (workers import the script to load
the kernel); a Dask sweep called at a script's top level is refused before any worker starts.

## In the lab

The dashboard's Sweep tab runs a sweep on the shapes of the kernel's last call (edit the
candidates, press *run sweep*) in the background, in this process or on Dask, with a progress bar,
*cancel*, a store to resume from, a sortable table, makespan against each parameter, a Pareto
view (makespan against compile time, UB usage or device tasks), and a button that opens the best
trial's timeline beside the current one."""),
        ("code", IGNORE + """pypto_lab.show(fa.flash_attention, tabs="sweep,timeline")"""),
    ],
}


WIDGET_VIEW = "application/vnd.jupyter.widget-view+json"


def kernelspec() -> dict:
    """The kernelspec metadata exactly as JupyterLab will see the kernel (a different display name
    would mark every notebook modified as soon as it is opened)."""
    from jupyter_client.kernelspec import KernelSpecManager

    spec = KernelSpecManager().get_kernel_spec("python3")
    return {"name": "python3", "display_name": spec.display_name, "language": spec.language}


def drop_widget_views(nb) -> None:
    """Keep a widget output's static fallback (text/html, text/plain), not its view: the view's
    model id is new on every run (churning every save) and, without stored widget state, names a
    model nobody has. The live dashboard comes back when the cell runs."""
    for cell in nb.cells:
        for out in cell.get("outputs", []):
            data = out.get("data", {})
            if WIDGET_VIEW in data and ("text/html" in data or "text/plain" in data):
                del data[WIDGET_VIEW]


def build(name: str, cells) -> nbformat.NotebookNode:
    nb = nbformat.v4.new_notebook()
    nb.metadata["kernelspec"] = kernelspec()
    for kind, text in cells:
        nb.cells.append(nbformat.v4.new_markdown_cell(text) if kind == "md" else nbformat.v4.new_code_cell(text))
    return nb


def main(selected):
    OUT.mkdir(exist_ok=True)
    for name, cells in NOTEBOOKS.items():
        if selected and not any(name.startswith(s) for s in selected):
            continue
        nb = build(name, cells)
        NotebookClient(nb, timeout=600, kernel_name="python3", store_widget_state=False,
                       resources={"metadata": {"path": str(OUT)}}).execute()
        for cell in nb.cells:  # keep stored notebooks small and stable
            cell.get("metadata", {}).pop("execution", None)
        drop_widget_views(nb)
        nbformat.write(nb, OUT / f"{name}.ipynb")
        print("wrote", OUT / f"{name}.ipynb")


if __name__ == "__main__":
    main(sys.argv[1:])
