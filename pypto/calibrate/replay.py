"""Timing without numbers: the root stream of a call, built by running only the control program.

A calibration kernel is simulated many times under candidate machine parameters, and several of
them are far too large to compute on a CPU (a 6144^3 fp16 GEMM): the timing depends only on the
sizes and the root instances, so the control program is walked with the call's sizes and no leaf
is executed. Programs whose control flow reads tensor elements need the numbers: they run.
"""

from __future__ import annotations

from dataclasses import dataclass

from ..errors import KernelRuntimeError


@dataclass
class Simulation:
    """One call, ready to be simulated again and again: ``replayer.simulate(runtime, machine)``."""

    replayer: object
    runtime: dict
    tasks: int = 0

    def simulate(self, machine, **runtime):
        """The Timeline of this call on ``machine`` (a MachineModel), with runtime overrides."""
        return self.replayer.simulate({**self.runtime, **runtime}, machine)


def timing_only(kernel, *args, **kwargs) -> Simulation:
    """The Simulation of ``kernel(*args, **kwargs)``: compiled as a call would compile it, the
    control program walked with the call's sizes; leaves run only when control flow reads
    tensor elements (then the call runs in full)."""
    from ..runtime.control import Stitcher, walk

    entry, tensors, env, *_ = kernel._lookup(args, kwargs, count=False)
    compiled = entry.compiled
    lowered = compiled.lowered
    runtime = compiled.options.runtime()
    executor = compiled.executor
    if executor.reads_elements:
        kernel(*args, **kwargs)
        stream = executor.last_stream
    else:
        def no_load(param, indices):
            raise KernelRuntimeError("internal: a program planned as not reading elements read one")

        stitcher = Stitcher(lowered, int(runtime.get("stitch_function_max_num", 128)))
        walk(lowered.control, {**executor.symbol_defaults, **env}, stitcher, no_load)
        stitcher.flush(marker=False)
        stream = stitcher.stream
    return Simulation(replayer(lowered, stream, tensors), runtime)


def replayer(lowered, stream, tensors):
    """The `Replayer` of ``stream`` for a call with these argument tensors: written parameters
    passed the very same tensor (a cache updated in place and returned as an output) are one
    memory, as they are in the call."""
    from ..runtime.argument_overlap import separate_overlaps
    from ..runtime.scheduler import Replayer
    from ..runtime.tasks import aliased_keys

    same = separate_overlaps(lowered, list(tensors))[1]
    return Replayer(lowered, stream, aliased_keys(lowered.memory_key, same))
