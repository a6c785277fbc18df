"""The pass-verify log (upstream's ``<output folder>/verify/interpreter.log``).

Every verified call adds one line per compared stage: ``result PASS`` or ``result FAILED`` with
the largest difference and the tolerance; a failing stage adds a ``[VERIFY:FAIL]`` line naming
the kernel, the stage and the first op whose output differs. As the output folder is written
only when asked for, the lines are kept in memory until ``pypto.pypto_impl.LogTopFolder()`` is
called (a program asking where its logs are); from then on the file is kept up to date.
"""

from __future__ import annotations

import collections
import os
import threading
import warnings

LOG_NAME = os.path.join("verify", "interpreter.log")
_MAX_PENDING = 20000  # lines kept while no one has asked for the folder (the oldest go first)

_lock = threading.Lock()
_pending: collections.deque = collections.deque(maxlen=_MAX_PENDING)
_file = {"path": None}


def record(kernel: str, report, rtol: float, atol: float) -> None:
    """Log the stage results (`pypto.runtime.verify.StageResult`) of one verified call of ``kernel``."""
    lines = []
    for r in report:
        verdict = "PASS" if r.ok else "FAILED"
        lines.append(f"{kernel} {r.stage} ({r.passes}) verify result {verdict}: max |diff| {r.max_abs_diff:.6g}, "
                     f"rtol {rtol}, atol {atol}")
        if not r.ok:
            lines.append(f"[VERIFY:FAIL] {kernel}, {r.stage}, {r.first_bad_op or 'outputs'}")
    with _lock:
        if _file["path"] is None:
            _pending.extend(lines)
            return
        _append(_file["path"], lines)


def open_in(folder: str) -> str:
    """Keep the log in ``folder`` from now on (the lines so far are written at once); its path."""
    path = os.path.join(folder, LOG_NAME)
    with _lock:
        if _file["path"] != path:
            _file["path"] = path
            _append(path, list(_pending))
            _pending.clear()
    return path


def _append(path: str, lines: list) -> None:
    try:
        os.makedirs(os.path.dirname(path), exist_ok=True)
        with open(path, "a", encoding="utf-8") as f:
            f.writelines(line + "\n" for line in lines)
    except OSError as e:  # a log that cannot be written never fails the call
        warnings.warn(f"pypto: could not write the pass-verify log {path}: {e}", RuntimeWarning, stacklevel=3)


__all__ = ["record", "open_in", "LOG_NAME"]
