"""Trials per second of pypto.tune sweeps of the flash-attention example (``examples/``).

    .venv/bin/python bench/bench_tune.py [--quick] [--seq 256] [--workers 1 2] [--rounds 1]

Three sweeps, each in this process and on a LocalCluster of each ``--workers`` count in turn
(back to back, so the machine's load is about the same for all):

* runtime: 1,000 configurations of 4 runtime options (device_sched_mode x stitch_function_max_num
  x launch_sched_aicpu_num x device_sched_parallelism), one compile, every other trial a
  re-simulation of the cached call; most configurations share a schedule (a stitch limit above
  the call's roots, the parallelism of a call without parallel loops), simulated once. On the
  cluster this runs first, on cold workers: each imports pypto and compiles the kernel;
* distinct: 160 configurations that are all distinct schedules (mode x AICPU threads x 8 stitch
  limits below the root count), on the workers warm from the first sweep (a new space: each
  compiles once), so every trial is a full simulation: this row compares worker counts;
* tiles: the query and KV block sizes (BQ x BK), every trial a compile + run + simulation.

The cluster's start-up is timed apart (``start s``) and not counted in the rates. Each row gives
the wall time, the CPU time of this process and of the workers (``time.process_time``), and how
many trials went to a worker (``sent``: the driver answers the others of an already simulated
schedule). ``--quick`` runs a tenth of the runtime sweep.

The closing table puts the targets' ratios side by side (one worker against in-process, two
workers against one), from wall time and from CPU time: a run's CPU-based rate is its trials per
CPU second of its busiest process (this one in-process; the busiest worker on a cluster, the
driver's own CPU, which the embedded scheduler shares, shown beside it), what it would reach with
a core per process. On a loaded machine only the CPU-based ratios mean something. ``--rounds N``
repeats everything N times in turns (a new cluster each round) and gives each cell the median of
its rounds: a single round of a few seconds swings by +-30% here even at load ~1.

``--paired N`` measures one worker against in-process alone, sweep by sweep, on one warm
one-worker cluster: N pairs of the same sweep in ABBA order (in-process then the worker, then the
worker then in-process, ...), the worker's kept evaluators dropped before each of its sweeps (so
it compiles once, as a new in-process sweep does). It prints the ratio of the summed times (wall,
and the worker's CPU against this process's), the spread of the pairs' own ratios, and where the
worker's CPU went: its task thread (the trials) and its other threads (Dask's event loop). This
machine's speed drifts by up to 2x within seconds (the same pure-Python loop), so sweeps run one
after the other compare its drift as much as the runners; alternating and summing cancels most of
it.
"""
from __future__ import annotations

import argparse
import os
import sys
import time

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, ROOT)

import pypto.tune as tune  # noqa: E402
from pypto.tune.runner import local_cluster  # noqa: E402
from pypto.tune.source import KernelSource  # noqa: E402

RUNTIME = {"device_sched_mode": [0, 1, 2, 3],
           "stitch_function_max_num": [1, 2, 4, 8, 16, 32, 64, 128, 256, 1024],
           "launch_sched_aicpu_num": [1, 2, 3, 4, 5],
           "device_sched_parallelism": [1, 2, 3, 4, 5]}
TILES = {"BQ": [16, 32, 64, 128], "BK": [32, 64, 128]}
DISTINCT = {"device_sched_mode": [0, 1, 2, 3], "stitch_function_max_num": [3, 5, 6, 7, 9, 10, 11, 12],
            "launch_sched_aicpu_num": [1, 2, 3, 4, 5]}


def shapes(seq):
    return {name: (1, seq, 64) for name in ("q", "k", "v", "out")}


def _cpu() -> float:
    return time.process_time()


ROWS: dict = {}  # (sweep, runner) -> [(trials, wall s, CPU s of this process, CPU s per worker) per round]


def timed(label, kernel, space, client=None, row=None, **kw):
    workers0 = client.run(_cpu) if client is not None else {}
    t0, c0 = time.perf_counter(), time.process_time()
    results = tune.sweep(kernel, space, client=client, runner="dask" if client is not None else "inprocess", **kw)
    seconds, cpu = time.perf_counter() - t0, time.process_time() - c0
    per_worker = [t - workers0.get(w, 0.0) for w, t in client.run(_cpu).items()] if client is not None else []
    workers = sum(per_worker)
    if row is not None:
        ROWS.setdefault(row, []).append((len(results), seconds, cpu, per_worker))
    ok = len(results.ok)
    sent = sum("same_schedule_as" not in r.extra for r in results)
    print(f"{label:34} {len(results):5d} trials {seconds:7.2f} s {len(results) / seconds:8.1f} trials/s"
          f"   CPU here {cpu:5.2f} s, workers {workers:5.2f} s   sent {sent:4d}   ok {ok}  "
          f"best {results.best.makespan_cycles} cycles   load {os.getloadavg()[0]:.1f}", flush=True)
    return results


def _median(values: list) -> float:
    v = sorted(values)
    return v[len(v) // 2] if len(v) % 2 else (v[len(v) // 2 - 1] + v[len(v) // 2]) / 2


def summary(worker_counts, rounds: int) -> None:
    """The targets' ratios side by side: wall and CPU-based trials/s per runner, 1 worker / in-process,
    2 workers / 1 worker; over several rounds, each cell is the median of its rounds' rates (the
    ratios are of medians): one round of a few seconds swings by +-30% on a shared machine."""
    runners = ["in-process"] + [f"{n} worker{'s' if n > 1 else ''}" for n in worker_counts]
    print(f"\n# side by side{f', median of {rounds} rounds' if rounds > 1 else ''}: trials/s by wall | CPU-based"
          " (trials per CPU second of the busiest process; driver CPU s)")
    print(f"{'sweep':10}" + "".join(f"{r:>32}" for r in runners) + "   1w/in wall cpu   2w/1w wall cpu")
    for sweep in ("runtime", "distinct", "tiles"):
        rates, cells = {}, []
        for r in runners:
            got = ROWS.get((sweep, r))
            if got is None:
                cells.append(f"{'-':>32}")
                continue
            walls, cpus, heres = [], [], []
            for n, wall, here, per_worker in got:
                busiest = max(per_worker) if per_worker else here
                walls.append(n / wall)
                cpus.append(n / busiest if busiest else 0.0)
                heres.append(here)
            rates[r] = (_median(walls), _median(cpus))
            driver = f" (driver {_median(heres):4.2f})" if got[0][3] else ""
            cells.append(f"{rates[r][0]:9.1f} | {rates[r][1]:7.1f}{driver:>15}")
        ratio = ""
        for a, b in (("1 worker", "in-process"), ("2 workers", "1 worker")):
            if a in rates and b in rates:
                ratio += f"   {rates[a][0] / rates[b][0]:5.2f}x {rates[a][1] / rates[b][1]:5.2f}x"
        print(f"{sweep:10}" + "".join(cells) + ratio)


def _worker_threads() -> dict:
    """CPU seconds of each thread of this process by thread name (Linux ``/proc``; {} elsewhere)."""
    import threading

    names = {t.native_id: t.name for t in threading.enumerate()}
    tick = os.sysconf("SC_CLK_TCK")
    out = {}
    try:
        for tid in os.listdir(f"/proc/{os.getpid()}/task"):
            with open(f"/proc/{os.getpid()}/task/{tid}/stat") as f:
                fields = f.read().rsplit(")", 1)[1].split()
            out[names.get(int(tid), tid)] = (int(fields[11]) + int(fields[12])) / tick
    except OSError:
        return {}
    return out


def _forget_evaluators() -> float:
    """On a worker: drop its kept evaluators (its next sweep compiles, as a new in-process one does)."""
    from pypto.tune import runner

    runner._EVALUATORS.clear()
    return time.process_time()


def paired(kernel, spaces: dict, pairs: int) -> None:
    """One worker against in-process, each sweep in ``pairs`` ABBA pairs on one warm worker."""
    from distributed import Client

    cluster = local_cluster(1)
    client = Client(cluster)
    print(f"\n# one worker vs in-process, {pairs} pairs in ABBA order per sweep (warm worker, its evaluators "
          "dropped before each sweep)")
    print(f"{'sweep':10} {'in-process wall':>16} {'1 worker wall':>14} {'1w/in wall':>11} {'pairs':>12} "
          f"{'1w/in CPU':>10}   worker CPU: trials thread | other threads; driver CPU")
    try:
        for name, space in spaces.items():
            tune.sweep(kernel, space, client=client)  # warm: the worker has compiled this kernel once
            sums = {"in": [0.0, 0.0], "1w": [0.0, 0.0, 0.0, 0.0, 0.0]}
            ratios = []
            for k in range(pairs):
                pair = {}
                for which in (("in", "1w") if k % 2 == 0 else ("1w", "in")):
                    if which == "1w":
                        client.run(_forget_evaluators)
                        before = next(iter(client.run(_worker_threads).values()))
                    t0, c0 = time.perf_counter(), time.process_time()
                    tune.sweep(kernel, space, client=client if which == "1w" else None,
                               runner="dask" if which == "1w" else "inprocess")
                    wall, cpu = time.perf_counter() - t0, time.process_time() - c0
                    pair[which] = wall
                    if which == "in":
                        sums["in"][0] += wall
                        sums["in"][1] += cpu
                        continue
                    after = next(iter(client.run(_worker_threads).values()))
                    spent = {t: after[t] - before.get(t, 0.0) for t in after}
                    trials = sum(v for t, v in spent.items() if "Dask-Default-Threads" in str(t))
                    for i, v in enumerate((wall, sum(spent.values()), trials, sum(spent.values()) - trials, cpu)):
                        sums["1w"][i] += v
                ratios.append(pair["in"] / pair["1w"])
            w_in, c_in = sums["in"]
            w_1, c_1, trials, other, driver = sums["1w"]
            cpu_ratio = f"{c_in / c_1:9.2f}x" if c_1 else f"{'-':>10}"
            print(f"{name:10} {w_in:14.2f} s {w_1:12.2f} s {w_in / w_1:10.2f}x {min(ratios):5.2f}-{max(ratios):4.2f}x "
                  f"{cpu_ratio}   {trials:6.2f} s | {other:5.2f} s; {driver:5.2f} s  load {os.getloadavg()[0]:.1f}",
                  flush=True)
    finally:
        client.close()
        cluster.close()


def main():
    p = argparse.ArgumentParser()
    p.add_argument("--quick", action="store_true")
    p.add_argument("--seq", type=int, default=256)
    p.add_argument("--workers", type=int, nargs="+", default=[1, 2])
    p.add_argument("--rounds", type=int, default=1,
                   help="repeat every sweep on every runner this many times, in turns; report medians")
    p.add_argument("--paired", type=int, default=0, metavar="N",
                   help="only one worker vs in-process: N ABBA pairs of each sweep on one warm worker")
    a = p.parse_args()
    import torch
    from distributed import Client

    torch.set_num_threads(1)
    source = KernelSource(name="flash_attention", path=os.path.join(ROOT, "examples", "flash_attention.py"))
    kernel = source.load()
    runtime = dict(RUNTIME)
    if a.quick:
        runtime["stitch_function_max_num"] = runtime["stitch_function_max_num"][:1]
    rt_space = tune.space(shapes(a.seq), options=runtime)
    distinct = tune.space(shapes(a.seq), options=DISTINCT)
    tile_space = tune.space(shapes(a.seq), params=TILES)
    print(f"# pypto.tune: flash attention, batch 1, seq {a.seq}, D 64; {os.cpu_count()} CPUs, "
          f"load {os.getloadavg()[0]:.1f}")
    if a.paired:
        paired(kernel, {"runtime": rt_space, "distinct": distinct, "tiles": tile_space}, a.paired)
        return
    for k in range(a.rounds):
        if a.rounds > 1:
            print(f"## round {k + 1} of {a.rounds}")
        timed("runtime sweep, in-process", kernel, rt_space, row=("runtime", "in-process"))
        timed("distinct schedules, in-process", kernel, distinct, row=("distinct", "in-process"))
        timed("tile sweep, in-process", kernel, tile_space, row=("tiles", "in-process"))
        for n in a.workers:  # a new cluster each round: its workers start cold, as a user's do
            t0 = time.perf_counter()
            cluster = local_cluster(n)  # as tune.sweep starts one: no dashboard, no worker profiler
            client = Client(cluster)
            print(f"LocalCluster of {n} workers: start {time.perf_counter() - t0:.2f} s")
            name = f"{n} worker{'s' if n > 1 else ''}"
            try:
                timed(f"runtime sweep, {n} cold workers", kernel, rt_space, client, row=("runtime", name))
                timed(f"distinct schedules, {n} workers", kernel, distinct, client, row=("distinct", name))
                timed(f"tile sweep, {n} workers", kernel, tile_space, client, row=("tiles", name))
            finally:
                client.close()
                cluster.close()
    summary(a.workers, a.rounds)


if __name__ == "__main__":
    main()
