"""Trial throughput of pypto.tune in this process, with and without a store, and the cost of the
numbers check beside compile + simulation.

    .venv/bin/python bench/tune_trials.py [--quick]

* runtime rows: runtime-option trials (one compile, every other trial a re-simulation) on a
  row-wise exp kernel of R rows (``R`` below), without a store and with a journal store;
* ``re-simulations /s``: the ok trials that compiled nothing (their own wall time, the sweep's
  bookkeeping left out);
* 10k: 10,000 runtime-option trials with a store (``--quick``: 2,000);
* tiles: tile trials of the same kernel (each compiles, runs, checks, simulates), the check's
  share beside the compile and the simulation.

Wall time and CPU time (``time.process_time``) side by side; the store is a temporary file.
"""
from __future__ import annotations

import argparse
import os
import sys
import tempfile
import time

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, ROOT)

import pypto  # noqa: E402
import pypto.tune as tune  # noqa: E402

from tests.tune.tune_kernels import exp_rows  # noqa: E402  (the tune tests' row kernel)


RUNTIME = {"device_sched_mode": [0, 1, 2, 3], "stitch_function_max_num": [1, 2, 4, 8, 16, 32, 64, 128, 256, 1024],
           "launch_sched_aicpu_num": [1, 2, 3, 4, 5], "device_sched_parallelism": [1, 2, 3, 4, 5]}
TEN_K = {**RUNTIME, "max_workspace_kb": [0, 1024, 4096, 16384, 65536], "launch_early_mode": [0, 1]}


def timed(label, kernel, space, **kw):
    t0, c0 = time.perf_counter(), time.process_time()
    results = tune.sweep(kernel, space, runner="inprocess", **kw)
    wall, cpu = time.perf_counter() - t0, time.process_time() - c0
    resim = [r for r in results if r.ok and not r.compiled]
    resim_s = sum(r.seconds for r in resim)
    rate = f"  re-simulations {len(resim) / resim_s:7.1f}/s" if resim and resim_s else ""
    print(f"{label:44} {len(results):6d} trials {wall:7.2f} s wall {cpu:7.2f} s CPU "
          f"{len(results) / wall:8.1f} trials/s{rate}", flush=True)
    return results


def main():
    p = argparse.ArgumentParser()
    p.add_argument("--quick", action="store_true")
    p.add_argument("--rows", type=int, default=1024)
    p.add_argument("--seq", type=int, default=256)
    a = p.parse_args()
    import torch

    torch.set_num_threads(1)
    shape = {"x": (a.rows, 128), "out": (a.rows, 128)}
    print(f"# pypto.tune trials: exp over {a.rows}x128 fp32, TILE 32; {os.cpu_count()} CPUs, "
          f"load {os.getloadavg()[0]:.1f}")
    rt = tune.space(shape, options=RUNTIME)
    timed("runtime options, no store", exp_rows, rt)
    with tempfile.TemporaryDirectory() as d:
        timed("runtime options, journal store", exp_rows, rt, store=os.path.join(d, "rt.jsonl"))
        ten = dict(TEN_K)
        if a.quick:
            ten["max_workspace_kb"] = ten["max_workspace_kb"][:1]
        big = tune.space(shape, options=ten)
        store = os.path.join(d, "10k.jsonl")
        timed(f"{big.size} runtime trials, journal store", exp_rows, big, store=store)
        print(f"{'':44} store {os.path.getsize(store) / 1e6:.1f} MB, {len(os.listdir(d))} file(s) in its folder")
    tiles = tune.space(shape, TILE=[8, 16, 32, 64, 128, 256, 512])
    results = timed("tile trials (compile + run + check + simulate)", exp_rows, tiles)
    _shares(results)
    from pypto.tune.source import KernelSource

    fa = KernelSource(name="flash_attention", path=os.path.join(ROOT, "examples", "flash_attention.py")).load()
    fa_shape = {name: (1, a.seq, 64) for name in ("q", "k", "v", "out")}
    print(f"# flash attention, batch 1, seq {a.seq}, D 64")
    timed("runtime options (4 x 5), in-process", fa,
          tune.space(fa_shape, options={"device_sched_mode": [0, 1, 2, 3], "launch_sched_aicpu_num": [1, 2, 3, 4, 5]}))
    # the 1,000 configurations of bench_tune.py: many are one schedule (a stitch limit above the
    # call's 48 roots, the parallelism of a call without parallel loops), simulated once
    timed(f"runtime options ({tune.space(fa_shape, options=RUNTIME).size}), in-process", fa,
          tune.space(fa_shape, options=RUNTIME))
    _shares(timed("tile trials BQ x BK", fa, tune.space(fa_shape, BQ=[16, 32, 64, 128], BK=[32, 64, 128])))


def _shares(results):
    for r in results:
        sim = r.seconds - (r.compile_seconds or 0) - (r.check_seconds or 0)
        print(f"  {str(r.config):28} {r.status:8} compile {r.compile_seconds or 0:.3f} s  "
              f"check {(r.check_seconds or 0) * 1e3:7.2f} ms  trial {r.seconds:.3f} s (rest {sim:.3f} s)")


if __name__ == "__main__":
    main()
