"""``torch_npu.profiler`` stand-in: accepts the profiling API and records nothing.

There is no device to profile under emulation: ``profile(...)`` is a context manager whose
``start``/``stop``/``step`` do nothing and whose trace handler is never called, so no profiler
folder is written. The simulator's own record of a kernel call is ``kernel.last_run.timeline``;
``debug_options={"runtime_debug_mode": 1}`` writes it as swimlane files (see `pypto.artefacts`).
"""

from __future__ import annotations

import enum


class ProfilerActivity(enum.Enum):
    CPU = "CPU"
    NPU = "NPU"


class ExportType(enum.Enum):
    Text = "text"
    Db = "db"


class ProfilerLevel(enum.Enum):
    Level_none = "Level_none"
    Level0 = "Level0"
    Level1 = "Level1"
    Level2 = "Level2"


class AiCMetrics(enum.Enum):
    AiCoreNone = "AiCoreNone"
    PipeUtilization = "PipeUtilization"
    ArithmeticUtilization = "ArithmeticUtilization"
    Memory = "Memory"
    MemoryL0 = "MemoryL0"
    MemoryUB = "MemoryUB"
    ResourceConflictRatio = "ResourceConflictRatio"
    L2Cache = "L2Cache"


class _ExperimentalConfig:
    """The profiler's extra settings (kept as given)."""

    def __init__(self, **settings):
        self.settings = settings


def schedule(*, wait: int = 0, warmup: int = 0, active: int = 1, repeat: int = 0, skip_first: int = 0):
    """The step schedule (kept as given; nothing is recorded in any step)."""
    return {"wait": wait, "warmup": warmup, "active": active, "repeat": repeat, "skip_first": skip_first}


def tensorboard_trace_handler(dir_name: str, worker_name: str | None = None, analyse_flag: bool = True):
    """A trace handler that would write into ``dir_name``; never called here (nothing is recorded)."""
    def handler(prof) -> None:
        return None

    handler.dir_name = dir_name
    return handler


class profile:  # noqa: N801 - torch_npu's name
    """Context manager accepting torch_npu.profiler.profile's arguments; records nothing."""

    def __init__(self, activities=None, schedule=None, on_trace_ready=None, record_shapes=False,
                 profile_memory=False, with_stack=False, with_flops=False, with_modules=False,
                 experimental_config=None, **kwargs):
        self.activities = list(activities or [])
        self.schedule = schedule
        self.on_trace_ready = on_trace_ready
        self.step_num = 0

    def start(self) -> None:
        return None

    def stop(self) -> None:
        return None

    def step(self) -> None:
        self.step_num += 1

    def __enter__(self):
        self.start()
        return self

    def __exit__(self, *exc) -> None:
        self.stop()
