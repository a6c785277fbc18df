"""The data pass verify compares with, as upstream's host-side staging (``pypto.runtime``'s
``_pto_verify_datas``, ``_pto_to_tensor_data`` and ``setup_verify_data``).

`pypto.set_verify_golden_data` keeps the goldens of the next verified call both as tensors (what
`pypto.runtime.verify` compares) and here, as ``pypto_impl.DeviceTensorData`` descriptions of
their memory (a golden of None is a description at address 0, which compares nothing).
``setup_verify_data(tensors)`` hands the call's tensors and those goldens to
``pypto_impl.SetVerifyData``, as upstream does before verifying a compile; test set-ups replace it
to stage the data their own way. The store keeps the described tensors alive until the goldens
are used (or it is reset).
"""

from __future__ import annotations

from typing import Sequence

from ..errors import ArgumentTypeError, user_loc


class VerifyDataStore:
    """The golden descriptions of the next verified call, and the tensors they point into."""

    def __init__(self):
        self._data: list = []
        self._keepalive: list = []

    def reset(self) -> None:
        self._data = []
        self._keepalive = []

    def set_data(self, datas: Sequence, keepalive: Sequence = ()) -> None:
        """Replace the descriptions; ``keepalive``: what they point into (kept until `reset`)."""
        self._data = list(datas)
        self._keepalive.extend(keepalive)

    def set_keepalive_data(self, keepalive: Sequence) -> None:
        self._keepalive.extend(keepalive)

    def get_data(self) -> list:
        return list(self._data)


verify_datas = VerifyDataStore()


def tensor_data(tensors: Sequence) -> list:
    """``pypto_impl.DeviceTensorData`` of each ``pypto.from_torch`` tensor (its data's address)."""
    from ..frontend.host_tensor import HostTensor
    from ..pypto_impl import DeviceTensorData

    out = []
    for i, t in enumerate(tensors):
        if not isinstance(t, HostTensor) or t.data is None:
            raise ArgumentTypeError(f"tensors[{i}] carries no data", expected="pypto.from_torch(torch_tensor)",
                                    got=type(t).__name__ if not isinstance(t, HostTensor) else repr(t),
                                    param=f"tensors[{i}]", loc=user_loc(2))
        out.append(DeviceTensorData(t.dtype, t.data_ptr, list(t.ori_shape)))
    return out


def describe_goldens(goldens: Sequence) -> None:
    """Record ``goldens`` (CPU torch tensors or None) in `verify_datas`."""
    from ..dtypes import DT_FP16
    from ..frontend.host_tensor import from_torch
    from ..pypto_impl import DeviceTensorData

    datas, keep = [], []
    for g in goldens:
        if g is None:
            datas.append(DeviceTensorData(DT_FP16, 0, [0, 0]))
            continue
        g = g.contiguous()
        keep.append(g)
        datas.append(DeviceTensorData(from_torch(g).dtype, g.data_ptr(), list(g.shape)))
    verify_datas.set_data(datas, keep)


def setup_verify_data(tensors: Sequence) -> None:
    """With ``verify_options`` ``enable_pass_verify`` on: the verify data of the next verified run is
    ``tensors`` (``pypto.from_torch`` tensors, or CPU torch tensors) with the goldens given to
    `pypto.set_verify_golden_data`. Off: nothing happens."""
    from .. import pypto_impl
    from ..frontend.host_tensor import from_torch
    from ..options import effective

    if not effective().get("verify", "enable_pass_verify"):
        return
    hosts = [t if not _is_torch(t) else from_torch(t.contiguous()) for t in tensors]
    verify_datas.set_keepalive_data(hosts)
    pypto_impl.SetVerifyData(tensor_data(hosts), [], verify_datas.get_data())


def _is_torch(t) -> bool:
    from .._lazy import torch

    return isinstance(t, torch.Tensor)


__all__ = ["VerifyDataStore", "verify_datas", "tensor_data", "describe_goldens", "setup_verify_data"]
