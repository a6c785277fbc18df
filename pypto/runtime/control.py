"""The control executor: walks the control program with the actual sizes and tensor values.

Each time a root segment is reached it becomes a root instance (its symbol values captured);
root instances are stitched into device tasks of at most ``stitch_function_max_num`` roots, and
each call of a root instance becomes a `Task`: one call of a leaf over its grid, with the base
offset, tile and valid extent of every GM operand. What depends on the tasks' regions (the
dependency edges, the batched execution) is the planner's job (`plan.py`).
"""

from __future__ import annotations

import itertools
from dataclasses import dataclass, field

from .._lazy import LazyModule
from ..errors import KernelRuntimeError
from ..ir import expr as E
from ..ir.graph import Branch, Loop
from ..ir.tile import leaf_symbols
from ..passes.segments import RootCall
from .reinterpret import covering_box, covering_boxes
from .stream import RootStream

np = LazyModule("numpy")

CALL_TABLE_SIZE = 1024  # size sets whose numbers one call site keeps (per compiled version)


@dataclass(eq=False)
class RootInstance:
    """One execution of a root function: which root, its sequence number and symbol values."""

    root: int
    seq: int
    env: dict


class Task:
    """One call of a leaf over its grid in one root instance.

    ``grid`` the grid extents; per GM operand (leaf param order) ``bases`` the offset of tile 0,
    ``exts`` the valid extent of the whole access, ``tiles`` the tile shape; ``extra`` the values of
    symbols the leaf's code evaluates (tasks batch together only when they agree); ``keys`` the
    region key of each operand's buffer. ``alias`` is None, or per operand None or (key of the
    buffer whose memory it is, that value, dependency key, box lo, box hi, cell) for an operand living
    in another value's memory (passes/aliasing.py): its buffer is placed there and the dependency
    engine sees the box carried into the memory it lives in.
    """

    __slots__ = ("id", "root", "call", "grid", "bases", "exts", "tiles", "extra", "keys", "ends", "alias",
                 "_tiles_cache")

    def __init__(self, id, root, call, grid, bases, exts, tiles, extra, keys, ends, alias=None):
        self.id, self.root, self.call, self.grid = id, root, call, grid
        self.bases, self.exts, self.tiles, self.extra, self.keys = bases, exts, tiles, extra, keys
        self.ends = ends
        self.alias = alias
        self._tiles_cache = None

    def dependency(self, p):
        """(key, lo, hi, cell) of operand ``p`` for the dependency engine."""
        a = self.alias[p] if self.alias is not None else None
        if a is None:
            return self.keys[p], self.bases[p], self.ends[p], self.tiles[p]
        return a[2], a[3], a[4], a[5]

    @property
    def leaf(self):
        return self.call.leaf

    def region(self, p):
        """(lo, hi) of the box operand ``p`` touches (all tiles of the task)."""
        return self.bases[p], self.ends[p]

    # per-tile form (tests and inspection): grid points, offsets and valid extents per operand
    def _per_tile(self):
        if self._tiles_cache is None:
            ext = self.grid
            if any(x <= 0 for x in ext):
                points = np.zeros((0, len(ext)), dtype=np.int64)
            elif not ext:
                points = np.zeros((1, 0), dtype=np.int64)
            else:
                points = np.array(list(itertools.product(*[range(x) for x in ext])), dtype=np.int64)
            offsets, valid = [], []
            for a, base, x, tile in zip(self.call.args, self.bases, self.exts, self.tiles):
                m = points.shape[0]
                off = np.empty((m, len(tile)), dtype=np.int64)
                val = np.empty((m, len(tile)), dtype=np.int64)
                for d, (s, b, e, ax) in enumerate(zip(tile, base, x, a.axis)):
                    rel = points[:, ax] * s if ax is not None else np.zeros(m, dtype=np.int64)
                    off[:, d] = b + rel
                    val[:, d] = np.clip(e - rel, 0, s)
                offsets.append(off)
                valid.append(val)
            self._tiles_cache = (points, offsets, valid)
        return self._tiles_cache

    @property
    def points(self):
        return self._per_tile()[0]

    @property
    def offsets(self):
        return self._per_tile()[1]

    @property
    def valid(self):
        return self._per_tile()[2]


@dataclass(eq=False)
class DeviceTask:
    """Stitched root instances and the tasks and dependency edges between them."""

    index: int
    roots: list = field(default_factory=list)
    tasks: list = field(default_factory=list)
    edges: list = field(default_factory=list)  # (from task index, to task index, "RAW"|"WAR"|"WAW")


class CallEval:
    """The numbers of one call site under an environment, from one generated function.

    ``evaluate(env, load)`` gives (grid extents, bases, valid extents, tile shapes, leaf symbol
    values, the end of each operand's box); it is cached per value of the symbols it reads, unless
    it reads tensor elements. ``keys(seq, env)`` gives the region key of each operand's buffer.
    """

    __slots__ = ("fn", "names", "table", "reads_elements", "keys", "aliased", "boxes")

    def __init__(self, call, symbols, scopes, global_ids, lowered=None):
        lines, names_of = ["def evaluate(env, load):"], {}

        def local(x):
            if not isinstance(x, E.Expr):
                return str(int(x))
            if x not in names_of:
                names_of[x] = f"v{len(names_of)}"
                lines.append(f"    {names_of[x]} = int({E._source(x)})")
            return names_of[x]

        grid = [local(g) for g in call.grid]
        bases = [[local(b) for b in a.base] for a in call.args]
        exts = [[local(x) for x in a.extent] for a in call.args]
        tiles = [[local(t) for t in a.shape] for a in call.args]
        extra = [local(x) for x in symbols]
        ends = []  # base + min(max(extent, 0), span) per dim: the box of all the call's tiles
        for a, b, x, t in zip(call.args, bases, exts, tiles):
            ends.append([f"{b[d]} + min(max({x[d]}, 0), {t[d] if ax is None else f'{grid[ax]} * {t[d]}'})"
                         for d, ax in enumerate(a.axis)])

        def tup(items):
            return "(" + "".join(f"{i}, " for i in items) + ")"
        lines.append(f"    return ({tup(grid)}, {tup(tup(b) for b in bases)}, {tup(tup(x) for x in exts)}, "
                     f"{tup(tup(t) for t in tiles)}, {tup(extra)}, {tup(tup(e) for e in ends)})")
        namespace = {"min": min, "max": max}
        exec(compile("\n".join(lines), f"<pypto call {call.id}>", "exec"), namespace)  # noqa: S102
        self.fn = namespace["evaluate"]
        keys = []
        for a in call.args:
            vid = a.value.id
            if vid in scopes:
                keys.append(f"({vid}, ({''.join(f'env.get({n!r}), ' for n in scopes[vid])}))")
            else:
                keys.append(str(vid) if vid in global_ids else f"({vid}, seq)")
        self.keys = eval(f"lambda seq, env: ({''.join(k + ', ' for k in keys)})")  # noqa: S307
        exprs = list(call.grid) + list(symbols)
        for a in call.args:
            exprs += list(a.shape) + list(a.base) + list(a.extent)
        names = set()
        self.reads_elements = False
        for e in exprs:
            if isinstance(e, E.Expr):
                if _has_load(e):
                    self.reads_elements = True
                names |= E.free_symbols(e)
        self.names = tuple(sorted(names))
        self.table: dict = {}
        # operands living in another value's memory: (index, value, whose memory, final if written)
        aliases = getattr(lowered, "aliases", None) or {}
        self.aliased = tuple((k, a.value, aliases[a.value.id], lowered.dep_targets.get(a.value.id))
                             for k, a in enumerate(call.args) if a.value.id in aliases)
        self.boxes: dict = {}  # (operand, box, shapes) -> the box carried into the memory it lives in

    def alias_of(self, lowered, seq, env, keys, bases, ends, tiles):
        """The ``Task.alias`` entry of one task of this call (None without aliased operands)."""
        if not self.aliased:
            return None
        out = [None] * len(bases)
        for k, value, target, final in self.aliased:
            place = lowered.buffer_key(target, seq, env)
            if final is None:  # a memory no call writes: nothing to order, the operand keeps its region
                out[k] = (place, target, keys[k], bases[k], ends[k], tiles[k])
                continue
            src, dst = _shapes(value, final, env)
            box_key = (k, bases[k], ends[k], tiles[k], src, dst)  # the same boxes for every iteration
            box = self.boxes.get(box_key)
            if box is None:
                lo, hi = covering_box(list(bases[k]), list(ends[k]), src, dst)
                _, cell = covering_box([0] * len(src), [max(1, t) for t in tiles[k]], src, dst)
                if len(self.boxes) >= CALL_TABLE_SIZE:
                    self.boxes.clear()
                box = self.boxes[box_key] = (tuple(lo), tuple(hi), tuple(max(1, c) for c in cell))
            out[k] = (place, target, lowered.memory_key(value, seq, env), *box)
        return tuple(out)

    def __call__(self, env, load):
        if self.reads_elements:
            return self.fn(env, load)
        key = tuple([env[n] for n in self.names])
        table = self.table
        hit = table.get(key)
        if hit is None:
            hit = self.fn(env, load)
            if len(table) >= CALL_TABLE_SIZE:  # bounded: start again (the current sizes refill it)
                table.clear()
            table[key] = hit
        return hit


def _shapes(value, final, env) -> tuple:
    """The sizes of ``value`` and of the memory ``final`` it lives in, under ``env``."""
    return (tuple(int(E.evaluate(x, env)) for x in value.shape), tuple(int(E.evaluate(x, env)) for x in final.shape))


def _tuple(exprs) -> str:
    return "(" + "".join(f"int({E._source(x)}), " for x in exprs) + ")"


def _has_load(e) -> bool:
    if isinstance(e, E.Load):
        return True
    return any(_has_load(c) for c in (getattr(e, "a", None), getattr(e, "b", None)) if isinstance(c, E.Expr))


def evaluate_call(call, env, load, lowered=None):
    """(grid extents, points, per-arg offsets, valid extents, tile shapes) of ``call`` under ``env``:
    the per-tile form the timing simulator expands into one task per tile."""
    ce = (lowered.call_evals.get(call.id) if lowered is not None else None) \
        or (_call_eval(lowered, call) if lowered is not None else CallEval(call, leaf_symbols(call.leaf), {}, ()))
    grid, bases, exts, tiles, _, ends = ce(env, load)
    t = Task(0, None, call, grid, bases, exts, tiles, (), (), ends)
    points, offsets, valid = t._per_tile()
    tiles = [list(s) for s in tiles]
    for k, value, _, final in ce.aliased:
        if final is not None:  # tiles of a value living in a written memory: boxes of that memory
            src, dst = _shapes(value, final, env)
            offsets = list(offsets)
            valid = list(valid)
            offsets[k], valid[k] = covering_boxes(offsets[k], valid[k], src, dst)
            _, cell = covering_boxes([[0] * len(src)], [[max(1, x) for x in tiles[k]]], src, dst)
            tiles[k] = [max(1, int(c)) for c in cell[0]]
    return list(grid), points, offsets, valid, tiles


def _call_eval(lowered, call):
    """The CallEval of a call site, kept by the lowered program that owns the call (so it goes with
    the compiled version: with an eviction, ``cache_clear()`` or the kernel itself)."""
    evals = lowered.call_evals
    ev = evals.get(call.id)
    if ev is None:
        ev = evals[call.id] = CallEval(call, leaf_symbols(call.leaf), lowered.scopes, lowered.global_values,
                                        lowered)
    return ev


class Stitcher:
    """Builds root instances, tasks and device tasks while the control program runs.

    ``submit(device_task)`` is called when a device task is complete (at the stitch limit, at a
    flush, at the end); the stream records what the timing simulator replays.
    """

    def __init__(self, lowered, max_roots: int, submit=None):
        self.lowered = lowered
        self.max_roots = max_roots
        self.submit = submit
        self.current: DeviceTask | None = None
        self.done: list = []
        self.tasks: list = []
        self._seq = itertools.count()
        # what the timing simulator replays: root instances and flush markers
        self.stream = RootStream()
        self.loads: set = set()  # parameters whose elements control flow read since the last root
        self.parallel = 0  # depth of enclosing pypto.loop(parallel=True)
        self._calls: dict = {}  # root index -> [(call, CallEval)]

    def add_root(self, index: int, env: dict, load):
        read: dict = {}  # tensor elements this root's addresses read, for the timing replay

        def recorded(param, indices):
            value = load(param, indices)
            read[(param, tuple(indices))] = value
            return value

        if self.current is None:
            self.current = DeviceTask(len(self.done))
        dt = self.current
        env = dict(env)
        inst = RootInstance(index, next(self._seq), env)
        dt.roots.append(inst)
        calls = self._calls.get(index)
        if calls is None:  # (call, its CallEval) per call of the root, looked up once per walk
            calls = self._calls[index] = [(call, _call_eval(self.lowered, call))
                                          for call in self.lowered.roots[index].calls]
        tasks = self.tasks
        for call, ce in calls:
            grid, bases, exts, tiles, extra, ends = ce(env, recorded)
            if grid and min(grid) <= 0:  # an empty grid: no task
                continue
            keys = ce.keys(inst.seq, env)
            alias = ce.alias_of(self.lowered, inst.seq, env, keys, bases, ends, tiles) if ce.aliased else None
            task = Task(len(tasks), inst, call, grid, bases, exts, tiles, extra, keys, ends, alias)
            tasks.append(task)
            dt.tasks.append(task)
        # the replay record: control flow that read tensor values since the last root waits for
        # the device (unless ready on host); the stitch limit itself is the simulator's to apply
        self.stream.append_root(index, env, self.loads, self.parallel > 0, read)
        self.loads.clear()
        if len(dt.roots) >= self.max_roots:
            self.flush(marker=False)

    def flush(self, marker: bool = True):
        """Close the current device task; ``marker`` records a program-imposed boundary
        (``submit_before_loop``) that a replay under other options must keep."""
        if marker:
            self.stream.flush_marker()
        dt, self.current = self.current, None
        if dt is not None:
            self.done.append(dt)
            if dt.tasks and self.submit is not None:
                self.submit(dt)


def walk(region, env, stitcher: Stitcher, load):
    """Run the control program ``region``: loops, branches and root calls, in program order."""
    while isinstance(region, Branch):
        region = region.then if E.evaluate(region.cond, env, load) else region.orelse
    for item in region.items:
        if isinstance(item, RootCall):
            stitcher.add_root(item.index, env, load)
        elif isinstance(item, Loop):
            if item.submit_before_loop:
                stitcher.flush()
            start, stop = E.evaluate(item.start, env, load), E.evaluate(item.stop, env, load)
            step = item.step
            remaining = max(0, -(-(stop - start) // step))
            cur = start
            stitcher.parallel += item.parallel
            for factor, body in zip(item.factors, item.bodies):
                for _ in range(remaining // factor):
                    env[item.index] = cur
                    walk(body, env, stitcher, load)
                    cur += step * factor
                remaining %= factor
            stitcher.parallel -= item.parallel
        else:
            raise KernelRuntimeError(f"internal: unexpected control item {item!r}")
    return region.returns
