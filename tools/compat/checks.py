"""Counting upstream's own numeric checks (child side).

Each check function below is wrapped once per process; a call counts when it is made from
upstream's files (the caller's frame is under the upstream root), so checks that pypto, torch
or numpy make internally do not count, nor does a check another check makes. A check *fails*
when it raises (the ``assert_*`` family and upstream's compare helpers), or returns ``False``
(``allclose``, ``equal``, ``array_equal`` and helpers that return a bool). Element-wise
``isclose`` counts as executed only: its caller decides what a mismatch ratio means.

In a process an upstream test started (`descendants`), calls from that program's ``__main__``
code count too: the script or ``-c`` text the test handed over.
"""

from __future__ import annotations

import functools
import importlib.abc
import importlib.machinery
import os
import sys
from dataclasses import dataclass, field
from typing import Callable

import numpy
import torch

# (object, attribute, how failure shows): the library checks
_LIBRARY_CHECKS = [
    (torch, "allclose", "bool"), (torch, "equal", "bool"), (torch, "isclose", "none"),
    (torch.testing, "assert_close", "raise"),
    (numpy, "allclose", "bool"), (numpy, "array_equal", "bool"), (numpy, "isclose", "none"),
    (numpy.testing, "assert_allclose", "raise"), (numpy.testing, "assert_array_equal", "raise"),
    (numpy.testing, "assert_array_almost_equal", "raise"), (numpy.testing, "assert_almost_equal", "raise"),
]

# Upstream's own compare helpers: (path relative to the upstream root, function names).
UPSTREAM_HELPERS = {
    "models/deepseek_v4/utils/compare.py": ("compare",),
    "models/deepseek_v32_exp/utils/compare.py": ("compare",),
    "models/glm_v4_5/utils/np_compare.py": ("detailed_allclose_manual",),
    "python/tests/st/operator/glm/utils/np_compare.py": ("detailed_allclose_manual",),
    "python/tests/st/operator/pg/compare_2_1.py": ("precision_compare_triple",),
    "python/tests/ut/kirin/common.py": ("compare_cos",),
    # raises when the pass-verify log records a mismatch (the goldens of set_verify_golden_data)
    "python/tests/ut/interpreter/_verify_check.py": ("assert_pass_verify_ok",),
    # helpers defined in the script that calls them (wrapped by wrap_script_helpers): each raises
    # on a mismatch (three-way precision, fp32 tolerance with NaN/Inf checks, top-k index sets)
    "models/kimi/test_block_attn_res.py": ("compare",),
    "models/qwen3_next/qwen3_next_gated_delta_rule.py": ("compare",),
    "models/deepseek_v32_exp/deepseekv32_lightning_indexer_quant.py": ("topk_idx_compare",),
}


def described() -> list[str]:
    """The checks counted, as ``module.function`` names (for the report)."""
    names = [f"{owner.__name__}.{attr}" for owner, attr, _ in _LIBRARY_CHECKS]
    names += [f"{path}:{fn}" for path, fns in UPSTREAM_HELPERS.items() for fn in fns]
    return names + ["assert <...diff...|...err...> < tol", "assert (a == b).all()",
                    "assert a_list == [computed expected]"]


@dataclass
class CheckTally:
    """Checks counted so far, in total and for the current case."""

    calls: int = 0
    failures: int = 0
    first_failure: str = ""
    case_calls: int = 0
    case_failures: int = 0
    by_function: dict = field(default_factory=dict)
    listener: Callable[[], None] | None = None  # told after each count (descendants.count_here)

    def start_case(self) -> None:
        self.case_calls = self.case_failures = 0

    def count(self, name: str, failed: bool, where: str) -> None:
        self.calls += 1
        self.case_calls += 1
        self.by_function[name] = self.by_function.get(name, 0) + 1
        if failed:
            self.failures += 1
            self.case_failures += 1
            if not self.first_failure:
                self.first_failure = f"{name} at {where}"
        if self.listener is not None:
            self.listener()


tally = CheckTally()
_active = [0]  # nesting depth: only the outermost check counts
_root = [""]
_count_main = [False]  # also count calls from the __main__ module's code (a started process)


def _caller_in_upstream(depth: int = 2) -> str | None:
    frame = sys._getframe(depth)
    filename = frame.f_code.co_filename
    if filename.startswith(_root[0]):
        return f"{os.path.relpath(filename, _root[0])}:{frame.f_lineno}"
    if _count_main[0] and frame.f_globals.get("__name__") == "__main__":
        return f"{os.path.basename(filename)}:{frame.f_lineno} (the program the test started)"
    return None


def _wrap(fn, name: str, failure_kind: str):
    @functools.wraps(fn)
    def check(*args, **kwargs):
        where = _caller_in_upstream() if not _active[0] else None
        if where is None:
            return fn(*args, **kwargs)
        _active[0] += 1
        try:
            result = fn(*args, **kwargs)
        except BaseException:
            tally.count(name, True, where)
            raise
        finally:
            _active[0] -= 1
        tally.count(name, failure_kind == "bool" and _is_false(result), where)
        return result

    check.__wrapped_check__ = fn
    return check


def count_assert(value, where: str):
    """A hand-written numeric ``assert`` of an upstream script ran (see cases.NumericAsserts)."""
    tally.count("assert <numeric>", not value, where)
    return value


def _is_false(result) -> bool:
    if isinstance(result, (bool, numpy.bool_)):
        return not bool(result)
    if isinstance(result, torch.Tensor) and result.numel() == 1 and result.dtype == torch.bool:
        return not bool(result)
    return False


def wrap_script_helpers(namespace: dict, relpath: str) -> None:
    """Wrap the compare helpers a script defines itself (it runs as ``__main__``, which the import
    hook never sees), once its definitions ran and before its main block calls them."""
    for fn_name in UPSTREAM_HELPERS.get(relpath, ()):
        fn = namespace.get(fn_name)
        if callable(fn) and not hasattr(fn, "__wrapped_check__"):
            namespace[fn_name] = _wrap(fn, f"__main__.{fn_name}", "bool")


class _HelperWrapper(importlib.abc.MetaPathFinder):
    """Wraps upstream's compare helpers right after their module executes."""

    def find_spec(self, fullname, path=None, target=None):
        spec = importlib.machinery.PathFinder.find_spec(fullname, path, target)
        if spec is None or not spec.origin or not spec.origin.startswith(_root[0]):
            return None
        names = UPSTREAM_HELPERS.get(os.path.relpath(spec.origin, _root[0]))
        if not names or spec.loader is None:
            return None
        exec_module = spec.loader.exec_module

        def exec_and_wrap(module):
            exec_module(module)
            for fn_name in names:
                fn = getattr(module, fn_name, None)
                if callable(fn):
                    setattr(module, fn_name, _wrap(fn, f"{fullname}.{fn_name}", "bool"))

        spec.loader.exec_module = exec_and_wrap
        return spec


def install(upstream_root: str, count_main: bool = False) -> None:
    """Wrap the checks for this process; calls from files under ``upstream_root`` count, and
    with ``count_main`` calls from the ``__main__`` module's code."""
    _root[0] = os.path.join(os.path.abspath(upstream_root), "")
    _count_main[0] = count_main
    for owner, attr, kind in _LIBRARY_CHECKS:
        fn = getattr(owner, attr)
        if not hasattr(fn, "__wrapped_check__"):
            setattr(owner, attr, _wrap(fn, f"{owner.__name__}.{attr}", kind))
    sys.meta_path.insert(0, _HelperWrapper())
