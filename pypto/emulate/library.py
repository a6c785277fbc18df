"""``torch.library`` registrations for the ``NPU`` dispatch key land on the CPU.

Upstream scripts register their custom operators' device kernels with
``torch.library.impl(lib, name, "NPU")`` (the key torch_npu adds). Emulated NPU tensors are
CPU tensors, so the kernel must serve the ``CPU`` key: `install` maps the NPU keys onto their
CPU counterparts in ``Library.impl``, which the registration APIs go through.
"""

from __future__ import annotations

import functools

import torch

# Only torch_npu's own key names: torch itself registers PrivateUse1 kernels, which must stay
# where they are (mapping them would override torch's CPU kernels).
_NPU_KEYS = {"NPU": "CPU", "AutogradNPU": "AutogradCPU"}


def install() -> None:
    """Route NPU kernel registrations to the CPU key (idempotent)."""
    original = torch.library.Library.impl
    if hasattr(original, "__pypto_emulate__"):
        return

    @functools.wraps(original)
    def impl(self, op_name, fn, dispatch_key="", *args, **kwargs):
        return original(self, op_name, fn, _NPU_KEYS.get(dispatch_key, dispatch_key), *args, **kwargs)

    impl.__pypto_emulate__ = original
    torch.library.Library.impl = impl
