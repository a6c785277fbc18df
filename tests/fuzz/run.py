"""The fuzz script: ``python -m tests.fuzz.run N [--seed S] [--out DIR]`` (or scripts/fuzz.sh).

Runs N random kernels (hypothesis draws them; the seed makes a sweep repeatable), prints one
summary line, and writes a shrunk standalone repro of each distinct failure to DIR, plus
``rejections.txt`` (how many programs pypto refused, by error and message) for review.
"""

from __future__ import annotations

import argparse
import collections
import re
import sys
import tempfile
import time
from pathlib import Path

import torch
from hypothesis import HealthCheck, Phase, given, seed, settings

from .generate import programs
from .oracle import Outcome, repro_text, run_program
from .shrink import shrink


def _family(outcome: Outcome) -> str:
    """Failures of one cause: same kind and the same last line with the numbers taken out."""
    last = outcome.detail.strip().splitlines()[-1] if outcome.detail.strip() else ""
    if outcome.kind == "mismatch":
        last = ""
    return f"{outcome.kind}:{re.sub(r'[0-9.e+-]+', '#', last)[:120]}"


def sweep(n: int, seed_value: int, max_steps: int = 8, progress: int = 0, out: Path | None = None):
    """Run ``n`` programs; returns (counts, failures [(program, outcome)], rejections Counter).

    With ``progress`` > 0 a running count goes to stderr every ``progress`` kernels, so a sweep
    stopped before its end (a deadline, a reboot) still leaves honest counts behind; with ``out``
    each failure is also written there at once, unshrunk (``seed<S>_fail<k>.py``), for the same reason.
    """
    counts = collections.Counter()
    start = time.perf_counter()
    failures, rejections = [], collections.Counter()
    workdir = tempfile.TemporaryDirectory(prefix="pypto_fuzz_")

    @seed(seed_value)
    @settings(max_examples=n, database=None, phases=[Phase.generate], deadline=None,
              suppress_health_check=list(HealthCheck))
    @given(programs(max_steps=max_steps))
    def one(prog):
        outcome = run_program(prog, workdir.name)
        counts[outcome.status] += 1
        counts["two-value"] += outcome.kind == "two-value"
        if outcome.status == "fail":
            failures.append((prog, outcome))
            if out is not None:
                out.mkdir(parents=True, exist_ok=True)
                (out / f"seed{seed_value}_fail{len(failures)}.py").write_text(repro_text(outcome))
        elif outcome.status == "rejected":
            tiles = "default vec tiles" if prog.vec_tile is None else "drawn vec tiles"
            rejections[f"{outcome.kind}: {re.sub(r'[0-9]+', '#', outcome.detail)[:160]} ({tiles})"] += 1
        done = counts["pass"] + counts["fail"] + counts["rejected"]
        if progress and done % progress == 0:
            print(f"fuzz seed {seed_value} so far: {_summary(counts, time.perf_counter() - start)}",
                  file=sys.stderr, flush=True)
            if out is not None and rejections:  # itemized so far, for a sweep stopped before its end
                write_rejections(rejections, out, seed_value)

    try:
        one()
    finally:
        workdir.cleanup()
    return counts, failures, rejections


def _summary(counts, elapsed: float) -> str:
    total = counts["pass"] + counts["fail"] + counts["rejected"]
    two = f" ({counts['two-value']} of them by the two-value rule)" if counts["two-value"] else ""
    return (f"{total} kernels run, {counts['pass']} passed{two}, {counts['fail']} failed, "
            f"{counts['rejected']} rejected-as-invalid (PyptoError), {elapsed:.1f} s")


def write_repros(failures, out: Path, limit: int = 20, seed_value: int | None = None) -> list[Path]:
    """Shrink one failure per family and write it as ``out/fail_<k>.py`` (``seed<S>_fail_<k>.py``
    with ``seed_value``: sweeps of several seeds may share ``out``)."""
    out.mkdir(parents=True, exist_ok=True)
    seen, paths = set(), []
    for prog, outcome in failures:
        fam = _family(outcome)
        if fam in seen or len(paths) >= limit:
            continue
        seen.add(fam)
        small = shrink(prog, lambda p: run_program(p).signature == outcome.signature)
        final = run_program(small)
        path = out / (f"seed{seed_value}_fail_{len(paths)}.py" if seed_value is not None else f"fail_{len(paths)}.py")
        path.write_text(repro_text(final if final.status == "fail" else outcome))
        paths.append(path)
    return paths


def write_rejections(rejections, out: Path, seed_value: int) -> Path:
    """``out/rejections_seed<S>.txt``: how many programs pypto refused, by error and message."""
    out.mkdir(parents=True, exist_ok=True)
    path = out / f"rejections_seed{seed_value}.txt"
    path.write_text("".join(f"{v:6d}  {k}\n" for k, v in rejections.most_common()))
    return path


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("n", type=int, help="how many kernels to run")
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--out", default="fuzz-failures", help="folder for repros of failures")
    ap.add_argument("--max-steps", type=int, default=8, help="longest op chain")
    ap.add_argument("--progress", type=int, default=0, metavar="K",
                    help="print a running count to stderr every K kernels")
    ap.add_argument("--threads", type=int, default=1,
                    help="torch threads (default 1: the kernels are small, and on a shared machine "
                         "torch's thread pool spins for cores that others hold: 2.5x the CPU time)")
    args = ap.parse_args(argv)
    torch.set_num_threads(args.threads)
    start = time.perf_counter()
    out = Path(args.out)
    counts, failures, rejections = sweep(args.n, args.seed, args.max_steps, args.progress, out)
    elapsed = time.perf_counter() - start
    paths = write_repros(failures, out, seed_value=args.seed) if failures else []
    if rejections:
        write_rejections(rejections, out, args.seed)
    print(f"fuzz seed {args.seed}: {_summary(counts, elapsed)}"
          + (f"; repros: {', '.join(map(str, paths))}" if paths else ""))
    return 1 if counts["fail"] else 0


if __name__ == "__main__":
    sys.exit(main())
