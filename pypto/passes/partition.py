"""GraphPartition: fused groups become subgraphs, each bound to one core type (AIV or AIC)."""

from __future__ import annotations

from ..ir.tile import Subgraph


def partition(ops, group_of: dict) -> list:
    """Subgraphs in execution order (a group runs where its first op stood)."""
    members: dict = {}
    order: list = []
    for op in ops:
        g = group_of[op.id]
        if g not in members:
            members[g] = []
            order.append(g)
        members[g].append(op)
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
                    assert (a.value.id, a.mem) in produced, \
                        f"subgraph {sg.id}: {op.kind} reads local %{a.value.name} in {a.mem} that it never wrote"
            for a in op.outputs:
                if a.mem != "GM":
                    produced.add((a.value.id, a.mem))
