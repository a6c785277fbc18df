"""Upstream's ``pypto.frontend.parser.diagnostics``: a function's source, and messages tied to
nodes of its AST.

``Source(fn)`` reads the source of ``fn`` and parses it with line numbers as in its file;
``Diagnostics(source)`` records messages at AST nodes, and ``error`` / ``bug`` raise a
:class:`pypto.error.RenderedParserError` that names the file and line and shows the source line.
"""

from __future__ import annotations

import ast
import enum
import inspect
import textwrap
from dataclasses import dataclass
from typing import Callable, NoReturn, Union

from ...errors import ArgumentTypeError, RenderedParserError, SourceLoc


class DiagnosticLevel(enum.IntEnum):
    """How serious a message is (the lower, the more)."""

    BUG = 10
    ERROR = 20
    WARNING = 30
    INFO = 40
    DEBUG = 50


class Source:
    """The source of a function: ``source_name`` (its file), ``start_line`` and its AST."""

    def __init__(self, program: Callable):
        try:
            self.source_name = inspect.getsourcefile(program) or inspect.getfile(program)
            lines, self.start_line = inspect.getsourcelines(program)
        except (TypeError, OSError) as e:
            raise ArgumentTypeError("parser.Source: 'program' must be a function whose source file can be read",
                                    expected="a def function or class", got=f"{program!r} ({e})",
                                    param="program") from None
        self.text = "".join(lines)
        tree = ast.parse(textwrap.dedent(self.text))
        ast.increment_lineno(tree, max(self.start_line - 1, 0))
        self._tree = tree.body[0]

    def as_ast(self) -> ast.stmt:
        """The function's (or class's) definition node, line numbers as in the file."""
        return self._tree


@dataclass(frozen=True)
class Diagnostic:
    """One message: its level, where (file, line, column) and the text."""

    level: DiagnosticLevel
    file: str
    line: int
    column: int
    message: str

    def render(self) -> str:
        where = SourceLoc(self.file, self.line).describe()
        return f"{self.level.name.lower()}: {self.message}\n  at {where}"


class Diagnostics:
    """Messages about one `Source`, each tied to an AST node (``items`` keeps them in order)."""

    def __init__(self, source: Source):
        self.source = source
        self.items: list[Diagnostic] = []

    def emit(self, node: ast.AST, message, level: DiagnosticLevel = DiagnosticLevel.INFO) -> Diagnostic:
        item = Diagnostic(level, self.source.source_name, getattr(node, "lineno", self.source.start_line),
                          getattr(node, "col_offset", 0), str(message))
        self.items.append(item)
        return item

    def error(self, node: ast.AST, message: Union[str, Exception]) -> NoReturn:
        """Record an error at ``node`` and raise it as a RenderedParserError."""
        self._raise(node, message, DiagnosticLevel.ERROR)

    def bug(self, node: ast.AST, message: Union[str, Exception]) -> NoReturn:
        """An internal error at ``node``: recorded and raised like `error`."""
        self._raise(node, message, DiagnosticLevel.BUG)

    def warning(self, node: ast.AST, message: str) -> None:
        self.emit(node, message, DiagnosticLevel.WARNING)

    def info(self, node: ast.AST, message: str) -> None:
        self.emit(node, message, DiagnosticLevel.INFO)

    def debug(self, node: ast.AST, message: str) -> None:
        self.emit(node, message, DiagnosticLevel.DEBUG)

    def render(self) -> str:
        """Every message, one block each."""
        return "\n".join(item.render() for item in self.items)

    def _raise(self, node, message, level) -> NoReturn:
        item = self.emit(node, message, level)
        raise RenderedParserError(node, message, loc=SourceLoc(item.file, item.line)) from None
