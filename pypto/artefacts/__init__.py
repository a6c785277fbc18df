"""What kernel compiles and calls leave on disk, and when (upstream's output folder).

Nothing is written unless asked for. The files go into the process's output folder
(`output_folder`: ``./output/output_<time>_<pid>_<host>``, see :mod:`.folder`):

=========================================================  ==============================================  =====================
trigger                                                    files                                           written
=========================================================  ==============================================  =====================
``debug_options={"compile_debug_mode": 1}`` (or 2)         ``<kernel>_<n>/NN_<pass>.txt/.dot/.json``,       at each compile
                                                           ``program.json``
``debug_options={"dump_pass_graph": [...]}``               the named passes' dumps                         at each compile
``debug_options={"runtime_debug_mode": 1}``                ``program.json``, ``merged_swimlane.json``,     after each call
                                                           ``tilefwk_L1_prof_data.json``, ``dyn_topo.txt``
environment ``DUMP_DEVICE_PERF=true``                      ``machine_trace_perf_data_0.json``,             after each call
                                                           ``machine_runtime_operator_trace_0.json``
NPU emulation and ``run_mode`` set to ``RunMode.SIM``      ``CostModelSimulationOutput/merged_swimlane.json``, after each call
                                                           ``program.json``, ``dyn_topo.txt``
=========================================================  ==============================================  =====================

The last row: upstream's SIM run mode is its cost-model simulation, which writes its swimlane
into ``CostModelSimulationOutput`` on every run without being asked (its debugging guide, "CPU
simulation": after a SIM run the output folder holds ``merged_swimlane.json``). Here SIM is the
default of every kernel and this package's users never asked for files, so that default applies
only while `pypto.emulate` runs upstream scripts (it calls `set_emulated_npu`), and only to
kernels that chose SIM themselves (decorator, option setter or scope): under emulation an unset
run mode stands for the NPU, as upstream's default is the NPU where CANN is installed.

The formats are described in :mod:`.program`, :mod:`.swimlane` and :mod:`.machine_trace`.
A file that cannot be written is a ``RuntimeWarning``, never a failed call.
"""

from __future__ import annotations

import os
import threading
import warnings
from typing import NamedTuple

from .folder import output_base, output_folder

__all__ = ["output_folder", "output_base", "set_emulated_npu", "Wanted", "wanted", "device_perf_requested",
           "after_call"]

PERF_VAR = "DUMP_DEVICE_PERF"
COST_MODEL_FOLDER = "CostModelSimulationOutput"
SWIMLANE_FILE = "merged_swimlane.json"

_emulated_npu = False
# os.environ's own dict (encoded keys): ``os.environ`` reads and writes go through it, so looking a
# key up there answers as ``os.environ.get`` does without decoding every call
_ENVIRON = getattr(os.environ, "_data", None) if isinstance(getattr(os.environ, "_data", None), dict) else None
try:
    _PERF_KEY = os.environ.encodekey(PERF_VAR) if _ENVIRON is not None else None
except (AttributeError, TypeError):
    _ENVIRON = _PERF_KEY = None
_lock = threading.Lock()
_next_seq: dict = {}  # folder -> the seqNo of the next call's first device task


class Wanted(NamedTuple):
    """What a kernel's calls write (decided once per options state, see `wanted`)."""

    swimlane: bool  # runtime_debug_mode 1
    cost_model: bool  # SIM chosen explicitly under NPU emulation


def set_emulated_npu(on: bool) -> None:
    """Called by `pypto.emulate`: kernels that choose RunMode.SIM write upstream's cost-model files."""
    global _emulated_npu
    _emulated_npu = bool(on)


def wanted(resolved, explicit_sim: bool) -> Wanted | None:
    """What calls under the resolved options write, or None for nothing (the usual case).
    ``explicit_sim``: the kernel's own options or a setter/scope chose the run mode SIM."""
    from ..options import RunMode

    swimlane = resolved.get("debug", "runtime_debug_mode") == 1
    cost_model = _emulated_npu and explicit_sim and resolved.run_mode == RunMode.SIM
    return Wanted(swimlane, cost_model) if swimlane or cost_model else None


def device_perf_requested() -> bool:
    """Whether ``DUMP_DEVICE_PERF`` asks for device perf data (read at every call, as upstream)."""
    if _ENVIRON is not None and _PERF_KEY not in _ENVIRON:  # the usual case, in one dict lookup
        return False
    value = os.environ.get(PERF_VAR)
    return bool(value) and value.strip().lower() in ("true", "1", "on", "yes")


def after_call(record, want: Wanted | None, device_perf: bool) -> list:
    """Write what ``want`` and ``device_perf`` ask for about the call ``record``; the paths written."""
    from .machine_trace import record_round
    from .program import leaf_index, write_program
    from .swimlane import append_topology, write_swimlane, write_task_profile

    timeline = record.timeline
    if timeline is None:
        return []
    compiled = record.compiled
    swimlane = want is not None and want.swimlane
    cost_model = want is not None and want.cost_model
    written = []
    try:
        folder = output_folder()
        with _lock:
            seq_base = _next_seq.get(folder, 0)
            _next_seq[folder] = seq_base + max(int(timeline.device_tasks), 1)
        index = leaf_index(compiled)
        if swimlane or cost_model:
            written.append(write_program(compiled, folder))
            written.append(append_topology(folder, timeline, compiled, index, seq_base))
        if swimlane:
            written.append(write_swimlane(os.path.join(folder, SWIMLANE_FILE), timeline, compiled))
            written.append(write_task_profile(folder, timeline, index, seq_base))
        if cost_model:
            written.append(write_swimlane(os.path.join(folder, COST_MODEL_FOLDER, SWIMLANE_FILE), timeline,
                                          compiled))
        if device_perf:
            written += record_round(folder, timeline)
    except OSError as e:
        warnings.warn(f"pypto: could not write the output files of kernel {compiled.name!r}: {e}",
                      RuntimeWarning, stacklevel=3)
    return written
