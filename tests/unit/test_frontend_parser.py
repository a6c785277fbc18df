"""pypto.frontend.parser: upstream's entry / diagnostics / evaluator names over the tracing frontend."""

import ast
import os

import pytest
import torch

import pypto
from pypto.error import ParserError, RenderedParserError
from pypto.frontend.parser import JitCallableWrapper, function, jit
from pypto.frontend.parser.diagnostics import DiagnosticLevel, Diagnostics, Source
from pypto.frontend.parser.evaluator import ExprEvaluator

HERE = os.path.abspath(__file__)


def sample(a, b):
    c = a + b  # a line to point at
    return min(c, 4)


def _line_of(text):
    with open(HERE, encoding="utf-8") as f:
        return next(k + 1 for k, line in enumerate(f) if text in line)


def _diag():
    return Diagnostics(Source(sample))


def _eval(text, **names):
    return ExprEvaluator.eval(ast.parse(text, mode="eval").body, names, _diag())


def test_source_parses_with_the_file_line_numbers():
    src = Source(sample)
    assert os.path.abspath(src.source_name) == HERE and src.start_line == _line_of("def sample(a, b)")
    tree = src.as_ast()
    assert isinstance(tree, ast.FunctionDef) and tree.name == "sample"
    assert tree.body[0].lineno == _line_of("a line to point at")
    with pytest.raises(pypto.ArgumentTypeError, match="program"):
        Source(len)


def test_builtin_min_max_stay_python_without_symbols():
    assert _eval("min(['bbb', 'a', 'cc'], key=len)") == "a"
    assert _eval("max([], default='none')") == "none"
    assert _eval("min(n, 16)", n=8) == 8 and type(_eval("min(n, 16)", n=8)) is int
    known = pypto.symbolic_scalar(10)
    assert _eval("min(m, n)", m=known, n=pypto.symbolic_scalar(20)) == 10
    assert type(_eval("max(m, 3)", m=known)) is int


def test_builtin_min_max_of_a_symbol_are_symbolic():
    n = pypto.SymbolicScalar("n")
    lo = _eval("min(min(n, 16), 32)", n=n)
    hi = _eval("max(n, 4)", n=n)
    assert isinstance(lo, pypto.SymbolicScalar) and isinstance(hi, pypto.SymbolicScalar)
    assert str(lo.simplify()) == "RUNTIME_Min(n, 16)" and str(hi) == "RUNTIME_Max(n, 4)"


def test_a_failing_expression_is_a_parser_error_at_its_line():
    node = _diag().source.as_ast().body[0].value  # `a + b`
    with pytest.raises(ParserError, match="NameError") as ei:
        ExprEvaluator.eval(node, {"a": 1}, _diag())
    assert ei.value.loc.line == _line_of("a line to point at")
    with pytest.raises(ParserError, match="expressions"):
        ExprEvaluator.eval(_diag().source.as_ast(), {}, _diag())


def test_diagnostics_record_and_raise():
    diag = _diag()
    node = diag.source.as_ast().body[1]
    diag.warning(node, "something to look at")
    assert [(d.level, d.line, d.message) for d in diag.items] == [
        (DiagnosticLevel.WARNING, _line_of("return min(c, 4)"), "something to look at")]
    assert "return min(c, 4)" in diag.render()
    with pytest.raises(RenderedParserError, match="not allowed here") as ei:
        diag.error(node, "not allowed here")
    assert ei.value.node is node and "return min(c, 4)" in str(ei.value)


def test_jit_callable_wrapper_is_the_kernel_class_and_its_cache_clears():
    @jit
    def twice(x: pypto.Tensor([4], pypto.DT_FP32), out: pypto.Tensor([4], pypto.DT_FP32)):
        out[:] = x * 2.0

    assert isinstance(twice, JitCallableWrapper) and function is pypto.frontend.function
    x = torch.arange(4, dtype=torch.float32)
    out = torch.zeros(4)
    twice(x, out)
    twice(x, out)
    assert twice.cache_info().misses == 1 and len(JitCallableWrapper._kernel_module_cache) >= 1
    JitCallableWrapper._kernel_module_cache.clear()
    assert twice.cache_info().misses == 0 and len(twice.cache_info().entries) == 0
    twice(x, out)
    assert twice.cache_info().misses == 1
    torch.testing.assert_close(out, x * 2.0)
