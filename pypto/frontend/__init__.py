"""The kernel frontend: ``pypto.frontend.jit``, ``dynamic`` and ``function``."""

from .jit import JitFunction, jit
from .signature import dynamic


def function(fn):
    """Mark a helper called from kernels. Helpers are inlined by tracing, so this returns ``fn``."""
    return fn


__all__ = ["jit", "dynamic", "function", "JitFunction"]
