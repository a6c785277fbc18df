"""Trials per second of pypto.tune sweeps of the flash-attention example (``examples/``).

    .venv/bin/python bench/bench_tune.py [--quick] [--seq 256] [--workers 2]

Two sweeps, each in this process and on a LocalCluster of ``--workers`` worker processes:

* runtime: 1,000 configurations of 4 runtime options (device_sched_mode x stitch_function_max_num
  x launch_sched_aicpu_num x device_sched_parallelism), one compile, every other trial a
  re-simulation of the cached call;
* tiles: the query and KV block sizes (BQ x BK), every trial a compile + run + simulation.

The cluster's start-up is timed apart (``start s``) and not counted in the rates; the runtime sweep
runs twice on the cluster, the second time on warm workers (they keep their compiled versions and
the call's tasks). ``--quick`` runs a tenth of the runtime sweep.
"""
from __future__ import annotations

import argparse
import os
import sys
import time

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, ROOT)

import pypto.tune as tune  # noqa: E402
from pypto.tune.source import KernelSource  # noqa: E402

RUNTIME = {"device_sched_mode": [0, 1, 2, 3],
           "stitch_function_max_num": [1, 2, 4, 8, 16, 32, 64, 128, 256, 1024],
           "launch_sched_aicpu_num": [1, 2, 3, 4, 5],
           "device_sched_parallelism": [1, 2, 3, 4, 5]}
TILES = {"BQ": [16, 32, 64, 128], "BK": [32, 64, 128]}


def shapes(seq):
    return {name: (1, seq, 64) for name in ("q", "k", "v", "out")}


def timed(label, kernel, space, **kw):
    t0 = time.perf_counter()
    results = tune.sweep(kernel, space, **kw)
    seconds = time.perf_counter() - t0
    ok = len(results.ok)
    print(f"{label:34} {len(results):5d} trials {seconds:7.2f} s {len(results) / seconds:8.1f} trials/s"
          f"   ok {ok}  best {results.best.makespan_cycles} cycles", flush=True)
    return results


def main():
    p = argparse.ArgumentParser()
    p.add_argument("--quick", action="store_true")
    p.add_argument("--seq", type=int, default=256)
    p.add_argument("--workers", type=int, default=2)
    a = p.parse_args()
    import torch
    from distributed import Client, LocalCluster

    torch.set_num_threads(1)
    source = KernelSource(name="flash_attention", path=os.path.join(ROOT, "examples", "flash_attention.py"))
    kernel = source.load()
    runtime = dict(RUNTIME)
    if a.quick:
        runtime["stitch_function_max_num"] = runtime["stitch_function_max_num"][:1]
    rt_space = tune.space(shapes(a.seq), options=runtime)
    tile_space = tune.space(shapes(a.seq), params=TILES)
    print(f"# pypto.tune: flash attention, batch 1, seq {a.seq}, D 64; {os.cpu_count()} CPUs, "
          f"load {os.getloadavg()[0]:.1f}")
    timed("runtime sweep, in-process", kernel, rt_space, runner="inprocess")
    timed("tile sweep, in-process", kernel, tile_space, runner="inprocess")
    t0 = time.perf_counter()
    cluster = LocalCluster(n_workers=a.workers, threads_per_worker=1, processes=True, dashboard_address=None)
    client = Client(cluster)
    print(f"LocalCluster of {a.workers} workers: start {time.perf_counter() - t0:.2f} s")
    try:
        timed(f"runtime sweep, {a.workers} workers", kernel, rt_space, client=client)
        # the same sweep again: the workers keep their compiled versions and task tables
        timed(f"runtime sweep, {a.workers} warm workers", kernel, rt_space, client=client)
        timed(f"tile sweep, {a.workers} workers", kernel, tile_space, client=client)
    finally:
        client.close()
        cluster.close()


if __name__ == "__main__":
    main()
