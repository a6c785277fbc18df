"""The dependency engine: which earlier accesses to GM a new access must wait for.

Both the numeric runtime (one bounding box per task and operand) and the timing scheduler (one
box per tile) describe each access as boxes ``[lo, hi)`` over a GM buffer and get RAW, WAR and WAW
edges from one `RegionIndex`::

    deps = RegionIndex()
    deps.access(key, first_id, lo, hi, write)   # lo, hi: int arrays [m, rank]: ids first .. first+m-1
    src, dst, kind = deps.edges()               # deduplicated, in discovery order
    ptr, succ, npred = deps.csr(n)              # successor lists and predecessor counts

Semantics. Accesses come in program order. The boxes of one `access` call are concurrent: no edge
joins two of them. A later access may reuse the same ids (another operand of the same tasks); an
edge never joins an id to itself. For accesses A before B on one buffer whose boxes overlap, at
least one a write, B is ordered after A: by an edge A -> B or through a chain of edges. Edges
only join boxes that really overlap (a shared cell is not enough).

How it stays fast. Each buffer is cut into cells (the tile shape the first access gives, or the
``cell`` hint); each cell keeps the writers since the last covering write and the readers since
then. A read compares only with writers; a write also with readers, and retires what it covers
inside each cell: later accesses then meet the covering write, which already follows what it
retired. So loops over disjoint tiles, accumulators rewritten every iteration and regions read by
many tasks cost a few dictionary operations per access (a one-box access over a few cells of a
buffer that has nothing but per-cell entries meets, retires and inserts cell by cell in one pass:
the numeric runtime's planning at a new size is mostly such accesses; `access_task` keeps a buffer seen with
one box only, a root instance's workspace tile, as that box, its writer and readers, with no cells).
Accesses of many boxes at once (a call over a large tile grid) and boxes spanning many cells go
through numpy: cells are kept in sorted blocks (`cellblocks.py`, merged like a log-structured
tree) and matched with `searchsorted`; the rows of a loop moving on through a buffer are staged
and become one block per few thousand rows. Entries in a cell accumulate when boxes are much
smaller than cells, so pass the tile shape as ``cell`` when the
first access is not tile-sized (the numeric runtime's task boxes).
"""

from __future__ import annotations

import itertools
from array import array
from operator import add, floordiv, le, lt

from ..errors import KernelRuntimeError
from .crowdedcell import LIMIT as CROWDED_CELL, CrowdedSide

RAW, WAR, WAW = 0, 1, 2
KINDS = ("RAW", "WAR", "WAW")

BULK = 8  # an access of at least this many boxes is matched with numpy (below: Python is faster)
STAGE_ROWS = 8192  # rows of many-box accesses collected before they become one block
SMALL_CELLS = 16  # a box over more cells than this is kept whole, not per cell
DICT_CELLS = 1 << 16  # cells per buffer held as Python objects before moving them to numpy blocks

np = None  # numpy, bound by _numpy() where a path needs it: `import pypto` must not import it
_blocks = None  # the cellblocks module, imported with numpy


def _numpy():
    global np, _blocks
    if np is None:
        import numpy

        from . import cellblocks

        np, _blocks = numpy, cellblocks
    return np


def _cell_range(size, minus1, lo, hi):
    """The cells of size ``size`` that box ``[lo, hi)`` (not empty) meets: ``(clo, chi, keys)``,
    the first and last cell and their keys, ``keys`` None when they are more than ``SMALL_CELLS``
    (a big box, indexed otherwise)."""
    clo = tuple(map(floordiv, lo, size))
    chi = tuple(map(floordiv, map(add, hi, minus1), size))
    if clo == chi:
        return clo, chi, (clo,)
    count = 1
    for x, y in zip(clo, chi):
        count *= y - x + 1
    if count > SMALL_CELLS:
        return clo, chi, None
    return clo, chi, tuple(itertools.product(*[range(x, y + 1) for x, y in zip(clo, chi)]))


class RegionIndex:
    """Dependency edges between accesses to GM buffers, within one scope (a device task, a call).

    The numeric runtime's form, one bounding box per task and operand (plain ints, no numpy)::

        deps = RegionIndex()                            # one per device task
        for t, task in enumerate(tasks):
            for k, a in enumerate(task.call.args):
                lo = task.offsets[k].min(axis=0).tolist()
                hi = (task.offsets[k] + task.valid[k]).max(axis=0).tolist()
                deps.access(memory.region_key(a.value, task.root.seq), t, lo, hi,
                            k in task.call.writes, cell=task.tiles[k])
        edges = deps.edge_list()                        # [(src, dst, "RAW"|"WAR"|"WAW"), ...]
    """

    def __init__(self):
        self._buffers: dict = {}
        self._src, self._dst, self._kind = array("q"), array("q"), array("b")
        self._chunks: list = []  # numpy (src, dst, kind) batches, in discovery order with the arrays
        self._edges = None
        # buffers accessed by `access_task` with one box so far: key -> [lo, hi, tile, last writer
        # or None, readers since]; every other method sees them in cells (`_from_simple`)
        self._simple: dict = {}

    # ---- recording -------------------------------------------------------------------------------
    def access(self, buffer, first: int, lo, hi, write: bool, cell=None) -> None:
        """Record an access of ``buffer`` (any hashable key) by ids ``first .. first+m-1``.

        ``lo``/``hi`` are int arrays ``[m, rank]`` (box k belongs to id ``first + k``) or, for a
        single box, two sequences of Python ints. ``cell`` (a tile shape) sets the buffer's cell
        size on its first access; by default it is the extent of the first box.
        """
        self._edges = None
        if buffer in self._simple:
            self._from_simple(buffer)
        if not isinstance(lo, (tuple, list)):  # an int array [m, rank]
            _numpy()
            lo = lo.reshape(len(lo), -1) if lo.ndim != 2 else lo
            hi = hi.reshape(len(hi), -1) if hi.ndim != 2 else hi
            m = lo.shape[0]
            if m == 0:
                return
            buf = self._buffer(buffer, lo.shape[1], cell, lo[0].tolist(), hi[0].tolist())
            if m >= BULK:
                self._bulk(buf, first, lo.astype(np.int64, copy=False), hi.astype(np.int64, copy=False), write)
            elif m == 1:
                plan = self._query(buf, first, tuple(lo[0].tolist()), tuple(hi[0].tolist()), write)
                if plan is not None:
                    self._commit(buf, (plan,), write)
            else:
                plans = [self._query(buf, first + k, tuple(a), tuple(b), write)
                         for k, (a, b) in enumerate(zip(lo.tolist(), hi.tolist()))]
                self._commit(buf, [p for p in plans if p is not None], write)
            return
        lo, hi = tuple(lo), tuple(hi)
        buf = self._buffers.get(buffer)
        if buf is None or buf.rank != len(lo):
            buf = self._buffer(buffer, len(lo), cell, lo, hi)
        if buf.plain and self._in_few_cells(buf, first, lo, hi, write):
            return
        plan = self._query(buf, first, lo, hi, write)
        if plan is not None:
            self._commit(buf, (plan,), write)

    def access_task(self, i: int, keys, los, his, writes, cells) -> None:
        """One task's operands, each one box of plain ints: ``access(keys[p], i, los[p], his[p],
        p in writes, cell=cells[p])`` for every operand ``p`` in order (the numeric runtime's
        levels, one call per task instead of one per operand).

        A buffer every access of which so far had one and the same box (a root instance's
        workspace tile: most buffers of a planned call) is kept as that box, its last writer and
        its readers since: a write meets that writer and those readers and replaces them, a read
        meets the writer, what the cells would find (the box covers what it retires). Its first
        access with another box puts it into cells (`_from_simple`)."""
        self._edges = None
        buffers = self._buffers
        simple = self._simple
        for p, key in enumerate(keys):
            lo, hi = tuple(los[p]), tuple(his[p])
            buf = buffers.get(key)
            if buf is None:
                one = simple.get(key)
                if one is None:
                    if not any(map(le, hi, lo)):  # (a first empty box makes a buffer in cells)
                        if p in writes:
                            simple[key] = [lo, hi, cells[p], i, []]
                        else:
                            simple[key] = [lo, hi, cells[p], None, [i]]
                        continue
                elif one[0] == lo and one[1] == hi:
                    w = one[3]
                    if p in writes:
                        src, dst, kinds = self._src, self._dst, self._kind
                        if w is not None and w != i:
                            src.append(w), dst.append(i), kinds.append(WAW)
                        for r in one[4]:
                            if r != i:
                                src.append(r), dst.append(i), kinds.append(WAR)
                        one[3], one[4] = i, []
                    else:
                        if w is not None and w != i:
                            self._src.append(w), self._dst.append(i), self._kind.append(RAW)
                        one[4].append(i)
                    continue
                else:
                    buf = self._from_simple(key)
            if buf is None or buf.rank != len(lo):
                buf = self._buffer(key, len(lo), cells[p], lo, hi)
            write = p in writes
            if buf.plain and self._in_few_cells(buf, i, lo, hi, write):
                continue
            plan = self._query(buf, i, lo, hi, write)
            if plan is not None:
                self._commit(buf, (plan,), write)

    def _from_simple(self, key):
        """The buffer kept as one box (`access_task`) in cells: the writer and readers it holds
        as entries of every cell the box meets, as the per-cell path would have left them."""
        lo, hi, cell, w, readers = self._simple.pop(key)
        buf = self._buffer(key, len(lo), cell, lo, hi)
        writers, readers = [(w, lo, hi)] if w is not None else [], [(r, lo, hi) for r in readers]
        _, _, cks = _cell_range(buf.cell, buf.minus1, lo, hi)
        if cks is None:  # a box over many cells: kept whole (`_commit`)
            buf.big[0][:], buf.big[1][:] = writers, readers
            buf.plain = False
            return buf
        for ck in cks:  # (at most SMALL_CELLS of a new buffer: no spill, as `_commit` would find)
            buf.cells[ck] = (list(writers), list(readers))
        return buf

    def _buffer(self, key, rank, cell, lo0, hi0):
        buf = self._buffers.get(key)
        if buf is None:
            if cell is None:
                cell = [int(b) - int(a) for a, b in zip(lo0, hi0)]
            buf = self._buffers[key] = _Buffer(rank, tuple(max(1, int(c)) for c in cell))
        elif buf.rank != rank:
            raise KernelRuntimeError(f"internal: GM buffer {key!r} accessed with rank {rank} after rank {buf.rank}")
        return buf

    # ---- results ---------------------------------------------------------------------------------
    def edges(self):
        """``(src, dst, kind)`` int64/int64/int8 arrays: one edge per ordered pair (the kind found
        first), in the order they were found. ``KINDS[kind]`` names the kind."""
        if self._edges is None:
            _numpy()
            src, dst, kind = self._gather()
            if len(src) > 1:
                key = src * (int(dst.max()) + 1) + dst
                _, first = np.unique(key, return_index=True)
                if len(first) < len(src):
                    first.sort()
                    src, dst, kind = src[first], dst[first], kind[first]
            self._edges = (src, dst, kind)
        return self._edges

    def edge_list(self) -> list:
        """The edges as ``(src, dst, "RAW"|"WAR"|"WAW")`` tuples."""
        if not self._chunks:  # only one-box accesses so far: no numpy needed
            first: dict = {}
            for s, d, k in zip(self._src, self._dst, self._kind):
                first.setdefault((s, d), k)
            return [(s, d, KINDS[k]) for (s, d), k in first.items()]
        src, dst, kind = self.edges()
        return [(s, d, KINDS[k]) for s, d, k in zip(src.tolist(), dst.tolist(), kind.tolist())]

    def csr(self, n: int):
        """``(ptr, succ, npred)`` over ids ``0 .. n-1``: the successors of id i are
        ``succ[ptr[i]:ptr[i+1]]`` (in the order found), ``npred[i]`` counts its predecessors."""
        src, dst, _ = self.edges()  # binds np
        order = np.argsort(src, kind="stable")
        ptr = np.zeros(n + 1, dtype=np.int64)
        np.cumsum(np.bincount(src, minlength=n)[:n], out=ptr[1:])
        return ptr, dst[order], np.bincount(dst, minlength=n)[:n]

    def __len__(self) -> int:
        return len(self.edges()[0])

    def _gather(self):
        self._flush_edges()
        if not self._chunks:
            z = np.zeros(0, dtype=np.int64)
            return z, z.copy(), np.zeros(0, dtype=np.int8)
        if len(self._chunks) > 1:
            self._chunks = [tuple(np.concatenate(c) for c in zip(*self._chunks))]
        return self._chunks[0]

    def _flush_edges(self):
        if len(self._src):
            _numpy()
            self._chunks.append((np.frombuffer(self._src, dtype=np.int64).copy(),
                                 np.frombuffer(self._dst, dtype=np.int64).copy(),
                                 np.frombuffer(self._kind, dtype=np.int8).copy()))
            # cleared in place: the per-cell path holds these arrays in locals
            del self._src[:], self._dst[:], self._kind[:]

    def _emit(self, src, dst, kind):
        if len(src):
            self._flush_edges()
            self._chunks.append((src.astype(np.int64), dst.astype(np.int64), kind.astype(np.int8)))

    # ---- a few boxes: Python objects per cell --------------------------------------------------
    def _in_few_cells(self, buf, i, lo, hi, write) -> bool:
        """`_query` then `_commit` of one box over at most ``SMALL_CELLS`` cells of a buffer with
        per-cell entries only (no big boxes, blocks or staged rows: ``buf.plain``), cell by cell
        in one pass (the cells' entries are apart, so meeting, retiring and inserting per cell
        finds what the two passes find, in the same order); False (nothing done) for a box over
        more cells. The numeric runtime's boxes (one per task and operand) mostly
        land here, so this path is the planning's dependency walk."""
        if any(map(le, hi, lo)):
            return True  # an empty box touches nothing
        size = buf.cell
        _, _, keys = _cell_range(size, buf.minus1, lo, hi)
        if keys is None:
            return False
        cells = buf.cells
        side = 0 if write else 1
        entry = (i, lo, hi)
        src, dst, kinds = self._src, self._dst, self._kind
        kw = WAW if write else RAW
        for ck in keys:
            rec = cells.get(ck)
            if rec is None:
                rec = cells[ck] = ([], [])
            else:
                writers, readers = rec
                for e in writers if type(writers) is list else writers.near(lo, hi):
                    if e[0] != i and all(map(lt, e[1], hi)) and all(map(lt, lo, e[2])):
                        src.append(e[0]), dst.append(i), kinds.append(kw)
                if write:
                    for e in readers if type(readers) is list else readers.near(lo, hi):
                        if e[0] != i and all(map(lt, e[1], hi)) and all(map(lt, lo, e[2])):
                            src.append(e[0]), dst.append(i), kinds.append(WAR)
                    if writers or readers:
                        _retire_cell(rec, ck, size, lo, hi)
            entries = rec[side]
            entries.append(entry)
            if len(entries) > CROWDED_CELL and type(entries) is list:  # see _commit
                crowded = CrowdedSide(entries, ck, size)
                cells[ck] = (crowded, rec[1]) if side == 0 else (rec[0], crowded)
        if len(cells) > DICT_CELLS:
            self._spill(buf)
        return True

    def _query(self, buf, i, lo, hi, write):
        """Edges into box ``[lo, hi)`` of id ``i``; returns what `_commit` needs to retire and
        insert it (None for an empty box)."""
        size = buf.cell
        if any(map(le, hi, lo)):
            return None  # an empty box touches nothing
        clo, chi, keys = _cell_range(size, buf.minus1, lo, hi)
        if keys is None:
            return self._big(buf, i, lo, hi, clo, chi, write)
        src, dst, kinds = self._src, self._dst, self._kind
        kw = WAW if write else RAW
        cells = buf.cells
        recs = []
        for ck in keys:
            rec = cells.get(ck)
            recs.append(rec)
            if rec is None:
                continue
            for e in rec[0] if type(rec[0]) is list else rec[0].near(lo, hi):
                if e[0] != i and all(map(lt, e[1], hi)) and all(map(lt, lo, e[2])):
                    src.append(e[0]), dst.append(i), kinds.append(kw)
            if write:
                for e in rec[1] if type(rec[1]) is list else rec[1].near(lo, hi):
                    if e[0] != i and all(map(lt, e[1], hi)) and all(map(lt, lo, e[2])):
                        src.append(e[0]), dst.append(i), kinds.append(WAR)
        big = buf.big
        if big[0] or big[1]:
            for e in big[0]:
                if e[0] != i and all(map(lt, e[1], hi)) and all(map(lt, lo, e[2])):
                    src.append(e[0]), dst.append(i), kinds.append(kw)
            if write:
                for e in big[1]:
                    if e[0] != i and all(map(lt, e[1], hi)) and all(map(lt, lo, e[2])):
                        src.append(e[0]), dst.append(i), kinds.append(WAR)
        dead = None
        blocks = buf.blocks
        if buf.staged_n[0] or buf.staged_n[1]:
            buf.reach((0, 1) if write else (0,), clo, chi)
        if buf.blocks_near(clo, chi, write):
            near = [blk for side in ((0, 1) if write else (0,)) for blk in blocks[side] if blk.near(clo, chi)]
            if near:
                n_q = len(keys)
                dead = self._match_blocks(buf, np.array(keys, dtype=np.int64).reshape(n_q, buf.rank),
                                          np.array([lo] * n_q, dtype=np.int64), np.array([hi] * n_q, dtype=np.int64),
                                          np.full(n_q, i, dtype=np.int64), write, near)
        return i, lo, hi, keys, recs, dead

    def _commit(self, buf, plans, write):
        """Retire what the written boxes cover (only now: every box of one access had to meet the
        old entries first), then insert the boxes."""
        size, cells = buf.cell, buf.cells
        if write:
            for i, lo, hi, keys, recs, dead in plans:
                if keys is None:
                    _retire_listed(buf.big, lo, hi)  # a box over few cells cannot cover a big one
                else:
                    for ck, rec in zip(keys, recs):
                        if rec is not None and (rec[0] or rec[1]):
                            _retire_cell(rec, ck, size, lo, hi)
                if dead:
                    _blocks.kill(dead)
        side = 0 if write else 1
        fresh = len(plans) > 1  # a box over many cells may have spilled the cells the others saw
        for i, lo, hi, keys, recs, dead in plans:
            entry = (i, lo, hi)
            if keys is None:
                buf.big[side].append(entry)
                buf.plain = False
                continue
            for ck, rec in zip(keys, recs):
                if rec is None or fresh:
                    rec = cells.get(ck)  # another box of this access may have made it
                    if rec is None:
                        rec = cells[ck] = ([], [])
                entries = rec[side]
                entries.append(entry)
                if len(entries) > CROWDED_CELL and type(entries) is list:
                    # a cell much larger than its boxes (sized by a first access over the whole
                    # buffer): index its entries instead of scanning them at every access
                    crowded = CrowdedSide(entries, ck, size)
                    rec = cells[ck] = (crowded, rec[1]) if side == 0 else (rec[0], crowded)
        if len(cells) > DICT_CELLS:
            self._spill(buf)

    def _big(self, buf, i, lo, hi, clo, chi, write):
        """A box over many cells: matched against everything with numpy, kept whole."""
        _numpy()
        if buf.cells:
            self._spill(buf)
        kw = WAW if write else RAW
        src, dst, kinds = self._src, self._dst, self._kind
        for side, kind in ((0, kw), (1, WAR)) if write else ((0, kw),):
            for e in buf.big[side]:
                if e[0] != i and all(map(lt, e[1], hi)) and all(map(lt, lo, e[2])):
                    src.append(e[0]), dst.append(i), kinds.append(kind)
        dead = []
        alo, ahi, size = np.asarray(lo), np.asarray(hi), np.asarray(buf.cell)
        buf.reach((0, 1) if write else (0,), clo, chi)
        for side in (0, 1) if write else (0,):
            for blk in buf.blocks[side]:
                if not blk.near(clo, chi):
                    continue
                rows = blk.in_cell_range(clo, chi)
                rows = rows[blk.alive[rows]]
                if not len(rows):
                    continue
                (blo, bhi), ids = blk.boxes(rows), blk.ids_of(rows)
                hit = np.all((blo < ahi) & (alo < bhi), axis=1) & (ids != i)
                n_hit = int(np.count_nonzero(hit))
                self._emit(ids[hit], np.full(n_hit, i), np.full(n_hit, kw if side == 0 else WAR))
                if write:
                    c0 = blk.cells_of(rows) * size
                    covered = np.all((np.maximum(blo, c0) >= alo) & (np.minimum(bhi, c0 + size) <= ahi), axis=1)
                    dead.append((blk, rows[covered]))
        return i, lo, hi, None, None, dead

    # ---- many boxes: numpy blocks ------------------------------------------------------------------
    def _bulk(self, buf, first, lo, hi, write):
        ids = np.arange(first, first + len(lo), dtype=np.int64)
        keep = np.all(hi > lo, axis=1)
        if not keep.all():
            ids, lo, hi = ids[keep], lo[keep], hi[keep]
            if not len(ids):
                return
        if buf.cells:
            self._spill(buf)
        size = np.asarray(buf.cell, dtype=np.int64)
        clo, chi = lo // size, (hi - 1) // size
        # one row per (box, cell it touches)
        span = chi - clo + 1
        count = np.prod(span, axis=1)
        if (count == 1).all():
            rid, rcell = None, clo  # one cell per box: rows are the boxes themselves
        else:
            rid = np.repeat(np.arange(len(ids)), count)
            within = np.arange(len(rid)) - np.repeat(np.cumsum(count) - count, count)
            rcell = np.empty((len(rid), buf.rank), dtype=np.int64)
            for d in range(buf.rank - 1, -1, -1):
                s = span[rid, d]
                rcell[:, d] = clo[rid, d] + within % s
                within //= s
        kw = WAW if write else RAW
        for side, kind in ((0, kw), (1, WAR)):
            if side == 1 and not write:
                break
            for e in buf.big[side]:
                elo, ehi = np.asarray(e[1]), np.asarray(e[2])
                hit = np.all((lo < ehi) & (elo < hi), axis=1) & (ids != e[0])
                self._emit(np.full(int(hit.sum()), e[0]), ids[hit], np.full(int(hit.sum()), kind))
        if rid is None:
            dead = self._match_blocks(buf, rcell, lo, hi, ids, write)
        else:
            dead = self._match_blocks(buf, rcell, lo[rid], hi[rid], ids[rid], write)
        if write:
            _blocks.kill(dead)
            for side in (0, 1):
                kept = []
                for e in buf.big[side]:
                    elo, ehi = np.asarray(e[1]), np.asarray(e[2])
                    if not np.all((lo <= elo) & (ehi <= hi), axis=1).any():
                        kept.append(e)
                buf.big[side][:] = kept
        if rid is None:
            buf.stage(0 if write else 1, rcell, ids, lo, hi)
        else:
            buf.stage(0 if write else 1, rcell, ids[rid], lo[rid], hi[rid])

    def _match_blocks(self, buf, qcell, qlo, qhi, qid, write, only=None):
        """Edges from block entries sharing a cell with query rows (cell, box, id); for a write,
        the (block, rows) its boxes cover inside the shared cell, to retire afterwards."""
        kw = WAW if write else RAW
        dead = []
        size = np.asarray(buf.cell, dtype=np.int64)
        if only is None:  # blocks whose cells the query cannot reach are skipped without numpy work
            qmin, qmax = qcell.min(axis=0).tolist(), qcell.max(axis=0).tolist()
            buf.reach((0, 1) if write else (0,), qmin, qmax)
        for side in (0, 1) if write else (0,):
            kind = kw if side == 0 else WAR
            for blk in buf.blocks[side]:
                if only is not None:
                    if not any(blk is b for b in only):
                        continue
                elif not blk.near(qmin, qmax):
                    continue
                for qi, bi in blk.pairs(qcell, qlo, qhi):
                    bi_ok = blk.alive[bi]
                    qi, bi = qi[bi_ok], bi[bi_ok]
                    (blo, bhi), bid = blk.boxes(bi), blk.ids_of(bi)
                    lo, hi, ids = qlo[qi], qhi[qi], qid[qi]
                    hit = np.all((blo < hi) & (lo < bhi), axis=1)
                    other = hit & (bid != ids)
                    self._emit(bid[other], ids[other], np.full(int(other.sum()), kind))
                    if write:
                        c0 = qcell[qi] * size
                        covered = hit & np.all((np.maximum(blo, c0) >= lo) & (np.minimum(bhi, c0 + size) <= hi),
                                               axis=1)
                        if covered.any():
                            dead.append((blk, bi[covered]))
        return dead

    def _spill(self, buf):
        """Move the per-cell Python entries of ``buf`` into numpy blocks."""
        _numpy()
        for side in (0, 1):
            cells, ids, los, his = [], [], [], []
            for ck, rec in buf.cells.items():
                for i, lo, hi in rec[side]:
                    cells.append(ck), ids.append(i), los.append(lo), his.append(hi)
            if ids:
                r = buf.rank
                buf.add_block(side, _blocks.CellBlock.build(np.array(cells, dtype=np.int64).reshape(-1, r),
                                                 np.array(ids, dtype=np.int64),
                                                 np.array(los, dtype=np.int64).reshape(-1, r),
                                                 np.array(his, dtype=np.int64).reshape(-1, r), buf.cell))
        buf.cells = {}


class _Buffer:
    __slots__ = ("rank", "cell", "minus1", "cells", "big", "blocks", "blocks_box", "staged", "staged_n",
                 "staged_box", "plain")

    def __init__(self, rank, cell):
        self.rank = rank
        self.cell = cell
        self.minus1 = (-1,) * rank
        self.cells: dict = {}  # cell coords -> ([writer entries], [reader entries]); entry (id, lo, hi)
        self.big = ([], [])  # boxes over many cells: writers, readers
        self.blocks = ([], [])  # numpy blocks of writers and of readers
        self.blocks_box = [None, None]  # (min cell, max cell) over each side's blocks, as lists
        # rows of recent many-box accesses not yet in a block: a loop moving on through a buffer
        # never queries them, so they become one block per STAGE_ROWS rows instead of one per access
        self.staged = ([], [])
        self.staged_n = [0, 0]
        self.staged_box = [None, None]  # (min cell, max cell) of the staged rows, as lists
        # per-cell entries only so far (no big boxes, blocks or staged rows): `_in_few_cells` applies
        self.plain = True

    def stage(self, side, cells, ids, lo, hi):
        self.plain = False
        self.staged[side].append((cells, ids, lo, hi))
        self.staged_n[side] += len(ids)
        mn, mx = cells.min(axis=0).tolist(), cells.max(axis=0).tolist()
        box = self.staged_box[side]
        self.staged_box[side] = (mn, mx) if box is None else \
            (list(map(min, box[0], mn)), list(map(max, box[1], mx)))
        if self.staged_n[side] >= STAGE_ROWS:
            self.unstage(side)

    def unstage(self, side):
        parts = self.staged[side]
        if parts:
            blk = _blocks.CellBlock.build(*(p[0] if len(parts) == 1 else np.concatenate(p) for p in zip(*parts)), self.cell)
            parts.clear()
            self.staged_n[side] = 0
            self.staged_box[side] = None
            self.add_block(side, blk)

    def reach(self, sides, clo, chi):
        """Move staged rows into blocks where a query over cells [clo, chi] could meet them."""
        for side in sides:
            box = self.staged_box[side]
            if box is not None and all(map(le, box[0], chi)) and all(map(le, clo, box[1])):
                self.unstage(side)

    def blocks_near(self, clo, chi, write) -> bool:
        """Whether any block a query over cells [clo, chi] must see may hold such a cell (a loop
        moving on through a buffer never needs its old blocks)."""
        for side in (0, 1) if write else (0,):
            box = self.blocks_box[side]
            if box is not None and all(map(le, box[0], chi)) and all(map(le, clo, box[1])):
                return True
        return False

    def add_block(self, side, blk):
        self.plain = False
        box = self.blocks_box[side]
        self.blocks_box[side] = (list(blk.cmin), list(blk.cmax)) if box is None else \
            (list(map(min, box[0], blk.cmin)), list(map(max, box[1], blk.cmax)))
        stack = self.blocks[side]
        stack[:] = [b for b in stack if b.n_alive]
        stack.append(blk)
        # tiered merging: four blocks of one size class (powers of 4) become one of the next, so
        # there are O(log n) blocks and each row is copied O(log n) times
        while len(stack) >= _blocks.TIER and len({b.tier for b in stack[-_blocks.TIER:]}) == 1:
            merged = _blocks.CellBlock.merge(stack[-_blocks.TIER:])
            del stack[-_blocks.TIER:]
            stack.append(merged)


def _retire_cell(rec, ck, size, lo, hi):
    """Drop the entries of one cell that the write box [lo, hi) covers inside that cell."""
    whole = True
    for c, s, a, b in zip(ck, size, lo, hi):
        if a > c * s or b < c * s + s:
            whole = False
            break
    if whole:
        rec[0].clear()
        rec[1].clear()
        return
    for side in rec:
        if type(side) is not list:
            side.drop_covered(ck, size, lo, hi, _covered_in_cell)
        elif side:
            side[:] = [e for e in side if not _covered_in_cell(e, ck, size, lo, hi)]


def _covered_in_cell(e, ck, size, lo, hi) -> bool:
    for elo, ehi, c, s, a, b in zip(e[1], e[2], ck, size, lo, hi):
        if max(elo, c * s) < a or min(ehi, c * s + s) > b:
            return False
    return True


def _retire_listed(lists, lo, hi):
    for side in lists:
        if side:
            side[:] = [e for e in side if not all(a <= x and y <= b for a, b, x, y in zip(lo, hi, e[1], e[2]))]
