"""Functional execution of the lowered program: device tasks run leaf kernels on GM tensors.

Tasks run in waves that respect the dependency edges; the ready tasks of one leaf run as one
batched call of its generated code: their tiles are gathered into ``[n, *tile]`` tensors (one
group per distinct set of valid extents, so tails need no masking), computed, and scattered
back. With ``valid_shape_optimize`` full tiles run the static "main" variant and the rest the
dynamic "tail" variant.
"""

from __future__ import annotations

from .._lazy import LazyModule

from ..errors import KernelRuntimeError, PyptoError
from ..ir import expr as E
from .._lazy import torch
from ..ir.graph import Block
from ..passes.segments import RootCall
from .control import Stitcher, walk

np = LazyModule("numpy")


class Memory:
    """GM storage: the caller's tensors, kernel-wide workspaces, and per-root-instance workspaces."""

    def __init__(self, params: dict, global_ids: set):
        self.params = params  # value id -> tensor
        self.global_ids = global_ids
        self.globals: dict = {}
        self.per_root: dict = {}

    def region_key(self, value, seq):
        if value.id in self.params or value.id in self.global_ids:
            return value.id
        return (value.id, seq)

    def tensor(self, value, root, create: bool):
        if value.id in self.params:
            return self.params[value.id]
        table = self.globals if value.id in self.global_ids else self.per_root.setdefault(root.seq, {})
        t = table.get(value.id)
        if t is None:
            shape = [int(E.evaluate(s, root.env)) for s in value.shape]
            t = torch.zeros(shape, dtype=value.dtype.torch())
            table[value.id] = t
        return t


class Runner:
    """Executes device tasks for one kernel call."""

    def __init__(self, lowered, memory: Memory, load, valid_shape_optimize: bool):
        self.lowered = lowered
        self.memory = memory
        self.load = load
        self.vso = valid_shape_optimize
        self.variant_counts = {"main": 0, "tail": 0}
        self.order: list = []  # (device task index, task index) in execution order

    def run_device_task(self, dt):
        n = len(dt.tasks)
        succ = [[] for _ in range(n)]
        indeg = [0] * n
        for i, j, _ in dt.edges:
            succ[i].append(j)
            indeg[j] += 1
        ready = [i for i in range(n) if indeg[i] == 0]
        while ready:
            by_leaf: dict = {}
            for i in ready:
                by_leaf.setdefault(dt.tasks[i].leaf.name, []).append(i)
            nxt = []
            for name, idx in by_leaf.items():
                self.run_batch([dt.tasks[i] for i in idx])
                self.order.extend((dt.index, i) for i in idx)
                for i in idx:
                    for j in succ[i]:
                        indeg[j] -= 1
                        if indeg[j] == 0:
                            nxt.append(j)
            ready = nxt
        if sum(1 for d in indeg if d > 0):
            raise KernelRuntimeError("internal: the dependency edges of a device task form a cycle",
                                     got=f"{sum(1 for d in indeg if d > 0)} task(s) never became ready")

    def run_batch(self, tasks):
        leaf = tasks[0].leaf
        compiled = self.lowered.executables[leaf.name]
        groups: dict = {}
        for t in tasks:
            if t.points.shape[0] == 1:
                key = t.plans.get("single")
                if key is None:
                    key = t.plans["single"] = (tuple(x for v in t.valid for x in v[0].tolist()), t.key_extra)
                groups.setdefault(key, []).append((t, None))
                continue
            sig = np.concatenate(t.valid, axis=1) if t.valid else np.zeros((t.points.shape[0], 0), np.int64)
            if sig.shape[0] and (sig == sig[0]).all():  # the common case: one valid shape per task
                key = (tuple(sig[0].tolist()), t.key_extra)
                groups.setdefault(key, []).append((t, None))
                continue
            rows, inverse = np.unique(sig, axis=0, return_inverse=True)
            for r, row in enumerate(rows):
                members = np.nonzero(inverse.reshape(-1) == r)[0]
                groups.setdefault((tuple(row.tolist()), t.key_extra), []).append((t, members))
        for (sig, _), parts in groups.items():
            t0 = parts[0][0]
            full = list(sig) == [x for tile in t0.tiles for x in tile]
            variant = "main" if (self.vso and full) else ("tail" if self.vso else "default")
            if self.vso:
                self.variant_counts[variant] += sum(t.points.shape[0] if m is None else len(m) for t, m in parts)
            self._run_group(leaf, compiled[variant], parts, full)

    def _run_group(self, leaf, fn, parts, full):
        """Gather the tiles of every member, run the leaf once, scatter the results."""
        whole = full and len(parts) == 1 and parts[0][1] is None
        members = [(t, m) for t, ms in parts
                   for m in (range(t.points.shape[0]) if ms is None else ms.tolist())]
        P = []
        for p, (role, dtype, _) in enumerate(leaf.params):
            if role == "out":
                P.append(None)
                continue
            fast = _grid_view(self.memory, parts[0][0], p, expand=True) if whole else None
            if fast is not None:
                P.append(fast)
                continue
            tiles = []
            for t, m in members:
                a = t.call.args[p]
                src = self.memory.tensor(a.value, t.root, create=False)
                off, val = t.offsets[p][m], t.valid[p][m]
                tiles.append(src[tuple(slice(o, o + v) for o, v in zip(off.tolist(), val.tolist()))])
            P.append(torch.stack(tiles) if len(tiles) > 1 else tiles[0].unsqueeze(0))
        env = members[0][0].root.env
        ev = _evaluator(env, self.load)
        try:
            out = fn(P, ev, len(members))
        except PyptoError:
            raise
        except Exception as e:
            op = leaf.ops[0]
            raise KernelRuntimeError(f"leaf {leaf.name} failed: {e}", loc=op.loc) from e
        for p, data in out.items():
            target = _grid_view(self.memory, parts[0][0], p, expand=False, create=True) if whole else None
            if target is not None and tuple(data.shape[1:]) == tuple(target.shape[len(parts[0][0].extents):]):
                target.copy_(data.reshape(target.shape))
                continue
            for i, (t, m) in enumerate(members):
                a = t.call.args[p]
                dst = self.memory.tensor(a.value, t.root, create=True)
                off, val = t.offsets[p][m].tolist(), t.valid[p][m].tolist()
                piece = data[i]
                while piece.dim() < len(off):  # e.g. a cube result for a [1, m, n] workspace tile
                    piece = piece.unsqueeze(0)
                n = [min(v, s, dst.shape[d] - o) for d, (o, v, s) in enumerate(zip(off, val, piece.shape))]
                if any(x <= 0 for x in n):
                    continue
                dst[tuple(slice(o, o + k) for o, k in zip(off, n))] = \
                    piece[tuple(slice(0, k) for k in n)].to(dst.dtype)


def _grid_view(memory, task, p, expand: bool, create: bool = False):
    """A view of arg ``p`` of ``task`` with the grid dims first: ``[*grid, *tile]``.

    All of the task's tiles are full here, so the batch of tiles is a strided view of the tensor
    (one copy to gather, one to scatter) instead of one slice per tile. None when the tiles do
    not form such a view (overlapping reads of one tile by several grid points on a write).
    """
    a = task.call.args[p]
    t = memory.tensor(a.value, task.root, create=create)
    shape = t.shape
    cached = task.plans.get((p, expand))  # tasks of straight-line programs are reused per call
    if cached is not None and cached[0] == shape:
        plan = cached[1]
    else:
        key = (task.call.id, p, task.extents, tuple(task.tiles[p]), task.offsets[p][0].tobytes(), expand,
               tuple(shape))
        plan = _PLANS.get(key)
        if plan is None:
            plan = _PLANS[key] = _grid_plan(task, p, tuple(shape), expand)
            if len(_PLANS) > 8192:
                _PLANS.clear()
        task.plans[(p, expand)] = (shape, plan)
    if plan is False:
        return None
    index, split, order, extents, tile, n = plan
    v = t[index]
    if split is not None:
        v = v.view(split)
    if order is not None:
        v = v.permute(order)
    if not expand or n == 1:
        return v
    return v.expand(*extents, *tile).reshape(n, *tile)


_PLANS: dict = {}


def _grid_plan(task, p, tshape, expand):
    """How to view arg ``p`` of ``task`` as ``[*grid, *tile]``: (index, split, permutation, ...)."""
    a = task.call.args[p]
    tile, extents = task.tiles[p], task.extents
    base = task.offsets[p][0].tolist()
    index, split, tile_pos, grid_pos = [], [], [], {}
    for d, (s, ax) in enumerate(zip(tile, a.axis)):
        if ax is None:
            index.append(slice(base[d], base[d] + s))
            tile_pos.append(len(split))
            split.append(s)
        else:
            index.append(slice(base[d], base[d] + extents[ax] * s))
            grid_pos[ax] = len(split)
            split += [extents[ax], s]
            tile_pos.append(len(split) - 1)
    for d, sl in enumerate(index):
        if sl.stop > tshape[d]:
            return False  # the tiles run past the tensor's edge
    if all(x == 1 for x in extents):  # one tile: the batch is the window itself
        return (tuple(index), (1, *tile), None, tuple(extents), tuple(tile), 1) if expand or not extents \
            else (tuple(index), (*([1] * len(extents)), *tile), None, tuple(extents), tuple(tile), 1)
    missing = [j for j in range(len(extents)) if j not in grid_pos]
    if missing and not expand and any(extents[j] > 1 for j in missing):
        return False
    for j in missing:  # grid axes this operand does not move along: size-1 dims, expanded
        grid_pos[j] = len(split)
        split.append(1)
    order = [grid_pos[j] for j in range(len(extents))] + tile_pos
    n = 1
    for x in extents:
        n *= x
    return (tuple(index), tuple(split) if split else None,
            None if order == list(range(len(order))) else tuple(order), tuple(extents), tuple(tile), n)


def _all_exprs(lowered):
    for root in lowered.roots:
        for call in root.calls:
            for a in call.args:
                for e in a.shape + a.base + a.extent:
                    if isinstance(e, E.Expr):
                        yield from _walk_expr(e)


def _walk_expr(e):
    yield e
    for child in (getattr(e, "a", None), getattr(e, "b", None)):
        if isinstance(child, E.Expr):
            yield from _walk_expr(child)
    for child in getattr(e, "indices", ()):
        if isinstance(child, E.Expr):
            yield from _walk_expr(child)


def _evaluator(env, load):
    def ev(x):
        if isinstance(x, E.Expr):
            return E.evaluate(x, env, load)
        if isinstance(x, tuple):
            return tuple(ev(i) for i in x)
        return x
    return ev


class LoweredExecutor:
    """Runs the lowered program of a kernel; same interface as the reference executor."""

    def __init__(self, lowered, options):
        self.lowered = lowered
        self.max_roots = int(options.get("runtime", "stitch_function_max_num"))
        self.vso = bool(options.get("runtime", "valid_shape_optimize"))
        self.last = None
        # no loops, branches or element reads: the device tasks depend only on the sizes
        control = lowered.control
        self._straight = isinstance(control, Block) and all(isinstance(x, RootCall) for x in control.items) \
            and not any(isinstance(e, E.Load) for e in _all_exprs(lowered))
        self._plans: dict = {}

    def run(self, tensors: list, env: dict, options=None):
        """Execute with the caller's tensors and dynamic sizes; ``options`` are the resolved options
        of this call (runtime options such as stitching are read per call, not per compile)."""
        max_roots = int(options.get("runtime", "stitch_function_max_num")) if options is not None \
            else self.max_roots
        program = self.lowered.program
        params = program.params
        # written parameters are updated in place: every check that can fail on bad input runs
        # before execution starts
        work = list(tensors)
        by_name = {p.value.name: w for p, w in zip(params, work)}

        def load(param, indices):
            if stitcher is not None:
                stitcher.loads.add(param)
            t = by_name[param]
            try:
                return int(t[tuple(indices)])
            except IndexError:
                raise KernelRuntimeError(f"element read out of range: {param}{list(indices)}",
                                         expected=f"indices within {list(t.shape)}", got=list(indices)) from None

        memory = Memory({p.value.id: w for p, w in zip(params, work)}, self.lowered.global_values)
        runner = Runner(self.lowered, memory, load, self.vso)
        env = dict(env)
        stitcher = None
        key = (max_roots, tuple(sorted(env.items())))
        cached = self._plans.get(key) if self._straight else None
        if cached is not None:  # a straight-line program with these sizes: same tasks as last time
            for dt in cached[0]:
                runner.run_device_task(dt)
            (done, stream), returns = cached, self.lowered.control.returns
        else:
            stitcher = Stitcher(self.lowered, memory, max_roots, runner.run_device_task)
            returns = walk(self.lowered.control, env, stitcher, load)
            stitcher.flush(marker=False)
            done, stream = stitcher.done, stitcher.stream
            if self._straight and len(self._plans) < 64:
                self._plans[key] = (done, stream)
        self.last = (done, runner)
        self.last_stream = stream
        self.last_memory = memory
        if returns is None:
            return None
        return [self._result(v, tensors, memory, env) for v in returns]

    def _result(self, v, tensors, memory, env):
        for t, p in zip(tensors, self.lowered.program.params):
            if p.value.id == v.id:
                return t
        views = self.lowered.views
        chain = []
        while v.id in views:
            chain.append(views[v.id])
            v = views[v.id].inputs[0]
        if v.id in memory.params:
            base = next(t for t, p in zip(tensors, self.lowered.program.params) if p.value.id == v.id)
        else:
            base = memory.globals.get(v.id)
            if base is None:
                base = torch.zeros([int(E.evaluate(s, env)) for s in v.shape], dtype=v.dtype.torch())
        from ..ops.registry import REGISTRY
        ev = _evaluator(env, None)
        t = base
        for op in reversed(chain):
            t = REGISTRY["view"].compute([t], op.attrs, ev)
        target = chain[0].outputs[0] if chain else v
        valid = [int(E.evaluate(s, env)) for s in target.valid_shape]
        t = t[tuple(slice(0, n) for n in valid)]
        return t.clone()
