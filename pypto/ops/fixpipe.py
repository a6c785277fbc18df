"""The matmul epilogue of ``extend_params``: what the cube's output path (the "fixpipe") does to
an accumulated tile on its way to the output, and the TF32 rounding of fp32 operands.

In order: ``bias_tensor`` is added to the accumulator (fp32, or int32 for int8 operands);
``relu_type=ReLuType.RELU`` clamps at zero; a dequantising (int8 operands -> DT_FP16) or
quantising (any operands -> DT_INT8) matmul multiplies by ``scale`` (one float, per tensor) or
``scale_tensor`` (DT_INT64 or DT_UINT64 ``[..., 1, N]``, one scale per output column: the low 32 bits of each
element hold a float32, as ``torch_npu.npu_trans_quant_param`` packs it). The hardware keeps 19
bits of a scale (sign, 8 exponent bits, 10 mantissa bits), so both are cut to that first. An
int8 result rounds to nearest (ties to even) and saturates to [-128, 127].

``trans_mode`` (fp32 operands only) rounds the operands to TF32 (10 mantissa bits) before the
product: ``CAST_RINT`` to nearest, ties to even; ``CAST_ROUND`` to nearest, ties away from zero.
"""

from __future__ import annotations

import struct

from .._lazy import torch

from ..dtypes import DT_BF16, DT_FP16, DT_FP32, DT_INT8, DT_INT32, DT_INT64, DT_UINT64, FP8_DTYPES
from ..enums import ReLuType, TransMode
from ..errors import DTypeError, ShapeError
from ..ir import expr as E
from ..runtime.machine import current_machine, has_feature
from .common import checked_before_the_run, loc, same_size, tensor_arg

# upstream's table 3 on A2/A3 (a bf16 bias is refused there for bf16 operands); the Ascend 950
# takes one (its platform feature "bf16_bias")
BIAS_DTYPES = {DT_FP16: (DT_FP16, DT_FP32), DT_BF16: (DT_FP32,), DT_FP32: (DT_FP32,), DT_INT8: (DT_INT32,)}
BF16_BIAS = (DT_BF16, DT_FP32)
FP8_BIAS = (DT_FP16, DT_BF16, DT_FP32)  # upstream's table 3 (the 950's fp8 operands)


def bias_dtypes(in_dt) -> tuple:
    """The bias dtypes a matmul of ``in_dt`` operands takes on the current machine."""
    if in_dt is DT_BF16 and has_feature(current_machine(), "bf16_bias"):
        return BF16_BIAS
    if in_dt in FP8_DTYPES:
        return FP8_BIAS
    return BIAS_DTYPES.get(in_dt, ())
EXTEND_KEYS = ("bias_tensor", "scale", "scale_tensor", "relu_type", "trans_mode")
SCALE_MASK = 0xFFFFE000  # the 19 bits of a float32 scale the fixpipe keeps
_TF32_DROP = 13  # float32 mantissa bits TF32 drops


def is_requant(in_dt, out_dt) -> bool:
    """Whether the output path (de)quantises: int8 -> fp16, or anything -> int8."""
    return (in_dt is DT_INT8 and out_dt is DT_FP16) or out_dt is DT_INT8


def scale_as_applied(value: float) -> float:
    """``value`` as the fixpipe uses it: a float32 with its 13 lowest mantissa bits cleared."""
    bits = struct.unpack("<I", struct.pack("<f", value))[0] & SCALE_MASK
    return struct.unpack("<f", struct.pack("<I", bits))[0]


def parse_extend_params(extend_params, in_dt, out_dt, n, batch, ins: list, attrs: dict,
                        op: str = "matmul", bias_allowed: tuple | None = None, requant: bool | None = None) -> None:
    """Check ``extend_params`` of a matmul (operands ``in_dt``, result ``out_dt``, N = ``n``,
    batch dims ``batch``), appending operand tensors to ``ins`` and recording the epilogue in
    ``attrs``."""
    params = {k: v for k, v in (extend_params or {}).items() if v is not None}
    for key in params:
        if key not in EXTEND_KEYS:
            raise DTypeError(f"pypto.{op}: extend_params key '{key}' is not supported",
                             expected=", ".join(EXTEND_KEYS), got=key, param="extend_params", loc=loc())
    if "bias_tensor" in params:
        bias = _column_operand(params["bias_tensor"], "bias_tensor", n, batch, allow_1d=True, op=op)
        allowed = bias_allowed if bias_allowed is not None else bias_dtypes(in_dt)
        if bias.dtype not in allowed:
            a2 = (f" (a bf16 bias is not available on A2/A3, the machine simulated here: {current_machine().name};"
                  " the Ascend 950, pypto.set_machine('A5'), takes one)") \
                if in_dt is DT_BF16 and bias.dtype is DT_BF16 else ""
            raise DTypeError(f"pypto.{op}: extend_params['bias_tensor'] of {bias.dtype.name} does not suit "
                             f"{in_dt.name} operands{a2}", expected=" or ".join(d.name for d in allowed) or "no bias",
                             got=bias.dtype.name, param="extend_params['bias_tensor']", loc=loc())
        attrs["bias"] = len(ins)
        ins.append(bias)
        bias_n = bias._value.shape[-1]
        if (isinstance(bias_n, E.Expr) or isinstance(n, E.Expr)) and bias_n != n \
                and not checked_before_the_run(bias_n, n):
            attrs["bias_check"] = (bias_n, n)  # N through a loop index: checked by the leaf at run time
    scale = params.get("scale", 0.0)
    if not isinstance(scale, (int, float)) or isinstance(scale, bool):
        raise DTypeError(f"pypto.{op}: extend_params['scale'] must be a number", got=repr(scale),
                         param="extend_params['scale']", loc=loc())
    has_scale, has_tensor = scale != 0, "scale_tensor" in params
    requant = is_requant(in_dt, out_dt) if requant is None else requant
    if (has_scale or has_tensor) and not requant:
        raise DTypeError(f"pypto.{op}: data type mismatch in the fixpipe (pertensor/perchannel) scenario: a scale "
                         "applies only to a dequantising or quantising matmul",
                         expected="DT_INT8 operands with out_dtype DT_FP16, or out_dtype DT_INT8",
                         got=f"{in_dt.name} operands, out_dtype {out_dt.name}",
                         param="extend_params['scale_tensor']" if has_tensor else "extend_params['scale']",
                         loc=loc())
    if requant and not (has_scale or has_tensor):
        raise DTypeError(f"pypto.{op}: {in_dt.name} operands to out_dtype {out_dt.name} (de)quantise on the way "
                         "out: scale must not be 0.0, or scale_tensor must be given",
                         expected="extend_params with a non-zero 'scale' or a 'scale_tensor'",
                         got=repr(extend_params), param="extend_params", loc=loc())
    if has_scale and has_tensor:
        raise DTypeError(f"pypto.{op}: give one of extend_params 'scale' (per tensor) and 'scale_tensor' (per "
                         "channel)", expected="one of them", got="both", param="extend_params", loc=loc())
    if out_dt is DT_INT8:
        attrs["to_int8"] = True
    if has_scale:
        attrs["scale"] = scale_as_applied(float(scale))
    if has_tensor:
        t = _column_operand(params["scale_tensor"], "scale_tensor", n, batch, allow_1d=False, op=op)
        if t.dtype not in (DT_INT64, DT_UINT64):
            raise DTypeError(f"pypto.{op}: scale_tensor only supports int64 (and uint64) data: the low 32 bits "
                             "hold a float32 scale (torch_npu.npu_trans_quant_param)", expected="DT_INT64 or DT_UINT64",
                             got=t.dtype.name, param="extend_params['scale_tensor']", loc=loc())
        attrs["scale_tensor"] = len(ins)
        ins.append(t)
    relu = params.get("relu_type", ReLuType.NO_RELU)
    if not isinstance(relu, ReLuType) or relu not in (ReLuType.NO_RELU, ReLuType.RELU):
        raise DTypeError(f"pypto.{op}: extend_params['relu_type'] must be a pypto.ReLuType",
                         expected="ReLuType.NO_RELU or ReLuType.RELU", got=repr(relu),
                         param="extend_params['relu_type']", loc=loc())
    if relu == ReLuType.RELU:
        attrs["relu"] = True
    mode = params.get("trans_mode", TransMode.CAST_NONE)
    if isinstance(mode, bool) or mode not in tuple(TransMode):
        raise DTypeError(f"pypto.{op}: extend_params['trans_mode'] must be a pypto.TransMode",
                         expected=", ".join(str(m) for m in TransMode), got=repr(mode),
                         param="extend_params['trans_mode']", loc=loc())
    if mode != TransMode.CAST_NONE:
        if in_dt is not DT_FP32:
            raise DTypeError(f"pypto.{op}: the param of trans_mode is only supported when input data type is "
                             "DT_FP32", expected="DT_FP32 operands", got=in_dt.name,
                             param="extend_params['trans_mode']", loc=loc())
        attrs["tf32"] = int(mode)


def _column_operand(t, name, n, batch, allow_1d, op="matmul"):
    """A per-output-column operand: ``[..., 1, N]`` whose leading dims are 1 or the result's batch
    dims (aligned at the right), or ``[N]`` when ``allow_1d``."""
    param = f"extend_params['{name}']"
    tensor_arg(t, op, param)
    shape = t._value.shape
    lead = shape[:-2]
    ok = same_size(shape[-1], n, f"pypto.{op}: N of {param} and of the product", loc()) and (
        len(shape) > 1 or allow_1d) and (
        len(shape) < 2 or (isinstance(shape[-2], int) and shape[-2] == 1)) and len(lead) <= len(batch) and all(
        (isinstance(s, int) and s == 1) or same_size(s, b, f"pypto.{op}: batch dims of {param} and of the product",
                                                     loc())
        for s, b in zip(lead, batch[len(batch) - len(lead):]))
    if not ok:
        want = "[..., 1, N]" + (" or [N]" if allow_1d else "")
        raise ShapeError(f"pypto.{op}: {name} must be {want}",
                         expected=f"N = {E.render(n)}, a penultimate dim of 1 and leading dims of 1 or the batch "
                                  f"dims {E.render_dims(batch)}", got=E.render_dims(shape), param=param, loc=loc())
    return t


def round_to_tf32(x, mode: int):
    """fp32 ``x`` rounded to TF32 (``TransMode`` value ``mode``); infinities and NaNs pass."""
    bits = x.contiguous().view(torch.int32)
    half = 1 << (_TF32_DROP - 1)
    if mode == TransMode.CAST_RINT:
        bits = bits + (half - 1) + ((bits >> _TF32_DROP) & 1)
    else:  # CAST_ROUND: sign and magnitude, so adding to the magnitude rounds ties away from zero
        bits = bits + half
    out = (bits & ~((1 << _TF32_DROP) - 1)).view(torch.float32)
    return torch.where(torch.isfinite(x), out, x)


def apply_epilogue(acc, ins, attrs):
    """The accumulated tile ``acc`` after bias, ReLU and (de)quantisation (see the module doc)."""
    if "bias" in attrs:
        bias = ins[attrs["bias"]]  # [N], [1, N], [.., 1, N], or a batch of such tiles: broadcasts
        bias = bias.to(acc.dtype) if not acc.dtype.is_floating_point else bias.float()
        acc = acc + bias[..., : acc.shape[-1]]
    if attrs.get("relu"):
        acc = torch.relu(acc)
    if "scale" in attrs:
        acc = acc.float() * attrs["scale"]
    elif "scale_tensor" in attrs:
        packed = ins[attrs["scale_tensor"]][..., : acc.shape[-1]]
        if packed.dtype == torch.uint64:  # same bits; torch has few uint64 kernels
            packed = packed.view(torch.int64)
        scale = (packed & SCALE_MASK).to(torch.int32).contiguous().view(torch.float32)
        acc = acc.float() * scale
    if attrs.get("to_int8"):
        return torch.round(acc.float()).clamp_(-128, 127).to(torch.int8)
    return acc
