"""More cube ops: ``scaled_mm`` (block-scaled matmul), ``conv`` and ``experimental.transposed_batchmatmul``.

``scaled_mm(mat_a, mat_b, out_dtype, scale_a, scale_b, ...)`` computes
``(mat_a * scale_a) @ (mat_b * scale_b)`` with MX block scales, as upstream documents: one scale
per row (column) of ``mat_a`` (``mat_b``) and per 32 consecutive elements along K. ``scale_a`` is
``[M, ceil(K/64), 2]`` (``[ceil(K/64), M, 2]`` with ``scale_a_trans``) and ``scale_b``
``[ceil(K/64), N, 2]`` (``[N, ceil(K/64), 2]`` with ``scale_b_trans``): element ``k`` of a row
uses ``scale[.., k // 64, (k % 64) // 32]``. Simplifications of this build:

* Upstream runs it only on the Ascend 950, with fp8 / fp4 operands and e8m0 scales. On the emulated
  950 (``pypto.set_machine("A5")``) the operands may be DT_FP8E4M3 / DT_FP8E5M2 (mixed) and the
  scales DT_FP8E8M0, as there, or DT_FP4_E2M1 (packed bytes decoded on binding,
  pypto/frontend/fp4.py). On every machine this build also takes DT_INT8, DT_FP16 or DT_BF16
  operands (which hold any fp8 value exactly) with DT_FP32 scales (any e8m0 power of two is
  exact), so block-scaled kernels can be tried on the 910B too.
* ``out_dtype`` is DT_FP16, DT_BF16, DT_FP32, or DT_INT8 quantised with ``extend_params``'
  ``scale`` / ``scale_tensor``; ``extend_params`` also takes ``bias_tensor`` and ``relu_type``: the
  matmul's fixpipe epilogue (`pypto.ops.fixpipe`). The product accumulates in fp32.
* It tiles like matmul (one AIC op per output tile reading whole-K rows of operands and scales);
  ``enable_split_k`` is ignored for it.

``conv`` (1-D / 2-D / 3-D convolution, torch semantics) is one whole-tensor task on an AIC core.

``transposed_batchmatmul(a [M, B, K], b [B, K, N], out_dtype)`` is ``permute(a) @ b`` permuted
back to ``[M, B, N]``: built from permute (AIV) and a batched matmul (AIC), fp16/bf16 only. Its
AIV ops run under a vector tile of their own (``TBMM_VEC_TILE``), whatever the caller has set.
"""

from __future__ import annotations

from .._lazy import torch

from ..dtypes import DT_BF16, DT_FP4_E2M1, DT_FP8E4M3, DT_FP8E5M2, DT_FP8E8M0, DT_FP16, DT_FP32, DT_INT8, FP8_DTYPES
from ..enums import ConvReLuType
from ..errors import ArgumentTypeError, ArgumentValueError, DTypeError, KernelRuntimeError, ShapeError
from ..ir import expr as E
from ..runtime.machine import current_machine, has_feature
from .common import check_dtype, dtype_arg, emit, loc, require, same_size, tensor_arg
from .fixpipe import apply_epilogue, parse_extend_params
from .matmul import batch_valid, check_fp8_machine, matmul_dims
from .registry import register

SCALED_MM_IN = (DT_INT8, DT_FP16, DT_BF16, DT_FP8E4M3, DT_FP8E5M2, DT_FP4_E2M1)
SCALE_DTYPES = (DT_FP32, DT_FP8E8M0)  # e8m0 block scales on the 950; fp32 holds any of them exactly
SCALED_MM_OUT = (DT_FP16, DT_BF16, DT_FP32, DT_INT8)  # int8: quantised with extend_params' scale
SCALED_MM_BIAS = (DT_FP16, DT_BF16, DT_FP32)
MX_BLOCK = 32  # elements along K sharing one scale
TBMM_VEC_TILE = (1, 128, 128)  # upstream's fixed vector tile inside transposed_batchmatmul


def _out_dtype(op, out_dtype, allowed):
    dt = dtype_arg(out_dtype, op, "out_dtype")
    if dt not in allowed:
        raise DTypeError(f"pypto.{op}: out_dtype {dt.name} is not supported",
                         expected=" or ".join(d.name for d in allowed), got=dt.name, param="out_dtype", loc=loc())
    return dt


def scaled_mm(mat_a, mat_b, out_dtype, scale_a, scale_b, *, a_trans=False, b_trans=False, scale_a_trans=False,
              scale_b_trans=False, c_matrix_nz=False, extend_params=None):
    """``(mat_a * scale_a) @ (mat_b * scale_b)`` with one scale per row / column and 32 elements of K
    (see the module docstring for the scale layout and this build's dtypes)."""
    tensor_arg(mat_a, "scaled_mm", "mat_a")
    tensor_arg(mat_b, "scaled_mm", "mat_b")
    dt = check_dtype("scaled_mm", mat_a, "mat_a")
    check_fp8_machine("scaled_mm", dt, "mat_a")
    if mat_b.dtype is not dt and not (dt in FP8_DTYPES and mat_b.dtype in FP8_DTYPES):
        raise DTypeError("pypto.scaled_mm: mat_a and mat_b have different dtypes", expected=dt.name,
                         got=mat_b.dtype.name, param="mat_b", loc=loc())
    out_dt = _out_dtype("scaled_mm", out_dtype, SCALED_MM_OUT)
    if c_matrix_nz:
        raise DTypeError("pypto.scaled_mm: c_matrix_nz (NZ output format) is not supported by this build",
                         expected="c_matrix_nz=False", got="True", param="c_matrix_nz", loc=loc())
    a, b = mat_a._value, mat_b._value
    m, n, ka, kb, batch = matmul_dims("scaled_mm", a, b, a_trans, b_trans, ("mat_a", "mat_b"))
    kblocks = E.simplify_dim(E.ceildiv(ka, 2 * MX_BLOCK))
    for name, t, want in (("scale_a", scale_a, (kblocks, m, 2) if scale_a_trans else (m, kblocks, 2)),
                          ("scale_b", scale_b, (n, kblocks, 2) if scale_b_trans else (kblocks, n, 2))):
        tensor_arg(t, "scaled_mm", name)
        check_fp8_machine("scaled_mm", check_dtype("scaled_mm", t, name, SCALE_DTYPES), name)
        s = t._value.shape
        if len(s) != 3 or any(not same_size(x, y, f"pypto.scaled_mm: '{name}' and the operands", loc())
                              for x, y in zip(s, want)):
            raise ShapeError(f"pypto.scaled_mm: '{name}' has the wrong shape", expected=E.render_dims(want),
                             got=E.render_dims(s), param=name, loc=loc())
    ins = [mat_a, mat_b, scale_a, scale_b]
    attrs = {"a_trans": bool(a_trans), "b_trans": bool(b_trans), "scale_a_trans": bool(scale_a_trans),
             "scale_b_trans": bool(scale_b_trans)}
    # the matmul's fixpipe epilogue (upstream's table 2): bias ([N], [1, N] or [B, 1, N]; fp16 / bf16 /
    # fp32 whatever the operands), relu, and the int8 quantisation with a scale or a scale_tensor
    # (int8 operands stand in for fp8 here: only an int8 result quantises, as upstream's table 4)
    parse_extend_params(extend_params, dt, out_dt, n, batch, ins, attrs, op="scaled_mm", bias_allowed=SCALED_MM_BIAS,
                        requant=out_dt is DT_INT8)
    vm = a.valid_shape[-1] if a_trans else a.valid_shape[-2]
    vn = b.valid_shape[-2] if b_trans else b.valid_shape[-1]
    return emit("scaled_mm", ins, [(out_dt, (*batch, m, n), (*batch_valid(a, b, batch), vm, vn))], attrs)


def _block_scales(s, k, like):
    """Scales ``[..., rows, ceil(K/64), 2]`` as ``[..., rows, k]`` lined up with operand ``like``
    (``[(tiles,) batch..., rows, K]``); leading dims of ``s`` are the tile batch or size-1 pads."""
    lead = s.shape[:-3]
    full = s.reshape(*lead, s.shape[-3], -1).repeat_interleave(MX_BLOCK, dim=-1).narrow(-1, 0, k)
    if lead:
        while full.dim() < like.dim():
            full = full.unsqueeze(len(lead))
    return full


def _scales_for_rows(s, rows_k, name, operand):
    """Scales ``[..., R, KB, 2]`` for operand rows ``[..., M, K]`` with ``R <= M``. A view past the
    end of a scale tensor (an NZ operand's padding rows, nz_format.py) has fewer scale rows than
    operand rows; those rows must be zeros, which any scale leaves zero, so they get scale 1. A
    non-zero row without a scale has no defined value: an error, never a guessed number."""
    have, want = s.shape[-3], rows_k.shape[-2]
    if have >= want:
        return s
    if bool(rows_k.narrow(-2, have, want - have).ne(0).any()):
        raise KernelRuntimeError(f"pypto.scaled_mm: rows {have}..{want - 1} of '{operand}' are not zero but "
                                 f"'{name}' has scales for {have} rows only")
    pad = torch.ones((*s.shape[:-3], want - have, *s.shape[-2:]), dtype=s.dtype)
    return torch.cat([s, pad], dim=-3)


@register("scaled_mm", kind="cube", dtypes=SCALED_MM_IN)
def _scaled_mm(ins, attrs, ev):
    """Block-scaled operands multiplied with fp32 accumulation over the valid K extent."""
    a, b, sa, sb = ins[0], ins[1], ins[2].float(), ins[3].float()
    if attrs["a_trans"]:
        a = a.transpose(-1, -2)
    if attrs["b_trans"]:
        b = b.transpose(-1, -2)
    k = min(a.shape[-1], b.shape[-2])
    a, b = a.narrow(-1, 0, k).float(), b.narrow(-2, 0, k).float()
    if attrs["scale_a_trans"]:
        sa = sa.transpose(-3, -2)  # -> [..., M, KB, 2]
    if not attrs["scale_b_trans"]:
        sb = sb.transpose(-3, -2)  # -> [..., N, KB, 2]
    sa = _scales_for_rows(sa, a, "scale_a", "mat_a")
    bt = b.transpose(-1, -2)
    sb = _scales_for_rows(sb, bt, "scale_b", "mat_b")
    a = a * _block_scales(sa, k, a)
    b = b * _block_scales(sb, k, bt).transpose(-1, -2)
    return apply_epilogue(torch.matmul(a, b), ins, attrs)


def transposed_batchmatmul(tensor_a, tensor_b, out_dtype):
    """``a [M, B, K]`` and ``b [B, K, N]`` (fp16 / bf16) to ``[M, B, N]``: ``out[m, i] = a[m, i] @ b[i]``,
    accumulated in fp32 and cast to ``out_dtype`` (fp16 / bf16)."""
    from .elementwise import cast
    from .layout import permute
    from .matmul import matmul

    op = "transposed_batchmatmul"
    tensor_arg(tensor_a, op, "tensor_a")
    tensor_arg(tensor_b, op, "tensor_b")
    for name, t in (("tensor_a", tensor_a), ("tensor_b", tensor_b)):
        if t.dtype not in (DT_FP16, DT_BF16):
            raise DTypeError(f"pypto.experimental.{op} does not accept dtype {t.dtype.name} for '{name}'",
                             expected="DT_FP16, DT_BF16", got=t.dtype.name, param=name, loc=loc())
    if tensor_b.dtype is not tensor_a.dtype:
        raise DTypeError(f"pypto.experimental.{op}: operands have different dtypes", expected=tensor_a.dtype.name,
                         got=tensor_b.dtype.name, param="tensor_b", loc=loc())
    out_dt = _out_dtype(f"experimental.{op}", out_dtype, (DT_FP16, DT_BF16))
    a, b = tensor_a._value, tensor_b._value
    if a.rank != 3 or b.rank != 3 or not same_size(a.shape[1], b.shape[0], f"pypto.experimental.{op}: B of the operands",
                                                    loc()) or not same_size(
            a.shape[2], b.shape[1], f"pypto.experimental.{op}: K of the operands", loc()):
        raise ShapeError(f"pypto.experimental.{op}: operands must be a [M, B, K] and b [B, K, N]",
                         expected="a [M, B, K], b [B, K, N]", got=f"{E.render_dims(a.shape)} and "
                         f"{E.render_dims(b.shape)}", param="tensor_b", loc=loc())
    # as upstream, the op brings its own vector tile for its data movement and restores the
    # caller's afterwards: the caller's tile (often 2-D, set for other ops) does not apply
    tracer = require(f"pypto.experimental.{op}")
    saved = tracer.vec_tile
    tracer.vec_tile = TBMM_VEC_TILE
    try:
        prod = matmul(permute(tensor_a, (1, 0, 2)), tensor_b, DT_FP32)  # [B, M, N] on the cube
        return cast(permute(prod, (1, 0, 2)), out_dt)
    finally:
        tracer.vec_tile = saved


CONV_DTYPES = (DT_FP16, DT_BF16, DT_FP32)


def _int_list(val, n, op, param, lo, hi):
    if not isinstance(val, (list, tuple)) or len(val) != n or any(
            isinstance(v, bool) or not isinstance(v, int) or not lo <= v <= hi for v in val):
        raise ArgumentValueError(f"pypto.{op}: '{param}' must be {n} ints in [{lo}, {hi}]",
                                 expected=f"{n} ints in [{lo}, {hi}]", got=repr(val), param=param, loc=loc())
    return tuple(val)


def conv(input_conv, weight, out_dtype, strides, paddings, dilations, *, groups=1, transposed=False,
         output_paddings=None, extend_params=None):
    """Convolution of ``input_conv`` (NCL / NCHW / NCDHW: 1-D, 2-D, 3-D conv) with ``weight``
    ``[Cout, Cin / groups, *kernel]`` as torch's conv1d/2d/3d, accumulated in fp32.

    ``strides`` / ``dilations`` have one entry per spatial dim (1..63), ``paddings`` two (before,
    after: ``[top, bottom, left, right]`` for 2-D; 0..255, each below the kernel size);
    ``extend_params`` may hold ``bias_tensor`` ``[Cout]`` (the input dtype; fp32 for bf16 input on A2/A3)
    and ``relu_type`` (a ``pypto.ConvReLuType``: RELU applies the fixpipe's relu to the fp32 result).
    ``out_dtype`` must be the input dtype; ``transposed=True`` is not supported (as upstream).
    This build runs it as one whole-tensor (GM to GM) task on an AIC core: upstream's im2col
    tiling (``set_conv_tile_shapes``) is not modelled and is not required.
    """
    op = "conv"
    tensor_arg(input_conv, op, "input_conv")
    tensor_arg(weight, op, "weight")
    dt = check_dtype(op, input_conv, "input_conv")
    if weight.dtype is not dt:
        raise DTypeError("pypto.conv: input_conv and weight have different dtypes", expected=dt.name,
                         got=weight.dtype.name, param="weight", loc=loc())
    out_dt = dtype_arg(out_dtype, op, "out_dtype")
    if out_dt is not dt:
        raise DTypeError("pypto.conv: out_dtype must be the input's dtype", expected=dt.name, got=out_dt.name,
                         param="out_dtype", loc=loc())
    if transposed:
        raise ArgumentValueError("pypto.conv: transposed convolution is not supported", expected="transposed=False",
                                 got="True", param="transposed", loc=loc())
    x, w = input_conv._value, weight._value
    if x.rank != w.rank or x.rank not in (3, 4, 5):
        raise ShapeError("pypto.conv: input_conv and weight must both be 3-D, 4-D or 5-D",
                         expected="equal ranks in 3..5", got=f"ranks {x.rank} and {w.rank}", param="weight",
                         loc=loc())
    nd = x.rank - 2
    if any(not isinstance(s, int) for s in (*x.shape[1:], *w.shape)):
        raise ShapeError("pypto.conv: only the batch dim of input_conv may be dynamic",
                         expected="static channel, spatial and weight dims",
                         got=f"{E.render_dims(x.shape)} and {E.render_dims(w.shape)}", param="input_conv", loc=loc())
    if isinstance(groups, bool) or not isinstance(groups, int) or not 1 <= groups <= 65535:
        raise ArgumentValueError("pypto.conv: 'groups' must be an int in [1, 65535]", got=repr(groups),
                                 param="groups", loc=loc())
    cin, cout, kernel = x.shape[1], w.shape[0], w.shape[2:]
    if cin % groups or cout % groups or w.shape[1] * groups != cin:
        raise ShapeError("pypto.conv: channels do not match groups",
                         expected=f"Cin ({cin}) == weight Cin ({w.shape[1]}) * groups ({groups}), Cout ({cout}) "
                                  f"divisible by groups", got=f"{E.render_dims(x.shape)} and {E.render_dims(w.shape)}",
                         param="weight", loc=loc())
    strides = _int_list(strides, nd, op, "strides", 1, 63)
    dilations = _int_list(dilations, nd, op, "dilations", 1, 63)
    paddings = _int_list(paddings, 2 * nd, op, "paddings", 0, 255)
    if any(paddings[2 * i] >= kernel[i] or paddings[2 * i + 1] >= kernel[i] for i in range(nd)):
        raise ArgumentValueError("pypto.conv: each padding must be smaller than the kernel size",
                                 expected=f"< {list(kernel)}", got=list(paddings), param="paddings", loc=loc())
    spatial = []
    for i in range(nd):
        size = (x.shape[2 + i] + paddings[2 * i] + paddings[2 * i + 1] - dilations[i] * (kernel[i] - 1) - 1) \
            // strides[i] + 1
        if size < 1:
            raise ShapeError("pypto.conv: the output would be empty", expected="output spatial sizes >= 1",
                             got=f"input {E.render_dims(x.shape)}, kernel {list(kernel)}", param="input_conv",
                             loc=loc())
        spatial.append(size)
    ins = [input_conv, weight]
    attrs = {"strides": strides, "paddings": paddings, "dilations": dilations, "groups": groups}
    for key, val in (extend_params or {}).items():
        if key == "relu_type":
            if not isinstance(val, ConvReLuType):
                raise ArgumentTypeError("pypto.conv: extend_params['relu_type'] must be a pypto.ConvReLuType",
                                        expected="pypto.ConvReLuType.NO_RELU or .RELU", got=repr(val),
                                        param="extend_params['relu_type']", loc=loc())
            if val is ConvReLuType.RELU:
                attrs["relu"] = True
            continue
        if key != "bias_tensor":
            raise DTypeError(f"pypto.conv: extend_params key '{key}' is not supported by this build",
                             expected="bias_tensor, relu_type", got=key, param="extend_params", loc=loc())
        tensor_arg(val, op, "extend_params['bias_tensor']")
        # upstream's conv doc: on A2/A3 a bf16 conv takes an fp32 bias; on the 950 the bias has the input's dtype
        on_950 = has_feature(current_machine(), "bf16_bias")
        check_dtype(op, val, "extend_params['bias_tensor']", (DT_FP32,) if dt is DT_BF16 and not on_950 else (dt,))
        if val._value.rank != 1 or val._value.shape[0] != cout:
            raise ShapeError("pypto.conv: bias_tensor must be [Cout]", expected=f"[{cout}]",
                             got=E.render_dims(val._value.shape), param="extend_params['bias_tensor']", loc=loc())
        attrs["bias"] = True
        ins.append(val)
    shape = (x.shape[0], cout, *spatial)
    return emit(op, ins, [(out_dt, shape, (x.valid_shape[0], cout, *spatial))], attrs)


@register("conv", kind="cube", dtypes=CONV_DTYPES)
def _conv(ins, attrs, ev):
    """torch.nn.functional.conv1d/2d/3d in fp32 after explicit (possibly asymmetric) zero padding."""
    F = torch.nn.functional
    x, w = ins[0].float(), ins[1].float()
    nd = x.dim() - 2
    p = attrs["paddings"]
    pad = []
    for i in reversed(range(nd)):  # F.pad lists the last dim first
        pad += [p[2 * i], p[2 * i + 1]]
    x = F.pad(x, pad)
    fn = (F.conv1d, F.conv2d, F.conv3d)[nd - 1]
    bias = ins[2].float() if attrs.get("bias") else None
    out = fn(x, w, bias, stride=attrs["strides"], dilation=attrs["dilations"], groups=attrs["groups"])
    return torch.relu(out) if attrs.get("relu") else out  # the fixpipe's relu, on the fp32 accumulator
