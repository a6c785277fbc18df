"""The emulated ``torch.npu`` / ``torch_npu.npu`` namespace: one NPU, which is the CPU.

Device selection, synchronisation, memory, streams and events are stand-ins with the same
call shapes as torch_npu's: work runs eagerly on the CPU, so synchronising has nothing to wait
for and streams order nothing. ``NPUGraph`` / ``graph`` capture records the NPU-mode pypto
kernels launched while capturing and ``replay`` launches them again (see :mod:`.graphs`).
Core limits (``set_device_limit`` / ``set_stream_limit``) are not stand-ins: they cut the cores
of the simulated machine kernels run on (see :mod:`.core_limits`).
"""

from __future__ import annotations

import contextlib
import types

import torch

from ...runtime.machine import soc_of
from ..devices import is_npu_device, npu_index
from . import core_limits
from .graphs import NPUGraph, graph, is_current_stream_capturing, make_graphed_callables  # noqa: F401

# What the emulated device reports follows the simulated machine (pypto.set_machine, or
# PYPTO_MACHINE before the process starts): torch_npu's SoC number and upstream's SoC name, 220
# "Ascend910B1" by default (an A2 part), 260 on the A5 (an Ascend 950). Upstream's test filters
# read the number.
DEVICE_COUNT = 1

_current = 0
_initialized = False


def _index(device) -> int:
    if device is None:
        return _current
    if isinstance(device, int):
        index = device
    elif isinstance(device, str) and not is_npu_device(device) and device.isdigit():
        index = int(device)
    elif is_npu_device(device):
        index = npu_index(device)
    else:
        raise ValueError(f"torch.npu: expected an NPU device (an int, 'npu', 'npu:<n>' or torch.device('npu', n)), "
                         f"got {device!r}")
    if not 0 <= index < DEVICE_COUNT:
        raise ValueError(f"torch.npu: device index {index} out of range: the emulation provides "
                         f"{DEVICE_COUNT} NPU (npu:0), which runs on the CPU")
    return index


# ---- devices ------------------------------------------------------------------------------------
def is_available() -> bool:
    return True


def is_initialized() -> bool:
    return _initialized


def init() -> None:
    _lazy_init()


def _is_in_bad_fork() -> bool:  # torch.manual_seed asks the device module before seeding it
    return False


def _lazy_init() -> None:
    global _initialized
    _initialized = True


def device_count() -> int:
    return DEVICE_COUNT


def set_device(device) -> None:
    """Select the current NPU (``0``, ``"npu:0"`` or ``torch.device("npu", 0)``)."""
    global _current
    _current = _index(device)
    _lazy_init()


def current_device() -> int:
    return _current


def _machine():
    from ...runtime.machine import current_machine

    return current_machine()


def get_device_name(device=None) -> str:
    _index(device)
    return f"{soc_of(_machine())[1]} (emulated on the CPU by pypto)"


def get_soc_version() -> int:
    return soc_of(_machine())[0]


def get_device_properties(device=None):
    _index(device)
    m = _machine()
    return types.SimpleNamespace(name=get_device_name(device), total_memory=64 * 2**30, cube_core_num=m.aic_cores,
                                 vector_core_num=m.aiv_cores)


def get_device_capability(device=None):
    _index(device)
    return (0, 0)


def is_bf16_supported() -> bool:
    return True


class device(contextlib.ContextDecorator):
    """``with torch.npu.device(n):`` selects device ``n`` inside the block."""

    def __init__(self, device):
        self.index = _index(device)
        self.previous = None

    def __enter__(self):
        self.previous = current_device()
        set_device(self.index)
        return self

    def __exit__(self, *exc):
        set_device(self.previous)
        return False


def set_device_limit(device, cube_num=-1, vector_num=-1) -> None:
    """Let kernels on ``device`` use at most ``cube_num`` cube (AIC) and ``vector_num`` vector
    (AIV) cores (-1 keeps a count as it is): see :mod:`.core_limits`."""
    core_limits.set_device_limit(_index(device), cube_num, vector_num, current_stream=current_stream())


def set_stream_limit(stream, cube_num=-1, vector_num=-1) -> None:
    """Let kernels launched on ``stream`` use at most ``cube_num`` AIC and ``vector_num`` AIV cores
    (within its device's limit; -1 keeps a count as it is): see :mod:`.core_limits`."""
    core_limits.set_stream_limit(_stream_device(stream), stream, cube_num, vector_num,
                                 current_stream=current_stream())


def reset_stream_limit(stream) -> None:
    """Drop ``stream``'s own limit (its device's applies again)."""
    core_limits.reset_stream_limit(_stream_device(stream), stream, current_stream=current_stream())


def get_device_limit(device) -> dict:
    """``{"cube_core_num": n, "vector_core_num": m}``: the cores kernels on ``device`` may use."""
    return core_limits.device_limit(_index(device))


def get_stream_limit(stream) -> dict:
    """``{"cube_core_num": n, "vector_core_num": m}``: the cores kernels on ``stream`` may use."""
    return core_limits.stream_limit(_stream_device(stream), stream)


def _stream_device(stream) -> int:
    if not isinstance(stream, Stream):
        raise TypeError(f"torch.npu: expected a torch.npu.Stream, got {type(stream).__name__}")
    return _index(stream.device)


# ---- synchronisation and memory -----------------------------------------------------------------
def synchronize(device=None) -> None:
    """Work runs eagerly on the CPU: nothing is ever pending."""
    _index(device)


def empty_cache() -> None:
    pass


def memory_allocated(device=None) -> int:
    return 0


def memory_reserved(device=None) -> int:
    return 0


def max_memory_allocated(device=None) -> int:
    return 0


def max_memory_reserved(device=None) -> int:
    return 0


def reset_peak_memory_stats(device=None) -> None:
    pass


def mem_get_info(device=None) -> tuple[int, int]:
    total = get_device_properties(device).total_memory
    return total, total


# ---- random numbers (the CPU generator is the NPU's) -------------------------------------------
# torch.manual_seed itself calls manual_seed_all of the device module: seed the CPU generator
# directly, never through torch.manual_seed.
def manual_seed(seed: int) -> None:
    torch.default_generator.manual_seed(int(seed))


manual_seed_all = manual_seed


def seed() -> None:
    torch.default_generator.seed()


seed_all = seed


def initial_seed() -> int:
    return torch.initial_seed()


def get_rng_state(device=None):
    return torch.get_rng_state()


def set_rng_state(state, device=None) -> None:
    torch.set_rng_state(state)


# ---- streams and events -------------------------------------------------------------------------
class Stream:
    """An NPU stream stand-in: work is already complete when it is issued."""

    def __init__(self, device=None, priority: int = 0, **kwargs):
        self.device = torch.device("npu", _index(device))
        self.priority = priority

    def synchronize(self) -> None:
        pass

    def query(self) -> bool:
        return True

    def wait_stream(self, stream) -> None:
        pass

    def wait_event(self, event) -> None:
        pass

    def record_event(self, event=None):
        event = event or Event()
        event.record(self)
        return event

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        return False


class Event:
    """An NPU event stand-in; ``elapsed_time`` measures host time between two records."""

    def __init__(self, enable_timing: bool = False, blocking: bool = False, interprocess: bool = False):
        self.enable_timing = enable_timing
        self._time = None

    def record(self, stream=None) -> None:
        import time

        self._time = time.perf_counter()

    def wait(self, stream=None) -> None:
        pass

    def query(self) -> bool:
        return True

    def synchronize(self) -> None:
        pass

    def elapsed_time(self, end: "Event") -> float:
        if self._time is None or end._time is None:
            raise RuntimeError("torch.npu.Event.elapsed_time: both events must be recorded first")
        return (end._time - self._time) * 1000.0


_default_stream = None


def current_stream(device=None) -> Stream:
    global _default_stream
    if _default_stream is None:
        _default_stream = Stream()
    return _default_stream


default_stream = current_stream


def set_stream(stream) -> None:
    pass


@contextlib.contextmanager
def stream(stream=None):
    yield stream


# ---- configuration ------------------------------------------------------------------------------
class _Config(types.SimpleNamespace):
    """``torch.npu.config``: settable flags; the CPU stand-in keeps them and ignores them."""


config = _Config(allow_internal_format=False)
matmul = _Config(allow_hf32=False, allow_tf32=False)
conv = _Config(allow_hf32=False)
