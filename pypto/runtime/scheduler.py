"""The timing simulator: a discrete-event model of the control AICPU, the schedule AICPU threads
and the AIC/AIV cores running the tasks of one kernel call.

It replays the root instances the control executor produced (their sizes and loop indices),
stitches them into device tasks under the runtime options, expands each call into one task per
tile with dependencies from overlapping GM regions, and schedules them:

* control AICPU: stitches each root (``root_stitch_cycles``, divided by
  ``device_sched_parallelism`` inside ``pypto.loop(parallel=True)``), builds and submits a device
  task when it holds ``stitch_function_max_num`` roots, at a flush (``submit_before_loop``), at
  the end, or early when every core is idle; control flow that read tensor elements waits for the
  device unless the tensor is in ``ready_on_host_tensors``;
* ``launch_sched_aicpu_num`` schedule threads, each owning a slice of the cores, pay
  dispatch/completion/resolve cycles; ``device_sched_mode`` 0 shared FIFO, 1 L2 affinity (a newly
  ready task goes straight to an idle core, else the queue is served newest first), 2 fair (a
  thread fills only fully idle cores, with extra bookkeeping), 3 both;
* each core has a running and a pending slot; a task's cost comes from the cost model, with
  copy-ins that hit L2 (data another task wrote or read recently) paying less.
"""

from __future__ import annotations

import heapq
import math
from collections import OrderedDict, deque

from .._lazy import LazyModule
from ..errors import KernelRuntimeError
from ..ir import expr as E
from .control import evaluate_call
from .costmodel import leaf_schedule
from .timeline import AicpuEvent, TaskEvent, Timeline

np = LazyModule("numpy")


class _Tasks:
    """Tile-level tasks of a call, with their costs' inputs and dependency edges."""

    def __init__(self):
        self.core_type, self.leaf, self.root, self.call = [], [], [], []
        self.elems, self.reads, self.writes, self.dynamic, self.full = [], [], [], [], []
        self.succ, self.npred, self.edges = [], [], []
        self.by_root: dict = {}
        self._regions: dict = {}  # storage key -> [(first task, lo [m,r], hi [m,r], write)]

    def __len__(self):
        return len(self.leaf)

    def add_call(self, seq, root_env, call, vso, memory_key, read=None):
        load = (lambda param, indices: read[(param, tuple(indices))]) if read else None
        extents, points, offsets, valid, tiles = evaluate_call(call, root_env, load)
        m = points.shape[0]
        if m == 0:
            return
        first = len(self.leaf)
        leaf = call.leaf
        elems = np.ones((m, len(call.args)), dtype=np.int64)
        full = np.ones(m, dtype=bool)
        for k in range(len(call.args)):
            elems[:, k] = valid[k].prod(axis=1) if valid[k].shape[1] else 1
            full &= (valid[k] == np.array(tiles[k], dtype=np.int64)).all(axis=1) if valid[k].shape[1] else True
        symbolic = any(isinstance(x, E.Expr) for a in call.args for x in a.base + a.extent + a.shape)
        keys = [memory_key(a.value, seq) for a in call.args]
        for i in range(m):
            self.core_type.append(leaf.core)
            self.leaf.append(leaf)
            self.root.append(seq)
            self.call.append(call)
            self.elems.append(tuple(elems[i].tolist()))
            self.reads.append(tuple((k, keys[k], tuple(offsets[k][i].tolist())) for k in range(len(call.args))
                                    if k not in call.writes))
            self.writes.append(tuple((k, keys[k], tuple(offsets[k][i].tolist())) for k in call.writes))
            self.full.append(bool(full[i]))
            self.dynamic.append(symbolic and not (vso and full[i]))
            self.succ.append([])
            self.npred.append(0)
        self.by_root.setdefault(seq, []).extend(range(first, first + m))
        for k, a in enumerate(call.args):
            self._depend(first, m, keys[k], offsets[k], offsets[k] + valid[k], k in call.writes)

    def _depend(self, first, m, key, lo, hi, write):
        """Edges from earlier accesses of GM buffer ``key`` whose tiles overlap these (m tiles).

        Earlier accesses are kept sorted by where they start in dim 0, so only those that can
        reach this access's rows are compared: a long loop over disjoint rows stays linear.
        """
        index = self._regions.setdefault(key, _RegionIndex())
        blo, bhi = lo.min(axis=0), hi.max(axis=0)
        for pfirst, plo, phi, pwrite, pblo, pbhi in index.candidates(int(blo[0]) if len(blo) else 0,
                                                                    int(bhi[0]) if len(bhi) else 1):
            if not (pwrite or write):
                continue
            if not (all(a < b for a, b in zip(pblo, bhi)) and all(a < b for a, b in zip(blo, pbhi))):
                continue
            overlap = np.all((plo[:, None, :] < hi[None, :, :]) & (lo[None, :, :] < phi[:, None, :]), axis=2)
            kind = "RAW" if pwrite and not write else ("WAR" if write and not pwrite else "WAW")
            for i, j in zip(*np.nonzero(overlap)):
                a, b = pfirst + int(i), first + int(j)
                if a == b:
                    continue
                self.succ[a].append(b)
                self.npred[b] += 1
                self.edges.append((a, b, kind))
        index.add((first, lo, hi, write, blo.tolist(), bhi.tolist()))


class _RegionIndex:
    """Accesses of one GM buffer, sorted by their first row (dim 0) for range queries."""

    def __init__(self):
        self.starts: list = []
        self.items: list = []
        self.longest = 0

    def candidates(self, lo0: int, hi0: int):
        import bisect

        a = bisect.bisect_left(self.starts, lo0 - self.longest)
        b = bisect.bisect_left(self.starts, hi0)
        return self.items[a:b]

    def add(self, item):
        import bisect

        start = int(item[4][0]) if item[4] else 0
        end = int(item[5][0]) if item[5] else 1
        self.longest = max(self.longest, end - start)
        i = bisect.bisect_right(self.starts, start)
        self.starts.insert(i, start)
        self.items.insert(i, item)


class _L2:
    """An LRU of GM tiles by bytes: a copy-in of a tile still resident is an L2 hit."""

    def __init__(self, capacity):
        self.capacity, self.used, self.lines = capacity, 0, OrderedDict()

    def hit(self, key) -> bool:
        if key in self.lines:
            self.lines.move_to_end(key)
            return True
        return False

    def touch(self, key, nbytes):
        if key in self.lines:
            self.lines.move_to_end(key)
            return
        self.lines[key] = nbytes
        self.used += nbytes
        while self.used > self.capacity and self.lines:
            _, b = self.lines.popitem(last=False)
            self.used -= b


class _Core:
    __slots__ = ("name", "type", "thread", "running", "pending", "free_at")

    def __init__(self, name, type_, thread):
        self.name, self.type, self.thread = name, type_, thread
        self.running = None
        self.pending = None
        self.free_at = 0


def simulate(lowered, stream, runtime: dict, machine, memory_key) -> Timeline:
    """The timeline of one call: ``stream`` is the control executor's record of root instances."""
    return _Sim(lowered, stream, runtime, machine, memory_key).run()


class _Sim:
    def __init__(self, lowered, stream, runtime, machine, memory_key):
        self.lowered, self.stream, self.m = lowered, stream, machine
        self.opts = dict(runtime)
        self.mode = int(runtime.get("device_sched_mode", 0))
        self.affinity = self.mode in (1, 3)
        self.fair = self.mode in (2, 3)
        self.max_roots = int(runtime.get("stitch_function_max_num", 128))
        self.parallelism = int(runtime.get("device_sched_parallelism", 1))
        self.host_ready = set(runtime.get("ready_on_host_tensors", ()) or ())
        self.vso = bool(runtime.get("valid_shape_optimize", 0))
        n_threads = max(1, min(int(runtime.get("launch_sched_aicpu_num", 7)), machine.max_sched_aicpu))
        self.n_threads = n_threads
        early = int(runtime.get("launch_early_mode", 0)) == 1
        self.t_cores = machine.launch_cycles
        self.t_ctrl0 = 0 if early else machine.launch_cycles
        self.cores = [_Core(f"AIC{i}", "AIC", i % n_threads) for i in range(machine.aic_cores)] + \
                     [_Core(f"AIV{i}", "AIV", i % n_threads) for i in range(machine.aiv_cores)]
        for c in self.cores:
            c.free_at = self.t_cores
        self.thread_cores = [[c for c in self.cores if c.thread == t] for t in range(n_threads)]
        self.memory_key = memory_key
        self.tasks = _Tasks()
        self.roots = []  # per root instance: (seq, index, env, loads, parallel)
        seq = 0
        for item in stream:
            if item[0] == "root":
                _, index, env, loads, parallel, read = item
                for call in lowered.roots[index].calls:
                    self.tasks.add_call(seq, env, call, self.vso, memory_key, read)
                self.roots.append((seq, index, env, loads, parallel))
                seq += 1
            else:
                self.roots.append(None)  # a flush marker
        self.l2 = _L2(machine.l2_bytes)
        self.cost_cache: dict = {}

    # ---- event loop ----------------------------------------------------------------------------
    def push(self, t, kind, data=None):
        self._seq += 1
        heapq.heappush(self.heap, (t, self._seq, kind, data))

    def run(self) -> Timeline:
        n = len(self.tasks)
        self.heap, self._seq = [], 0
        self.npred = list(self.tasks.npred)
        self.task_dt = [-1] * n
        self.dt_submitted: list = []
        self.dt_tasks: list = []
        self.queue = {"AIC": deque(), "AIV": deque()}
        self.thread_free = [self.t_cores] * self.n_threads
        self.thread_wake = [False] * self.n_threads
        self.dispatches = [0] * self.n_threads
        self.events, self.aicpu = [], []
        self.outstanding = 0  # submitted, not finished
        self.finished = 0
        self.pos = 0
        self.cur_dt = None
        self.ctrl_time = self.t_ctrl0
        self.ctrl_waiting = False
        self.waited = False
        self.l2_hits = self.l2_reads = 0
        self.wait_cycles = 0
        self.push(self.t_ctrl0, "CTRL")
        while self.heap:
            t, _, kind, data = heapq.heappop(self.heap)
            getattr(self, "on_" + kind)(t, data)
        if self.finished != n:
            raise KernelRuntimeError("internal: the timing simulation stopped with unfinished tasks",
                                     got=f"{self.finished} of {n} finished")
        extra = {"dispatches_per_thread": list(self.dispatches), "l2_hit_rate":
                 (self.l2_hits / self.l2_reads) if self.l2_reads else 0.0, "control_wait_cycles": self.wait_cycles}
        return Timeline(self.events, list(self.tasks.edges), self.aicpu, self.m, self.opts, len(self.dt_tasks), extra)

    # ---- control AICPU -------------------------------------------------------------------------
    def on_CTRL(self, t, _):
        t = max(t, self.ctrl_time)
        if self.cur_dt is not None and self.cores_idle(t):  # the cores went idle during the last stitch
            t = self.submit(t)
        while self.pos < len(self.roots):
            item = self.roots[self.pos]
            if item is None:  # flush
                self.pos += 1
                t = self.submit(t)
                continue
            seq, index, env, loads, parallel = item
            if loads - self.host_ready and not self.waited and (self.outstanding or self.pending_unsubmitted()):
                if self.pending_unsubmitted():
                    t = self.submit(t)
                self.ctrl_waiting = True  # resumed when the device has finished everything
                self.ctrl_time = t
                return
            self.waited = False
            cost = self.m.root_stitch_cycles / (self.parallelism if parallel else 1)
            self.aicpu.append(AicpuEvent("control", "stitch", int(t), int(t + cost),
                                         f"root{seq} ({self.lowered.roots[index].name})"))
            t += cost
            if self.cur_dt is None:
                self.cur_dt = len(self.dt_tasks)
                self.dt_tasks.append([])
                self.dt_submitted.append(False)
                self.dt_roots = 0
            for k in self.tasks.by_root.get(seq, ()):
                self.task_dt[k] = self.cur_dt
                self.dt_tasks[self.cur_dt].append(k)
            self.dt_roots += 1
            self.pos += 1
            if self.dt_roots >= self.max_roots:
                t = self.submit(t)
            # one root per event: the device's progress up to t is known before the next decision
            self.ctrl_time = t
            self.push(t, "CTRL")
            return
        t = self.submit(t)
        self.ctrl_time = t

    def pending_unsubmitted(self):
        return self.cur_dt is not None

    def cores_idle(self, t) -> bool:
        return self.outstanding == 0 and not self.queue["AIC"] and not self.queue["AIV"]

    def submit(self, t):
        if self.cur_dt is None:
            return t
        dt = self.cur_dt
        end = t + self.m.device_task_build_cycles + self.m.submit_cycles
        self.aicpu.append(AicpuEvent("control", "submit", int(t), int(end),
                                     f"device task {dt}: {len(self.dt_tasks[dt])} tasks"))
        self.outstanding += len(self.dt_tasks[dt])
        self.push(end, "SUBMIT", dt)
        self.cur_dt = None
        return end

    def on_SUBMIT(self, t, dt):
        self.dt_submitted[dt] = True
        for k in self.dt_tasks[dt]:
            if self.npred[k] == 0:
                self.make_ready(k, t, None)
        self.wake_all(t)
        if not self.dt_tasks[dt]:
            self.check_wait(t)

    # ---- schedule threads ----------------------------------------------------------------------
    def make_ready(self, k, t, thread):
        ctype = self.tasks.core_type[k]
        if self.affinity and thread is not None:
            core = next((c for c in self.thread_cores[thread] if c.type == ctype and c.running is None), None) \
                or next((c for c in self.cores if c.type == ctype and c.running is None), None)
            if core is not None:
                t0 = max(t, self.thread_free[thread]) + self.m.dispatch_cycles
                self.thread_free[thread] = t0
                self.dispatches[thread] += 1
                self.start(core, k, max(t0, core.free_at), thread)
                return
        self.queue[ctype].append(k)

    def wake_all(self, t):
        if not (self.queue["AIC"] or self.queue["AIV"]):
            return
        for th in range(self.n_threads):
            if not self.thread_wake[th]:
                self.thread_wake[th] = True
                self.push(max(t, self.thread_free[th]), "THREAD", th)

    def on_THREAD(self, t, th):
        self.thread_wake[th] = False
        t0 = max(t, self.thread_free[th])
        began = t0
        for core in self.thread_cores[th]:
            q = self.queue[core.type]
            while q:
                if core.running is None:
                    slot = "run"
                elif core.pending is None and not self.fair:
                    slot = "pend"
                else:
                    break
                k = q.pop() if self.affinity else q.popleft()
                t0 += self.m.dispatch_cycles + (self.m.fair_extra_cycles if self.fair else 0)
                self.dispatches[th] += 1
                if slot == "run":
                    self.start(core, k, max(t0, core.free_at), th)
                else:
                    core.pending = (k, th, t0)  # starts when the core frees, not before its dispatch
        if t0 > began:
            self.aicpu.append(AicpuEvent(f"sched{th}", "dispatch", int(began), int(t0)))
        self.thread_free[th] = t0

    # ---- cores ---------------------------------------------------------------------------------
    def start(self, core, k, t, thread):
        dur, pipes, hits = self.cost(k)
        core.running = (k, t, t + dur, thread, pipes, hits)
        self.push(t + dur, "DONE", core)

    def cost(self, k):
        tasks = self.tasks
        leaf = tasks.leaf[k]
        hits = []
        for argk, key, lo in tasks.reads[k]:
            line = (key, lo)
            self.l2_reads += 1
            h = self.l2.hit(line)
            self.l2_hits += h
            hits.append(h)
            self.l2.touch(line, tasks.elems[k][argk] * leaf.params[argk][1].itemsize)
        ckey = (leaf.name, tasks.elems[k], tuple(hits), tasks.dynamic[k])
        got = self.cost_cache.get(ckey)
        if got is None:
            got = self.cost_cache[ckey] = self._leaf_cost(leaf, tasks.elems[k], hits, tasks.dynamic[k])
        return got[0], got[1], sum(hits)

    def _leaf_cost(self, leaf, elems, hits, dynamic):
        # elements per access of every op: GM params exactly; local tiles scaled like the params
        param_tile = [math.prod(s if isinstance(s, int) else 1 for s in shape) for _, _, shape in leaf.params]
        frac = min((e / t for e, t in zip(elems, param_tile) if t), default=1.0)
        sizes, l2 = [], []
        read_iter = iter(hits)
        for i, op in enumerate(leaf.ops):
            row = []
            hit = False
            for role, accs in (("in", op.inputs), ("out", op.outputs)):
                for j, a in enumerate(accs):
                    p = leaf.param_of.get((i, role, j))
                    if p is not None:
                        row.append(elems[p])
                        if role == "in":
                            hit = next(read_iter, False)
                    else:
                        row.append(max(1, int(math.prod(s if isinstance(s, int) else 1 for s in a.shape) * frac)))
            sizes.append(row)
            l2.append(hit)
        dur, busy = leaf_schedule(self.m, leaf, sizes, l2, dynamic)
        return max(1, int(dur)), tuple((p, int(c)) for p, c in busy.items() if c)

    def on_DONE(self, t, core):
        k, start, end, thread, pipes, hits = core.running
        tasks = self.tasks
        seq = tasks.root[k]
        root = self.roots_by_seq(seq)
        self.events.append(TaskEvent(k, core.name, core.type, tasks.leaf[k].name, seq,
                                     self.lowered.roots[root[1]].name, _loop_indices(self.lowered, root[2]),
                                     self.task_dt[k], thread, int(start), int(end), pipes, hits,
                                     ("main" if tasks.full[k] else "tail") if self.vso else ""))
        leaf = tasks.leaf[k]
        for argk, key, lo in tasks.writes[k]:  # written tiles occupy L2 like read ones
            self.l2.touch((key, lo), tasks.elems[k][argk] * leaf.params[argk][1].itemsize)
        self.finished += 1
        self.outstanding -= 1
        core.running = None
        core.free_at = t
        owner = core.thread
        tt = max(t, self.thread_free[owner]) + self.m.completion_cycles
        succ = tasks.succ[k]
        if succ:
            tt += self.m.resolve_cycles
        self.aicpu.append(AicpuEvent(f"sched{owner}", "complete", int(max(t, self.thread_free[owner])), int(tt),
                                     f"task {k}"))
        self.thread_free[owner] = tt
        if core.pending is not None:
            pk, pth, pt = core.pending
            core.pending = None
            self.start(core, pk, max(t, pt), pth)
        for j in succ:
            self.npred[j] -= 1
            if self.npred[j] == 0 and self.task_dt[j] >= 0 and self.dt_submitted[self.task_dt[j]]:
                self.make_ready(j, tt, owner)
        self.wake_all(tt)
        self.check_wait(t)

    def check_wait(self, t):
        if self.ctrl_waiting and self.outstanding == 0:
            self.ctrl_waiting = False
            self.waited = True
            resume = max(t, self.ctrl_time) + self.m.wait_device_cycles
            self.aicpu.append(AicpuEvent("control", "wait device", int(self.ctrl_time), int(resume),
                                         "control flow reads tensor values"))
            self.wait_cycles += resume - self.ctrl_time
            self.push(resume, "CTRL")

    def roots_by_seq(self, seq):
        if not hasattr(self, "_by_seq"):
            self._by_seq = {r[0]: r for r in self.roots if r is not None}
        return self._by_seq[seq]


def _loop_indices(lowered, env) -> tuple:
    names = getattr(lowered, "_loop_index_names", None)
    if names is None:
        from ..ir.graph import iter_items, Loop

        names = tuple(dict.fromkeys(x.index for x in iter_items(lowered.program.body) if isinstance(x, Loop)))
        lowered._loop_index_names = names
    return tuple((n, env[n]) for n in names if n in env)
