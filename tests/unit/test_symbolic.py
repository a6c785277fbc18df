"""Symbolic integers: pypto.ir.expr (folding, normal form, evaluation) and SymbolicScalar."""

import os
import re

import pytest
import torch

import pypto
from pypto.errors import KernelSyntaxError, PyptoError
from pypto.ir import expr as E
from pypto.frontend.scalar import SymbolicScalar as S

i, j, N, M = E.Sym("i"), E.Sym("j"), E.Sym("N"), E.Sym("M")

HERE = os.path.abspath(__file__)
with open(HERE, encoding="utf-8") as _f:
    _LINES = _f.read().splitlines()


def line_of(name):
    found = [k + 1 for k, t in enumerate(_LINES) if re.search(r"#\s*@L:" + re.escape(name) + r"\b", t)]
    assert len(found) == 1, found
    return found[0]


def ev(e, **env):
    return E.compile_expr(E.lift(e))(env, None)


# ---- folding and the linear normal form ------------------------------------------------------------

def test_linear_terms_cancel():
    e = E.sub(E.add(E.mul(i, 32), 32), E.mul(i, 32))
    assert e == E.Const(32)
    assert E.simplify_dim(e) == 32 and type(E.simplify_dim(e)) is int
    assert E.sub(E.add(N, i), E.add(i, N)) == E.Const(0)
    assert E.add(E.mul(E.add(i, 3), 2), 1) == E.add(E.mul(i, 2), 7)  # 2 * (i + 3) + 1 = 2i + 7
    assert E.mul(E.add(i, 1), 0) == E.Const(0)


def test_normal_form_is_order_independent_and_readable():
    assert E.add(E.mul(i, 2), N) == E.add(N, E.mul(2, i))
    assert hash(E.add(i, 1)) == hash(E.add(1, i))
    assert E.render(E.sub(N, E.mul(i, 32))) == "N - i * 32"  # positive terms first
    assert E.render(E.add(E.mul(i, 32), 32)) == "i * 32 + 32"
    assert E.render(E.sub(E.add(N, 1), 4)) == "N - 3"
    assert str(E.add(E.mul(i, 32), 32)) == "i * 32 + 32"


def test_constants_fold():
    assert E.add(2, 3) == E.Const(5)
    assert E.floordiv(7, 2) == E.Const(3) and E.mod(7, 2) == E.Const(1)
    assert E.floordiv(N, 1) == N
    assert E.mod(N, 1) == E.Const(0)
    with pytest.raises(ZeroDivisionError):
        E.floordiv(7, 0)


def test_ceildiv():
    assert E.ceildiv(100, 32) == E.Const(4)
    assert E.ceildiv(96, 32) == E.Const(3)
    assert E.ceildiv(N, 1) == N
    e = E.ceildiv(N, 32)
    assert E.render(e) == "(N + 31) // 32"
    assert [ev(e, N=n) for n in (1, 31, 32, 33, 96, 100)] == [1, 1, 1, 2, 3, 4]


def test_min_max():
    assert E.emin(3, 5) == E.Const(3) and E.emax(3, 5) == E.Const(5)
    assert E.emin(N, N) == N and E.emax(N, N) == N
    size = E.Sym("N", nonneg=True)  # a size: never negative
    assert E.emax(size, 0) == size and E.emax(0, size) == size
    assert E.emax(N, 0) != N  # a symbol of unknown sign keeps its max
    assert ev(E.emax(N, 0), N=-3) == 0
    e = E.emax(E.sub(N, 3), 0)
    assert isinstance(e, E.Bin) and E.render(e) == "max(N - 3, 0)"
    assert ev(e, N=1) == 0 and ev(e, N=7) == 4
    assert ev(E.emin(N, M), N=3, M=2) == 2


def test_comparisons_fold_when_constant():
    assert E.binary("lt", E.add(i, 1), E.add(i, 2)) == E.Const(True)
    assert E.binary("ge", E.mul(N, 2), E.add(E.mul(N, 2), 1)) == E.Const(False)
    assert E.binary("eq", N, N) == E.Const(True) and E.binary("ne", N, N) == E.Const(False)
    assert E.binary("le", E.sub(N, i), E.sub(N, i)) == E.Const(True)
    assert E.binary("lt", 2, 3) == E.Const(True)
    open_cmp = E.binary("lt", N, i)
    assert isinstance(open_cmp, E.Bin) and E.render(open_cmp) == "N < i"
    assert ev(open_cmp, N=1, i=2) is True and ev(open_cmp, N=2, i=2) is False


def test_logic_folds():
    c = E.binary("lt", i, N)
    assert E.binary("and", True, c) == c and E.binary("and", c, False) == E.Const(False)
    assert E.binary("or", False, c) == c and E.binary("or", c, True) == E.Const(True)
    assert E.logical_not(E.Const(True)) == E.Const(False)
    both = E.binary("and", c, E.binary("ge", i, 0))
    assert E.render(both) == "i < N and i >= 0"
    assert ev(both, i=0, N=3) is True and ev(both, i=3, N=3) is False and ev(both, i=-1, N=3) is False


def test_logic_with_a_constant_keeps_a_truth_value():
    # `n && 20` is 0 or 1, never n itself (upstream's && and ||); it is kept as written
    for e in (E.binary("and", N, 20), E.binary("or", 0, N)):
        assert isinstance(e, E.Bin) and e.op in ("and", "or")
        assert ev(e, N=5) == 1 and ev(e, N=0) == 0
        assert E.truth(e) == e  # already a truth value
    n = pypto.symbolic_scalar("n")
    assert str(n & pypto.symbolic_scalar(20)) == "(n&&20)"
    assert str((n & 20).simplify()) == "(n!=0)"
    assert E.evaluate(E.binary("and", N, M), {"N": 3, "M": 7}) == 1  # not 7


def test_clamp_extent_is_the_view_rule():
    e = E.clamp_extent(N, E.mul(i, 8), 8)  # min(max(N - 8i, 0), 8)
    assert [ev(e, N=13, i=k) for k in range(3)] == [8, 5, 0]
    assert E.clamp_extent(13, 8, 8) == 5 and E.clamp_extent(13, 16, 8) == 0


def test_lift_rejects_non_integers():
    with pytest.raises(TypeError):
        E.lift(1.5)
    assert E.lift(True) == E.Const(True) and E.lift(3) == E.Const(3)


# ---- evaluation ----------------------------------------------------------------------------------

def test_compile_expr_and_evaluate():
    e = E.add(E.mul(i, 32), E.floordiv(N, 4))
    f = E.compile_expr(e)
    assert f({"i": 2, "N": 17}, None) == 68
    assert E.compile_expr(e) is f  # compiled once
    assert E.evaluate(e, {"i": 0, "N": 8}) == 2
    assert E.evaluate(7, {}) == 7 and E.evaluate(E.Const(5), {}) == 5
    assert E.free_symbols(e) == {"i", "N"}
    with pytest.raises(KeyError):
        E.evaluate(e, {"i": 1})


def test_load_reads_a_tensor_element():
    e = E.add(E.Load("idx", (i, E.add(j, 1))), 10)
    calls = []

    def load(param, indices):
        calls.append((param, indices))
        return 5

    assert E.evaluate(e, {"i": 2, "j": 3}, load) == 15
    assert calls == [("idx", (2, 4))]
    assert E.render(e) == "idx[i, j + 1] + 10"
    assert E.free_symbols(e) == {"i", "j"}


# ---- SymbolicScalar --------------------------------------------------------------------------------

def test_symbolic_scalar_operators_build_expressions():
    n = S("N")
    assert n.is_symbol() and not n.is_concrete()
    cases = [  # a list, not a dict: == on SymbolicScalars builds an expression
        (n + 1, 11), (1 + n, 11), (n - 3, 7), (20 - n, 10), (n * 3, 30), (3 * n, 30), (n // 3, 3),
        (n / 3, 3), (n % 3, 1), (25 // n, 2), (25 % n, 5), (-n, -10), (n.min(4), 4), (n.max(40), 40),
    ]
    for s, want in cases:
        assert isinstance(s, S), s
        assert E.evaluate(s.expr, {"N": 10}) == want, (s, want)
    assert str(n * 2 + 1) == "((N*2)+1)"  # upstream's text: every operation parenthesised
    assert repr(n // 4) == "SymbolicScalar((N/4))"
    assert E.render((n * 2 + 1).expr) == "N * 2 + 1"  # the IR printer keeps its readable infix


def test_symbolic_scalar_comparisons_and_logic():
    n = S("N")
    checks = [(n < 3, False), (n <= 10, True), (n > 9, True), (n >= 11, False), (n == 10, True), (n != 10, False)]
    for s, want in checks:
        assert isinstance(s, S) and E.evaluate(s.expr, {"N": 10}) is want
    both = (n > 1) & (n < 20)
    either = (n < 1) | (n > 5)
    assert E.evaluate(both.expr, {"N": 10}) is True and E.evaluate(either.expr, {"N": 3}) is False
    assert E.evaluate((~(n < 3)).expr, {"N": 10}) is True


def test_symbolic_scalar_constant_results():
    n = S("N")
    c = n * 32 + 32 - n * 32
    assert c.is_concrete() and c.concrete() == 32 and int(c) == 32
    assert list(range(S(3))) == [0, 1, 2]  # a constant works where Python needs an int
    assert bool(n == n) is True  # folds to a constant
    assert S(S("N")).expr == N and S(5).is_immediate()


def test_pypto_min_max_ceildiv_with_ints():
    assert pypto.min(3, 5) == 3 and type(pypto.min(3, 5)) is int
    assert pypto.max(3, 5) == 5
    assert pypto.ceildiv(100, 32) == 4 and pypto.ceildiv(96, 32) == 3


def test_pypto_min_max_ceildiv_with_symbols():
    n = S("N")
    lo = pypto.min(n, 5)
    hi = pypto.max(3, n)
    cd = pypto.ceildiv(n, 8)
    assert all(isinstance(s, S) for s in (lo, hi, cd))
    assert E.evaluate(lo.expr, {"N": 9}) == 5 and E.evaluate(hi.expr, {"N": 1}) == 3
    assert str(cd) == "((N+7)/8)" and E.evaluate(cd.expr, {"N": 17}) == 3
    # a symbolic expression that folds comes back as a plain int
    assert pypto.ceildiv(n - n + 64, 32) == 2 and type(pypto.ceildiv(n - n + 64, 32)) is int
    assert pypto.min(n, n).expr == N


def test_concrete_on_a_symbol_is_a_clear_error():
    n = S("N") + 1
    with pytest.raises(KernelSyntaxError) as ei:
        n.concrete()  # @L:concrete
    e = ei.value
    assert isinstance(e, PyptoError) and isinstance(e, ValueError)
    assert "N + 1" in str(e) and "got" in str(e)
    assert e.loc is not None and os.path.abspath(e.loc.file) == HERE and e.loc.line == line_of("concrete")
    with pytest.raises(KernelSyntaxError):
        int(n)


def test_symbol_where_python_needs_an_int():
    with pytest.raises(KernelSyntaxError) as ei:
        range(S("N"))  # @L:index
    msg = str(ei.value)
    assert "pypto.loop" in msg and "expected" in msg and "got" in msg and "N" in msg
    assert ei.value.loc.line == line_of("index")


def test_symbolic_condition_outside_a_kernel():
    with pytest.raises(KernelSyntaxError, match="inside a @pypto.jit kernel") as ei:
        if S("N") < 3:  # @L:cond
            pass
    assert ei.value.loc.line == line_of("cond")


# ---- inside a kernel -----------------------------------------------------------------------------

class Seen:
    def __init__(self):
        self.items = []


SEEN = Seen()


@pypto.jit
def tail_blocks(x: pypto.Tensor([pypto.DYNAMIC, 32], pypto.DT_FP32), out: pypto.Tensor([pypto.DYNAMIC, 32], pypto.DT_FP32)):
    n = x.shape[0]
    blocks = pypto.ceildiv(n, 8)
    SEEN.items.append((n, blocks))
    for b in pypto.loop(blocks):
        lo = b * 8
        hi = min(lo + 8, n)  # builtin min on symbols becomes pypto.min
        if hi - lo < 8:  # a runtime branch: the tail block
            out[lo:lo + 8, :] = x[lo:lo + 8, :] + 2
        else:
            out[lo:lo + 8, :] = x[lo:lo + 8, :] + 1


def test_symbolic_sizes_drive_a_kernel():
    SEEN.items.clear()
    tail_blocks.cache_clear()
    for rows in (13, 16, 3):
        x, out = torch.randn(rows, 32), torch.zeros(rows, 32)
        tail_blocks(x, out)
        want = x + 1
        r = rows % 8
        if r:
            want[rows - r:] = x[rows - r:] + 2
        torch.testing.assert_close(out, want)
    assert tail_blocks.cache_info().misses == 1  # one compile for every size
    (n, blocks), = SEEN.items
    assert isinstance(n, S) and str(n) == "RUNTIME_GetInputShapeDim(ARG_x,0)"
    assert isinstance(blocks, S) and E.render(blocks.expr) == "(x.shape[0] + 7) // 8"
