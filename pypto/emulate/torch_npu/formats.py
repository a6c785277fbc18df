"""Tensors with an internal storage format: what ``torch_npu.npu_format_cast`` returns.

On a real NPU only device tensors have a storage format, so scripts check a tensor's format
only once ``tensor.device.type == "npu"``. A cast tensor is therefore an `NpuFormatTensor`: it
reports the current NPU as its device (every other emulated tensor reports the CPU) and keeps
its numbers in the logical (ND) layout, in the CPU storage it shares with the cast's input.
Whatever is computed from it is a plain CPU tensor (a computed tensor has the default ND
format), except what an in-place op returns, which is the tensor itself.
"""

from __future__ import annotations

import torch


class NpuFormatTensor(torch.Tensor):
    """A CPU tensor standing in for an NPU tensor in a non-default storage format."""

    @property
    def device(self) -> torch.device:  # noqa: D401 - torch's attribute
        from . import npu

        return torch.device("npu", npu.current_device())

    @property
    def is_npu(self) -> bool:
        return True

    def __repr__(self, **kwargs) -> str:
        return repr(self.as_subclass(torch.Tensor)) + f" (emulated {self.device}, format {int(self._pypto_npu_format)})"

    @classmethod
    def __torch_function__(cls, func, types, args=(), kwargs=None):
        with torch._C.DisableTorchFunctionSubclass():
            out = func(*args, **(kwargs or {}))
        in_place = getattr(func, "__name__", "").endswith("_") and args and out is args[0]
        return out if in_place else _plain(out)


def _plain(out):
    if isinstance(out, NpuFormatTensor):
        return out.as_subclass(torch.Tensor)
    if isinstance(out, (tuple, list)):
        return type(out)(_plain(o) for o in out)
    return out


def formatted(tensor: torch.Tensor, fmt) -> NpuFormatTensor:
    """An alias of ``tensor`` (same storage and shape) in format ``fmt``."""
    out = tensor.view(tensor.shape).as_subclass(NpuFormatTensor)
    out._pypto_npu_format = fmt
    return out
