"""GraphPartition: fused groups become subgraphs, each bound to one core type (AIV or AIC)."""

from __future__ import annotations

import heapq

from ..ir.tile import Subgraph


def partition(ops, group_of: dict, storage=None) -> list:
    """Subgraphs in an execution order that respects every GM dependency between them.

    A fused group may have absorbed ops that come after another group's ops, so groups are
    ordered topologically (ties keep program order) over RAW, WAR and WAW conflicts in GM (per
    memory: ``storage`` maps a value living in another's memory to it, passes/aliasing.py).
    """
    sid = (lambda v: storage.get(v, v)) if storage else (lambda v: v)  # noqa: E731
    members: dict = {}
    first: dict = {}
    for i, op in enumerate(ops):
        g = group_of[op.id]
        members.setdefault(g, []).append(op)
        first.setdefault(g, i)
    edges = {g: set() for g in members}
    indeg = {g: 0 for g in members}
    # per GM value: the group that last wrote it and the groups that read it since; edges to these
    # order every older access too (transitively), so each access adds a bounded number of edges
    last_write: dict = {}
    readers: dict = {}

    def edge(h, g):
        if h != g and g not in edges[h]:
            edges[h].add(g)
            indeg[g] += 1

    for op in ops:
        g = group_of[op.id]
        for a in op.inputs:
            if a.mem == "GM":
                w = last_write.get(sid(a.value.id))
                if w is not None:
                    edge(w, g)  # RAW
                readers.setdefault(sid(a.value.id), set()).add(g)
        for a in op.outputs:
            if a.mem == "GM":
                w = last_write.get(sid(a.value.id))
                if w is not None:
                    edge(w, g)  # WAW
                for h in readers.pop(sid(a.value.id), ()):
                    edge(h, g)  # WAR
                last_write[sid(a.value.id)] = g
    ready = [(first[g], g) for g in members if indeg[g] == 0]
    heapq.heapify(ready)
    order = []
    while ready:
        _, g = heapq.heappop(ready)
        order.append(g)
        for h in edges[g]:
            indeg[h] -= 1
            if indeg[h] == 0:
                heapq.heappush(ready, (first[h], h))
    if len(order) != len(members):
        raise AssertionError("internal: fused groups depend on each other in a cycle")
    out = []
    for i, g in enumerate(order):
        ops_g = tuple(members[g])
        core = "AIC" if any(o.core == "AIC" for o in ops_g) else "AIV"
        out.append(Subgraph(i, ops_g, ops_g[0].grid, core))
    return out


def verify_subgraphs(subgraphs) -> None:
    """Every op of a subgraph shares its grid and core type, and local tiles never leave it."""
    for sg in subgraphs:
        produced = set()
        for op in sg.ops:
            assert op.grid == sg.grid, f"subgraph {sg.id}: op {op.kind} has grid {op.grid}, not {sg.grid}"
            assert op.core == sg.core or op.kind.startswith("copy"), f"subgraph {sg.id} mixes core types"
            for a in op.inputs:
                if a.mem != "GM":
                    assert a.local_key in produced, \
                        f"subgraph {sg.id}: {op.kind} reads local %{a.value.name} in {a.mem} that it never wrote"
            for a in op.outputs:
                if a.mem != "GM":
                    produced.add(a.local_key)
