"""Upstream's ``pypto.frontend.parser.entry``: the jit decorator and the class of its kernels.

``JitCallableWrapper`` is this package's `JitFunction`; its class attribute
``_kernel_module_cache`` holds every live kernel's compiled versions (``.clear()`` makes each
compile again at its next call), as upstream's test set-ups expect. Its call steps under upstream's
names, and the ``_execute_kernel`` hook those set-ups replace: `pypto.frontend.execute_hook`.
``setup_verify_data`` is `pypto.runtime.setup_verify_data` (upstream's module imports it and
set-ups replace it here too; kernels look it up on `pypto.runtime`, where set-ups replace it as well).
"""

from .. import function
from ..jit import JitFunction, jit
from ...runtime import setup_verify_data  # noqa: F401 - upstream's name in this module

JitCallableWrapper = JitFunction

__all__ = ["jit", "function", "JitCallableWrapper"]
