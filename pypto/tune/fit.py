"""Whether a configuration's tiles can fit the machine's local memories, judged from the traced
program alone (no lowering, no buffer allocation, nothing run).

Every operand of an op is live in its core's local memory while the op runs, each in its own
buffer: the tiles of one vector op must fit UB together; a matmul's chunk of A must fit L0A, of B
L0B, its result tile L0C, and its L1 chunks of A and B L1 together. The estimate counts only
what is certain (tile sizes clipped to the operand's fixed sizes, a runtime-sized dim not at
all), so it is a lower bound of what the compiler allocates: a configuration it rejects would
fail to compile, and one it passes may still fail there (temporaries, alignment, partials).
"""

from __future__ import annotations

import math
from dataclasses import dataclass

# ops that make no local tile of their own: views and reshapes alias GM, an assemble writes its
# tile back, a tensor is a GM workspace
_NO_TILE = frozenset({"view", "reshape", "assemble", "tensor"})
_CUBE = frozenset({"matmul", "scaled_mm"})


@dataclass(frozen=True)
class Overflow:
    """A local memory ``memory`` that the tiles of op ``op`` (at ``where``) cannot fit:
    ``needed`` bytes at least, ``capacity`` available."""

    memory: str
    needed: int
    capacity: int
    op: str
    tiles: str
    where: str = ""

    def __str__(self) -> str:
        at = f" at {self.where}" if self.where else ""
        return (f"does not fit: op {self.op}{at} needs at least {self.needed} bytes of {self.memory} "
                f"({self.tiles}), the machine has {self.capacity}")

    def to_dict(self) -> dict:
        return {"memory": self.memory, "needed": self.needed, "capacity": self.capacity, "op": self.op,
                "tiles": self.tiles, "where": self.where}


def overflow(program, machine) -> Overflow | None:
    """The first op of ``program`` (a traced Tensor Graph) whose tiles cannot fit a local memory
    of ``machine``, or None."""
    from ..ir.graph import Op, iter_items

    for op in iter_items(program.body):
        if not isinstance(op, Op) or op.kind in _NO_TILE or op.tiles is None:
            continue
        needs = _cube_needs(op) if op.kind in _CUBE else _vector_needs(op)
        for memory, needed, text in needs:
            cap = machine.capacity(memory)
            if needed > cap:
                where = f"line {op.loc.line}" if getattr(op, "loc", None) is not None and \
                    getattr(op.loc, "line", None) else ""
                return Overflow(memory, needed, cap, op.kind, text, where)
    return None


def _tile_bytes(dtype, dims) -> int:
    """Bytes of one tile of ``dims`` elements per dim, rounded up to 32 bytes as buffers are."""
    return max(32, math.ceil(math.prod(dims) * dtype.itemsize / 32) * 32)


def _clipped(tile, shape):
    """The tile's extent per dim of ``shape`` (aligned on the last dims), or None when a dim's
    size is known only at run time (then nothing is counted for this operand)."""
    if any(not isinstance(s, int) for s in shape):
        return None
    dims = [1] * len(shape)
    for i in range(1, min(len(tile), len(shape)) + 1):
        dims[-i] = min(tile[-i], shape[-i])
    return dims


def _vector_needs(op):
    tile = op.tiles.vec
    if not tile:
        return []
    seen, total, parts = set(), 0, []
    for v in op.inputs + op.outputs:
        if id(v) in seen or not hasattr(v, "shape") or not hasattr(v, "dtype"):
            continue
        seen.add(id(v))
        dims = _clipped(tile, tuple(v.shape))
        if dims is None:
            continue
        total += _tile_bytes(v.dtype, dims)
        parts.append(f"{v.dtype.short}{list(dims)}")
    return [("UB", total, " + ".join(parts))] if parts else []


def _cube_needs(op):
    cube = op.tiles.cube
    if cube is None or len(op.inputs) < 2 or not op.outputs:
        return []
    (m0, m1), k_sizes, (n0, n1) = cube[0], cube[1], cube[2]
    k0, ka1, kb1 = (k_sizes + (k_sizes[-1],) * 3)[:3]
    a, b, c = op.inputs[0], op.inputs[1], op.outputs[0]
    sa, sb, sc = tuple(a.shape), tuple(b.shape), tuple(c.shape)
    if len(sa) < 2 or len(sb) < 2 or len(sc) < 2:
        return []
    k = sa[-2] if op.attrs.get("a_trans") else sa[-1]
    m, n = sc[-2], sc[-1]
    if not all(isinstance(x, int) for x in (m, n, k)):
        return []
    mm0, mm1, kk0, nn0, nn1 = min(m0, m), min(m1, m), min(k0, k), min(n0, n), min(n1, n)
    l1 = _tile_bytes(a.dtype, (mm1, min(ka1, k))) + _tile_bytes(b.dtype, (min(kb1, k), nn1))
    return [("L0A", _tile_bytes(a.dtype, (mm0, kk0)), f"A {a.dtype.short}[{mm0}, {kk0}]"),
            ("L0B", _tile_bytes(b.dtype, (kk0, nn0)), f"B {b.dtype.short}[{kk0}, {nn0}]"),
            ("L0C", _tile_bytes(c.dtype, (mm0, nn0)), f"C {c.dtype.short}[{mm0}, {nn0}]"),
            ("L1", l1, f"A {a.dtype.short}[{mm1}, {min(ka1, k)}] + B {b.dtype.short}[{min(kb1, k)}, {nn1}]")]
