"""Numpy blocks of a GM buffer's cell entries, for the dependency engine (`regions.py`).

A block holds entries (cell, id, box) sorted by cell, each cell's coordinates linearised within
the block's own bounding range of cells, so the entries sharing a cell with a query are found
with `searchsorted`. Regular tile grids compress to almost nothing: keys that are 0..n-1, ids
that are consecutive and boxes that are exactly their cells are not stored. Entries are retired
by marking them dead; merging drops the dead.

A cell may hold many entries much smaller than itself (the cell size is fixed by a buffer's first
access, which may span the whole buffer). Queries into such a cell do not compare with every
entry: the block indexes each cell's entries by where their boxes start on a finer grid (the
largest entry extent, per dimension), so a query looks only at the few grid steps whose entries
can reach it. The pairs found are the same, in the same order: only the work changes.
"""

from __future__ import annotations

import numpy as np  # imported by regions.py only when a path needs numpy

from ..errors import KernelRuntimeError

TIER = 4  # blocks of one size class (powers of 4) merged at a time
_CHUNK = 1 << 22  # candidate pairs examined at once
CROWDED = 32  # a query whose cell holds more entries than this looks them up on the finer grid


class CellBlock:
    """Entries (cell, id, box) of one GM buffer, sorted by cell (see the module doc)."""

    __slots__ = ("n", "key", "ids", "id0", "lo", "hi", "size", "alive", "n_alive", "base", "radix", "stride",
                 "cmin", "cmax", "_grid")

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
        self._grid = None  # the finer grid inside cells (`_fine`), made when a crowded cell is queried
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

    def pairs(self, qcell, qlo=None, qhi=None):
        """(query row, block row) pairs that share a cell, in chunks, ordered by query row then
        block row. Given the query boxes (``qlo``, ``qhi``), a pair whose boxes cannot overlap
        may be left out (queries into crowded cells use the finer grid)."""
        rel = qcell - self.base
        inside = np.all((rel >= 0) & (rel < self.radix), axis=1)
        q = np.nonzero(inside)[0]
        if not len(q):
            return
        key = rel[q] @ self.stride
        a = self.search(key, "left")
        count = self.search(key, "right") - a
        nz = count > 0
        q, a, count, key = q[nz], a[nz], count[nz], key[nz]
        if not len(q):
            return
        if (count == 1).all():  # the common case: one entry per cell
            yield q, a
            return
        crowded = count > CROWDED if qlo is not None else None
        if crowded is not None and crowded.any():
            yield from self._fine_pairs(q, a, count, key, crowded, qcell, qlo, qhi)
            return
        yield from _expand(q, a, count)

    def _fine_pairs(self, q, a, count, key, crowded, qcell, qlo, qhi):
        """`pairs` when some queries fall in crowded cells: those look up the grid steps their
        box can reach (`_fine`), the others take their whole cell; merged in pair order."""
        grid = self._fine()
        if grid is None:  # the composite keys would overflow: compare with every entry of the cell
            yield from _expand(q, a, count)
            return
        step, radix, stride, fine_key, order = grid
        cq = q[crowded]
        # grid steps a query can meet, per dimension: entries start at most one step before it
        c0 = qcell[cq] * self.size
        first = np.maximum((qlo[cq] - c0 - step + 1) // step, -1) + 1
        last = np.minimum((qhi[cq] - 1 - c0) // step, radix - 2) + 1
        span = np.maximum(last - first + 1, 0)
        n_steps = np.prod(span, axis=1)
        whole = n_steps >= count[crowded]  # a query reaching most of its cell: the cell is cheaper
        light = ~crowded
        light[np.nonzero(crowded)[0][whole]] = True
        parts = [(q[light], a[light], count[light], None)]
        fine = ~whole & (n_steps > 0)
        if fine.any():
            cq, first, span, n_steps, base_key = cq[fine], first[fine], span[fine], n_steps[fine], key[crowded][fine]
            owner = np.repeat(np.arange(len(cq)), n_steps)
            within = np.arange(len(owner)) - np.repeat(np.cumsum(n_steps) - n_steps, n_steps)
            lin = np.zeros(len(owner), dtype=np.int64)
            for d in range(len(radix) - 1, -1, -1):
                s = span[owner, d]
                lin += (first[owner, d] + within % s) * stride[d]
                within //= s
            composite = base_key[owner] * int(np.prod(radix)) + lin
            fa = np.searchsorted(fine_key, composite, "left")
            fc = np.searchsorted(fine_key, composite, "right") - fa
            nz = fc > 0
            parts.append((cq[owner[nz]], fa[nz], fc[nz], order))
        qs, rows = [], []
        for pq, pa, pc, perm in parts:
            if not len(pq):
                continue
            for qi, bi in _expand(pq, pa, pc, chunk=None):
                qs.append(qi)
                rows.append(bi if perm is None else perm[bi])
        if not qs:
            return
        qi, bi = np.concatenate(qs), np.concatenate(rows)
        sort = np.lexsort((bi, qi))
        qi, bi = qi[sort], bi[sort]
        for start in range(0, len(qi), _CHUNK):
            yield qi[start:start + _CHUNK], bi[start:start + _CHUNK]

    def _fine(self):
        """The finer grid inside cells: (step, radix, stride, sorted composite keys, block rows in
        that order), or None when the keys would not fit in int64. A row's grid position is
        where its box starts relative to its cell, in steps of the largest extent (so a box
        reaches at most into the next step); boxes may start up to one step before their cell,
        hence the offset of one."""
        if self._grid is None:
            rows = np.arange(self.n)
            lo, hi = self.boxes(rows)
            step = np.maximum((hi - lo).max(axis=0), 1)
            radix = (self.size - 1) // step + 2
            total = int(np.prod(radix)) * (int(self.keys(rows[-1:])[0]) + 1)
            if total >= 1 << 62:
                self._grid = False
                return None
            stride = np.ones(len(radix), dtype=np.int64)
            for d in range(len(radix) - 2, -1, -1):
                stride[d] = stride[d + 1] * radix[d + 1]
            pos = (lo - self.cells_of(rows) * self.size) // step + 1
            composite = self.keys(rows).astype(np.int64) * int(np.prod(radix)) + pos @ stride
            order = np.argsort(composite, kind="stable")
            self._grid = (step, radix, stride, composite[order], order)
        return self._grid or None

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


def _expand(q, a, count, chunk=_CHUNK):
    """(query row, block row) pairs from each query's run ``a .. a+count-1`` of rows, in chunks of
    about ``chunk`` pairs (None: one chunk)."""
    if chunk is None:
        offs = np.arange(int(count.sum())) - np.repeat(np.cumsum(count) - count, count)
        yield np.repeat(q, count), np.repeat(a, count) + offs
        return
    ends = np.cumsum(count)
    start = 0
    while start < len(q):
        stop = int(np.searchsorted(ends, (ends[start - 1] if start else 0) + chunk, "right"))
        stop = max(stop, start + 1)
        c = count[start:stop]
        offs = np.arange(int(c.sum())) - np.repeat(np.cumsum(c) - c, c)
        yield np.repeat(q[start:stop], c), np.repeat(a[start:stop], c) + offs
        start = stop


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
