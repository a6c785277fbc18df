"""Running an upstream script as ``__main__``, with its sub-cases tracked (child side).

The script runs like ``python script.py args`` (``sys.argv``, ``sys.path[0]`` = its directory,
module ``__main__``), statement by statement as compiled from its own source. Just before each
``if __name__ == "__main__":`` block runs, the module-level ``test_*`` functions the script
defines are wrapped so that each outermost call is recorded as a sub-case (passed, failed or
skipped, with the numeric checks it made). The script's code is not changed: the wrapper sits
in the module namespace, where the main block looks the functions up.
"""

from __future__ import annotations

import __future__
import ast
import builtins
import functools
import inspect
import os
import sys
import types

from . import descendants
from .asserts import is_numeric_assert
from .checks import count_assert, tally, wrap_script_helpers
from .failures import from_exception
from .recorder import Recorder

_FUTURE_FLAGS = {name: getattr(__future__, name).compiler_flag for name in __future__.all_feature_names}


def is_main_guard(node: ast.stmt) -> bool:
    """``if __name__ == "__main__":`` (either operand order)."""
    if not isinstance(node, ast.If) or not isinstance(node.test, ast.Compare):
        return False
    test = node.test
    if len(test.ops) != 1 or not isinstance(test.ops[0], ast.Eq):
        return False
    operands = [test.left, test.comparators[0]]
    names = [o for o in operands if isinstance(o, ast.Name) and o.id == "__name__"]
    mains = [o for o in operands if isinstance(o, ast.Constant) and o.value == "__main__"]
    return bool(names and mains)


def segments(tree: ast.Module) -> list[tuple[list[ast.stmt], bool]]:
    """The module body cut before and after each main guard: ``[(statements, is_guard)]``."""
    out: list[tuple[list[ast.stmt], bool]] = []
    current: list[ast.stmt] = []
    for node in tree.body:
        if is_main_guard(node):
            if current:
                out.append((current, False))
                current = []
            out.append(([node], True))
        else:
            current.append(node)
    if current:
        out.append((current, False))
    return out


def _future_flags(tree: ast.Module) -> int:
    flags = 0
    for node in tree.body:
        if isinstance(node, ast.ImportFrom) and node.module == "__future__":
            for alias in node.names:
                flags |= _FUTURE_FLAGS.get(alias.name, 0)
    return flags


CHECK_NAME = "__pypto_compat_check__"


class NumericAsserts(ast.NodeTransformer):
    """Counts upstream's hand-written numeric checks (the forms of ``asserts.is_numeric_assert``,
    e.g. ``assert max_diff < 1e-1``). The test is passed through a counter that returns it
    unchanged, as pytest's assertion rewriting passes tests through its own helpers."""

    def __init__(self, path: str):
        self.path = path

    def visit_Assert(self, node: ast.Assert):
        test = node.test
        if is_numeric_assert(test):
            call = ast.Call(ast.Name(CHECK_NAME, ast.Load()), [test, ast.Constant(node.lineno)], [])
            node.test = ast.copy_location(call, test)
        return node


class CaseTracker:
    """Wraps a script's ``test_*`` functions; records each outermost call as a sub-case."""

    def __init__(self, recorder: Recorder, path: str, upstream_root: str, pypto_root: str):
        self.recorder = recorder
        self.path = path
        self.roots = (upstream_root, pypto_root)
        self.depth = 0
        self.wrapped: set = set()

    def wrap_cases(self, namespace: dict) -> None:
        for name, obj in list(namespace.items()):
            if not name.startswith("test") or not callable(obj) or id(obj) in self.wrapped:
                continue
            code = getattr(inspect.unwrap(obj), "__code__", None)
            if code is None or os.path.abspath(code.co_filename) != self.path:
                continue
            wrapper = self._wrap(name, obj)
            self.wrapped.add(id(wrapper))
            namespace[name] = wrapper

    def _wrap(self, name: str, fn):
        @functools.wraps(fn)
        def case(*args, **kwargs):
            if self.depth:
                return fn(*args, **kwargs)
            self.depth += 1
            tally.start_case()
            try:
                result = fn(*args, **kwargs)
            except BaseException as e:
                descendants.collect()
                skipped = type(e).__name__ in ("Skipped", "SkipTest")
                self.recorder.add_case(name, "skipped" if skipped else "failed", tally.case_calls,
                                       tally.case_failures, None if skipped else from_exception(e, *self.roots))
                raise
            finally:
                self.depth -= 1
            descendants.collect()
            self.recorder.add_case(name, "passed", tally.case_calls, tally.case_failures, None)
            return result

        return case


def run_script(path: str, argv: list[str], recorder: Recorder, upstream_root: str, pypto_root: str) -> None:
    """Run ``path`` as ``__main__`` with ``argv``; an uncaught exception propagates."""
    path = os.path.abspath(path)
    with open(path, "rb") as f:
        source = f.read()
    tree = ast.fix_missing_locations(NumericAsserts(path).visit(ast.parse(source, path)))
    flags = _future_flags(tree)
    module = types.ModuleType("__main__")
    module.__file__ = path
    module.__builtins__ = builtins
    module.__cached__ = None
    setattr(module, CHECK_NAME, lambda value, line: count_assert(value, f"{os.path.relpath(path, upstream_root)}:{line}"))
    sys.modules["__main__"] = module
    sys.argv = [path, *argv]
    sys.path.insert(0, os.path.dirname(path))  # as `python script.py` does
    tracker = CaseTracker(recorder, path, upstream_root, pypto_root)
    for statements, guard in segments(tree):
        if guard:
            tracker.wrap_cases(module.__dict__)
            wrap_script_helpers(module.__dict__, os.path.relpath(path, upstream_root))
        code = compile(ast.Module(body=statements, type_ignores=[]), path, "exec", flags=flags, dont_inherit=True)
        exec(code, module.__dict__)
