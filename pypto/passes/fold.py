"""FoldAssembledResult: a cube result that is only assembled into another tensor is written
there by the cube's own copy-out.

``out[rows, cols] = pypto.matmul(a, b)`` expands to a matmul writing a GM workspace and a copy of
that workspace into ``out``: on the device the copy would be a second task (a vector core
reading back what the cube just wrote). Upstream folds the assemble's offsets into the cube's
output path; so does this pass, when the copy reads exactly the tiles the matmul writes (same
grid, shape, placement and valid extent, same dtype) and nothing else reads the workspace.
The numbers are the same: the same values reach the same elements of ``out``.
"""

from __future__ import annotations

_CUBE = ("matmul", "scaled_mm")


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
    out = list(ops)
    dropped = set()
    for i, op in enumerate(ops):
        if op.kind != "copy_out" or len(op.inputs) != 1 or len(op.outputs) != 1:
            continue
        src, dst = op.inputs[0], op.outputs[0]
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
