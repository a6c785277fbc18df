"""The emulated ``torchair`` (torch_npu's TorchDynamo backend), importable after ``install()``.

``get_npu_backend`` returns a backend that runs the captured FX graph eagerly: on the emulated
NPU there is no device graph to build, and every operator in the graph (pypto kernels
included) already runs on the CPU.
"""

from __future__ import annotations

from .configs.compiler_config import CompilerConfig

__all__ = ["CompilerConfig", "get_npu_backend"]


def get_npu_backend(*, compiler_config: CompilerConfig | None = None, custom_decompositions=None):
    """A ``torch.compile`` backend: runs the FX graph as captured (``compiler_config`` is kept
    for inspection and otherwise ignored)."""

    def npu_backend(graph_module, example_inputs):
        return graph_module.forward

    npu_backend.compiler_config = compiler_config or CompilerConfig()
    return npu_backend
