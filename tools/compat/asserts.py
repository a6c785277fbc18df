"""Which hand-written ``assert`` statements of upstream's files are numeric checks.

A numeric check compares computed numbers with expected ones. Three forms are recognised from
the assert's source (nothing else is: a shape, dtype, name or type assert is not a check):

* a difference or error under a tolerance: ``assert max_diff < 1e-3`` (the left side named like
  ``*diff*`` / ``*err*``, compared with ``<`` or ``<=``);
* an element-wise comparison reduced to one truth value: ``assert (out == golden).all()``,
  ``.all().item()``, ``torch.all(out == golden)``, ``np.all(...)``;
* a whole-value equality against an expected value computed element by element:
  ``assert out_list == [v * 11 for v in in_list]`` or ``== [k + idx] * n`` (one side a list
  comprehension or display whose elements are arithmetic, the other no shape/dtype/size/len).
"""

from __future__ import annotations

import ast

_NUMERIC_NAME = ("diff", "err")
_REDUCERS = {"all"}
_METADATA = {"shape", "dtype", "size", "stride", "ndim", "numel", "name", "device"}


def is_numeric_assert(test: ast.expr) -> bool:
    """Whether an assert's test expression ``test`` is one of the numeric-check forms above."""
    return _tolerance(test) or _reduced_elementwise(test) or _computed_equality(test)


def is_numeric_assert_source(source: str) -> bool:
    """``is_numeric_assert`` for the source text of an assert's test (pytest hands over text);
    False when it does not parse as an expression."""
    try:
        return is_numeric_assert(ast.parse(source.strip(), mode="eval").body)
    except SyntaxError:
        return False


def _tolerance(test: ast.expr) -> bool:
    return (isinstance(test, ast.Compare) and len(test.ops) == 1 and isinstance(test.ops[0], (ast.Lt, ast.LtE))
            and any(k in ast.unparse(test.left).lower() for k in _NUMERIC_NAME))


def _is_elementwise_eq(node: ast.expr) -> bool:
    return isinstance(node, ast.Compare) and len(node.ops) == 1 and isinstance(node.ops[0], ast.Eq)


def _reduced_elementwise(test: ast.expr) -> bool:
    # strip a trailing .item() / bool(...)
    if isinstance(test, ast.Call) and not test.args and isinstance(test.func, ast.Attribute) and test.func.attr == "item":
        test = test.func.value
    if isinstance(test, ast.Call) and isinstance(test.func, ast.Name) and test.func.id == "bool" and len(test.args) == 1:
        test = test.args[0]
    if not isinstance(test, ast.Call) or not isinstance(test.func, ast.Attribute) or test.func.attr not in _REDUCERS:
        return False
    if not test.args:  # (a == b).all()
        return _is_elementwise_eq(test.func.value)
    # torch.all(a == b) / np.all(a == b) / numpy.all(a == b)
    owner = test.func.value
    return (isinstance(owner, ast.Name) and owner.id in ("torch", "np", "numpy") and len(test.args) == 1
            and _is_elementwise_eq(test.args[0]))


def _has_arithmetic(node: ast.expr) -> bool:
    return any(isinstance(n, ast.BinOp) for n in ast.walk(node))


def _computed_list(node: ast.expr) -> bool:
    if isinstance(node, ast.ListComp):
        return _has_arithmetic(node.elt)
    if isinstance(node, (ast.List, ast.Tuple)):
        return bool(node.elts) and any(_has_arithmetic(e) for e in node.elts)
    if isinstance(node, ast.BinOp) and isinstance(node.op, ast.Mult):  # [expected] * n
        return any(isinstance(s, (ast.List, ast.Tuple)) and _computed_list(s) for s in (node.left, node.right))
    return False


def _metadata(node: ast.expr) -> bool:
    """A side that reads a shape, dtype, size, name... or a length: not numbers computed."""
    if isinstance(node, ast.Call):
        if isinstance(node.func, ast.Name) and node.func.id in ("len", "list", "tuple") and node.args:
            return node.func.id == "len" or _metadata(node.args[0])
        node = node.func
    if isinstance(node, ast.Subscript):
        node = node.value
    return isinstance(node, ast.Attribute) and node.attr in _METADATA


def _computed_equality(test: ast.expr) -> bool:
    if not _is_elementwise_eq(test):
        return False
    left, right = test.left, test.comparators[0]
    for expected, actual in ((right, left), (left, right)):
        if _computed_list(expected) and not _metadata(actual) and not _computed_list(actual):
            return True
    return False
