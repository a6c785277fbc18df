"""The tile-level tasks of one kernel call, in columns: one task per tile of each call of each
root instance, with what the timing simulator needs to run it.

Per task: its cost class (leaf, elements per operand, dynamic-shape code, full tile), the L2
lines (GM tiles) it reads and writes, and its dependency edges, derived by the shared engine
(`regions.RegionIndex`) from one box per tile. Tasks are numbered in program order, so the tasks
of one root instance form a contiguous range (``root_first``). Nothing here is a Python object
per task: a million tasks cost tens of bytes each.
"""

from __future__ import annotations

import numpy as np  # imported with the simulator, never by `import pypto`
import math
from array import array
from operator import add
from dataclasses import dataclass

from ..ir import expr as E
from .control import evaluate_call
from .regions import RegionIndex



@dataclass(frozen=True)
class TaskClass:
    """What a task's cost depends on, shared by every task with the same values."""

    leaf: object
    elems: tuple  # valid elements per operand
    dynamic: bool  # runs dynamic-shape code (a scalar cost per op)
    full: bool  # every operand's tile is full (valid_shape_optimize's "main" variant)
    read_bytes: tuple  # bytes per read operand, in operand order
    write_bytes: tuple  # bytes per written operand, in call.writes order
    fractal: tuple = ()  # operands stored in the cube's NZ layout (contiguous fractal blocks)


@dataclass(eq=False)
class TaskTable:
    """Columnar tasks of one call (see the module doc)."""

    n: int
    cls: object  # int32 [n]: index into ``classes``
    classes: list
    root_first: object  # int64 [roots + 1]: tasks of root seq s are root_first[s] .. root_first[s+1]-1
    read_ptr: object  # int64 [n + 1] into read_line
    read_line: object  # int32: L2 line (one GM tile) of each read, task by task
    write_ptr: object
    write_line: object
    n_lines: int
    edges: tuple  # (src, dst, kind) arrays from RegionIndex.edges()
    succ_ptr: object  # int64 [n + 1] into succ
    succ: object  # int64: successors, in the order the edges were found
    npred: object  # int64 [n]


class _CallInfo:
    """Per call site: which operands are read and written, byte sizes, and GM buffer identity."""

    __slots__ = ("reads", "writes", "itemsize", "symbolic", "global_keys", "per_root", "bufs", "ones", "classes",
                 "tracked", "moved", "copy", "fractal")

    def __init__(self, call, memory_key, written, fractal=frozenset()):
        self.writes = tuple(call.writes)
        self.reads = tuple(k for k in range(len(call.args)) if k not in call.writes)
        self.itemsize = tuple(call.leaf.params[k][1].itemsize for k in range(len(call.args)))
        self.symbolic = any(isinstance(x, E.Expr) for a in call.args for x in a.base + a.extent + a.shape)
        # a buffer is kernel-wide when its key does not depend on the root instance
        self.global_keys = tuple(memory_key(a.value, 0) if memory_key(a.value, 0) == memory_key(a.value, 1)
                                 else None for a in call.args)
        self.per_root = any(g is None for g in self.global_keys)
        self.bufs = None  # buffer numbers, when no operand is per root instance
        self.ones = tuple((1,) * len(a.shape) for a in call.args)
        self.classes: dict = {}  # (elems, full) -> class, for calls of one tile
        # a GM value no call writes cannot take part in a conflict: its accesses need no tracking
        self.tracked = tuple(k for k, a in enumerate(call.args) if a.value.id in written)
        self.moved = _bytes_moved(call.leaf, len(call.args))
        self.fractal = tuple(k for k, a in enumerate(call.args) if a.value.id in fractal)
        # (read argument, written argument) of a leaf that only copies one tile into another
        kinds = [op.kind for op in call.leaf.ops]
        # (same shapes: offsets of a reshape alias of one memory are in other coordinates)
        self.copy = (self.reads[0], self.writes[0]) if kinds == ["copy_in", "copy_out"] and len(self.reads) == 1 \
            and len(self.writes) == 1 and _alike(call.args[self.reads[0]].value.shape,
                                                  call.args[self.writes[0]].value.shape) else None


def _alike(a, b) -> bool:
    """Shapes of one rank whose fixed sizes agree (a dynamic size may be another symbol)."""
    return len(a) == len(b) and all(x == y for x, y in zip(a, b) if isinstance(x, int) and isinstance(y, int))


def aliased_keys(memory_key, same):
    """``memory_key`` with the parameters of ``same`` (pairs of value ids: a written parameter
    passed the very same tensor as an earlier one, `argument_overlap.separate_overlaps`) keyed
    as that earlier one: the dependency engine and L2 see the one memory they are."""
    if not same:
        return memory_key
    to = dict(same)

    def key(value, seq, env=None):
        k = memory_key(value, seq, env)
        return to.get(k, k) if isinstance(k, int) else k

    return key


def _bytes_moved(leaf, nargs) -> tuple:
    """Per argument, whether its bytes cross HBM: not so for the tensor an in-place update
    (passes/fold.py) reads and writes whole on paper but changes a few rows of on the device
    (those rows are its source operand's bytes)."""
    moved = [True] * nargs
    for i, op in enumerate(leaf.ops):
        if op.attrs.get("in_place"):
            for role, j in (("in", 0), ("out", 0)):
                p = leaf.param_of.get((i, role, j))
                if p is not None:
                    moved[p] = False
    return tuple(moved)


def build_tasks(lowered, stream, vso: bool, memory_key) -> TaskTable:
    """The tasks of the root instances recorded in ``stream`` (any iterable of the control
    executor's ("root", index, env, loads, parallel, read) / ("flush",) items)."""
    return TaskBuilder(lowered, vso, memory_key).build(stream)


class TaskBuilder:
    """Adds root instances one by one (`add_root`), then `finish` gives the `TaskTable`."""

    def __init__(self, lowered, vso, memory_key):
        self.lowered, self.vso, self.memory_key = lowered, vso, memory_key
        self.deps = RegionIndex()
        self.n = 0
        self.root_first = array("q", [0])
        self.cls_parts: list = []  # int32 arrays (bulk calls) and runs of Python ints
        self.cls_small = array("i")
        self.classes: list = []
        self.class_ids: dict = {}
        self.info: dict = {}
        self.rank = max((len(a.shape) for r in lowered.roots for c in r.calls for a in c.args), default=0)
        self.written = {c.args[k].value.id for r in lowered.roots for c in r.calls for k in c.writes}
        self.written |= set(lowered.dep_targets)  # names of a written memory (passes/aliasing.py)
        self.fractal = frozenset(p.value.id for p in lowered.program.params if getattr(p, "layout", "ND") == "NZ")
        # line entries (GM buffer, tile origin) of every read and write, in task order
        self.buffers: dict = {}
        self.lines = {"r": _Lines(self.rank), "w": _Lines(self.rank)}

    def build(self, stream) -> TaskTable:
        for item in stream:
            if item[0] == "root":
                self.add_root(item[1], item[2], item[5])
        return self.finish()

    def add_root(self, index, env, read=None):
        """Add the tasks of the next root instance (root function ``index`` under ``env``)."""
        seq = len(self.root_first) - 1
        load = (lambda param, indices: read[(param, tuple(indices))]) if read else None
        for call in self.lowered.roots[index].calls:
            self._call(seq, env, call, load)
        self.root_first.append(self.n)

    def finish(self) -> TaskTable:
        self._flush_classes()
        cls = np.concatenate(self.cls_parts) if self.cls_parts else np.zeros(0, dtype=np.int32)
        read_ptr, write_ptr = self.lines["r"].ptr(self.n), self.lines["w"].ptr(self.n)
        read_line, write_line, n_lines = _Lines.number(self.lines["r"], self.lines["w"])
        succ_ptr, succ, npred = self.deps.csr(self.n)
        edges = self.deps.edges()
        self.deps = None  # the index itself is no longer needed: free it before the simulation
        narrow = lambda a: a.astype(np.int32) if not len(a) or a.max() < 2 ** 31 else a  # noqa: E731
        return TaskTable(self.n, cls, self.classes, np.frombuffer(self.root_first, dtype=np.int64).copy(),
                         read_ptr, read_line, write_ptr, write_line, n_lines, edges, narrow(succ_ptr), narrow(succ),
                         narrow(npred))

    def _call(self, seq, env, call, load):
        extents, points, offsets, valid, tiles = evaluate_call(call, env, load, self.lowered)
        m = points.shape[0]
        if m == 0:
            return
        info = self.info.get(call.id)
        if info is None:
            info = self.info[call.id] = _CallInfo(call, self.memory_key, self.written, self.fractal)
        if info.per_root:
            keys = [g if g is not None else self.memory_key(a.value, seq, env)
                    for g, a in zip(info.global_keys, call.args)]
            bufs = [self._buffer_no(k) for k in keys]
        else:
            keys = info.global_keys
            bufs = info.bufs
            if bufs is None:
                bufs = info.bufs = [self._buffer_no(k) for k in keys]
        if info.copy is not None:
            r, w = info.copy
            if bufs[r] == bufs[w] and np.array_equal(offsets[r], offsets[w]):
                return  # a copy of a memory onto itself (two parameters passed one tensor) moves nothing
        first = self.n
        self.n += m
        writes = info.writes
        if m == 1:  # plain Python ints: numpy per single tile costs more than it saves
            offs = [o[0].tolist() for o in offsets]
            vals = [v[0].tolist() for v in valid]
            shape = (tuple(map(math.prod, vals)), vals == tiles)
            c = info.classes.get(shape)
            if c is None:
                c = info.classes[shape] = self._class(call, info, *shape)
            self.cls_small.append(c)
            one = self.lines["r"].one
            for k in info.reads:
                one(first, bufs[k], offs[k])
            one = self.lines["w"].one
            for k in writes:
                one(first, bufs[k], offs[k])
            access = self.deps.access
            for k in info.tracked:
                lo = offs[k]
                # cells: the tile, or the valid part when a tile is never filled (a row of a wide tile)
                access(keys[k], first, lo, list(map(add, lo, vals[k])), k in writes,
                       cell=list(map(max, map(min, tiles[k], vals[k]), info.ones[k])))
            return
        cols = [v.prod(axis=1) if v.shape[1] else np.ones(m, dtype=np.int64) for v in valid]
        full = np.ones(m, dtype=bool)
        for v, t in zip(valid, tiles):
            if v.shape[1]:
                full &= (v == np.asarray(t, dtype=np.int64)).all(axis=1)
        if full.all() or all((c == c[0]).all() for c in cols) and not full.any():
            ids = np.full(m, self._class(call, info, tuple(int(c[0]) for c in cols), bool(full[0])), dtype=np.int32)
        else:
            table = np.stack(cols + [full.astype(np.int64)], axis=1)
            rows, inverse = np.unique(table, axis=0, return_inverse=True)
            lut = np.array([self._class(call, info, tuple(r[:-1]), bool(r[-1])) for r in rows.tolist()],
                           dtype=np.int32)
            ids = lut[inverse.reshape(-1)]
        self._flush_classes()
        self.cls_parts.append(ids)
        self.lines["r"].many(first, m, [(bufs[k], offsets[k]) for k in info.reads])
        self.lines["w"].many(first, m, [(bufs[k], offsets[k]) for k in info.writes])
        for k in info.tracked:
            cell = np.maximum(np.minimum(np.asarray(tiles[k], dtype=np.int64), valid[k].max(axis=0)), 1) \
                if valid[k].shape[1] else ()
            self.deps.access(keys[k], first, offsets[k], offsets[k] + valid[k], k in writes, cell=cell)

    def _flush_classes(self):
        if len(self.cls_small):
            self.cls_parts.append(np.frombuffer(self.cls_small, dtype=np.int32).copy())
            self.cls_small = array("i")

    def _buffer_no(self, key) -> int:
        b = self.buffers.get(key)
        if b is None:
            b = self.buffers[key] = len(self.buffers)
        return b

    def _class(self, call, info, elems, full) -> int:
        leaf = call.leaf
        dynamic = info.symbolic and not (self.vso and full)
        key = (leaf.name, elems, dynamic, full, info.writes, info.fractal)
        c = self.class_ids.get(key)
        if c is None:
            c = self.class_ids[key] = len(self.classes)
            self.classes.append(TaskClass(leaf, elems, dynamic, full,
                                          tuple(elems[k] * info.itemsize[k] * info.moved[k] for k in info.reads),
                                          tuple(elems[k] * info.itemsize[k] * info.moved[k] for k in info.writes),
                                          info.fractal))
        return c


class _Lines:
    """The (GM buffer, tile origin) of each read (or write) of each task, numbered at the end:
    two accesses share an L2 line when they name the same buffer and origin. Entries of a call
    over many tiles are kept as the call's own offset arrays (no copy)."""

    def __init__(self, rank):
        self.rank = rank
        self.parts: list = []  # in task order: (first task, m, [(buffer, offsets [m, rank])]) or a _Run
        self.run = None
        self.next_task = 0

    def one(self, task, buf, lo):
        run = self.run
        if run is None:
            run = self.run = _Run(task, self.rank)
            self.parts.append(run)
        run.add(task, buf, lo)
        self.next_task = task + 1

    def many(self, first, m, operands):
        self.run = None
        self.parts.append((first, m, operands))
        self.next_task = first + m

    def ptr(self, n):
        """int32/int64 [n + 1]: entries of task k are ptr[k] .. ptr[k+1]-1."""
        counts = np.zeros(n, dtype=np.int64)
        for part in self.parts:
            if isinstance(part, _Run):
                np.add.at(counts, np.frombuffer(part.task, dtype=np.int64), 1)
            else:
                counts[part[0]:part[0] + part[1]] = len(part[2])
        out = np.zeros(n + 1, dtype=np.int64)
        np.cumsum(counts, out=out[1:])
        return out.astype(np.int32) if out[-1] < 2 ** 31 else out

    @staticmethod
    def number(*sets):
        """Line ids (int32, in entry order) for each entry set, numbered together, and the number
        of lines: buffers in the order they first appear, each buffer's distinct origins in
        lexicographic order. All entries are packed into one int64 key (buffer rank, origin)
        and made dense with one `np.unique`."""
        order: dict = {}  # buffer -> its rank in order of first appearance
        width: dict = {}  # buffer -> columns of its origins (one-at-a-time origins are padded)
        segments = []  # (buffer ranks [e] or one rank, origins [e, w], ids, where)
        outs = []
        for s in sets:
            out = []
            for part in s.parts:
                if isinstance(part, _Run):
                    bufs = np.frombuffer(part.buf, dtype=np.int64)
                    lo = np.frombuffer(part.lo, dtype=np.int64).reshape(-1, s.rank)
                    ids = np.empty(len(bufs), dtype=np.int32)
                    for b in np.unique(bufs).tolist():
                        order.setdefault(b, len(order))
                        width[b] = min(width.get(b, s.rank), s.rank)
                    segments.append((bufs, lo, ids, slice(None)))
                else:
                    first, m, operands = part
                    ids = np.empty((m, len(operands)), dtype=np.int32)
                    for j, (b, off) in enumerate(operands):
                        order.setdefault(b, len(order))
                        width[b] = min(width.get(b, off.shape[1]), off.shape[1])
                        segments.append((b, off, ids, (slice(None), j)))
                out.append(ids)
            outs.append(out)
            if len(outs) == 1:
                first_set = len(segments)  # the segments of the first set (the reads)
        total = 0
        if segments:
            cols = max(r.shape[1] for _, r, _, _ in segments)
            rank_of = np.zeros(max(order) + 1, dtype=np.int64)
            width_of = np.zeros(max(order) + 1, dtype=np.int64)
            rank_of[list(order)] = list(order.values())
            width_of[list(width)] = list(width.values())
            ranks, rows = [], []
            for b, r, _, _ in segments:
                padded = np.zeros((len(r), cols), dtype=np.int64)
                padded[:, :r.shape[1]] = r
                if isinstance(b, int):
                    padded[:, width[b]:] = 0
                    ranks.append(np.full(len(r), order[b], dtype=np.int64))
                else:  # one-at-a-time rows of several buffers: each keeps its buffer's columns
                    padded[np.arange(cols)[None, :] >= width_of[b][:, None]] = 0
                    ranks.append(rank_of[b])
                rows.append(padded)
            table = np.concatenate([np.concatenate(ranks)[:, None]] + [np.concatenate(rows)], axis=1) \
                if len(rows) > 1 else np.concatenate([ranks[0][:, None], rows[0]], axis=1)
            if len(sets) == 2:
                _snap_reads_to_writes(table, sum(len(r) for _, r, _, _ in segments[:first_set]))
            inverse, total = _dense_rows(table)
            start = 0
            for _, r, ids, where in segments:
                ids[where] = inverse[start:start + len(r)]
                start += len(r)
        result = [np.concatenate([x.reshape(-1) for x in out]) if out else np.zeros(0, dtype=np.int32)
                  for out in outs]
        return result + [total]


class _Run:
    """Entries added one task at a time: task, buffer and origin (padded to the largest rank)."""

    __slots__ = ("task", "buf", "lo", "rank")

    def __init__(self, first, rank):
        self.task, self.buf, self.lo, self.rank = array("q"), array("q"), array("q"), rank

    def add(self, task, buf, lo):
        self.task.append(task)
        self.buf.append(buf)
        self.lo.extend(lo)
        if len(lo) < self.rank:
            self.lo.extend([0] * (self.rank - len(lo)))


def _snap_reads_to_writes(table, n_reads):
    """Key a read by the written tile that holds it: rows [:n_reads] of ``table`` (buffer rank,
    origin) are reads, the rest writes. A consumer that reads part of a tile a producer wrote
    (the two vector cores each reading half of a cube tile) touches the line the write made
    resident, not a line of its own: L2 is written back, the tile is there. Per buffer and
    dimension a read's origin moves down to the nearest write origin (writes on a tile grid),
    in place."""
    if n_reads == 0 or n_reads == len(table):
        return
    reads, writes = table[:n_reads], table[n_reads:]
    rb, wb = reads[:, 0], writes[:, 0]
    # one sorted key per (buffer, write origin) and a binary search per read, for every buffer at
    # once: a loop over buffers that scans all rows each time is quadratic in the buffers
    # (qwen3_next's gated delta rule, 75,536 tasks: 137 s of its 143 s timeline build went there)
    b_lo = int(min(rb.min(), wb.min()))
    for d in range(1, table.shape[1]):
        rv, wv = reads[:, d], writes[:, d]
        v_lo = int(min(rv.min(), wv.min()))
        span = int(max(rv.max(), wv.max())) - v_lo + 1
        if (int(max(rb.max(), wb.max())) - b_lo + 1) * span >= 1 << 62:
            _snap_dim_by_buffer(reads, writes, d)
            continue
        keys = np.unique((wb - b_lo) * span + (wv - v_lo))
        at = np.searchsorted(keys, (rb - b_lo) * span + (rv - v_lo), side="right") - 1
        found = keys[np.maximum(at, 0)]
        ok = (at >= 0) & (found // span == rb - b_lo)
        rv[ok] = found[ok] % span + v_lo


def _snap_dim_by_buffer(reads, writes, d):
    """`_snap_reads_to_writes` for one dimension, buffer by buffer (keys too wide for one int64)."""
    for b in np.unique(writes[:, 0]).tolist():
        rsel = reads[:, 0] == b
        if not rsel.any():
            continue
        grid = np.unique(writes[writes[:, 0] == b, d])
        r = reads[rsel, d]
        at = np.searchsorted(grid, r, side="right") - 1
        ok = at >= 0
        r[ok] = grid[at[ok]]
        reads[rsel, d] = r


def _dense_rows(table):
    """(int32 id per row numbering equal rows alike, number of distinct rows)."""
    if not table.shape[1]:
        return np.zeros(len(table), dtype=np.int32), 1
    lo, hi = table.min(axis=0), table.max(axis=0)
    span = hi - lo + 1
    total = 1
    for x in span.tolist():
        total *= x
    if total < 1 << 62:  # pack each row into one int64
        key = table[:, 0] - lo[0]
        for d in range(1, table.shape[1]):
            key = key * span[d] + (table[:, d] - lo[d])
        if len(key) > 1 and (np.diff(key) > 0).all():  # already distinct and sorted (a tile grid)
            return np.arange(len(key), dtype=np.int32), len(key)
        uniq, inverse = np.unique(key, return_inverse=True)
    else:
        uniq, inverse = np.unique(table, axis=0, return_inverse=True)
    return inverse.reshape(-1).astype(np.int32), len(uniq)
