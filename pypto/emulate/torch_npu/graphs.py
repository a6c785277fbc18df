"""NPU graph capture on the simulator: capture runs eagerly and records, replay launches again.

On a real NPU, work issued while a graph captures is recorded instead of run, and
``replay()`` runs the recording. Here capture runs the work eagerly (so the captured outputs
already hold numbers) and records every NPU-mode pypto kernel launched meanwhile, with its
arguments and result; ``replay()`` launches those kernels again on the same tensors and copies
fresh returned tensors into the ones the capture returned. Torch operations issued during
capture are not recorded: they ran once, eagerly.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import torch

_capturing: list["NPUGraph"] = []  # innermost graph last


@dataclass
class Launch:
    """One recorded kernel launch."""

    kernel: Any
    args: tuple
    kwargs: dict
    result: Any


@dataclass
class NPUGraph:
    """A recording of NPU-mode kernel launches (``torch.npu.NPUGraph``)."""

    launches: list = field(default_factory=list)
    captured: bool = False

    def capture_begin(self, pool=None, capture_error_mode: str = "global") -> None:
        if self in _capturing:
            raise RuntimeError("NPUGraph.capture_begin: this graph is already capturing")
        self.launches.clear()
        self.captured = False
        _capturing.append(self)

    def capture_end(self) -> None:
        if not _capturing or _capturing[-1] is not self:
            raise RuntimeError("NPUGraph.capture_end: this graph is not the one capturing")
        _capturing.pop()
        self.captured = True

    def replay(self) -> None:
        """Launch the recorded kernels again, in order, on the captured tensors."""
        if not self.captured:
            raise RuntimeError("NPUGraph.replay: capture a graph before replaying it")
        for launch in self.launches:
            _copy_into(launch.result, launch.kernel(*launch.args, **launch.kwargs))

    def reset(self) -> None:
        self.launches.clear()
        self.captured = False

    def pool(self):
        return id(self)

    def debug_dump(self, path: str = "") -> None:
        pass

    __hash__ = object.__hash__
    __eq__ = object.__eq__


def record(kernel, args: tuple, kwargs: dict, result) -> None:
    """Called for every NPU-mode launch: the innermost capturing graph records it."""
    if _capturing:
        _capturing[-1].launches.append(Launch(kernel, args, dict(kwargs), result))


def is_current_stream_capturing() -> bool:
    return bool(_capturing)


def _copy_into(target, fresh) -> None:
    if isinstance(target, torch.Tensor) and isinstance(fresh, torch.Tensor):
        target.copy_(fresh)
    elif isinstance(target, (list, tuple)) and isinstance(fresh, (list, tuple)):
        for t, f in zip(target, fresh):
            _copy_into(t, f)


class graph:
    """``with torch.npu.graph(g):`` captures the NPU-mode kernels the block launches into ``g``."""

    def __init__(self, npu_graph: NPUGraph, pool=None, stream=None, capture_error_mode: str = "global"):
        self.npu_graph = npu_graph

    def __enter__(self):
        self.npu_graph.capture_begin()
        return self.npu_graph

    def __exit__(self, exc_type, exc, tb):
        self.npu_graph.capture_end()
        return False


def make_graphed_callables(callables, sample_args, num_warmup_iters: int = 3, allow_unused_input: bool = False):
    """Graphed callables run eagerly here: the callables are returned unchanged."""
    return callables
