"""``device="npu"`` means the CPU: every spelling of an NPU device yields a real CPU tensor.

Two mechanisms, chosen because they cost nothing on calls that do not name the NPU:

* torch's PrivateUse1 backend is renamed ``npu`` so that ``"npu"``, ``"npu:0"`` and
  ``torch.device("npu", 0)`` parse, and its two allocation kernels (``empty.memory_format``,
  ``empty_strided``) allocate on the CPU. Every factory function (``zeros``, ``randn``, ``full``,
  ``arange``, ``*_like``, ``new_*`` ...) allocates through them, so it returns a CPU tensor, in
  any thread.
* The few entry points that move data through a device guard (``Tensor.to``, ``torch.tensor``,
  ``torch.as_tensor``, ``torch.asarray``, ``Tensor.new_tensor``) get a thin wrapper that rewrites
  an NPU device argument to ``"cpu"``; ``Tensor.npu()`` returns the tensor itself (like ``.to``
  to the device a tensor is already on).

Tensors therefore never carry an ``npu`` device: ``t.device`` is ``cpu`` and ``t.npu()`` is ``t``,
so writing into ``t.npu()`` writes into ``t`` (on a real NPU that holds for tensors already
there, while a host tensor would be copied).
"""

from __future__ import annotations

import functools

import torch

from . import uniform

NPU = "npu"
_CPU = "cpu"
_libraries: list = []  # keep the kernel registrations alive for the life of the process


def is_npu_device(device) -> bool:
    """True for ``"npu"``, ``"npu:<n>"`` and ``torch.device("npu", n)``."""
    if isinstance(device, str):
        return device == NPU or device.startswith(NPU + ":")
    return isinstance(device, torch.device) and device.type == NPU


def npu_index(device) -> int:
    """The device index of an NPU device spelling (``0`` when none is given)."""
    if isinstance(device, int):
        return device
    index = torch.device(device).index if isinstance(device, str) else device.index
    return 0 if index is None else index


def install(device_module) -> None:
    """Make ``npu`` a device name whose tensors live on the CPU (idempotent)."""
    name = torch._C._get_privateuse1_backend_name()
    if name != NPU:
        torch.utils.rename_privateuse1_backend(NPU)
    if getattr(torch, NPU, None) is not device_module:
        torch._register_device_module(NPU, device_module)
    if not _libraries:
        _register_cpu_allocation()
        _wrap_device_entry_points()
        _hide_from_torch_accelerator()


def _hide_from_torch_accelerator() -> None:
    """The renamed backend makes torch report an ``npu`` accelerator; there is no C++ device
    behind it, so the generic accelerator API (which TorchDynamo consults for streams) must see
    none, while ``torch.npu.is_available()`` stays true for the scripts that ask."""
    if not hasattr(torch, "accelerator"):  # torch < 2.6 has no generic accelerator API
        return
    original = torch.accelerator.is_available

    @functools.wraps(original)
    def is_available() -> bool:
        return False if torch._C._get_privateuse1_backend_name() == NPU else original()

    is_available.__pypto_emulate__ = original
    torch.accelerator.is_available = is_available


def _register_cpu_allocation() -> None:
    lib = torch.library.Library("aten", "IMPL")

    def empty_memory_format(size, dtype=None, layout=None, device=None, pin_memory=None, memory_format=None):
        return torch.empty(size, dtype=dtype, layout=layout, device=_CPU, pin_memory=pin_memory,
                           memory_format=memory_format)

    def empty_strided(size, stride, dtype=None, layout=None, device=None, pin_memory=None):
        return torch.empty_strided(size, stride, dtype=dtype, layout=layout, device=_CPU, pin_memory=pin_memory)

    lib.impl("empty.memory_format", empty_memory_format, "PrivateUse1")
    lib.impl("empty_strided", empty_strided, "PrivateUse1")
    uniform.register(lib)
    _libraries.append(lib)


def _rewrite(original, device_position: int | None = None):
    """Wrap a torch callable so an NPU device, given as ``device=`` or as the positional
    argument at ``device_position``, becomes ``"cpu"``."""
    p = device_position

    @functools.wraps(original)
    def wrapper(*args, **kwargs):
        if p is not None and len(args) > p and is_npu_device(args[p]):
            args = args[:p] + (_CPU,) + args[p + 1:]
        device = kwargs.get("device")
        if device is not None and is_npu_device(device):
            kwargs["device"] = _CPU
        return original(*args, **kwargs)

    wrapper.__pypto_emulate__ = original
    return wrapper


def _wrap_device_entry_points() -> None:
    torch.Tensor.to = _rewrite(torch.Tensor.to, device_position=1)  # t.to("npu"), t.to("npu", dtype)
    torch.Tensor.new_tensor = _rewrite(torch.Tensor.new_tensor)
    for name in ("tensor", "as_tensor", "asarray"):
        setattr(torch, name, _rewrite(getattr(torch, name)))

    def npu(self, device=None, non_blocking=False, memory_format=torch.preserve_format):
        """Emulated NPU: the tensor already lives on the device that stands in for it (the CPU)."""
        return self

    def module_npu(self, device=None):
        """Emulated NPU: the module's parameters already live on the CPU that stands in for it."""
        return self

    torch.Tensor.npu = npu
    # like the CUDA pair: ``is_npu`` says where the data lives, which is the CPU (torch's own
    # override tables look this property up once the backend is named "npu")
    torch.Tensor.is_npu = property(lambda self: False, doc="False: emulated NPU tensors are CPU tensors.")
    torch.nn.Module.npu = module_npu
