"""Golden tests of pypto/ops/math.py: unary math (trig, rounding, exp/log variants, sign) and binary
arithmetic (pow, fmod, remainder, floor_div, ceil_div, hypot, atan2, gcd, axpy_) with the
operators ``//``, ``%`` and ``**``."""

from __future__ import annotations

import math

import pytest
import torch

import pypto

try:
    from tests.golden.helper import check_op, check_raises, rand
except ImportError:  # run without the repo root on sys.path: pytest puts this dir there
    from helper import check_op, check_raises, rand

FP32, FP16, BF16 = torch.float32, torch.float16, torch.bfloat16
I64, I32, I16, I8, U8 = torch.int64, torch.int32, torch.int16, torch.int8, torch.uint8
FLOATS = [FP32, FP16, BF16]
SIN_COS = [FP32, FP16]
ROUNDING = FLOATS + [I32, I16]
SIGNED = FLOATS + [I8, I16, I32]
MODES = ["direct", "tiled"]
SHAPE = {"direct": (5, 7), "tiled": (37, 8)}  # 37 rows = two full 16-row tiles + a 5-row tail


def inputs(shape, dtype, lo, hi, seed=0):
    """``rand`` with the range clipped at 0 for unsigned dtypes."""
    if dtype == U8:
        lo = max(lo, 0)
    return rand(shape, dtype, lo=lo, hi=hi, seed=seed)


def _cbrt_ref(t):
    d = t.double()
    return (d.abs() ** (1.0 / 3.0) * d.sign()).to(t.dtype)


def _fp32_for_ints(dtype):
    return None if dtype.is_floating_point else FP32


# ---- unary -----------------------------------------------------------------------------------------

UNARY = {  # name: (pypto fn, torch reference, dtypes, input range, out dtype for an input dtype or None)
    "acos": (pypto.acos, torch.acos, FLOATS, (-0.95, 0.95), None),
    "acosh": (pypto.acosh, torch.acosh, FLOATS, (1.0, 6.0), None),
    "asin": (pypto.asin, torch.asin, FLOATS, (-0.95, 0.95), None),
    "asinh": (pypto.asinh, torch.asinh, FLOATS, (-5, 5), None),
    "atan": (pypto.atan, torch.atan, FLOATS, (-5, 5), None),
    "atanh": (pypto.atanh, torch.atanh, FLOATS, (-0.9, 0.9), None),
    "cbrt": (pypto.cbrt, _cbrt_ref, FLOATS, (-9, 9), None),
    "cos": (pypto.cos, torch.cos, SIN_COS, (-4, 4), None),
    "cosh": (pypto.cosh, torch.cosh, FLOATS, (-3, 3), None),
    "erf": (pypto.erf, torch.erf, FLOATS, (-3, 3), None),
    "erfc": (pypto.erfc, torch.erfc, FLOATS, (-2, 3), None),
    "exp2": (pypto.exp2, lambda t: torch.exp2(t.float()), FLOATS + [I32, I16, I8, U8], (-4, 8), _fp32_for_ints),
    "expm1": (pypto.expm1, lambda t: torch.expm1(t.float()), ROUNDING, (-3, 4), _fp32_for_ints),
    "floor": (pypto.floor, torch.floor, ROUNDING, (-5, 5), None),
    "ceil": (pypto.ceil, torch.ceil, ROUNDING, (-5, 5), None),
    "trunc": (pypto.trunc, torch.trunc, ROUNDING, (-5, 5), None),
    "log10": (pypto.log10, torch.log10, FLOATS, (0.05, 20), None),
    "log1p": (pypto.log1p, torch.log1p, FLOATS, (-0.6, 5), None),
    "log2": (pypto.log2, torch.log2, FLOATS, (0.05, 20), None),
    "sign": (pypto.sign, torch.sign, SIGNED, (-4, 4), None),
    "signbit": (pypto.signbit, torch.signbit, SIGNED, (-4, 4), None),
    "sin": (pypto.sin, torch.sin, SIN_COS, (-4, 4), None),
    "sinh": (pypto.sinh, torch.sinh, FLOATS, (-3, 3), None),
    "tan": (pypto.tan, torch.tan, FLOATS, (-1.2, 1.2), None),
}
UNARY_CASES = [(op, dt) for op, (_, _, dts, _, _) in UNARY.items() for dt in dts]
# a dtype each op refuses
UNSUPPORTED = {"cos": BF16, "sin": BF16, "exp2": I64, "expm1": I8, "floor": I8, "ceil": I8, "trunc": I8,
               "sign": U8, "signbit": U8}


@pytest.mark.parametrize("mode", MODES)
@pytest.mark.parametrize("op,dtype", UNARY_CASES)
def test_unary(op, dtype, mode):
    fn, ref, _, (lo, hi), out = UNARY[op]
    x = inputs(SHAPE[mode], dtype, lo, hi, seed=3)
    if op in ("sign", "signbit", "floor", "ceil", "trunc") and dtype.is_floating_point:
        x[0, :3] = torch.tensor([0.0, -0.0, -1.0])  # zeros of both signs and an integral value
    check_op(fn, [x], ref, mode=mode, loose=True, out_dtype=out(dtype) if out else None)


@pytest.mark.parametrize("op", list(UNARY))
def test_unary_rejects_dtype(op):
    fn = UNARY[op][0]
    err = check_raises(pypto.DTypeError, fn, [rand((4, 4), UNSUPPORTED.get(op, I32))])
    assert op in str(err)


def _run(fn, *args):
    """``fn`` applied in a direct kernel (for results the golden helper cannot compare: NaN)."""
    @pypto.jit
    def kernel(a: pypto.Tensor()):
        return fn(a)

    return kernel(*args)


@pytest.mark.parametrize("op", ["acos", "acosh", "asin", "atanh", "log2", "log10", "log1p"])
def test_unary_outside_domain_is_nan(op):
    fn, ref = UNARY[op][:2]
    x = torch.tensor([[-3.0, -1.0, -0.5, 0.0, 0.5, 1.0, 3.0, -0.0]])
    got, want = _run(fn, x), ref(x)
    assert torch.equal(torch.isnan(got), torch.isnan(want)) and torch.isnan(want).any()
    torch.testing.assert_close(got[~torch.isnan(got)], want[~torch.isnan(want)], rtol=1e-4, atol=1e-5)


def test_unary_special_values():
    """signbit of -0.0, -inf and NaN; cube roots of negatives."""
    y = torch.tensor([[-0.0, 0.0, -math.inf, math.inf, math.nan, -math.nan, -1e-30, 3.0]])
    got = check_op(pypto.signbit, [y], lambda t: torch.tensor([[True, False, True, False, False, False, True,
                                                                   False]]))[0]
    assert got.dtype == torch.bool
    check_op(pypto.cbrt, [torch.tensor([[-27.0, -8.0, 0.0, 1.0, 64.0]])],
             lambda t: torch.tensor([[-3.0, -2.0, 0.0, 1.0, 4.0]]), loose=True)


UNARY_METHODS = ["sin", "cos", "sinh", "cosh", "asinh", "acosh", "exp2", "expm1", "erfc", "sign", "signbit", "log1p",
                 "log10", "log2", "ceil", "floor", "trunc"]


@pytest.mark.parametrize("op", UNARY_METHODS)
def test_unary_methods(op):
    _, ref, _, (lo, hi), _ = UNARY[op]
    x = rand((4, 6), FP32, lo=lo, hi=hi, seed=5)
    check_op(lambda t: getattr(t, op)(), [x], ref, loose=True)


def test_precision_type_is_accepted_and_checked():
    x = rand((4, 6), FP32, lo=0.5, hi=4)
    for p in pypto.PrecisionType:
        check_op(lambda t: pypto.log2(t, p), [x], torch.log2, loose=True)
        check_op(lambda t: t.log10(p), [x], torch.log10, loose=True)
        check_op(lambda t: pypto.pow(t, 2, p), [x], lambda t: t ** 2)
    check_raises(pypto.DTypeError, lambda t: pypto.log2(t, "fast"), [x])


# ---- round -----------------------------------------------------------------------------------------

@pytest.mark.parametrize("mode", MODES)
@pytest.mark.parametrize("dtype", ROUNDING)
@pytest.mark.parametrize("decimals", [0, 1, -1])
def test_round(decimals, dtype, mode):
    x = inputs(SHAPE[mode], dtype, -300, 300, seed=4)
    if dtype.is_floating_point:
        x = (x.float() / 7).to(dtype)

    def ref(t):
        return torch.round(t if t.is_floating_point() else t.double(), decimals=decimals)

    body = (lambda t: pypto.round(t)) if decimals == 0 else (lambda t: pypto.round(t, decimals))
    check_op(body, [x], ref, mode=mode)


def test_round_halves_to_even():
    halves = [-3.5, -2.5, -1.5, -0.5, 0.5, 1.5, 2.5, 3.5, 0.25, -1.75, 7.0, 2.51]
    x = torch.tensor([halves])
    check_op(pypto.round, [x], lambda t: torch.tensor([[float(round(v)) for v in halves]]))
    check_op(lambda t: t.round(1), [torch.tensor([[1.21, 2.35, 3.65, 4.76]])],  # the upstream doc example
             lambda t: torch.tensor([[1.2, 2.4, 3.6, 4.8]]))
    ints = torch.tensor([[-25, -15, 15, 25, 14, 16, 7]], dtype=I32)
    check_op(lambda t: pypto.round(t, -1), [ints], lambda t: torch.tensor([[-20, -20, 20, 20, 10, 20, 10]]),
             out_dtype=I32)


def test_round_rejects():
    check_raises(pypto.DTypeError, pypto.round, [rand((4, 4), I8)])
    check_raises(pypto.DTypeError, lambda t: pypto.round(t, 1.5), [rand((4, 4))])


# ---- binary arithmetic -----------------------------------------------------------------------------

def _away_from_zero(shape, dtype, lo, hi, seed):
    """Divisors: magnitudes in [lo, hi) with random signs (non-negative for uint8)."""
    mag = inputs(shape, dtype, lo, hi, seed=seed)
    if dtype == U8:
        return mag
    return mag * torch.where(rand(shape, torch.bool, seed=seed + 50), 1, -1).to(dtype)


def _ceil_div_ref(a, b):
    return torch.ceil(a.double() / b.double())


def _pow_ref(a, b):
    if a.is_floating_point() or (isinstance(b, torch.Tensor) and b.is_floating_point()):
        return torch.pow(a.float(), b.float() if isinstance(b, torch.Tensor) else b)
    return torch.pow(a.long(), b.long() if isinstance(b, torch.Tensor) else b)


def _pow_inputs(shape, dtype, seed=0):
    if dtype.is_floating_point:
        return rand(shape, dtype, lo=0.3, hi=3, seed=seed), rand(shape, dtype, lo=-2, hi=2.5, seed=seed + 1)
    return inputs(shape, dtype, -4, 5, seed), inputs(shape, dtype, 0, 4, seed + 1)


def _div_inputs(lo_a=-20, hi_a=20, lo_b=1, hi_b=6):
    def make(shape, dtype, seed=0):
        a = inputs(shape, dtype, lo_a, hi_a, seed)
        b = _away_from_zero(shape, dtype, lo_b if dtype.is_floating_point else max(lo_b, 1), hi_b, seed + 1)
        if dtype.is_floating_point:
            a = (a.float() * 1.37).to(dtype)  # non-integral dividends
        return a, b
    return make


def _int_inputs(lo, hi):
    def make(shape, dtype, seed=0):
        return inputs(shape, dtype, lo, hi, seed), inputs(shape, dtype, lo, hi, seed + 1)
    return make


BINARY = {  # name: (pypto fn, torch reference, dtypes, make(shape, dtype, seed) -> (a, b), scalar or None)
    "pow": (pypto.pow, _pow_ref, FLOATS + [I32, I8, U8, I16], _pow_inputs, 2),
    "fmod": (pypto.fmod, torch.fmod, FLOATS, _div_inputs(lo_b=0.5, hi_b=3), 1.5),
    "remainder": (pypto.remainder, torch.remainder, ROUNDING, _div_inputs(lo_b=0.5, hi_b=6), -3),
    "floor_div": (pypto.floor_div, torch.floor_divide, FLOATS + [I32, I8, U8], _div_inputs(0, 100, 0.5, 7), 3),
    "ceil_div": (pypto.ceil_div, _ceil_div_ref, [I32], _div_inputs(-100, 100, 1, 9), 4),
    "hypot": (pypto.hypot, torch.hypot, FLOATS, _int_inputs(-5, 5), None),
    "atan2": (pypto.atan2, torch.atan2, FLOATS, _int_inputs(-5, 5), None),
    "gcd": (pypto.gcd, torch.gcd, [I8, I16, I32, U8], _int_inputs(-60, 60), 12),
}
BINARY_CASES = [(op, dt) for op, (_, _, dts, _, _) in BINARY.items() for dt in dts]
BINARY_UNSUPPORTED = {"pow": I64, "remainder": I8, "floor_div": I16, "ceil_div": FP32, "gcd": FP32}


def _scalar(s, dtype):
    return float(s) if dtype.is_floating_point else int(s)


@pytest.mark.parametrize("mode", MODES)
@pytest.mark.parametrize("op,dtype", BINARY_CASES)
def test_binary(op, dtype, mode):
    fn, ref, _, make, _ = BINARY[op]
    a, b = make(SHAPE[mode], dtype)
    if op in ("hypot", "atan2"):
        a, b = (a.float() / 1.3).to(dtype), b
    check_op(fn, [a, b], ref, mode=mode, loose=True)


@pytest.mark.parametrize("mode", MODES)
@pytest.mark.parametrize("op,dtype", [c for c in BINARY_CASES if BINARY[c[0]][4] is not None])
def test_binary_scalar(op, dtype, mode):
    fn, ref, _, make, s = BINARY[op]
    a, _ = make(SHAPE[mode], dtype)
    s = _scalar(s, dtype)
    check_op(lambda t: fn(t, s), [a], lambda t: ref(t, torch.tensor(s, dtype=t.dtype)), mode=mode, loose=True)


@pytest.mark.parametrize("op", list(BINARY))
def test_binary_broadcast(op):
    fn, ref, dts, make, _ = BINARY[op]
    dt = dts[0]
    a, _ = make((37, 1), dt, seed=1)
    _, b = make((1, 8), dt, seed=2)
    check_op(fn, [a, b], ref, mode="tiled", loose=True)
    if op in ("hypot", "atan2", "gcd"):  # symmetric domains: the (1, 8) operand may come first
        check_op(fn, [b, a], ref, loose=True)


@pytest.mark.parametrize("op", list(BINARY))
def test_binary_rejects_dtype(op):
    fn, _, dts, make, _ = BINARY[op]
    bad = BINARY_UNSUPPORTED.get(op, I32)
    err = check_raises(pypto.DTypeError, fn, [rand((4, 4), bad), rand((4, 4), bad)])
    assert isinstance(err, TypeError) and op in str(err)
    check_raises(pypto.DTypeError, fn, [rand((4, 4), dts[0]), rand((4, 4), I64)])  # mixed dtypes


def test_binary_tensor_only_operands():
    x = rand((4, 4))
    for fn in (pypto.hypot, pypto.atan2):
        check_raises(pypto.DTypeError, lambda t: fn(t, 2.0), [x])
    for fn in (pypto.fmod, pypto.floor_div, pypto.pow, pypto.hypot):
        check_raises(pypto.DTypeError, lambda t: fn(2.0, t), [x])  # 'input' must be a tensor
    check_raises(pypto.DTypeError, lambda t: pypto.gcd(t, 2.5), [rand((4, 4), I32)])
    check_raises(pypto.DTypeError, lambda t: pypto.floor_div(t, 2.5), [rand((4, 4), I32)])
    check_raises(pypto.ArgumentValueError, lambda t: pypto.fmod(t, math.inf), [x])


# ---- pow -------------------------------------------------------------------------------------------

@pytest.mark.parametrize("mode", MODES)
def test_pow_scalars_and_operator(mode):
    shape = SHAPE[mode]
    x = rand(shape, FP32, lo=0.2, hi=3)
    check_op(lambda t: t ** 2, [x], lambda t: t ** 2, mode=mode)
    check_op(lambda t: t ** 0.5, [x], torch.sqrt, mode=mode, loose=True)
    check_op(lambda t: t ** -1.5, [x], lambda t: t ** -1.5, mode=mode, loose=True)
    i = rand(shape, I32, lo=-6, hi=7)
    check_op(lambda t: t ** 3, [i], lambda t: t ** 3, mode=mode)
    # a float exponent turns int32 into fp32; other integer dtypes keep theirs (truncated)
    check_op(lambda t: pypto.pow(t.cast(pypto.DT_INT32), 0.5), [i.abs()], lambda t: t.double() ** 0.5,
             out_dtype=FP32, mode=mode, loose=True)
    h = rand(shape, I16, lo=0, hi=30)
    check_op(lambda t: pypto.pow(t, 0.5), [h], lambda t: torch.trunc(t.double() ** 0.5), mode=mode)


def test_pow_integer_negative_exponent_truncates():
    x = torch.tensor([[2, 1, -1, 3, -2, 4]], dtype=I32)
    check_op(lambda t: t ** -1, [x], lambda t: torch.tensor([[0, 1, -1, 0, 0, 0]]))
    e = torch.tensor([[-1, -2, 3, 2, 1, 0]], dtype=I32)
    check_op(pypto.pow, [x, e], lambda a, b: torch.tensor([[0, 1, -1, 9, -2, 1]]))


PROMOTION = [(FP16, BF16, FP32), (BF16, FP16, FP32), (FP32, FP16, FP32), (BF16, FP32, FP32), (I32, FP32, FP32),
             (FP16, I32, FP16), (I32, BF16, BF16), (BF16, I32, BF16)]


@pytest.mark.parametrize("mode", MODES)
@pytest.mark.parametrize("da,db,want", PROMOTION)
def test_pow_promotes_mixed_dtypes(da, db, want, mode):
    n, m = SHAPE[mode]
    a = rand((n, m), da, lo=1, hi=4, seed=1)
    b = rand((n, m), db, lo=-1, hi=3, seed=2)
    got = check_op(pypto.pow, [a, b], lambda x, y: torch.pow(x.float(), y.float()), out_dtype=want, mode=mode,
                   loose=True)
    assert got[0].dtype == want


def test_pow_rejects_small_int_mixing():
    check_raises(pypto.DTypeError, pypto.pow, [rand((4, 4), I8), rand((4, 4), I32)])
    check_raises(pypto.DTypeError, pypto.pow, [rand((4, 4), FP32), rand((4, 4), I16)])


# ---- division-like ops: operators, zero divisors, reflected scalars --------------------------------

@pytest.mark.parametrize("mode", MODES)
@pytest.mark.parametrize("dtype", [FP32, BF16, I32])
def test_floordiv_and_mod_operators(dtype, mode):
    a, b = _div_inputs(-50, 50, 1, 7)(SHAPE[mode], dtype)
    check_op(lambda x, y: x // y, [a, b], torch.floor_divide, mode=mode)
    check_op(lambda x, y: x % y, [a, b], torch.remainder, mode=mode, loose=True)
    s = _scalar(3, dtype)
    check_op(lambda x: x // s, [a], lambda x: torch.floor_divide(x, s), mode=mode)
    check_op(lambda x: x % s, [a], lambda x: torch.remainder(x, s), mode=mode, loose=True)
    check_op(lambda y: 7 % y, [b], lambda y: torch.remainder(torch.tensor(7, dtype=y.dtype), y), mode=mode,
             loose=True)


def test_fmod_vs_remainder_signs():
    a = torch.tensor([[5.0, -5.0, 5.0, -5.0, 7.5, -0.5]])
    b = torch.tensor([[3.0, 3.0, -3.0, -3.0, 2.0, 2.0]])
    check_op(pypto.fmod, [a, b], lambda x, y: torch.tensor([[2.0, -2.0, 2.0, -2.0, 1.5, -0.5]]))
    check_op(pypto.remainder, [a, b], lambda x, y: torch.tensor([[2.0, 1.0, -1.0, -2.0, 1.5, 1.5]]))
    check_op(lambda x, y: x.fmod(y), [a, b], torch.fmod)
    check_op(lambda x, y: x.remainder(y), [a, b], torch.remainder)


def test_integer_division_exact_values():
    a = torch.tensor([[7, -7, 7, -7, 0, 6, -6, 1]], dtype=I32)
    b = torch.tensor([[2, 2, -2, -2, 3, 3, 4, 5]], dtype=I32)
    check_op(pypto.floor_div, [a, b], lambda x, y: torch.tensor([[3, -4, -4, 3, 0, 2, -2, 0]]))
    check_op(pypto.ceil_div, [a, b], lambda x, y: torch.tensor([[4, -3, -3, 4, 0, 2, -1, 1]]))
    check_op(pypto.remainder, [a, b], lambda x, y: torch.tensor([[1, 1, -1, -1, 0, 0, 2, 1]]))


def test_integer_division_by_zero_is_defined():
    """Chip-dependent upstream; the simulator saturates quotients and gives 0 remainders (no crash)."""
    a = torch.tensor([[5, -5, 0, 9]], dtype=I32)
    z = torch.zeros((1, 4), dtype=I32)
    big, small = torch.iinfo(I32).max, torch.iinfo(I32).min
    check_op(pypto.floor_div, [a, z], lambda x, y: torch.tensor([[big, small, big, big]]))
    check_op(pypto.ceil_div, [a, z], lambda x, y: torch.tensor([[big, small, big, big]]))
    check_op(pypto.remainder, [a, z], lambda x, y: torch.zeros((1, 4)))


def test_ceil_div_keeps_symbolic_ceildiv():
    assert pypto.ceildiv(7, 2) == 4
    x = torch.tensor([[1, 6, 6], [4, 6, 6]], dtype=I32)
    y = torch.tensor([[1, 1, 2], [3, 4, 5]], dtype=I32)
    check_op(pypto.ceil_div, [x, y], lambda a, b: torch.tensor([[1, 6, 3], [2, 2, 2]]))


def test_hypot_atan2_gcd_methods_and_quadrants():
    y = torch.tensor([[1.0, 1.0, -1.0, -1.0, 0.0, 3.0]])
    x = torch.tensor([[1.0, -1.0, 1.0, -1.0, -1.0, 4.0]])
    check_op(pypto.atan2, [y, x], lambda a, b: torch.tensor([[math.pi / 4, 3 * math.pi / 4, -math.pi / 4,
                                                              -3 * math.pi / 4, math.pi, math.atan2(3, 4)]]),
             loose=True)
    check_op(lambda a, b: a.hypot(b), [y, x], lambda a, b: torch.sqrt(a * a + b * b), loose=True)
    i = torch.tensor([[1, 1, 2, 3, 4, 5, 0, -12]], dtype=I32)
    j = torch.tensor([[6, 6, 6, 6, 6, 6, 0, 18]], dtype=I32)
    check_op(lambda a, b: a.gcd(b), [i, j], lambda a, b: torch.tensor([[1, 1, 2, 3, 2, 1, 0, 6]]))


# ---- axpy_ -----------------------------------------------------------------------------------------

@pytest.mark.parametrize("mode", MODES)
@pytest.mark.parametrize("dy,dx", [(FP32, FP32), (FP16, FP16), (FP32, FP16)])
def test_axpy(dy, dx, mode):
    n, m = SHAPE[mode]
    y = rand((n, m), dy, seed=1)
    x = rand((n, m), dx, seed=2)
    y0 = y.clone()
    check_op(lambda a, b: pypto.axpy_(a, b, 2.5), [y, x], lambda a, b: a + 2.5 * b, mode=mode)
    check_op(lambda a, b: a.axpy_(b, -3), [y, x], lambda a, b: a - 3 * b, mode=mode)
    check_op(pypto.axpy_, [y, x], lambda a, b: a + b, mode=mode)
    col = rand((n, 1), dx, seed=3)  # x broadcasts to y
    check_op(lambda a, b: pypto.axpy_(a, b, 0.5), [y, col], lambda a, b: a + 0.5 * b, mode=mode)
    assert torch.equal(y, y0)  # "in place" is not modelled: y keeps its value


def test_axpy_rejects():
    check_raises(pypto.DTypeError, pypto.axpy_, [rand((4, 4), BF16), rand((4, 4), BF16)])
    check_raises(pypto.DTypeError, pypto.axpy_, [rand((4, 4), FP16), rand((4, 4), FP32)])  # only fp32 y + fp16 x
    check_raises(pypto.DTypeError, lambda a, b: pypto.axpy_(a, b, "2"), [rand((4, 4)), rand((4, 4))])
    check_raises(pypto.ShapeError, pypto.axpy_, [rand((1, 4)), rand((4, 4))])  # y does not broadcast
    check_raises(pypto.ShapeError, pypto.axpy_, [rand((4, 4)), rand((4,))])  # same rank


# ---- tails and chains ------------------------------------------------------------------------------

@pytest.mark.parametrize("n", [1, 15, 17, 33])
def test_tails(n):
    x = rand((n, 24), FP32, lo=-3, hi=3)
    check_op(pypto.sin, [x], torch.sin, mode="tiled", tile=16, loose=True)
    a, b = _div_inputs(-50, 50, 1, 9)((n, 24), I32)
    check_op(pypto.floor_div, [a, b], torch.floor_divide, mode="tiled", tile=8)
    check_op(pypto.remainder, [a, b], torch.remainder, mode="tiled", tile=8)


@pytest.mark.parametrize("mode", MODES)
def test_chain_in_bf16(mode):
    x = rand(SHAPE[mode], BF16, lo=0.2, hi=2)
    check_op(lambda t: pypto.sin(t.cast(pypto.DT_FP32)).cast(pypto.DT_BF16) + pypto.log1p(t) * pypto.cosh(t),
             [x],
             lambda t: torch.sin(t).bfloat16().float() + torch.log1p(t).bfloat16().float() * torch.cosh(t)
             .bfloat16().float(), mode=mode)
