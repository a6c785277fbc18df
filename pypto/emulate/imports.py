"""Make the stand-in packages importable under the names upstream scripts use.

A meta-path finder maps ``torch_npu`` and ``torchair`` (and their submodules) onto
``pypto.emulate.torch_npu`` and ``pypto.emulate.torchair``:
``import torch_npu`` and ``import torch_npu.npu`` return the stand-in modules themselves, so
there is one module object per name and state set through either spelling is shared.
"""

from __future__ import annotations

import importlib
import importlib.abc
import importlib.util
import sys

ALIASES = {"torch_npu": "pypto.emulate.torch_npu", "torchair": "pypto.emulate.torchair"}


class _AliasLoader(importlib.abc.Loader):
    def __init__(self, target: str):
        self.target = target

    def create_module(self, spec):
        return importlib.import_module(self.target)

    def exec_module(self, module):
        pass  # already executed under its own name


class AliasFinder(importlib.abc.MetaPathFinder):
    """Finds ``torch_npu[.x]`` as ``pypto.emulate.torch_npu[.x]`` (and ``torchair`` likewise)."""

    def find_spec(self, fullname, path=None, target=None):
        head, _, rest = fullname.partition(".")
        base = ALIASES.get(head)
        if base is None:
            return None
        real = base + ("." + rest if rest else "")
        if importlib.util.find_spec(real) is None:
            return None
        module = importlib.import_module(real)
        return importlib.util.spec_from_loader(fullname, _AliasLoader(real),
                                               is_package=hasattr(module, "__path__"))


def install() -> None:
    """Put the alias finder first on ``sys.meta_path`` (idempotent)."""
    if not any(isinstance(f, AliasFinder) for f in sys.meta_path):
        sys.meta_path.insert(0, AliasFinder())
