"""How a kernel travels to a Dask worker: by its source (a module file or source text) and its
name, never as pickled compiler objects. The worker loads the module and finds the kernel there.
"""

from __future__ import annotations

import hashlib
import importlib
import importlib.util
import linecache
import os
import sys
import types
from dataclasses import dataclass

from ..errors import OptionError

_LOADED: dict = {}  # KernelSource -> kernel, per process (a worker keeps its compiled versions)


@dataclass(frozen=True)
class KernelSource:
    """``name`` (the kernel's attribute in its module) in ``module`` (an importable name), ``path``
    (a ``.py`` file) or ``text`` (a module's source text), tried in that order."""

    name: str
    module: str | None = None
    path: str | None = None
    text: str | None = None

    @classmethod
    def of(cls, kernel, text: str | None = None) -> "KernelSource":
        """The source of a ``pypto.jit`` kernel: its module file, or ``text`` when given (the
        source of a whole module defining it, e.g. a notebook cell's imports and the kernel)."""
        fn = getattr(kernel, "fn", kernel)
        name = fn.__name__
        if text is not None:
            return cls(name, text=text)
        module = sys.modules.get(fn.__module__)
        path = getattr(module, "__file__", None)
        if not path or not os.path.exists(path) or fn.__qualname__ != name:
            raise OptionError(f"kernel '{name}' is not defined at the top level of a module file, so a "
                              "worker cannot load it by its source", param="kernel",
                              expected="a kernel from a .py module, or source text (source=...)",
                              got=f"defined in {fn.__module__} as {fn.__qualname__}",
                              hint="pass source=<the module's text> to sweep(), or runner='inprocess'")
        importable = fn.__module__ if fn.__module__ != "__main__" else None
        return cls(name, module=importable, path=os.path.abspath(path))

    @classmethod
    def parse(cls, spec: str) -> "KernelSource":
        """``package.module:kernel`` or ``path/to/file.py:kernel`` (the CLI's spelling)."""
        where, sep, name = spec.rpartition(":")
        if not sep or not where or not name:
            raise OptionError("a kernel is named module:kernel or file.py:kernel", param="kernel",
                              expected="e.g. examples/flash_attention.py:flash_attention", got=repr(spec))
        if where.endswith(".py") or os.sep in where:
            return cls(name, path=os.path.abspath(where))
        return cls(name, module=where)

    def load(self):
        """The kernel (a ``pypto.jit`` function), loaded once per process."""
        kernel = _LOADED.get(self)
        if kernel is None:
            kernel = _LOADED[self] = self._load()
        return kernel

    def _load(self):
        import pypto

        module = None
        if self.module:
            try:
                module = importlib.import_module(self.module)
            except ImportError:
                if not self.path:
                    raise
        if module is None and self.path:
            digest = hashlib.sha1(self.path.encode()).hexdigest()[:10]
            spec = importlib.util.spec_from_file_location(f"_pypto_tune_{digest}", self.path)
            module = importlib.util.module_from_spec(spec)
            sys.modules[spec.name] = module  # dataclasses and pickling look modules up by name
            spec.loader.exec_module(module)
        if module is None:
            digest = hashlib.sha1((self.text or "").encode()).hexdigest()[:10]
            module = types.ModuleType(f"_pypto_tune_text_{digest}")
            sys.modules[module.__name__] = module
            filename = f"<pypto.tune source {digest}>"
            # the kernel parser reads the source through linecache, as for a notebook cell
            linecache.cache[filename] = (len(self.text or ""), None, (self.text or "").splitlines(True), filename)
            exec(compile(self.text or "", filename, "exec"), module.__dict__)
        kernel = getattr(module, self.name, None)
        if kernel is None:
            raise OptionError(f"no kernel named '{self.name}' in the given source", param="kernel",
                              expected=f"a top-level def {self.name}", got=f"names {sorted(vars(module))[:12]}")
        if not hasattr(kernel, "cache_info"):
            kernel = pypto.jit(kernel)
        return kernel
