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
# the checkout this file is in, not whichever pypto is installed
sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
import kernels  # noqa: E402

import pypto  # noqa: E402


def per_call(fn, number):
    """(wall, CPU) seconds per call of ``fn`` over ``number`` calls."""
    t0, c0 = time.perf_counter(), time.process_time()
    for _ in range(number):
        fn()
    return (time.perf_counter() - t0) / number, (time.process_time() - c0) / number


def side_by_side(a, b, repeats, batch_s):
    """Median (wall, CPU) seconds per call of ``a`` and of ``b``, alternating batches of ~batch_s each.
    CPU time (``time.process_time``) is what the ratios use: on a machine other jobs load, the wall
    time of one call swings by 2x while its CPU time stays put."""
    sizes = []
    for fn in (a, b):
        fn()
        sizes.append(max(1, int(batch_s / max(per_call(fn, 1)[0], 1e-7))))
    ta, tb = [], []
    for _ in range(repeats):
        ta.append(per_call(a, sizes[0]))
        tb.append(per_call(b, sizes[1]))
    med = lambda xs, i: statistics.median(x[i] for x in xs)  # noqa: E731
    return (med(ta, 0), med(ta, 1)), (med(tb, 0), med(tb, 1))


def _close(got, want, tol=1e-4):
    if isinstance(want, tuple):
        return all(_close(g, w, tol) for g, w in zip(got, want))
    if want.dtype.is_floating_point:
        return torch.allclose(got.float(), want.float(), rtol=tol, atol=tol)
    return torch.equal(got, want)


def ratio_row(name, made, repeats, batch_s, target, outputs=1, check=None):
    """One row: ``check`` = (reference function, tolerance) when the timed torch reference is not
    the result to compare with (an fp32 reference for a bf16 kernel)."""
    kernel, args, ref = made
    kernel(*args)
    want_fn, tol = check if check is not None else (ref, 1e-4)
    want = want_fn()
    got = args[-outputs:] if outputs > 1 else args[-1]
    if not _close(got, want, tol):
        raise SystemExit(f"{name}: pypto result differs from torch")
    (wp, cp), (wt, ct) = side_by_side(lambda: kernel(*args), ref, repeats, batch_s)
    return {"row": name, "pypto": cp, "torch": ct, "ratio": cp / ct, "wall_pypto": wp, "wall_torch": wt,
            "wall_ratio": wp / wt, "target": target, "ok": cp / ct <= target}


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


def first_call_rows(repeats=5):
    """First call at a new DYNAMIC size of a compiled version against the cached call at that
    size (CPU time): per kernel, compiled once at 512 rows (softmax, add+mul; flash attention at
    S=256), then called at sizes it has never seen, each first call timed alone and the cached
    calls at that size after it. [(label, first seconds, cached seconds)], medians over the sizes."""
    out = []
    for label, make, sizes in (
            ("softmax rows, 1024 cols", lambda: kernels.row_block_loop("softmax"),
             [512 + 32 * (k + 1) for k in range(repeats)]),
            ("add+mul rows, 1024 cols", lambda: kernels.row_block_loop("add_mul"),
             [512 + 32 * (k + 1) for k in range(repeats)]),
            ("flash attention (examples/), S", lambda: kernels.flash_attention(seq=256),
             [256 + 64 * (k + 1) for k in range(repeats)])):
        kernel, args, _ = make()
        kernel(*args)  # the one compile
        firsts, cached = [], []
        for n in sizes:
            g = torch.Generator().manual_seed(n)
            if label.startswith("flash"):
                q, k, v = (torch.randn(1, n, args[0].shape[2], generator=g) for _ in range(3))
                call_args = (q, k, v, torch.zeros(1, n, args[0].shape[2]))
                want = lambda: torch.softmax(q @ k.transpose(1, 2) / q.shape[2] ** 0.5, -1) @ v  # noqa: E731
            else:
                call_args = tuple(torch.randn(n, a.shape[1], generator=g) if a.shape[0] == args[0].shape[0] else a
                                  for a in args)
                want = None
            gc.collect()
            c0 = time.process_time()
            kernel(*call_args)
            firsts.append(time.process_time() - c0)
            if want is not None and not torch.allclose(call_args[-1], want(), atol=1e-4, rtol=1e-4):
                raise SystemExit(f"first call at a new size ({label} {n}): pypto result differs from torch")
            number = max(1, int(0.2 / max(per_call(lambda: kernel(*call_args), 1)[1], 1e-6)))
            cached.append(min(per_call(lambda: kernel(*call_args), number)[1] for _ in range(3)))
        if kernel.cache_info().misses != 1:
            raise SystemExit(f"{label}: a new dynamic size compiled again")
        out.append((f"{label} {sizes[0]}..{sizes[-1]}", statistics.median(firsts), statistics.median(cached)))
    return out


def _half_matmul(label, dtype):
    made = kernels.matmul_loop(dtype)
    a, b = made[1][0], made[1][1]
    # checked against one rounding of the fp32 product: up to one ulp apart where the sum order differs
    return label, made, 1.5, ((lambda: (a.float() @ b.float()).to(dtype)), 1e-2)


def _ffn(label):
    made = kernels.ffn_bf16()
    ex = kernels._example("ffn")
    x, w1, w2 = made[1][:3]
    return label, made, 1.5, ((lambda: ex.reference(x, w1, w2)), 2e-2)


# name -> () -> (label, (kernel, args, torch_fn), target ratio or None[, (check fn, tolerance)])
ROWS = {
    "softmax_batch_loop": lambda: ("softmax (32,32,1,256), loop over batch, tile (1,4,1,64)",
                                   kernels.softmax_batch_loop(), 2),  # issue 18 (issue 10: <= 5x)
    "softmax_rows": lambda: ("softmax 512x1024, loop over row blocks", kernels.row_block_loop("softmax"), 1.5),
    "add_mul_rows": lambda: ("add+mul 512x1024, loop over row blocks", kernels.row_block_loop("add_mul"), 1.5),
    "rms_norm_rows": lambda: ("RMSNorm 512x1024, loop over row blocks", kernels.row_block_loop("rms_norm"), 1.5),
    "softmax_rows_64k": lambda: ("softmax 65536x1024, loop over row blocks",
                                 kernels.row_block_loop("softmax", rows=65536, block=256), 1.2),
    "add_mul_rows_64k": lambda: ("add+mul 65536x1024, loop over row blocks",
                                 kernels.row_block_loop("add_mul", rows=65536, block=256), 1.2),
    "rms_norm_rows_64k": lambda: ("RMSNorm 65536x1024, loop over row blocks",
                                  kernels.row_block_loop("rms_norm", rows=65536, block=256), 1.2),
    "flash_attention": lambda: ("flash attention (examples/), B=1 S=1024 D=64", kernels.flash_attention(), 2),
    "flash_attention_256": lambda: ("flash attention (examples/), B=1 S=256 D=64", kernels.flash_attention(seq=256),
                                    2),
    "flash_attention_4096": lambda: ("flash attention (examples/), B=1 S=4096 D=64",
                                     kernels.flash_attention(seq=4096), 2),
    "moe_routing": lambda: ("MoE routing (examples/), B=4096", kernels.moe_routing(), None),
    "matmul": lambda: ("matmul 1024^3, cube tiles", kernels.matmul(), 2),
    "matmul_bf16": lambda: _half_matmul("bf16 matmul 1024^3, loop over 128-row blocks (vs torch fp32 out=)",
                                        torch.bfloat16),
    "matmul_fp16": lambda: _half_matmul("fp16 matmul 1024^3, loop over 128-row blocks (vs torch fp32 out=)",
                                        torch.float16),
    "ffn_bf16": lambda: _ffn("ffn bf16 (examples/), B=4096 (vs torch fp32 out=)"),
    "one_tile": lambda: ("one-tile add, cached call (vs torch.add out=)", kernels.one_tile(), 8),
}


# a row whose target an earlier issue set looser: printed beside the current one
EARLIER_TARGETS = {"softmax_batch_loop": " (issue 10: <= 5x)"}


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
        label, made, target, *check = make()
        outputs = 2 if name == "moe_routing" else 1
        r = ratio_row(label, made, repeats, batch_s, target if target is not None else float("inf"), outputs,
                      check[0] if check else None)
        r["target_text"] = (f"<= {target}x" if target else "-") + EARLIER_TARGETS.get(name, "")
        out.append(r)
        del made
        gc.collect()
        print(f"{label:<66} {r['pypto'] * 1e3:>10.3f} ms {r['torch'] * 1e3:>9.3f} ms {r['ratio']:>6.2f}x "
              f"(wall {r['wall_ratio']:.2f}x) {r['target_text']:>8}", flush=True)
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
    if want("first_call"):
        for label, first, cached in first_call_rows():
            extra.append((f"first call at a new DYNAMIC size / cached call: {label} (CPU)",
                          f"{first * 1e3:.2f} ms / {cached * 1e3:.2f} ms = {first / cached:.1f}x", "<= 3x",
                          first / cached <= 3))
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
        print("| kernel (cached call) | pypto CPU | torch CPU | ratio (CPU) | ratio (wall) | target | met |")
        print("|---|---|---|---|---|---|---|")
        for r in out:
            print(f"| {r['row']} | {r['pypto'] * 1e3:.3f} ms | {r['torch'] * 1e3:.3f} ms | {r['ratio']:.2f}x | "
                  f"{r['wall_ratio']:.2f}x | {r['target_text']} | {'yes' if r['ok'] else 'no'} |")
        for label, value, target, ok in extra:
            print(f"| {label} | {value} | | | | {target} | {'yes' if ok else 'no'} |")


if __name__ == "__main__":
    main()
