"""Upstream's ``pypto._controller``: the recording controls of the ``pypto.function`` style.

``function``, ``loop``, ``loop_unroll``, ``cond``, ``is_loop_begin`` and ``is_loop_end`` are the
public ones (also ``pypto.*``); ``Controller.in_function`` tells whether a function body is being
recorded, ``reset()`` forgets the recorded function, ``dump()`` gives its Tensor Graph text and
``LoopRange`` (``_loop_range``) is a loop's ``begin``/``end``/``step`` as symbolic scalars;
``_finalize_function_recording(func, error)`` ends or aborts a `pypto_impl.RecordFunc`.
"""

from __future__ import annotations

from . import pypto_impl  # noqa: F401 - upstream's pypto._controller.pypto_impl (RecordFunc is looked up there)
from .frontend.control import cond, is_loop_begin, is_loop_end, loop, loop_unroll
from .frontend.recording import Controller, _finalize_function_recording, function
from .frontend.scalar import SymbolicScalar
from .runtime.device import last_function, record_function


class LoopRange:
    """``LoopRange(stop)``, ``LoopRange(start, stop)`` or ``LoopRange(start, stop, step)``."""

    def __init__(self, start, stop=None, step=1):
        if stop is None:
            start, stop = 0, start
        self._start, self._stop, self._step = (SymbolicScalar(v) for v in (start, stop, step))

    def begin(self) -> SymbolicScalar:
        return self._start

    def end(self) -> SymbolicScalar:
        return self._stop

    def step(self) -> SymbolicScalar:
        return self._step

    def __repr__(self) -> str:
        return f"LoopRange({self._start}, {self._stop}, {self._step})"

    __str__ = __repr__


_loop_range = LoopRange


def reset() -> None:
    """Forget the recorded function (the device then has nothing to run until the next one)."""
    record_function(None)
    Controller.in_function = False


def dump() -> str:
    """The Tensor Graph text of the function recorded last ('' before any)."""
    fn = last_function()
    return "" if fn is None else fn.compiled.text()


__all__ = ["function", "loop", "loop_unroll", "cond", "is_loop_begin", "is_loop_end", "Controller", "LoopRange",
           "reset", "dump"]
