"""matmul: 2-D to 4-D, with transposed operands, out_dtype and the fixpipe epilogue.

The cube unit accumulates in fp32 (int32 for int8 operands); on the way out (the *fixpipe*) the
result may get a bias, a dequantising or quantising scale and a ReLU, in that order, then is
converted to ``out_dtype`` (``extend_params``, as upstream documents them):

* ``bias_tensor``: ``[N]``, ``[1, N]`` or, for a 3-D matmul, ``[B, 1, N]`` (B broadcasting);
  dtype per operand dtype: fp16 -> fp16/fp32, bf16 -> fp32 (A2/A3 have no bf16 bias), fp32 ->
  fp32, int8 -> int32. Added in the accumulator's precision.
* ``scale`` (a float, per tensor) or ``scale_tensor`` (uint64/int64 ``[..., 1, N]``, per output
  column): the fixpipe uses the float whose bits are the low 32 bits of each element (what
  ``torch_npu.npu_trans_quant_param`` makes), and of any scale only sign, exponent and the top 10
  mantissa bits. A scale makes int8 x int8 -> fp16 (dequantise) and x -> int8 (quantise: rounded
  to nearest, ties to even, saturated to [-128, 127]) available.
* ``relu_type``: ``pypto.ReLuType.RELU`` applies max(x, 0) after the scale.
* ``trans_mode``: ``TransMode.CAST_RINT`` / ``CAST_ROUND`` round fp32 operands to TF32 (10 mantissa
  bits; ties to even / away from zero) before the product; fp32 operands only. Upstream lists it
  for Ascend 950; it is computed here whatever ``pypto.platform`` says.
"""

from __future__ import annotations

from .._lazy import torch

from ..dtypes import DT_BF16, DT_FP16, DT_FP32, DT_INT8, DT_INT32, DT_INT64, DT_UINT64
from ..enums import ReLuType, TransMode
from ..errors import DTypeError, KernelRuntimeError, ShapeError
from ..ir import expr as E
from .common import broadcast_shapes, check_dtype, dims_equal, dtype_arg, emit, loc, tensor_arg
from .registry import register

OUT_DTYPES = {DT_FP16: (DT_FP16, DT_FP32), DT_BF16: (DT_BF16, DT_FP32), DT_FP32: (DT_FP32,),
              DT_INT8: (DT_INT32,)}
SCALED_OUT = {DT_INT8: (DT_FP16, DT_INT8), DT_FP16: (DT_INT8,), DT_BF16: (DT_INT8,), DT_FP32: (DT_INT8,)}
BIAS_DTYPES = {DT_FP16: (DT_FP16, DT_FP32), DT_BF16: (DT_FP32,), DT_FP32: (DT_FP32,), DT_INT8: (DT_INT32,)}
_EXTEND_KEYS = ("bias_tensor", "scale", "scale_tensor", "relu_type", "trans_mode")
FIXPIPE_SCALE_MASK = 0xFFFFE000  # sign, 8 exponent bits, the top 10 mantissa bits


def fixpipe_scale(value: float) -> float:
    """``value`` as the fixpipe uses it: fp32 with the mantissa cut to 10 bits."""
    bits = torch.tensor([float(value)], dtype=torch.float32).view(torch.int32)
    return float((bits & _signed32(FIXPIPE_SCALE_MASK)).view(torch.float32).item())


def _signed32(x: int) -> int:
    return x - (1 << 32) if x >= 1 << 31 else x


def matmul(input, mat2, out_dtype=None, *, a_trans=False, b_trans=False, c_matrix_nz=False,
           extend_params=None):
    """``input @ mat2`` on the cube unit, accumulating in fp32 (int32 for int8).

    Operands have equal rank 2 to 4; leading (batch) dims broadcast. ``a_trans``/``b_trans``
    read an operand transposed. ``out_dtype`` follows the cube table: fp16 -> fp16/fp32,
    bf16 -> bf16/fp32, fp32 -> fp32, int8 -> int32 (default: the first entry); with a scale also
    int8 -> fp16 and any -> int8. ``extend_params``: see the module docstring.
    """
    tensor_arg(input, "matmul", "input")
    tensor_arg(mat2, "matmul", "mat2")
    dt = check_dtype("matmul", input, "input")
    if mat2.dtype is not dt:
        raise DTypeError("pypto.matmul: operands have different dtypes", expected=dt.name,
                         got=mat2.dtype.name, param="mat2", loc=loc())
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
    _fixpipe(extend_params, dt, n, batch, ins, attrs)
    scaled = "scale" in attrs or "scale_tensor" in attrs
    out_dt = OUT_DTYPES[dt][0] if out_dtype is None else dtype_arg(out_dtype, "matmul", "out_dtype")
    allowed = OUT_DTYPES[dt] + (SCALED_OUT.get(dt, ()) if scaled else ())
    if out_dt not in allowed:
        extra = SCALED_OUT.get(dt, ())
        raise DTypeError(f"pypto.matmul: out_dtype {out_dt.name} is not available for {dt.name} operands"
                         + (" without a scale" if out_dt in extra else ""),
                         expected=" or ".join(d.name for d in allowed), got=out_dt.name, param="out_dtype",
                         hint=(f"{dt.name} -> {out_dt.name} (de)quantises: give extend_params 'scale' or "
                               f"'scale_tensor'") if out_dt in extra else None, loc=loc())
    if out_dt is DT_INT8:
        attrs["quant_int8"] = True
    shape = (*batch, m, n)
    valid = (*batch, vm, vn)
    return emit("matmul", ins, [(out_dt, shape, valid)], attrs)


def _fixpipe(extend_params, dt, n, batch, ins, attrs) -> None:
    """Check ``extend_params`` and record the epilogue in ``attrs`` (tensors appended to ``ins``)."""
    if extend_params is None:
        return
    if not isinstance(extend_params, dict):
        raise DTypeError("pypto.matmul: extend_params must be a dict", expected="dict or None",
                         got=type(extend_params).__name__, param="extend_params", loc=loc())
    params = dict(extend_params)
    for key in params:
        if key not in _EXTEND_KEYS:
            raise DTypeError(f"pypto.matmul: extend_params key '{key}' is not supported",
                             expected=", ".join(_EXTEND_KEYS), got=key, param="extend_params", loc=loc())
    if "scale" in params and "scale_tensor" in params:
        raise DTypeError("pypto.matmul: extend_params has both 'scale' and 'scale_tensor'",
                         expected="one of them", got="both", param="extend_params", loc=loc())
    if "bias_tensor" in params:
        val = params["bias_tensor"]
        name = "extend_params['bias_tensor']"
        tensor_arg(val, "matmul", name)
        if dt is DT_BF16 and val.dtype is DT_BF16:
            raise DTypeError(f"pypto.matmul: a bf16 {name} is not available on A2/A3, the machine this simulator "
                             "models", expected="DT_FP32", got="DT_BF16", param=name, loc=loc())
        check_dtype("matmul", val, name, BIAS_DTYPES[dt])
        _check_row(val, n, batch, name, "[N], [1, N] or [B, 1, N] (3-D)", max_rank=3 if len(batch) <= 1 else 2)
        attrs["bias"] = len(ins)
        ins.append(val)
    if "scale" in params:
        val = params["scale"]
        if not isinstance(val, (int, float)) or isinstance(val, bool):
            raise DTypeError("pypto.matmul: extend_params['scale'] must be a number", got=repr(val),
                             param="extend_params['scale']", loc=loc())
        attrs["scale"] = fixpipe_scale(val)
    if "scale_tensor" in params:
        val = params["scale_tensor"]
        name = "extend_params['scale_tensor']"
        tensor_arg(val, "matmul", name)
        check_dtype("matmul", val, name, (DT_UINT64, DT_INT64))
        _check_row(val, n, batch, name, "[..., 1, N]", max_rank=2 + len(batch))
        attrs["scale_tensor"] = len(ins)
        ins.append(val)
    if "relu_type" in params:
        val = params["relu_type"]
        if not isinstance(val, ReLuType):
            raise DTypeError("pypto.matmul: extend_params['relu_type'] must be a pypto.ReLuType",
                             expected="pypto.ReLuType.RELU or pypto.ReLuType.NO_RELU", got=repr(val),
                             param="extend_params['relu_type']", loc=loc())
        if val is ReLuType.RELU:
            attrs["relu"] = True
    if "trans_mode" in params:
        val = params["trans_mode"]
        if not isinstance(val, TransMode):
            raise DTypeError("pypto.matmul: extend_params['trans_mode'] must be a pypto.TransMode",
                             expected="CAST_NONE, CAST_RINT or CAST_ROUND", got=repr(val),
                             param="extend_params['trans_mode']", loc=loc())
        if val is not TransMode.CAST_NONE:
            if dt is not DT_FP32:
                raise DTypeError("pypto.matmul: extend_params['trans_mode'] (TF32) needs fp32 operands",
                                 expected="DT_FP32 operands and out_dtype", got=dt.name,
                                 param="extend_params['trans_mode']", loc=loc())
            attrs["tf32"] = val.name


def _check_row(t, n, batch, name, spelled, max_rank) -> None:
    """A per-column operand: ``[..., 1, N]`` whose leading dims broadcast to the batch dims."""
    shape = t._value.shape

    ok = dims_equal(shape[-1], n) and len(shape) <= max_rank
    if ok and len(shape) >= 2:
        ok = isinstance(shape[-2], int) and shape[-2] == 1
        for s, bdim in zip(reversed(shape[:-2]), reversed(batch)):
            ok = ok and ((isinstance(s, int) and s == 1) or dims_equal(s, bdim))
        ok = ok and len(shape) - 2 <= len(batch)
    if not ok:
        raise ShapeError(f"pypto.matmul: {name} must be {spelled}", expected=f"N = {E.render(n)}, batch "
                         f"{E.render_dims(batch)}", got=E.render_dims(shape), param=name, loc=loc())


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
    """Matrix product with fp32 (int32) accumulation over the valid K extent, then the fixpipe:
    bias, scale, ReLU; an int8 result is rounded and saturated here (the cast after is exact)."""
    a, b = ins[0], ins[1]
    if "k_check" in attrs:
        check_k(attrs, ev)
    if attrs["a_trans"]:
        a = a.transpose(-1, -2)
    if attrs["b_trans"]:
        b = b.transpose(-1, -2)
    k = min(a.shape[-1], b.shape[-2])
    a, b = a.narrow(-1, 0, k), b.narrow(-2, 0, k)
    if a.dtype == torch.int8:
        out = torch.matmul(a.to(torch.int32), b.to(torch.int32))
    elif "tf32" in attrs:
        out = torch.matmul(to_tf32(a, attrs["tf32"]), to_tf32(b, attrs["tf32"]))
    else:
        out = torch.matmul(a.float(), b.float())
    n = out.shape[-1]
    if "bias" in attrs:
        bias = ins[attrs["bias"]]  # [N], [1, N], or a batch of tiles [n, 1, N]: broadcasts
        out = out + bias[..., :n].to(out.dtype)
    if "scale" in attrs:
        out = out.float() * attrs["scale"]
    if "scale_tensor" in attrs:
        out = out.float() * scale_of(ins[attrs["scale_tensor"]][..., :n])
    if attrs.get("relu"):
        out = torch.relu(out)
    if attrs.get("quant_int8"):
        out = torch.round(out.float()).clamp_(-128, 127)
    return out


def scale_of(t):
    """The fixpipe scales of a uint64/int64 tensor: the float in each element's low 32 bits, its
    mantissa cut to 10 bits."""
    low = t.view(torch.int64) & FIXPIPE_SCALE_MASK
    low = torch.where(low >= 1 << 31, low - (1 << 32), low)
    return low.to(torch.int32).view(torch.float32)


def to_tf32(x, mode: str):
    """fp32 values rounded to TF32 (10 mantissa bits): ``CAST_RINT`` to nearest with ties to even,
    ``CAST_ROUND`` to nearest with ties away from zero; infinities and NaNs are kept."""
    bits = x.float().contiguous().view(torch.int32)
    if mode == "CAST_RINT":
        bump = 0xFFF + ((bits >> 13) & 1)
    else:
        bump = torch.full_like(bits, 0x1000)
    rounded = ((bits + bump) & _signed32(FIXPIPE_SCALE_MASK)).view(torch.float32)
    return torch.where(torch.isfinite(x.float()), rounded, x.float())
