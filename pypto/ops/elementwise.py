"""Elementwise operators: arithmetic, unary math and activations, comparisons, where, clip, cast."""

from __future__ import annotations

import math

from .._lazy import torch

from ..dtypes import DT_BF16, DT_BOOL, DT_FP16, DT_FP32, DT_INT16, DT_INT32, STORED_ONLY, SUPPORTED_DTYPES
from ..element import Element
from ..enums import CastMode, PrecisionType, SaturationMode
from ..errors import DTypeError
from ..frontend.tensor import Tensor
from .common import (bcast_flags, broadcast_shapes, check_dtype, dtype_arg, emit, loc, scalar_arg,
                     tensor_arg, valid_of)
from .registry import REGISTRY, register

FLOATS = (DT_FP32, DT_FP16, DT_BF16)
NUMERIC = (DT_FP32, DT_FP16, DT_BF16, DT_INT32, DT_INT16)


def check_precision(op: str, precision_type) -> PrecisionType:
    """Check a ``precision_type`` argument. A2/A3 compute every mode as INTRINSIC; so does the
    simulator (HIGH_PRECISION differs only on Ascend 950)."""
    try:
        return PrecisionType(precision_type)
    except (ValueError, TypeError) as e:
        raise DTypeError(f"pypto.{op}: unknown precision_type", expected="a pypto.PrecisionType",
                         got=repr(precision_type), param="precision_type", loc=loc()) from e


def align_valid(ins, bcast):
    """Crop operands to their common valid extent in every non-broadcast dim (tails)."""
    if len({tuple(t.shape) for t in ins}) == 1:
        return ins
    out = list(ins)
    rank = len(bcast[0])
    for d in range(1, rank + 1):
        sizes = [t.shape[-d] for t, b in zip(out, bcast) if t.dim() >= d and not b[-d]]
        if not sizes:
            continue
        m = min(sizes)
        for k, (t, b) in enumerate(zip(out, bcast)):
            if t.dim() >= d and not b[-d] and t.shape[-d] != m:
                out[k] = t.narrow(t.dim() - d, 0, m)
    return out


# ---- binary arithmetic ---------------------------------------------------------------------------

def _binary(op: str, a, b, out_dtype=None):
    ta, tb = isinstance(a, Tensor), isinstance(b, Tensor)
    if ta and tb:
        check_dtype(op, a, "input")
        if a.dtype is not b.dtype:
            raise DTypeError(f"pypto.{op}: 'input' and 'other' have different dtypes", expected="the same dtype",
                             got=f"{a.dtype.name} and {b.dtype.name}", param="other", loc=loc())
        va, vb = a._value, b._value
        shape = broadcast_shapes(op, [va.shape, vb.shape], ["input", "other"])
        attrs = {"bcast": (bcast_flags(va.shape, shape), bcast_flags(vb.shape, shape))}
        return emit(op, [a, b], [(out_dtype or a.dtype, shape, valid_of(va, vb, op=op, params=["input", "other"]))], attrs)
    if not ta and not tb:
        tensor_arg(a, op, "input")
    t, s, first = (a, b, False) if ta else (b, a, True)
    check_dtype(op, t, "input" if ta else "other")
    scalar = scalar_arg(s, op, "other" if ta else "input", t.dtype)
    attrs = {"scalar": scalar, "scalar_first": first}
    return emit(op, [t], [(out_dtype or t.dtype, t._value.shape, t._value.valid_shape)], attrs)


_SCALARS: dict = {}  # (value, sign, dtype) -> 0-dim tensor; bounded: cleared when full


def scalar_tensor(value, dtype):
    """``value`` as a 0-dim tensor of ``dtype`` (a float dtype takes ``float(value)``), made once per
    value: a cached call would otherwise build one per scalar op (~10 us each). The tensor is only
    ever an operand, never written, so one copy serves every op. The key keeps the sign of a zero
    (-0.0 == 0.0 in a dict) and a NaN, never equal to itself, simply misses."""
    if dtype.is_floating_point:
        value = float(value)
    key = (value, math.copysign(1.0, value) if isinstance(value, float) else 0, dtype)
    t = _SCALARS.get(key)
    if t is None:
        if len(_SCALARS) >= 512:
            _SCALARS.clear()
        t = _SCALARS[key] = torch.tensor(value, dtype=dtype)
    return t


def _binary_compute(name):
    """The compute of a binary op: ``name`` is a torch function name or a callable ``fn(x, y)``."""
    fn = name if callable(name) else None

    def compute(ins, attrs, ev):
        nonlocal fn
        if fn is None:  # torch is imported lazily: bind the function on first use
            fn = getattr(torch, name)
        if len(ins) == 2:
            x, y = ins
            if x.shape != y.shape:
                x, y = align_valid(ins, attrs["bcast"])
            return fn(x, y)
        t = ins[0]
        s = scalar_tensor(ev(attrs["scalar"]), t.dtype)
        return fn(s, t) if attrs["scalar_first"] else fn(t, s)

    compute.__doc__ = (name.__doc__ or "").strip() if callable(name) else \
        f"torch.{name} on the valid region (scalars broadcast)."
    return compute


def add(input, other):
    """Elementwise ``input + other`` with broadcasting; either side may be a Python scalar."""
    return _binary("add", input, other)


def sub(input, other):
    """Elementwise ``input - other``."""
    return _binary("sub", input, other)


def mul(input, other):
    """Elementwise ``input * other``."""
    return _binary("mul", input, other)


def div(input, other, precision_type=PrecisionType.HIGH_PRECISION):
    """Elementwise ``input / other`` (float dtypes); ``precision_type`` as in `check_precision`."""
    check_precision("div", precision_type)
    return _binary("div", input, other)


def maximum(input, other):
    """Elementwise maximum."""
    return _binary("maximum", input, other)


def minimum(input, other):
    """Elementwise minimum."""
    return _binary("minimum", input, other)


def _binary_inplace(name):
    """``name`` into its first operand: ``ins[0] = ins[0] <op> ins[1]`` (the caller checks that the
    other operand broadcasts to it), or with the op's scalar."""
    fn = None

    def inplace(ins, attrs, ev):
        nonlocal fn
        if fn is None:  # torch is imported lazily: bind the function on first use
            fn = getattr(torch, name)
        t = ins[0]
        if len(ins) == 2:
            return fn(t, ins[1], out=t)
        s = scalar_tensor(ev(attrs["scalar"]), t.dtype)
        return fn(s, t, out=t) if attrs["scalar_first"] else fn(t, s, out=t)
    return inplace


def _binary_into(name):
    """``name`` into ``dst``, an output view whose shape every operand broadcasts to (the
    generated code checks that)."""
    fn = None

    def into(ins, attrs, ev, dst):
        nonlocal fn
        if fn is None:  # torch is imported lazily: bind the function on first use
            fn = getattr(torch, name)
        if len(ins) == 2:
            return fn(ins[0], ins[1], out=dst)
        t = ins[0]
        s = scalar_tensor(ev(attrs["scalar"]), t.dtype)
        return fn(s, t, out=dst) if attrs["scalar_first"] else fn(t, s, out=dst)
    return into


for _name, _dts in (("add", NUMERIC), ("sub", NUMERIC), ("mul", NUMERIC), ("div", FLOATS), ("maximum", NUMERIC),
                    ("minimum", NUMERIC)):
    register(_name, kind="vector", fp32_math=True, dtypes=_dts,
             inplace=_binary_inplace(_name), into=_binary_into(_name))(_binary_compute(_name))


# ---- comparisons -----------------------------------------------------------------------------------

def eq(input, other):
    """Elementwise ``input == other`` as a BOOL tensor."""
    return _binary("eq", input, other, DT_BOOL)


def ne(input, other):
    """Elementwise ``input != other`` as a BOOL tensor."""
    return _binary("ne", input, other, DT_BOOL)


def gt(input, other):
    """Elementwise ``input > other`` as a BOOL tensor."""
    return _binary("gt", input, other, DT_BOOL)


def greater(input, other):
    """``pypto.gt`` under upstream's other name: elementwise ``input > other`` as a BOOL tensor."""
    return _binary("gt", input, other, DT_BOOL)


def ge(input, other):
    """Elementwise ``input >= other`` as a BOOL tensor."""
    return _binary("ge", input, other, DT_BOOL)


def lt(input, other):
    """Elementwise ``input < other`` as a BOOL tensor."""
    return _binary("lt", input, other, DT_BOOL)


def le(input, other):
    """Elementwise ``input <= other`` as a BOOL tensor."""
    return _binary("le", input, other, DT_BOOL)


for _name, _fn in (("eq", "eq"), ("ne", "ne"), ("gt", "gt"), ("ge", "ge"),
                   ("lt", "lt"), ("le", "le")):
    register(_name, kind="vector", fp32_math=True, dtypes=NUMERIC)(_binary_compute(_fn))


# ---- unary -----------------------------------------------------------------------------------------

def _unary(op: str, x, out_dtype=None, attrs=None):
    """A one-tensor elementwise op; ``out_dtype`` (default: the input's) may be a function of it."""
    tensor_arg(x, op, "input")
    check_dtype(op, x, "input")
    v = x._value
    dt = out_dtype(x.dtype) if callable(out_dtype) else (out_dtype or x.dtype)
    return emit(op, [x], [(dt, v.shape, v.valid_shape)], attrs)


def _unary_compute(name):
    def compute(ins, attrs, ev):
        return getattr(torch, name)(ins[0])

    return compute


_UNARY = {
    "neg": ("neg", NUMERIC), "abs": ("abs", NUMERIC), "relu": ("relu", NUMERIC),
    "exp": ("exp", FLOATS), "log": ("log", FLOATS), "sqrt": ("sqrt", FLOATS),
    "rsqrt": ("rsqrt", FLOATS), "reciprocal": ("reciprocal", FLOATS),
    "sigmoid": ("sigmoid", FLOATS), "tanh": ("tanh", FLOATS),
}
def _unary_inplace(name):
    def inplace(ins, attrs, ev):
        return getattr(torch, name + "_")(ins[0])
    return inplace


def _unary_into(name):
    def into(ins, attrs, ev, dst):
        return getattr(torch, name)(ins[0], out=dst)
    return into


for _name, (_fn, _dts) in _UNARY.items():
    register(_name, kind="vector", fp32_math=True, dtypes=_dts, inplace=_unary_inplace(_fn),
             into=_unary_into(_fn) if _fn != "relu" else None)(_unary_compute(_fn))  # torch.relu has no out=


def neg(input):
    """Elementwise ``-input``."""
    return _unary("neg", input)


def abs(input):  # noqa: A001 - upstream name
    """Elementwise absolute value."""
    return _unary("abs", input)


def relu(input):
    """``max(input, 0)``."""
    return _unary("relu", input)


def exp(input, precision_type=PrecisionType.INTRINSIC):
    """Elementwise ``e**input`` (``precision_type`` as in `check_precision`)."""
    check_precision("exp", precision_type)
    return _unary("exp", input)


def log(input, precision_type=PrecisionType.INTRINSIC):
    """Elementwise natural logarithm (``precision_type`` as in `check_precision`)."""
    check_precision("log", precision_type)
    return _unary("log", input)


def sqrt(input, precision_type=PrecisionType.INTRINSIC):
    """Elementwise square root (``precision_type`` as in `check_precision`)."""
    check_precision("sqrt", precision_type)
    return _unary("sqrt", input)


def rsqrt(input, precision_type=PrecisionType.INTRINSIC):
    """Elementwise ``1 / sqrt(input)`` (``precision_type`` as in `check_precision`)."""
    check_precision("rsqrt", precision_type)
    return _unary("rsqrt", input)


def reciprocal(input, precision_type=PrecisionType.HIGH_PRECISION):
    """Elementwise ``1 / input`` (``precision_type`` as in `check_precision`)."""
    check_precision("reciprocal", precision_type)
    return _unary("reciprocal", input)


def sigmoid(input):
    """Elementwise ``1 / (1 + exp(-input))``."""
    return _unary("sigmoid", input)


def tanh(input):
    """Elementwise hyperbolic tangent."""
    return _unary("tanh", input)


# ---- clip and where --------------------------------------------------------------------------------

def clip(input, min=None, max=None):  # noqa: A002 - upstream names
    """Clamp ``input`` into ``[min, max]``; each bound a scalar, a tensor or None."""
    tensor_arg(input, "clip", "input")
    check_dtype("clip", input, "input")
    if min is None and max is None:
        raise DTypeError("pypto.clip needs 'min' or 'max'", expected="at least one bound", got="neither",
                         param="min", loc=loc())
    ins, shapes, attrs = [input], [input._value.shape], {}
    for name, bound in (("min", min), ("max", max)):
        if isinstance(bound, Tensor):
            if bound.dtype is not input.dtype:
                raise DTypeError(f"pypto.clip: '{name}' has a different dtype than 'input'",
                                 expected=input.dtype.name, got=bound.dtype.name, param=name, loc=loc())
            attrs[name] = len(ins)
            ins.append(bound)
            shapes.append(bound._value.shape)
        elif bound is not None:
            attrs[name + "_scalar"] = scalar_arg(bound, "clip", name, input.dtype)
    names = ["input"] + [n for n in ("min", "max") if n in attrs]
    shape = broadcast_shapes("clip", shapes, names)
    if shape != tuple(input._value.shape) and len(shape) != input.dim:
        pass
    attrs["bcast"] = tuple(bcast_flags(s, shape) for s in shapes)
    return emit("clip", ins, [(input.dtype, shape, valid_of(*[t._value for t in ins], op="clip", params=names))],
                attrs)


@register("clip", kind="vector", fp32_math=True, dtypes=NUMERIC)
def _clip(ins, attrs, ev):
    """Clamp into [min, max]."""
    ins = align_valid(ins, attrs["bcast"])
    x = ins[0]
    lo = ins[attrs["min"]] if "min" in attrs else attrs.get("min_scalar")
    hi = ins[attrs["max"]] if "max" in attrs else attrs.get("max_scalar")
    if lo is not None and not isinstance(lo, torch.Tensor):
        lo = scalar_tensor(ev(lo), x.dtype)
    if hi is not None and not isinstance(hi, torch.Tensor):
        hi = scalar_tensor(ev(hi), x.dtype)
    return torch.clamp(x, lo, hi)


def where(condition, input, other):
    """``input`` where ``condition`` (a BOOL tensor) holds, else ``other``.

    ``input`` / ``other`` may be tensors (of one dtype) or scalars: a `pypto.Element` of the
    tensor's dtype, an int, or a Python float, which is an fp32 value (as upstream: with a tensor
    of another dtype, write ``pypto.Element(dtype, value)``). With two scalars the result has the
    condition's shape and the scalars' dtype.
    """
    tensor_arg(condition, "where", "condition")
    if condition.dtype is not DT_BOOL:
        raise DTypeError("pypto.where: 'condition' must be a BOOL tensor", expected="DT_BOOL",
                         got=condition.dtype.name, param="condition", loc=loc())
    tensors = [t for t in (input, other) if isinstance(t, Tensor)]
    dt = tensors[0].dtype if tensors else _where_scalars_dtype(input, other)
    if len(tensors) == 2 and other.dtype is not dt:
        raise DTypeError("pypto.where: data type inconsistent: 'input' and 'other' have different dtypes",
                         expected=dt.name, got=other.dtype.name, param="other", loc=loc())
    scalars = {}
    for name, x in (("input", input), ("other", other)):
        if not isinstance(x, Tensor):
            if isinstance(x, float) and dt is not DT_FP32:
                raise DTypeError(f"pypto.where: data type inconsistent: a float '{name}' is an fp32 scalar but the "
                                 f"tensor is {dt.name}", expected=f"pypto.Element({dt.name}, {x!r})", got=repr(x),
                                 param=name, loc=loc())
            scalars[name] = scalar_arg(x, "where", name, dt)
    if tensors:
        check_dtype("where", tensors[0], "input" if isinstance(input, Tensor) else "other")
    elif dt not in REGISTRY["where"].dtypes:
        raise DTypeError(f"pypto.where does not accept dtype {dt.name} for its scalars",
                         expected=", ".join(d.name for d in REGISTRY["where"].dtypes), got=dt.name, param="input",
                         loc=loc())
    ins, attrs = [condition], {"dtype": dt}
    for name, x in (("input", input), ("other", other)):
        if isinstance(x, Tensor):
            attrs[name] = len(ins)
            ins.append(x)
        else:
            attrs[name + "_scalar"] = scalars[name]
    names = ["condition"] + [n for n in ("input", "other") if n in attrs]
    shape = broadcast_shapes("where", [t._value.shape for t in ins], names)
    attrs["bcast"] = tuple(bcast_flags(t._value.shape, shape) for t in ins)
    return emit("where", ins, [(dt, shape, valid_of(*[t._value for t in ins], op="where", params=names))], attrs)


def _where_scalars_dtype(input, other):
    """The dtype of a where between two scalars: that of the Elements, fp32 for floats (they
    must agree); DT_INT32 when neither names one (two ints)."""
    def dtype_of(x):
        return x.dtype if isinstance(x, Element) else DT_FP32 if isinstance(x, float) else None

    a, b = dtype_of(input), dtype_of(other)
    if a is not None and b is not None and a is not b:
        raise DTypeError("pypto.where: data type inconsistent: 'input' and 'other' have different dtypes",
                         expected=a.name, got=b.name, param="other", loc=loc())
    return a or b or DT_INT32


@register("where", kind="vector", fp32_math=True, dtypes=NUMERIC)
def _where(ins, attrs, ev):
    """Select elementwise by a boolean mask."""
    ins = align_valid(ins, attrs["bcast"])
    dtype = attrs["dtype"].torch()
    a = ins[attrs["input"]] if "input" in attrs else scalar_tensor(ev(attrs["input_scalar"]), dtype)
    b = ins[attrs["other"]] if "other" in attrs else scalar_tensor(ev(attrs["other_scalar"]), dtype)
    return torch.where(ins[0], a, b)


# ---- cast ------------------------------------------------------------------------------------------

def cast(input, dtype, mode=CastMode.CAST_NONE, satmode=SaturationMode.OFF):
    """Convert ``input`` to ``dtype`` with rounding ``mode`` and saturation ``satmode``."""
    tensor_arg(input, "cast", "input")
    check_dtype("cast", input, "input")
    dt = dtype_arg(dtype, "cast")
    if dt in STORED_ONLY:  # the 950's fp8: moved and fed to the cube; its vector rounding is not modelled
        raise DTypeError(f"pypto.cast: casting to {dt.name} is not supported by this build",
                         expected=", ".join(d.name for d in SUPPORTED_DTYPES), got=dt.name, param="dtype", loc=loc())
    try:
        mode, satmode = CastMode(mode), SaturationMode(satmode)
    except ValueError as e:
        raise DTypeError("pypto.cast: unknown mode", expected="a pypto.CastMode / SaturationMode",
                         got=repr(mode), param="mode", loc=loc()) from e
    v = input._value
    return emit("cast", [input], [(dt, v.shape, v.valid_shape)],
                {"dtype": dt, "mode": int(mode), "satmode": int(satmode)})


def _round(x, mode: int, to_int: bool):
    if mode == CastMode.CAST_NONE:
        return torch.trunc(x) if to_int else x
    if mode == CastMode.CAST_RINT:
        return torch.round(x)
    if mode == CastMode.CAST_ROUND:
        return torch.sign(x) * torch.floor(torch.abs(x) + 0.5)
    if mode == CastMode.CAST_FLOOR:
        return torch.floor(x)
    if mode == CastMode.CAST_CEIL:
        return torch.ceil(x)
    return torch.trunc(x)  # TRUNC, and ODD which only differs for float narrowing


def _cast_into(ins, attrs, ev, dst):
    """A cast between fp32/fp16/bf16 written into ``dst``: the copy rounds as ``.to`` does (the
    mode only matters for float -> int). The leaf passes only such casts (codegen/cpu.py)."""
    return dst.copy_(ins[0])


@register("cast", kind="vector", dtypes=tuple(SUPPORTED_DTYPES), into=_cast_into)
def _cast(ins, attrs, ev):
    """Convert dtype; float->int rounds by mode and saturates (NaN -> 0), as the hardware does."""
    x, dt = ins[0], attrs["dtype"].torch()
    if dt == torch.bool:
        return x != 0
    if x.dtype.is_floating_point and not dt.is_floating_point:
        info = torch.iinfo(dt)
        y = _round(x.float() if x.dtype != torch.float64 else x, attrs["mode"], True)
        y = torch.nan_to_num(y, nan=0.0).clamp(info.min, info.max)
        return y.to(torch.float64).to(dt)
    if not x.dtype.is_floating_point and not dt.is_floating_point and x.dtype != torch.bool \
            and attrs["satmode"] == SaturationMode.ON:
        info = torch.iinfo(dt)
        return x.to(torch.int64).clamp(info.min, info.max).to(dt)
    return x.to(dt)
