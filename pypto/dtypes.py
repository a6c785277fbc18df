"""Data types of the PyPTO language.

Every upstream dtype name exists (``pypto.DT_FP8`` ...) so kernels written for upstream import
cleanly; using one this build cannot compute with raises :class:`UnsupportedDTypeError`.
"""

from __future__ import annotations

from dataclasses import dataclass

from .errors import UnsupportedDTypeError


@dataclass(frozen=True)
class DType:
    """One PyPTO data type. ``short`` is the name used in printed IR (``fp32``, ``bf16`` ...)."""

    name: str
    short: str
    itemsize: float  # bytes per element (fractional for 4-bit types)
    kind: str  # "float", "int", "uint", "bool"
    supported: bool
    torch_name: str | None = None

    def __repr__(self) -> str:
        return f"pypto.{self.name}"

    def __str__(self) -> str:  # as upstream's enum prints
        return f"DataType.{self.name}"

    @property
    def is_float(self) -> bool:
        return self.kind == "float"

    @property
    def is_int(self) -> bool:
        return self.kind in ("int", "uint")

    @property
    def is_bool(self) -> bool:
        return self.kind == "bool"

    @property
    def bits(self) -> int:
        return int(self.itemsize * 8)

    def torch(self):
        """The torch dtype that holds this dtype's values (raises if unsupported)."""
        require_supported(self)
        import torch

        return getattr(torch, self.torch_name)


def _d(name, short, itemsize, kind, supported, torch_name=None) -> DType:
    return DType(name, short, itemsize, kind, supported, torch_name)


DT_FP32 = _d("DT_FP32", "fp32", 4, "float", True, "float32")
DT_FP16 = _d("DT_FP16", "fp16", 2, "float", True, "float16")
DT_BF16 = _d("DT_BF16", "bf16", 2, "float", True, "bfloat16")
DT_INT8 = _d("DT_INT8", "int8", 1, "int", True, "int8")
DT_INT16 = _d("DT_INT16", "int16", 2, "int", True, "int16")
DT_INT32 = _d("DT_INT32", "int32", 4, "int", True, "int32")
DT_INT64 = _d("DT_INT64", "int64", 8, "int", True, "int64")
DT_UINT8 = _d("DT_UINT8", "uint8", 1, "uint", True, "uint8")
DT_BOOL = _d("DT_BOOL", "bool", 1, "bool", True, "bool")
# stored and moved only (matmul's per-channel fixpipe scales, extend_params['scale_tensor'])
DT_UINT64 = _d("DT_UINT64", "uint64", 8, "uint", True, "uint64")
# the Ascend 950's 8-bit floats: stored and moved (views, copies, assemble) on every machine;
# computed only by the cube (matmul, scaled_mm with e8m0 block scales) on a machine with the
# "fp8" feature (the A5); no vector op takes them (`SUPPORTED_DTYPES` leaves them out)
DT_FP8E4M3 = _d("DT_FP8E4M3", "fp8e4m3", 1, "float", True, "float8_e4m3fn")
DT_FP8E5M2 = _d("DT_FP8E5M2", "fp8e5m2", 1, "float", True, "float8_e5m2")
DT_FP8E8M0 = _d("DT_FP8E8M0", "fp8e8m0", 1, "float", True, "float8_e8m0fnu")
FP8_DTYPES = (DT_FP8E4M3, DT_FP8E5M2)  # cube operands
# the 950's 4-bit float, passed packed two to a byte (uint8 [..., K/2]) and seen by the kernel with
# its logical shape [..., K]; decoded on binding (pypto/frontend/fp4.py) into bf16, which holds each value
# exactly; read by scaled_mm only, on a machine with the "fp8" feature
DT_FP4_E2M1 = _d("DT_FP4_E2M1", "fp4e2m1", 0.5, "float", True, "bfloat16")
PACKED_FP4 = (DT_FP4_E2M1,)
STORED_ONLY = (DT_FP8E4M3, DT_FP8E5M2, DT_FP8E8M0, DT_FP4_E2M1)

# Named upstream, not computed by this build.
DT_INT4 = _d("DT_INT4", "int4", 0.5, "int", False)
DT_FP8 = _d("DT_FP8", "fp8", 1, "float", False)
DT_HF4 = _d("DT_HF4", "hf4", 0.5, "float", False)
DT_HF8 = _d("DT_HF8", "hf8", 1, "float", False)
DT_FP4_E2M1X2 = _d("DT_FP4_E2M1X2", "fp4e2m1x2", 1, "float", False)
DT_FP4_E1M2 = _d("DT_FP4_E1M2", "fp4e1m2", 0.5, "float", False)
DT_FP4_E1M2X2 = _d("DT_FP4_E1M2X2", "fp4e1m2x2", 1, "float", False)
DT_UINT16 = _d("DT_UINT16", "uint16", 2, "uint", False)
DT_UINT32 = _d("DT_UINT32", "uint32", 4, "uint", False)
DT_DOUBLE = _d("DT_DOUBLE", "fp64", 8, "float", False)
DT_BOTTOM = _d("DT_BOTTOM", "bottom", 0, "bool", False)

ALL_DTYPES: tuple[DType, ...] = tuple(v for v in list(globals().values()) if isinstance(v, DType))
# the dtypes ops compute with (what "expected one of" lists name); STORED_ONLY ones are accepted
# as arguments and by the ops that name them
SUPPORTED_DTYPES: tuple[DType, ...] = tuple(d for d in ALL_DTYPES if d.supported and d not in STORED_ONLY)
FLOAT_DTYPES = (DT_FP32, DT_FP16, DT_BF16)
INT_DTYPES = (DT_INT8, DT_INT16, DT_INT32, DT_INT64, DT_UINT8)


class DataType:
    """Namespace mirroring upstream's ``pypto.DataType`` enum: ``pypto.DataType.DT_FP32``."""


for _dt in ALL_DTYPES:
    setattr(DataType, _dt.name, _dt)

_BY_TORCH_NAME = {d.torch_name: d for d in SUPPORTED_DTYPES}
_TORCH_ONLY = {"float64": DT_DOUBLE, "uint16": DT_UINT16, "uint32": DT_UINT32,
               "float8_e4m3fn": DT_FP8E4M3, "float8_e5m2": DT_FP8E5M2, "float8_e8m0fnu": DT_FP8E8M0,
               "float4_e2m1fn_x2": DT_FP4_E2M1X2}


def require_supported(dtype: DType, *, param: str | None = None, loc=None) -> DType:
    """Return ``dtype`` if this build computes with it, else raise UnsupportedDTypeError."""
    if not dtype.supported:
        raise UnsupportedDTypeError(
            f"dtype {dtype.name} is not supported by this build" + (f" (for {param})" if param else ""),
            expected="one of " + ", ".join(d.name for d in SUPPORTED_DTYPES),
            got=dtype.name, param=param, loc=loc)
    return dtype


def from_torch(torch_dtype, *, param: str | None = None, loc=None) -> DType:
    """The pypto dtype of a torch dtype; an unsupported one raises UnsupportedDTypeError."""
    name = str(torch_dtype).replace("torch.", "")
    dt = _BY_TORCH_NAME.get(name)
    if dt is not None:
        return dt
    if name in _TORCH_ONLY and _TORCH_ONLY[name].supported:
        return _TORCH_ONLY[name]
    if name in _TORCH_ONLY:
        dt = _TORCH_ONLY[name]
        raise UnsupportedDTypeError(
            f"torch dtype {torch_dtype} ({dt.name}) is not supported by this build"
            + (f" (for {param})" if param else ""),
            expected="one of " + ", ".join(f"torch.{d.torch_name}" for d in SUPPORTED_DTYPES),
            got=f"{torch_dtype} ({dt.name})", param=param, loc=loc)
    raise UnsupportedDTypeError(
        f"torch dtype {torch_dtype} has no pypto equivalent" + (f" (for {param})" if param else ""),
        expected="one of " + ", ".join(f"torch.{d.torch_name}" for d in SUPPORTED_DTYPES),
        got=str(torch_dtype), param=param, loc=loc)


def from_numpy(np_dtype, *, param: str | None = None) -> DType:
    name = {"bool": "bool"}.get(str(np_dtype), str(np_dtype))
    return from_torch(name, param=param)


def bytes_of(dtype: DType) -> int:
    """Bytes one element of ``dtype`` occupies (upstream ``pypto.bytes_of``): 4-bit types count
    as one byte, as upstream. ``dtype.itemsize`` keeps the exact (fractional) size."""
    if not isinstance(dtype, DType):
        from .errors import DTypeError

        raise DTypeError("pypto.bytes_of needs a pypto dtype", expected="e.g. pypto.DT_FP32", got=repr(dtype),
                         param="dtype")
    return max(1, int(dtype.itemsize))


def is_dtype(x) -> bool:
    return isinstance(x, DType)
