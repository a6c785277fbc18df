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
_LOADING = []  # the sources being loaded now: a sweep started by their top level is refused


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
            _LOADING.append(self)
            try:
                kernel = _LOADED[self] = self._load()
            finally:
                _LOADING.pop()
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


def refuse_unguarded_script(source: KernelSource) -> None:
    """Refuse, before any worker starts, a Dask sweep that a worker would start again.

    A worker loads the kernel by running its module. If that module is the script being run and
    the sweep is called from its top level without ``if __name__ == "__main__":``, every worker
    would run the sweep again (and an embedded cluster's processes would start it while they
    start). Also refuses a sweep started while a module is being loaded for one (on a worker)."""
    import ast
    import inspect

    if _LOADING:
        raise OptionError("pypto.tune.sweep() was called while a worker loads the kernel's module: the "
                          "module starts a sweep at its top level", param="runner",
                          expected="the sweep under if __name__ == '__main__':", got=f"a sweep in {_LOADING[-1].path}")
    main = sys.modules.get("__main__")
    path = getattr(main, "__file__", None)
    if source.text is not None or source.module is not None or not path or \
            os.path.abspath(path) != source.path:
        return
    frame = inspect.currentframe()
    while frame is not None and not (frame.f_globals is main.__dict__ and frame.f_code.co_name == "<module>"):
        frame = frame.f_back
    if frame is None:
        return  # called from a function run some other way (e.g. a test runner): nothing re-runs it
    line = frame.f_lineno
    try:
        with open(path) as f:
            tree = ast.parse(f.read())
    except (OSError, SyntaxError):
        return
    for stmt in tree.body:
        if stmt.lineno <= line <= (stmt.end_lineno or stmt.lineno):
            if _is_main_guard(stmt):
                return
            break
    raise OptionError(f"{os.path.basename(path)} line {line} runs a Dask sweep at the top level of the script "
                      "without `if __name__ == \"__main__\":`; each worker imports the script to load the "
                      "kernel and would start the sweep again", param="runner",
                      expected="the sweep (and the script's other top-level work) under "
                      "if __name__ == \"__main__\":", got=f"line {line} at the top level",
                      hint="put it under the guard, or pass runner='inprocess'")


def _is_main_guard(stmt) -> bool:
    import ast

    if not isinstance(stmt, ast.If) or not isinstance(stmt.test, ast.Compare):
        return False
    parts = [stmt.test.left, *stmt.test.comparators]
    names = {p.id for p in parts if isinstance(p, ast.Name)}
    consts = {p.value for p in parts if isinstance(p, ast.Constant)}
    return names == {"__name__"} and consts == {"__main__"}
