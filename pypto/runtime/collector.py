"""Pausing Python's cyclic garbage collector while a compile or a plan builds its objects.

Tracing and lowering a kernel, and planning a call at new sizes, create tens of thousands of
objects that all stay alive; each collection would scan them again (and the rest of the heap
with them), so with the collector on, that work grows faster than the program and a first call
at a new size pays several full collections. Reference counting still frees everything as
usual; only cycles wait until the collector runs again. Threads may compile and plan at once:
the collector comes back when the last of them is done.
"""

from __future__ import annotations

import contextlib
import gc
import threading

_LOCK = threading.Lock()
_STATE = {"depth": 0, "was_enabled": True}  # pauses in progress (any thread), and the state before them


@contextlib.contextmanager
def paused():
    """The collector off for the block (and back as it was when the last such block ends)."""
    with _LOCK:
        if _STATE["depth"] == 0:
            _STATE["was_enabled"] = gc.isenabled()
            gc.disable()
        _STATE["depth"] += 1
    try:
        yield
    finally:
        with _LOCK:
            _STATE["depth"] -= 1
            if _STATE["depth"] == 0 and _STATE["was_enabled"]:
                gc.enable()
