"""topk: the k largest (or smallest) values along a dim and their indices.

A dim longer than the op's vector tile is tiled (as upstream's merge sort does): each tile gives
its own sorted top-k (`topk_partial`, indices made global with the tile's start), and groups of
those candidate lists are merged until one is left (`topk_merge`, see passes/expand.py). Every
sort here is stable, so equal values come out lowest index first whatever the tiling.
"""

from __future__ import annotations

from .._lazy import torch

from ..dtypes import DT_BF16, DT_FP16, DT_FP32, DT_INT32
from ..errors import ShapeError
from .common import check_dtype, emit, loc, norm_dim, tensor_arg
from .registry import register

TOPK_DTYPES = (DT_FP32, DT_FP16, DT_BF16)
PAD_INDEX = -1  # marks a padding candidate of a partial list (fewer valid entries than k)


def topk(input, k, dim=-1, largest=True):
    """(values, indices) of the ``k`` largest (``largest=False``: smallest) entries along ``dim``.

    Values are sorted; indices are INT32.
    """
    tensor_arg(input, "topk", "input")
    check_dtype("topk", input, "input")
    v = input._value
    d = norm_dim(dim, v.rank, "topk")
    if isinstance(k, bool) or not isinstance(k, int) or k <= 0:
        raise ShapeError("pypto.topk: 'k' must be a positive int", got=repr(k), param="k", loc=loc())
    size = v.shape[d]
    if isinstance(size, int) and k > size:
        raise ShapeError(f"pypto.topk: 'k' exceeds the size of dim {d}", expected=f"k <= {size}", got=k,
                         param="k", loc=loc())
    shape = tuple(k if i == d else s for i, s in enumerate(v.shape))
    valid = tuple(k if i == d else s for i, s in enumerate(v.valid_shape))
    return emit("topk", [input], [(input.dtype, shape, valid), (DT_INT32, shape, valid)],
                {"k": k, "dim": d, "largest": bool(largest)}, names=["values", "indices"])


def _sorted(x, d, largest, *extra):
    """``x`` sorted along ``d`` (stable), with ``extra`` tensors permuted alike."""
    order = torch.sort(x, dim=d, descending=largest, stable=True).indices
    return (x.gather(d, order),) + tuple(e.gather(d, order) for e in extra)


def _pad(values, indices, d, k, largest):
    """Lists of fewer than ``k`` candidates filled up with padding (worst value, PAD_INDEX)."""
    n = values.shape[d]
    if n >= k:
        return values.narrow(d, 0, k), indices.narrow(d, 0, k)
    shape = list(values.shape)
    shape[d] = k - n
    worst = float("-inf") if largest else float("inf")
    return (torch.cat([values, torch.full(shape, worst, dtype=values.dtype)], d),
            torch.cat([indices, torch.full(shape, PAD_INDEX, dtype=indices.dtype)], d))


@register("topk", kind="vector", fp32_math=True, dtypes=TOPK_DTYPES)
def _topk(ins, attrs, ev):
    """Sorted top-k along one dim of the valid region (k clipped to the valid size)."""
    x, d = ins[0], attrs["dim"]
    k = min(attrs["k"], x.shape[d])
    idx = torch.arange(x.shape[d], dtype=torch.int32).reshape([-1 if a == d % x.dim() else 1 for a in range(x.dim())])
    values, indices = _sorted(x, d, attrs["largest"], idx.expand(x.shape))
    return values.narrow(d, 0, k), indices.narrow(d, 0, k)


@register("topk_partial", kind="vector", fp32_math=True, dtypes=TOPK_DTYPES)
def _topk_partial(ins, attrs, ev):
    """One tile's sorted top-k along ``dim`` with global indices (``ins[1]``: the tile's start),
    padded to k entries."""
    values, indices = _topk(ins[:1], attrs, ev)
    return _pad(values, indices + ins[1].to(torch.int32), attrs["dim"], attrs["k"], attrs["largest"])


@register("topk_merge", kind="vector", fp32_math=True, dtypes=TOPK_DTYPES)
def _topk_merge(ins, attrs, ev):
    """The sorted top-k of candidate lists (values ``ins[0]``, global indices ``ins[1]``), padding
    last among equal values: padded to k (``final``: cut to the real candidates, as topk clips k)."""
    values, indices = ins
    d, k, largest = attrs["dim"], attrs["k"], attrs["largest"]
    real_first = torch.sort((indices == PAD_INDEX).to(torch.int8), dim=d, stable=True).indices
    values, indices = _sorted(values.gather(d, real_first), d, largest, indices.gather(d, real_first))
    if attrs["final"]:
        real = int((indices != PAD_INDEX).sum(d).max()) if indices.numel() else 0
        k = min(k, real)
        return values.narrow(d, 0, k), indices.narrow(d, 0, k)
    return _pad(values, indices, d, k, largest)
