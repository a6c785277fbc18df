"""The control executor: walks the control program with the actual sizes and tensor values.

Each time a root segment is reached it becomes a root instance (its symbol values captured);
root instances are stitched into device tasks of at most ``stitch_function_max_num`` roots,
and each call of a root instance becomes a task with its GM regions. RAW, WAR and WAW edges
are derived from overlapping regions, so loop iterations touching the same region keep program
order while independent ones may run together.
"""

from __future__ import annotations

import itertools
from dataclasses import dataclass, field


from .._lazy import LazyModule
from ..errors import KernelRuntimeError
from ..ir import expr as E
from ..ir.graph import Branch, Loop
from ..passes.segments import RootCall
from .stream import RootStream

np = LazyModule("numpy")


@dataclass(eq=False)
class RootInstance:
    """One execution of a root function: which root, its sequence number and symbol values."""

    root: int
    seq: int
    env: dict


@dataclass(eq=False)
class Task:
    """All tile instances of one call of a root instance: grid points, offsets and valid extents."""

    id: int
    root: RootInstance
    call_index: int
    call: object
    points: object  # [m, grid rank] int array
    offsets: list  # per arg: [m, rank] int array
    valid: list  # per arg: [m, rank] int array
    key_extra: tuple = ()
    extents: tuple = ()  # grid extents
    tiles: tuple = ()  # per arg: evaluated tile shape
    plans: dict = field(default_factory=dict)  # the runtime's gather/scatter plans for this task

    @property
    def leaf(self):
        return self.call.leaf


@dataclass(eq=False)
class DeviceTask:
    """Stitched root instances and the tasks and dependency edges between them."""

    index: int
    roots: list = field(default_factory=list)
    tasks: list = field(default_factory=list)
    edges: list = field(default_factory=list)  # (from task index, to task index, "RAW"|"WAR"|"WAW")


_CALL_CACHE: dict = {}  # call id -> (free symbols or None, {symbol values: result})


def _call_symbols(call):
    exprs = list(call.grid)
    for a in call.args:
        exprs += list(a.shape) + list(a.base) + list(a.extent)
    names = set()
    for e in exprs:
        if isinstance(e, E.Expr):
            if "Load(" in repr(e) or "[" in E.render(e).replace(".shape[", ""):
                return None  # reads tensor elements: never cached
            names |= E.free_symbols(e)
    return tuple(sorted(names))


def evaluate_call(call, env, load):
    """(grid extents, points, per-arg offsets, valid extents, tile shapes) of ``call`` under ``env``.

    Cached per call site and values of the symbols it uses, so a cached kernel call with the same
    sizes does no symbolic evaluation.
    """
    entry = _CALL_CACHE.get(call.id)
    if entry is None:
        entry = _CALL_CACHE[call.id] = (_call_symbols(call), {})
    names, table = entry
    if names is not None:
        key = tuple(env.get(n) for n in names)
        hit = table.get(key)
        if hit is not None:
            return hit
    result = _evaluate_call(call, env, load)
    if names is not None and len(table) < 4096:
        table[key] = result
    return result


def _evaluate_call(call, env, load):
    ev = lambda x: E.evaluate(x, env, load)  # noqa: E731
    extents = [int(ev(g)) for g in call.grid]
    if any(x <= 0 for x in extents):
        points = np.zeros((0, len(extents)), dtype=np.int64)
    elif not extents:
        points = np.zeros((1, 0), dtype=np.int64)
    else:
        points = np.array(list(itertools.product(*[range(x) for x in extents])), dtype=np.int64)
    offsets, valid, tiles = [], [], []
    for a in call.args:
        shape = [int(ev(s)) for s in a.shape]
        tiles.append(shape)
        base = [int(ev(b)) for b in a.base]
        ext = [int(ev(x)) for x in a.extent]
        m = points.shape[0]
        off = np.empty((m, len(shape)), dtype=np.int64)
        val = np.empty((m, len(shape)), dtype=np.int64)
        for d, (s, b, x, ax) in enumerate(zip(shape, base, ext, a.axis)):
            rel = points[:, ax] * s if ax is not None else np.zeros(m, dtype=np.int64)
            off[:, d] = b + rel
            val[:, d] = np.clip(x - rel, 0, s)
        offsets.append(off)
        valid.append(val)
    return extents, points, offsets, valid, tiles


class Stitcher:
    """Builds device tasks from root instances and derives their dependency edges."""

    def __init__(self, lowered, memory, max_roots: int, submit):
        self.lowered = lowered
        self.memory = memory
        self.max_roots = max_roots
        self.submit = submit
        self.current: DeviceTask | None = None
        self.done: list = []
        self._seq = itertools.count()
        self._task_ids = itertools.count()
        self._regions: dict = {}
        # what the timing simulator replays: root instances and flush markers
        self.stream = RootStream()
        self.loads: set = set()  # parameters whose elements control flow read since the last root
        self.parallel = 0  # depth of enclosing pypto.loop(parallel=True)

    def add_root(self, index: int, env: dict, load):
        read: dict = {}  # tensor elements this root's addresses read, for the timing replay

        def recorded(param, indices):
            value = load(param, indices)
            read[(param, tuple(indices))] = value
            return value

        if self.current is None:
            self.current = DeviceTask(len(self.done))
            self._regions = {}
        dt = self.current
        inst = RootInstance(index, next(self._seq), dict(env))
        dt.roots.append(inst)
        root = self.lowered.roots[index]
        for ci, call in enumerate(root.calls):
            extents, points, offsets, valid, tiles = evaluate_call(call, env, recorded)
            if points.shape[0] == 0:
                continue
            extra = tuple(E.evaluate(x, env, recorded) for x in self.lowered.leaf_symbols.get(call.leaf.name, ()))
            task = Task(next(self._task_ids), inst, ci, call, points, offsets, valid, extra, tuple(extents),
                        tuple(tiles))
            self._depend(dt, len(dt.tasks), task)
            dt.tasks.append(task)
        # the replay record: control flow that read tensor values since the last root waits for
        # the device (unless ready on host); the stitch limit itself is the simulator's to apply
        self.stream.append_root(index, env, self.loads, self.parallel > 0, read)
        self.loads.clear()
        if len(dt.roots) >= self.max_roots:
            self.flush(marker=False)

    def _depend(self, dt, index, task):
        """Add edges from earlier tasks whose GM regions overlap this task's."""
        seen = set()
        for k, a in enumerate(task.call.args):
            key = self.memory.region_key(a.value, task.root.seq)
            if task.points.shape[0] == 1:  # plain ints: numpy per single tile costs more than it saves
                lo = task.offsets[k][0].tolist()
                hi = [o + v for o, v in zip(lo, task.valid[k][0].tolist())]
            else:
                lo = task.offsets[k].min(axis=0).tolist()
                hi = (task.offsets[k] + task.valid[k]).max(axis=0).tolist()
            write = k in task.call.writes
            entries = self._regions.setdefault(key, [])
            for j, plo, phi, pwrite in entries:
                if j == index or not (pwrite or write):
                    continue
                if all(a < b for a, b in zip(plo, hi)) and all(a < b for a, b in zip(lo, phi)):
                    kind = "RAW" if pwrite and not write else ("WAR" if write and not pwrite else "WAW")
                    if (j, kind) not in seen:
                        seen.add((j, kind))
                        dt.edges.append((j, index, kind))
            entries.append((index, lo, hi, write))

    def flush(self, marker: bool = True):
        """Submit the current device task; ``marker`` records a program-imposed boundary
        (``submit_before_loop``) that a replay under other options must keep."""
        if marker:
            self.stream.flush_marker()
        if self.current is not None and self.current.tasks:
            self.submit(self.current)
        if self.current is not None:
            self.done.append(self.current)
        self.current = None


def walk(region, env, stitcher: Stitcher, load):
    """Run the control program ``region``: loops, branches and root calls, in program order."""
    ev = lambda x: E.evaluate(x, env, load)  # noqa: E731
    while isinstance(region, Branch):
        region = region.then if ev(region.cond) else region.orelse
    for item in region.items:
        if isinstance(item, RootCall):
            stitcher.add_root(item.index, env, load)
        elif isinstance(item, Loop):
            if item.submit_before_loop:
                stitcher.flush()
            start, stop = ev(item.start), ev(item.stop)
            remaining = max(0, -(-(stop - start) // item.step))
            cur = start
            stitcher.parallel += item.parallel
            for factor, body in zip(item.factors, item.bodies):
                for _ in range(remaining // factor):
                    env[item.index] = cur
                    walk(body, env, stitcher, load)
                    cur += item.step * factor
                remaining %= factor
            stitcher.parallel -= item.parallel
        else:
            raise KernelRuntimeError(f"internal: unexpected control item {item!r}")
    return region.returns
