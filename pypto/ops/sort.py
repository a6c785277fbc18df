"""topk: the k largest (or smallest) values along a dim and their indices."""

from __future__ import annotations

from .._lazy import torch

from ..dtypes import DT_BF16, DT_FP16, DT_FP32, DT_INT32
from ..errors import ShapeError
from .common import check_dtype, emit, loc, norm_dim, tensor_arg
from .registry import register


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


@register("topk", kind="vector", fp32_math=True, dtypes=(DT_FP32, DT_FP16, DT_BF16))
def _topk(ins, attrs, ev):
    """Sorted top-k along one dim of the valid region (k clipped to the valid size)."""
    x, d = ins[0], attrs["dim"]
    k = min(attrs["k"], x.shape[d])
    values, indices = torch.topk(x, k, dim=d, largest=attrs["largest"], sorted=True)
    return values, indices
