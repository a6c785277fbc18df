"""``torch.rand`` on the NPU accepts integer dtypes, as torch_npu's does.

torch_npu fills ``torch.rand(..., device="npu")`` with the device's uniform operator, which for
integer dtypes draws *discrete* uniform values in ``[from, to)`` — ``[0, 1)`` for ``rand``, so
every element is 0 — where CPU torch refuses integer dtypes (``"check_uniform_bounds" not
implemented for 'Int'``). Upstream scripts rely on it to allocate integer output buffers, so the
factory's ``npu`` kernel (the renamed PrivateUse1 key, chosen from the ``device`` argument)
serves integer dtypes this way and every other dtype exactly as CPU torch does (same generator,
same numbers).
"""

from __future__ import annotations

import torch

# the integer dtypes the device's uniform operator fills (bool is deprecated there, so CPU
# torch's refusal stands for it)
INTEGER_DTYPES = frozenset({torch.uint8, torch.int8, torch.int16, torch.int32, torch.int64})


def _rand(size, *, generator=None, dtype=None, layout=None, device=None, pin_memory=None):
    if dtype in INTEGER_DTYPES:
        # discrete uniform over [0, 1): drawn like the device does, so the generator advances
        return torch.empty(size, dtype=dtype, layout=layout).random_(0, 1, generator=generator)
    return torch.rand(size, generator=generator, dtype=dtype, layout=layout, device="cpu",
                      pin_memory=pin_memory)


def _rand_without_generator(size, *, dtype=None, layout=None, device=None, pin_memory=None):
    return _rand(size, dtype=dtype, layout=layout, device=device, pin_memory=pin_memory)


def register(library: torch.library.Library) -> None:
    """Register the NPU ``rand`` kernels on ``library`` (an ``aten`` IMPL library)."""
    library.impl("rand", _rand_without_generator, "PrivateUse1")
    library.impl("rand.generator", _rand, "PrivateUse1")
