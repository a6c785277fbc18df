"""FoldGatherIntoLoad: a local tensor assembled from views and read only by the cube is loaded
by the cube itself, piece by piece, from where the pieces are.

Upstream's paged attention (GLM-4.5, ``models/glm_v4_5/glm_attention.py``) builds each K/V tile
as ``kj = pypto.tensor([s2_tile, d])`` with one ``kj[i*bs:(i+1)*bs] = pypto.view(cache, ...)``
per cache block, then multiplies by it. A local tensor lives where its producers and consumers
run: on the device the block copies are the cube task's own GM -> L1 loads (a tile view of a
piece is a view of the cache block), not vector tasks writing a GM workspace the cube reads back.
Written as copies they were 2,048 of the program's 3,848 tasks.

The fold applies per segment when a local tensor T

* is written only by copies of GM views of memory made before the segment (a parameter, a cache)
  that tile T's leading dim exactly, every
  write before any read, and
* is read only by matmuls, none escaping the segment;

then the copies go, and each matmul reads the pieces directly:

* a matmul tiled along T's leading dim by the piece size (the ``q @ k^T`` of attention, N tiles
  of one block) becomes one matmul per piece, each reading its piece (the tasks are the same);
* a matmul reading T's leading dim whole (``p @ v``: K spans the blocks) is marked with
  ``gather = ((operand, pieces), ...)``: memory assignment loads the operand into L1 with one
  ``gather_in`` of the pieces (passes/memory.py), which the leaf computes as their concatenation.

The numbers are those of the copies: the same elements reach the same rows of the operand.
"""

from __future__ import annotations

from types import MappingProxyType

from ..ir import expr as E
from ..ir.tile import Access

_CUBE = ("matmul",)


def _int(x):
    x = E.simplify_dim(x)
    return x if isinstance(x, int) else None


def _pieces(t, writes, made_here):
    """The copies writing local tensor ``t`` as [(row offset, source Access)] covering its leading
    dim in order with equal pieces; None when they do not. A piece must be a view of memory that
    exists before the segment (``made_here``: the values its ops write): a result computed here
    may never reach GM (it stays in UB inside its fused group)."""
    shape = tuple(_int(s) for s in t.shape)
    if not shape or any(s is None for s in shape):
        return None
    got = []
    for op in writes:
        if op.kind != "copy_out" or len(op.inputs) != 1 or len(op.outputs) != 1 or op.core != "AIV":
            return None
        src, dst = op.inputs[0], op.outputs[0]
        if src.value.kind not in ("param", "op", "workspace") or src.value.id == t.id or src.value.id in made_here:
            return None
        if tuple(src.axis) != tuple(dst.axis) or tuple(src.shape) != tuple(dst.shape):
            return None
        grid = tuple(_int(g) for g in op.grid)
        if any(g is None for g in grid):
            return None
        # the copy's tiles together: one piece (a tiled access's extent is its whole region's)
        size = tuple(None if _int(s) is None else _int(s) * (1 if x is None else grid[x])
                     for s, x in zip(dst.shape, dst.axis))
        src = Access(src.value, src.mem, size, tuple(src.base), (None,) * len(size), tuple(src.extent))
        base = tuple(_int(b) for b in dst.base)
        if any(x is None for x in base + size) or len(base) != len(shape):
            return None
        if any(base[d] != 0 or size[d] != shape[d] for d in range(1, len(shape))):
            return None  # pieces split the leading dim only
        if src.value.dtype is not t.dtype:
            return None
        # a piece's source may end early only where its view leaves its tensor (a block id past
        # the cache): the leaf refuses that (codegen/cpu.py _gather) rather than shift the rows
        got.append((base[0], size[0], src))
    got.sort(key=lambda p: p[0])
    rows = got[0][1] if got else 0
    at = 0
    for off, n, _ in got:
        if off != at or n != rows:
            return None
        at += n
    if at != shape[0]:
        return None
    return [(off, src) for off, _, src in got]


def _piece_access(src, rows, lo, reader):
    """Piece ``src`` (rows [lo, lo + rows) of T) as read by ``reader`` (an access of T): its valid
    extent cut by the reader's (the reader may see only a prefix of T: a tail tile)."""
    ext = [E.simplify_dim(E.emin(src.extent[0], E.emin(rows, E.emax(E.sub(reader.extent[0], lo), 0))))]
    ext += [E.simplify_dim(E.emin(s, r)) for s, r in zip(src.extent[1:], reader.extent[1:])]
    return Access(src.value, src.mem, tuple(src.shape), tuple(src.base), (None,) * len(src.shape), tuple(ext))


def _split(op, k, pieces, rows, new_id):
    """One matmul per piece of operand ``k`` (tiled along T's leading dim by ``rows``), each
    reading its piece, its grid axis fixed and the other operands' bases moved to that tile."""
    a = op.inputs[k]
    ax = a.axis[0]
    out = []
    for i, (lo, src) in enumerate(pieces):
        def fix(acc):
            if ax not in acc.axis:
                return acc
            base = tuple(E.simplify_dim(E.add(b, E.mul(i, s))) if x == ax else b
                         for b, s, x in zip(acc.base, acc.shape, acc.axis))
            axis = tuple(None if x == ax else x for x in acc.axis)
            ext = tuple(E.simplify_dim(E.sub(e, E.mul(i, s))) if x == ax else e
                        for e, s, x in zip(acc.extent, acc.shape, acc.axis))
            return Access(acc.value, acc.mem, acc.shape, base, axis, ext)
        ins = []
        for j, acc in enumerate(op.inputs):
            if j == k:
                ins.append(_piece_access(src, rows, lo, a))
            else:
                ins.append(fix(acc))
        grid = tuple(1 if g == ax else n for g, n in enumerate(op.grid))
        out.append(op.replace(id=new_id(), inputs=tuple(ins), outputs=tuple(fix(o) for o in op.outputs),
                              grid=grid))
    return out


def fold_gathers(ops: list, escaping: set, new_id) -> list:
    """``ops`` (one segment's tile ops, before memory assignment) with each local tensor that is
    only assembled from views and read by matmuls folded into the matmuls' loads."""
    writes: dict = {}
    reads: dict = {}
    first_read: dict = {}
    last_write: dict = {}
    for i, op in enumerate(ops):
        for k, a in enumerate(op.inputs):
            reads.setdefault(a.value.id, []).append((i, k))
            first_read.setdefault(a.value.id, i)
        for a in op.outputs:
            writes.setdefault(a.value.id, []).append(i)
            last_write[a.value.id] = i
    plan: dict = {}  # op index -> replacement ops ([] drops it)
    for vid, ws in writes.items():
        t = ops[ws[0]].outputs[0].value
        if t.kind != "local" or vid in escaping or vid not in reads:
            continue
        if last_write[vid] > first_read[vid] or any(i in plan for i in ws):
            continue
        pieces = _pieces(t, [ops[i] for i in ws], writes)
        if not pieces or len(pieces) < 2:
            continue
        rows = pieces[1][0]
        readers = reads[vid]
        if any(ops[i].kind not in _CUBE or ops[i].core != "AIC" or k > 1 or i in plan for i, k in readers):
            continue
        if len({i for i, _ in readers}) != len(readers):
            continue  # both operands of one matmul: not a case upstream's kernels write
        change = {}
        for i, k in readers:
            op, a = ops[i], ops[i].inputs[k]
            base0, size0, ax = _int(a.base[0]), _int(a.shape[0]), a.axis[0]
            if any(_int(b) != 0 for b in a.base[1:]) or any(_int(s) != _int(ts) for s, ts in
                                                            zip(a.shape[1:], t.shape[1:])):
                break  # a reader of part of the trailing dims: not a whole piece
            if ax is not None and base0 == 0 and size0 == rows and _int(op.grid[ax]) == len(pieces):
                change[i] = _split(op, k, pieces, rows, new_id)
            elif ax is None and base0 == 0 and size0 == _int(t.shape[0]):
                got = tuple(_piece_access(src, rows, lo, a) for lo, src in pieces)
                attrs = dict(op.attrs)
                attrs["gather"] = tuple(attrs.get("gather", ())) + ((k, got),)
                change[i] = [op.replace(attrs=MappingProxyType(attrs))]
            else:
                break
        else:
            plan.update(change)
            for i in ws:
                plan[i] = []
    if not plan:
        return ops
    out = []
    for i, op in enumerate(ops):
        out.extend(plan.get(i, [op]))
    return out
