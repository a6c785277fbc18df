"""Buffers over time as tracks of the swimlane chart: what ``swimlane.js`` needs to draw, under each
core's lane, one track per on-chip memory (UB on a vector core; L1 / L0A / L0B / L0C on a cube
core) with the bytes live over time and the capacity line.

The tracks are not sent as step functions: a task's occupancy is its leaf's buffer plan
(`pypto.runtime.buffers.leaf_occupancy`: the bytes live at each op, its ops taken as equally
long), so the chart gets one profile per leaf and draws each bar's profile inside the bar. That
keeps the payload the size of the leaves, not of the tasks. Flags: plans over a memory's
capacity, and leaves whose pipes idle (`pypto.hints.idle_pipes`).
"""

from __future__ import annotations

import numpy as np


def _kb(n: int) -> str:
    return f"{n / 1024:,.1f} KB"


def buffer_tracks_meta(tl, lane_names: list, leaf_names: list):
    """The ``meta["buffers"]`` of a simulated timeline's payload, or None (a measured trace, or
    no leaf holds an on-chip buffer): ``mems`` per lane (display order) with its ``peak`` bytes
    live, ``capacity`` per memory, one ``profile`` per leaf (in ``leaf_names`` order: bytes live
    per op per memory, the buffers' names, each op's kind and kernel line) and ``flags``."""
    from pypto.hints import idle_pipes
    from pypto.runtime.buffers import MEMS, leaf_occupancy
    from pypto.runtime.eventlog import TaskEvents

    ev = tl.events
    if not isinstance(ev, TaskEvents) or not len(ev):
        return None
    leaf_of = {}
    for c in ev.classes:
        leaf_of.setdefault(c.leaf.name, c.leaf)
    occ = {name: leaf_occupancy(leaf) for name, leaf in leaf_of.items()}
    if not any(o.footprint[m] for o in occ.values() for m in MEMS):
        return None
    profiles = []
    for name in leaf_names:
        o, leaf = occ.get(name), leaf_of.get(name)
        if o is None:
            profiles.append(None)
            continue
        ops = list(getattr(leaf, "ops", ()) or ())
        profiles.append({
            "live": {m: o.live[m].tolist() for m in MEMS if o.footprint[m]},
            "names": {m: [list(n) for n in o.names[m]] for m in MEMS if o.footprint[m]},
            "footprint": {m: int(o.footprint[m]) for m in MEMS if o.footprint[m]},
            "ops": [op.kind for op in ops],
            "lines": [str(op.loc) if getattr(op, "loc", None) is not None else "" for op in ops],
        })
    capacity = {m: int(tl.machine.capacity(m)) for m in MEMS}
    # per core: the leaves it ran, hence its memories, peak bytes live and highest plan
    cls_leaf = np.asarray([leaf_names.index(c.leaf.name) for c in ev.classes], dtype=np.int64)
    core_of = np.asarray(ev.core, dtype=np.int64)
    leaf_of_task = cls_leaf[np.asarray(ev.cls, dtype=np.int64)]
    pairs = np.unique(core_of * (len(leaf_names) + 1) + leaf_of_task)
    ran: dict = {}
    for p in pairs.tolist():
        ran.setdefault(ev.core_names[p // (len(leaf_names) + 1)], []).append(p % (len(leaf_names) + 1))
    lanes = []
    for name in lane_names:
        mems = {}
        for li in ran.get(name, ()):
            prof = profiles[li]
            if prof is None:
                continue
            for m, live in prof["live"].items():
                peak, plan = mems.get(m, (0, 0))
                mems[m] = (max(peak, max(live, default=0)), max(plan, prof["footprint"][m]))
        lanes.append([{"mem": m, "peak": peak, "plan": plan} for m in MEMS if m in mems
                      for peak, plan in [mems[m]]])
    flags = [f"{leaf}: plans {_kb(o.footprint[m])} of {m}, over its capacity of {_kb(capacity[m])}"
             for leaf, o in sorted(occ.items()) for m in MEMS if o.footprint[m] > capacity[m]]
    flags += [h.title for h in idle_pipes(tl)]
    return {"lanes": lanes, "capacity": capacity, "profiles": profiles, "flags": flags,
            "over": [f for f in flags if "over its capacity" in f]}


__all__ = ["buffer_tracks_meta"]
