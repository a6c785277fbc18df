"""Boxes of one row-major memory seen under two shapes (reshape aliases, passes/aliasing.py).

An access of a value that lives in another value's memory touches, in that memory, the elements
whose row-major positions its box covers. The dependency engine compares boxes of one shape, so
the box is carried over as the smallest box of the other shape that holds all those positions:
exact when the box spans whole trailing dims (a tile of whole rows regrouped into other rows, the
usual case), larger otherwise (more edges, never a missed one).
"""

from __future__ import annotations

from .._lazy import LazyModule

np = LazyModule("numpy")


def _strides(shape):
    out, acc = [], 1
    for s in reversed(shape):
        out.append(acc)
        acc *= max(int(s), 1)
    return list(reversed(out))


def covering_boxes(lo, ext, shape_from, shape_to):
    """(lo, ext) [m, rank_to] int64 for boxes (lo, ext) [m, rank_from] of a tensor of ``shape_from``
    seen as ``shape_to`` (same number of elements). Empty boxes stay empty (extent 0)."""
    lo = np.asarray(lo, dtype=np.int64).reshape(-1, len(shape_from))
    ext = np.asarray(ext, dtype=np.int64).reshape(-1, len(shape_from))
    m, rank = lo.shape[0], len(shape_to)
    empty = (ext <= 0).any(axis=1) if ext.shape[1] else np.zeros(m, dtype=bool)
    sf = np.asarray(_strides(shape_from), dtype=np.int64)
    first = (lo * sf).sum(axis=1)
    last = ((lo + np.maximum(ext, 1) - 1) * sf).sum(axis=1)
    st = _strides(shape_to)
    u = np.empty((m, rank), dtype=np.int64)
    w = np.empty((m, rank), dtype=np.int64)
    for d, (s, n) in enumerate(zip(st, shape_to)):
        u[:, d] = (first // s) % max(int(n), 1)
        w[:, d] = (last // s) % max(int(n), 1)
    differs = u != w
    # dims before the first that differs are fixed; that one spans u..w; the later ones span all
    split = np.where(differs.any(axis=1), differs.argmax(axis=1), rank) if rank else np.zeros(m, dtype=np.int64)
    dims = np.arange(rank)[None, :]
    full = np.asarray([int(n) for n in shape_to], dtype=np.int64)[None, :]
    out_lo = np.where(dims > split[:, None], 0, u)
    out_ext = np.where(dims < split[:, None], 1, np.where(dims == split[:, None], w - u + 1, full))
    out_ext[empty] = 0
    return out_lo, out_ext


def covering_box(lo, hi, shape_from, shape_to):
    """(lo, hi) lists of the box ``lo .. hi`` (exclusive) carried from ``shape_from`` to ``shape_to``."""
    ext = [h - l for l, h in zip(lo, hi)]
    a, e = covering_boxes([lo], [ext], shape_from, shape_to)
    a, e = a[0].tolist(), e[0].tolist()
    return a, [x + n for x, n in zip(a, e)]
