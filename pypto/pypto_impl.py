"""``pypto.pypto_impl``: the names of upstream's binding module that upstream programs call.

Upstream's Python package sits on a C++ module of this name, and a few of its names are used
directly by upstream's tests and models. Here each one is a thin entry to this package's own
implementation:

* ``ExternalError``: the error numbering (`pypto.errors.ExternalError`).
* ``Element`` and ``ScalarDivS(operand, value, reverse_operand=False)``: a dtype'd scalar, and
  ``operand / value`` (``value / operand`` when reversed), the elementwise `pypto.div` with a
  scalar; fp16, bf16 and fp32 tensors, the Element of the tensor's dtype.
* ``GetCompilerMonitorTotalElapsed()``: seconds the last compilation took (host option
  ``compile_monitor_enable`` on, the default).
* ``DeviceTensorData(dtype, addr, shape)`` and ``SetVerifyData(inputs, outputs, goldens)``: host
  memory described by address, and the golden data of the next verified call
  (`pypto.set_verify_golden_data`).
* ``TileL1Info`` / ``TileL0Info``: conv tile sizes (`pypto.set_conv_tile_shapes`).
* ``SetGlobalConfig({"group.name": value})``: options set at the root (they outlive
  `pypto.reset_options`) and global configuration keys (`pypto.set_global_config`).
* ``RecordFunc``: the recording behind ``with pypto.function(...)``.
* ``log_debug`` ... ``log_fatal``: the package's logger (`pypto.logging`).
* ``DeviceInit()``: opens the simulator's device session; ``LogTopFolder()``: the process's output
  folder, where the pass-verify log goes (``verify/interpreter.log``).

Upstream's IR bindings (``pypto_impl.ir``: IR nodes, builders, structural equality), its device
and profiling entry points other than ``DeviceInit`` and ``LogTopFolder`` (the cost-model runs) and
the tile operations other than ``ScalarDivS`` are not part of this module.
"""

from __future__ import annotations

import ctypes
import math
from typing import Mapping, Sequence

from .config import GLOBAL_CONFIG, TileL0Info, TileL1Info, set_global_config
from .dtypes import DT_BF16, DT_FP16, DT_FP32, DType
from .element import Element
from .enums import ConvReLuType, ReLuType  # upstream's bindings hold the enums of the cube epilogues
from .errors import ArgumentTypeError, ArgumentValueError, ExternalError, OptionError, VerifyDataError, user_loc
from .frontend.compile import compile_monitor_total_elapsed
from .frontend.recording import RecordFunc
from .logging import log_debug, log_error, log_event, log_fatal, log_info, log_warn  # noqa: F401 - upstream names
from .options import OPTIONS, set_root_options

_SCALAR_DIVS_DTYPES = (DT_FP16, DT_BF16, DT_FP32)
# upstream's verify error codes (0xFB400x): golden shape, golden dtype
_VERIFY_SHAPE_DIFF = 0xFB4002
_VERIFY_DTYPE_DIFF = 0xFB4003


def ScalarDivS(operand, value: Element, reverse_operand: bool = False):  # noqa: N802 - upstream's name
    """``operand / value`` elementwise, or ``value / operand`` with ``reverse_operand``."""
    from .ops.common import check_dtype, tensor_arg
    from .ops.elementwise import div

    tensor_arg(operand, "ScalarDivS", "operand")
    check_dtype("ScalarDivS", operand, "operand", _SCALAR_DIVS_DTYPES)
    if not isinstance(value, Element):
        raise ArgumentTypeError("pypto_impl.ScalarDivS: 'value' must be a pypto.Element",
                                expected=f"pypto.Element({operand.dtype.name}, number)",
                                got=f"{type(value).__name__} {value!r}"[:80], param="value", loc=user_loc(2))
    return div(value, operand) if reverse_operand else div(operand, value)


def GetCompilerMonitorTotalElapsed() -> float:  # noqa: N802 - upstream's name
    """Seconds the last monitored compilation took (0.0 before any)."""
    return compile_monitor_total_elapsed()


class DeviceTensorData:
    """Tensor data described by where it lives: ``DeviceTensorData(dtype, addr, shape)``.

    ``addr`` is the address of the first element of a dense row-major buffer of ``shape`` in
    this process's memory (``torch.Tensor.data_ptr()`` of a contiguous CPU tensor; there is no
    device memory here); 0 means "no data". The buffer must stay alive and cover the shape while
    the object is read (`SetVerifyData` copies it at once).
    """

    def __init__(self, dtype: DType, addr: int, shape: Sequence[int]):
        loc = user_loc(2)
        if not isinstance(dtype, DType):
            raise ArgumentTypeError("DeviceTensorData: 'dtype' must be a pypto dtype", got=repr(dtype),
                                    param="dtype", loc=loc)
        if isinstance(addr, bool) or not isinstance(addr, int) or addr < 0:
            raise ArgumentTypeError("DeviceTensorData: 'addr' must be a non-negative int", got=repr(addr),
                                    param="addr", loc=loc)
        if not isinstance(shape, (list, tuple)) or not all(
                isinstance(s, int) and not isinstance(s, bool) and s >= 0 for s in shape):
            raise ArgumentValueError("DeviceTensorData: 'shape' must be a list of sizes >= 0", got=repr(shape),
                                     param="shape", loc=loc)
        self._dtype, self._addr, self._shape = dtype, addr, list(shape)

    def GetDataType(self) -> DType:  # noqa: N802
        return self._dtype

    def GetDataPtr(self) -> int:  # noqa: N802
        return self._addr

    def GetShape(self) -> list:  # noqa: N802
        return list(self._shape)

    def read(self):
        """A CPU torch tensor holding a copy of the data (None for address 0)."""
        import torch

        if self._addr == 0:
            return None
        count = math.prod(self._shape)
        torch_dtype = self._dtype.torch()
        nbytes = count * torch.empty((), dtype=torch_dtype).element_size()
        if nbytes == 0:
            return torch.empty(self._shape, dtype=torch_dtype)
        buffer = (ctypes.c_char * nbytes).from_address(self._addr)
        return torch.frombuffer(bytearray(buffer), dtype=torch_dtype).reshape(self._shape)

    def __repr__(self) -> str:
        return f"DeviceTensorData({self._dtype.name}, 0x{self._addr:x}, {self._shape})"


def SetVerifyData(inputs: Sequence[DeviceTensorData], outputs: Sequence[DeviceTensorData],  # noqa: N802
                  goldens: Sequence[DeviceTensorData]) -> None:
    """The golden data of the next verified call: ``goldens`` pairs with ``inputs + outputs`` in
    order; a golden at address 0 compares nothing. A golden whose dtype or shape differs from its
    tensor's is refused here."""
    loc = user_loc(2)
    tensors = list(inputs) + list(outputs)
    for where, items in (("inputs/outputs", tensors), ("goldens", goldens)):
        for i, d in enumerate(items):
            if not isinstance(d, DeviceTensorData):
                raise ArgumentTypeError(f"SetVerifyData: {where}[{i}] is not a DeviceTensorData",
                                        got=type(d).__name__, param=where, loc=loc)
    if len(goldens) > len(tensors):
        raise ArgumentValueError("SetVerifyData: more goldens than inputs and outputs",
                                 expected=f"at most {len(tensors)}", got=len(goldens), param="goldens", loc=loc)
    for i, (tensor, golden) in enumerate(zip(tensors, goldens)):
        if golden.GetDataPtr() == 0:
            continue
        if golden.GetDataType() is not tensor.GetDataType():
            raise VerifyDataError(_VERIFY_DTYPE_DIFF, f"SetVerifyData: golden {i} has another dtype than its tensor",
                                  expected=tensor.GetDataType().name, got=golden.GetDataType().name,
                                  param=f"goldens[{i}]", loc=loc)
        if golden.GetShape() != tensor.GetShape():
            raise VerifyDataError(_VERIFY_SHAPE_DIFF, f"SetVerifyData: golden {i} has another shape than its tensor",
                                  expected=tensor.GetShape(), got=golden.GetShape(), param=f"goldens[{i}]", loc=loc)
    from .runtime.verify import set_verify_golden_data

    # fewer goldens than tensors: the rest compare nothing; none at all: nothing to compare
    golden_data = [g.read() for g in goldens]
    golden_data += [None] * (len(tensors) - len(golden_data)) if golden_data else []
    set_verify_golden_data([t.read() for t in tensors] or None, golden_data or None)


def DeviceInit() -> None:  # noqa: N802 - upstream's name
    """Open the device session (`pypto.runtime._device_init`; the device is the simulator)."""
    from .runtime import _device_init

    _device_init()


def LogTopFolder() -> str:  # noqa: N802 - upstream's name
    """This process's output folder (`pypto.artefacts.output_folder`), made if needed. Asking for it
    also starts keeping the pass-verify log there (``verify/interpreter.log``, `runtime.verify_log`)."""
    from .artefacts import output_folder
    from .runtime import verify_log

    folder = output_folder()
    verify_log.open_in(folder)
    return folder


def SetGlobalConfig(values: Mapping[str, object]) -> None:  # noqa: N802 - upstream's name
    """Set ``{"group.name": value}`` entries at the root: an option (``"pass.enable_slice"``) goes
    under every scope and outlives `pypto.reset_options`; a global configuration key
    (``"platform.enable_cost_model"``) is set as by `pypto.set_global_config`."""
    loc = user_loc(2)
    if not isinstance(values, Mapping):
        raise OptionError("SetGlobalConfig takes a dict", expected="{'group.name': value}", got=repr(values),
                          param="values", loc=loc)
    by_group: dict[str, dict] = {}
    global_keys = []
    for key, value in values.items():
        group, _, name = str(key).partition(".")
        if (group, name) in OPTIONS:
            by_group.setdefault(f"{group}_options", {})[name] = value
        elif isinstance(key, str) and key.removeprefix("global.") in GLOBAL_CONFIG:
            global_keys.append((key, value))
        else:
            raise OptionError(f"SetGlobalConfig: unknown key {key!r}",
                              expected="'<group>.<option>' (e.g. 'pass.enable_slice') or a global config key",
                              got=repr(key), param="values", loc=loc)
    if by_group:
        set_root_options(**by_group)
    for key, value in global_keys:
        set_global_config(key, value)


__all__ = ["ExternalError", "Element", "ReLuType", "ConvReLuType", "ScalarDivS", "GetCompilerMonitorTotalElapsed", "DeviceTensorData",
           "SetVerifyData", "DeviceInit", "LogTopFolder", "TileL1Info", "TileL0Info", "SetGlobalConfig", "RecordFunc",
           "log_debug", "log_info", "log_warn", "log_error", "log_event", "log_fatal"]
