"""SymbolicScalar.check: SAT / UNSAT / UNKNOWN for a conjunction of integer conditions; never wrong."""

import itertools
import random

import pytest

import pypto
from pypto import SatStatus
from pypto.frontend.scalar import SymbolicScalar as S
from pypto.ir import expr as E

SAT, UNSAT, UNKNOWN = SatStatus.SAT, SatStatus.UNSAT, SatStatus.UNKNOWN
x, y, z, n = S("x"), S("y"), S("z"), S("n")


def check(conds):
    return S.check(conds)


def test_exports():
    assert pypto.SatStatus is SatStatus and pypto.symbolic_scalar.check is S.check
    from pypto.symbolic_scalar import SatStatus as again
    assert again is SatStatus and repr(SAT) == "SatStatus.SAT"


def test_constants_decide():
    assert check([]) == SAT
    assert check([S(1), S(5), True]) == SAT
    assert check([S(1), S(0)]) == UNSAT
    assert check([x >= 0, S(3) < 2]) == UNSAT
    assert check([x == x, 2 * x + 1 == 1 + 2 * x]) == SAT  # fold to true when built


@pytest.mark.parametrize("conds", [
    lambda: [x == y, x == y + 1],
    lambda: [x == 5, x == 6],
    lambda: [2 * x == 3],  # no integer solution
    lambda: [2 * x + 2 * y == 5],
    lambda: [2 * x + y == 1, y == 0],  # 2x == 1 after substitution
    lambda: [x + 2 * y == 5, 2 * x + 4 * y == 11],
    lambda: [x + y + z == 1, 2 * x + 2 * y + 2 * z == 5],
    lambda: [x == y, y == z, z == x + 1],  # a chain substituted to a fixed point
    lambda: [((x == 0) & (x == y)) & (x + 1 == y)],  # && splits into atoms
    lambda: [x >= 10, x < 10],
    lambda: [x > 5, x < 6],  # no integer strictly between
    lambda: [x + y >= 0, x + y <= -1],  # bounds on the same linear part
    lambda: [n - 2 <= x, x + 8 <= n],
    lambda: [3 * x >= 10, x <= 3],  # x >= ceil(10 / 3)
    lambda: [3 * x <= -10, x >= -3],  # x <= floor(-10 / 3)
    lambda: [-2 * x > -5, -2 * x < -6],
    lambda: [2 * y == x, 3 * x >= 10, x <= 3],
    lambda: [x != 5, x == 5],
    lambda: [x == 6, x % 4 == 3],  # folds once x is pinned
    lambda: [x == 8, x // 2 == 3],
    lambda: [n // 8 >= x + 10, n // 8 <= x],  # n // 8 is an unknown integer of its own
    lambda: [~(x < 3), x <= 2],  # a negated comparison is the flipped one
])
def test_contradictions(conds):
    assert check(conds()) == UNSAT


@pytest.mark.parametrize("conds,want", [
    (lambda: [x == 6, x % 4 == 2], SAT),
    (lambda: [x == 5, y == 8, pypto.min(x, y) == 5], SAT),
    (lambda: [x == y, y == 6, x // 4 == 1], SAT),
    (lambda: [x == 5, x != 6], SAT),
    (lambda: [x >= 0], UNKNOWN),
    (lambda: [x == y, x == z], UNKNOWN),  # nothing pinned to a constant
    (lambda: [x % 4 == 2], UNKNOWN),  # an opaque term's value may have no x behind it
    (lambda: [x == 5, y == 0, x // y == 1], UNKNOWN),  # division by a pinned 0: not folded
    (lambda: [x * y >= 1, x * y <= 0], UNKNOWN),  # products are not linear: only folded
    (lambda: [2 * x + 3 * y == 5], UNKNOWN),
    (lambda: [x + 8 >= n, x + 8 <= n], UNKNOWN),  # a single point is feasible
    (lambda: [2 * x > 5, x <= 3], UNKNOWN),  # strict made non-strict before the gcd: x >= 3
])
def test_answers(conds, want):
    assert check(conds()) == want


def test_division_and_modulo_fold_with_floor_rounding():
    assert check([x == -6, x % 4 == 2]) == SAT  # Python's -6 % 4
    assert check([x == -7, x // 2 == -4]) == SAT


def test_a_runtime_dim_is_a_term():
    b = pypto.Tensor([-1, 32], pypto.DT_FP32, "c").shape[0]
    a = S("a")
    assert check([a + 1 == b - 1, a + 2 == b - 1]) == UNSAT
    assert check([a + 1 == b - 1]) != UNSAT


def test_rejects_what_is_not_a_condition():
    with pytest.raises(pypto.PyptoError, match="conds"):
        check([x < 1, "x < 1"])
    with pytest.raises(pypto.PyptoError, match="conds"):
        check(x < 1)


def test_never_wrong_on_random_linear_conjunctions():
    rng = random.Random(7)
    box = range(-9, 10)

    def side():
        e = S(rng.randint(-4, 4))
        for v in (x, y):
            if rng.random() < 0.7:
                e = e + rng.choice([-3, -2, -1, 1, 2, 3]) * v
        if rng.random() < 0.15:
            e = e + x // rng.choice([2, 3])
        return e

    seen = {SAT: 0, UNSAT: 0, UNKNOWN: 0}
    for _ in range(300):
        conds = []
        for _ in range(rng.randint(1, 3)):
            a, b = side(), side()
            c = rng.choice([a == b, a != b, a < b, a <= b, a > b, a >= b])
            conds.append(~c if rng.random() < 0.2 else c)
        status = check(conds)
        seen[status] += 1
        exists = any(all(E.evaluate(c.expr, {"x": u, "y": v}) for c in conds) for u, v in itertools.product(box, box))
        if status == UNSAT:
            assert not exists, [str(c) for c in conds]
        if status == SAT:
            assert exists, [str(c) for c in conds]
    assert seen[UNSAT] > 10
