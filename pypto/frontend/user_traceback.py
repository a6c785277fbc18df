"""Tracebacks that show the user's code: a Python mistake inside a kernel body (an undefined
name, a wrong argument to a helper) is raised while pypto traces the kernel, so its traceback
holds a dozen of pypto's own frames (the call path, the version cache, the tracer) between the
caller's line and the kernel line. Like Triton and JAX, those frames are hidden: the traceback
goes from the caller's line straight to the kernel line that failed, with a note saying how to
see everything (``PYPTO_TRACEBACK=full``).

Only exceptions raised in user code are filtered: one raised inside pypto keeps every frame (it
is pypto's bug, or pypto's own error, which is already short).
"""

from __future__ import annotations

import os
import types
from pathlib import Path

_PACKAGE = str(Path(__file__).resolve().parents[1])  # the pypto package folder
ENV = "PYPTO_TRACEBACK"
NOTE = f"(pypto's own frames are hidden from this traceback; set {ENV}=full to show them)"


def _in_pypto(frame) -> bool:
    try:
        return str(Path(frame.f_code.co_filename).resolve()).startswith(_PACKAGE + os.sep)
    except (OSError, ValueError):
        return False


def filter_user_traceback(exc: BaseException) -> BaseException:
    """``exc`` with pypto's frames dropped from its traceback when it was raised in user code
    called from inside pypto (kept whole with ``PYPTO_TRACEBACK=full``). Returns ``exc``."""
    if os.environ.get(ENV, "").lower() == "full":
        return exc
    frames = []
    tb = exc.__traceback__
    while tb is not None:
        frames.append(tb)
        tb = tb.tb_next
    if not frames or _in_pypto(frames[-1].tb_frame):
        return exc  # raised by pypto itself: every frame matters
    kept = [t for t in frames if not _in_pypto(t.tb_frame)]
    if len(kept) == len(frames):
        return exc
    new = None
    for t in reversed(kept):
        new = types.TracebackType(new, t.tb_frame, t.tb_lasti, t.tb_lineno)
    exc.__traceback__ = new
    if NOTE not in getattr(exc, "__notes__", ()):
        exc.add_note(NOTE)
    return exc
