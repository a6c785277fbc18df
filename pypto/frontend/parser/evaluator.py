"""Upstream's ``pypto.frontend.parser.evaluator``: evaluate one expression of a kernel.

``ExprEvaluator.eval(node, var_table, diag)`` evaluates the AST expression ``node`` with the
names of ``var_table``, as the kernel body would see them: a SymbolicScalar with a known value
is that int, and builtin ``min`` / ``max`` of two operands become ``pypto.min`` / ``pypto.max``
when one of them is symbolic (otherwise they are Python's, ``key=`` and ``default=``
included). A failure is a ParserError pointing at the expression's line.
"""

from __future__ import annotations

import ast
import builtins
from typing import Any

from ...errors import ParserError, SourceLoc
from ..scalar import SymbolicScalar, builtin_max, builtin_min
from .diagnostics import Diagnostics

_KERNEL_BUILTINS = {"min": builtin_min, "max": builtin_max}


class ExprEvaluator:
    """Evaluates expression nodes against a table of names (see the module docstring)."""

    def __init__(self, var_table: dict, diag: Diagnostics):
        self.var_table = var_table
        self.diag = diag

    @staticmethod
    def eval(node: ast.AST, var_table: dict, diag: Diagnostics) -> Any:
        """The value of ``node`` (an ``ast.expr``, or an expression statement)."""
        return ExprEvaluator(var_table, diag).visit(node)

    def visit(self, node: ast.AST) -> Any:
        expr = node.value if isinstance(node, ast.Expr) else node
        if not isinstance(expr, ast.expr):
            raise ParserError(node, TypeError(f"ExprEvaluator evaluates expressions, not {type(node).__name__}"),
                              loc=self._loc(node))
        names = {k: (v.concrete() if isinstance(v, SymbolicScalar) and v.is_concrete() else v)
                 for k, v in self.var_table.items()}
        names.update(_KERNEL_BUILTINS)
        code = compile(ast.fix_missing_locations(ast.Expression(body=expr)), self.diag.source.source_name, "eval")
        try:
            return eval(code, {"__builtins__": builtins}, names)  # noqa: S307 - the user's own kernel code
        except Exception as e:  # noqa: BLE001 - every failure points at the expression
            raise ParserError(node, e, loc=self._loc(node)) from e

    def _loc(self, node) -> SourceLoc:
        return SourceLoc(self.diag.source.source_name, getattr(node, "lineno", self.diag.source.start_line))
