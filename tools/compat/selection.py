"""Which upstream files the harness runs, and how each one runs.

* ``examples``: every ``examples/**/*.py`` but ``validate_examples.py`` and ``__init__.py``
  (upstream's own example runner skips the same two), run as scripts; a script that declares
  ``--run_mode`` gets ``--run_mode npu`` (as upstream's runner passes on an NPU), since several
  examples compare numbers only on the NPU path.
* ``models``: every ``models/**/*.py`` with an ``if __name__ == "__main__":`` block (the model
  tests and runnable scripts; helper modules such as ``*_impl.py`` and ``utils/`` have none),
  run as scripts the same way.
* ``st`` / ``ut``: every ``test_*.py`` under ``python/tests/st`` / ``python/tests/ut`` outside
  ``pypto_pro`` directories, run under pytest; a file that defines no test function pytest
  would collect but has an ``if __name__ == "__main__":`` block is a script test (its main
  block is the test, as its authors run it: ``python test_x.py``) and runs as a script.
"""

from __future__ import annotations

import ast
import fnmatch
from dataclasses import dataclass
from pathlib import Path

GROUPS = ("examples", "models", "st", "ut")
GROUP_TITLES = {"examples": "examples/", "models": "models/", "st": "python/tests/st", "ut": "python/tests/ut"}
# Test-case pass rates are reported for these sub-suites (the targets are stated for them).
SUITES = {"ut/kirin": "python/tests/ut/kirin/", "ut/interface": "python/tests/ut/interface/",
          "ut/operation": "python/tests/ut/operation/", "ut (all)": "python/tests/ut/",
          "st (all)": "python/tests/st/"}
_EXAMPLE_SKIP = {"validate_examples.py", "__init__.py"}
EMULATED_RUN_MODE = ("--run_mode", "npu")


@dataclass(frozen=True)
class Job:
    """One upstream file to run: its group, path (relative to the upstream root), how, with what."""

    group: str
    path: str
    mode: str  # "script" or "pytest"
    args: tuple[str, ...] = ()
    machine: str = ""  # PYPTO_MACHINE of the child ("": the default, a 910B)


def declares_run_mode(text: str) -> bool:
    return "'--run_mode'" in text or '"--run_mode"' in text


def has_main_guard(text: str) -> bool:
    from .cases import is_main_guard

    try:
        tree = ast.parse(text)
    except SyntaxError:
        return False
    return any(is_main_guard(node) for node in tree.body)


def _script_job(group: str, root: Path, path: Path) -> Job:
    text = path.read_text(encoding="utf-8", errors="replace")
    args = EMULATED_RUN_MODE if declares_run_mode(text) else ()
    return Job(group, path.relative_to(root).as_posix(), "script", args)


def _binds_test_names(tree: ast.Module) -> bool:
    """A module-level name pytest could collect that is not a ``def``: ``test_x = factory(...)``
    or ``from helpers import test_x`` (kirin's files build their tests that way)."""
    for node in tree.body:
        if isinstance(node, ast.Assign):
            names = [n.id for t in node.targets for n in ast.walk(t) if isinstance(n, ast.Name)]
        elif isinstance(node, (ast.AnnAssign, ast.AugAssign)) and isinstance(node.target, ast.Name):
            names = [node.target.id]
        elif isinstance(node, (ast.Import, ast.ImportFrom)):
            names = [(a.asname or a.name).split(".")[0] for a in node.names]
        else:
            continue
        if any(n.startswith("test") or n.startswith("Test") or n == "*" for n in names):
            return True
    return False


def is_script_test(text: str) -> bool:
    """A ``test_*.py`` file pytest collects nothing from (no test function or class, no name
    bound to one) whose main block runs the test."""
    from .uncollected import test_functions

    try:
        tree = ast.parse(text)
    except SyntaxError:
        return False
    return test_functions(text) == 0 and not _binds_test_names(tree) and has_main_guard(text)


def _test_job(group: str, root: Path, path: Path) -> Job:
    text = path.read_text(encoding="utf-8", errors="replace")
    if is_script_test(text):
        return _script_job(group, root, path)
    return Job(group, path.relative_to(root).as_posix(), "pytest")


def _tests(root: Path, sub: str, group: str) -> list[Job]:
    return [_test_job(group, root, p)
            for p in sorted((root / sub).rglob("test_*.py")) if "pypto_pro" not in p.relative_to(root).parts]


def select(root: str | Path, groups=GROUPS, only=None) -> list[Job]:
    """The jobs for ``groups`` under the upstream ``root``; ``only`` (a pattern or a list of
    them) keeps the paths that contain one of the texts or match one of the globs."""
    root = Path(root)
    jobs: list[Job] = []
    for group in groups:
        if group == "examples":
            jobs += [_script_job(group, root, p) for p in sorted((root / "examples").rglob("*.py"))
                     if p.name not in _EXAMPLE_SKIP]
        elif group == "models":
            jobs += [_script_job(group, root, p) for p in sorted((root / "models").rglob("*.py"))
                     if has_main_guard(p.read_text(encoding="utf-8", errors="replace"))]
        elif group == "st":
            jobs += _tests(root, "python/tests/st", group)
        elif group == "ut":
            jobs += _tests(root, "python/tests/ut", group)
        else:
            raise ValueError(f"unknown group {group!r}; expected one of {', '.join(GROUPS)}")
    if only:
        patterns = [only] if isinstance(only, str) else list(only)
        jobs = [j for j in jobs if any(p in j.path or fnmatch.fnmatch(j.path, p) for p in patterns)]
    return jobs


def suite_of(path: str) -> list[str]:
    """The sub-suites (see SUITES) a test file belongs to."""
    return [name for name, prefix in SUITES.items() if path.startswith(prefix)]
