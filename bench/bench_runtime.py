"""Runtime benchmark: cached PyPTO kernel calls vs torch eager, and softmax compile time.

    .venv/bin/python bench/bench_runtime.py [--quick]

All figures come from one process. Per repeat, each case runs a batch of calls and the
cases alternate (pypto, torch, pypto, torch, ...); a figure is the median over repeats of the
per-call time (time.perf_counter). Everything runs twice: torch.set_num_threads(1), then the
default thread count (the simulator computes with torch, so both sides see the setting).
"""
import argparse
import os
import statistics
import time

import torch

import pypto

S = [32, 32, 1, 256]          # softmax shape
FP32 = pypto.DT_FP32


def make_softmax():
    """A fresh kernel object each call (its own empty cache): whole-tensor softmax."""
    @pypto.jit
    def softmax_whole(x: pypto.Tensor(S, FP32), out: pypto.Tensor(S, FP32)):
        pypto.set_vec_tile_shapes(1, 32, 1, 256)   # keeps the whole last dim; 32 KB per tile
        out[:] = pypto.softmax(x, -1)               # the compiler tiles the whole tensor
    return softmax_whole


@pypto.jit
def softmax_loop(x: pypto.Tensor(S, FP32), out: pypto.Tensor(S, FP32)):
    pypto.set_vec_tile_shapes(1, 32, 1, 256)
    for b in pypto.loop(S[0]):
        row = pypto.view(x, [1, 32, 1, 256], [b, 0, 0, 0])
        pypto.assemble(pypto.softmax(row, -1), [b, 0, 0, 0], out)


@pypto.jit
def add_tile(x: pypto.Tensor([32, 32], FP32), y: pypto.Tensor([32, 32], FP32),
             out: pypto.Tensor([32, 32], FP32)):
    pypto.set_vec_tile_shapes(32, 32)
    out[:] = x + y


def per_call_us(fn, number):
    t0 = time.perf_counter()
    for _ in range(number):
        fn()
    return (time.perf_counter() - t0) / number * 1e6


def measure(cases, repeats, batch_s):
    """Median per-call µs of each case; cases alternate inside every repeat."""
    numbers = {}
    for name, fn in cases.items():              # warm up, then size a batch to ~batch_s
        for _ in range(3):
            fn()
        numbers[name] = max(1, int(batch_s * 1e6 / per_call_us(fn, 3)))
    samples = {name: [] for name in cases}
    for _ in range(repeats):
        for name, fn in cases.items():
            samples[name].append(per_call_us(fn, numbers[name]))
    return {name: statistics.median(v) for name, v in samples.items()}


def compile_figures(x, o, fresh):
    """compile_seconds and first-call wall (ms) of `fresh` new softmax kernel objects."""
    comp, first = [], []
    for _ in range(fresh):
        k = make_softmax()
        t0 = time.perf_counter()
        k(x, o)
        first.append((time.perf_counter() - t0) * 1e3)
        assert not k.last_run.cache_hit
        comp.append(k.last_run.compile_seconds * 1e3)
    return comp, first


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--quick", action="store_true", help="fewer repeats, shorter batches")
    args = ap.parse_args()
    repeats, batch_s, fresh = (5, 0.02, 3) if args.quick else (15, 0.1, 9)
    default_threads = torch.get_num_threads()

    g = torch.Generator().manual_seed(0)
    x, o = torch.randn(S, generator=g), torch.empty(S)
    a, b, c = torch.randn(32, 32, generator=g), torch.randn(32, 32, generator=g), torch.empty(32, 32)

    torch.set_num_threads(1)
    cold_comp, cold_first = compile_figures(x, o, 1)   # first compile in this process (cold)
    softmax_whole = make_softmax()
    for k, args_ in ((softmax_whole, (x, o)), (softmax_loop, (x, o)), (add_tile, (a, b, c))):
        k(*args_)
        want = torch.softmax(x, -1) if k is not add_tile else a + b
        assert torch.allclose(args_[-1], want, atol=1e-6), k.__name__
    warm_comp, warm_first = compile_figures(x, o, fresh)

    cases = {
        "softmax_whole": lambda: softmax_whole(x, o),
        "torch_softmax": lambda: torch.softmax(x, -1),
        "softmax_loop": lambda: softmax_loop(x, o),
        "add_tile": lambda: add_tile(a, b, c),
        "torch_add": lambda: torch.add(a, b, out=c),
    }
    results = {}
    for threads in dict.fromkeys((1, default_threads)):
        torch.set_num_threads(threads)
        results[threads] = measure(cases, repeats, batch_s)

    print(f"torch {torch.__version__}; {repeats} repeats, median; threads: 1 and "
          f"{default_threads} (default); {os.cpu_count()} cpus, load avg {os.getloadavg()[0]:.2f}"
          f"{' [quick]' if args.quick else ''}")
    print(f"{'case':<34}" + "".join(f"{f'threads={t}':>14}" for t in results))
    rows = [("softmax whole-tensor pypto (µs)", "softmax_whole"), ("softmax loop+assemble pypto (µs)", "softmax_loop"),
            ("torch.softmax (µs)", "torch_softmax"), ("add one tile pypto (µs)", "add_tile"),
            ("torch.add out= (µs)", "torch_add")]
    for label, key in rows:
        print(f"{label:<34}" + "".join(f"{r[key]:>14.1f}" for r in results.values()))
    for label, num, den in (("ratio softmax whole / torch", "softmax_whole", "torch_softmax"),
                            ("ratio softmax loop / torch", "softmax_loop", "torch_softmax"),
                            ("ratio add / torch.add", "add_tile", "torch_add")):
        print(f"{label:<34}" + "".join(f"{r[num] / r[den]:>13.1f}x" for r in results.values()))

    cached_ms = results[1]["softmax_whole"] / 1e3
    med = statistics.median
    print(f"\nsoftmax compile (threads=1)        compile_seconds   first call   first - cached")
    print(f"  cold (first in process)        {cold_comp[0]:>12.1f} ms {cold_first[0]:>9.1f} ms "
          f"{cold_first[0] - cached_ms:>11.1f} ms")
    print(f"  fresh kernel, median of {fresh:<2}     {med(warm_comp):>12.1f} ms {med(warm_first):>9.1f} ms "
          f"{med(warm_first) - cached_ms:>11.1f} ms")

    r1 = results[1]
    compile_worst = max(cold_comp[0], cold_first[0] - cached_ms) / 1e3
    print("\ntargets (threads=1; compile: worse of cold compile_seconds and first-call minus cached)")
    for ok, text in ((r1["softmax_whole"] <= 5 * r1["torch_softmax"],
                      f"softmax within 5x torch eager: {r1['softmax_whole'] / r1['torch_softmax']:.1f}x "
                      f"(loop variant {r1['softmax_loop'] / r1['torch_softmax']:.1f}x)"),
                     (r1["add_tile"] < 100, f"cached one-tile call under 100 µs: {r1['add_tile']:.1f} µs"),
                     (compile_worst < 1.0, f"softmax compile under 1 s: {compile_worst * 1e3:.1f} ms")):
        print(f"  {'PASS' if ok else 'MISS'}  {text}")


if __name__ == "__main__":
    main()
