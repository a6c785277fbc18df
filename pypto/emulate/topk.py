"""``torch.topk`` returns the NPU's order: sorted, and equal values lowest index first.

The NPU's top-k is built on the vector sort instructions, which put the larger score first and,
for equal scores, the one with the lower index first. Its ``sorted`` flag is accepted but the
results come out sorted either way. Upstream scripts compare a kernel's top-k (pypto's topk has
the same order) against ``torch.topk`` computed on the device, index by index — including
``sorted=False`` calls and rows with ties (a saturated sigmoid makes many scores equal). CPU
torch returns its selection algorithm's order for ``sorted=False`` and an unspecified order among
ties, so under emulation ``torch.topk`` and ``Tensor.topk`` answer with a stable sort: a valid
answer to either flag, and the one the device gives.
"""

from __future__ import annotations

import functools

import torch


def npu_topk(input, k, dim=-1, largest=True, sorted=True, *, out=None):
    """``torch.topk`` in the NPU's order (``sorted`` is accepted; the result is always sorted)."""
    order = torch.sort(input, dim=dim, descending=largest, stable=True)
    values, indices = order.values.narrow(dim, 0, k), order.indices.narrow(dim, 0, k)
    if out is not None:
        out[0].resize_as_(values).copy_(values)
        out[1].resize_as_(indices).copy_(indices)
        return torch.return_types.topk(out)
    return torch.return_types.topk((values, indices))


def install() -> None:
    """Make ``torch.topk`` and ``Tensor.topk`` answer in the NPU's order (idempotent)."""
    if hasattr(torch.topk, "__pypto_emulate__"):
        return
    originals = (torch.topk, torch.Tensor.topk)

    @functools.wraps(originals[0])
    def topk(*args, **kwargs):
        return npu_topk(*args, **kwargs)

    @functools.wraps(originals[1])
    def tensor_topk(self, *args, **kwargs):
        return npu_topk(self, *args, **kwargs)

    topk.__pypto_emulate__, tensor_topk.__pypto_emulate__ = originals
    torch.topk, torch.Tensor.topk = topk, tensor_topk
