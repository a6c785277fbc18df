"""Static checks of a kernel's source, parsed once per kernel.

The AST tells what tracing cannot: a ``break``/``continue``/``return`` inside ``pypto.loop``
(tracing would silently cut the loop body short), an assignment to a tensor parameter's name
(``out = a + b`` rebinds the local name and writes nothing into ``out``; upstream rejects it when
the statement runs, so statements under a Python ``if``/``while``/``try``, which may never run,
are not flagged), and the variable name of each loop's index, which becomes the readable name of its symbol in the
printed graph.
"""

from __future__ import annotations

import ast
import inspect
import textwrap

from ..errors import KernelSyntaxError, SourceLoc

_LOOP_FUNCS = ("loop", "loop_unroll")


def _is_pypto_loop(node) -> bool:
    if not isinstance(node, ast.Call):
        return False
    f = node.func
    return (isinstance(f, ast.Attribute) and f.attr in _LOOP_FUNCS) or \
        (isinstance(f, ast.Name) and f.id in _LOOP_FUNCS)


def _target_name(target):
    if isinstance(target, ast.Name):
        return target.id
    if isinstance(target, (ast.Tuple, ast.List)) and target.elts and isinstance(target.elts[0], ast.Name):
        return target.elts[0].id
    return None


class _Checker(ast.NodeVisitor):
    def __init__(self, filename: str, line_offset: int, fn_name: str, tensor_params=()):
        self.filename, self.offset, self.fn_name = filename, line_offset, fn_name
        self.tensor_params = frozenset(tensor_params)
        self.conditional = 0  # statements under a Python if / while / try may never run
        self.loop_names: dict = {}
        self.depth = 0  # pypto.loop nesting
        self.py_loops = 0  # Python loops nested inside the innermost pypto.loop

    def loc(self, node) -> SourceLoc:
        return SourceLoc(self.filename, node.lineno + self.offset, self.fn_name)

    def visit_For(self, node):
        if _is_pypto_loop(node.iter):
            name = _target_name(node.target)
            if name:
                self.loop_names[(self.filename, node.lineno + self.offset)] = name
            saved = self.py_loops
            self.depth += 1
            self.py_loops = 0
            for stmt in node.body:
                self.visit(stmt)
            self.depth -= 1
            self.py_loops = saved
            for stmt in node.orelse:
                self.visit(stmt)
        else:
            self._python_loop(node)

    def _python_loop(self, node):
        self.py_loops += 1
        self.generic_visit(node)
        self.py_loops -= 1

    def visit_While(self, node):
        self.conditional += 1
        self._python_loop(node)
        self.conditional -= 1

    visit_AsyncFor = _python_loop

    def _maybe_runs(self, node):
        self.conditional += 1
        self.generic_visit(node)
        self.conditional -= 1

    visit_If = _maybe_runs
    visit_Try = _maybe_runs

    def _jump(self, node, word):
        if self.depth and not self.py_loops:
            raise KernelSyntaxError(f"'{word}' is not allowed inside pypto.loop",
                                    expected="a pypto.loop body that runs to its end",
                                    got=f"'{word}' in the body of a pypto.loop",
                                    hint="runtime loops always run every iteration; use a runtime "
                                         "condition (if on a symbolic value) to skip work",
                                    loc=self.loc(node))

    def visit_Break(self, node):
        self._jump(node, "break")

    def visit_Continue(self, node):
        self._jump(node, "continue")

    def visit_Return(self, node):
        if self.depth:
            raise KernelSyntaxError("'return' is not allowed inside pypto.loop",
                                    expected="return only after the last pypto.loop ends",
                                    got="'return' in the body of a pypto.loop",
                                    hint="assemble results into an output tensor and return after the loop",
                                    loc=self.loc(node))

    def _assigned(self, target, node):
        if self.conditional:
            return
        names = [target] if isinstance(target, ast.Name) else \
            [t for t in ast.walk(target) if isinstance(t, ast.Name)] if isinstance(target, (ast.Tuple, ast.List)) else []
        for t in names:
            if t.id in self.tensor_params:
                raise KernelSyntaxError(f"Input tensor '{t.id}' cannot be reassigned",
                                        expected=f"a write into it: {t.id}[:] = ..., {t.id}.move(...) or "
                                                 f"pypto.assemble(..., offsets, {t.id})",
                                        got=f"an assignment to the name '{t.id}' (it would write nothing into the "
                                            "tensor passed)", hint="use another name for a new tensor",
                                        loc=self.loc(node))

    def visit_Assign(self, node):
        for target in node.targets:
            if not _renames_its_own_memory(target, node.value):
                self._assigned(target, node)
        self.generic_visit(node)

    def visit_AugAssign(self, node):
        self._assigned(node.target, node)
        self.generic_visit(node)

    def visit_AnnAssign(self, node):
        self._assigned(node.target, node)
        self.generic_visit(node)

    def visit_FunctionDef(self, node):  # nested helpers are checked when they are traced, not here
        return

    visit_AsyncFunctionDef = visit_FunctionDef
    visit_Lambda = visit_FunctionDef


def check_source(fn, tensor_params=()) -> dict:
    """Check ``fn``'s body (``tensor_params``: the names of its tensor parameters); return
    {(file, line): index variable name} of its pypto loops.

    Source that cannot be read (built with exec, say) is traced without these checks.
    """
    try:
        lines, first = inspect.getsourcelines(fn)
    except (OSError, TypeError):
        return {}
    tree = ast.parse(textwrap.dedent("".join(lines)))
    fdef = next((n for n in tree.body if isinstance(n, (ast.FunctionDef, ast.AsyncFunctionDef))), None)
    if fdef is None:
        return {}
    checker = _Checker(inspect.getsourcefile(fn) or fn.__code__.co_filename, first - 1, fn.__name__, tensor_params)
    for stmt in fdef.body:
        checker.visit(stmt)
    return checker.loop_names


def _renames_its_own_memory(target, value) -> bool:
    """``x = pypto.reshape(x, shape, inplace=True)``: the name stays on the argument's memory (an
    in-place reshape is another name for it), so rebinding it writes nothing away."""
    if not (isinstance(target, ast.Name) and isinstance(value, ast.Call) and value.args):
        return False
    func = value.func
    called = func.attr if isinstance(func, ast.Attribute) else func.id if isinstance(func, ast.Name) else None
    inplace = any(k.arg == "inplace" and isinstance(k.value, ast.Constant) and k.value.value is True
                  for k in value.keywords)
    first = value.args[0]
    return called == "reshape" and inplace and isinstance(first, ast.Name) and first.id == target.id

