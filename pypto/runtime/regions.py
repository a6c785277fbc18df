"""The dependency engine: which earlier accesses of a GM buffer a new access must wait for.

Accesses arrive in program order, each a box ``[lo, hi)`` of one buffer (a region key), read or
written. An access depends on every earlier overlapping access when either side writes: RAW,
WAR, WAW. Edges implied transitively are left out: a write that covers an earlier access retires
it (later accesses overlapping it overlap the write, which is ordered after it).
"""

from __future__ import annotations


def _overlap(alo, ahi, blo, bhi) -> bool:
    for a, b, c, d in zip(alo, ahi, blo, bhi):
        if not (a < d and c < b):
            return False
    return True


def _covers(lo, hi, blo, bhi) -> bool:
    for a, b, c, d in zip(lo, hi, blo, bhi):
        if c < a or d > b:
            return False
    return True


class RegionIndex:
    """Accesses per buffer; ``access`` records one and its predecessors (``take_predecessors``)."""

    def __init__(self):
        self._writes: dict = {}  # key -> [(id, lo, hi)]
        self._reads: dict = {}
        self._pred: dict = {}  # id -> {src: kind}
        self.edges: list = []  # (src, dst, kind)

    def access(self, key, ident, lo, hi, write: bool) -> None:
        lo, hi = tuple(lo), tuple(hi)
        if any(a >= b for a, b in zip(lo, hi)):
            return  # an empty box touches nothing
        pred = self._pred.setdefault(ident, {})
        writes = self._writes.setdefault(key, [])
        for src, wlo, whi in writes:
            if src != ident and _overlap(lo, hi, wlo, whi) and src not in pred:
                pred[src] = "WAW" if write else "RAW"
        if write:
            reads = self._reads.setdefault(key, [])
            for src, rlo, rhi in reads:
                if src != ident and _overlap(lo, hi, rlo, rhi) and src not in pred:
                    pred[src] = "WAR"
            self._writes[key] = [w for w in writes if not _covers(lo, hi, w[1], w[2])] + [(ident, lo, hi)]
            self._reads[key] = [r for r in reads if not _covers(lo, hi, r[1], r[2])]
        else:
            self._reads.setdefault(key, []).append((ident, lo, hi))

    def take_predecessors(self, ident) -> list:
        """[(src, kind)] of accessor ``ident`` (after all its accesses), recorded as edges."""
        pred = self._pred.pop(ident, {})
        out = sorted(pred.items())
        self.edges.extend((src, ident, kind) for src, kind in out)
        return out
