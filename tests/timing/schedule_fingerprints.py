"""Fingerprints of simulated schedules: what `test_schedule_determinism` compares, cycle for cycle.

A fingerprint is a short hash of every column the simulator produces for one call under one set of
runtime options (per task: start, end, core, schedule thread, pipes, L2 hits, the start reasons;
every AICPU span; the stats). A change to the simulator that is meant to be only faster must
leave every fingerprint as it was.

A change to the timing model that is meant to move cycles regenerates the stored fingerprints:

    python -m tests.timing.schedule_fingerprints --write

(run from the repository root; say so in the commit that changes the model).
"""

from __future__ import annotations

import hashlib
import json
import os
import sys

import numpy as np

HERE = os.path.dirname(os.path.abspath(__file__))
STORE = os.path.join(HERE, "schedule_fingerprints.json")

# runtime options each case is simulated under: every schedule mode with several AICPU thread
# counts, and each other option the scheduler reads
OPTIONS = ([{}] + [{"device_sched_mode": m, "launch_sched_aicpu_num": a} for m in range(4) for a in (1, 2, 5)]
           + [{"stitch_function_max_num": 1}, {"stitch_function_max_num": 3, "device_sched_mode": 3},
              {"device_sched_parallelism": 4}, {"launch_early_mode": 1, "device_sched_mode": 1},
              {"valid_shape_optimize": 1}])
# the flash-attention example as the tuning benchmark sweeps it: every mode x AICPU thread count
FA_OPTIONS = ([{"device_sched_mode": m, "launch_sched_aicpu_num": a} for m in range(4) for a in range(1, 6)]
              + [{"stitch_function_max_num": s, "device_sched_mode": 2} for s in (1, 2, 8)])
# calibration cases small enough to simulate often (each a few hundred to a few thousand tasks)
CALIBRATION = ("ptoisa_fa_s0_512_s1_1024", "ptoisa_jitfa_s0_256_s1_2048", "pypto_gdr_inverse",
               "pypto_mm6144_native", "ptoisa_gemm_1536", "pypto_skinny_blockdiag", "topk_a3_f32_2304",
               "ub_copy_gm_ub_gm_256x16384_fp16", "mhc_post_910b2_4x512x256_ns4", "sinkhorn_pto_b64_n128",
               "int8_quant_pto_plateau", "torch_add_910b4_16384_fp32")


def fingerprint(timeline) -> dict:
    """The makespan and a hash of every simulated column of ``timeline``."""
    ev, sp = timeline.events, timeline.aicpu
    h = hashlib.sha1()

    def add(*arrays):
        for a in arrays:
            h.update(np.ascontiguousarray(np.asarray(a, dtype=np.int64)).tobytes())
            h.update(b"|")

    add(ev.order, ev.start, ev.end, ev.core, ev.thread)
    # the cost row of each task by content (its index in the cost table is an internal numbering)
    h.update(repr([ev.cost_pipes[c] for c in ev.cost.tolist()]).encode())
    add([ev.cost_hits[c] for c in ev.cost.tolist()])
    why = ev.why
    add(why["ready"], why["by"], why["dispatched"])
    add(sp.c_start, sp.c_end, sp.thread, sp.name, sp.start, sp.end, sp.arg, sp.at)
    add(timeline.deps.src, timeline.deps.dst)
    s = timeline.stats
    stats = {k: s[k] for k in ("makespan_cycles", "critical_path_cycles", "tasks", "device_tasks",
                               "dispatches_per_thread", "control_wait_cycles", "cores_used", "bubbles")}
    stats["l2_hit_rate"] = round(s["l2_hit_rate"], 12)
    h.update(json.dumps(stats, sort_keys=True).encode())
    return {"makespan": int(s["makespan_cycles"]), "start": hashlib.sha1(np.asarray(ev.start, np.int64).tobytes())
            .hexdigest()[:12], "all": h.hexdigest()[:16]}


def option_key(opts: dict) -> str:
    return json.dumps(opts, sort_keys=True)


def cases():
    """(name, replayer, runtime options of the call, option list) for every case, built now."""
    sys.path.insert(0, os.path.dirname(os.path.dirname(HERE)))
    import torch

    from pypto.calibrate.replay import replayer as make_replayer
    from tests.timing import _timing_kernels as tk

    torch.set_num_threads(1)

    def of_record(rec):
        compiled = rec.compiled
        executor = compiled.executor
        from pypto.runtime.scheduler import Replayer
        from pypto.runtime.tasks import aliased_keys

        return Replayer(compiled.lowered, executor.last_stream,
                        aliased_keys(compiled.lowered.memory_key, getattr(executor, "last_same", ()))), \
            compiled.options.runtime()

    runs = [("chains", tk.run_chains), ("wide", tk.run_wide), ("rows", tk.run_rows),
            ("rows_stitch2", lambda: tk.run_rows(tk.rows_stitch2)),
            ("rows_parallel", lambda: tk.run_rows(tk.rows_parallel)),
            ("count_loop", tk.run_count_loop), ("count_loop_host", lambda: tk.run_count_loop(tk.count_loop_host)),
            ("batch_lens", tk.run_batch_lens), ("tails", tk.run_tails), ("gather_rows", tk.run_gather_rows)]
    for name, run in runs:
        yield (f"timing/{name}", *of_record(run()), OPTIONS)

    from pypto.tune.source import KernelSource

    root = os.path.dirname(os.path.dirname(HERE))
    fa = KernelSource(name="flash_attention", path=os.path.join(root, "examples", "flash_attention.py")).load()
    g = torch.Generator().manual_seed(0)
    q, k, v = (torch.randn(1, 256, 64, generator=g) for _ in range(3))
    for bq, bk in ((32, 64), (64, 128)):
        out = torch.zeros(1, 256, 64)
        fa(q, k, v, out, BQ=bq, BK=bk)
        yield (f"flash_attention/s256_bq{bq}_bk{bk}", *of_record(fa.last_run), FA_OPTIONS)

    from pypto.calibrate.cases import load_all

    corpus = load_all()
    for cid in CALIBRATION:
        sim = corpus[cid].build()  # in its own options scope (calibrate/cases.py)
        yield (f"calibration/{cid}", sim.replayer, {**sim.runtime, **corpus[cid].runtime}, OPTIONS[:8])
    del make_replayer


def compute(fresh: bool = False) -> dict:
    """name -> option key -> fingerprint, simulated now (``fresh``: a new Replayer per simulation,
    so that nothing one simulation cached can serve another)."""
    from pypto.runtime.machine import current_machine
    from pypto.runtime.scheduler import Replayer

    m = current_machine()
    out = {}
    for name, rp, runtime, options in cases():
        row = out[name] = {}
        for opts in options:
            r = Replayer(rp.lowered, rp.stream, rp.memory_key) if fresh else rp
            row[option_key(opts)] = fingerprint(r.simulate({**runtime, **opts}, m))
    return out


def main(argv=None):
    import argparse

    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--write", action="store_true", help=f"store the fingerprints in {os.path.basename(STORE)}")
    a = p.parse_args(argv)
    fps = compute()
    if a.write:
        with open(STORE, "w") as f:
            json.dump(fps, f, indent=1, sort_keys=True)
            f.write("\n")
    print(f"{sum(len(v) for v in fps.values())} fingerprints of {len(fps)} cases"
          + (f" written to {STORE}" if a.write else ""))


if __name__ == "__main__":
    main()
