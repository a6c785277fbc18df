"""Timing-simulator benchmark: simulated tasks per second, a loop-heavy case, an attention
kernel under each device_sched_mode, and two large cases (a million tasks in one call; a loop of
many root instances) with their memory per task.

    .venv/bin/python bench/bench_timeline.py [--quick] [--sections 1,2,3,4,5]

Each kernel is called once (the functional run, not timed); the figure is the wall time
(time.perf_counter) of the first access of `kernel.last_run.timeline`, which is the simulation.
A repeat calls the kernel again (a cache hit with a fresh RunRecord) and times that first access
again; a figure is the median over repeats. gc.collect() runs before every timed section (not
timed), and a 64-task warm-up simulation runs first, so neither a full garbage collection of the
process's objects nor one-time imports are charged to whichever case happens to trigger them.
"""
import argparse
import gc
import math
import os
import statistics
import time
import tracemalloc

import torch

import pypto

FP32 = pypto.DT_FP32
FLAT = [(32, 32), (64, 80), (128, 160), (320, 320)]   # 16x16 tiles per dim: 1024, 5120, 20480, 102400


def make_flat(rows, cols):
    @pypto.jit
    def flat(x: pypto.Tensor([rows, cols], FP32), out: pypto.Tensor([rows, cols], FP32)):
        pypto.set_vec_tile_shapes(16, 16)
        out[:] = pypto.exp(x) + 1.0
    return flat


def make_rows(n):
    @pypto.jit
    def rows(x: pypto.Tensor([n, 16], FP32), out: pypto.Tensor([n, 16], FP32)):
        pypto.set_vec_tile_shapes(16, 16)
        for i in pypto.loop(n):                   # one root instance (and one task) per iteration
            out[i:i + 1, :] = pypto.exp(x[i:i + 1, :]) + 1.0
    return rows


def make_wide(rows, cols, tile):
    @pypto.jit
    def wide(x: pypto.Tensor([rows, cols], FP32), out: pypto.Tensor([rows, cols], FP32)):
        pypto.set_vec_tile_shapes(*tile)
        out[:] = pypto.exp(x) + 1.0
    return wide


def make_blocks(n, block, cols):
    @pypto.jit
    def blocks(x: pypto.Tensor([n * block, cols], FP32), out: pypto.Tensor([n * block, cols], FP32)):
        pypto.set_vec_tile_shapes(1, 16)
        for i in pypto.loop(n):                   # one root instance per iteration, block*cols/16 tasks each
            out[i * block:(i + 1) * block, :] = pypto.exp(x[i * block:(i + 1) * block, :]) + 1.0
    return blocks


def make_attention(hidden):
    scale = 1.0 / math.sqrt(hidden)
    T = pypto.Tensor([pypto.DYNAMIC, pypto.DYNAMIC, hidden], FP32)

    @pypto.jit
    def attention(q: T, k: T, v: T, out: T):
        for b in pypto.loop(q.shape[0]):
            scores = pypto.matmul(q[b], k[b], b_trans=True) * scale
            probs = pypto.softmax(scores, dim=-1)
            out[b] = pypto.matmul(probs, v[b])
    return attention


def first_timeline(kernel, args):
    """Call `kernel` (not timed), then time the first access of last_run.timeline."""
    kernel(*args)
    gc.collect()
    t0 = time.perf_counter()
    tl = kernel.last_run.timeline
    return time.perf_counter() - t0, tl


def timed(fn):
    gc.collect()
    t0 = time.perf_counter()
    out = fn()
    return time.perf_counter() - t0, out


def large(kernel, args, check):
    """Call once (not timed); simulate on first access of last_run.timeline and read its stats
    (wall and CPU seconds); call again and simulate under tracemalloc: the peak and the held
    bytes of building and holding the timeline, per task."""
    call_s, _ = timed(lambda: kernel(*args))
    check()
    gc.collect()
    w, c = time.perf_counter(), time.process_time()
    tl = kernel.last_run.timeline
    stats = tl.stats
    w, c = time.perf_counter() - w, time.process_time() - c
    n = stats["tasks"]
    del tl, stats
    kernel(*args)
    gc.collect()
    tracemalloc.start()
    tl = kernel.last_run.timeline
    tl.stats
    held, peak = tracemalloc.get_traced_memory()
    tracemalloc.stop()
    return n, call_s, w, c, held / n, peak / n, tl


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--quick", action="store_true", help="skip 100k tasks, fewer repeats, shorter loops, "
                                                          "sections 4 and 5 at a tenth of the size")
    ap.add_argument("--sections", default="1,2,3,4,5", help="comma-separated sections to run")
    args = ap.parse_args()
    sections = {int(x) for x in args.sections.split(",")}
    flat_sizes = FLAT[:-1] if args.quick else FLAT
    loop_ns = (250, 500) if args.quick else (500, 1000, 2000)
    g = torch.Generator().manual_seed(0)

    x = torch.randn(128, 128, generator=g)
    warm, _ = first_timeline(make_flat(128, 128), (x, torch.empty_like(x)))
    print(f"torch {torch.__version__}; {os.cpu_count()} cpus, load avg {os.getloadavg()[0]:.2f}"
          f"{' [quick]' if args.quick else ''}; warm-up simulation (64 tasks, cold): {warm * 1e3:.0f} ms")

    if 1 in sections:
        flat(args, flat_sizes, g)
    if 2 in sections:
        loops(loop_ns, g)
    if 3 in sections:
        attention(g)
    if 4 in sections:
        rows = 100 if args.quick else 1000
        x = torch.randn(rows, 16000, generator=g)
        out = torch.empty_like(x)
        kernel = make_wide(rows, 16000, (1, 16))
        print(f"\n4. one call, {rows * 1000} tasks: out[:] = exp(x) + 1.0, fp32 [{rows}, 16000], (1, 16) tiles "
              f"(timeline and stats; bytes: tracemalloc of a second simulation)")
        report_large(large(kernel, (x, out), lambda: torch.allclose(out, torch.exp(x) + 1.0)))
    if 5 in sections:
        n = 2000 if args.quick else 20000
        x = torch.randn(n * 8, 64, generator=g)
        out = torch.empty_like(x)
        kernel = make_blocks(n, 8, 64)
        kernel(x, out)                                  # compile outside the timed call
        print(f"\n5. pypto.loop({n}): 8 x 64 row block per iteration, (1, 16) tiles: {n} root instances, "
              f"{n * 32} tasks")
        report_large(large(kernel, (x, out), lambda: torch.allclose(out, torch.exp(x) + 1.0)))


def report_large(result):
    n, call_s, w, c, held, peak, tl = result
    print(f"{'tasks':>8} {'dev tasks':>9} {'call s':>7} {'sim s':>7} {'tasks/s':>8} {'cpu s':>6} {'tasks/cpu s':>11} "
          f"{'B/task held':>11} {'B/task peak':>11}")
    print(f"{n:>8} {tl.device_tasks:>9} {call_s:>7.2f} {w:>7.2f} {n / w:>8.0f} {c:>6.2f} {n / c:>11.0f} "
          f"{held:>11.0f} {peak:>11.0f}")


def flat(args, flat_sizes, g):
    # 1. flat elementwise kernel: one task per 16x16 tile, no dependencies, one device task
    print("\n1. out[:] = exp(x) + 1.0, fp32, 16x16 tiles (first: first access of last_run.timeline; "
          "resim: last_run.simulate({'device_sched_mode': 1}))")
    print(f"{'tasks':>8} {'shape':>12} {'reps':>5} {'first s':>9} {'tasks/s':>10} {'resim s':>12} {'tasks/s':>10}")
    rates = {}
    for tr, tc in flat_sizes:
        shape = (16 * tr, 16 * tc)
        x = torch.randn(*shape, generator=g)
        out = torch.empty_like(x)
        kernel = make_flat(*shape)
        reps = 3 if tr * tc <= (5_000 if args.quick else 50_000) else 1
        first, resim = [], []
        for _ in range(reps):
            s, tl = first_timeline(kernel, (x, out))
            first.append(s)
            resim.append(timed(lambda: kernel.last_run.simulate({"device_sched_mode": 1}))[0])
        assert torch.allclose(out, torch.exp(x) + 1.0) and tl.device_tasks == 1
        n = len(tl.events)
        f, r = statistics.median(first), statistics.median(resim)
        rates[n] = (n / f, n / r)
        print(f"{n:>8} {f'{shape[0]}x{shape[1]}':>12} {reps:>5} {f:>9.3f} {n / f:>10.0f} {r:>12.3f} {n / r:>10.0f}")
    lo, hi = min(rates), max(rates)
    print(f"rate at {hi} / rate at {lo} tasks: first access {rates[hi][0] / rates[lo][0]:.2f}x, "
          f"re-simulate {rates[hi][1] / rates[lo][1]:.2f}x")


def loops(loop_ns, g):
    # 2. loop-heavy: one small row op per pypto.loop iteration (one root instance each)
    print("\n2. pypto.loop(N): out[i:i+1, :] = exp(x[i:i+1, :]) + 1.0 on fp32 [N, 16] (one run each)")
    print(f"{'N':>6} {'tasks':>6} {'dev tasks':>9} {'deps':>5} {'call s':>7} {'sim s':>8} {'tasks/s':>8} "
          f"{'µs/task':>8}")
    for n in loop_ns:
        x = torch.randn(n, 16, generator=g)
        out = torch.empty_like(x)
        kernel = make_rows(n)
        kernel(x, out)                                          # compile outside the timed call
        call_s, _ = timed(lambda: kernel(x, out))
        sim_s, tl = timed(lambda: kernel.last_run.timeline)
        assert torch.allclose(out, torch.exp(x) + 1.0)
        t = len(tl.events)
        print(f"{n:>6} {t:>6} {tl.device_tasks:>9} {len(tl.deps):>5} {call_s:>7.3f} {sim_s:>8.2f} "
              f"{t / sim_s:>8.0f} {sim_s / t * 1e6:>8.0f}")


def attention(g):
    # 3. attention under each device_sched_mode (the numbers are computed once; only timing reruns)
    B, S, H = 8, 256, 64
    q, k, v = (torch.randn(B, S, H, generator=g) for _ in range(3))
    out = torch.empty(B, S, H)
    attn = make_attention(H)
    attn(q, k, v, out)
    ref = torch.softmax(q @ k.transpose(-1, -2) / math.sqrt(H), -1) @ v
    assert torch.allclose(out, ref, rtol=1e-4, atol=1e-5)
    print(f"\n3. attention, q/k/v [DYNAMIC, DYNAMIC, {H}] fp32, B={B} S={S}, default tiles, loop over batch")
    print(f"{'mode':>4} {'makespan cyc':>12} {'µs':>7} {'AIC util':>8} {'AIV util':>8} {'crit path':>9} "
          f"{'dev tasks':>9} {'tasks':>5} {'sim s':>6}")
    for mode in range(4):
        sim_s, tl = timed(lambda: attn.last_run.simulate({"device_sched_mode": mode}))
        s = tl.stats
        u = s["utilization"]
        print(f"{mode:>4} {s['makespan_cycles']:>12} {s['makespan_us']:>7.1f} {u['AIC']:>8.1%} {u['AIV']:>8.1%} "
              f"{s['critical_path_cycles']:>9} {s['device_tasks']:>9} {s['tasks']:>5} {sim_s:>6.3f}")


if __name__ == "__main__":
    main()
