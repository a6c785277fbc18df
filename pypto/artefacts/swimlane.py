"""The swimlane files of one call, from its simulated `Timeline`.

* ``merged_swimlane.json``: the timeline as a Chrome trace (`Timeline.to_chrome_trace`), the view
  upstream's toolkit and Perfetto open; rewritten by every call that writes it.
* ``tilefwk_L1_prof_data.json``: per AI core that ran tasks, ``{"blockIdx", "coreType", "tasks"}``
  with one ``{"seqNo", "taskId", "leafIndex", "execStart", "execEnd", "leaf", "root"}`` per task
  (cycles of the simulated clock); rewritten by every call.
* ``dyn_topo.txt``: CSV, one row per task, appended call after call under one header
  ``seqNo,taskId,rootIndex,rootHash,opmagic,leafIndex,leafHash,coreType,psgId,wrapId,
  staticSuccCount,successors`` (upstream's column order; ``coreType`` 0 = AIV, 1 = AIC; the
  successors' task ids follow in the last columns; -1 where this simulator has no such notion).

``seqNo`` numbers the device tasks of the process (a call's device task ``d`` is ``seq_base + d``),
``taskId`` is the task's number in its call and ``leafIndex`` the leaf function's index in the
kernel (`pypto.artefacts.program.leaf_index`), so the three files and ``program.json`` join.
"""

from __future__ import annotations

import os
import zlib

from .folder import replace_json

CORE_TYPE_CODE = {"AIV": 0, "AIC": 1}
TOPO_HEADER = ("seqNo,taskId,rootIndex,rootHash,opmagic,leafIndex,leafHash,coreType,psgId,wrapId,"
               "staticSuccCount,successors")


def block_index(core: str, core_type: str, machine) -> int:
    """The core's launch block index: AIC cores first, then AIV cores."""
    digits = "".join(ch for ch in core if ch.isdigit())
    n = int(digits) if digits else 0
    return n if core_type == "AIC" else machine.aic_cores + n


def write_swimlane(path: str, timeline, compiled) -> str:
    """Write ``timeline`` as a Chrome trace to ``path`` (kernel name and key in ``otherData``)."""
    trace = timeline.to_chrome_trace()
    trace.setdefault("otherData", {}).update({"kernel": compiled.name, "key": compiled.key_text})
    os.makedirs(os.path.dirname(path), exist_ok=True)
    return replace_json(path, trace)


def write_task_profile(folder: str, timeline, leaf_index: dict, seq_base: int) -> str:
    """Write ``tilefwk_L1_prof_data.json`` for one call."""
    machine = timeline.machine
    cores: dict = {}
    for e in timeline.events:
        block = block_index(e.core, e.core_type, machine)
        entry = cores.setdefault(block, {"blockIdx": block, "coreType": e.core_type, "tasks": []})
        entry["tasks"].append({"seqNo": seq_base + e.device_task, "taskId": e.task,
                               "leafIndex": leaf_index.get(e.leaf, -1), "execStart": e.start, "execEnd": e.end,
                               "leaf": e.leaf, "root": e.root_function})
    for entry in cores.values():
        entry["tasks"].sort(key=lambda t: t["execStart"])
    return replace_json(os.path.join(folder, "tilefwk_L1_prof_data.json"), [cores[b] for b in sorted(cores)],
                        indent=1)


def _hash(text: str) -> int:
    return zlib.crc32(text.encode())


def append_topology(folder: str, timeline, compiled, leaf_index: dict, seq_base: int) -> str:
    """Append this call's tasks to ``dyn_topo.txt`` (the header is written once per file)."""
    leaves = compiled.lowered.leaves if compiled.lowered is not None else {}
    successors: dict = {}
    for src, dst, _kind in timeline.deps:
        successors.setdefault(src, []).append(dst)
    rows = []
    for e in sorted(timeline.events, key=lambda e: e.task):
        succ = sorted(set(successors.get(e.task, ())))
        leaf = leaves.get(e.leaf)
        leaf_hash = int(leaf.hash, 16) if leaf is not None and _is_hex(leaf.hash) else _hash(e.leaf)
        rows.append(",".join(str(v) for v in (
            seq_base + e.device_task, e.task, e.root, _hash(f"{compiled.name}.{e.root_function}"), -1,
            leaf_index.get(e.leaf, -1), leaf_hash, CORE_TYPE_CODE[e.core_type], -1, -1, len(succ), *succ)))
    path = os.path.join(folder, "dyn_topo.txt")
    fresh = not os.path.exists(path) or os.path.getsize(path) == 0
    with open(path, "a", encoding="utf-8") as f:
        if fresh:
            f.write(TOPO_HEADER + "\n")
        if rows:
            f.write("\n".join(rows) + "\n")
    return path


def _is_hex(text) -> bool:
    try:
        int(str(text), 16)
        return True
    except ValueError:
        return False
