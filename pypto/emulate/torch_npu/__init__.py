"""The emulated ``torch_npu`` package (importable only after ``pypto.emulate.install()``).

It carries the generic surface upstream PyPTO scripts touch: ``torch_npu.npu`` (the same
module as ``torch.npu``), storage formats (``Format``, ``npu_format_cast``, ``get_npu_format``),
``npu_dtype_cast``, ``npu_trans_quant_param``, a ``profiler`` that records nothing, and the
compute ops golden references call (``npu_quantize``, ``npu_dynamic_quant``,
``npu_quant_matmul``, ``npu_swiglu``). Data stays in the logical (ND) layout whatever format a
tensor is given: a format is recorded on the tensor. A pypto kernel sees an NZ tensor in its
NZ-aligned shape, zero-padded, as upstream's ``from_torch`` gives it (pypto/frontend/nz_format.py).
"""

from __future__ import annotations

import enum

import torch

from . import npu  # noqa: F401 - torch_npu.npu
from . import profiler  # noqa: F401 - torch_npu.profiler (records nothing)
from .activation import npu_swiglu  # noqa: F401
from .formats import NpuFormatTensor, formatted
from .quant import npu_trans_quant_param  # noqa: F401
from .quant_matmul import npu_quant_matmul  # noqa: F401
from .quantize import npu_dynamic_quant, npu_quantize  # noqa: F401

__version__ = "0.0.0+pypto.emulate"


class Format(enum.IntEnum):
    """torch_npu's storage formats (the numbers are torch_npu's ``ACL_FORMAT_*`` values)."""

    UNDEFINED = -1
    NCHW = 0
    NHWC = 1
    ND = 2
    NC1HWC0 = 3
    FRACTAL_Z = 4
    NC1HWC0_C04 = 12
    HWCN = 16
    NDHWC = 27
    FRACTAL_NZ = 29
    NCDHW = 30
    NDC1HWC0 = 32
    FRACTAL_Z_3D = 33


def npu_format_cast(tensor: torch.Tensor, acl_format) -> torch.Tensor:
    """The tensor in another storage format: the same numbers (an alias) tagged with the format,
    reporting the NPU as its device (see :mod:`.formats`)."""
    return formatted(tensor, Format(int(acl_format)))


def npu_format_cast_(tensor: torch.Tensor, acl_format) -> torch.Tensor:
    """`npu_format_cast` in place: ``tensor`` itself becomes the formatted tensor."""
    fmt = Format(int(acl_format))
    if type(tensor) is torch.Tensor:
        tensor.__class__ = NpuFormatTensor
    tensor._pypto_npu_format = fmt
    return tensor


def get_npu_format(tensor: torch.Tensor) -> int:
    """The storage format a tensor was given with `npu_format_cast` (ND when none)."""
    return int(getattr(tensor, "_pypto_npu_format", Format.ND))


def npu_dtype_cast(tensor: torch.Tensor, dtype: torch.dtype, input_dtype=None) -> torch.Tensor:
    """``tensor.to(dtype)`` for torch dtypes (torch_npu's own 8-bit float formats are not emulated)."""
    if not isinstance(dtype, torch.dtype) or (input_dtype is not None and not isinstance(input_dtype, torch.dtype)):
        raise TypeError(f"torch_npu.npu_dtype_cast (emulated): only torch dtypes are supported, "
                        f"got dtype={dtype!r}, input_dtype={input_dtype!r}")
    return tensor.to(dtype)
