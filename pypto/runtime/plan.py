"""Planning the numeric execution of a call: tasks -> dependency levels -> batched steps.

Every task gets a *level*: one more than the deepest task it depends on (RAW/WAR/WAW edges from
overlapping GM regions). Tasks of one call site on one level touch no common data, so they run
as one batched call of the leaf, whatever loop iterations they come from: loops become batch
dimensions. A step addresses each operand as one strided view of its GM tensor:

* across tasks, the operands' offsets are factored into nested arithmetic progressions (offsets
  affine in the loop indices), each a batch dim of the view;
* inside a task, a grid axis the leaf's ops do not mix along (elementwise ops, reductions and
  matmuls over other dims) is folded into the tile dims, so a leaf covering a tensor runs as one
  call on the whole region, tails included; other grid axes stay batch dims, with the full tiles
  and the tail tile as separate pieces.

No tile is copied to gather it. An output whose storage the step does not read gets its view
handed to the leaf, whose ops compute into it (elementwise ops, reductions, fp32 matmuls); the
others (a running maximum read and written by one step, results of ops without such a form) are
copied into their views after the leaf. The plan depends only on the sizes, so a cached call with
the same sizes replays it (execute.py).
"""

from __future__ import annotations

import math
from operator import mul

from .._lazy import LazyModule
from ..errors import KernelRuntimeError
from ..ir import expr as E
from ..passes.expand import ELEMENTWISE, REDUCTIONS
from .regions import RegionIndex

np = LazyModule("numpy")

MOVES = ("copy_in", "copy_out", "l1_to_l0a", "l1_to_l0b")
CREATES = ("full", "tensor", "expand_clone")


# ---- levels --------------------------------------------------------------------------------------

def levels(tasks, engine: RegionIndex | None = None):
    """(level per task, edges) for ``tasks`` in program order; edges are (i, j, kind) with i, j
    positions in ``tasks`` (one per ordered pair, from the shared dependency engine)."""
    engine = engine if engine is not None else RegionIndex()  # (an empty one is falsy: it has a len)
    access, access_task = engine.access, engine.access_task
    written = _written_keys(tasks)
    for i, t in enumerate(tasks):
        writes = t.call.writes
        if t.alias is not None:  # an operand living in another value's memory: that memory's region
            for p in range(len(t.keys)):
                key, lo, hi, tile = t.dependency(p)
                if written is None or key in written:
                    access(key, i, lo, hi, p in writes, tile)
            continue
        keys = t.keys
        if written is None or written.issuperset(keys):
            access_task(i, keys, t.bases, t.ends, writes, t.tiles)
            continue
        kept = [p for p, k in enumerate(keys) if k in written]
        if kept:
            access_task(i, [keys[p] for p in kept], [t.bases[p] for p in kept], [t.ends[p] for p in kept],
                        frozenset(n for n, p in enumerate(kept) if p in writes), [t.tiles[p] for p in kept])
    edges = engine.edge_list()
    level = [0] * len(tasks)
    for i, j, _ in sorted(edges, key=lambda e: e[1]):  # edges point forward: a source is final first
        if level[i] >= level[j]:
            level[j] = level[i] + 1
    return level, edges


def _written_keys(tasks):
    """The dependency keys some task of ``tasks`` writes (None: every key, nothing left out).
    A read of a key no task writes meets no writer and no later write meets it: it makes no
    edge, and the engine keeps each key apart, so `levels` leaves such reads out (a row kernel's
    inputs: half its accesses) and finds the very same edges in the same order."""
    written = set()
    add = written.add
    for t in tasks:
        if t.alias is None:
            keys = t.keys
            for p in t.call.writes:
                add(keys[p])
        else:
            for p in t.call.writes:
                add(t.dependency(p)[0])
    return written


# ---- leaf analysis ---------------------------------------------------------------------------------

def mergeable_axes(leaf) -> frozenset:
    """Grid axes the leaf's ops do not mix tiles along: folding them into the tile dims computes
    the same numbers (elementwise ops, data moves, reductions over other dims, matmul M/N)."""
    out = set(range(leaf.grid_rank))
    for op in leaf.ops:
        moved = {}  # axis -> [(access index, role, dim)]
        for role, accs in (("in", op.inputs), ("out", op.outputs)):
            for k, a in enumerate(accs):
                for d, ax in enumerate(a.axis):
                    if ax is not None:
                        moved.setdefault(ax, []).append((k, role, d))
        if not moved or op.kind in MOVES or op.kind in ELEMENTWISE:
            continue
        for ax, uses in moved.items():
            if op.kind in REDUCTIONS:
                dim = op.attrs.get("dim")
                rank = len(op.inputs[0].shape)
                bad = any(role == "in" and k == 0 and d == dim % rank for k, role, d in uses)
            elif op.kind == "matmul":
                ka = len(op.inputs[0].shape) - (2 if op.attrs.get("a_trans") else 1)
                kb = len(op.inputs[1].shape) - (1 if op.attrs.get("b_trans") else 2)
                bad = any(role == "in" and ((k == 0 and d == ka) or (k == 1 and d == kb)) for k, role, d in uses)
            else:
                bad = True
            if bad:
                out.discard(ax)
    return frozenset(out)


# ---- factoring offsets -------------------------------------------------------------------------------

def factor(V):
    """``V`` [n, c] as nested arithmetic progressions: [(size, strides[c]), ...] outer to inner, with
    ``V[i] = V[0] + sum_k idx_k(i) * strides_k`` (row-major index); None when it is not one."""
    n = V.shape[0]
    dims = []
    while n > 1:
        d = V[1] - V[0]
        bad = np.nonzero((np.diff(V, axis=0) != d).any(axis=1))[0]
        r = n if len(bad) == 0 else int(bad[0]) + 1
        if n % r:
            return None
        blocks = V.reshape(n // r, r, V.shape[1])
        if r > 1 and not (blocks == blocks[:, :1, :] + np.arange(r)[None, :, None] * d[None, None, :]).all():
            return None
        if (d < 0).any():  # a view cannot step backwards (as_strided takes no negative stride)
            return None
        dims.insert(0, (r, d.tolist()))
        V = blocks[:, 0, :]
        n = V.shape[0]
        if r == 1:  # no progress: n > 1 with a first step that breaks immediately
            return None
    return dims


SMALL_GROUP = 64  # tasks per group below which plain lists beat numpy's per-call overhead


def factor_rows(rows):
    """`factor` of ``rows`` (a list of equal-length int lists), in plain Python: the same answer,
    without numpy's per-call cost, which dominates the many small groups of a call at new sizes
    (a loop of a few iterations, a flash-attention level)."""
    V = rows
    n = len(V)
    dims = []
    while n > 1:
        first = V[0]
        d = [b - a for a, b in zip(first, V[1])]
        r = n
        for i in range(1, n - 1):
            if [b - a for a, b in zip(V[i], V[i + 1])] != d:
                r = i + 1
                break
        if n % r:
            return None
        if r > 1:
            for b in range(0, n, r):
                start = V[b]
                for j in range(1, r):
                    if V[b + j] != [x + j * y for x, y in zip(start, d)]:
                        return None
        if any(x < 0 for x in d):
            return None
        dims.insert(0, (r, d))
        V = V[::r]
        n = len(V)
        if r == 1:
            return None
    return dims


def runs_rows(rows):
    """`runs` of ``rows`` (a list of equal-length int lists), in plain Python."""
    out, i, n = [], 0, len(rows)
    c = len(rows[0]) if rows else 0
    while i < n:
        d = [b - a for a, b in zip(rows[i], rows[i + 1])] if i + 1 < n else None
        if d is None or any(x < 0 for x in d):
            out.append((i, 1, [0] * c))
            i += 1
            continue
        j = i + 1
        while j + 1 < n and [b - a for a, b in zip(rows[j], rows[j + 1])] == d:
            j += 1
        out.append((i, j - i + 1, d))
        i = j + 1
    return out


def runs(V):
    """Fallback split of ``V`` into maximal arithmetic runs with non-negative strides:
    [(start, length, strides)]."""
    out, i, n = [], 0, V.shape[0]
    while i < n:
        d = V[i + 1] - V[i] if i + 1 < n else None
        if d is None or (d < 0).any():  # the last task, or a step backwards: a run of one
            out.append((i, 1, [0] * V.shape[1]))
            i += 1
            continue
        j = i + 1
        while j + 1 < n and (V[j + 1] - V[j] == d).all():
            j += 1
        out.append((i, j - i + 1, d.tolist()))
        i = j + 1
    return out


# ---- steps -----------------------------------------------------------------------------------------------

class Step:
    """One batched leaf call: views of every operand (storage, size, stride, offset), the batch
    shape ``B``, the created tile shapes ``S``, and the ``tasks`` it runs."""

    __slots__ = ("fn", "ev", "B", "S", "ins", "outs", "alias", "tasks", "leaf", "variant", "tiles", "nparams",
                 "direct", "direct_outs", "memo")

    def __init__(self, fn, ev, B, S, ins, outs, alias, tasks, leaf, variant, tiles, nparams):
        self.fn, self.ev, self.B, self.S, self.ins, self.outs = fn, ev, B, S, ins, outs
        self.alias, self.tasks, self.leaf, self.variant, self.tiles = alias, tasks, leaf, variant, tiles
        self.nparams = nparams
        # the outputs the leaf may write in their views directly: nothing the step reads shares
        # their storage, no other output does, and no view repeats an element (a stride-0 dim);
        # the others are copied after the leaf (a running maximum read and written by one step)
        out_sids = [v[1] for v in outs]
        read = {v[1] for v in ins}
        self.direct_outs = frozenset(
            v[0] for v in outs if v[1] not in read and out_sids.count(v[1]) == 1
            and all(st != 0 or n <= 1 for n, st in zip(v[2], v[3])))
        self.direct = len(self.direct_outs) == len(outs)
        # the leaf's verdicts that depend only on this step's views (codegen `_into`), kept for
        # the next call of the plan
        self.memo = {}


def _evaluator(env, load):
    def ev(x):
        if isinstance(x, E.Expr):
            return E.evaluate(x, env, load)
        if isinstance(x, tuple):
            return tuple(ev(i) for i in x)
        return x
    return ev


class Planner:
    """Turns the tasks of a call (or of one device task) into steps over a `Memory`."""

    def __init__(self, lowered, memory, load, vso: bool, serial: bool = False):
        self.lowered, self.memory, self.load, self.vso, self.serial = lowered, memory, load, vso, serial
        self.variant_counts = {"main": 0, "tail": 0}
        self._placed = memory.layout.buffers.get  # region key -> Buffer, for the keys placed already
        self._extents: dict = {}  # (base, end, buffer shape) -> the region's extent (`_signature`)

    def plan(self, tasks, level):
        """Steps for ``tasks`` (program order) with their levels, in an order that respects them."""
        groups: dict = {}
        for t, lv in zip(tasks, level):
            sig = self._signature(t)
            groups.setdefault((lv, t.call.id, sig[0]), (sig[1], []))[1].append((t, sig[2]))
        steps = []
        for (lv, _, _), (shape_sig, members) in sorted(groups.items(), key=lambda kv: (kv[0][0], kv[1][1][0][0].id)):
            steps += self._group_steps(members, shape_sig)
        return steps

    def _signature(self, t):
        """(hashable group key, its data, per-operand linear offsets) of task ``t``."""
        per, bufs, lins = [], [], []
        placed = self._placed
        extents = self._extents
        p = 0
        for key, base, end, tile in zip(t.keys, t.bases, t.ends, t.tiles):
            buf = placed(key)
            if buf is None:  # an aliased buffer placed on first use
                buf = self.memory.buffer(key, t.call.args[p].value, t.root.env)
            shape = buf.shape
            # the region's extent per dim, clipped at the buffer's edge (a few distinct boxes and
            # shapes in a call: each computed once)
            R = extents.get((base, end, shape))
            if R is None:
                R = extents[base, end, shape] = tuple([max(0, (e if e < sh else sh) - b)
                                                       for b, e, sh in zip(base, end, shape)])
            bufs.append(buf)
            per.append((buf.storage, tile, R))
            lins.append(sum(map(mul, base, buf.strides), buf.offset))
            p += 1
        per = tuple(per)
        return (t.grid, t.extra, per), (t.grid, per, tuple(bufs)), lins

    def _group_steps(self, members, shape_sig):
        grid, per, bufs = shape_sig
        tasks = [t for t, _ in members]
        if self.serial:
            return [s for t, lins in members for s in self._steps(t.call, [t], grid, per, bufs, [lins], [])]
        if len(members) <= SMALL_GROUP:
            V = [lins for _, lins in members]
            dims = factor_rows(V)
            split = runs_rows if dims is None else None
        else:
            V = np.array([lins for _, lins in members], dtype=np.int64)
            dims = factor(V)
            split = runs if dims is None else None
        if dims is not None:
            return self._steps(tasks[0].call, tasks, grid, per, bufs, [list(map(int, V[0]))], dims)
        out = []
        for start, length, d in split(V):
            sub = tasks[start:start + length]
            out += self._steps(sub[0].call, sub, grid, per, bufs, [list(map(int, V[start]))],
                               [(length, d)] if length > 1 else [])
        return out

    def _steps(self, call, tasks, grid, per, bufs, base, task_dims):
        """Steps for ``tasks`` (same call, same shapes): task batch dims ``task_dims`` (size, strides
        per operand) and the operands' first offsets ``base[0]``."""
        leaf = call.leaf
        lowered = self.lowered
        merge = lowered.merge_axes(leaf)
        env = tasks[0].root.env
        moved = [[] for _ in grid]  # grid axis -> [(operand, dim)]
        for p, a in enumerate(call.args):
            for d, ax in enumerate(a.axis):
                if ax is not None:
                    moved[ax].append((p, d))
        merged, split = [], []
        for g, uses in enumerate(moved):
            sizes = {(per[p][1][d], per[p][2][d]) for p, d in uses}
            if grid[g] == 1 or (not self.serial and g in merge and len(sizes) <= 1):
                merged.append(g)
            else:
                split.append(g)
        # pieces along each split axis: the grid points where some operand's tile validity changes
        intervals = []
        for g in split:
            cuts = {0, grid[g]}
            for p, d in moved[g]:
                s, R = per[p][1][d], per[p][2][d]
                cuts |= {min(R // s, grid[g]), min(R // s + (1 if R % s else 0), grid[g])}
            if self.serial:
                cuts |= set(range(grid[g]))
            cuts = sorted(cuts)
            intervals.append([(a, b) for a, b in zip(cuts, cuts[1:]) if b > a])
        steps = []
        n_tasks = math.prod(n for n, _ in task_dims) if task_dims else 1
        for piece in _product(intervals):
            steps.append(self._piece(call, leaf, tasks, grid, per, bufs, base[0], task_dims, n_tasks, merged,
                                     split, piece, moved, env))
        return [s for s in steps if s is not None]

    def _piece(self, call, leaf, tasks, grid, per, bufs, base, task_dims, n_tasks, merged, split, piece, moved, env):
        args = call.args
        views = []
        full = True  # every tile of the piece full in the dims the grid does not fold
        fold = {}  # folded grid axis (extent > 1) -> (tile, region): its full tiles are region // tile
        nonempty_out = False
        for p, a in enumerate(args):
            sid, tile, R = per[p]
            strides = bufs[p].strides
            dims = []
            for d, (s, ax) in enumerate(zip(tile, a.axis)):
                if ax is not None and ax in merged and grid[ax] > 1:
                    fold[ax] = (s, R[d])
                    dims.append(R[d])
                elif ax is None or ax in merged:
                    dims.append(R[d])
                    full &= R[d] == s
                else:
                    lo, hi = piece[split.index(ax)]
                    v = max(0, min(s, R[d] - lo * s))
                    full &= v == s
                    dims.append(v)
            size = [n for n, _ in task_dims] + [hi - lo for lo, hi in piece] + dims
            stride = [st[p] for _, st in task_dims]
            if not task_dims and not piece:  # at least one batch dim: op computes index dims from it
                size, stride = [1] + size, [0]
            off = base[p]
            for g, (lo, hi) in zip(split, piece):
                gs = sum(tile[d] * strides[d] for q, d in moved[g] if q == p)
                stride.append(gs)
                off += lo * gs
            stride += list(strides)
            views.append((p, sid, tuple(size), tuple(stride), off))
            if p in call.writes and all(dims):
                nonempty_out = True
        if not nonempty_out:
            return None
        B = tuple([n for n, _ in task_dims] + [hi - lo for lo, hi in piece]) or (1,)
        S = self._created_shapes(leaf, grid, merged, split, piece, env)
        instances = n_tasks * math.prod(hi - lo for lo, hi in piece)
        tiles_here = instances * math.prod(grid[g] for g in fold)
        main = instances * math.prod(R // s for s, R in fold.values()) if full else 0
        variant = ("main" if main == tiles_here else "tail") if self.vso else "default"
        if self.vso:
            self.variant_counts["main"] += main
            self.variant_counts["tail"] += tiles_here - main
        ins = [v for v in views if v[0] not in call.writes]
        outs = [v for v in views if v[0] in call.writes]
        read_storages = {v[1] for v in ins}
        alias = any(v[1] in read_storages for v in outs)
        fn = self.lowered.executables[leaf.name][variant].for_batch(len(B))
        return Step(fn, _evaluator(env, self.load), B, S, ins, outs, alias, list(tasks), leaf.name,
                    variant, tiles_here, len(args))

    def _created_shapes(self, leaf, grid, merged, split, piece, env):
        """Shapes of the tiles the leaf creates (full/tensor/expand_clone) in this piece."""
        S = {}
        for i, op in enumerate(leaf.ops):
            if op.kind not in CREATES:
                continue
            a = op.outputs[0]
            shape = []
            for d, (s, x, ax) in enumerate(zip(a.shape, a.extent, a.axis)):
                s, x = int(E.evaluate(s, env, self.load)), int(E.evaluate(x, env, self.load))
                if ax is None:
                    shape.append(max(0, min(x, s)))
                elif ax in merged:
                    shape.append(max(0, min(x, grid[ax] * s)))
                else:
                    lo, _ = piece[split.index(ax)]
                    shape.append(max(0, min(s, x - lo * s)))
            S[i] = tuple(shape)
        return S


def _product(lists):
    if not lists:
        yield ()
        return
    for first in lists[0]:
        for rest in _product(lists[1:]):
            yield (first,) + rest


# ---- running steps -----------------------------------------------------------------------------------------

def run_steps(steps, tensors, scratch=None, direct=True):
    """Execute ``steps`` on the GM ``tensors`` (storage index -> tensor). A step that reads no
    storage it writes hands the leaf its output views (``O``): ops that can compute straight into
    them do, and such a result needs no copy. ``scratch`` (one dict per step, or None) holds the
    temporaries of each step's previous call, which its ops compute into again. ``direct`` False:
    some of ``tensors`` share memory (the caller passed one tensor twice, or overlapping ones), so
    no leaf writes an output before it has read everything."""
    offsets = [t.storage_offset() for t in tensors]
    for n, step in enumerate(steps):
        P = [None] * step.nparams
        for p, sid, size, stride, off in step.ins:
            P[p] = tensors[sid].as_strided(size, stride, offsets[sid] + off)
        direct_outs = step.direct_outs if direct else ()
        if direct_outs:
            O = [None] * step.nparams
            for p, sid, size, stride, off in step.outs:
                if p in direct_outs:
                    O[p] = tensors[sid].as_strided(size, stride, offsets[sid] + off)
        else:
            O = None
        try:
            res = step.fn(P, step.ev, step.B, step.S, O, scratch[n] if scratch is not None else None, step.memo)
        except Exception as e:  # a leaf that fails names the op of the user's kernel
            from ..errors import PyptoError
            if isinstance(e, PyptoError):
                raise
            raise KernelRuntimeError(f"leaf {step.leaf} failed: {e}") from e
        if step.alias:  # a result that still views an operand this step overwrites: copy it first
            res = {p: r.clone() if r._base is not None and (O is None or r is not O[p]) else r
                   for p, r in res.items()}
        nb = len(step.B)
        for p, sid, size, stride, off in step.outs:
            r = res[p]
            if O is not None and O[p] is not None:
                dst = O[p]
                if r is dst:  # computed in place
                    continue
            else:
                dst = tensors[sid].as_strided(size, stride, offsets[sid] + off)
            if r.shape != size:
                if r.dim() < dst.dim():  # e.g. a cube result [m, n] for a [1, m, n] workspace tile
                    r = r.reshape(tuple(r.shape[:nb]) + (1,) * (dst.dim() - r.dim()) + tuple(r.shape[nb:]))
                # the valid part of a tile: what the leaf computed and the destination both hold
                common = tuple(slice(0, min(a, b)) for a, b in zip(r.shape, size))
                r, dst = r[common], dst[common]
            dst.copy_(r)
