"""In-core ordering and buffer allocation: each leaf's local tiles get an offset in their memory
level, reusing space once a tile is dead; a leaf that cannot fit is reported (or split by the
pipeline) with the op, the buffer and the sizes."""

from __future__ import annotations

import math
from dataclasses import replace

from ..errors import ShapeError
from ..ir import expr as E
from ..ir.tile import Buffer


class BufferOverflowError(ShapeError):
    """A leaf's local buffers do not fit the machine's memory."""


def _bytes(a, op, k_index=None) -> int | None:
    shape = list(a.shape)
    if a.mem in ("L1", "L0A", "L0B"):  # the cube streams K through L1 and L0 in chunks
        k_dim = op.attrs.get("k_dim")
        if k_dim is None and op.kind in ("matmul", "scaled_mm") and k_index is not None and k_index < 2:
            k_dim = op.attrs["k_dims"][k_index]
        if k_dim is not None:
            chunk = op.attrs["k_l1"] if a.mem == "L1" else op.attrs["k_tile"]
            shape[k_dim] = chunk if not isinstance(shape[k_dim], int) else min(shape[k_dim], chunk)
    if any(not isinstance(s, int) for s in shape):
        return None  # a runtime-sized tile: checked when it runs
    return max(32, math.ceil(math.prod(shape) * a.value.dtype.itemsize / 32) * 32)


def _overflow_hint(a, user) -> str:
    """What to change. A reduction split along its dim keeps one partial per tile, combined in
    groups that fit (passes/expand.py): its buffers shrink with the tile along the other dims only,
    so a smaller tile along the reduced dim, which makes more partials, would not help."""
    if a.value.name.endswith("_partial"):
        d = user.attrs.get("dim")
        return (f"{user.kind} is split over tiles along dim {d} and keeps a partial result of one tile's size "
                f"in the other dims: use a smaller tile along the dims other than {d}")
    return "use smaller tile shapes (set_vec_tile_shapes / set_cube_tile_shapes)"


def allocate(leaf, machine):
    """The leaf with its buffers laid out; raises BufferOverflowError when one level overflows."""
    first, last, size, where = {}, {}, {}, {}
    for i, op in enumerate(leaf.ops):
        for k, a in enumerate(op.inputs + op.outputs):
            if a.mem == "GM":
                continue
            key = a.local_key
            first.setdefault(key, i)
            last[key] = i
            b = _bytes(a, op, k)
            size[key] = max(size.get(key, 0) or 0, b or 0)
            where.setdefault(key, (op, a))
    buffers, live = [], {}
    for key in sorted(first, key=lambda k: first[k]):
        mem = key[1]
        i = first[key]
        live[mem] = [b for b in live.get(mem, []) if b.last >= i]
        offset = 0
        for b in sorted(live[mem], key=lambda b: b.offset):
            if offset + size[key] <= b.offset:
                break
            offset = max(offset, b.offset + b.nbytes)
        op, a = where[key]
        cap = machine.capacity(mem)
        if offset + size[key] > cap:
            used = sum(b.nbytes for b in live[mem])
            # name the computing op, not the copy that first touched its operand
            user = next((o for o in leaf.ops[i:] if not o.kind.startswith(("copy", "l1_to"))
                         and any(x.local_key == key for x in o.inputs + o.outputs)), op)
            via = f" (loaded by {op.kind})" if user is not op else ""
            raise BufferOverflowError(
                f"leaf {leaf.name}: buffer {mem.lower()}{len(buffers)} for tile %{a.value.name} of op "
                f"{user.kind}{via} does not fit in {mem}",
                expected=f"at most {cap} bytes of {mem} ({machine.name})",
                got=f"{size[key]} bytes for {a.value.dtype.short}{E.render_dims(a.shape)} with {used} bytes "
                    f"already live", param="vec_tile_shapes",
                hint=_overflow_hint(a, user), loc=op.loc)
        buf = Buffer(f"{mem.lower()}{len(buffers)}", mem, offset, size[key], i, last[key])
        buffers.append(buf)
        live[mem].append(buf)
    return replace(leaf, buffers=tuple(buffers))


def buffer_of(leaf) -> dict:
    """{(value id, mem): Buffer} for the leaf's local tiles, in allocation order (first use)."""
    keys = dict.fromkeys(a.local_key for op in leaf.ops for a in op.inputs + op.outputs if a.mem != "GM")
    return dict(zip(keys, leaf.buffers))
