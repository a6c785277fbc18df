"""Invariants of the Tensor and Tile levels, checked after the passes that produce them.

A failed check is a compiler bug, reported loudly at compile time with the pass and op.
(The Block and Execute levels are checked by partition.verify_subgraphs and
execute.verify_root.)
"""

from __future__ import annotations

from ..ir import expr as E
from ..ir.graph import Branch, Loop, Op
from .expand import WHOLE


class InvariantError(AssertionError):
    """A pass produced a graph that breaks an invariant of its level."""


def verify_tensor_graph(program, after: str) -> None:
    """Every op input is a parameter or was produced earlier on the path (or before the loop)."""
    defined = {p.value.id for p in program.params}

    def region(r, known):
        if isinstance(r, Branch):
            region(r.then, set(known))
            region(r.orelse, set(known))
            return
        for item in r.items:
            if isinstance(item, Op):
                for v in item.inputs:
                    if v.id not in known:
                        raise InvariantError(f"after {after}: op {item.kind} ({item.loc}) reads %{v.name} "
                                             "before it is produced")
                known |= {v.id for v in item.outputs}
            elif isinstance(item, Loop):
                for body in item.bodies:
                    inner = set(known)
                    region(body, inner)
                    known |= inner

    region(program.body, defined)


_LOCAL_IN = {"AIV": ("UB",), "AIC": ("L0A", "L0B", "L1")}


def verify_tile_ops(roots_ops, after: str, memory_assigned: bool) -> None:
    """Accesses match their op's grid; after assign_memory compute reads/writes only local tiles
    and every GM transfer is a copy."""
    for ops in roots_ops:
        for op in ops:
            for a in op.inputs + op.outputs:
                if not (len(a.shape) == len(a.base) == len(a.axis) == len(a.extent)):
                    raise InvariantError(f"after {after}: {op.kind} has an access of inconsistent rank")
                for ax in a.axis:
                    if ax is not None and not 0 <= ax < len(op.grid):
                        raise InvariantError(f"after {after}: {op.kind} moves along grid axis {ax} of "
                                             f"{len(op.grid)}")
                for s in a.shape:
                    if isinstance(s, int) and s <= 0:
                        raise InvariantError(f"after {after}: {op.kind} has an empty tile {E.render_dims(a.shape)}")
            if not memory_assigned:
                continue
            compute = op.kind not in ("copy_in", "gather_in", "copy_out", "l1_to_l0a", "l1_to_l0b") \
                and op.kind not in WHOLE
            if compute:
                for a in op.inputs:
                    if a.mem not in _LOCAL_IN[op.core]:
                        raise InvariantError(f"after {after}: {op.kind} on {op.core} reads {a.mem}")
                for a in op.outputs:
                    if a.mem != ("L0C" if op.core == "AIC" else "UB"):
                        raise InvariantError(f"after {after}: {op.kind} on {op.core} writes {a.mem}")
            if any(a.mem is None for a in op.inputs + op.outputs):
                raise InvariantError(f"after {after}: {op.kind} has an operand with no memory level")
