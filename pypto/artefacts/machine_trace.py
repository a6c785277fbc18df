"""Device perf data (``DUMP_DEVICE_PERF=true``): the AICPU and AI core phases of every call.

Upstream's machine records, per launch ("round"), timestamps at the end of each phase of its
AICPU threads and AI cores, writes them to ``machine_trace_perf_data_<n>.json`` and a Perfetto
view ``machine_runtime_operator_trace_<n>.json``; ``tools/scripts/machine_perf_trace.py analyze``
summarises them. Here the phases come from the simulated timeline of each call; the rounds of a
process follow one another on one simulated clock (a call starts where the previous one ended),
the first 200 rounds are kept (as upstream), and both files are rewritten after every call.

The file is a list of cores ``{"blockIdx", "coreType", "freq" (MHz), "tasks": [{"name", "end"}]}``,
a task being a phase named ``<PHASE>_<round>`` or ``<PHASE>_<round>(<device task>)`` that ended at
``end`` cycles. Phases, as the documentation of upstream's swimlane describes them:

* ``AICPU-CTRL`` (block 0): BEGIN, DEV_TASK_BUILD(i) (stitching and submitting device task i),
  EXIT (all device tasks done).
* ``AICPU-SCHED`` (blocks 1..n, the launched schedule threads): BEGIN, ALLOC_THREAD_ID, INIT,
  CORE_HAND_SHAKE (this simulator charges the whole launch to the handshake: the first two are
  zero-length), DEV_TASK_RCV(i) (device task i handed to the schedulers), WAIT_ALL_DEV_TASK_FINISH
  (the thread's last completion), EXIT.
* ``SCHED-AIC`` / ``SCHED-AIV`` (every AI core, by launch block index): BEGIN, INIT (launch done),
  DEV_TASK_WAIT_RCV_FIRST_LEAF_TASK(i) and DEV_TASK_ALL_LEAF_TASK_EXEC(i) (first start and last end
  of device task i's tasks on that core), EXIT.
"""

from __future__ import annotations

import os
import threading

from .folder import replace_json
from .swimlane import block_index

MAX_ROUNDS = 200
TRACE_FILE = "machine_trace_perf_data_0.json"
PERFETTO_FILE = "machine_runtime_operator_trace_0.json"

_lock = threading.Lock()
_state: dict = {}  # folder -> {"rounds": int, "clock": int, "cores": {(type, block): core dict}}


def _phases(timeline) -> dict:
    """(core type, block) -> [(phase, device task or None, end cycle)] of one call, from 0."""
    machine = timeline.machine
    end = int(timeline.stats["makespan_cycles"])
    submits, completions = [], {}
    first_span = min((e.start for e in timeline.events), default=end)  # the launch is over by then
    for a in timeline.aicpu:
        first_span = min(first_span, a.start)
        if a.thread == "control" and a.name == "submit":
            submits.append(a.end)
        elif a.name == "complete":
            completions[a.thread] = max(completions.get(a.thread, 0), a.end)
    launched = max(1, min(int(timeline.options.get("launch_sched_aicpu_num", 1)), machine.max_sched_aicpu))
    last_done = max(completions.values(), default=first_span)

    out = {("AICPU-CTRL", 0): [("BEGIN", None, 0)] + [("DEV_TASK_BUILD", i, t) for i, t in enumerate(submits)]
           + [("EXIT", None, end)]}
    for th in range(launched):
        out["AICPU-SCHED", th + 1] = (
            [("BEGIN", None, 0), ("ALLOC_THREAD_ID", None, 0), ("INIT", None, 0),
             ("CORE_HAND_SHAKE", None, first_span)]
            + [("DEV_TASK_RCV", i, t) for i, t in enumerate(submits)]
            # a thread that finished its last task before the last device task was handed over
            # still waits for that one
            + [("WAIT_ALL_DEV_TASK_FINISH", None, max(completions.get(f"sched{th}", last_done),
                                                       submits[-1] if submits else 0)), ("EXIT", None, end)])
    spans: dict = {}
    for e in timeline.events:
        key = (block_index(e.core, e.core_type, machine), e.device_task)
        lo, hi = spans.get(key, (e.start, e.end))
        spans[key] = (min(lo, e.start), max(hi, e.end))
    per_core: dict = {}
    for (block, dt), (lo, hi) in sorted(spans.items()):
        per_core.setdefault(block, []).extend(
            [("DEV_TASK_WAIT_RCV_FIRST_LEAF_TASK", dt, lo), ("DEV_TASK_ALL_LEAF_TASK_EXEC", dt, hi)])
    for block in range(machine.aic_cores + machine.aiv_cores):
        kind = "SCHED-AIC" if block < machine.aic_cores else "SCHED-AIV"
        out[kind, block] = ([("BEGIN", None, 0), ("INIT", None, first_span)] + per_core.get(block, [])
                            + [("EXIT", None, end)])
    return out


def record_round(folder: str, timeline) -> list:
    """Add this call's round to ``folder``'s device perf data and rewrite both files; their paths
    (none once the first MAX_ROUNDS rounds are recorded)."""
    freq = timeline.machine.clock_ghz * 1000.0
    with _lock:
        state = _state.setdefault(folder, {"rounds": 0, "clock": 0, "cores": {}})
        if state["rounds"] >= MAX_ROUNDS:
            return []
        r, t0 = state["rounds"], state["clock"]
        phases = _phases(timeline)
        for (kind, block), items in phases.items():
            core = state["cores"].setdefault((kind, block), {"blockIdx": block, "coreType": kind, "freq": freq,
                                                             "tasks": []})
            core["tasks"].extend({"name": f"{p}_{r}" + (f"({i})" if i is not None else ""), "end": t0 + t}
                                 for p, i, t in items)
        state["rounds"] = r + 1
        state["clock"] = t0 + max(t for items in phases.values() for _, _, t in items) + 1
        cores = [state["cores"][k] for k in sorted(state["cores"], key=_order)]
        return [_write(os.path.join(folder, TRACE_FILE), cores), _write(os.path.join(folder, PERFETTO_FILE),
                                                                        perfetto(cores))]


def _order(key):
    kind, block = key
    return (0 if kind.startswith("AICPU") else 1, block)


def _write(path: str, data) -> str:
    return replace_json(path, data)


def perfetto(cores: list) -> dict:
    """The phases as a Chrome trace: one lane per core, each phase from the previous phase's end
    to its own (BEGIN as an instant), in µs."""
    events = [{"ph": "M", "name": "process_name", "pid": 0, "tid": 0, "args": {"name": "AICPU / AI core phases"}}]
    for tid, core in enumerate(cores):
        freq = core["freq"]
        events.append({"ph": "M", "name": "thread_name", "pid": 0, "tid": tid,
                       "args": {"name": f"{core['coreType']}-{core['blockIdx']}"}})
        prev = None
        for task in sorted(core["tasks"], key=lambda t: t["end"]):
            end = task["end"]
            start = end if task["name"].startswith("BEGIN") or prev is None else prev
            events.append({"ph": "X", "name": task["name"], "cat": core["coreType"], "pid": 0, "tid": tid,
                           "ts": start / freq, "dur": max(end - start, 0) / freq})
            prev = end
    return {"traceEvents": events, "displayTimeUnit": "ns"}
