"""A module proxy that imports on first attribute access, so ``import pypto`` stays fast."""

import importlib


class LazyModule:
    def __init__(self, name: str):
        self._name = name
        self._module = None

    def __getattr__(self, attr):
        module = self.__dict__["_module"]
        if module is None:
            module = self.__dict__["_module"] = importlib.import_module(self._name)
        return getattr(module, attr)


torch = LazyModule("torch")
