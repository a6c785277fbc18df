"""Split reductions folded at execution: one reduction over the whole dim instead of partials.

A reduction whose dim spans several tiles is a partial reduction per tile into a GM workspace,
then a combine over the partials (passes/expand.py); the device runs it so, and the timing
simulator times those tasks. When one step computes every partial (the tiles along the dim are a
batch dim of one leaf call: the seed softmax's (1, 4, 1, 64) tile cuts each 256-wide row in 4) and
the next step that touches them is the combine, the combine's leaf can read the tensor itself,
seen with the dim whole, and reduce it in one go: the step of the partials goes, and one
reduction over contiguous rows replaces a strided one and a second small one.

The numbers are the same. A maximum or minimum is exact in any order. A sum folds only where its
partials are the elements themselves (tiles one element wide along the dim, as flash attention's
row sums of ``(BQ, 1)`` tiles) laid out as the operand is (the same sizes and strides): torch
then adds the same values in the same order. Any other split sum keeps its partials: one sum over
the whole dim would change its last bits, and the serial execution mode
(`debug.serial_execution`, one task at a time) is checked to give the very numbers of the batched
one. Only partials of the operand's own dtype fold (a half-precision operand's are fp32). The
partial workspace of a folded reduction is not written by the call: nothing reads it (that is
checked), but the lab's memory view of it shows what its slab held before.

The tasks, and so the simulated timing, are those of the program: only the numeric steps change.
"""

from __future__ import annotations

from .plan import Step

FOLDED = ("amax", "amin", "sum")  # a sum only where it is exact (see the module docstring)


def storage_dtype(sid, layout):
    """The torch dtype of storage ``sid`` (a parameter or a workspace slab)."""
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


def _span(v) -> tuple:
    """The first and last element a view addresses in its storage (strides are never negative)."""
    _, _, size, stride, off = v
    if not all(size):
        return off, off - 1  # empty
    return off, off + sum((n - 1) * st for n, st in zip(size, stride))


def _meets(a, b) -> bool:
    """Do views ``a`` and ``b`` of one storage share an element? Exact for two views of one box
    shape (the same sizes and strides, in any order) whose dims nest (each stride beyond the reach
    of the smaller ones: the instances of one workspace value, interleaved or not); otherwise by
    their spans (which may answer yes for views that share nothing: the fold is then not made)."""
    sa, sb = _span(a), _span(b)
    if not (sa[0] <= sb[1] and sb[0] <= sa[1]):
        return False
    dims = sorted((st, n) for n, st in zip(a[2], a[3]) if n > 1)
    if dims != sorted((st, n) for n, st in zip(b[2], b[3]) if n > 1):
        return True  # (one box seen with its dims in another order counts as one shape)
    reach = [0]  # reach[k]: the largest |sum of d_j * stride_j| over the dims before k
    for st, n in dims:
        if st <= reach[-1]:
            return True  # not nested: an element may be reached two ways
        reach.append(reach[-1] + (n - 1) * st)

    def hit(delta, k):  # is delta = sum of d_j * stride_j, |d_j| < size_j, over dims[:k]?
        if k == 0:
            return delta == 0
        st, n = dims[k - 1]
        lo, hi = -((reach[k - 1] - delta) // st), (delta + reach[k - 1]) // st  # |delta - d st| <= reach
        return any(hit(delta - d * st, k - 1) for d in range(max(lo, 1 - n), min(hi, n - 1) + 1))

    return hit(b[4] - a[4], len(dims))


def fold_split_reductions(steps, layout) -> list:
    """``steps`` with each foldable (partials, combine) pair made one step: the combine's leaf on
    the operand itself (see the module docstring). The others are returned as they are."""
    leaves = layout.lowered.leaves
    access: dict = {}  # workspace storage -> [(step index, is write, view)] in step order
    for n, s in enumerate(steps):
        for w, views in ((False, s.ins), (True, s.outs)):
            for v in views:
                if v[1] >= layout.n_params:
                    access.setdefault(v[1], []).append((n, w, v))
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
        if sid_part < layout.n_params or sid_x == sid_part or \
                storage_dtype(sid_x, layout) != storage_dtype(sid_part, layout):
            continue
        # the partials' later accesses: the first must be the combine's read, and no other step may
        # read them before they are written again whole (the next loop iteration's partials)
        later = [(c, w, v) for c, w, v in access[sid_part] if c > n and _meets(v, part)]
        if not later or later[0][1]:
            continue
        c = later[0][0]
        rest = [(w, v) for c2, w, v in later if c2 != c]
        until = next((k for k, (w, v) in enumerate(rest) if w and v[1:] == part[1:]), len(rest))
        if any(not w for w, _ in rest[:until]):
            continue
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
        if kind == "sum" and (x[2][len(sp.B) + dim_p] != 1 or merged[:2] != tuple(ins[0][2:4])):
            continue  # a sum of several elements per partial, or laid out otherwise: other last bits
        size, stride, off = merged
        new_ins = [(v[0], sid_x, size, stride, off) if v is ins[0] else v for v in sc.ins]
        read = {v[1] for v in new_ins}
        out[c] = Step(sc.fn, sc.ev, sc.B, sc.S, new_ins, sc.outs, any(v[1] in read for v in sc.outs),
                      sp.tasks + sc.tasks, sc.leaf, sc.variant, sc.tiles, sc.nparams)
        drop.add(n)
    return [s for n, s in enumerate(out) if n not in drop]


__all__ = ["fold_split_reductions", "storage_dtype"]
