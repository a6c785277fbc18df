"""matmul: 2-D to 4-D, with transposed operands, out_dtype and bias/scale epilogues."""

from __future__ import annotations

import struct

from .._lazy import torch

from ..dtypes import DT_BF16, DT_FP16, DT_FP32, DT_INT8, DT_INT32
from ..enums import ReLuType, TransMode
from ..errors import DTypeError, KernelRuntimeError, ShapeError
from ..ir import expr as E
from .common import broadcast_shapes, check_dtype, dims_equal, dtype_arg, emit, loc, tensor_arg
from .registry import register

OUT_DTYPES = {DT_FP16: (DT_FP16, DT_FP32), DT_BF16: (DT_BF16, DT_FP32), DT_FP32: (DT_FP32,),
              DT_INT8: (DT_INT32, DT_FP16)}  # int8 -> fp16 dequantizes: it needs a scale
_EXTEND_KEYS = ("bias_tensor", "scale", "relu_type", "trans_mode")
_TF32_DROPPED_BITS = 13  # fp32 keeps 23 mantissa bits, TF32 10


def matmul(input, mat2, out_dtype=None, *, a_trans=False, b_trans=False, c_matrix_nz=False,
           extend_params=None):
    """``input @ mat2`` on the cube unit, accumulating in fp32 (int32 for int8).

    Operands have equal rank 2 to 4; leading (batch) dims broadcast. ``a_trans``/``b_trans``
    read an operand transposed. ``out_dtype`` follows the cube table: fp16 -> fp16/fp32,
    bf16 -> bf16/fp32, fp32 -> fp32, int8 -> int32 or, dequantized with a ``scale``, fp16
    (default: the first entry).
    ``extend_params`` may hold ``bias_tensor`` (added per output column), ``relu_type``
    (`pypto.ReLuType.RELU`: negative results become 0), ``scale`` (a float multiplying the
    result) -- applied in that order to the accumulated product -- and ``trans_mode``
    (`pypto.TransMode`, fp32 operands and result only): the fp32 operands are first rounded to
    TF32 (10 mantissa bits), to nearest with ties to even (CAST_RINT) or away from zero
    (CAST_ROUND); CAST_NONE leaves them as they are.
    """
    tensor_arg(input, "matmul", "input")
    tensor_arg(mat2, "matmul", "mat2")
    dt = check_dtype("matmul", input, "input")
    if mat2.dtype is not dt:
        raise DTypeError("pypto.matmul: operands have different dtypes", expected=dt.name,
                         got=mat2.dtype.name, param="mat2", loc=loc())
    out_dt = OUT_DTYPES[dt][0] if out_dtype is None else dtype_arg(out_dtype, "matmul", "out_dtype")
    if out_dt not in OUT_DTYPES[dt]:
        raise DTypeError(f"pypto.matmul: out_dtype {out_dt.name} is not available for {dt.name} operands",
                         expected=" or ".join(d.name for d in OUT_DTYPES[dt]), got=out_dt.name,
                         param="out_dtype", loc=loc())
    if c_matrix_nz:
        raise DTypeError("pypto.matmul: c_matrix_nz (NZ output format) is not supported by this build",
                         expected="c_matrix_nz=False", got="True", param="c_matrix_nz", loc=loc())
    a, b = input._value, mat2._value
    m, n, ka, kb, batch = matmul_dims("matmul", a, b, a_trans, b_trans, ("input", "mat2"))
    vm = a.valid_shape[-1] if a_trans else a.valid_shape[-2]
    vn = b.valid_shape[-2] if b_trans else b.valid_shape[-1]
    ins, attrs = [input, mat2], {"a_trans": bool(a_trans), "b_trans": bool(b_trans)}
    if isinstance(ka, E.Expr) and isinstance(kb, E.Expr) and ka != kb:
        attrs["k_check"] = (ka, kb)  # different symbols (e.g. two DYNAMIC dims): must agree at run time
    for key, val in (extend_params or {}).items():
        if key not in _EXTEND_KEYS:
            raise DTypeError(f"pypto.matmul: extend_params key '{key}' is not supported",
                             expected=", ".join(_EXTEND_KEYS), got=key, param="extend_params", loc=loc())
        if key == "bias_tensor":
            tensor_arg(val, "matmul", "extend_params['bias_tensor']")
            bshape = val._value.shape
            if not _bias_fits(bshape, n, batch):
                raise ShapeError("pypto.matmul: bias_tensor must be [N], [1, N] or, for a 3-D matmul, [B, 1, N]",
                                 expected=f"N = {E.render(n)}, B = 1 or the batch {E.render_dims(batch)}",
                                 got=E.render_dims(bshape), param="extend_params['bias_tensor']", loc=loc())
            attrs["bias"] = len(ins)
            ins.append(val)
        elif key == "relu_type":
            if not isinstance(val, ReLuType):
                raise DTypeError("pypto.matmul: extend_params['relu_type'] must be a pypto.ReLuType",
                                 expected="ReLuType.RELU or ReLuType.NO_RELU", got=repr(val),
                                 param="extend_params['relu_type']", loc=loc())
            if val is ReLuType.RELU:
                attrs["relu"] = True
        elif key == "trans_mode":
            if not isinstance(val, TransMode):
                raise DTypeError("pypto.matmul: extend_params['trans_mode'] must be a pypto.TransMode",
                                 expected="TransMode.CAST_NONE, CAST_RINT or CAST_ROUND", got=repr(val),
                                 param="extend_params['trans_mode']", loc=loc())
            if dt is not DT_FP32 or out_dt is not DT_FP32:
                raise DTypeError("pypto.matmul: extend_params['trans_mode'] needs fp32 operands and an fp32 result",
                                 expected="DT_FP32 x DT_FP32 -> DT_FP32", got=f"{dt.name} -> {out_dt.name}",
                                 param="extend_params['trans_mode']", loc=loc())
            if val is not TransMode.CAST_NONE:
                attrs["tf32"] = int(val)
        else:
            if not isinstance(val, (int, float)) or isinstance(val, bool):
                raise DTypeError("pypto.matmul: extend_params['scale'] must be a number", got=repr(val),
                                 param="extend_params['scale']", loc=loc())
            attrs["scale"] = scale_as_applied(float(val))
    if dt is DT_INT8 and out_dt is DT_FP16 and "scale" not in attrs:
        raise DTypeError("pypto.matmul: an fp16 result of int8 operands is dequantized: it needs a scale",
                         expected="extend_params={'scale': float}", got="no scale", param="extend_params",
                         loc=loc())
    shape = (*batch, m, n)
    valid = (*batch, vm, vn)
    return emit("matmul", ins, [(out_dt, shape, valid)], attrs)


def _bias_fits(bshape, n, batch) -> bool:
    """[N], [1, N], or [B, 1, N] with B 1 or the output batch (3-D matmuls only)."""
    if not dims_equal(bshape[-1], n) or len(bshape) > 3 or (len(bshape) == 3 and len(batch) != 1):
        return False
    if len(bshape) >= 2 and not (isinstance(bshape[-2], int) and bshape[-2] == 1):
        return False
    return len(bshape) < 3 or (isinstance(bshape[0], int) and bshape[0] == 1) or dims_equal(bshape[0], batch[0])


def matmul_dims(op, a, b, a_trans, b_trans, names):
    """(M, N, K of a, K of b, batch shape) of ``a @ b``; rank, K and batch mismatches are errors."""
    if not 2 <= a.rank <= 4 or a.rank != b.rank:
        raise ShapeError(f"pypto.{op}: {names[0]} and {names[1]} must have the same rank, 2 to 4",
                         expected="equal ranks in 2..4", got=f"ranks {a.rank} and {b.rank}",
                         param=names[1], loc=loc())
    m, ka = (a.shape[-1], a.shape[-2]) if a_trans else (a.shape[-2], a.shape[-1])
    kb, n = (b.shape[-1], b.shape[-2]) if b_trans else (b.shape[-2], b.shape[-1])
    if not dims_equal(ka, kb):
        raise ShapeError(f"pypto.{op}: inner dims do not match",
                         expected=f"K of {names[0]} ({E.render(ka)}) == K of {names[1]}",
                         got=f"{E.render_dims(a.shape)} @ {E.render_dims(b.shape)}"
                             f" (a_trans={a_trans}, b_trans={b_trans})", param=names[1], loc=loc())
    batch = broadcast_shapes(op, [a.shape[:-2], b.shape[:-2]], list(names))
    return m, n, ka, kb, batch


def check_k(attrs, ev):
    """Two runtime K sizes the trace could not prove equal must agree."""
    ka, kb = ev(attrs["k_check"])
    if ka != kb:
        raise KernelRuntimeError("pypto.matmul: inner dims differ at run time",
                                 expected=f"K of input == K of mat2 ({E.render(attrs['k_check'][0])} == "
                                          f"{E.render(attrs['k_check'][1])})", got=f"{ka} and {kb}")


@register("matmul", kind="cube", dtypes=(DT_FP16, DT_BF16, DT_FP32, DT_INT8))
def _matmul(ins, attrs, ev):
    """Matrix product with fp32 (int32) accumulation over the valid K extent."""
    a, b = ins[0], ins[1]
    if "k_check" in attrs:
        check_k(attrs, ev)
    if attrs["a_trans"]:
        a = a.transpose(-1, -2)
    if attrs["b_trans"]:
        b = b.transpose(-1, -2)
    k = min(a.shape[-1], b.shape[-2])
    a, b = a.narrow(-1, 0, k), b.narrow(-2, 0, k)
    if "tf32" in attrs:
        a, b = round_to_tf32(a, attrs["tf32"]), round_to_tf32(b, attrs["tf32"])
    if a.dtype == torch.int8:
        out = torch.matmul(a.to(torch.int32), b.to(torch.int32))
    else:
        out = torch.matmul(a.float(), b.float())
    return matmul_epilogue(out, ins, attrs)


def matmul_epilogue(out, ins, attrs):
    """What the result gets on its way out of the cube unit: bias, then ReLU, then the scale."""
    if "bias" in attrs:
        bias = ins[attrs["bias"]]  # [N], [1, N], or a batch of tiles [n, 1, N]: broadcasts
        out = out + (bias if out.dtype == torch.int32 and not bias.dtype.is_floating_point else bias.float())[
            ..., : out.shape[-1]]
    if attrs.get("relu"):
        out = torch.relu(out)
    if "scale" in attrs:
        out = out * attrs["scale"]
    return out


def scale_as_applied(scale: float) -> float:
    """The scale the cube's output stage applies: the fp32 value kept to 1 sign, 8 exponent and 10
    mantissa bits (the low mantissa bits dropped)."""
    bits = struct.unpack("<I", struct.pack("<f", scale))[0] & ~((1 << _TF32_DROPPED_BITS) - 1)
    return struct.unpack("<f", struct.pack("<I", bits))[0]


def round_to_tf32(x, mode: int):
    """fp32 values rounded to TF32 (the 13 low mantissa bits cleared): to nearest with ties to even
    (`TransMode.CAST_RINT`) or away from zero (`TransMode.CAST_ROUND`); inf and NaN unchanged."""
    bits = x.contiguous().view(torch.int32).to(torch.int64) & 0xFFFFFFFF
    sign, magnitude = bits & 0x80000000, bits & 0x7FFFFFFF
    half = 1 << (_TF32_DROPPED_BITS - 1)
    if mode == TransMode.CAST_RINT:
        rounded = magnitude + (half - 1) + ((magnitude >> _TF32_DROPPED_BITS) & 1)
    else:
        rounded = magnitude + half
    rounded = rounded & ~((1 << _TF32_DROPPED_BITS) - 1)
    finite = magnitude < 0x7F800000
    result = sign | torch.where(finite, rounded, magnitude)
    result = torch.where(result >= 2 ** 31, result - 2 ** 32, result)
    return result.to(torch.int32).view(torch.float32).reshape(x.shape)
