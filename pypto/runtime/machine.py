"""The simulated machine: core counts, local memory capacities and clock, in one frozen object."""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class MachineModel:
    """Capacities (bytes) and counts of an Ascend-like machine.

    The defaults are the A2/A3 numbers: 24 AIC + 48 AIV cores, UB 192 KB, L1 512 KB,
    L0A/L0B 64 KB, L0C 128 KB, 1.8 GHz.
    """

    name: str = "A2A3"
    aic_cores: int = 24
    aiv_cores: int = 48
    ub_bytes: int = 192 * 1024
    l1_bytes: int = 512 * 1024
    l0a_bytes: int = 64 * 1024
    l0b_bytes: int = 64 * 1024
    l0c_bytes: int = 128 * 1024
    clock_ghz: float = 1.8
    max_sched_aicpu: int = 5

    def capacity(self, mem: str) -> int:
        """Bytes of the local memory level ``mem`` ("UB", "L1", "L0A", "L0B", "L0C")."""
        return {"UB": self.ub_bytes, "L1": self.l1_bytes, "L0A": self.l0a_bytes, "L0B": self.l0b_bytes,
                "L0C": self.l0c_bytes}[mem]


A2A3 = MachineModel()
SMALL = MachineModel("small", aic_cores=2, aiv_cores=4, ub_bytes=16 * 1024, l1_bytes=64 * 1024,
                     l0a_bytes=8 * 1024, l0b_bytes=8 * 1024, l0c_bytes=16 * 1024)
MACHINES = {"A2A3": A2A3, "small": SMALL}
