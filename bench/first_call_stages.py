"""Where a first call at a new DYNAMIC size spends its CPU time, stage by stage.

The rows of ``bench/run.py --only first_call`` (softmax and add+mul over row blocks compiled at
512 rows, flash attention compiled at S=256), each called at five sizes it has never seen; every
first call is timed whole and per stage (``time.process_time``, the stages' functions wrapped for
this process only), then the cached call at that size (best of 20). Medians over the sizes, in ms:

    python bench/first_call_stages.py [softmax|add_mul|flash]   # (imports this checkout's pypto)

Stages: ``walk`` (the control walk and stitching into tasks), ``notes`` (the layout notes and the
device-task edges: the rest of planning), ``levels`` (the dependency engine), ``planner`` (tasks
grouped into steps), ``fold`` (the plan's run form: reduction folding, reshape copies), ``run``
(the first run's steps, interpreted, on new tensors), ``gc`` (cyclic collections during the call),
``other`` (binding, guards, bookkeeping). Figures are for reading, never for tests.
"""
from __future__ import annotations

import gc
import os
import statistics
import sys
import time

import torch

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))  # this checkout's pypto
import kernels  # noqa: E402

from pypto.runtime import execute as X  # noqa: E402

_acc: dict = {}


def _timed(owner, name, tag):
    fn = getattr(owner, name)

    def wrapper(*args, **kwargs):
        c0 = time.process_time()
        try:
            return fn(*args, **kwargs)
        finally:
            _acc[tag] = _acc.get(tag, 0.0) + time.process_time() - c0
    setattr(owner, name, wrapper)


def _gc_clock():
    start = [0.0]

    def callback(phase, info):
        if phase == "start":
            start[0] = time.process_time()
        else:
            _acc["gc"] = _acc.get("gc", 0.0) + time.process_time() - start[0]
    gc.callbacks.append(callback)


def _install():
    _timed(X.LoweredExecutor, "_plan", "plan")
    _timed(X, "walk", "walk")
    _timed(X, "levels", "levels")
    _timed(X.Planner, "plan", "planner")
    _timed(X.CallPlan, "__init__", "fold")
    _timed(X.CallPlan, "run_steps", "run")
    _gc_clock()


ROWS = {
    "softmax": (lambda: kernels.row_block_loop("softmax"), [512 + 32 * (k + 1) for k in range(5)]),
    "add_mul": (lambda: kernels.row_block_loop("add_mul"), [512 + 32 * (k + 1) for k in range(5)]),
    "flash": (lambda: kernels.flash_attention(seq=256), [256 + 64 * (k + 1) for k in range(5)]),
}


def stages(name):
    """{stage: median ms} of the first calls of row ``name`` at its new sizes, with ``first`` and
    ``cached`` (the whole first call, the cached call at that size)."""
    make, sizes = ROWS[name]
    kernel, args, _ = make()
    kernel(*args)  # the one compile
    per = []
    for n in sizes:
        g = torch.Generator().manual_seed(n)
        if name == "flash":
            d = args[0].shape[2]
            call_args = tuple(torch.randn(1, n, d, generator=g) for _ in range(3)) + (torch.zeros(1, n, d),)
        else:
            call_args = tuple(torch.randn(n, a.shape[1], generator=g) if a.shape[0] == args[0].shape[0] else a
                              for a in args)
        gc.collect()
        _acc.clear()
        c0 = time.process_time()
        kernel(*call_args)
        first = time.process_time() - c0
        row = dict(_acc)
        cached = []
        for _ in range(20):
            c0 = time.process_time()
            kernel(*call_args)
            cached.append(time.process_time() - c0)
        plan = row.get("plan", 0.0)
        row["notes"] = plan - sum(row.get(k, 0.0) for k in ("walk", "levels", "planner", "fold"))
        row["other"] = first - plan - row.get("run", 0.0) - row.get("gc", 0.0)
        row["first"], row["cached"] = first, min(cached)
        per.append(row)
    keys = ("first", "cached", "walk", "notes", "levels", "planner", "fold", "run", "gc", "other")
    return {k: 1e3 * statistics.median(r.get(k, 0.0) for r in per) for k in keys}


def main():
    torch.set_num_threads(1)
    _install()
    names = sys.argv[1:] or list(ROWS)
    print(f"load {os.getloadavg()[0]:.1f}")
    for name in names:
        s = stages(name)
        print(f"{name}: first {s['first']:.2f} ms / cached {s['cached']:.2f} ms = {s['first'] / s['cached']:.1f}x; "
              + ", ".join(f"{k} {s[k]:.2f}" for k in ("walk", "notes", "levels", "planner", "fold", "run", "gc",
                                                      "other")))


if __name__ == "__main__":
    main()
