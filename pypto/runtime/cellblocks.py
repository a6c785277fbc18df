"""Numpy blocks of a GM buffer's cell entries, for the dependency engine (`regions.py`).

A block holds entries (cell, id, box) sorted by cell, each cell's coordinates linearised within
the block's own bounding range of cells, so the entries sharing a cell with a query are found
with `searchsorted`. Regular tile grids compress to almost nothing: keys that are 0..n-1, ids
that are consecutive and boxes that are exactly their cells are not stored. Entries are retired
by marking them dead; merging drops the dead.
"""

from __future__ import annotations

import numpy as np  # imported by regions.py only when a path needs numpy

from ..errors import KernelRuntimeError

TIER = 4  # blocks of one size class (powers of 4) merged at a time
_CHUNK = 1 << 22  # candidate pairs examined at once


class CellBlock:
    """Entries (cell, id, box) of one GM buffer, sorted by cell (see the module doc)."""

    __slots__ = ("n", "key", "ids", "id0", "lo", "hi", "size", "alive", "n_alive", "base", "radix", "stride",
                 "cmin", "cmax")

    @classmethod
    def build(cls, cells, ids, lo, hi, size):
        self = cls()
        self.n = n = len(cells)
        self.size = np.asarray(size, dtype=np.int64)
        self.base = cells.min(axis=0)
        self.radix = cells.max(axis=0) - self.base + 1
        self.cmin = tuple(self.base.tolist())
        self.cmax = tuple((self.base + self.radix - 1).tolist())
        stride = np.ones(len(self.radix), dtype=np.int64)
        total = 1
        for d in range(len(self.radix) - 1, -1, -1):
            stride[d] = total
            total *= int(self.radix[d])
        if total >= 1 << 62:
            raise KernelRuntimeError("internal: too many cells in one GM buffer for the dependency index")
        self.stride = stride
        key = (cells - self.base) @ stride
        step = np.diff(key)
        if n > 1 and (step < 0).any():
            order = np.argsort(key, kind="stable")
            key, cells, ids, lo, hi = key[order], cells[order], ids[order], lo[order], hi[order]
            step = np.diff(key)
        self.key = None if key[0] == 0 and (step == 1).all() else key  # None: the keys are 0 .. n-1
        id_step = np.diff(ids)
        if (id_step == 1).all():
            self.ids, self.id0 = None, int(ids[0])  # None: ids are id0 .. id0+n-1
        else:
            self.ids, self.id0 = _narrow(ids), 0
        c0 = cells * self.size
        if (lo == c0).all() and (hi == c0 + self.size).all():
            self.lo = self.hi = None  # None: each box is its cell
        else:
            self.lo, self.hi = _narrow(lo), _narrow(hi)
        self.alive = np.ones(n, dtype=bool)
        self.n_alive = n
        return self

    @property
    def tier(self) -> int:
        return self.n_alive.bit_length() // 2  # log4 of the live rows

    @classmethod
    def merge(cls, blocks):
        parts = [blk.live() for blk in blocks]
        return cls.build(*(np.concatenate([p[k] for p in parts]) for k in range(4)), blocks[0].size)

    def keys(self, rows):
        return rows if self.key is None else self.key[rows]

    def ids_of(self, rows):
        return rows + self.id0 if self.ids is None else self.ids[rows].astype(np.int64)

    def boxes(self, rows):
        """(lo, hi) int64 arrays of the given rows."""
        if self.lo is None:
            lo = self.cells_of(rows) * self.size
            return lo, lo + self.size
        return self.lo[rows].astype(np.int64), self.hi[rows].astype(np.int64)

    def search(self, key, side):
        if self.key is None:
            return np.clip(key + (side == "right"), 0, self.n)
        return np.searchsorted(self.key, key, side)

    def live(self):
        rows = np.nonzero(self.alive)[0]
        cells = self.cells_of(rows)
        if self.lo is None:
            lo = cells * self.size
            return cells, self.ids_of(rows), lo, lo + self.size
        return (cells, self.ids_of(rows)) + self.boxes(rows)

    def near(self, clo, chi) -> bool:
        """Whether the inclusive cell range [clo, chi] meets the block's range of cells (a cheap
        Python test before any numpy work)."""
        for a, b, x, y in zip(clo, chi, self.cmin, self.cmax):
            if b < x or a > y:
                return False
        return True

    def cells_of(self, rows):
        k = self.keys(rows)
        out = np.empty((len(rows), len(self.radix)), dtype=np.int64)
        for d in range(len(self.radix)):
            out[:, d] = k // self.stride[d]
            k = k - out[:, d] * self.stride[d]
        return out + self.base

    def pairs(self, qcell):
        """(query row, block row) pairs that share a cell, in chunks."""
        rel = qcell - self.base
        inside = np.all((rel >= 0) & (rel < self.radix), axis=1)
        q = np.nonzero(inside)[0]
        if not len(q):
            return
        key = rel[q] @ self.stride
        a = self.search(key, "left")
        count = self.search(key, "right") - a
        nz = count > 0
        q, a, count = q[nz], a[nz], count[nz]
        if not len(q):
            return
        if (count == 1).all():  # the common case: one entry per cell
            yield q, a
            return
        ends = np.cumsum(count)
        start = 0
        while start < len(q):
            stop = int(np.searchsorted(ends, (ends[start - 1] if start else 0) + _CHUNK, "right"))
            stop = max(stop, start + 1)
            c = count[start:stop]
            offs = np.arange(int(c.sum())) - np.repeat(np.cumsum(c) - c, c)
            yield np.repeat(q[start:stop], c), np.repeat(a[start:stop], c) + offs
            start = stop

    def in_cell_range(self, clo, chi):
        """Rows whose cell lies in the inclusive cell range [clo, chi]."""
        lo = np.maximum(np.asarray(clo) - self.base, 0)
        hi = np.minimum(np.asarray(chi) - self.base, self.radix - 1)
        if np.any(lo > hi):
            return np.zeros(0, dtype=np.int64)
        a = int(self.search(np.int64(lo @ self.stride), "left"))
        b = int(self.search(np.int64(hi @ self.stride), "right"))
        rows = np.arange(a, b)
        if len(self.radix) > 1:
            cells = self.cells_of(rows) - self.base
            rows = rows[np.all((cells >= lo) & (cells <= hi), axis=1)]
        return rows


def _narrow(a):
    """``a`` as int32 when its values fit (half the memory), else as is."""
    if len(a) and (a.max() >= 2 ** 31 or a.min() < -2 ** 31):
        return a
    return a.astype(np.int32)


def kill(dead):
    for blk, rows in dead:
        if len(rows):
            rows = np.unique(rows)  # one row may be covered by several boxes
            blk.n_alive -= int(np.count_nonzero(blk.alive[rows]))
            blk.alive[rows] = False
