"""The timing simulator: a discrete-event model of the control AICPU, the schedule AICPU threads
and the AIC/AIV cores running the tasks of one kernel call.

It replays the root instances the control executor produced (their sizes and loop indices),
stitches them into device tasks under the runtime options, expands each call into one task per
tile with dependencies from overlapping GM regions (`tasks.py`, `regions.py`), and schedules them:

* control AICPU: stitches each root (``root_stitch_cycles``, divided by
  ``device_sched_parallelism`` inside ``pypto.loop(parallel=True)``), builds and submits a device
  task when it holds ``stitch_function_max_num`` roots, at a flush (``submit_before_loop``) or at
  the end (never early: device tasks run one after another with a synchronisation between them,
  so a half-full one would cut the parallelism upstream's stitch guide says stitching buys);
  control flow that read tensor elements waits for the device unless the tensor is in
  ``ready_on_host_tensors``;
* ``launch_sched_aicpu_num`` schedule threads, each owning a slice of the cores, pay
  dispatch/completion/resolve cycles; ``device_sched_mode`` 0 shared FIFO, 1 L2 affinity (a newly
  ready task goes straight to an idle core, else the queue is served newest first), 2 fair (a
  thread fills only fully idle cores, with extra bookkeeping), 3 both;
* each core has a running and a pending slot; a task's cost comes from the cost model, with
  copy-ins that hit L2 (data another task wrote or read recently) paying less.

Everything per task lives in flat arrays (`array.array` in the event loop, numpy around it); the
loop does a handful of heap operations per task. A schedule thread is woken after every event
that may give it work, as a heap event; when it provably has nothing to do at that moment, the
wake is kept aside with its place in the event order (time, sequence number) instead of being
pushed, and pushed with that same place if work arrives before its time (identical schedules,
far fewer events).
"""

from __future__ import annotations

import copy
from collections import OrderedDict

import numpy as np  # imported with the simulator, never by `import pypto`
import math
from array import array
from dataclasses import replace
from heapq import heappop, heappush

from ..errors import KernelRuntimeError
from .costmodel import leaf_schedule
from .eventlog import AicpuSpans, DepEdges, TaskEvents
from .stream import RootStream
from .tasks import TaskBuilder
from .timeline import Timeline


_CTRL, _SUBMIT, _THREAD, _DONE, _OPEN = 0, 1, 2, 3, 4
_STITCH, _SUBMIT_SPAN, _DISPATCH, _COMPLETE, _WAIT = 0, 1, 2, 3, 4  # eventlog.SPAN_NAMES


def simulate(lowered, stream, runtime: dict, machine, memory_key) -> Timeline:
    """The timeline of one call: ``stream`` is the control executor's record of root instances
    (a `RootStream`, or a list of its ``("root", ...)`` / ``("flush",)`` tuples)."""
    replay = _Replay(lowered, stream, bool(runtime.get("valid_shape_optimize", 0)), memory_key)
    return _Sim(lowered, replay, runtime, machine).run()


class Replayer:
    """One call's root instances and tasks, built once and simulated under many runtime options
    (a tuning sweep): building the tasks costs several times more than scheduling them. The
    tasks depend only on ``valid_shape_optimize``, so one table is kept per value of it.

    What does not depend on the runtime options is kept across simulations: the task table, the
    cost of each task class under each L2 hit pattern (per machine), and the schedule itself
    under options that cannot change it (`_Replay.schedule_key`: e.g. a stitch limit above the
    call's root count, or the parallelism of a call with no parallel loop), so an equivalent
    configuration is answered without simulating again."""

    # schedules kept for equivalent options (of the last machine simulated only: a calibration
    # fit simulates each candidate machine once), bounded by their tasks (~70 bytes each)
    KEEP_TASKS = 500_000
    KEEP_TIMELINES = 256

    def __init__(self, lowered, stream, memory_key):
        self.lowered, self.stream, self.memory_key = lowered, stream, memory_key
        self._replays: dict = {}
        self._costs: dict = {}  # vso -> _Costs of the last machine simulated
        self._schedules: OrderedDict = OrderedDict()  # (vso, machine id, schedule key) -> (machine, Timeline)
        self._kept_tasks = 0

    def schedule_keyer(self, machine) -> "ScheduleKey":
        """The `ScheduleKey` of this call on ``machine`` (the roots do not depend on
        ``valid_shape_optimize``: any task table built so far answers)."""
        replay = next(iter(self._replays.values()), None)
        if replay is None:
            replay = self._replays[False] = _Replay(self.lowered, self.stream, False, self.memory_key)
        return replay.schedule_keyer(machine)

    def simulate(self, runtime: dict, machine) -> Timeline:
        """The timeline under ``runtime`` (a full runtime-option dict) on ``machine``; the same
        as `simulate` with these arguments."""
        vso = bool(runtime.get("valid_shape_optimize", 0))
        replay = self._replays.get(vso)
        if replay is None:
            replay = self._replays[vso] = _Replay(self.lowered, self.stream, vso, self.memory_key)
        skey = replay.schedule_key(runtime, machine)
        if self._schedules and next(reversed(self._schedules.values()))[0] is not machine:
            self._schedules.clear()  # another machine: its schedules are all new
            self._kept_tasks = 0
        if skey is not None:
            key = (vso, id(machine), skey)
            hit = self._schedules.get(key)
            if hit is not None and hit[0] is machine:
                self._schedules.move_to_end(key)
                return _same_schedule(hit[1], runtime)
        costs = self._costs.get(vso)
        if costs is None or costs.machine is not machine:
            costs = self._costs[vso] = _Costs(machine)
        fresh = copy.copy(replay)
        # the scheduler counts down each task's predecessors in place: give it its own counts
        fresh.tasks = replace(replay.tasks, npred=replay.tasks.npred.copy())
        timeline = _Sim(self.lowered, fresh, runtime, machine, costs).run()
        if skey is not None and replay.tasks.n <= self.KEEP_TASKS:
            self._schedules[key] = (machine, timeline)
            self._kept_tasks += replay.tasks.n
            while self._kept_tasks > self.KEEP_TASKS or len(self._schedules) > self.KEEP_TIMELINES:
                _, (_, old) = self._schedules.popitem(last=False)
                self._kept_tasks -= len(old.events)
        return timeline


def _same_schedule(timeline: Timeline, runtime: dict) -> Timeline:
    """A Timeline of the same schedule as ``timeline`` (its columns shared: nobody writes them),
    recorded under ``runtime``, with a copy of its stats (computed once per schedule)."""
    got = Timeline(timeline.events, timeline.deps, timeline.aicpu, timeline.machine, dict(runtime),
                   timeline.device_tasks, _copied(timeline.extra_stats))
    got.__dict__["stats"] = _copied(timeline.stats)
    got.__dict__["critical_path_cycles"] = timeline.critical_path_cycles
    return got


def _copied(stats: dict) -> dict:
    """A copy of a stats dict that shares nothing a caller could change (its values are numbers,
    or dicts and lists of numbers)."""
    return {k: (v.copy() if isinstance(v, (dict, list)) else v) for k, v in stats.items()}


class _Costs:
    """Task costs on one machine, per (task class, L2 hit pattern of its reads), filled in as the
    simulations meet them: they depend on neither the runtime options nor the schedule."""

    def __init__(self, machine):
        self.machine = machine
        self.index: dict = {}  # (hit mask << 24) | class -> row
        self.dur, self.pipes, self.hits = [], [], []
        self.tail, self.lead, self.hbm = [], [], []  # after the last read; before the first compute; HBM cycles


class _Replay:
    """The root instances to stitch, in order, and their tasks."""

    def __init__(self, lowered, stream, vso, memory_key):
        builder = TaskBuilder(lowered, vso, memory_key)
        self.items = array("q")  # root sequence number, or -1 for a flush marker
        self.index, self.parallel, self.loads = array("i"), array("b"), []
        envs = None if isinstance(stream, RootStream) else []  # a RootStream keeps them compactly
        self.env = stream.env if envs is None else envs.__getitem__
        for item in stream:
            if item[0] != "root":
                self.items.append(-1)
                continue
            _, index, env, loads, parallel, read = item
            self.items.append(len(self.index))
            self.index.append(index)
            self.parallel.append(bool(parallel))
            self.loads.append(loads)
            if envs is not None:
                envs.append(env)
            builder.add_root(index, env, read)
        self.tasks = builder.finish()
        self.any_parallel = any(self.parallel)
        self.all_loads = frozenset().union(*self.loads) if self.loads else frozenset()

    def schedule_key(self, runtime: dict, machine):
        """`ScheduleKey` of these roots on ``machine``, applied to ``runtime``."""
        return self.schedule_keyer(machine)(runtime)

    def schedule_keyer(self, machine) -> "ScheduleKey":
        return ScheduleKey(len(self.index), self.any_parallel, self.all_loads, machine.max_sched_aicpu)


class ScheduleKey:
    """What of the runtime options the schedule of one call's roots on one machine depends on:
    called with a runtime-option dict, a hashable value (two option sets with one key give the same
    schedule, to the cycle), or None when the options are not plain enough to say. Small and
    picklable: a tuning sweep's driver groups configurations by it before sending them to workers."""

    __slots__ = ("n_roots", "any_parallel", "loads", "max_sched_aicpu")

    def __init__(self, n_roots: int, any_parallel: bool, loads: frozenset, max_sched_aicpu: int):
        self.__setstate__((n_roots, any_parallel, loads, max_sched_aicpu))

    def __getstate__(self):
        return (self.n_roots, self.any_parallel, self.loads, self.max_sched_aicpu)

    def __setstate__(self, state):
        self.n_roots, self.any_parallel, self.loads, self.max_sched_aicpu = state

    def __call__(self, runtime: dict):
        try:
            mode = int(runtime.get("device_sched_mode", 0))
            max_roots = int(runtime.get("stitch_function_max_num", 128))
            parallelism = int(runtime.get("device_sched_parallelism", 1))
            threads = max(1, min(int(runtime.get("launch_sched_aicpu_num", 7)), self.max_sched_aicpu))
            early = int(runtime.get("launch_early_mode", 0)) == 1
            host = frozenset(runtime.get("ready_on_host_tensors", ()) or ())
        except (TypeError, ValueError):
            return None
        # a device task is cut when it holds max_roots roots: any limit above the root count never
        # cuts one, and a limit of 1 or less cuts after every root
        max_roots = min(max(max_roots, 1), self.n_roots + 1)
        if parallelism <= 0:
            return None  # the simulation says what is wrong with it
        # the parallelism divides only the stitch cost of roots in a parallel loop; the host-ready
        # tensors matter only among those some root's control flow loads
        return (mode in (1, 3), mode in (2, 3), max_roots, parallelism if self.any_parallel else 0, threads, early,
                host & self.loads)


class _Sim:
    def __init__(self, lowered, replay, runtime, machine, costs=None):
        self.lowered, self.replay, self.m = lowered, replay, machine
        self.costs = costs if costs is not None else _Costs(machine)
        self.opts = dict(runtime)
        mode = int(runtime.get("device_sched_mode", 0))
        self.affinity, self.fair = mode in (1, 3), mode in (2, 3)
        self.max_roots = int(runtime.get("stitch_function_max_num", 128))
        self.parallelism = int(runtime.get("device_sched_parallelism", 1))
        self.host_ready = set(runtime.get("ready_on_host_tensors", ()) or ())
        self.vso = bool(runtime.get("valid_shape_optimize", 0))
        self.n_threads = max(1, min(int(runtime.get("launch_sched_aicpu_num", 7)), machine.max_sched_aicpu))
        self.early = int(runtime.get("launch_early_mode", 0)) == 1

    def run(self) -> Timeline:  # noqa: C901 - one loop, kept in one frame for speed
        m, tasks, replay = self.m, self.replay.tasks, self.replay
        n = tasks.n
        nth = self.n_threads
        affinity, fair = self.affinity, self.fair
        t_cores = m.launch_cycles
        t_ctrl0 = 0 if self.early else m.launch_cycles
        scale = m.aicpu_task_scale
        # whole cycles: a fitted scale must not make the schedule's times fractional
        dispatch_cost = round((m.dispatch_cycles + (m.fair_extra_cycles if fair else 0)) * scale)
        make_dispatch = round(m.dispatch_cycles * scale)
        completion, resolve = round(m.completion_cycles * scale), round(m.resolve_cycles * scale)

        # ---- cores: AIC0.. then AIV0..; core i of a type belongs to thread i % nth ----------------
        n_aic, n_aiv = m.aic_cores, m.aiv_cores
        ncores = n_aic + n_aiv
        core_type = [0] * n_aic + [1] * n_aiv
        core_thread = [i % nth for i in range(n_aic)] + [i % nth for i in range(n_aiv)]
        core_names = [f"AIC{i}" for i in range(n_aic)] + [f"AIV{i}" for i in range(n_aiv)]
        type_cores = [list(range(n_aic)), list(range(n_aic, ncores))]
        thread_cores = [[[c for c in type_cores[ty] if core_thread[c] == th] for ty in (0, 1)] for th in range(nth)]
        tbit = [0] * ncores  # bit of a core among its thread's cores of its type
        gbit = [0] * ncores  # bit of a core among all cores of its type
        for th in range(nth):
            for ty in (0, 1):
                for p, c in enumerate(thread_cores[th][ty]):
                    tbit[c] = 1 << p
        for ty in (0, 1):
            for p, c in enumerate(type_cores[ty]):
                gbit[c] = 1 << p
        # free: a slot a thread may fill (running, or pending unless fair); idle: running empty
        free = [[(1 << len(thread_cores[th][ty])) - 1 for ty in (0, 1)] for th in range(nth)]
        idle = [[(1 << len(thread_cores[th][ty])) - 1 for ty in (0, 1)] for th in range(nth)]
        gidle = [(1 << n_aic) - 1, (1 << n_aiv) - 1]
        run_task, run_start, run_thread, run_cost = [-1] * ncores, [0] * ncores, [0] * ncores, [0] * ncores
        run_hbm = [False] * ncores  # the running task ends when HBM has carried its bytes
        pend_task, pend_thread, pend_t0 = [-1] * ncores, [0] * ncores, [0] * ncores
        free_at = [t_cores] * ncores

        # ---- tasks: memoryviews over the table's numpy columns (Python ints, no copies) ------------
        classes = tasks.classes
        cls = memoryview(tasks.cls)
        aiv = np.asarray([c.leaf.core == "AIV" for c in classes] or [False], dtype=np.int8)
        ttype_np = aiv[tasks.cls]
        ttype = memoryview(ttype_np)
        rptr, rline = memoryview(tasks.read_ptr), memoryview(tasks.read_line)
        wptr, wline = memoryview(tasks.write_ptr), memoryview(tasks.write_line)
        sptr, succ = memoryview(tasks.succ_ptr), memoryview(tasks.succ)
        npred_np = tasks.npred
        npred = memoryview(npred_np)
        cls_rb = [c.read_bytes for c in classes]
        cls_wb = [c.write_bytes for c in classes]
        cls_nr = [len(c.read_bytes) for c in classes]
        root_first = tasks.root_first.tolist()

        # ---- L2: an LRU of GM tiles by bytes -----------------------------------------------------
        # order[p - base] is the line touched at stamp p; a line is resident with stamp[line] >= 0,
        # and only its latest stamp counts; eviction walks the stamps from the oldest
        stamp = array("q", [-1]) * tasks.n_lines
        line_bytes = array("q", [0]) * tasks.n_lines
        order = array("i")
        l2 = [0, 0, m.l2_bytes, 0]  # head (oldest stamp not yet examined), base (stamp of order[0]), capacity, used

        def touch(line, nbytes):
            """Mark ``line`` most recent; True if it was resident (an L2 hit)."""
            pos = l2[1] + len(order)
            order.append(line)
            if stamp[line] >= 0:
                stamp[line] = pos
                return True
            stamp[line] = pos
            line_bytes[line] = nbytes
            used = l2[3] + nbytes
            if used > l2[2]:
                head, base = l2[0], l2[1]
                while used > l2[2] and head <= pos:
                    old = order[head - base]
                    if stamp[old] == head:
                        stamp[old] = -1
                        used -= line_bytes[old]
                    head += 1
                if head - base > 65536 and 2 * (head - base) > len(order):
                    del order[:head - base]
                    l2[1] = head
                l2[0] = head
            l2[3] = used
            return False

        # ---- costs, per (class, L2 hit pattern) ----------------------------------------------------
        costs = self.costs
        cost_of = costs.index
        cost_dur, cost_pipes, cost_hits = costs.dur, costs.pipes, costs.hits
        cost_tail, cost_lead, cost_hbm = costs.tail, costs.lead, costs.hbm
        hbm_bw = m.hbm_bw
        overlap = m.overlap_pending_loads
        hbm = [0.0]  # when the chip's HBM has carried everything asked of it so far (a fluid FIFO)

        def new_cost(c, mask, nr):
            """The cost row of a task of class c whose reads hit L2 as the bits of mask say."""
            hits = tuple(bool(mask >> (nr - 1 - i) & 1) for i in range(nr))
            lc = self._leaf_cost(classes[c], hits)
            got = cost_of[(mask << 24) | c] = len(cost_dur)
            cost_dur.append(lc.duration), cost_pipes.append(tuple(lc.busy.items())), cost_hits.append(sum(hits))
            cost_tail.append(max(0, lc.duration - lc.read_end)), cost_lead.append(lc.lead)
            # bytes through HBM: the reads that miss L2 and every write
            miss = sum(b for b, h in zip(cls_rb[c], hits) if not h) + sum(cls_wb[c])
            cost_hbm.append(miss / hbm_bw if hbm_bw else 0.0)
            return got

        # ---- records -----------------------------------------------------------------------------
        done = array("i")
        done_append = done.append
        ev_start_np, ev_end_np = np.zeros(n, dtype=np.int64), np.zeros(n, dtype=np.int64)
        ev_core_np, ev_thread_np, ev_cost_np = np.zeros(n, np.int16), np.zeros(n, np.int8), np.zeros(n, np.int32)
        ev_start, ev_end, ev_core, ev_thread, ev_cost = (memoryview(a) for a in (ev_start_np, ev_end_np, ev_core_np,
                                                                                ev_thread_np, ev_cost_np))
        # ---- why each task started when it did: recorded here, explained by runtime/explain.py ----
        why_ready_np = np.zeros(n, dtype=np.int64)  # when it became ready to dispatch
        why_by_np = np.full(n, -1, dtype=np.int32)  # the dependency whose completion made it ready (-1: its device task opened)
        why_disp_np = np.zeros(n, dtype=np.int64)  # when its schedule thread had dispatched it
        why_ready, why_by, why_disp = memoryview(why_ready_np), memoryview(why_by_np), memoryview(why_disp_np)
        # AICPU spans: a task's completion span is two numbers (its thread and task follow from the
        # finish order); the few other spans are kept whole with their place among the completions
        comp_start, comp_end = array("q"), array("q")
        cps, cpe = comp_start.append, comp_end.append
        sp_thread, sp_name, sp_start, sp_end, sp_arg, sp_at = (array("b"), array("b"), array("q"), array("q"),
                                                               array("q"), array("q"))
        dispatches = [0] * nth

        def span(thread, name, start, end, arg=0):
            sp_thread.append(thread), sp_name.append(name), sp_start.append(start), sp_end.append(end)
            sp_arg.append(arg), sp_at.append(len(done))

        # ---- the event loop ------------------------------------------------------------------------
        heap: list = []
        sq = 0
        queues = [array("i"), array("i")]  # ready tasks per core type
        qhead = [0, 0]  # FIFO read position (affinity serves newest first: pops the end)
        thread_free = [t_cores] * nth
        wake_t, wake_s, wake_real = [None] * nth, [0] * nth, [False] * nth
        now_t, now_s = 0, 0

        def start(c, k, t, th, prev=-1, known=None):
            """Run task k on core c from t. ``prev``: the cost of the task that ran just before on
            this core, when task k was waiting in its pending slot since ``known``: k's loads
            overlap prev's tail (double buffering across tiles)."""
            nonlocal sq
            # its reads, in L2 (the cost row follows from the class and which reads hit)
            c_k = cls[k]
            nr = cls_nr[c_k]
            if nr == 1:
                mask = 1 if touch(rline[rptr[k]], cls_rb[c_k][0]) else 0
            elif nr:
                r0, rb = rptr[k], cls_rb[c_k]
                mask = 0
                for j in range(nr):
                    mask += mask + touch(rline[r0 + j], rb[j])
            else:
                mask = 0
            cid = cost_of.get((mask << 24) | c_k)
            if cid is None:
                cid = new_cost(c_k, mask, nr)
            dur = cost_dur[cid]
            t_in = t
            if prev >= 0:
                over = min(cost_lead[cid], cost_tail[prev], t - known)
                if over > 0:
                    dur -= over
                    t_in = t - over
            end = t + dur
            h = cost_hbm[cid]
            bound = False
            if h:
                h0 = hbm[0]
                h0 = (h0 if h0 > t_in else t_in) + h
                hbm[0] = h0
                if h0 > end:  # waiting for HBM: the next task's loads queue behind, no overlap
                    end = int(h0) + 1
                    bound = True
            run_hbm[c] = bound
            run_task[c], run_start[c], run_thread[c], run_cost[c] = k, t, th, cid
            sq += 1
            heappush(heap, (end, sq, _DONE, c))
            ty, ct, b = core_type[c], core_thread[c], tbit[c]
            idle[ct][ty] &= ~b
            gidle[ty] &= ~gbit[c]
            if fair:
                free[ct][ty] &= ~b

        def make_ready(k, t, th):
            ty = ttype[k]
            if affinity and th is not None:
                mask = idle[th][ty]
                if mask:
                    c = thread_cores[th][ty][(mask & -mask).bit_length() - 1]
                else:
                    g = gidle[ty]
                    c = type_cores[ty][(g & -g).bit_length() - 1] if g else -1
                if c >= 0:
                    tf = thread_free[th]
                    t0 = (t if t > tf else tf) + make_dispatch
                    thread_free[th] = t0
                    dispatches[th] += 1
                    why_disp[k] = int(t0)  # start reasons
                    fa = free_at[c]
                    start(c, k, t0 if t0 > fa else fa, th)
                    return
            queues[ty].append(k)

        rot = [0]
        turns = [[(r + i) % nth for i in range(nth)] for r in range(nth)]  # the threads from thread r on

        def wake_all(t):
            nonlocal sq
            w0 = len(queues[0]) > qhead[0]
            w1 = len(queues[1]) > qhead[1]
            if not (w0 or w1):
                return
            # the threads poll one shared queue: the one free first asks first, and among threads
            # free at once the turn rotates (else thread 0 would win every tie and pay every
            # dispatch and completion of a dependency chain alone)
            rot[0] = r = (rot[0] + 1) % nth
            # by (free time, turn): a stable sort by free time of the threads in turn order
            order = sorted(turns[r], key=thread_free.__getitem__) if nth > 1 else (0,)
            for th in order:
                T = wake_t[th]
                if T is not None:
                    if wake_real[th]:
                        continue
                    if T > now_t or (T == now_t and wake_s[th] > now_s):  # a kept-aside wake, still due
                        fr = free[th]
                        if (w0 and fr[0]) or (w1 and fr[1]):
                            heappush(heap, (T, wake_s[th], _THREAD, th))
                            wake_real[th] = True
                        continue
                sq += 1
                tf = thread_free[th]
                T = t if t > tf else tf
                wake_t[th], wake_s[th] = T, sq
                fr = free[th]
                if (w0 and fr[0]) or (w1 and fr[1]):
                    heappush(heap, (T, sq, _THREAD, th))
                    wake_real[th] = True
                else:
                    wake_real[th] = False  # nothing to do now: due at (T, sq) unless work arrives

        # ---- control AICPU -----------------------------------------------------------------------
        ctrl_time, waiting, waited, pos, cur_dt, dt_roots = t_ctrl0, False, False, 0, None, 0
        wait_cycles, outstanding, submitted_hi = 0, 0, 0
        dt_lo, dt_hi = array("q"), array("q")
        items, r_parallel, r_loads = replay.items, replay.parallel, replay.loads
        host_ready, max_roots = self.host_ready, self.max_roots
        stitch_cost = m.root_stitch_cycles / 1
        par_cost = m.root_stitch_cycles / self.parallelism

        def push(t, kind, data):
            nonlocal sq
            sq += 1
            heappush(heap, (t, sq, kind, data))

        def submit(t):
            nonlocal outstanding, cur_dt
            dt = cur_dt
            if dt is None:
                return t
            end = t + m.device_task_build_cycles + m.submit_cycles
            span(-1, _SUBMIT_SPAN, int(t), int(end), dt)
            outstanding += dt_hi[dt] - dt_lo[dt]
            push(end, _SUBMIT, dt)
            cur_dt = None
            return end

        def on_ctrl(t):
            nonlocal ctrl_time, waiting, waited, pos, cur_dt, dt_roots
            t = max(t, ctrl_time)
            while pos < len(items):
                s = items[pos]
                if s < 0:  # flush
                    pos += 1
                    t = submit(t)
                    continue
                loads = r_loads[s]
                if loads and loads - host_ready and not waited and (outstanding or cur_dt is not None):
                    if cur_dt is not None:
                        t = submit(t)
                    waiting = True  # resumed when the device has finished everything
                    ctrl_time = t
                    return
                waited = False
                c = par_cost if r_parallel[s] else stitch_cost
                span(-1, _STITCH, int(t), int(t + c), s)
                t += c
                if cur_dt is None:
                    cur_dt = len(dt_lo)
                    dt_lo.append(root_first[s])
                    dt_hi.append(root_first[s])
                    dt_roots = 0
                dt_hi[cur_dt] = root_first[s + 1]
                dt_roots += 1
                pos += 1
                if dt_roots >= max_roots:
                    t = submit(t)
                # one root per event: the device's progress up to t is known before the next decision
                ctrl_time = t
                push(t, _CTRL, None)
                return
            ctrl_time = submit(t)

        def check_wait(t):
            nonlocal waiting, waited, wait_cycles
            if waiting and outstanding == 0:
                waiting = False
                waited = True
                resume = max(t, ctrl_time) + m.wait_device_cycles
                span(-1, _WAIT, int(ctrl_time), int(resume))
                wait_cycles += resume - ctrl_time
                push(resume, _CTRL, None)

        # device tasks run one after another: the next opens when every task of the one before has
        # finished, after a synchronisation on the device (upstream's stitch guide: with one root
        # per device task "every task needs a synchronisation")
        dt_left = array("q")  # unfinished tasks per device task (set when it is submitted)
        opening = [0, -1]  # next device task to open, the one open now
        sync = m.device_task_sync_cycles

        def on_submit(t, dt):
            while len(dt_left) <= dt:
                dt_left.append(-1)
            dt_left[dt] = dt_hi[dt] - dt_lo[dt]
            try_open(t)

        def try_open(t):
            nxt = opening[0]
            if nxt < len(dt_left) and dt_left[nxt] >= 0 and (nxt == 0 or dt_left[nxt - 1] == 0):
                opening[0] = nxt + 1
                push(t + (sync if nxt > 0 else 0), _OPEN, nxt)

        def on_open(t, dt):
            nonlocal submitted_hi
            opening[1] = dt
            lo, hi = dt_lo[dt], dt_hi[dt]
            submitted_hi = hi
            if hi - lo <= 64:  # a small device task: plain Python beats numpy's call overhead
                for k in range(lo, hi):
                    if npred[k] == 0:
                        queues[ttype[k]].append(k)
                        why_ready[k], why_by[k] = int(t), -1  # start reasons
            else:
                ready = np.nonzero(npred_np[lo:hi] == 0)[0] + lo
                why_ready_np[ready], why_by_np[ready] = int(t), -1  # start reasons
                types = ttype_np[ready]
                for ty in (0, 1):
                    queues[ty].frombytes(ready[types == ty].astype(np.int32).tobytes())
            wake_all(t)
            if hi == lo:
                try_open(t)
                check_wait(t)

        finished = 0
        push(t_ctrl0, _CTRL, None)
        while heap:
            t, now_s, kind, d = heappop(heap)
            now_t = t
            if kind == 3:  # _DONE on core d
                k = run_task[d]
                done_append(k)
                ev_start[k] = int(run_start[d])
                ev_end[k] = int(t)
                ev_core[k] = d
                ev_thread[k] = run_thread[d]
                ev_cost[k] = run_cost[d]
                w0 = wptr[k]
                w1 = wptr[k + 1]
                if w1 == w0 + 1:  # written tiles occupy L2 like read ones
                    touch(wline[w0], cls_wb[cls[k]][0])
                elif w1 > w0:
                    wb = cls_wb[cls[k]]
                    for j in range(w0, w1):
                        touch(wline[j], wb[j - w0])
                finished += 1
                outstanding -= 1
                od = opening[1]
                left_dt = dt_left[od] - 1
                dt_left[od] = left_dt
                if left_dt == 0:
                    try_open(t)
                run_task[d] = -1
                free_at[d] = t
                ty, owner, b = core_type[d], core_thread[d], tbit[d]
                idle[owner][ty] |= b
                gidle[ty] |= gbit[d]
                free[owner][ty] |= b
                tf = thread_free[owner]
                base = t if t > tf else tf
                s0, s1 = sptr[k], sptr[k + 1]
                tt = base + completion + (resolve if s1 > s0 else 0)
                cps(int(base)), cpe(int(tt))
                thread_free[owner] = tt
                pk = pend_task[d]
                if pk >= 0:
                    pend_task[d] = -1
                    pt = pend_t0[d]
                    if pt < t and overlap and not run_hbm[d]:
                        start(d, pk, t, pend_thread[d], run_cost[d], pt)
                    else:
                        start(d, pk, t if t > pt else pt, pend_thread[d])
                if s1 > s0:
                    for x in range(s0, s1):
                        j = succ[x]
                        left = npred[j] - 1
                        npred[j] = left
                        if left == 0 and j < submitted_hi:
                            why_ready[j], why_by[j] = int(tt), k  # start reasons
                            make_ready(j, tt, owner)
                wake_all(tt)
                if waiting:
                    check_wait(t)
            elif kind == 2:  # _THREAD d
                wake_t[d] = None
                tf = thread_free[d]
                t0 = t if t > tf else tf
                began = t0
                fr = free[d]
                for ty in (0, 1):
                    mask = fr[ty]
                    q = queues[ty]
                    if not mask or len(q) <= qhead[ty]:
                        continue
                    mine = thread_cores[d][ty]
                    # idle cores first, then the pending slots of busy ones: a ready task never
                    # waits behind another core's running task while a core of this thread idles
                    for pending in (False, True) if not fair else (False,):
                        m2 = mask
                        while m2 and len(q) > qhead[ty]:
                            low = m2 & -m2
                            m2 ^= low
                            c = mine[low.bit_length() - 1]
                            if pending:
                                if run_task[c] < 0 or pend_task[c] >= 0:
                                    continue
                            elif run_task[c] >= 0:
                                continue
                            if affinity:
                                k = q.pop()
                            else:
                                h = qhead[ty]
                                k = q[h]
                                qhead[ty] = h + 1
                            # a task queued by a completion is ready when that completion ends: a
                            # thread woken earlier waits for it (it never dispatches before)
                            r = why_ready[k]
                            if r > t0:
                                t0 = r
                            t0 += dispatch_cost
                            dispatches[d] += 1
                            why_disp[k] = int(t0)  # start reasons
                            if not pending:
                                fa = free_at[c]
                                start(c, k, t0 if t0 > fa else fa, d)
                            else:
                                pend_task[c], pend_thread[c], pend_t0[c] = k, d, t0  # starts when the core frees
                                fr[ty] &= ~low
                    h = qhead[ty]
                    if h > 65536 and 2 * h > len(q):
                        del q[:h]
                        qhead[ty] = 0
                if t0 > began:
                    span(d, _DISPATCH, int(began), int(t0))
                thread_free[d] = t0
            elif kind == 0:
                on_ctrl(t)
            elif kind == 1:
                on_submit(t, d)
            else:
                on_open(t, d)
        if finished != n:
            raise KernelRuntimeError("internal: the timing simulation stopped with unfinished tasks",
                                     got=f"{finished} of {n} finished")
        # every task's reads went through L2 once (when it started): the hits are its cost rows'
        reads = int(np.asarray(cls_nr, dtype=np.int64)[tasks.cls].sum()) if n else 0
        hits = int(np.asarray(cost_hits, dtype=np.int64)[ev_cost_np].sum()) if n else 0
        extra = {"dispatches_per_thread": list(dispatches), "l2_hit_rate": (hits / reads) if reads else 0.0,
                 "control_wait_cycles": wait_cycles}
        del ev_start, ev_end, ev_core, ev_thread, ev_cost  # release the views before handing the arrays on
        timeline = self._timeline(done, ev_start_np, ev_end_np, ev_core_np, ev_thread_np, ev_cost_np, list(cost_pipes),
                                  list(cost_hits), core_names, core_thread, (comp_start, comp_end),
                                  (sp_thread, sp_name, sp_start, sp_end, sp_arg, sp_at), dt_lo, dt_hi, extra)
        del why_ready, why_by, why_disp
        timeline.events.why = {"ready": why_ready_np, "by": why_by_np, "dispatched": why_disp_np}  # start reasons
        return timeline

    def _timeline(self, done, ev_start, ev_end, ev_core, ev_thread, ev_cost, cost_pipes, cost_hits, core_names,
                  core_thread, completions, spans, dt_lo, dt_hi, extra):
        tasks, replay, lowered = self.replay.tasks, self.replay, self.lowered
        col = lambda a, dt: np.frombuffer(a, dtype=dt) if len(a) else np.zeros(0, dtype=dt)  # noqa: E731
        root_names = [lowered.roots[i].name for i in replay.index]
        done = col(done, np.int32)
        events = TaskEvents(done, ev_start, ev_end, ev_core, ev_thread, ev_cost, cost_pipes,
                            cost_hits, tasks.cls, tasks.classes, tasks.root_first, root_names, replay.env,
                            _loop_index_names(lowered), col(dt_lo, np.int64), core_names,
                            ["AIC" if name.startswith("AIC") else "AIV" for name in core_names], self.vso)
        src, dst, kind = tasks.edges
        dt_sizes = (col(dt_hi, np.int64) - col(dt_lo, np.int64)).tolist()
        owner = np.asarray(core_thread, dtype=np.int8)
        aicpu = AicpuSpans([col(a, np.int64) for a in completions], done, lambda tasks: owner[ev_core[tasks]],
                           [col(a, dt) for a, dt in zip(spans, (np.int8, np.int8, np.int64, np.int64, np.int64,
                                                               np.int64))],
                           root_names.__getitem__, dt_sizes)
        return Timeline(events, DepEdges(src, dst, kind), aicpu, self.m, self.opts, len(dt_lo), extra)

    def _leaf_cost(self, tc, hits):
        """The `LeafCost` of one task of class ``tc`` whose reads hit L2 as ``hits`` says."""
        leaf, elems = tc.leaf, tc.elems
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
        fractal = frozenset(key for key, p in leaf.param_of.items() if p in tc.fractal and key[1] == "in") \
            if tc.fractal else frozenset()
        return leaf_schedule(self.m, leaf, sizes, l2, tc.dynamic, fractal)


def _loop_index_names(lowered) -> tuple:
    names = getattr(lowered, "_loop_index_names", None)
    if names is None:
        from ..ir.graph import iter_items, Loop

        names = tuple(dict.fromkeys(x.index for x in iter_items(lowered.program.body) if isinstance(x, Loop)))
        lowered._loop_index_names = names
    return names
