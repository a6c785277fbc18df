"""What a simulation recorded, in columns, shown as read-only sequences.

`Timeline.events`, `.deps` and `.aicpu` of a simulated timeline are `TaskEvents`, `DepEdges` and
`AicpuSpans`: they behave like the lists of `TaskEvent`, ``(src, dst, kind)`` and `AicpuEvent`
they replace (len, indexing, slicing, iteration, ``==``), but build each object only when it is
read, so a million-task timeline holds tens of bytes per task. `Timeline` computes its stats from
the columns directly when it has them.
"""

from __future__ import annotations

import numpy as np  # imported with the simulator, never by `import pypto`
from collections.abc import Sequence

from .regions import KINDS
from .timeline import AicpuEvent, TaskEvent



KEEP_ITEMS = 200_000  # sequences up to this long keep the objects they made


class _Columns(Sequence):
    """A sequence whose items are made from numpy columns when first read. Up to KEEP_ITEMS
    items they are kept, so reading an item twice gives the same object, as with a list; a longer
    sequence makes a fresh object each time (holding a million of them would cost more than the
    whole timeline)."""

    _made = None

    def __getitem__(self, i):
        if isinstance(i, slice):
            return [self[j] for j in range(*i.indices(len(self)))]
        n = len(self)
        if i < 0:
            i += n
        if not 0 <= i < n:
            raise IndexError("index out of range")
        made = self._made
        if made is None:
            if n > KEEP_ITEMS:
                return self._item(i)
            made = self._made = [None] * n
        item = made[i]
        if item is None:
            item = made[i] = self._item(i)
        return item

    def __iter__(self):
        for i in range(len(self)):
            yield self[i]

    def __eq__(self, other):
        if isinstance(other, (_Columns, list, tuple)):
            return len(self) == len(other) and all(a == b for a, b in zip(self, other))
        return NotImplemented

    def __hash__(self):
        return id(self)

    def __repr__(self) -> str:
        return f"<{type(self).__name__} of {len(self)}>"


class TaskEvents(_Columns):
    """One `TaskEvent` per task, in the order the tasks finished.

    Columns (indexed by task id): ``start``, ``end`` (int64 cycles), ``core`` (core number),
    ``thread``, ``cost`` (index into the cost table), and ``order`` (task ids by finish)."""

    def __init__(self, order, start, end, core, thread, cost, cost_pipes, cost_hits, cls, classes,
                 root_first, root_names, root_env, loop_names, dt_first, core_names, core_types, vso):
        self.order, self.start, self.end, self.core, self.thread, self.cost = order, start, end, core, thread, cost
        self.cost_pipes, self.cost_hits = cost_pipes, cost_hits
        self.cls, self.classes = cls, classes
        self.root_first, self.root_names, self.root_env, self.loop_names = root_first, root_names, root_env, \
            loop_names
        self.dt_first, self.core_names, self.core_types, self.vso = dt_first, core_names, core_types, vso
        self._loops: dict = {}

    def __len__(self):
        return len(self.order)

    def _item(self, i):
        k = int(self.order[i])
        seq = int(np.searchsorted(self.root_first, k, "right")) - 1
        c = int(self.core[k])
        tc = self.classes[int(self.cls[k])]
        cid = int(self.cost[k])
        return TaskEvent(k, self.core_names[c], self.core_types[c], tc.leaf.name, seq, self.root_names[seq],
                         self._loop_indices(seq), int(np.searchsorted(self.dt_first, k, "right")) - 1,
                         int(self.thread[k]), int(self.start[k]), int(self.end[k]), self.cost_pipes[cid],
                         self.cost_hits[cid], ("main" if tc.full else "tail") if self.vso else "")

    def _loop_indices(self, seq):
        got = self._loops.get(seq)
        if got is None:
            env = self.root_env(seq)
            got = self._loops[seq] = tuple((n, env[n]) for n in self.loop_names if n in env)
        return got

    # ---- columns for vectorised stats -----------------------------------------------------------
    def durations(self):
        return self.end - self.start

    def core_type_codes(self):
        """0 for AIC, 1 for AIV, per task id."""
        return (np.asarray([t == "AIV" for t in self.core_types], dtype=np.int8))[self.core]


class DepEdges(_Columns):
    """The dependency edges as ``(src task, dst task, "RAW"|"WAR"|"WAW")`` tuples."""

    def __init__(self, src, dst, kind):
        self.src, self.dst, self.kind = src, dst, kind

    def __len__(self):
        return len(self.src)

    def _item(self, i):
        return int(self.src[i]), int(self.dst[i]), KINDS[int(self.kind[i])]


SPAN_NAMES = ("stitch", "submit", "dispatch", "complete", "wait device")


class AicpuSpans(_Columns):
    """`AicpuEvent` spans in the order the simulator recorded them.

    A task's completion span is stored as two numbers in finish order (``completions``: start and
    end; its task is ``done[i]``, its thread ``owner(task)``). The other spans are columns
    ``thread`` (-1 for the control thread), ``name`` (index into SPAN_NAMES), ``start``, ``end``,
    ``arg`` (root sequence number for a stitch, device task for a submit) and ``at`` (how many
    completions were recorded before it)."""

    def __init__(self, completions, done, owner, others, root_names_by_seq, dt_sizes):
        self.c_start, self.c_end = completions
        self.done, self.owner = done, owner
        self.thread, self.name, self.start, self.end, self.arg, self.at = others
        self.root_names_by_seq, self.dt_sizes = root_names_by_seq, dt_sizes
        self.pos = self.at + np.arange(len(self.at))  # place of each other span in the whole sequence

    def __len__(self):
        return len(self.c_start) + len(self.start)

    @property
    def ends(self):
        """End cycles of every span (any order)."""
        return np.concatenate([self.c_end, self.end])

    def _item(self, i):
        j = int(np.searchsorted(self.pos, i, "left"))
        if j < len(self.pos) and self.pos[j] == i:
            th, code, arg = int(self.thread[j]), int(self.name[j]), int(self.arg[j])
            start, end = int(self.start[j]), int(self.end[j])
        else:
            c = i - j
            arg = int(self.done[c])
            th, code, start, end = int(self.owner(arg)), 3, int(self.c_start[c]), int(self.c_end[c])
        name = SPAN_NAMES[code]
        if code == 0:
            detail = f"root{arg} ({self.root_names_by_seq(arg)})"
        elif code == 1:
            detail = f"device task {arg}: {self.dt_sizes[arg]} tasks"
        elif code == 3:
            detail = f"task {arg}"
        elif code == 4:
            detail = "control flow reads tensor values"
        else:
            detail = ""
        return AicpuEvent("control" if th < 0 else f"sched{th}", name, start, end, detail)


def merged_bars(tl, gap: float) -> tuple:
    """Bars for drawing a huge timeline: on each lane (core or AICPU thread), consecutive spans
    less than ``gap`` cycles apart become one bar. Returns (task bars, AICPU bars), each a list
    of ``(lane, group, start, end, count)``; the group is the leaf (or span name) of the first
    span in the bar."""
    return _merge(*_task_columns(tl.events), gap), _merge(*_aicpu_columns(tl.aicpu), gap)


def _task_columns(ev):
    if isinstance(ev, TaskEvents):
        leaves = [c.leaf.name for c in ev.classes]
        return (np.asarray(ev.core_names, dtype=object), ev.core.astype(np.int64), ev.start, ev.end,
                np.asarray(leaves, dtype=object)[ev.cls] if leaves else np.zeros(0, dtype=object))
    return _generic([(e.core, e.leaf, e.start, e.end) for e in ev])


def _aicpu_columns(spans):
    if isinstance(spans, AicpuSpans):
        c_thread = spans.owner(spans.done).astype(np.int64) if len(spans.done) else np.zeros(0, dtype=np.int64)
        lane = np.concatenate([c_thread, spans.thread.astype(np.int64)]) + 1  # 0: control, 1 + i: sched<i>
        names = np.asarray(SPAN_NAMES, dtype=object)
        group = np.concatenate([names[np.full(len(c_thread), 3)], names[spans.name.astype(np.int64)]])
        n_lanes = int(lane.max()) + 1 if len(lane) else 1
        lane_names = np.asarray(["control"] + [f"sched{i}" for i in range(n_lanes - 1)], dtype=object)
        return lane_names, lane, np.concatenate([spans.c_start, spans.start]), spans.ends, group
    return _generic([(a.thread, a.name, a.start, a.end) for a in spans])


def _generic(rows):
    names = sorted({r[0] for r in rows})
    code = {n: i for i, n in enumerate(names)}
    return (np.asarray(names, dtype=object), np.asarray([code[r[0]] for r in rows], dtype=np.int64),
            np.asarray([r[2] for r in rows], dtype=np.int64), np.asarray([r[3] for r in rows], dtype=np.int64),
            np.asarray([r[1] for r in rows], dtype=object))


def _merge(lane_names, lane, start, end, group, gap):
    n = len(lane)
    if not n:
        return []
    order = np.lexsort((start, lane))
    lane, start, end, group = lane[order], start[order], end[order], group[order]
    first = np.ones(n, dtype=bool)
    first[1:] = (lane[1:] != lane[:-1]) | (start[1:] - end[:-1] > gap)
    idx = np.nonzero(first)[0]
    ends = np.maximum.reduceat(end, idx)
    count = np.diff(np.append(idx, n))
    return [(lane_names[lane[i]], group[i], int(start[i]), int(e), int(c))
            for i, e, c in zip(idx.tolist(), ends.tolist(), count.tolist())]
