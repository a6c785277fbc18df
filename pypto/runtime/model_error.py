"""The timing model's measured error, shown beside every simulated time.

The calibration fit (``pypto.calibrate``) compares simulated kernel times with published A2/A3
timings and writes, per kernel class, how far off the model is: the median and worst
``|simulated / published - 1|`` over the published points of that class, and the median when
each family of points is left out of the fit (the honest figure for a kernel the fit never saw).
It lands in ``platforms/model_error.json`` next to this module. This module reads it and says
which of those figures applies to a given timeline:

- `kernel_kind` classes a timeline as ``"matmul"`` (cube work only), ``"vector"`` (vector work
  only) or ``"mixed"`` (both), from the busy cycles of its tasks per core type;
- `model_error` gives a `ModelError` with the figures of that class and a one-line ``text``,
  or the reason there are none: no published point of the class, a machine that was not
  calibrated (e.g. ``"small"``), or a calibrated machine with changed parameters
  (``MachineModel.with_(...)``).
"""

from __future__ import annotations

import json
import os
from dataclasses import dataclass, fields, is_dataclass

from ..errors import PyptoError

KINDS = ("matmul", "mixed", "vector")
STATUSES = ("fitted", "placeholder")

# A core type whose compute cycles are under this share of the kernel's compute cycles does not
# make the kernel "mixed". Its model error moves the total by at most that share of its own
# error (less where it overlaps the other unit's work), which is small against the spread within
# a class, while counting it would class every GEMM with a bias or cast epilogue, and every
# vector kernel with one small matmul, as mixed.
MINOR_SHARE = 0.10

DATA_FILE = os.path.join(os.path.dirname(os.path.abspath(__file__)), "platforms", "model_error.json")


class ModelErrorDataError(PyptoError, ValueError):
    """The calibration file (``model_error.json``) does not follow its schema."""


@dataclass(frozen=True)
class ModelError:
    """The measured error of the timing model for one kernel class on one machine.

    ``median``, ``worst`` and ``loo_median`` (leave one family out) are fractions
    (``|simulated / published - 1|``), None when not measured; ``status`` is ``"fitted"``,
    ``"placeholder"`` (the file is not a fit yet), ``"no_points"``, ``"uncalibrated"`` (another
    machine) or ``"modified"`` (the calibrated machine with changed parameters); ``text`` is what
    the lab shows."""

    kind: str
    machine: str
    points: int
    median: float | None
    worst: float | None
    loo_median: float | None
    text: str
    status: str = "fitted"
    families: tuple = ()

    @property
    def measured(self) -> bool:
        """True when the figures were measured (by a fit, not a placeholder) for this kind on
        this machine."""
        return self.status == "fitted" and self.points > 0

    def __str__(self) -> str:
        return self.text


# ---- which class a timeline belongs to --------------------------------------------------------------

def compute_cycles(timeline) -> dict:
    """Busy cycles of the timeline's tasks: ``cube`` (AIC tasks using the cube), ``vector`` (AIV
    tasks using the vector unit) and ``movement`` (tasks that only copy data, e.g. a matmul's
    result copied into an output tensor by a vector core)."""
    ev = timeline.events
    if all(hasattr(ev, a) for a in ("cost", "cost_pipes", "core_type_codes", "start", "end")):
        return _compute_cycles_of_columns(ev)
    out = {"cube": 0, "vector": 0, "movement": 0}
    for e in ev:
        out[_unit(e.core_type, e.pipes)] += e.duration
    return out


def kernel_kind(timeline) -> str | None:
    """``"matmul"``, ``"mixed"`` or ``"vector"`` by the compute cycles per core type (see
    `compute_cycles` and `MINOR_SHARE`); a kernel that only moves data is ``"vector"`` (its
    copies run on the vector cores, like the bandwidth points of that class); None when it ran
    no task."""
    c = compute_cycles(timeline)
    work = c["cube"] + c["vector"]
    if not work:
        return "vector" if c["movement"] else None
    share = c["vector"] / work
    if share < MINOR_SHARE:
        return "matmul"
    if share > 1 - MINOR_SHARE:
        return "vector"
    return "mixed"


def _unit(core_type: str, pipes) -> str:
    busy = dict(pipes)
    if core_type == "AIC" and busy.get("M", 0) > 0:
        return "cube"
    if core_type == "AIV" and busy.get("V", 0) > 0:
        return "vector"
    return "movement"


def _compute_cycles_of_columns(ev) -> dict:
    import numpy as np

    if not len(ev):
        return {"cube": 0, "vector": 0, "movement": 0}
    dur = np.asarray(ev.end - ev.start, dtype=np.int64)
    aiv = np.asarray(ev.core_type_codes()).astype(bool)
    cost = np.asarray(ev.cost, dtype=np.int64)
    uses_m = np.asarray([dict(p).get("M", 0) > 0 for p in ev.cost_pipes], dtype=bool)[cost]
    uses_v = np.asarray([dict(p).get("V", 0) > 0 for p in ev.cost_pipes], dtype=bool)[cost]
    cube = ~aiv & uses_m
    vector = aiv & uses_v
    return {"cube": int(dur[cube].sum()), "vector": int(dur[vector].sum()),
            "movement": int(dur[~(cube | vector)].sum())}


# ---- the calibration file -----------------------------------------------------------------------------

_loaded: dict = {}


def load_table(path: str | None = None) -> dict:
    """The calibration file at ``path`` (default: the packaged ``platforms/model_error.json``),
    checked against its schema; re-read when the file changes (a new fit)."""
    path = path or DATA_FILE
    try:
        stamp = os.stat(path).st_mtime_ns
    except OSError as e:
        raise ModelErrorDataError("cannot read the timing model's error file", param="path",
                                  expected="a readable model_error.json", got=f"{path}: {e.strerror}") from None
    got = _loaded.get(path)
    if got is None or got[0] != stamp:
        with open(path, encoding="utf-8") as f:
            try:
                data = json.load(f)
            except ValueError as e:
                raise ModelErrorDataError("the timing model's error file is not JSON", param="path",
                                          expected="JSON", got=f"{os.path.basename(path)}: {e}") from None
        got = _loaded[path] = (stamp, check_table(data))
    return got[1]


def check_table(data) -> dict:
    """``data`` if it follows the schema of ``model_error.json``, else a `ModelErrorDataError`
    naming the field."""
    def bad(field, expected, got):
        raise ModelErrorDataError(f"the timing model's error file (model_error.json): '{field}' does not follow "
                                  "its schema", param=f"model_error.json {field}", expected=expected, got=repr(got))

    if not isinstance(data, dict):
        bad("(top level)", "an object", type(data).__name__)
    if data.get("status") not in STATUSES:
        bad("status", " or ".join(map(repr, STATUSES)), data.get("status"))
    if not isinstance(data.get("machine"), str):
        bad("machine", "a machine model name (str)", data.get("machine"))
    kinds = data.get("kinds", {})
    if not isinstance(kinds, dict):
        bad("kinds", "an object keyed by kind", kinds)
    for kind, entry in kinds.items():
        if kind not in KINDS:
            bad(f"kinds.{kind}", "a kind among " + ", ".join(KINDS), kind)
        _check_entry(entry, f"kinds.{kind}", bad)
    if "overall" in data:
        _check_entry(data["overall"], "overall", bad)
    return data


def _check_entry(entry, where, bad) -> None:
    if not isinstance(entry, dict):
        bad(where, "an object", entry)
    points = entry.get("points", 0)
    if isinstance(points, bool) or not isinstance(points, int) or points < 0:
        bad(f"{where}.points", "an int >= 0", points)
    for name in ("median", "worst", "loo_median"):
        v = entry.get(name)
        required = points > 0 and name != "loo_median"
        if v is None and not required:
            continue
        if isinstance(v, bool) or not isinstance(v, (int, float)) or v < 0:
            bad(f"{where}.{name}", "a fraction >= 0 (|simulated/published - 1|)", v)
    families = entry.get("families", [])
    if not isinstance(families, list) or not all(isinstance(f, str) for f in families):
        bad(f"{where}.families", "a list of family names", families)


# ---- the error that applies to a timeline ----------------------------------------------------------

def model_error(timeline, table: dict | None = None) -> ModelError | None:
    """The timing model's measured error for ``timeline``'s kernel class on its machine (from
    ``table``, default the packaged calibration file); None for a timeline without tasks or
    one that was not simulated (a measured trace has no model error)."""
    from .timeline import Timeline

    if not isinstance(timeline, Timeline):
        return None
    kind = kernel_kind(timeline)
    if kind is None:
        return None
    return error_of(kind, timeline.machine, table)


def error_of(kind: str, machine, table: dict | None = None) -> ModelError:
    """The `ModelError` of kernel class ``kind`` on ``machine`` (a MachineModel)."""
    if kind not in KINDS:
        from ..errors import OptionError

        raise OptionError("unknown kernel class", param="kind", expected=" or ".join(KINDS), got=repr(kind))
    table = load_table() if table is None else check_table(table)
    name = getattr(machine, "name", str(machine))
    label = f"{kind}-class"
    if name != table["machine"]:
        return ModelError(kind, name, 0, None, None, None,
                          f"{label}: machine '{name}' is not calibrated, error not measured", "uncalibrated")
    changed = changed_parameters(machine, table["machine"])
    if changed:
        shown = ", ".join(changed[:3]) + (", …" if len(changed) > 3 else "")
        return ModelError(kind, name, 0, None, None, None,
                          f"{label}: machine modified ({shown}): error not measured", "modified")
    entry = table["kinds"].get(kind) or {}
    points = entry.get("points", 0)
    marker = " [placeholder figures, not a fit]" if table["status"] == "placeholder" else ""
    families = tuple(entry.get("families", ()))
    if not points:
        return ModelError(kind, name, 0, None, None, None, f"{label}: no published point for this family{marker}",
                          "no_points", families)
    median, worst, loo = entry["median"], entry["worst"], entry.get("loo_median")
    text = f"{label}: median {median:.0%}, worst {worst:.0%}, {points} published point{'s' if points != 1 else ''}"
    if loo is not None:
        text += f" ({loo:.0%} with its family left out)"
    return ModelError(kind, name, points, float(median), float(worst), None if loo is None else float(loo),
                      text + marker, table["status"], families)


def changed_parameters(machine, name: str) -> list:
    """The parameters in which ``machine`` differs from the registered machine ``name`` (every
    field, also those left out of MachineModel's equality such as the cost tables); ``["name"]``
    when no machine of that name is registered."""
    from .machine import MACHINES

    ref = MACHINES.get(name)
    if ref is None:
        return ["name"]
    if not (is_dataclass(machine) and type(machine) is type(ref)):
        return [] if machine == ref else ["(not a MachineModel)"]
    return [f.name for f in fields(ref) if getattr(machine, f.name) != getattr(ref, f.name)]


def error_text(timeline) -> str | None:
    """What a display shows beside ``timeline``'s simulated time: `model_error`'s text, a note
    when the calibration file cannot be read (a display never fails on it), None when there is
    no model error to show (no tasks, a measured trace)."""
    try:
        error = model_error(timeline)
    except ModelErrorDataError as e:
        return f"not available ({e.what})"
    return None if error is None else error.text
