"""Run at the start of every Python process an upstream test starts under the harness (this
folder is first on PYTHONPATH there): count that process's numeric checks (compat.descendants),
then run the sitecustomize this one hides, if there is one."""

import importlib.machinery
import importlib.util
import os
import sys


def _count_checks() -> None:
    tools = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
    sys.path.insert(0, tools)
    try:
        from compat import descendants
    finally:
        sys.path.remove(tools)
    descendants.count_here()


def _run_hidden_sitecustomize() -> None:
    here = os.path.dirname(os.path.abspath(__file__))
    rest = [p for p in sys.path if os.path.abspath(p or ".") != here]
    spec = importlib.machinery.PathFinder.find_spec("sitecustomize", rest)
    if spec is not None and spec.loader is not None:
        module = importlib.util.module_from_spec(spec)
        spec.loader.exec_module(module)


if os.environ.get("PYPTO_COMPAT_DESCENDANT_CHECKS"):
    _count_checks()
_run_hidden_sitecustomize()
