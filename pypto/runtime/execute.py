"""Functional execution of the lowered program: the caller's tensors and GM workspaces, written by
batched leaf calls.

A call walks the control program (control.py), which yields root instances, tasks and device
tasks; the planner (plan.py) levels the tasks by their dependencies and turns each level into
batched steps over strided views. When no control flow or address reads tensor elements,
everything but the numbers depends only on the sizes: the plan is kept (a bounded cache per
distinct set of sizes) and a cached call just allocates the workspaces and replays the steps.
Programs that read elements walk on every call and execute what is pending before each read, so
the read sees the values the program wrote.
"""

from __future__ import annotations

import math
import threading
from operator import sub
from collections import OrderedDict

from .._lazy import torch
from ..errors import KernelRuntimeError
from ..ir import expr as E
from ..ir.graph import Branch, Loop, iter_items, unbound_symbols
from ..ir.guards import checker, input_loader, runtime_check
from ..ops.registry import REGISTRY
from .argument_overlap import remap_keys, separate_overlaps, shared_memory_test
from .collector import paused
from .memory_budget import require_fits
from .control import Stitcher, walk
from .memory import Layout, Memory
from .plan import Planner, levels, run_steps
from .copy_forward import forward_reshape_copies, reshape_leaf
from .reduction_fold import fold_split_reductions
from .replay import compile_replay
from .regions import RegionIndex
from .workspace_budget import WorkspaceBudget

PLAN_CACHE_SIZE = 16  # distinct size sets kept per compiled kernel
DECLINED = object()  # `LoweredExecutor.replay`: not this call, nothing done (run it with `run`)


class RunInfo:
    """What one call executed: ``steps`` (batched leaf calls), ``order`` ((device task, task) in
    execution order) and ``variant_counts`` (tiles run by the main / tail variant)."""

    def __init__(self, steps, order, variant_counts):
        self.steps, self.order, self.variant_counts = steps, order, variant_counts


class CallPlan:
    """Everything about a call that depends only on the sizes."""

    __slots__ = ("layout", "steps", "stream", "done", "returns", "final_env", "info", "spare", "_last",
                 "replay", "runs", "folded", "head", "replay_at", "__weakref__")

    def __init__(self, layout, steps, stream, done, returns, final_env, info, replay_at: int = 2):
        self.layout, self.steps, self.stream, self.done = layout, steps, stream, done
        # what the call runs: the steps with each split reduction that one step computes whole
        # folded into its combine (reduction_fold.py), and the readers of a reshape's copy reading
        # its source (copy_forward.py); ``steps`` stays the plan of the tasks
        self.folded = forward_reshape_copies(fold_split_reductions(steps, layout), layout)
        self.returns, self.final_env, self.info = returns, final_env, info
        self.head = (done, info)  # what `LoweredExecutor.last` gives after a call of this plan
        # (workspaces, per-step temporaries) of the last call, reused by the next one as far as
        # the kernel's workspace budget allows (workspace_budget.py); None while a call has them
        self.spare = None
        self._last = None  # what the call handing its tensors back offers (see store)
        # the steps as one generated function (replay.py), made at the plan's run number
        # ``replay_at``: the second, so that a size called once does not pay for it, or the first
        # for the plan made by the compiling call, which pays the one-time work so that the next
        # call at those sizes is the cached call (as a device's second launch is)
        self.replay = None
        self.runs = 0
        self.replay_at = replay_at

    def run_steps(self, work, scratch, direct: bool, views=None, shares=None) -> tuple:
        """Run the steps on ``work`` (the caller's tensors, then the workspaces); ``views``: what
        ``self.replay.views`` gave for them (the cached call asks first). Returns the steps left
        for the memory view to run when it is read (view_only_steps.py; the replay's only)."""
        replay = self.replay
        if replay is not None and direct:
            replay(work, views if views is not None else replay.views(work, False), scratch)
            return replay.deferred
        self.runs += 1
        if self.runs == self.replay_at and direct:  # (None for a plan of too many steps: it keeps the interpreter)
            leaves = self.layout.lowered.leaves
            self.replay = compile_replay(self.folded, self.layout.n_params, shares,
                                         lambda s: reshape_leaf(leaves.get(s.leaf)))
        run_steps(self.folded, work, scratch, direct=direct)
        return ()

    def offer(self, slabs, scratch) -> list:
        """Item sizes for the budget: the workspaces (one item), then each temporary."""
        self._last = (slabs, scratch, [(n, i) for n, w in enumerate(scratch) for i in w])
        return [sum(t.nbytes for t in slabs)] + [scratch[n][i].nbytes for n, i in self._last[2]]

    def store(self, grant) -> None:
        slabs, scratch, where = self._last
        self._last = None
        for (n, i), ok in zip(where, grant[1:]):
            if not ok:
                del scratch[n][i]
        if not grant[0] and self.replay is not None:
            self.replay.forget_work()  # (its views of the dropped workspaces would hold their memory)
        self.spare = (slabs if grant[0] else None, scratch)

    def release(self) -> None:
        """Drop the kept tensors (the budget makes room for another plan)."""
        self.spare = None
        if self.replay is not None:
            self.replay.forget_work()


def _reads_elements(lowered) -> bool:
    exprs = []
    for item in iter_items(lowered.control):
        if isinstance(item, Loop):
            exprs += [item.start, item.stop, item.step]
    stack = [lowered.control]
    while stack:  # branch conditions
        r = stack.pop()
        if isinstance(r, Branch):
            exprs.append(r.cond)
            stack += [r.then, r.orelse]
        else:
            stack += [b for x in r.items if isinstance(x, Loop) for b in x.bodies]
    for root in lowered.roots:
        for call in root.calls:
            exprs += list(call.grid)
            for a in call.args:
                exprs += list(a.shape) + list(a.base) + list(a.extent)
        for op in (op for call in root.calls for op in call.leaf.ops):
            exprs += [v for v in op.attrs.values() if isinstance(v, E.Expr)]
    return any(isinstance(e, E.Expr) and "load(" in E._source(e) for e in exprs)


def _order(steps, where):
    return [where[t.id] for s in steps for t in s.tasks]


class LoweredExecutor:
    """Runs the lowered program of a kernel; same interface as the reference executor."""

    def __init__(self, lowered, options, budget: WorkspaceBudget | None = None):
        self.lowered = lowered
        self.budget = budget if budget is not None else WorkspaceBudget()
        self.max_roots = int(options.get("runtime", "stitch_function_max_num"))
        self.vso = bool(options.get("runtime", "valid_shape_optimize"))
        self._mine = threading.local()  # what this thread's last call ran (threads may share a kernel)
        self.reads_elements = _reads_elements(lowered)
        self.symbol_defaults = dict.fromkeys(unbound_symbols(lowered.program), 0)
        self._plans: OrderedDict = OrderedDict()
        self._planned = False  # a plan was made (the first one is the compiling call's)
        self._viewing = None  # the plan whose replay keeps views of the last call's tensors
        self._knobs = (object(), None, None, None, None)
        # sizes the program assumes equal, checked before anything runs (ir/guards.py)
        self.check_sizes = checker(lowered.program.guards, lowered.program.symbols)
        # calls whose control flow, addresses or size guards read elements walk the program each time
        self._walks_each_call = self.reads_elements or bool(getattr(self.check_sizes, "reads_elements", False))
        self._shares_written = shared_memory_test(lowered)

    @property
    def last(self):
        """(device tasks, RunInfo) of this thread's last call."""
        call = getattr(self._mine, "call", None)
        return call[0] if call is not None else None

    @property
    def last_stream(self):
        """The root stream of this thread's last call (what the timing simulator replays)."""
        call = getattr(self._mine, "call", None)
        return call[1] if call is not None else None

    @property
    def last_same(self):
        """Written parameters this thread's last call passed the very same tensor (value id pairs)."""
        call = getattr(self._mine, "call", None)
        return call[5] if call is not None else ()

    @property
    def last_memory(self):
        """The GM memory (caller's tensors and workspaces) of this thread's last call (made when
        first read: a cached call that nobody inspects does not build it)."""
        call = getattr(self._mine, "call", None)
        if call is None:
            return None
        if call[2] is None:
            if call[6]:  # the steps only this view reads (view_only_steps.py), run on first read
                pending, call[6] = call[6], ()
                run_steps(pending, call[4], None, direct=True)
            call[2] = Memory(call[3], call[4])
        return call[2]

    def _ran(self, last, stream, memory, same, layout=None, work=None) -> None:
        # one slot per call: [device tasks and info, stream, Memory or None (built from layout and
        # work when read), layout, work, same, steps left for that read to run first]
        self._mine.call = [last, stream, memory, layout, work, same, ()]

    def run(self, tensors: list, env: dict, options=None):
        """Execute with the caller's tensors and dynamic sizes; ``options`` are the resolved options
        of this call (runtime options such as stitching are read per call, not per compile)."""
        deferred = ()
        if self.check_sizes is not None:
            deferred = self.check_sizes(
                env, input_loader(self.lowered.program.params, self.lowered.written_params, tensors)
                if self.check_sizes.reads_elements else None) or ()
        knobs = self._knobs
        if knobs[0] is not options:  # read once per resolved options object
            if options is not None:
                knobs = (options, int(options.get("runtime", "stitch_function_max_num")),
                         bool(options.get("runtime", "valid_shape_optimize")),
                         bool(options.get("debug", "serial_execution")))
            else:
                knobs = (None, self.max_roots, self.vso, False)
            knobs += (knobs[1:3] + (False, ()),)  # a direct call's plan key, before the sizes
            self._knobs = knobs
        _, max_roots, vso, serial, _ = knobs
        if deferred:  # sizes only the run can decide: checked where their ops run, on restorable arguments
            return self._run_checked(tensors, env, options, deferred, max_roots, vso, serial)
        tensors, same, overlap = separate_overlaps(self.lowered, tensors)  # inputs as before any write
        serial = serial or overlap
        if self.reads_elements:
            return self._run_reading(tensors, env, max_roots, vso, serial, same)
        key = (max_roots, vso, serial, same, *env.values())
        plan = self._plans.get(key)
        if plan is None:
            with paused():  # tens of thousands of objects that stay: no collection scanning them
                plan = self._plan(tensors, env, max_roots, vso, serial, same)
            self._plans[key] = plan
            if len(self._plans) > PLAN_CACHE_SIZE:
                dropped = self._plans.popitem(last=False)[1]
                self.budget.forget(dropped)
                dropped.release()
        else:
            self._touch(key)
        return self._execute(plan, tensors, same, not (same or serial), options)

    def replay(self, tensors: list, sizes: tuple, options):
        """The cached call's run: ``run(tensors, env, options)`` for a call whose dynamic sizes
        ``sizes`` (``tuple(env.values())``) already have a plan under these very ``options``, when
        no written argument shares memory with another one; `DECLINED` (nothing done) otherwise,
        and ``run`` takes the call. The size guards passed when the plan was made (they depend on
        the sizes only, unless they read elements, which declines)."""
        knobs = self._knobs
        if knobs[0] is not options or knobs[3] or self._walks_each_call:
            return DECLINED
        key = knobs[4] + sizes
        plan = self._plans.get(key)
        if plan is None:
            return DECLINED
        replay = plan.replay
        if replay is not None:  # views of these tensors kept, or made now if no written one shares memory
            views = replay.views(tensors, True)
            if views is None:
                return DECLINED
            taken = plan.spare
            if taken is not None and taken[0] is None and not plan.layout.slabs and self._viewing is plan \
                    and not any(taken[1]):
                # no workspace, no temporary kept, the views of the last call: `_execute` reduced to
                # what such a call does (the one-tile kernel's whole cost is this bookkeeping)
                plan.spare = None
                self._touch(key)
                scratch = taken[1]
                replay(tensors, views, scratch)  # (no workspace: no step left for the memory view)
                if any(scratch):
                    self.budget.keep(plan, plan.offer([], scratch))
                else:
                    plan.spare = taken
                self._mine.call = [plan.head, plan.stream, None, plan.layout, tensors, (), ()]  # see _ran
                return self._returns(plan, tensors)
        else:
            shared = self._shares_written
            if shared is not None and shared(tensors):
                return DECLINED
            views = None
        self._touch(key)
        return self._execute(plan, tensors, (), True, options, views)

    def _touch(self, key) -> None:
        """``key``'s plan used last (the plan cache drops the least recently used first)."""
        try:
            self._plans.move_to_end(key)
        except KeyError:  # dropped by a concurrent call meanwhile: this call still has it
            pass

    def _returns(self, plan, tensors):
        """What a call of ``plan`` on ``tensors`` returns (after it ran)."""
        if not plan.returns:
            return None if plan.returns is None else []
        memory = self.last_memory
        return [self._result(v, tensors, memory, plan.final_env) for v in plan.returns]

    def _execute(self, plan, tensors, same, direct, options, views=None):
        taken, plan.spare = plan.spare, None  # taken, so a concurrent call allocates its own
        slabs, scratch = taken if taken is not None else (None, None)
        layout = plan.layout
        if slabs is None:
            if layout.slabs:  # a fresh workspace: within the memory budget (memory_budget.py) before allocating
                require_fits(layout.nbytes, "the workspace of this call", options)
                slabs = layout.allocate()
            else:
                slabs = []
        elif slabs:
            layout.refill(slabs)
        if scratch is None:
            scratch = [{} for _ in plan.folded]
        work = tensors + slabs if slabs else list(tensors)
        viewing = self._viewing
        if viewing is not plan:  # the views kept of the caller's tensors: the last plan's only
            if viewing is not None and viewing.replay is not None:
                viewing.replay.forget()
            self._viewing = plan
        if views is not None:  # the cached call: the replay is there and the views made
            plan.replay(work, views, scratch)
            pending = plan.replay.deferred
        else:
            pending = plan.run_steps(work, scratch, direct, None, self._shares_written)
        if slabs or any(scratch):
            self.budget.keep(plan, plan.offer(slabs, scratch))
        else:  # nothing to keep: the next call takes the same (empty) scratch, no bytes counted
            plan.spare = (None, scratch)
        self._mine.call = [plan.head, plan.stream, None, layout, work, same, pending]  # see _ran
        return self._returns(plan, tensors)

    def _run_checked(self, tensors, env, options, deferred, max_roots, vso, serial):
        """A call with guards the pre-run check could not decide (an offset read from an element the
        call writes first): the written arguments are saved, each guard is checked where its op
        runs (`ReadingStitcher`), and a mismatch puts the saved values back before it is raised,
        so a refused call changes nothing the caller passed."""
        written = self.lowered.written_params
        targets = [t for p, t in zip(self.lowered.program.params, tensors) if p.value.id in written]
        require_fits(sum(t.numel() * t.element_size() for t in targets),
                     "a copy of the written arguments (restored if a size check of the run fails)", options)
        saved = [(t, t.clone()) for t in targets]
        separated, same, overlap = separate_overlaps(self.lowered, tensors)
        try:
            return self._run_reading(separated, env, max_roots, vso, serial or overlap, same, deferred)
        except Exception:
            for t, copy in saved:
                t.copy_(copy)
            raise

    def _plan(self, tensors, env, max_roots, vso, serial, same=()) -> CallPlan:
        lowered = self.lowered

        def no_load(param, indices):
            raise KernelRuntimeError("internal: a program planned as not reading elements read one")

        stitcher = Stitcher(lowered, max_roots)
        env = {**self.symbol_defaults, **env}
        returns = walk(lowered.control, env, stitcher, no_load)
        stitcher.flush(marker=False)
        tasks = stitcher.tasks
        if same:
            remap_keys(tasks, same)
        layout = Layout(lowered, [tuple(t.shape) for t in tensors])
        note, known, aliased = layout.note, layout.buffers, layout.alias
        noted = set()  # workspace keys noted already: noting one again for a read changes nothing
        for t in tasks:
            call = t.call
            writes = call.writes
            if t.alias is not None:
                layout.note_aliases(t)
            p = 0
            for key in t.keys:
                if p in writes:
                    if key not in known and key not in aliased:  # (a parameter: note would do nothing)
                        note(key, call.args[p].value, t.root.env, math.prod(map(sub, t.ends[p], t.bases[p])))
                        noted.add(key)
                elif key not in noted and key not in known and key not in aliased:
                    note(key, call.args[p].value, t.root.env)
                    noted.add(key)
                p += 1
        layout.finish()
        level, edges = levels(tasks, RegionIndex())
        where = {}
        for d, dt in enumerate(stitcher.done):
            for k, t in enumerate(dt.tasks):
                where[t.id] = (d, k)
        for i, j, kind in edges:  # the device tasks show their own edges
            (di, ki), (dj, kj) = where[tasks[i].id], where[tasks[j].id]
            if di == dj:
                stitcher.done[di].edges.append((ki, kj, kind))
        memory = Memory(layout, None)
        planner = Planner(lowered, memory, no_load, vso, serial)
        steps = planner.plan(tasks, level if not serial else list(range(len(tasks))))
        info = RunInfo(steps, _order(steps, where), planner.variant_counts)
        replay_at = 2 if self._planned else 1
        self._planned = True
        return CallPlan(layout, steps, stitcher.stream, stitcher.done, returns, env, info,
                        replay_at=replay_at)

    def _run_reading(self, tensors, env, max_roots, vso, serial, same=(), deferred=()):
        """Programs whose control flow or addresses read tensor elements: walk on every call and run
        what is pending before each read. ``deferred``: guards checked before each root that runs
        the op they guard (at its loop indices, with the elements as they are then)."""
        lowered = self.lowered
        layout = Layout(lowered, [tuple(t.shape) for t in tensors])
        memory = Memory(layout, list(tensors), lazy=True)
        by_name = {p.value.name: t for p, t in zip(lowered.program.params, tensors)}
        pending: list = []
        all_steps: list = []
        variant_counts = {"main": 0, "tail": 0}

        def drain():
            if not pending:
                return
            batch = list(pending)
            pending.clear()
            level, _ = levels(batch, RegionIndex())
            planner = Planner(lowered, memory, load, vso, serial)
            steps = planner.plan(batch, level if not serial else list(range(len(batch))))
            for k, v in planner.variant_counts.items():
                variant_counts[k] += v
            run_steps(steps, memory.tensors, direct=not (same or serial))
            all_steps.extend(steps)

        def load(param, indices):
            drain()
            stitcher.loads.add(param)
            t = by_name[param]
            try:
                return int(t[tuple(indices)])
            except IndexError:
                raise KernelRuntimeError(f"element read out of range: {param}{list(indices)}",
                                         expected=f"indices within {list(t.shape)}", got=list(indices)) from None

        class ReadingStitcher(Stitcher):
            def add_root(self, index, env_, load_):
                if deferred:
                    guards = guarded.get(index)
                    if guards is None:
                        locs = {op.loc for call in lowered.roots[index].calls for op in call.leaf.ops}
                        guards = guarded[index] = tuple(g for g in deferred if g.loc in locs)
                    if guards:
                        runtime_check(guards, env_, load_)
                before = len(self.tasks)
                super().add_root(index, env_, load_)
                if same:
                    remap_keys(self.tasks[before:], same)
                for t in self.tasks[before:]:
                    layout.note_aliases(t)
                pending.extend(self.tasks[before:])

        guarded: dict = {}  # root index -> the deferred guards of its ops
        stitcher = ReadingStitcher(lowered, max_roots)
        env = {**self.symbol_defaults, **env}
        returns = walk(lowered.control, env, stitcher, load)
        stitcher.flush(marker=False)
        drain()
        where = {}
        for d, dt in enumerate(stitcher.done):
            for k, t in enumerate(dt.tasks):
                where[t.id] = (d, k)
        self._ran((stitcher.done, RunInfo(all_steps, _order(all_steps, where), variant_counts)), stitcher.stream,
                  memory, same)
        if returns is None:
            return None
        return [self._result(v, tensors, memory, env) for v in returns]

    def _stored(self, v, tensors, memory, env):
        """The tensor holding value ``v`` after the call (a view of its memory)."""
        if v.id in {p.value.id for p in self.lowered.program.params}:
            return next(t for t, p in zip(tensors, self.lowered.program.params) if p.value.id == v.id)
        scope = self.lowered.scopes.get(v.id)
        key = (v.id, tuple(env.get(n) for n in scope)) if scope is not None else v.id
        if key in memory.layout.buffers:
            return memory.instance(key, v, env)
        shape = [int(E.evaluate(s, env)) for s in v.shape]
        target = self.lowered.aliases.get(v.id)
        if target is not None:  # another value's memory seen with this shape (passes/aliasing.py)
            return self._stored(target, tensors, memory, env).reshape(shape)
        return torch.zeros(shape, dtype=v.dtype.torch())

    def _result(self, v, tensors, memory, env):
        for t, p in zip(tensors, self.lowered.program.params):
            if p.value.id == v.id:
                return t
        views = self.lowered.views
        chain = []
        while v.id in views:
            chain.append(views[v.id])
            v = views[v.id].inputs[0]
        base = self._stored(v, tensors, memory, env)
        from .plan import _evaluator
        ev = _evaluator(env, None)
        t = base
        for op in reversed(chain):
            t = REGISTRY["view"].compute([t], op.attrs, ev)
        target = chain[0].outputs[0] if chain else v
        valid = [int(E.evaluate(s, env)) for s in target.valid_shape]
        t = t[tuple(slice(0, n) for n in valid)]
        return t.clone()
