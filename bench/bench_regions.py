"""Dependency-engine benchmark (pypto/runtime/regions.py): accesses per second for the patterns
the engine must keep near-linear, at n = 10^4 .. 10^6.

    .venv/bin/python bench/bench_regions.py [--quick]

Each pattern records n tasks' accesses into a fresh RegionIndex and then reads its edges (the
deduplication runs there); the figure is the wall time of both (time.perf_counter) and
accesses/s. `--quick` stops at n = 10^5.
"""
import argparse
import gc
import time

import numpy as np

from pypto.runtime.regions import RegionIndex


def rows(n):
    """Loop over disjoint rows: task i reads x[i] and writes out[i] (one box each)."""
    d = RegionIndex()
    for i in range(n):
        d.access("x", i, (i, 0), (i + 1, 16), False)
        d.access("out", i, (i, 0), (i + 1, 16), True)
    return d, 2 * n


def columns(n):
    """Loop over column blocks: task j reads y[:, 16j:16j+16] and writes z[:, 16j:16j+16]."""
    d = RegionIndex()
    for j in range(n):
        d.access("y", j, (0, 16 * j), (64, 16 * j + 16), False, cell=(64, 16))
        d.access("z", j, (0, 16 * j), (64, 16 * j + 16), True, cell=(64, 16))
    return d, 2 * n


def accumulator(n):
    """Online softmax: every step reads the same K block and reads and rewrites the same acc."""
    d = RegionIndex()
    for i in range(n):
        d.access("k", i, (0, 0), (128, 64), False)
        d.access("acc", i, (0, 0), (16, 64), False)
        d.access("acc", i, (0, 0), (16, 64), True)
    return d, 3 * n


def readers(n):
    """K written once, read by n query blocks (each also writes its own output rows)."""
    d = RegionIndex()
    d.access("k", 0, (0, 0), (256, 64), True)
    for i in range(1, n + 1):
        d.access("k", i, (0, 0), (256, 64), False)
        d.access("o", i, (16 * i, 0), (16 * i + 16, 64), True)
    return d, 2 * n + 1


def gather(n):
    """n small row writes, then one read of the whole tensor."""
    d = RegionIndex()
    for i in range(n):
        d.access("y", i, (i, 0), (i + 1, 16), True)
    d.access("y", n, (0, 0), (n, 16), False)
    return d, n + 1


def tiles(n):
    """One call over n tiles (one box per tile, numpy path): read x, write y; then a call reading
    y with tiles twice as tall."""
    d = RegionIndex()
    r = np.arange(n, dtype=np.int64)
    lo = np.stack([r, np.zeros_like(r)], 1)
    d.access("x", 0, lo, lo + [1, 16], False)
    d.access("y", 0, lo, lo + [1, 16], True)
    h = np.arange(n // 2, dtype=np.int64)
    lo2 = np.stack([2 * h, np.zeros_like(h)], 1)
    d.access("y", n, lo2, lo2 + [2, 16], False)
    return d, 2 * n + n // 2


PATTERNS = [rows, columns, accumulator, readers, gather, tiles]


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--quick", action="store_true", help="stop at n = 10^5")
    args = ap.parse_args()
    sizes = (10_000, 100_000) if args.quick else (10_000, 100_000, 1_000_000)
    print(f"{'pattern':>12} {'n':>9} {'accesses':>9} {'edges':>9} {'seconds':>8} {'accesses/s':>11} {'µs/access':>9}")
    for pattern in PATTERNS:
        for n in sizes:
            gc.collect()
            t0 = time.perf_counter()
            d, accesses = pattern(n)
            edges = len(d.edges()[0])
            s = time.perf_counter() - t0
            print(f"{pattern.__name__:>12} {n:>9} {accesses:>9} {edges:>9} {s:>8.3f} {accesses / s:>11.0f} "
                  f"{s / accesses * 1e6:>9.2f}")


if __name__ == "__main__":
    main()
