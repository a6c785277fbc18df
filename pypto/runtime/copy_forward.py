"""Reshape copies forwarded at execution: their readers read the source itself.

``kb = pypto.reshape(k[b:b + 1, j * BK:(j + 1) * BK, :], [BK, D])`` inside a loop over query
blocks is a GM -> GM reshape per (query block, key block): flash attention's key and value blocks
are copied once per query block into workspaces (8 MiB each per call at S=1024), and the matmuls
read those copies, so for them every query block has its own key block and they run one small
GEMM per pair. When a step only reshapes (its leaf is one ``reshape`` of a param, dropping or
adding unit dims) and a later step reads a block of what it wrote, that reader is given the step's
source view instead: the same values (nothing writes the source in between: checked), with the
source's strides, so a key block shared by all query blocks shows as one (a stride-0 dim) and the
matmul multiplies it once (ops/matmul.py `_shared_batch`, `_outer_product`).

The reshape step itself still runs: its workspace holds what the program says (the lab's memory
view and pass verify read it). The tasks and the simulated timing are the program's.
"""

from __future__ import annotations

from .plan import Step
from .reduction_fold import storage_dtype


def reshape_leaf(leaf) -> bool:
    """Is ``leaf`` one reshape of one param (a data move, nothing computed)? False for None."""
    if leaf is None:
        return False
    ops = leaf.ops
    return len(ops) == 1 and ops[0].kind == "reshape" and len(ops[0].inputs) == 1 and len(ops[0].outputs) == 1


def _source_strides(src, dst):
    """Per dim of ``dst``'s view, the stride in ``src``'s storage of the same elements, when the
    reshape only drops or adds unit dims (the other sizes in the same order); None otherwise."""
    ssize, sstride, dsize = src[2], src[3], dst[2]
    kept = [(n, st) for n, st in zip(ssize, sstride) if n != 1]
    if [n for n in dsize if n != 1] != [n for n, _ in kept]:
        return None
    it = iter(kept)
    return tuple(0 if n == 1 else next(it)[1] for n in dsize)


def _within(view, dst, strides, src):
    """``view`` (a reader's view of ``dst``'s storage) seen in ``src``'s storage, when it addresses
    elements of ``dst``'s view along its dims (a block of it: each of its dims one of ``dst``'s,
    same stride, inside its extent); None otherwise."""
    _, _, size, stride, off = view
    _, _, dsize, dstride, doff = dst
    rest = off - doff
    if rest < 0:
        return None
    idx = [0] * len(dsize)
    for j in sorted(range(len(dsize)), key=lambda j: -dstride[j]):  # the offset as dst indices
        if dsize[j] > 1 and dstride[j] > 0:
            idx[j], rest = divmod(rest, dstride[j])
            if idx[j] >= dsize[j]:
                return None
    if rest:
        return None
    out, used = [], set()
    for n, st in zip(size, stride):
        if n == 1 or st == 0:  # (a dim the reader repeats repeats in the source too)
            out.append(0)
            continue
        j = next((j for j in range(len(dsize)) if j not in used and dstride[j] == st and dsize[j] > 1), None)
        if j is None or idx[j] + n > dsize[j]:
            return None
        used.add(j)
        out.append(strides[j])
    return (src[1], tuple(size), tuple(out), src[4] + sum(i * st for i, st in zip(idx, strides)))


def forward_reshape_copies(steps, layout) -> list:
    """``steps`` with the readers of each forwardable reshape's workspace reading its source (see
    the module docstring); the steps are otherwise as they were."""
    leaves = layout.lowered.leaves
    out = list(steps)
    for n, s in enumerate(steps):
        leaf = leaves.get(s.leaf)
        if leaf is None or len(s.ins) != 1 or len(s.outs) != 1 or not reshape_leaf(leaf):
            continue
        src, dst = s.ins[0], s.outs[0]
        if dst[1] < layout.n_params or src[1] == dst[1] or \
                storage_dtype(src[1], layout) != storage_dtype(dst[1], layout):
            continue
        strides = _source_strides(src, dst)
        if strides is None:
            continue
        for c in range(n + 1, len(out)):
            reader = out[c]
            if any(v[1] == src[1] for v in reader.outs):
                break  # the source changes from here on: its later readers keep the copy
            if any(v[1] == dst[1] for v in reader.outs):
                break  # the workspace is written again: what follows may read other values
            seen = {k: _within(v, dst, strides, src) for k, v in enumerate(reader.ins) if v[1] == dst[1]}
            if not seen or any(x is None for x in seen.values()):
                continue
            ins = [(v[0], *seen[k]) if k in seen else v for k, v in enumerate(reader.ins)]
            read = {v[1] for v in ins}
            out[c] = Step(reader.fn, reader.ev, reader.B, reader.S, ins, reader.outs,
                          any(v[1] in read for v in reader.outs), reader.tasks, reader.leaf, reader.variant,
                          reader.tiles, reader.nparams)
    return out


__all__ = ["forward_reshape_copies", "reshape_leaf"]
