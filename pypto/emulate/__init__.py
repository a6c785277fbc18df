"""Opt-in NPU emulation: upstream PyPTO scripts written for an Ascend NPU run on the CPU.

``pypto.emulate.install()`` (or ``python -m pypto.emulate script.py args...``) makes, for the
rest of the process:

* ``import torch_npu`` work, and ``torch.npu`` exist (device selection, synchronisation,
  streams, events, ``config``, ``NPUGraph`` / ``graph`` capture): see :mod:`.torch_npu`;
  ``import torchair`` gives a ``torch.compile`` backend that runs graphs eagerly;
* every NPU device spelling (``device="npu"``, ``"npu:0"``, ``torch.device("npu", 0)``,
  ``.npu()``, ``.to("npu")``) produce real CPU tensors: see :mod:`.devices`;
* ``torch.topk`` returns the NPU's order (sorted even for ``sorted=False``, ties lowest index
  first): see :mod:`.topk`;
* ``torch.library`` kernels registered for the ``NPU`` dispatch key serve CPU tensors: see
  :mod:`.library`;
* kernels with ``runtime_options={"run_mode": pypto.RunMode.NPU}`` run on pypto's CPU
  simulator instead of raising :class:`pypto.BackendUnavailableError` (through the
  :mod:`pypto.backend` stand-in hook);
* fp16/bf16 matmuls sum in torch's CPU order (`pypto.ops.matmul.set_half_sum_order`), so they
  agree bit for bit with the torch CPU goldens upstream's scripts compute;
* kernels that choose ``pypto.RunMode.SIM`` write upstream's cost-model swimlane into the output
  folder, as upstream's simulation does on every run (see :mod:`pypto.artefacts`);
* Python processes this one starts (``subprocess``, ``multiprocessing``) get the emulated NPU when
  they ``import torch_npu`` or ``torchair``: the folder ``child_site`` with two small modules of
  those names goes first on ``PYTHONPATH`` (and last on ``sys.path``, which multiprocessing's
  spawn hands to its children).

Nothing happens on ``import pypto``: emulation changes global torch state, so it is only ever
switched on explicitly. It prints one notice to stderr when it is switched on.
"""

from __future__ import annotations

import os
import sys

NOTICE = ("[pypto.emulate] emulating the NPU on the CPU: torch_npu and torch.npu are stand-ins, "
          "'npu' devices are the CPU, RunMode.NPU kernels run on the pypto simulator")

_installed = False


class _SimulatorStandIn:
    """Serves NPU-mode kernel calls on the simulator; records launches for NPU graph capture."""

    name = "pypto.emulate"

    def launched(self, kernel, args, kwargs, result) -> None:
        from .torch_npu import graphs

        graphs.record(kernel, args, kwargs, result)


def install() -> None:
    """Switch NPU emulation on for this process (idempotent; there is no uninstall)."""
    global _installed
    if _installed:
        return
    from .. import backend
    from . import devices, imports, library, topk
    from .torch_npu import npu

    from .. import artefacts

    imports.install()
    devices.install(npu)
    library.install()
    topk.install()
    backend.set_npu_stand_in(_SimulatorStandIn())
    artefacts.set_emulated_npu(True)
    # upstream's goldens are torch matmuls on the NPU (the same cube); here they are torch's CPU
    # matmuls, so half-precision matmuls sum in torch's CPU order
    from ..ops.matmul import set_half_sum_order
    set_half_sum_order("torch")
    _share_with_children()
    _installed = True
    print(NOTICE, file=sys.stderr, flush=True)


def _share_with_children() -> None:
    site = os.path.join(os.path.dirname(os.path.abspath(__file__)), "child_site")
    paths = [p for p in os.environ.get("PYTHONPATH", "").split(os.pathsep) if p]
    if site not in paths:
        os.environ["PYTHONPATH"] = os.pathsep.join([site, *paths])
    # multiprocessing's spawn gives a child the parent's sys.path; here the alias finder answers
    # first, so the folder's modules are never imported by this process
    if site not in sys.path:
        sys.path.append(site)


def is_installed() -> bool:
    """Whether `install` has run in this process."""
    return _installed
