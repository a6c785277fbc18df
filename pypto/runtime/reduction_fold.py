"""Split reductions folded at execution: one reduction over the whole dim instead of partials.

A reduction whose dim spans several tiles is a partial reduction per tile into a GM workspace,
then a combine over the partials (passes/expand.py); the device runs it so, and the timing
simulator times those tasks. When one step computes every partial (the tiles along the dim are a
batch dim of one leaf call: the seed softmax's (1, 4, 1, 64) tile cuts each 256-wide row in 4) and
the next step that touches them is the combine, the combine's leaf can read the tensor itself,
seen with the dim whole, and reduce it in one go: the step of the partials goes, and one
reduction over contiguous rows replaces a strided one and a second small one.

The numbers: a maximum or minimum is exact in any order; an fp32 sum is summed in another order
(its last bits may change: torch's own order differs from the device's anyway). Only reductions
whose partials have the operand's own dtype fold, so a half-precision operand (fp32 partials)
keeps its rounding points. The partial workspace is then not written by the call: nothing reads
it (that is checked), but the lab's memory view of it shows what its slab held before.

The tasks, and so the simulated timing, are those of the program: only the numeric steps change.
"""

from __future__ import annotations

from .plan import Step

FOLDED = ("amax", "amin", "sum")


def _dtype_of(sid, layout):
    if sid < layout.n_params:
        return layout.lowered.program.params[sid].value.dtype.torch()
    return layout.slabs[sid - layout.n_params][1]


def _partial_leaf(leaf):
    """(kind, dim) when ``leaf`` is exactly copy_in -> a partial reduction -> copy_out, else None."""
    ops = leaf.ops
    if len(ops) != 3 or ops[0].kind != "copy_in" or ops[2].kind != "copy_out":
        return None
    op = ops[1]
    if op.kind not in FOLDED or op.attrs.get("combine") or not op.attrs.get("keepdim", False):
        return None
    if ops[1].inputs[0].local_key != ops[0].outputs[0].local_key or \
            ops[2].inputs[0].local_key != op.outputs[0].local_key:
        return None
    rank = len(op.inputs[0].shape)
    return op.kind, op.attrs["dim"] % rank


def _combine_of(leaf, p):
    """The dim of the combine that param ``p`` of ``leaf`` feeds (copy_in -> combine of kind
    ``kind``, its only reader), as (kind, dim); None when ``p`` is read otherwise."""
    where = [i for (i, role, k), q in leaf.param_of.items() if q == p]
    if len(where) != 1 or leaf.param_of.get((where[0], "in", 0)) != p:
        return None
    load = leaf.ops[where[0]]
    if load.kind != "copy_in":
        return None
    key = load.outputs[0].local_key
    readers = [op for op in leaf.ops for a in op.inputs if a.local_key == key and a.mem != "GM"]
    if len(readers) != 1 or readers[0].kind not in FOLDED or not readers[0].attrs.get("combine"):
        return None
    op = readers[0]
    return op.kind, op.attrs["dim"] % len(op.inputs[0].shape)


def _merged_view(partial, combine_in, nb_p, nb_c, dim_p, dim_c):
    """The view of the partial step's operand with the reduced dim whole, laid out as the
    combine's input view (size, stride, offset), or None when the partials are not exactly the
    tiles of one dim side by side."""
    (_, _, xsize, xstride, xoff), (_, _, osize, ostride, ooff) = partial
    _, _, csize, cstride, coff = combine_in
    if coff != ooff or len(xsize) != len(osize):
        return None
    r = nb_p + dim_p  # the reduced tile dim of the partial step
    kd = nb_c + dim_c  # the combine's dim: the partials, one per tile
    used = set()
    size, stride = [], []
    for k, (n, st) in enumerate(zip(csize, cstride)):
        if n == 1 and k != kd:
            size.append(1)
            stride.append(0)
            continue
        match = [i for i in range(len(osize)) if i != r and i not in used and osize[i] == n and ostride[i] == st]
        if len(match) != 1:
            return None
        i = match[0]
        used.add(i)
        if k == kd:  # the tiles along the dim: each starts one tile after the previous one
            t = xsize[r]
            if xstride[i] != t * xstride[r]:
                return None
            size.append(n * t)
            stride.append(xstride[r])
        else:
            size.append(xsize[i])
            stride.append(xstride[i])
    if any(osize[i] > 1 for i in range(len(osize)) if i != r and i not in used):
        return None  # the partial step writes partials the combine does not read
    return tuple(size), tuple(stride), xoff


def fold_split_reductions(steps, layout) -> list:
    """``steps`` with each foldable (partials, combine) pair made one step: the combine's leaf on
    the operand itself (see the module docstring). The others are returned as they are."""
    leaves = layout.lowered.leaves
    touched: dict = {}  # storage -> indices of the steps reading or writing it
    for n, s in enumerate(steps):
        for v in (*s.ins, *s.outs):
            touched.setdefault(v[1], set()).add(n)
    out = list(steps)
    drop = set()
    for n, sp in enumerate(steps):
        leaf = leaves.get(sp.leaf)
        found = _partial_leaf(leaf) if leaf is not None and len(sp.ins) == 1 and len(sp.outs) == 1 else None
        if found is None:
            continue
        kind, dim_p = found
        x, part = sp.ins[0], sp.outs[0]
        sid_x, sid_part = x[1], part[1]
        if sid_part < layout.n_params or _dtype_of(sid_x, layout) != _dtype_of(sid_part, layout):
            continue
        users = sorted(touched[sid_part] - {n})
        if len(users) != 1 or users[0] < n:
            continue
        c = users[0]
        sc = out[c]
        if any(v[1] == sid_x for s in steps[n + 1:c + 1] for v in s.outs):
            continue  # the operand is written before the combine would read it
        cleaf = leaves.get(sc.leaf)
        ins = [v for v in sc.ins if v[1] == sid_part]
        if cleaf is None or len(ins) != 1 or any(v[1] == sid_part for v in sc.outs):
            continue
        comb = _combine_of(cleaf, ins[0][0])
        if comb is None or comb[0] != kind:
            continue
        merged = _merged_view((x, part), ins[0], len(sp.B), len(sc.B), dim_p, comb[1])
        if merged is None:
            continue
        size, stride, off = merged
        new_ins = [(v[0], sid_x, size, stride, off) if v is ins[0] else v for v in sc.ins]
        read = {v[1] for v in new_ins}
        out[c] = Step(sc.fn, sc.ev, sc.B, sc.S, new_ins, sc.outs, any(v[1] in read for v in sc.outs),
                      sp.tasks + sc.tasks, sc.leaf, sc.variant, sc.tiles, sc.nparams)
        touched.setdefault(sid_x, set()).add(c)
        drop.add(n)
    return [s for n, s in enumerate(out) if n not in drop]


__all__ = ["fold_split_reductions"]
