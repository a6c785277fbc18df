"""``torch.topk(..., sorted=False)`` returns its k values in order, as on the NPU.

``sorted=False`` leaves the order of the k results unspecified. The NPU's top-k operator
accepts the flag but always returns them sorted (largest first for ``largest=True``), and
upstream scripts compare a kernel's sorted output against ``torch.topk(sorted=False)`` computed on
the device, element by element. CPU torch returns another order (that of its selection
algorithm), so under emulation ``torch.topk`` and ``Tensor.topk`` sort whatever they are asked
for: still a valid answer to ``sorted=False``, and the one the device gives.
"""

from __future__ import annotations

import functools

import torch


def _always_sorted(original):
    @functools.wraps(original)
    def topk(*args, **kwargs):
        if len(args) > 4:  # (input, k, dim, largest, sorted): the flag given positionally
            args = args[:4] + (True,) + args[5:]
        elif "sorted" in kwargs:
            kwargs["sorted"] = True
        return original(*args, **kwargs)

    topk.__pypto_emulate__ = original
    return topk


def install() -> None:
    """Make ``torch.topk`` and ``Tensor.topk`` always sort (idempotent)."""
    if not hasattr(torch.topk, "__pypto_emulate__"):
        torch.topk = _always_sorted(torch.topk)
    if not hasattr(torch.Tensor.topk, "__pypto_emulate__"):
        torch.Tensor.topk = _always_sorted(torch.Tensor.topk)
