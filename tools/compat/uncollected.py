"""Test functions of upstream files that collected no case: counted statically, for the rates.

A pytest file that fails at import, times out before collection or is out of scope as a whole
reports no case, so its tests would vanish from every denominator. Counting its ``test_*``
functions (module level and in ``Test*`` classes, each parametrization counted once) from the
source keeps them in: an uncollected test is a test that did not pass.
"""

from __future__ import annotations

import ast
from pathlib import Path

NOT_COLLECTED = ("failed", "timeout", "crashed", "out_of_scope")


def test_functions(source: str) -> int:
    """``test_*`` functions pytest would collect from ``source``: module level, and methods of
    ``Test*`` classes and of ``unittest.TestCase`` subclasses (a base named ``*TestCase``); 0
    when it does not parse."""
    try:
        tree = ast.parse(source)
    except SyntaxError:
        return 0
    n = 0
    for node in tree.body:
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)) and node.name.startswith("test"):
            n += 1
        elif isinstance(node, ast.ClassDef) and (node.name.startswith("Test") or any(_base_name(b).endswith("TestCase")
                                                                                   for b in node.bases)):
            n += sum(isinstance(f, (ast.FunctionDef, ast.AsyncFunctionDef)) and f.name.startswith("test")
                     for f in node.body)
    return n


def _base_name(node) -> str:
    return node.attr if isinstance(node, ast.Attribute) else getattr(node, "id", "")


def uncollected(results, upstream: Path) -> dict:
    """{path: test functions} of the pytest files that reported no case at all."""
    out = {}
    for r in results:
        if r.mode != "pytest" or r.status not in NOT_COLLECTED or sum(r.cases.values()):
            continue
        f = upstream / r.path
        n = test_functions(f.read_text(errors="replace")) if f.is_file() else 0
        if n:
            out[r.path] = n
    return out
