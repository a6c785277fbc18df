"""Unary math (trigonometry, rounding, exp/log variants ...) and binary arithmetic beyond add/sub/mul/div.

Each builder holds its op's shape and dtype rule (upstream's A2/A3 dtype lists); each compute is the
reference semantics on torch tensors, shape-agnostic so that it also runs on a batch of tiles.
Float math on fp16/bf16 is computed in fp32 and cast back (``fp32_math``), as upstream does.

Where upstream leaves a result to the chip (integer division by zero), the simulator picks one and
says so in the op's docstring; a compute never raises on any input values, since tail tiles may
hold padding.
"""

from __future__ import annotations

import math as _math

from .._lazy import torch
from ..dtypes import DT_BF16, DT_BOOL, DT_FP16, DT_FP32, DT_INT8, DT_INT16, DT_INT32, DT_UINT8
from ..enums import PrecisionType
from ..errors import ArgumentValueError, DTypeError, ShapeError
from ..frontend.tensor import Tensor
from .common import bcast_flags, broadcast_shapes, check_dtype, emit, loc, scalar_arg, tensor_arg, valid_of
from .elementwise import FLOATS, _binary, _binary_compute, _unary, _unary_compute, align_valid, check_precision
from .registry import register

SIN_COS = (DT_FP32, DT_FP16)  # no bf16 for sin/cos on A2/A3
ROUNDING = FLOATS + (DT_INT32, DT_INT16)  # ceil, floor, trunc, round, expm1, remainder
SIGNED = FLOATS + (DT_INT8, DT_INT16, DT_INT32)  # sign, signbit
EXP2 = FLOATS + (DT_INT32, DT_INT16, DT_INT8, DT_UINT8)
POW = FLOATS + (DT_INT32, DT_INT8, DT_UINT8, DT_INT16)
FLOOR_DIV = FLOATS + (DT_INT32, DT_INT8, DT_UINT8)
GCD = (DT_INT8, DT_INT16, DT_INT32, DT_UINT8)
COPYSIGN = FLOATS + (DT_INT16, DT_INT32)
AXPY = (DT_FP32, DT_FP16)


def _to_fp32_if_int(dt):
    return DT_FP32 if not dt.is_float else dt


# ---- unary math -------------------------------------------------------------------------------------

def _cbrt(x):
    return torch.sign(x) * torch.abs(x).pow(1.0 / 3.0)


def _exp2(x):
    return torch.exp2(x if x.is_floating_point() else x.float())


def _expm1(x):
    return torch.expm1(x if x.is_floating_point() else x.float())


def _signbit(x):
    # upstream: NaN (of either sign) is not negative
    return torch.signbit(x) & ~torch.isnan(x) if x.is_floating_point() else x < 0


# name: dtypes; computes are torch.<name> except the few in _CUSTOM (torch is imported lazily, so
# nothing here may touch it at import time)
_UNARY = {
    "acos": FLOATS, "acosh": FLOATS, "asin": FLOATS, "asinh": FLOATS, "atan": FLOATS, "atanh": FLOATS,
    "cos": SIN_COS, "cosh": FLOATS, "sin": SIN_COS, "sinh": FLOATS, "tan": FLOATS,
    "erf": FLOATS, "erfc": FLOATS, "cbrt": FLOATS, "log10": FLOATS, "log1p": FLOATS, "log2": FLOATS,
    "exp2": EXP2, "expm1": ROUNDING, "ceil": ROUNDING, "floor": ROUNDING, "trunc": ROUNDING,
    "sign": SIGNED, "signbit": SIGNED,
}
_CUSTOM = {"cbrt": _cbrt, "exp2": _exp2, "expm1": _expm1, "signbit": _signbit}


def _unary_fn(fn):
    def compute(ins, attrs, ev):
        return fn(ins[0])

    return compute


for _name, _dts in _UNARY.items():
    _compute = _unary_fn(_CUSTOM[_name]) if _name in _CUSTOM else _unary_compute(_name)
    _compute.__doc__ = f"Elementwise {_name} of the valid region."
    register(_name, kind="vector", fp32_math=True, dtypes=_dts)(_compute)


def acos(input):
    """Elementwise arc cosine, in [0, pi]; NaN where ``|input| > 1``. fp32, fp16, bf16."""
    return _unary("acos", input)


def acosh(input):
    """Elementwise inverse hyperbolic cosine; NaN where ``input < 1``. fp32, fp16, bf16."""
    return _unary("acosh", input)


def asin(input):
    """Elementwise arc sine, in [-pi/2, pi/2]; NaN where ``|input| > 1``. fp32, fp16, bf16."""
    return _unary("asin", input)


def asinh(input):
    """Elementwise inverse hyperbolic sine. fp32, fp16, bf16."""
    return _unary("asinh", input)


def atan(input):
    """Elementwise arc tangent. fp32, fp16, bf16."""
    return _unary("atan", input)


def atanh(input):
    """Elementwise inverse hyperbolic tangent; defined on (-1, 1). fp32, fp16, bf16."""
    return _unary("atanh", input)


def cbrt(input):
    """Elementwise real cube root (negative inputs give negative roots). fp32, fp16, bf16."""
    return _unary("cbrt", input)


def cos(input):
    """Elementwise cosine. fp32, fp16 (no bf16 on A2/A3)."""
    return _unary("cos", input)


def cosh(input):
    """Elementwise hyperbolic cosine. fp32, fp16, bf16."""
    return _unary("cosh", input)


def sin(input):
    """Elementwise sine. fp32, fp16 (no bf16 on A2/A3)."""
    return _unary("sin", input)


def sinh(input):
    """Elementwise hyperbolic sine. fp32, fp16, bf16."""
    return _unary("sinh", input)


def tan(input):
    """Elementwise tangent. fp32, fp16, bf16."""
    return _unary("tan", input)


def erf(input):
    """Elementwise Gauss error function. fp32, fp16, bf16."""
    return _unary("erf", input)


def erfc(input):
    """Elementwise complementary error function ``1 - erf(input)``. fp32, fp16, bf16."""
    return _unary("erfc", input)


def exp2(input):
    """Elementwise ``2 ** input``. Float inputs keep their dtype; int32/int16/int8/uint8 give fp32."""
    return _unary("exp2", input, _to_fp32_if_int)


def expm1(input):
    """Elementwise ``exp(input) - 1``. Float inputs keep their dtype; int32/int16 give fp32."""
    return _unary("expm1", input, _to_fp32_if_int)


def log10(input, precision_type=PrecisionType.INTRINSIC):
    """Elementwise base-10 logarithm; NaN for negative inputs. fp32, fp16, bf16.

    ``precision_type`` is accepted for upstream compatibility; A2/A3 (and the simulator) always
    compute INTRINSIC."""
    check_precision("log10", precision_type)
    return _unary("log10", input)


def log2(input, precision_type=PrecisionType.INTRINSIC):
    """Elementwise base-2 logarithm; NaN for negative inputs. fp32, fp16, bf16 (see log10 for
    ``precision_type``)."""
    check_precision("log2", precision_type)
    return _unary("log2", input)


def log1p(input):
    """Elementwise ``log(1 + input)``, accurate near 0. fp32, fp16, bf16."""
    return _unary("log1p", input)


def ceil(input):
    """Elementwise ceiling. fp32, fp16, bf16, int32, int16 (integers are returned unchanged)."""
    return _unary("ceil", input)


def floor(input):
    """Elementwise floor. fp32, fp16, bf16, int32, int16 (integers are returned unchanged)."""
    return _unary("floor", input)


def trunc(input):
    """Elementwise rounding toward zero. fp32, fp16, bf16, int32, int16 (integers unchanged)."""
    return _unary("trunc", input)


def sign(input):
    """Elementwise sign: -1, 0 or 1 in the input's dtype. fp32, fp16, bf16, int8, int16, int32."""
    return _unary("sign", input)


def signbit(input):
    """Elementwise "is the sign bit set" as a BOOL tensor: True for negatives, -0.0 and -inf;
    False for NaN. fp32, fp16, bf16, int8, int16, int32."""
    return _unary("signbit", input, DT_BOOL)


def round(input, decimals=0):  # noqa: A001 - upstream name
    """Round to ``decimals`` decimal places, halves to even (``torch.round`` semantics: the value is
    scaled by ``10**decimals`` in the computing dtype, fp32 for floats). Integer inputs are unchanged
    for ``decimals >= 0`` and rounded to tens, hundreds ... for negative ``decimals``.
    fp32, fp16, bf16, int32, int16."""
    if isinstance(decimals, bool) or not isinstance(decimals, int):
        raise DTypeError("pypto.round: 'decimals' must be an int", expected="an int",
                         got=f"{type(decimals).__name__} {decimals!r}"[:80], param="decimals", loc=loc())
    return _unary("round", input, attrs={"decimals": decimals})


@register("round", kind="vector", fp32_math=True, dtypes=ROUNDING)
def _round_compute(ins, attrs, ev):
    """Round half to even at ``decimals`` places."""
    x, d = ins[0], attrs["decimals"]
    if x.is_floating_point():
        return torch.round(x, decimals=d)
    if d >= 0:
        return x.clone()
    return torch.round(x.double(), decimals=d).to(torch.int64)


# ---- binary arithmetic ---------------------------------------------------------------------------

def _int_div(x, y, ceil: bool):
    """Integer floor/ceil division; a zero divisor gives the dtype's max (dividend >= 0) or min."""
    zero = y == 0
    xl, yl = x.long(), torch.where(zero, 1, y).long()
    q = -torch.div(-xl, yl, rounding_mode="floor") if ceil else torch.div(xl, yl, rounding_mode="floor")
    info = torch.iinfo(x.dtype)
    return torch.where(zero, torch.where(x >= 0, info.max, info.min), q)


def _floor_div(x, y):
    """``floor(input / other)`` (torch.floor_divide); an integer division by 0 saturates."""
    if x.is_floating_point():
        return torch.floor_divide(x, y)
    return _int_div(x, y, ceil=False)


def _ceil_div(x, y):
    """``ceil(input / other)`` on integers; a division by 0 saturates."""
    return _int_div(x, y, ceil=True)


def _remainder(x, y):
    """``input - other * floor(input / other)`` (sign of the divisor); an integer remainder by 0 is 0."""
    if x.is_floating_point():
        return torch.remainder(x, y)
    zero = y == 0
    r = torch.remainder(x.long(), torch.where(zero, 1, y).long())
    return torch.where(zero, 0, r)


register("fmod", kind="vector", fp32_math=True, dtypes=FLOATS)(_binary_compute("fmod"))
register("remainder", kind="vector", fp32_math=True, dtypes=ROUNDING)(_binary_compute(_remainder))
register("floor_div", kind="vector", fp32_math=True, dtypes=FLOOR_DIV)(_binary_compute(_floor_div))
register("ceil_div", kind="vector", fp32_math=True, dtypes=(DT_INT32,))(_binary_compute(_ceil_div))
register("hypot", kind="vector", fp32_math=True, dtypes=FLOATS)(_binary_compute("hypot"))
register("atan2", kind="vector", fp32_math=True, dtypes=FLOATS)(_binary_compute("atan2"))
register("gcd", kind="vector", dtypes=GCD)(_binary_compute("gcd"))


@register("copysign", kind="vector", dtypes=COPYSIGN)
def _copysign(ins, attrs, ev):
    """torch.copysign on the valid region; integer operands are converted to fp32 first."""
    x, y = align_valid(ins, attrs["bcast"])
    if not x.dtype.is_floating_point:
        x, y = x.float(), y.float()
    return torch.copysign(x, y)


def fmod(input, other, precision_type=PrecisionType.HIGH_PRECISION):
    """Elementwise C-style remainder ``input - trunc(input / other) * other`` (sign of ``input``).

    ``other`` is a tensor of the same dtype (broadcast) or a finite Python number. fp32, fp16, bf16.
    ``precision_type`` is accepted for compatibility (A2/A3 compute INTRINSIC)."""
    tensor_arg(input, "fmod", "input")
    check_precision("fmod", precision_type)
    if isinstance(other, float) and not _math.isfinite(other):
        raise ArgumentValueError("pypto.fmod: 'other' must be finite", expected="a finite number",
                                 got=repr(other), param="other", loc=loc())
    return _binary("fmod", input, other)


def remainder(input, other, precision_type=PrecisionType.HIGH_PRECISION):
    """Elementwise Python-style remainder ``input - other * floor(input / other)`` (sign of ``other``).

    Either side may be a Python number. fp32, fp16, bf16, int32, int16. An integer remainder by 0
    is chip-dependent upstream (0 or -1); the simulator gives 0. Also ``tensor % other``."""
    check_precision("remainder", precision_type)
    return _binary("remainder", input, other)


def floor_div(input, other):
    """Elementwise ``floor(input / other)``; also ``tensor // other``.

    ``other`` is a tensor of the same dtype or a Python number (an int for integer tensors).
    fp32, fp16, bf16, int32, int8, uint8. An integer division by 0 is chip-dependent upstream; the
    simulator saturates to the dtype's max (dividend >= 0) or min."""
    tensor_arg(input, "floor_div", "input")
    return _binary("floor_div", input, other)


def ceil_div(input, other):
    """Elementwise ``ceil(input / other)`` of int32 tensors; ``other`` a tensor or an int.

    (``pypto.ceildiv`` is the symbolic-integer helper for sizes and loop bounds.) Values should stay
    in [-2**24, 2**24] as upstream computes through fp32; a division by 0 saturates (see floor_div)."""
    tensor_arg(input, "ceil_div", "input")
    return _binary("ceil_div", input, other)


def hypot(input, other):
    """Elementwise ``sqrt(input**2 + other**2)`` of two tensors (broadcast). fp32, fp16, bf16."""
    tensor_arg(input, "hypot", "input")
    tensor_arg(other, "hypot", "other")
    return _binary("hypot", input, other)


def atan2(y, x):
    """Elementwise arc tangent of ``y / x`` using both signs for the quadrant, in [-pi, pi]. Two
    tensors (broadcast). fp32, fp16, bf16."""
    tensor_arg(y, "atan2", "input")
    tensor_arg(x, "atan2", "other")
    return _binary("atan2", y, x)


def copysign(input, other):
    """Elementwise magnitude of ``input`` with the sign of ``other`` (two tensors of one dtype,
    broadcast). fp32, fp16, bf16, int16, int32; integer operands give an fp32 result (upstream
    converts them to fp32 first). The sign of -0.0 counts: ``copysign(1, -0.0) = -1``."""
    tensor_arg(input, "copysign", "input")
    tensor_arg(other, "copysign", "other")
    out = DT_FP32 if input.dtype in (DT_INT16, DT_INT32) else None
    return _binary("copysign", input, other, out)


def gcd(input, other):
    """Elementwise greatest common divisor (non-negative; ``gcd(0, 0) = 0``); ``other`` a tensor or
    an int. int8, int16, int32, uint8."""
    tensor_arg(input, "gcd", "input")
    return _binary("gcd", input, other)


# ---- pow -------------------------------------------------------------------------------------------

_POW_RANK = {DT_INT32: 0, DT_BF16: 1, DT_FP16: 2, DT_FP32: 3}


def _pow_dtype(a, b):
    """Upstream's promotion of two tensor operands of pow: fp32 > fp16 > bf16 > int32, fp16 with bf16
    gives fp32; int8/uint8/int16 only combine with themselves."""
    if a is b:
        return a
    if a not in _POW_RANK or b not in _POW_RANK:
        raise DTypeError("pypto.pow: int8/uint8/int16 operands need the same dtype on both sides",
                         expected=a.name, got=b.name, param="other", loc=loc())
    if {a, b} == {DT_FP16, DT_BF16}:
        return DT_FP32
    return max(a, b, key=_POW_RANK.get)


def pow(input, other, precision_type=PrecisionType.HIGH_PRECISION):  # noqa: A001 - upstream name
    """Elementwise ``input ** other``; also ``tensor ** other``.

    ``other`` is a tensor (broadcast; dtypes promote as upstream: fp32 > fp16 > bf16 > int32, fp16
    with bf16 gives fp32, int8/uint8/int16 need equal dtypes) or a Python number: an int keeps the
    input dtype; a float gives fp32 for an int32 input and keeps any other dtype. Integer results
    are computed in float64 and truncated toward zero (``2 ** -1 == 0``).
    fp32, fp16, bf16, int32, int8, uint8, int16."""
    tensor_arg(input, "pow", "input")
    check_precision("pow", precision_type)
    check_dtype("pow", input, "input")
    va = input._value
    if isinstance(other, Tensor):
        check_dtype("pow", other, "other")
        dt = _pow_dtype(input.dtype, other.dtype)
        vb = other._value
        shape = broadcast_shapes("pow", [va.shape, vb.shape], ["input", "other"])
        attrs = {"bcast": (bcast_flags(va.shape, shape), bcast_flags(vb.shape, shape)), "int_result": not dt.is_float}
        return emit("pow", [input, other], [(dt, shape, valid_of(va, vb, op="pow", params=["input", "other"]))], attrs)
    is_float = isinstance(other, float)
    scalar = scalar_arg(other, "pow", "other", DT_FP32 if is_float else input.dtype)
    dt = DT_FP32 if is_float and input.dtype is DT_INT32 else input.dtype
    attrs = {"scalar": scalar, "scalar_first": False, "scalar_float": is_float, "int_result": not dt.is_float}
    return emit("pow", [input], [(dt, va.shape, va.valid_shape)], attrs)


@register("pow", kind="vector", fp32_math=True, dtypes=POW)
def _pow_compute(ins, attrs, ev):
    """``input ** other``: float results in fp32, integer results in float64 truncated toward zero."""
    if len(ins) == 2:
        x, y = align_valid(ins, attrs["bcast"])
    else:
        x, s = ins[0], ev(attrs["scalar"])
        y = torch.tensor(float(s), dtype=torch.float64) if attrs["scalar_float"] else torch.tensor(int(s))
    if attrs["int_result"]:
        r = torch.trunc(torch.pow(x.double(), y.double()))
        return torch.nan_to_num(r, nan=0.0, posinf=2.0 ** 62, neginf=-2.0 ** 62).to(torch.int64)
    return torch.pow(x.float(), y.float())


# ---- axpy_ -----------------------------------------------------------------------------------------

def axpy_(y, x, alpha=1.0):
    """``y + alpha * x`` with ``x`` broadcast to ``y``'s shape (same rank; ``y`` itself never
    broadcasts). fp32 or fp16, both alike, or an fp32 ``y`` with an fp16 ``x``.

    Upstream updates ``y`` in place and returns it; in-place update is not modelled here: the
    result is a new tensor and ``y`` keeps its value (assign it back, ``y = pypto.axpy_(y, x)``, or
    write it with ``y[:] = ...``)."""
    tensor_arg(y, "axpy_", "y")
    tensor_arg(x, "axpy_", "x")
    check_dtype("axpy_", y, "y")
    check_dtype("axpy_", x, "x")
    if x.dtype is not y.dtype and not (y.dtype is DT_FP32 and x.dtype is DT_FP16):
        raise DTypeError("pypto.axpy_: unsupported dtype combination", expected="equal dtypes, or fp32 y with fp16 x",
                         got=f"y {y.dtype.name}, x {x.dtype.name}", param="x", loc=loc())
    if isinstance(alpha, bool) or not isinstance(alpha, (int, float)):
        raise DTypeError("pypto.axpy_: 'alpha' must be an int or a float", expected="int or float",
                         got=f"{type(alpha).__name__}", param="alpha", loc=loc())
    vy, vx = y._value, x._value
    if vy.rank != vx.rank:
        raise ShapeError("pypto.axpy_: 'y' and 'x' must have the same rank", expected=f"rank {vy.rank}",
                         got=f"rank {vx.rank}", param="x", loc=loc())
    shape = broadcast_shapes("axpy_", [vy.shape, vx.shape], ["y", "x"])
    fy = bcast_flags(vy.shape, shape)
    if any(fy):
        raise ShapeError("pypto.axpy_: 'y' cannot broadcast (x broadcasts to y's shape)",
                         expected=f"x broadcastable to {list(vy.shape)}", got=f"x of shape {list(vx.shape)}",
                         param="x", loc=loc())
    attrs = {"alpha": float(alpha), "bcast": (fy, bcast_flags(vx.shape, shape))}
    return emit("axpy_", [y, x], [(y.dtype, vy.shape, valid_of(vy, vx, op="axpy_", params=["y", "x"]))], attrs)


@register("axpy_", kind="vector", fp32_math=True, dtypes=AXPY)
def _axpy_compute(ins, attrs, ev):
    """``y + alpha * x`` (x broadcast)."""
    y, x = align_valid(ins, attrs["bcast"])
    return y.float() + attrs["alpha"] * x.float()
