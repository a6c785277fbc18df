"""Bitwise and logical operators and the predicates isfinite / isnan.

Dtype lists are upstream's A2/A3 ones minus the unsigned types this build does not compute
(DT_UINT16, DT_UINT32). Logical ops and predicates return BOOL tensors.
"""

from __future__ import annotations

from ..dtypes import (DT_BF16, DT_BOOL, DT_FP16, DT_FP32, DT_INT8, DT_INT16, DT_INT32, DT_INT64,
                      DT_UINT8)
from .common import bcast_flags, broadcast_shapes, check_dtype, emit, tensor_arg, valid_of
from .elementwise import FLOATS, _binary, _binary_compute, _unary, _unary_compute
from .registry import register

BITWISE = (DT_INT8, DT_UINT8, DT_INT16, DT_INT32)
BITWISE_NOT = (DT_BOOL,) + BITWISE
SHIFT = (DT_INT16,)  # A2/A3 shift only 16-bit integers (upstream also lists DT_UINT16)
LOGICAL = (DT_FP32, DT_FP16, DT_BF16, DT_INT8, DT_UINT8, DT_BOOL, DT_INT16, DT_INT32)
ISFINITE = FLOATS + (DT_UINT8, DT_INT8, DT_INT16, DT_INT32, DT_INT64)

for _name, _dts in (("bitwise_and", BITWISE), ("bitwise_or", BITWISE), ("bitwise_xor", BITWISE),
                    ("bitwise_left_shift", SHIFT), ("bitwise_right_shift", SHIFT), ("logical_and", LOGICAL)):
    register(_name, kind="vector", dtypes=_dts)(_binary_compute(_name))
for _name, _dts in (("bitwise_not", BITWISE_NOT), ("logical_not", LOGICAL), ("isfinite", ISFINITE),
                    ("isnan", FLOATS)):
    _compute = _unary_compute(_name)
    _compute.__doc__ = f"torch.{_name} of the valid region."
    register(_name, kind="vector", dtypes=_dts)(_compute)


# ---- bitwise -----------------------------------------------------------------------------------------

def bitwise_and(input, other):
    """Elementwise ``input & other``; ``other`` a tensor of the same dtype (broadcast) or an int.
    int8, uint8, int16, int32."""
    tensor_arg(input, "bitwise_and", "input")
    return _binary("bitwise_and", input, other)


def bitwise_or(input, other):
    """Elementwise ``input | other`` (see bitwise_and for operands and dtypes)."""
    tensor_arg(input, "bitwise_or", "input")
    return _binary("bitwise_or", input, other)


def bitwise_xor(input, other):
    """Elementwise ``input ^ other`` (see bitwise_and for operands and dtypes)."""
    tensor_arg(input, "bitwise_xor", "input")
    return _binary("bitwise_xor", input, other)


def bitwise_not(input):
    """Elementwise ``~input`` (logical not for BOOL). bool, int8, uint8, int16, int32."""
    return _unary("bitwise_not", input)


def bitwise_left_shift(input, other):
    """Elementwise ``input << other`` (bits shifted out are lost). Either side may be an int.
    int16 on A2/A3. Shift amounts outside [0, 16) follow torch (a left shift by 16 or more gives 0)."""
    return _binary("bitwise_left_shift", input, other)


def bitwise_right_shift(input, other):
    """Elementwise arithmetic ``input >> other`` (the sign bit is copied in). Either side may be an
    int. int16 on A2/A3; shift amounts outside [0, 16) follow torch."""
    return _binary("bitwise_right_shift", input, other)


# ---- logical -----------------------------------------------------------------------------------------

def logical_and(input, other):
    """Elementwise ``input != 0 and other != 0`` as a BOOL tensor. Two tensors (broadcast) whose
    dtypes may differ: fp32, fp16, bf16, int8, uint8, bool, int16, int32."""
    tensor_arg(input, "logical_and", "input")
    tensor_arg(other, "logical_and", "other")
    check_dtype("logical_and", input, "input")
    check_dtype("logical_and", other, "other")
    va, vb = input._value, other._value
    shape = broadcast_shapes("logical_and", [va.shape, vb.shape], ["input", "other"])
    attrs = {"bcast": (bcast_flags(va.shape, shape), bcast_flags(vb.shape, shape))}
    return emit("logical_and", [input, other], [(DT_BOOL, shape, valid_of(va, vb, op="logical_and", params=["input", "other"]))], attrs)


def logical_not(input):
    """Elementwise ``input == 0`` as a BOOL tensor. fp32, fp16, bf16, bool, int8, uint8, int16, int32."""
    return _unary("logical_not", input, DT_BOOL)


# ---- predicates --------------------------------------------------------------------------------------

def isfinite(input):
    """Elementwise "neither inf nor NaN" as a BOOL tensor (always True for integers).
    fp32, fp16, bf16, uint8, int8, int16, int32, int64."""
    return _unary("isfinite", input, DT_BOOL)


def isnan(input):
    """Elementwise "is NaN" as a BOOL tensor (inf and -0.0 are not). fp32, fp16, bf16."""
    return _unary("isnan", input, DT_BOOL)
