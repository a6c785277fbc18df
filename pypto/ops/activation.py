"""Activations and normalisation: lrelu, prelu, expand_exp_dif, rms_norm, and the experimental
online-softmax pair (``pypto.experimental.online_softmax`` / ``online_softmax_update``).

* ``lrelu`` and ``expand_exp_dif`` are elementwise (tiled like add); ``prelu`` reads one weight
  per channel (dim 1; the single weight of a 1-D input).
* ``rms_norm`` is not an op of its own: as upstream (``python/pypto/operator.py``) it is composed
  in the builder from cast, mul, sum, add, sqrt, div and reshape, so its tiling (including a last
  dim split over several tiles) and cost come from those ops.
* ``online_softmax`` reduces over dim 0 (the key axis of a ``[k_len, q_len]`` score block) and
  ``online_softmax_update`` merges two such states; both keep dim 0 whole in one tile (upstream:
  "dim 0 is not split") and tile dim 1.
"""

from __future__ import annotations

import math

from .._lazy import torch

from ..dtypes import DT_BF16, DT_FP16, DT_FP32
from ..errors import ArgumentTypeError, ArgumentValueError, DTypeError, ShapeError
from ..frontend.scalar import SymbolicScalar
from .common import (bcast_flags, broadcast_shapes, check_dtype, emit, loc, same_size, tensor_arg,
                     valid_of)
from .elementwise import align_valid
from .registry import register

FLOATS = (DT_FP32, DT_FP16, DT_BF16)


def _float_scalar(x, op: str, param: str, *, allow_negative=True) -> float:
    if isinstance(x, bool) or not isinstance(x, (int, float)):
        raise ArgumentTypeError(f"pypto.{op}: '{param}' must be a float", expected="a Python float or int",
                                got=f"{type(x).__name__} {x!r}"[:80], param=param, loc=loc())
    x = float(x)
    if math.isnan(x) or math.isinf(x):
        raise ArgumentValueError(f"pypto.{op}: '{param}' must be finite", got=repr(x), param=param, loc=loc())
    if not allow_negative and x < 0:
        raise ArgumentValueError(f"pypto.{op}: '{param}' must be non-negative", expected=">= 0", got=repr(x),
                                 param=param, loc=loc())
    return x


# ---- lrelu ----------------------------------------------------------------------------------------

def lrelu(input, negative_slope=0.01):
    """Leaky ReLU: ``input`` where ``input >= 0``, else ``negative_slope * input``.

    ``negative_slope`` is a non-negative finite float (upstream rejects negative, NaN and inf);
    fp16/bf16 inputs are computed in fp32 and cast back, as upstream does.
    """
    tensor_arg(input, "lrelu", "input")
    check_dtype("lrelu", input, "input")
    slope = _float_scalar(negative_slope, "lrelu", "negative_slope", allow_negative=False)
    v = input._value
    return emit("lrelu", [input], [(input.dtype, v.shape, v.valid_shape)], {"negative_slope": slope})


@register("lrelu", kind="vector", fp32_math=True, dtypes=FLOATS)
def _lrelu(ins, attrs, ev):
    """where(x >= 0, x, negative_slope * x)."""
    x = ins[0]
    return torch.where(x >= 0, x, x * attrs["negative_slope"])


# ---- prelu ----------------------------------------------------------------------------------------

def prelu(input, weight):
    """Parametric ReLU: ``input`` where ``input >= 0``, else ``weight[c] * input``.

    ``weight`` is 1-D with the dtype of ``input``: one value per channel (dim 1) of a 2-4-D input,
    a single value ``[1]`` for a 1-D input (upstream's rule).
    """
    tensor_arg(input, "prelu", "input")
    tensor_arg(weight, "prelu", "weight")
    check_dtype("prelu", input, "input")
    if weight.dtype is not input.dtype:
        raise DTypeError("pypto.prelu: 'weight' has a different dtype than 'input'", expected=input.dtype.name,
                         got=weight.dtype.name, param="weight", loc=loc())
    v, w = input._value, weight._value
    if not 1 <= v.rank <= 4:
        raise ShapeError("pypto.prelu: 'input' must have 1 to 4 dims", got=v.rank, param="input", loc=loc())
    if w.rank != 1:
        raise ShapeError("pypto.prelu: 'weight' must be 1-D", got=f"{w.rank} dims", param="weight", loc=loc())
    want = 1 if v.rank == 1 else v.shape[1]
    if not same_size(w.shape[0], want, "pypto.prelu: 'weight' and the channels of 'input'", loc()):
        raise ShapeError("pypto.prelu: 'weight' must hold one value per channel (dim 1 of 'input'; 1 for a "
                         "1-D input)", expected=f"[{want}]", got=f"[{w.shape[0]}]", param="weight", loc=loc())
    return emit("prelu", [input, weight], [(input.dtype, v.shape, v.valid_shape)],
                {"dim": 0 if v.rank == 1 else 1, "rank": v.rank})


@register("prelu", kind="vector", fp32_math=True, dtypes=FLOATS)
def _prelu(ins, attrs, ev):
    """where(x >= 0, x, weight * x) with weight broadcast along the channel dim (batched tiles ok)."""
    x, w = ins
    batch = x.dim() - attrs["rank"]  # 1 for batched tiles (leading instance dim), else 0
    d = attrs["dim"]  # already past the batch dim when batched
    w = w.reshape(*w.shape[:batch], -1)  # the executor may have padded the weight's rank
    if attrs["rank"] > 1 and w.shape[-1] > x.shape[d]:
        w = w[..., : x.shape[d]]
    shape = list(w.shape[:batch]) + [1] * (x.dim() - batch)
    shape[d] = w.shape[-1]
    return torch.where(x >= 0, x, x * w.reshape(shape))


# ---- expand_exp_dif -------------------------------------------------------------------------------

def expand_exp_dif(input, other):
    """``exp(input - other)`` with numpy-style broadcasting (both tensors of one float dtype)."""
    tensor_arg(input, "expand_exp_dif", "input")
    tensor_arg(other, "expand_exp_dif", "other")
    check_dtype("expand_exp_dif", input, "input")
    if other.dtype is not input.dtype:
        raise DTypeError("pypto.expand_exp_dif: 'input' and 'other' have different dtypes",
                         expected="the same dtype", got=f"{input.dtype.name} and {other.dtype.name}",
                         param="other", loc=loc())
    va, vb = input._value, other._value
    shape = broadcast_shapes("expand_exp_dif", [va.shape, vb.shape], ["input", "other"])
    attrs = {"bcast": (bcast_flags(va.shape, shape), bcast_flags(vb.shape, shape))}
    return emit("expand_exp_dif", [input, other], [(input.dtype, shape, valid_of(va, vb, op="expand_exp_dif", params=["input", "other"]))], attrs)


@register("expand_exp_dif", kind="vector", fp32_math=True, dtypes=FLOATS)
def _expand_exp_dif(ins, attrs, ev):
    """exp(x - y) on the valid region, y broadcast."""
    x, y = align_valid(ins, attrs["bcast"])
    return torch.exp(x - y)


# ---- rms_norm (composed) --------------------------------------------------------------------------

def rms_norm(input, gamma=None, epsilon=1e-6):
    """RMSNorm over the last dim: ``x / sqrt(mean(x*x, -1) + epsilon) * gamma``, computed in fp32 and
    cast back to the dtype of ``input``.

    ``gamma`` (optional) is ``[C]`` with C the size of the last dim, any float dtype (cast to
    fp32). Composed from existing ops, as upstream does; the mean divides by the valid size of the
    last dim. Float inputs only (upstream documents "any dtype", but a normalised integer tensor
    would be truncated to nothing useful).
    """
    from . import cast, div, mul, reshape, sqrt, add, sum as _sum

    tensor_arg(input, "rms_norm", "input")
    check_dtype("rms_norm", input, "input", FLOATS)
    eps = _float_scalar(epsilon, "rms_norm", "epsilon")
    v = input._value
    if gamma is not None:
        tensor_arg(gamma, "rms_norm", "gamma")
        check_dtype("rms_norm", gamma, "gamma", FLOATS)
        g = gamma._value
        if g.rank != 1 or not same_size(g.shape[0], v.shape[-1], "pypto.rms_norm: 'gamma' and the last dim of 'input'",
                                             loc()):
            raise ShapeError("pypto.rms_norm: 'gamma' must be [C] with C the size of the last dim of 'input'",
                             expected=f"[{v.shape[-1]}]", got=f"{list(g.shape)}", param="gamma", loc=loc())
    x = input if input.dtype is DT_FP32 else cast(input, DT_FP32)
    n = v.valid_shape[-1]
    sq = _sum(mul(x, x), -1, keepdim=True)
    mean = mul(sq, 1.0 / n) if isinstance(n, int) else div(sq, SymbolicScalar.wrap(n))
    y = div(x, sqrt(add(mean, eps)))
    if gamma is not None:
        g = reshape(gamma, [1] * (v.rank - 1) + [gamma._value.shape[0]])
        y = mul(y, g if gamma.dtype is DT_FP32 else cast(g, DT_FP32))
    return y if input.dtype is DT_FP32 else cast(y, input.dtype)


# ---- experimental online softmax ------------------------------------------------------------------

def _fp32_2d(t, op, param):
    tensor_arg(t, op, param)
    check_dtype(op, t, param)
    if t._value.rank != 2:
        raise ShapeError(f"pypto.experimental.{op}: '{param}' must be 2-D", got=f"{t._value.rank} dims",
                         param=param, loc=loc())
    return t._value


def online_softmax(scores, scale):
    """Block statistics of an online (flash-attention) softmax over dim 0 of ``scores [k_len, q_len]``.

    With ``s = scores * scale``, returns ``(exp_scores_bf16, column_max, column_sum)``:
    ``column_max = amax(s, 0)`` ``[1, q_len]`` fp32, ``exp_scores_bf16 = exp(s - column_max)`` as
    BF16 ``[k_len, q_len]``, and ``column_sum = sum(exp(s - column_max), 0)`` ``[1, q_len]`` fp32
    (summed from the fp32 exponentials, before the bf16 rounding). ``scores`` is FP32 and 2-D.
    Upstream runs it only on Ascend 950 (A5); here it runs on every machine model.
    """
    v = _fp32_2d(scores, "online_softmax", "scores")
    s = _float_scalar(scale, "online_softmax", "scale")
    stat = (1, v.shape[1])
    stat_valid = (1, v.valid_shape[1])
    return emit("online_softmax", [scores],
                [(DT_BF16, v.shape, v.valid_shape), (DT_FP32, stat, stat_valid), (DT_FP32, stat, stat_valid)],
                {"dim": 0, "scale": s}, names=["exp_scores_bf16", "column_max", "column_sum"])


@register("online_softmax", kind="vector", fp32_math=True, dtypes=(DT_FP32,))
def _online_softmax(ins, attrs, ev):
    """(exp(s - max), max, sum(exp(s - max))) over dim 0 of s = scores * scale."""
    d = attrs["dim"]
    s = ins[0] * attrs["scale"]
    m = torch.amax(s, dim=d, keepdim=True)
    e = torch.exp(s - m)
    return e, m, torch.sum(e, dim=d, keepdim=True)


def online_softmax_update(previous_max, previous_sum, previous_output, current_max, current_sum,
                          current_output):
    """Merge the online-softmax state of the blocks seen so far with that of the current block.

    ``m = maximum(previous_max, current_max)``, ``a = exp(previous_max - m)``,
    ``b = exp(current_max - m)``; returns ``(m, a * previous_sum + b * current_sum,
    a * previous_output + b * current_output)`` with the ``[1, q_len]`` scales broadcast over the
    rows of the ``[head_dim, q_len]`` outputs. All six tensors are FP32 and 2-D. The result is not
    normalised: divide the final output by the final sum. Starting from ``previous_max = -inf``
    gives NaN (``-inf - -inf``), as on the hardware: start from the first block's statistics.
    """
    names = ("previous_max", "previous_sum", "previous_output", "current_max", "current_sum", "current_output")
    args = (previous_max, previous_sum, previous_output, current_max, current_sum, current_output)
    vals = [_fp32_2d(t, "online_softmax_update", n) for t, n in zip(args, names)]
    pm, ps, po, cm, cs, co = vals
    if not all(same_size(a, b, "pypto.experimental.online_softmax_update: 'previous_output' and 'current_output'",
                         loc()) for a, b in zip(po.shape, co.shape)):
        raise ShapeError("pypto.experimental.online_softmax_update: 'current_output' must have the shape of "
                         "'previous_output'", expected=list(po.shape), got=list(co.shape), param="current_output",
                         loc=loc())
    for t, n in ((pm, "previous_max"), (ps, "previous_sum"), (cm, "current_max"), (cs, "current_sum")):
        if not (t.shape[0] == 1 and same_size(t.shape[1], po.shape[1], f"pypto.experimental.online_softmax_update: "
                                                 f"'{n}' and 'previous_output'", loc())):
            raise ShapeError(f"pypto.experimental.online_softmax_update: '{n}' must be [1, q_len]",
                             expected=f"[1, {po.shape[1]}]", got=list(t.shape), param=n, loc=loc())
    return emit("online_softmax_update", list(args),
                [(DT_FP32, pm.shape, pm.valid_shape), (DT_FP32, ps.shape, ps.valid_shape),
                 (DT_FP32, po.shape, po.valid_shape)],
                {"dim": 0}, names=["updated_max", "updated_sum", "updated_output"])


@register("online_softmax_update", kind="vector", fp32_math=True, dtypes=(DT_FP32,))
def _online_softmax_update(ins, attrs, ev):
    """Rescale both states to the common max and add them."""
    pm, ps, po, cm, cs, co = ins
    m = torch.maximum(pm, cm)
    a, b = torch.exp(pm - m), torch.exp(cm - m)
    return m, a * ps + b * cs, a * po + b * co
