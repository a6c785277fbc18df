"""The Execute Graph: one root function per segment, holding a call of a leaf function per
subgraph, with the GM arguments of that call site and the dependencies between calls."""

from __future__ import annotations

import itertools

from ..ir.tile import CallOp, RootFunction

# Call ids are unique across every compiled kernel: the runtime caches per-call-site plans by id.
_CALL_IDS = itertools.count(1)


def call_args(sg, leaf):
    """The GM accesses of subgraph ``sg`` in the order of ``leaf``'s params, and the written ones."""
    args, writes = [None] * len(leaf.params), []
    for (i, role, k), p in leaf.param_of.items():
        op = sg.ops[i]
        args[p] = (op.inputs if role == "in" else op.outputs)[k]
        if role == "out":
            writes.append(p)
    return tuple(args), tuple(sorted(writes))


def build_root(name, subgraphs, leaves, new_id, tile_graph, storage=None) -> RootFunction:
    sid = (lambda v: storage.get(v, v)) if storage else (lambda v: v)  # noqa: E731  (passes/aliasing.py)
    calls = []
    for sg, leaf in zip(subgraphs, leaves):
        args, writes = call_args(sg, leaf)
        calls.append(CallOp(next(_CALL_IDS), leaf, sg.grid, args, writes, sg.id, sg.ops[0].loc))
    # each call depends on the last writer of what it touches and, when it writes, on the readers
    # since that write: every conflicting pair is ordered, transitively, with few edges
    deps, last_write, readers = set(), {}, {}
    for j, c in enumerate(calls):
        reads = {sid(a.value.id) for k, a in enumerate(c.args) if k not in c.writes}
        writes = {sid(c.args[k].value.id) for k in c.writes}
        for v in reads | writes:
            if v in last_write:
                deps.add((last_write[v], j))
        for v in writes:
            deps |= {(i, j) for i in readers.get(v, ()) if i != j}
        for v in reads:
            readers.setdefault(v, set()).add(j)
        for v in writes:
            last_write[v] = j
            readers[v] = set()
    deps = sorted(deps)
    return RootFunction(name, tuple(calls), tuple(deps), tile_graph, tuple(subgraphs))


def verify_root(root: RootFunction) -> None:
    """Dependencies point forward, and every call's grid matches its leaf's."""
    for i, j in root.deps:
        assert i < j, f"root {root.name}: dependency {i} -> {j} points backwards"
    for c in root.calls:
        assert len(c.grid) == c.leaf.grid_rank, f"root {root.name}: call of {c.leaf.name} has a wrong grid"
        assert len(c.args) == len(c.leaf.params), f"root {root.name}: call of {c.leaf.name} has wrong arguments"
