"""How long the timeline of each upstream model kernel takes to simulate (issue 17's target: every
upstream model kernel that runs here, under 30 s on 2 cores).

    PYPTO_UPSTREAM=PATH .venv/bin/python bench/bench_model_timelines.py [--only NAME ...] [--timeout S]

Each file of upstream's ``models/`` that ran here (``docs/compat.json``: verified, ran, or failed a
numeric check after running) runs in its own process through the compatibility harness
(tools/compat/child.py: NPU emulation, a scratch copy of the upstream root as working directory,
the file unmodified). After the first call of each kernel
object the call's ``last_run.timeline`` is built and timed (CPU and wall), with its task count;
later calls of the same kernel are not timed (they re-simulate the same program). A file still
running at ``--timeout`` is stopped: the kernels it timed by then are kept.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
ENV_OUT = "PYPTO_BENCH_TIMELINE_OUT"


def _hook(out_path: str) -> None:
    """In the child: time the timeline of each kernel object's first successful call."""
    from pypto.frontend.jit import JitFunction

    timed: set = set()
    call = JitFunction.__call__

    def timed_call(self, *args, **kwargs):
        result = call(self, *args, **kwargs)
        if id(self) not in timed:
            timed.add(id(self))
            run = self.last_run
            c0, w0 = time.process_time(), time.perf_counter()
            tl = run.timeline if run is not None else None
            stats = tl.stats if tl is not None else {}
            row = {"kernel": getattr(self, "__name__", "?"), "cpu_s": time.process_time() - c0,
                   "wall_s": time.perf_counter() - w0, "tasks": stats.get("tasks"),
                   "makespan_us": stats.get("makespan_us")}
            with open(out_path, "a", encoding="utf-8") as f:
                f.write(json.dumps(row) + "\n")
        return result

    JitFunction.__call__ = timed_call


def _child(argv) -> int:
    _hook(os.environ[ENV_OUT])
    sys.path.insert(0, str(ROOT / "tools" / "compat"))
    import child  # the compatibility harness's child: runs the file as upstream's own runner does

    sys.path.pop(0)
    return child.main(argv)


def _jobs(upstream: Path, only) -> list:
    """The harness's jobs for the model files that ran here (docs/compat.json: verified, ran, or failed after running)."""
    from compat import selection

    data = json.loads((ROOT / "docs" / "compat.json").read_text(encoding="utf-8"))
    ran = {f["path"] for f in data["files"]
           if f["group"] == "models" and f["status"] in ("verified", "ran", "failed")}
    return [j for j in selection.select(upstream, ("models",)) if j.path in ran
            and (not only or any(o in j.path for o in only))]


def main() -> int:
    if len(sys.argv) > 1 and sys.argv[1] == "--child":
        return _child(sys.argv[2:])
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--upstream", default=os.environ.get("PYPTO_UPSTREAM"), help="upstream PyPTO tree")
    p.add_argument("--only", nargs="*", help="substrings of the model files to run")
    p.add_argument("--timeout", type=float, default=600.0, help="seconds per file")
    p.add_argument("--markdown", action="store_true")
    opts = p.parse_args()
    if not opts.upstream:
        p.error("give --upstream or set PYPTO_UPSTREAM")
    sys.path.insert(0, str(ROOT / "tools"))
    from compat.runner import child_env, copy_upstream

    upstream = Path(opts.upstream).resolve()
    rows = []
    with tempfile.TemporaryDirectory() as tmp:
        root = copy_upstream(upstream, Path(tmp) / "upstream")  # upstream's files write into their cwd
        for job in _jobs(upstream, opts.only):
            out = Path(tmp) / (job.path.replace("/", "__") + ".jsonl")
            env = {**child_env(ROOT), ENV_OUT: str(out)}
            cmd = [sys.executable, str(Path(__file__).resolve()), "--child", "--result", str(Path(tmp) / "r.json"),
                   "--root", str(root), "--mode", job.mode, str(root / job.path), "--", *job.args]
            t0 = time.perf_counter()
            try:
                subprocess.run(cmd, cwd=root, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
                               stdin=subprocess.DEVNULL, timeout=opts.timeout)
                stopped = ""
            except subprocess.TimeoutExpired:
                stopped = f" (stopped at {opts.timeout:.0f} s)"
            kernels = [json.loads(line) for line in out.read_text().splitlines()] if out.exists() else []
            rows.append((job.path, kernels, time.perf_counter() - t0, stopped))
            worst = max((k["cpu_s"] for k in kernels), default=0.0)
            print(f"{job.path}: {len(kernels)} kernels, slowest timeline {worst:.2f} CPU s, "
                  f"file {rows[-1][2]:.0f} s{stopped}", flush=True)
    load = os.getloadavg()[0]
    if opts.markdown:
        print(f"\nMeasured {time.strftime('%Y-%m-%d %H:%M UTC', time.gmtime())}, {os.cpu_count()} cpus, "
              f"load {load:.1f}\n")
        print("| model file | kernel | tasks | timeline CPU s | wall s | simulated µs |")
        print("|---|---|---|---|---|---|")
        for path, kernels, _, stopped in rows:
            if not kernels:
                print(f"| {path}{stopped} | (no kernel call finished) | | | | |")
            for k in kernels:
                print(f"| {path}{stopped} | {k['kernel']} | {k['tasks']} | {k['cpu_s']:.2f} | {k['wall_s']:.2f} | "
                      f"{k['makespan_us'] or 0:.1f} |")
    return 0


if __name__ == "__main__":
    sys.exit(main())
