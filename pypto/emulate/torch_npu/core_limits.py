"""Core limits: ``torch.npu.set_device_limit`` / ``set_stream_limit`` and their getters.

On the device a kernel launches on as many cores as its stream may use: the stream's own limit,
else its device's, else the whole chip. Upstream's runtime makes the AIC and AIV counts fit its
1:2 cluster ratio (``min(cube, vector // 2)`` AIC cores and twice as many AIV cores) and ignores
a limit above the chip's cores. Here kernels run on the simulated machine, so a limit becomes
that machine's core counts: the process's machine is replaced by a copy of the hardware model
with fewer cores (the SoC, buffers and timing stay), and the swimlane files and timings show
only the allowed cores. Kernels always launch on the current stream, the default one
(``torch.npu.set_stream`` orders nothing here), so a limit set on another stream is kept and
reported but changes nothing.
"""

from __future__ import annotations

from ...runtime import machine as _machines

AIC_AIV_RATIO = 2  # upstream's AICAIVRATIO: one AIC core per two AIV cores

_device_limits: dict = {}  # device index -> (cube, vector), either None when not set
_stream_limits: dict = {}  # id(stream) -> (stream, (cube, vector))
_state = {"hardware": None, "limited": None}  # the machine before any limit, and the copy made


def _count(value, param: str, api: str):
    """A limit argument: None or -1 keep the current one; else a positive int."""
    if value is None or (isinstance(value, int) and not isinstance(value, bool) and value == -1):
        return None
    if isinstance(value, bool) or not isinstance(value, int) or value < 1:
        raise ValueError(f"torch.npu.{api}: '{param}' must be a positive int (or -1 to keep it), got {value!r}")
    return value


def _merge(old, cube, vector):
    old_cube, old_vector = old or (None, None)
    return (old_cube if cube is None else cube, old_vector if vector is None else vector)


def _hardware():
    """The machine the limits cut down: the one before any limit, unless it was replaced since."""
    current = _machines._current["machine"]
    if current is not _state["limited"]:
        _state["hardware"] = current
    return _state["hardware"]


def _report(hardware, limits) -> dict:
    cube, vector = limits
    return {"cube_core_num": hardware.aic_cores if cube is None else min(cube, hardware.aic_cores),
            "vector_core_num": hardware.aiv_cores if vector is None else min(vector, hardware.aiv_cores)}


def _apply(device: int, stream) -> None:
    """Make the process's machine the hardware with the cores ``stream`` of ``device`` may use."""
    hardware = _hardware()
    limits = _effective(device, stream)
    cube, vector = (hardware.aic_cores if v is None else v for v in limits)
    blocks = min(cube, vector // AIC_AIV_RATIO, hardware.aic_cores)
    if blocks < 1:  # fewer than two vector cores: no whole cluster, so upstream keeps the chip
        blocks = hardware.aic_cores
    if blocks == hardware.aic_cores and blocks * AIC_AIV_RATIO >= hardware.aiv_cores:
        model = hardware
    else:
        model = hardware.with_(aic_cores=blocks, aiv_cores=min(blocks * AIC_AIV_RATIO, hardware.aiv_cores))
    _state["limited"] = model
    _machines._current["machine"] = model


def _effective(device: int, stream) -> tuple:
    """The (cube, vector) limits a launch on ``stream`` sees: the stream's, within its device's."""
    device_cube, device_vector = _device_limits.get(device, (None, None))
    entry = _stream_limits.get(id(stream))
    stream_cube, stream_vector = entry[1] if entry is not None and entry[0] is stream else (None, None)
    return (_tighter(device_cube, stream_cube), _tighter(device_vector, stream_vector))


def _tighter(a, b):
    return b if a is None else a if b is None else min(a, b)


def set_device_limit(device, cube_num=-1, vector_num=-1, *, current_stream) -> None:
    cube = _count(cube_num, "cube_num", "set_device_limit")
    vector = _count(vector_num, "vector_num", "set_device_limit")
    _device_limits[device] = _merge(_device_limits.get(device), cube, vector)
    _apply(device, current_stream)


def set_stream_limit(device, stream, cube_num=-1, vector_num=-1, *, current_stream) -> None:
    cube = _count(cube_num, "cube_num", "set_stream_limit")
    vector = _count(vector_num, "vector_num", "set_stream_limit")
    entry = _stream_limits.get(id(stream))
    old = entry[1] if entry is not None and entry[0] is stream else None
    _stream_limits[id(stream)] = (stream, _merge(old, cube, vector))
    _apply(device, current_stream)


def reset_stream_limit(device, stream, *, current_stream) -> None:
    _stream_limits.pop(id(stream), None)
    _apply(device, current_stream)


def device_limit(device) -> dict:
    return _report(_hardware(), _device_limits.get(device, (None, None)))


def stream_limit(device, stream) -> dict:
    return _report(_hardware(), _effective(device, stream))
