"""Upstream's device entry points (``pypto.runtime._device_*``), with the simulator as the device.

The flow they serve::

    pypto.runtime._device_init()
    with pypto.function("MAIN", a, b): ...                     # records and compiles
    pypto.runtime._device_run_once_data_from_host(pypto.from_torch(x), pypto.from_torch(y))
    pypto.runtime._device_fini()

``_device_run_once_data_from_host`` runs the function recorded last, binding the ``from_torch``
tensors to its arguments in order; every argument is updated in place, so the torch tensors
hold the results when it returns. Runs are synchronous: ``_device_synchronize`` has nothing to
wait for. The device is this process's simulator; there is one session per process.
"""

from __future__ import annotations

import threading
import time

from .._lazy import torch
from ..errors import ArgumentTypeError, ArgumentValueError, PyptoRtError, user_loc
from ..ir import expr as E

_lock = threading.Lock()
_session = {"initialized": False, "function": None}


def _device_init() -> None:
    """Open the device session (idempotent)."""
    with _lock:
        _session["initialized"] = True


def _device_fini() -> None:
    """Close the device session; the recorded function stays until another one is recorded."""
    with _lock:
        _session["initialized"] = False


def _device_synchronize() -> None:
    """Wait for the device: runs on the simulator are synchronous, so this returns at once."""


def record_function(fn) -> None:
    """Make ``fn`` (a `RecordedFunction`) the function the device runs next."""
    with _lock:
        _session["function"] = fn


def last_function():
    """The function recorded last by ``pypto.function`` (None before any)."""
    return _session["function"]


def _device_run_once_data_from_host(*tensors) -> None:
    """Run the function recorded last on the data of ``tensors`` (``pypto.from_torch`` results,
    one per function argument, in order); results are written into them in place."""
    from ..frontend.compile import run_compiled
    from ..frontend.host_tensor import HostTensor
    from ..frontend.jit import _simulator
    from ..options import effective
    from ..record import RunRecord

    loc = user_loc(2)
    if not _session["initialized"]:
        raise PyptoRtError("the device is not initialised", expected="pypto.runtime._device_init() first",
                           got="_device_run_once_data_from_host before _device_init (or after _device_fini)",
                           loc=loc)
    fn = _session["function"]
    if fn is None:
        raise PyptoRtError("no function to run", expected="a 'with pypto.function(name, *tensors):' block first",
                           got="_device_run_once_data_from_host before any function was recorded", loc=loc)
    for i, t in enumerate(tensors):
        if not isinstance(t, HostTensor) or t.data is None:
            raise ArgumentTypeError(f"argument {i} of _device_run_once_data_from_host carries no data",
                                    expected="pypto.from_torch(torch_tensor, name)",
                                    got=type(t).__name__ if not isinstance(t, HostTensor) else repr(t),
                                    param=f"args[{i}]", loc=loc)
    if len(tensors) != len(fn.tensors):
        raise ArgumentValueError(f"function '{fn.name}' has {len(fn.tensors)} argument(s)",
                                 expected=", ".join(t.name for t in fn.tensors) or "no tensors",
                                 got=f"{len(tensors)} tensor(s)", param="args", loc=loc)
    env: dict = {}
    data = [_bind(fn, i, param, host, env, loc) for i, (param, host) in enumerate(zip(fn.compiled.program.params,
                                                                                          tensors))]
    opts = effective(None)
    t0 = time.perf_counter()
    _, report = run_compiled(fn.compiled, data, env, opts)
    fn.last_run = RunRecord(fn.last_run is not None, 0.0 if fn.last_run is not None else fn.compiled.compile_seconds,
                            time.perf_counter() - t0, fn.compiled.key_text, fn.compiled, verify=report,
                            simulator=_simulator(fn.compiled, opts))


def _bind(fn, i, param, host, env: dict, loc):
    """The torch tensor that argument ``i`` runs on: ``host``'s data, viewed as the declared shape."""
    value = param.value
    where = f"argument {i} ('{param.name}') of function '{fn.name}'"
    data = host.data
    if not data.is_cpu:
        raise ArgumentTypeError(f"{where} is on device {data.device}",
                                expected="a CPU tensor (the simulator is the device)", got=str(data.device),
                                param=param.name, loc=loc)
    if host.dtype is not value.dtype:
        raise ArgumentTypeError(f"{where} has the wrong dtype", expected=value.dtype.name, got=host.dtype.name,
                                param=param.name, loc=loc)
    want = value.dtype.torch()
    if data.dtype != want:  # from_torch(t, dtype=...): the same bytes read as another dtype
        if data.element_size() != torch.empty((), dtype=want).element_size():
            raise ArgumentTypeError(f"{where}: from_torch(dtype={host.dtype.name}) cannot reinterpret {data.dtype}",
                                    expected=f"a torch tensor whose elements are {value.dtype.bits} bits",
                                    got=str(data.dtype), param=param.name, loc=loc)
        data = data.view(want)
    dims = value.shape
    if data.dim() == len(dims):
        for d, (want_d, got_d) in enumerate(zip(dims, data.shape)):
            if isinstance(want_d, int):
                if want_d != got_d:
                    raise ArgumentValueError(f"{where} has size {got_d} in dim {d}",
                                             expected=f"shape {_render(dims)}", got=f"shape {list(data.shape)}",
                                             param=param.name, loc=loc)
            elif isinstance(want_d, E.Sym):
                if env.setdefault(want_d.name, got_d) != got_d:
                    raise ArgumentValueError(f"{where}: the runtime size {want_d.name} differs between arguments",
                                             expected=f"{want_d.name} == {env[want_d.name]}", got=got_d,
                                             param=param.name, loc=loc)
        return data
    if all(isinstance(d, int) for d in dims) and data.numel() == _numel(dims):
        return data.view(dims)  # same elements, another shape (upstream passes flat buffers too)
    raise ArgumentValueError(f"{where} does not fit the declared shape", expected=f"shape {_render(dims)}",
                             got=f"shape {list(data.shape)} ({data.numel()} elements)", param=param.name, loc=loc)


def _numel(dims) -> int:
    n = 1
    for d in dims:
        n *= d
    return n


def _render(dims) -> str:
    return "[" + ", ".join(E.render(d) for d in dims) + "]"
