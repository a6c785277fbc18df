"""FoldAssembledResult: a cube result that is only assembled into another tensor is written
there by the cube's own copy-out.

``out[rows, cols] = pypto.matmul(a, b)`` expands to a matmul writing a GM workspace and a copy of
that workspace into ``out``: on the device the copy would be a second task (a vector core
reading back what the cube just wrote). Upstream folds the assemble's offsets into the cube's
output path; so does this pass, when the copy reads exactly the tiles the matmul writes (same
grid, shape, placement and valid extent, same dtype) and nothing else reads the workspace.
The numbers are the same: the same values reach the same elements of ``out``.

FoldInPlaceUpdate: an in-place update (``scatter_update``, ``index_add_``, ``scatter_``) computes
the updated tensor whole, GM to GM, and the frontend writes it back over its input with an
assemble. On the device the op writes the rows it updates into the input's own storage and the
rest of the tensor never moves; here the whole op is made to write its input's storage directly
and the write-back copy goes (a 64k-row key cache updated at 8 rows was 131,072 copy tasks).
The leaf still computes the whole updated tensor from the input it read, so the numbers are
those of the copy it replaces; the op is marked ``in_place`` for the cost model.
"""

from __future__ import annotations

from types import MappingProxyType

_CUBE = ("matmul", "scaled_mm")
# whole-tensor ops whose result is their first input with some rows changed (ops/indexing.py)
_UPDATES = ("scatter_update", "index_add", "scatter")


def fold_assembled_results(ops: list, escaping: set) -> list:
    """``ops`` (one segment's tile ops, before memory assignment) with each foldable
    matmul + copy pair made one matmul writing the copy's destination."""
    writer: dict = {}  # value id -> index of the op writing it
    readers: dict = {}  # value id -> number of reading accesses
    for i, op in enumerate(ops):
        for a in op.inputs:
            readers[a.value.id] = readers.get(a.value.id, 0) + 1
        for a in op.outputs:
            writer.setdefault(a.value.id, []).append(i)
    touches: dict = {}  # value id -> number of accesses (reads and writes) in the segment
    for op in ops:
        for a in (*op.inputs, *op.outputs):
            touches[a.value.id] = touches.get(a.value.id, 0) + 1
    out = list(ops)
    dropped = set()
    for i, op in enumerate(ops):
        if op.kind != "copy_out" or len(op.inputs) != 1 or len(op.outputs) != 1:
            continue
        src, dst = op.inputs[0], op.outputs[0]
        if touches.get(dst.value.id, 0) > 1:
            # another op of the segment reads or writes the destination: the cube writing it
            # earlier than the copy would reorder those accesses (upstream's Qwen3-Next gated delta
            # rule: fused groups ordered in a cycle)
            continue
        v = src.value
        if v.kind not in ("op", "workspace") or v.id in escaping or readers.get(v.id) != 1:
            continue
        ws = writer.get(v.id, [])
        if len(ws) != 1 or ws[0] in dropped:
            continue
        j = ws[0]
        prod = out[j]
        if prod.kind not in _CUBE or j > i or len(prod.outputs) != 1 or prod.grid != op.grid:
            continue
        w = prod.outputs[0]
        if (w.shape, w.base, w.axis, w.extent) != (src.shape, src.base, src.axis, src.extent):
            continue
        if v.dtype != dst.value.dtype:
            continue
        out[j] = prod.replace(outputs=(dst,))
        dropped.add(i)
    return [op for k, op in enumerate(out) if k not in dropped]


def fold_in_place_updates(ops: list, escaping: set) -> list:
    """``ops`` (one segment's tile ops, before memory assignment) with each whole-tensor update
    whose result is only copied back over its own input made to write that input directly."""
    readers: dict = {}
    for op in ops:
        for a in op.inputs:
            readers[a.value.id] = readers.get(a.value.id, 0) + 1
    out = list(ops)
    dropped = set()
    for j, prod in enumerate(ops):
        if prod.kind not in _UPDATES or prod.grid != () or len(prod.outputs) != 1 or not prod.inputs:
            continue
        res, src = prod.outputs[0], prod.inputs[0]
        v = res.value
        if v.kind not in ("op", "workspace") or v.id in escaping or readers.get(v.id) != 1:
            continue
        i = next((k for k in range(j + 1, len(ops)) if any(a.value.id == v.id for a in ops[k].inputs)), None)
        if i is None:
            continue
        copy = ops[i]
        if copy.kind != "copy_out" or len(copy.inputs) != 1 or len(copy.outputs) != 1:
            continue
        dst = copy.outputs[0]
        if dst.value.id != src.value.id or dst.value.dtype != v.dtype or tuple(dst.base) != tuple(src.base) \
                or tuple(v.shape) != tuple(src.value.shape) or any(not _zero(b) for b in dst.base):
            continue
        # nothing between the update and its write-back may see the input's old or new contents
        if any(a.value.id == src.value.id for k in range(j + 1, i) for a in ops[k].inputs + ops[k].outputs):
            continue
        out[j] = prod.replace(outputs=(src,), attrs=_with(prod.attrs, in_place=True))
        dropped.add(i)
    return [op for k, op in enumerate(out) if k not in dropped]


def _zero(x) -> bool:
    return isinstance(x, int) and x == 0


def _with(attrs, **kw):
    return MappingProxyType({**attrs, **kw})
