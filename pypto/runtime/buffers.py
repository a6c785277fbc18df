"""On-chip buffer occupancy over time: how many bytes of UB / L1 / L0A / L0B / L0C each core
holds while it runs its tasks, from the buffer plan of each leaf (``LeafKernel.buffers``: a
buffer's memory, offset, size and the ops it is live for).

Within a task the ops are taken as equally long (the simulator times a task as a whole, its
pipes overlapping): op ``i`` of ``n`` spans ``[start + i/n, start + (i+1)/n)`` of the task. A
leaf's footprint in a memory is the end of its highest buffer (offset + size); a plan whose
footprint exceeds the machine's capacity cannot run as planned and is flagged.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np  # imported with the simulator, never by `import pypto`

MEMS = ("UB", "L1", "L0A", "L0B", "L0C")


@dataclass(frozen=True)
class LeafOccupancy:
    """One leaf's buffers per memory: ``live[mem][i]`` bytes live during op ``i``, ``footprint``
    (highest offset + size) and the ``buffers`` live at each op (names)."""

    leaf: str
    n_ops: int
    live: dict
    footprint: dict
    names: dict  # mem -> tuple of buffer-name tuples, one per op


def leaf_occupancy(leaf) -> LeafOccupancy:
    """The `LeafOccupancy` of ``leaf`` (a lowered leaf kernel with ``buffers`` and ``ops``)."""
    n = max(len(getattr(leaf, "ops", ()) or ()), 1)
    live = {m: np.zeros(n, dtype=np.int64) for m in MEMS}
    names = {m: [[] for _ in range(n)] for m in MEMS}
    footprint = dict.fromkeys(MEMS, 0)
    for b in getattr(leaf, "buffers", ()) or ():
        if b.mem not in live:
            continue
        lo, hi = max(int(b.first), 0), min(int(b.last), n - 1)
        live[b.mem][lo:hi + 1] += int(b.nbytes)
        for i in range(lo, hi + 1):
            names[b.mem][i].append(b.name)
        footprint[b.mem] = max(footprint[b.mem], int(b.offset) + int(b.nbytes))
    return LeafOccupancy(leaf.name, n, live, footprint, {m: tuple(map(tuple, v)) for m, v in names.items()})


def over_capacity(leaves, machine) -> list:
    """``(leaf, mem, footprint bytes, capacity bytes)`` of every leaf whose plan does not fit."""
    out = []
    for leaf in leaves:
        occ = leaf_occupancy(leaf)
        for mem in MEMS:
            cap = machine.capacity(mem)
            if occ.footprint[mem] > cap:
                out.append((leaf.name, mem, occ.footprint[mem], cap))
    return out


@dataclass(frozen=True)
class CoreTrack:
    """Bytes of ``mem`` live on ``core`` over time: a step function, ``times[k]`` (cycles) to
    ``times[k + 1]`` holds ``bytes[k]``; ``task[k]``/``op[k]`` say which task and op (-1: idle)."""

    core: str
    mem: str
    capacity: int
    times: np.ndarray
    bytes: np.ndarray
    task: np.ndarray
    op: np.ndarray

    @property
    def peak(self) -> int:
        return int(self.bytes.max(initial=0))


def core_tracks(tl, core: str, mems=MEMS) -> list:
    """One `CoreTrack` per memory in ``mems`` for ``core`` (e.g. "AIV3") of simulated timeline
    ``tl`` (its events in columns); memories no task of the core uses are left out."""
    from .eventlog import TaskEvents

    ev = tl.events
    if not isinstance(ev, TaskEvents):
        return []
    try:
        c = ev.core_names.index(core)
    except ValueError:
        return []
    tasks = np.nonzero(np.asarray(ev.core) == c)[0]
    tasks = tasks[np.argsort(np.asarray(ev.start)[tasks], kind="stable")]
    occ = {}
    for cls in np.unique(np.asarray(ev.cls)[tasks]).tolist():
        leaf = ev.classes[cls].leaf
        occ[cls] = leaf_occupancy(leaf)
    out = []
    for mem in mems:
        if not any(o.footprint[mem] for o in occ.values()):
            continue
        times, values, task_ids, ops = [0], [], [], []
        for k in tasks.tolist():
            o = occ[int(ev.cls[k])]
            s, e = int(ev.start[k]), int(ev.end[k])
            if s > times[-1]:
                values.append(0), task_ids.append(-1), ops.append(-1)
                times.append(s)
            for i in range(o.n_ops):
                values.append(int(o.live[mem][i])), task_ids.append(k), ops.append(i)
                times.append(s + (e - s) * (i + 1) // o.n_ops)
        end = int(tl.stats["makespan_cycles"])
        if end > times[-1]:
            values.append(0), task_ids.append(-1), ops.append(-1)
            times.append(end)
        out.append(CoreTrack(core, mem, tl.machine.capacity(mem), np.asarray(times, dtype=np.int64),
                             np.asarray(values, dtype=np.int64), np.asarray(task_ids, dtype=np.int64),
                             np.asarray(ops, dtype=np.int64)))
    return out


def busiest_cores(tl) -> list:
    """Core names, one per core type that ran tasks, the busiest of its type first."""
    from .eventlog import TaskEvents

    ev = tl.events
    if not isinstance(ev, TaskEvents) or not len(ev):
        return []
    busy = np.bincount(np.asarray(ev.core), weights=np.asarray(ev.end - ev.start, dtype=np.float64),
                       minlength=len(ev.core_names))
    out = []
    for kind in ("AIC", "AIV"):
        mine = [i for i, t in enumerate(ev.core_types) if t == kind and busy[i] > 0]
        if mine:
            out.append(ev.core_names[max(mine, key=lambda i: busy[i])])
    return out
