"""Upstream's ``pypto.platform``: the NPU architecture kernels are built for.

``pypto.platform.npuarch`` reads ``"DAV_2201"`` (Ascend 910B/910C, A2/A3: the machine this
simulator models) until it is set. Setting it to another known architecture (``"DAV_1001"``
for 910, ``"DAV_3510"`` for 950) is recorded and read back, so code that branches on it takes
that branch; the simulator itself keeps modelling A2/A3 (see ``pypto.set_machine``).
"""

from __future__ import annotations

from .errors import ArgumentValueError, user_loc

KNOWN_ARCHS = {"DAV_1001": "Ascend 910", "DAV_2201": "Ascend 910B/910C (A2/A3)", "DAV_3510": "Ascend 950"}
SIMULATED_ARCH = "DAV_2201"


class Platform:
    """The target platform (``pypto.platform``)."""

    def __init__(self):
        self._npuarch: str | None = None

    @property
    def npuarch(self) -> str:
        """The NPU architecture name (``"DAV_2201"`` unless set)."""
        return self._npuarch or SIMULATED_ARCH

    @npuarch.setter
    def npuarch(self, value: str) -> None:
        if value not in KNOWN_ARCHS:
            raise ArgumentValueError("unknown NPU architecture for pypto.platform.npuarch",
                                     expected="one of " + ", ".join(f"{k!r} ({v})" for k, v in KNOWN_ARCHS.items()),
                                     got=repr(value), param="npuarch", loc=user_loc(2))
        self._npuarch = value

    def __repr__(self) -> str:
        return f"<pypto.platform npuarch={self.npuarch!r}>"


platform = Platform()
