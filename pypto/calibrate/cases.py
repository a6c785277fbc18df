"""The calibration corpus: one `Case` per published point of ``shared/calibration/points.json``.

A case names the point it reproduces, the family it belongs to (the unit of the
leave-one-family-out error) and the kernel class a user's kernel is compared with
(``matmul``: cube-bound; ``mixed``: cube and vector tasks; ``vector``: vector only), and builds
the kernel as its source writes it. `build` returns a `Simulation` (see `replay.timing_only`);
the published figure is kept as given and turned into microseconds of kernel time by the case
(a bandwidth point knows its bytes).

``measures`` says what the published figure covers: ``"kernel"`` (first task start to last task
end on the device), ``"end_to_end"`` (host-timed: launch and scheduling included; the simulated
figure is then the whole makespan from the launch).
"""

from __future__ import annotations

import functools

from dataclasses import dataclass, field
from typing import Callable

KINDS = ("matmul", "mixed", "vector")
MEASURES = ("kernel", "end_to_end")

CASES: dict = {}


@dataclass
class Case:
    id: str  # the point's id in points.json
    family: str  # e.g. "gemm", "flash_attention", "stitch", "skinny_matmul", "vector", "model_kernel"
    kind: str  # one of KINDS
    published_us: float  # the published figure as microseconds (converted by the case if needed)
    build: Callable  # () -> Simulation
    measures: str = "kernel"
    source: str = ""  # where the point is published (copied from points.json)
    how: str = ""  # how the kernel is written here, and any deviation from the source
    runtime: dict = field(default_factory=dict)  # runtime-option overrides of the simulation
    weight: float = 1.0  # < 1 for points the source marks approximate (read off a chart, a floor)
    # False: reported but left out of the fit, because the program simulated here is known not to
    # be the program the device ran (``excluded`` says why); never to hide a point the model misses
    fit: bool = True
    excluded: str = ""


def _in_its_own_options_scope(build: Callable) -> Callable:
    """``build`` run inside ``with pypto.options():``: a guide's program that calls
    ``set_pass_options`` in its kernel body (upstream's setters are process-wide) changes only its
    own compile, not the options of whatever runs in this process afterwards."""
    @functools.wraps(build)
    def scoped():
        from ..options import options

        with options():
            return build()
    return scoped


def case(**kw) -> Case:
    """Register a case (``CASES[id]``); returns it."""
    kw["build"] = _in_its_own_options_scope(kw["build"])
    c = Case(**kw)
    if c.kind not in KINDS:
        raise ValueError(f"case {c.id}: kind {c.kind!r} is not one of {KINDS}")
    if c.measures not in MEASURES:
        raise ValueError(f"case {c.id}: measures {c.measures!r} is not one of {MEASURES}")
    if c.id in CASES:
        raise ValueError(f"case {c.id} registered twice")
    CASES[c.id] = c
    return c


def load_all() -> dict:
    """Import every corpus module (each registers its cases) and return CASES."""
    import importlib
    import pkgutil

    from . import corpus

    for mod in pkgutil.iter_modules(corpus.__path__):
        importlib.import_module(f"{corpus.__name__}.{mod.name}")
    return CASES


def kernel_span_us(timeline) -> float:
    """First task start to last task end, in microseconds (the device's kernel time)."""
    ev = timeline.events
    starts, ends = _columns(ev)
    if not len(starts):
        return 0.0
    return timeline.machine.cycles_to_us(int(ends.max()) - int(starts.min()))


def end_to_end_us(timeline) -> float:
    """The whole makespan from the launch, in microseconds."""
    return timeline.stats["makespan_us"]


def _columns(ev):
    import numpy as np

    if hasattr(ev, "start") and hasattr(ev, "end") and not callable(ev.start):
        return np.asarray(ev.start), np.asarray(ev.end)
    return np.asarray([e.start for e in ev]), np.asarray([e.end for e in ev])
