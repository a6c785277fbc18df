"""Symbolic quotients with common factors simplify (issue 11, item 7: ``reshape(x, [n * 2, -1])``
left ``n * 168 // (n * 2)``); every rule keeps the value (checked on random positive sizes)."""

import random

import pytest

from pypto.ir import expr as E

N, M = E.Sym("N", nonneg=True), E.Sym("M", nonneg=True)


@pytest.mark.parametrize("a, b, want", [
    (E.mul(N, 168), E.mul(N, 2), 84),
    (E.mul(N, 168), 84, "N * 2"),
    (E.mul(E.mul(N, M), 6), E.mul(M, 3), "N * 2"),
    (E.add(E.mul(N, 4), 8), 4, "N + 2"),
    (E.mul(N, M), N, "M"),
    (N, N, 1),
])
def test_exact_quotients_simplify(a, b, want):
    q = E.simplify_dim(E.floordiv(a, b))
    assert (q if isinstance(q, int) else E.render(q)) == want
    assert E.simplify_dim(E.mod(a, b)) == 0


@pytest.mark.parametrize("a, b", [
    (E.add(N, 1), 2),
    (E.mul(N, 3), E.mul(N, 2)),
    (E.add(E.mul(N, 4), 2), 4),
    (E.mul(N, 4), M),
])
def test_inexact_quotients_stay(a, b):
    assert isinstance(E.floordiv(a, b), E.Bin) and E.floordiv(a, b).op == "floordiv"


def test_quotients_keep_their_value():
    rng = random.Random(0)
    exprs = [N, M, E.mul(N, M), E.mul(N, 6), E.add(E.mul(N, 6), 12), E.mul(E.mul(N, M), 4), E.add(N, M)]
    for _ in range(300):
        a, b = rng.choice(exprs), rng.choice(exprs + [2, 3, 6])
        env = {"N": rng.randint(1, 50), "M": rng.randint(1, 50)}
        for op in ("floordiv", "mod"):
            got = E.evaluate(E.binary(op, a, b), env)
            av, bv = E.evaluate(E.lift(a), env), E.evaluate(E.lift(b), env)
            assert got == (av // bv if op == "floordiv" else av % bv), (E.render(a), E.render(E.lift(b)), op, env)
