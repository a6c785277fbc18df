"""Who serves ``runtime_options["run_mode"] = pypto.RunMode.NPU``.

This build has no NPU backend: by default an NPU-mode kernel call is refused with
:class:`pypto.BackendUnavailableError`. An emulation layer (``pypto.emulate``) can register a
*stand-in*: NPU-mode kernels then run on the CPU simulator exactly like SIM ones, and the
stand-in is told about every launch afterwards (NPU graph capture records launches this way).

The jit call path reads one module-level value, so nothing here costs a SIM-mode call anything.
"""

from __future__ import annotations

from typing import Any, Protocol


class NpuStandIn(Protocol):
    """What serves NPU-mode calls on the simulator."""

    name: str  # shown in messages, e.g. "pypto.emulate"

    def launched(self, kernel: Any, args: tuple, kwargs: dict, result: Any) -> None:
        """Called after each successful NPU-mode kernel call with its arguments and result."""


_stand_in: NpuStandIn | None = None


def set_npu_stand_in(stand_in: NpuStandIn | None) -> NpuStandIn | None:
    """Register (or, with ``None``, remove) the NPU stand-in; returns the previous one."""
    global _stand_in
    previous, _stand_in = _stand_in, stand_in
    return previous


def npu_stand_in() -> NpuStandIn | None:
    """The registered NPU stand-in, or ``None`` when NPU mode has no backend (the default)."""
    return _stand_in
