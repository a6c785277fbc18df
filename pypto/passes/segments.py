"""Root segments: the straight-line runs of tensor ops between loops, one root function each.

Upstream wraps code outside any loop in an implicit ``loop(1)`` per straight-line segment and
compiles every loop-body path as one root function; this pass finds those segments and the
values that cross from one segment to another (those must live in GM).
"""

from __future__ import annotations

from dataclasses import dataclass

from ..ir.graph import Block, Branch, Loop, Op, Program


@dataclass(frozen=True, eq=False)
class RootCall:
    """A step of the control program: run root function ``index`` with the current sizes."""

    index: int
    ops: tuple


def split_segments(program: Program):
    """(control region, list of op tuples per segment) for ``program``."""
    segments: list = []

    def region(r):
        if isinstance(r, Branch):
            return Branch(r.cond, region(r.then), region(r.orelse), r.loc)
        items, run = [], []
        for item in r.items:
            if isinstance(item, Op):
                run.append(item)
                continue
            if run:
                items.append(RootCall(len(segments), tuple(run)))
                segments.append(tuple(run))
                run = []
            items.append(Loop(item.id, item.name, item.index, item.start, item.stop, item.step, item.factors,
                              tuple(region(b) for b in item.bodies), item.parallel, item.submit_before_loop,
                              item.loc))
        if run:
            items.append(RootCall(len(segments), tuple(run)))
            segments.append(tuple(run))
        return Block(tuple(items), r.returns)

    return region(program.body), segments


def escaping_values(program: Program, segments) -> set:
    """Ids of values that must live in GM: parameters, returned values, and values used in a
    segment other than the one that produced them."""
    out = {p.value.id for p in program.params}
    owner = {}
    for i, ops in enumerate(segments):
        for op in ops:
            for v in op.outputs:
                owner.setdefault(v.id, i)
    for i, ops in enumerate(segments):
        for op in ops:
            for v in op.inputs:
                root = v
                while root.base is not None:
                    if owner.get(root.id, i) != i:
                        out.add(root.id)
                    root = root.base
                if owner.get(root.id, i) != i:
                    out.add(root.id)
    from ..ir.graph import iter_blocks

    for block in iter_blocks(program.body):
        for v in block.returns or ():
            out.add(v.id)
            while v.base is not None:
                v = v.base
                out.add(v.id)
    return out
