"""Numeric checks made in Python processes an upstream test starts (child side).

Some upstream tests run their kernel in a process of their own (``subprocess.run([sys.executable,
script])``, e.g. to give it a fresh environment) and look at its exit code: the numbers are
checked there, by the script the test wrote. Those checks count for the test that started the
process, as if made in it:

* `share` (in the harness's child) puts ``descendant_site`` first on ``PYTHONPATH``; its
  ``sitecustomize`` runs `count_here` at the start of every Python process started below;
* `count_here`, once the process imports torch or numpy, wraps the same checks
  (`checks.install`) and counts, besides calls from upstream's
  files, calls from the started program's own ``__main__`` code (the script or ``-c`` text the
  upstream test handed over); after each counted call the process's running totals are written
  to a file of its own in the shared folder;
* `collect` (in the harness's child, before it records a case and at the end) adds what those
  files say beyond what it had read before, to the case running and the file's totals.

A check that fails there counts as failed, as here. Processes that are not Python, or are
started with ``-S`` / ``-I`` (no sitecustomize), are not counted.
"""

from __future__ import annotations

import importlib.abc
import importlib.machinery
import json
import os
import sys

DIR_VAR = "PYPTO_COMPAT_DESCENDANT_CHECKS"
ROOT_VAR = "PYPTO_COMPAT_UPSTREAM_ROOT"
SITE = os.path.join(os.path.dirname(os.path.abspath(__file__)), "descendant_site")

_folder = [""]
_seen: dict = {}  # file name -> (calls, failures, by_function) already added


def share(upstream_root: str, folder: str) -> None:
    """Make Python processes started from here on count their checks into ``folder``."""
    os.makedirs(folder, exist_ok=True)
    _folder[0] = folder
    os.environ[DIR_VAR] = folder
    os.environ[ROOT_VAR] = os.path.abspath(upstream_root)
    paths = [p for p in os.environ.get("PYTHONPATH", "").split(os.pathsep) if p and p != SITE]
    os.environ["PYTHONPATH"] = os.pathsep.join([SITE, *paths])


def count_here() -> None:
    """In a started process: count its checks and keep its totals in the shared folder, from
    the moment it imports torch or numpy (a process that imports neither pays nothing)."""
    folder, root = os.environ.get(DIR_VAR), os.environ.get(ROOT_VAR)
    if folder and root and os.path.isdir(folder):
        sys.meta_path.insert(0, _WhenImported(folder, root))


class _WhenImported(importlib.abc.MetaPathFinder):
    """Starts counting right after the first of torch / numpy finishes importing (torch whole)."""

    def __init__(self, folder: str, root: str):
        self.folder, self.root, self.started = folder, root, False

    def find_spec(self, fullname, path=None, target=None):
        if self.started or fullname not in ("torch", "numpy"):
            return None
        spec = importlib.machinery.PathFinder.find_spec(fullname, path, target)
        if spec is None or spec.loader is None:
            return None
        exec_module = spec.loader.exec_module

        def exec_then_count(module):
            exec_module(module)
            # torch imports numpy half-way through its own import: wrap once torch is whole
            if fullname == "numpy" and "torch" in sys.modules:
                return
            if not self.started:
                self.started = True
                sys.meta_path.remove(self)
                _start_counting(self.folder, self.root)

        spec.loader.exec_module = exec_then_count
        return spec


def _start_counting(folder: str, root: str) -> None:
    from . import checks  # imports torch and numpy: only once the process uses one of them

    path = os.path.join(folder, f"{os.getpid()}.json")
    tally = checks.tally

    def write() -> None:
        tmp = f"{path}.tmp"
        with open(tmp, "w") as f:
            json.dump({"calls": tally.calls, "failures": tally.failures, "first_failure": tally.first_failure,
                       "by_function": tally.by_function}, f)
        os.replace(tmp, path)

    tally.listener = write
    checks.install(root, count_main=True)


def collect() -> None:
    """Add the checks started processes made since the last call to ``checks.tally``."""
    from . import checks

    folder = _folder[0]
    if not folder:
        return
    try:
        names = sorted(n for n in os.listdir(folder) if n.endswith(".json"))
    except OSError:
        return
    tally = checks.tally
    for name in names:
        try:
            with open(os.path.join(folder, name)) as f:
                data = json.load(f)
        except (OSError, ValueError):  # being replaced right now: read at the next collect
            continue
        calls, failures, by_function = _seen.get(name, (0, 0, {}))
        new_calls, new_failures = data["calls"] - calls, data["failures"] - failures
        if new_calls <= 0:
            continue
        tally.calls += new_calls
        tally.case_calls += new_calls
        tally.failures += new_failures
        tally.case_failures += new_failures
        for fn, n in data["by_function"].items():
            tally.by_function[fn] = tally.by_function.get(fn, 0) + n - by_function.get(fn, 0)
        if new_failures and not tally.first_failure:
            tally.first_failure = f"{data['first_failure']} (in a process the test started)"
        _seen[name] = (data["calls"], data["failures"], dict(data["by_function"]))

