"""One side (writers or readers) of a crowded cell of the dependency engine's per-cell Python path
(`regions.py`), indexed on a finer grid.

A cell's size is fixed by the first access of its buffer; when that access spans the whole
buffer, every later tile lands in one cell, and scanning the cell's entries at each access is
quadratic. A `CrowdedSide` holds the same entries, in the same order, for the same uses (iterate,
append, clear, drop what a write covers), and finds the entries a box can overlap from the grid
steps the box reaches: steps of the typical entry extent (taken when the cell became crowded);
entries wider than a step are kept aside and always looked at.
"""

from __future__ import annotations

import itertools

LIMIT = 64  # entries of one side of one cell before it is indexed


class CrowdedSide:
    """Entries ``(id, lo, hi)`` of one side of one cell (see the module doc)."""

    __slots__ = ("origin", "top", "step", "entries", "grid", "wide", "seq")

    def __init__(self, entries, cell_key, cell_size):
        self.origin = tuple(c * s for c, s in zip(cell_key, cell_size))
        # grid positions run from -1 (a box starting up to one step before the cell) to top
        extents = sorted(tuple(h - l for l, h in zip(e[1], e[2])) for e in entries)
        typical = extents[len(extents) // 2]
        self.step = tuple(max(1, min(x, s)) for x, s in zip(typical, cell_size))
        self.top = tuple((s - 1) // st for s, st in zip(cell_size, self.step))
        self.entries: dict = {}  # insertion number -> entry, in insertion order
        self.grid: dict = {}  # grid position -> insertion numbers
        self.wide: set = set()
        self.seq = itertools.count()
        for e in entries:
            self.append(e)

    def append(self, e) -> None:
        k = next(self.seq)
        self.entries[k] = e
        lo, hi = e[1], e[2]
        if any(h - l > st for l, h, st in zip(lo, hi, self.step)):
            self.wide.add(k)
        else:
            pos = tuple((l - o) // st for l, o, st in zip(lo, self.origin, self.step))
            self.grid.setdefault(pos, []).append(k)

    def __iter__(self):
        return iter(list(self.entries.values()))

    def __len__(self) -> int:
        return len(self.entries)

    def __bool__(self) -> bool:
        return bool(self.entries)

    def clear(self) -> None:
        self.entries.clear()
        self.grid.clear()
        self.wide.clear()

    def near(self, lo, hi):
        """The entries whose boxes may overlap ``[lo, hi)``, in insertion order (a superset of
        those that do: the caller tests the overlap)."""
        return [e for _, e in sorted(self._near_items(lo, hi), key=_first)]

    def drop_covered(self, ck, size, lo, hi, covered) -> None:
        """Drop the entries ``covered(e, ck, size, lo, hi)`` says the write box covers inside
        the cell (only those overlapping the box can be)."""
        entries = self.entries
        dead = [k for k, e in self._near_items(lo, hi) if covered(e, ck, size, lo, hi)]
        for k in dead:
            e = entries.pop(k)
            if k in self.wide:
                self.wide.discard(k)
            else:
                pos = tuple((l - o) // st for l, o, st in zip(e[1], self.origin, self.step))
                ks = self.grid[pos]
                ks.remove(k)
                if not ks:
                    del self.grid[pos]

    def _near_items(self, lo, hi):
        """(insertion number, entry) of the entries that may overlap ``[lo, hi)``: those starting
        in the grid steps the box reaches (an entry reaches at most into the next step), and the
        wide ones; every entry when the box reaches more steps than there are entries."""
        entries = self.entries
        ranges = []
        count = 1
        for l, h, o, st, top in zip(lo, hi, self.origin, self.step, self.top):
            a = max((l - o - st + 1) // st, -1)
            b = min((h - 1 - o) // st, top)
            if b < a:
                return [(k, entries[k]) for k in self.wide if k in entries]
            ranges.append(range(a, b + 1))
            count *= b - a + 1
        if count >= len(entries):
            return list(entries.items())
        found = list(self.wide)
        grid = self.grid
        for pos in itertools.product(*ranges):
            ks = grid.get(pos)
            if ks:
                found.extend(ks)
        return [(k, entries[k]) for k in found]


def _first(item):
    return item[0]
