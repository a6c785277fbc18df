"""The issue-10 benchmark table: cached pypto calls against torch eager, side by side in one process.

    .venv/bin/python bench/run.py [--quick] [--only NAME[,NAME]] [--markdown]

Every kernel is written as users write them (``bench/kernels.py``: ``pypto.loop`` + views +
assemble). Each row checks that the pypto result matches torch, then alternates batches of pypto
and torch calls (``torch.set_num_threads(1)``); a figure is the median per-call time over the
repeats. A ratio is pypto time / torch time on the cached call. Compile time, timeline throughput and
peak memory have their own rows.
"""
from __future__ import annotations

import argparse
import datetime
import gc
import os
import platform
import statistics
import sys
import time
import tracemalloc

import torch

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import kernels  # noqa: E402

import pypto  # noqa: E402


def per_call(fn, number):
    t0 = time.perf_counter()
    for _ in range(number):
        fn()
    return (time.perf_counter() - t0) / number


def side_by_side(a, b, repeats, batch_s):
    """Median seconds per call of ``a`` and ``b``, alternating batches of ~batch_s each."""
    sizes = []
    for fn in (a, b):
        fn()
        sizes.append(max(1, int(batch_s / max(per_call(fn, 1), 1e-7))))
    ta, tb = [], []
    for _ in range(repeats):
        ta.append(per_call(a, sizes[0]))
        tb.append(per_call(b, sizes[1]))
    return statistics.median(ta), statistics.median(tb)


def _close(got, want):
    if isinstance(want, tuple):
        return all(_close(g, w) for g, w in zip(got, want))
    if want.dtype.is_floating_point:
        return torch.allclose(got, want, rtol=1e-4, atol=1e-4)
    return torch.equal(got, want)


def ratio_row(name, made, repeats, batch_s, target, outputs=1):
    kernel, args, ref = made
    kernel(*args)
    want = ref()
    got = args[-outputs:] if outputs > 1 else args[-1]
    if not _close(got, want):
        raise SystemExit(f"{name}: pypto result differs from torch")
    tp, tt = side_by_side(lambda: kernel(*args), ref, repeats, batch_s)
    return {"row": name, "pypto": tp, "torch": tt, "ratio": tp / tt, "target": target,
            "ok": tp / tt <= target}


def compile_rows(sizes=(125, 250, 500), make=kernels.chain):
    """Best-of-3 compile seconds of a fresh ``make(n)`` kernel per size: [(n, seconds)]."""
    rows = []
    for n in sizes:
        best = float("inf")
        for _ in range(3):
            kernel, args = make(n)
            kernel(*args)
            best = min(best, kernel.last_run.compile_seconds)
        rows.append((n, best))
    return rows


def timeline_row(rows=1000, cols=16000):
    """Simulated tasks per second for a [rows, cols] exp+1 with (1, 16) tiles (rows*cols/16 tasks)."""
    @pypto.jit
    def flat(x: pypto.Tensor([rows, cols], kernels.FP32), out: pypto.Tensor([rows, cols], kernels.FP32)):
        pypto.set_vec_tile_shapes(1, 16)
        out[:] = pypto.exp(x) + 1.0
    x, out = torch.randn(rows, cols), torch.empty(rows, cols)
    flat(x, out)
    gc.collect()
    t0 = time.perf_counter()  # speed without tracemalloc, which slows every allocation several times
    n = flat.last_run.timeline.stats["tasks"]
    seconds = time.perf_counter() - t0
    flat(x, out)  # a cache hit with a new record: its timeline is built again, now traced
    gc.collect()
    tracemalloc.start()
    flat.last_run.timeline.stats
    peak = tracemalloc.get_traced_memory()[1]
    tracemalloc.stop()
    return n, seconds, peak / n


def memory_row(make="softmax_whole", rows=32768, cols=1024):
    """Peak extra memory of a straight-line softmax on a [rows, cols] input (128 MiB), as a multiple
    of the input's bytes: measured in a fresh process (peak RSS during the call minus before it)
    after compiling on a small batch, so only the call itself is counted."""
    import subprocess
    code = f"""
import torch, sys
sys.path.insert(0, {os.path.dirname(os.path.abspath(__file__))!r})
import kernels

def status(field):
    for line in open("/proc/self/status"):
        if line.startswith(field):
            return int(line.split()[1]) * 1024

k = kernels.{make}({rows}, {cols})
k(torch.randn(64, {cols}), torch.empty(64, {cols}))
x, out = torch.randn({rows}, {cols}), torch.zeros({rows}, {cols})
open("/proc/self/clear_refs", "w").write("5")  # reset the peak (VmHWM) to the current RSS
before = status("VmRSS")
k(x, out)
peak = status("VmHWM")
assert torch.allclose(out, torch.softmax(x, -1), atol=1e-5)
print((peak - before) / (x.numel() * x.element_size()))
"""
    res = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    return float(res.stdout.strip().splitlines()[-1])


ROWS = {
    "softmax_batch_loop": lambda: ("softmax (32,32,1,256), loop over batch, tile (1,4,1,64)",
                                   kernels.softmax_batch_loop(), 5),
    "softmax_rows": lambda: ("softmax 512x1024, loop over row blocks", kernels.row_block_loop("softmax"), 3),
    "add_mul_rows": lambda: ("add+mul 512x1024, loop over row blocks", kernels.row_block_loop("add_mul"), 3),
    "rms_norm_rows": lambda: ("RMSNorm 512x1024, loop over row blocks", kernels.row_block_loop("rms_norm"), 3),
    "flash_attention": lambda: ("flash attention (examples/), B=1 S=1024 D=64", kernels.flash_attention(), 20),
    "moe_routing": lambda: ("MoE routing (examples/), B=4096", kernels.moe_routing(), None),
    "matmul": lambda: ("matmul 1024^3, cube tiles", kernels.matmul(), 2),
    "one_tile": lambda: ("one-tile add, cached call", kernels.one_tile(), None),
}


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--quick", action="store_true")
    ap.add_argument("--only", default="")
    ap.add_argument("--markdown", action="store_true", help="print the table as markdown")
    a = ap.parse_args()
    torch.set_num_threads(1)
    repeats, batch_s = (3, 0.05) if a.quick else (7, 0.3)
    only = set(filter(None, a.only.split(",")))
    out = []

    def want(name):
        return not only or name in only

    for name, make in ROWS.items():
        if not want(name):
            continue
        label, made, target = make()
        outputs = 2 if name == "moe_routing" else 1
        r = ratio_row(label, made, repeats, batch_s, target if target is not None else float("inf"), outputs)
        if name == "one_tile":
            r["target_text"], r["ok"] = "<= 30 µs", r["pypto"] <= 30e-6
        else:
            r["target_text"] = f"<= {target}x" if target else "-"
        out.append(r)
        print(f"{label:<58} {r['pypto'] * 1e3:>10.3f} ms {r['torch'] * 1e3:>9.3f} ms {r['ratio']:>8.1f}x "
              f"{r['target_text']:>10}", flush=True)
    extra = []
    if want("flash_4096"):
        kernel, args, ref = kernels.flash_attention(seq=4096)
        t0 = time.perf_counter()
        kernel(*args)
        first = time.perf_counter() - t0
        t0 = time.perf_counter()
        kernel(*args)
        cached = time.perf_counter() - t0
        extra.append(("flash attention S=4096: first call / cached call", f"{first:.2f} s / {cached:.2f} s",
                      "< 10 s", cached < 10))
        print(extra[-1], flush=True)
    if want("compile"):
        rows = compile_rows()
        (n0, s0), (n1, s1) = rows[0], rows[-1]
        extra.append(("compile of a 500-op kernel (125/250/500 ops)",
                      " / ".join(f"{s * 1e3:.0f} ms" for _, s in rows), "< 0.3 s, linear", s1 < 0.3))
        print(extra[-1], flush=True)
        for label, make in (("chain", kernels.chain), ("chain in a pypto.loop body", kernels.chain_in_loop),
                            ("in leaves of 10 ops", kernels.reduction_leaves)):
            rows = compile_rows((500, 2000), make)
            (_, s0), (_, s1) = rows
            extra.append((f"compile, {label} (500/2000 ops)",
                          f"{s0 * 1e3:.0f} ms / {s1 * 1e3:.0f} ms (x{s1 / s0:.1f})", "linear: x4 ops, < x5 time",
                          s1 / s0 < 5.0))
            print(extra[-1], flush=True)
    if want("timeline"):
        n, seconds, per_task = timeline_row()
        extra.append((f"timeline: {n} tasks", f"{n / seconds / 1e3:.0f}k tasks/s, {per_task:.0f} B/task",
                      ">= 100k/s, <= 300 B", n / seconds >= 1e5 and per_task <= 300))
        print(extra[-1], flush=True)
    if want("memory"):
        for make, what in (("softmax_whole", "pypto.softmax"), ("softmax_composed", "amax/sub/exp/sum/div")):
            m = memory_row(make)
            extra.append((f"straight-line softmax ({what}) 32768x1024 (128 MiB): extra peak memory",
                          f"{m:.2f}x input", "<= 1.5x", m <= 1.5))
            print(extra[-1], flush=True)
    if a.markdown:
        print(f"\nMeasured {datetime.date.today()} on {platform.machine()} {os.cpu_count()} cpus, "
              f"torch {torch.__version__}, threads=1, load {os.getloadavg()[0]:.1f}\n")
        print("| kernel (cached call) | pypto | torch | ratio | target | met |")
        print("|---|---|---|---|---|---|")
        for r in out:
            print(f"| {r['row']} | {r['pypto'] * 1e3:.3f} ms | {r['torch'] * 1e3:.3f} ms | {r['ratio']:.1f}x | "
                  f"{r['target_text']} | {'yes' if r['ok'] else 'no'} |")
        for label, value, target, ok in extra:
            print(f"| {label} | {value} | | | {target} | {'yes' if ok else 'no'} |")


if __name__ == "__main__":
    main()
