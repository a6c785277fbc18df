"""``pypto.frontend.parser``: the names upstream's programs and tests import from its parser.

Upstream compiles a kernel by walking its Python AST; this package traces the kernel by running
it, so the parser's machinery (its IR builder, scopes, liveness analysis) has no counterpart.
What remains meaningful is kept, with upstream's names:

- `entry`: ``jit``, ``function`` and ``JitCallableWrapper`` (the class of a jit kernel);
- `diagnostics`: ``Source`` (a function's source and AST) and ``Diagnostics`` (messages tied to
  an AST node; an error raises a ParserError pointing at the line);
- `evaluator`: ``ExprEvaluator``, which evaluates one expression node as a kernel body would.
"""

from ... import error  # noqa: F401 - upstream re-exports its error module here
from .entry import JitCallableWrapper, function, jit

__all__ = ["jit", "function", "JitCallableWrapper", "error"]
