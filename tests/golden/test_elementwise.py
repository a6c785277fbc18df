"""Golden tests of the elementwise ops: arithmetic, unary math, clip, comparisons, where, cast."""

from __future__ import annotations

import math

import pytest
import torch

import pypto

try:
    from tests.golden.helper import build_kernel, check_op, check_raises, rand
except ImportError:  # run without the repo root on sys.path: pytest puts this dir there
    from helper import build_kernel, check_op, check_raises, rand

FP32, FP16, BF16 = torch.float32, torch.float16, torch.bfloat16
I32, I16, I8 = torch.int32, torch.int16, torch.int8
FLOATS = [FP32, FP16, BF16]
NUMERIC = [FP32, FP16, BF16, I32, I16]
MODES = ["direct", "tiled"]
SHAPE = {"direct": (5, 7), "tiled": (37, 8)}  # 37 rows = two full 16-row tiles + a 5-row tail


def operands(shape, dtype, seed=0, *, lo=-4, hi=5):
    """Two operands; for ints small values (no overflow), for floats values with some ties."""
    return rand(shape, dtype, lo=lo, hi=hi, seed=seed), rand(shape, dtype, lo=lo, hi=hi, seed=seed + 1)


def scalar_for(dtype, value=2.5):
    return value if dtype.is_floating_point else int(value)


# ---- binary arithmetic ---------------------------------------------------------------------------

BINARY = {
    "add": (pypto.add, torch.add, NUMERIC),
    "sub": (pypto.sub, torch.sub, NUMERIC),
    "mul": (pypto.mul, torch.mul, NUMERIC),
    "div": (pypto.div, torch.div, FLOATS),
    "maximum": (pypto.maximum, torch.maximum, NUMERIC),
    "minimum": (pypto.minimum, torch.minimum, NUMERIC),
}
BINARY_CASES = [(op, dt) for op, (_, _, dts) in BINARY.items() for dt in dts]


def _binary_inputs(op, shape, dtype):
    a, b = operands(shape, dtype)
    if op == "div":  # keep the denominator away from 0
        b = rand(shape, dtype, lo=0.5, hi=3.0, seed=7) * torch.where(rand(shape, torch.bool, seed=8), 1, -1).to(dtype)
    return a, b


@pytest.mark.parametrize("mode", MODES)
@pytest.mark.parametrize("op,dtype", BINARY_CASES)
def test_binary(op, dtype, mode):
    fn, ref, _ = BINARY[op]
    a, b = _binary_inputs(op, SHAPE[mode], dtype)
    check_op(fn, [a, b], ref, mode=mode)


@pytest.mark.parametrize("mode", MODES)
@pytest.mark.parametrize("op,dtype", BINARY_CASES)
def test_binary_scalar_both_sides(op, dtype, mode):
    """The scalar is a compile-time constant of the kernel, on either side of the op."""
    fn, ref, _ = BINARY[op]
    a, _ = _binary_inputs(op, SHAPE[mode], dtype)
    if op == "div":
        a = rand(SHAPE[mode], dtype, lo=0.5, hi=3.0)
    s = scalar_for(dtype)
    check_op(fn, [a, s], lambda x, s_: ref(x, torch.tensor(s_, dtype=x.dtype)), mode=mode)
    check_op(fn, [s, a], lambda s_, x: ref(torch.tensor(s_, dtype=x.dtype), x), mode=mode)


@pytest.mark.parametrize("op", list(BINARY))
def test_binary_rejects_dtype(op):
    fn, _, dts = BINARY[op]
    bad = I8 if I32 in dts else I32
    err = check_raises(pypto.DTypeError, fn, list(operands((4, 4), bad)))
    assert isinstance(err, TypeError) and op in str(err)


def test_binary_rejects_mixed_dtypes_and_float_scalar_on_int():
    check_raises(pypto.DTypeError, pypto.add, [rand((4, 4)), rand((4, 4), FP16)])
    check_raises(pypto.DTypeError, pypto.add, [rand((4, 4), I32), 1.5])


OPERATORS = {
    "a + b": (lambda a, b: a + b, torch.add),
    "a - b": (lambda a, b: a - b, torch.sub),
    "a * b": (lambda a, b: a * b, torch.mul),
    "a / b": (lambda a, b: a / b, torch.div),
}


@pytest.mark.parametrize("dtype", FLOATS)
@pytest.mark.parametrize("expr", list(OPERATORS))
def test_operators(expr, dtype):
    body, ref = OPERATORS[expr]
    a, b = _binary_inputs("div", (6, 8), dtype)
    check_op(body, [a, b], ref)


@pytest.mark.parametrize("mode", MODES)
@pytest.mark.parametrize("dtype", FLOATS)
def test_reflected_and_unary_operators(dtype, mode):
    x = rand(SHAPE[mode], dtype, lo=0.5, hi=3.0)
    check_op(lambda t: 2.0 - t, [x], lambda t: 2.0 - t, mode=mode)
    check_op(lambda t: 3 + t, [x], lambda t: 3 + t, mode=mode)
    check_op(lambda t: 0.5 * t, [x], lambda t: 0.5 * t, mode=mode)
    check_op(lambda t: 1.0 / t, [x], lambda t: 1.0 / t, mode=mode)
    check_op(lambda t: -t, [x], lambda t: -t, mode=mode)
    check_op(lambda t: t - 1.25, [x], lambda t: t - 1.25, mode=mode)


@pytest.mark.parametrize("dtype", [I32, I16])
def test_int_operators_with_int_scalars(dtype):
    x = rand((5, 6), dtype, lo=-50, hi=50)
    check_op(lambda t: 7 - t, [x], lambda t: 7 - t)
    check_op(lambda t: t * 3 + 1, [x], lambda t: t * 3 + 1)
    check_op(lambda t: -t, [x], lambda t: -t)


@pytest.mark.parametrize("mode", MODES)
@pytest.mark.parametrize("dtype", FLOATS)
def test_scalar_zero_keeps_its_sign_across_ops_and_kernels(dtype, mode):
    """Scalar operands are made once per value and shared (`elementwise.scalar_tensor`): 0.0 and
    -0.0 are equal as dict keys, yet ``x * -0.0`` and ``x * 0.0`` differ in the sign of every zero,
    and a NaN scalar, never equal to itself, must still give NaN."""
    a = rand(SHAPE[mode], dtype, lo=0.5, hi=3.0)
    for s in (0.0, -0.0, 0.0, -0.0):
        got = check_op(pypto.mul, [a, s], lambda x, s_: x * torch.tensor(s_, dtype=x.dtype), mode=mode)[0]
        assert torch.equal(torch.signbit(got), torch.signbit(a * s)), f"x * {s!r}: zero signs differ from torch"
    nan = pypto.jit(build_kernel(pypto.add, [a, math.nan], "direct"))
    for _ in range(2):  # the second call finds no cached NaN (NaN != NaN) and makes it again
        assert torch.isnan(nan(a, math.nan)).all()


def test_op_chain_in_fp16_rounds_after_each_op():
    """Each op casts its fp32 result back to fp16 (pypto's rule), so a chain rounds in between."""
    x = rand((8, 8), FP16, lo=-3, hi=3)
    check_op(lambda t: (t * 1.1 + 0.3) * t, [x],
             lambda t: ((t * 1.1).half().float() + 0.3).half().float() * t)


# ---- broadcasting and tails ----------------------------------------------------------------------

BROADCAST = [
    ((37, 1), (1, 8)),   # outer product shapes
    ((8,), (37, 8)),     # lower rank first
    ((37, 8), (8,)),     # lower rank second
    ((1, 8), (37, 8)),
    ((37, 8), (37, 1)),
]


@pytest.mark.parametrize("mode", MODES)
@pytest.mark.parametrize("sa,sb", BROADCAST)
@pytest.mark.parametrize("dtype", [FP32, BF16, I32])
def test_broadcast(sa, sb, dtype, mode):
    a, b = rand(sa, dtype, lo=-9, hi=9, seed=1), rand(sb, dtype, lo=-9, hi=9, seed=2)
    check_op(pypto.add, [a, b], torch.add, mode=mode)
    check_op(pypto.mul, [a, b], torch.mul, mode=mode)


@pytest.mark.parametrize("n", [1, 15, 16, 17, 33])
def test_tails(n):
    a, b = operands((n, 24), FP32)
    check_op(pypto.sub, [a, b], torch.sub, mode="tiled", tile=16)
    check_op(pypto.exp, [a], torch.exp, mode="tiled", tile=8, loose=True)


def test_broadcast_mismatch_raises():
    check_raises(pypto.ShapeError, pypto.add, [rand((4, 5)), rand((4, 6))])


# ---- unary ---------------------------------------------------------------------------------------

UNARY = {  # name: (pypto fn, torch fn, dtypes, input range, transcendental)
    "neg": (pypto.neg, torch.neg, NUMERIC, (-5, 5), False),
    "abs": (pypto.abs, torch.abs, NUMERIC, (-5, 5), False),
    "relu": (pypto.relu, torch.relu, NUMERIC, (-5, 5), False),
    "exp": (pypto.exp, torch.exp, FLOATS, (-3, 3), True),
    "log": (pypto.log, torch.log, FLOATS, (0.1, 5), True),
    "sqrt": (pypto.sqrt, torch.sqrt, FLOATS, (0.0, 5), True),
    "rsqrt": (pypto.rsqrt, torch.rsqrt, FLOATS, (0.1, 5), True),
    "reciprocal": (pypto.reciprocal, torch.reciprocal, FLOATS, (0.25, 5), True),
    "sigmoid": (pypto.sigmoid, torch.sigmoid, FLOATS, (-6, 6), True),
    "tanh": (pypto.tanh, torch.tanh, FLOATS, (-3, 3), True),
}
UNARY_CASES = [(op, dt) for op, (_, _, dts, _, _) in UNARY.items() for dt in dts]


@pytest.mark.parametrize("mode", MODES)
@pytest.mark.parametrize("op,dtype", UNARY_CASES)
def test_unary(op, dtype, mode):
    fn, ref, _, (lo, hi), loose = UNARY[op]
    x = rand(SHAPE[mode], dtype, lo=lo, hi=hi, seed=3)
    check_op(fn, [x], ref, mode=mode, loose=loose)


@pytest.mark.parametrize("op", ["exp", "sqrt", "sigmoid", "abs", "relu", "neg"])
def test_unary_methods(op):
    x = rand((4, 6), FP32, lo=0.1, hi=3, seed=5)
    check_op(lambda t: getattr(t, op)(), [x], UNARY[op][1], loose=True)


@pytest.mark.parametrize("op", list(UNARY))
def test_unary_rejects_dtype(op):
    fn, _, dts, _, _ = UNARY[op]
    bad = I8 if I32 in dts else I32
    check_raises(pypto.DTypeError, fn, [rand((4, 4), bad)])


def test_unary_values_are_not_identity():
    """Guard against a vacuous comparison: exp must actually differ from its input."""
    x = rand((4, 4), FP32, lo=0.5, hi=1)
    with pytest.raises(AssertionError):
        check_op(pypto.exp, [x], lambda t: t)



@pytest.mark.parametrize("precision", list(pypto.PrecisionType))
def test_precision_type_on_div_and_unary_math(precision):
    """div, exp, log, sqrt, rsqrt and reciprocal take upstream's precision_type (positional or
    keyword, function or method); A2/A3 compute the same numbers in either mode."""
    x, y = rand((4, 6), FP32, lo=0.5, hi=4, seed=1), rand((4, 6), FP32, lo=0.5, hi=4, seed=2)
    check_op(lambda a, b: pypto.div(a, b, precision_type=precision), [x, y], torch.div, loose=True)
    check_op(lambda a, b: a.div(b, precision), [x, y], torch.div, loose=True)
    for name, ref in [("exp", torch.exp), ("log", torch.log), ("sqrt", torch.sqrt),
                      ("rsqrt", torch.rsqrt), ("reciprocal", torch.reciprocal)]:
        check_op(lambda a, n=name: getattr(pypto, n)(a, precision), [x], ref, loose=True)
        check_op(lambda a, n=name: getattr(a, n)(precision_type=precision), [x], ref, loose=True)


def test_precision_type_rejects_unknown_modes():
    x = rand((4, 6), FP32, lo=0.5, hi=4)
    check_raises(pypto.DTypeError, lambda a: pypto.div(a, a, precision_type="fast"), [x])
    check_raises(pypto.DTypeError, lambda a: pypto.exp(a, 3), [x])

# ---- clip ----------------------------------------------------------------------------------------

@pytest.mark.parametrize("mode", MODES)
@pytest.mark.parametrize("dtype", NUMERIC)
def test_clip_scalar_bounds(dtype, mode):
    x = rand(SHAPE[mode], dtype, lo=-6, hi=6, seed=2)
    lo, hi = scalar_for(dtype, -2.5), scalar_for(dtype, 3.5)
    check_op(lambda t: pypto.clip(t, lo, hi), [x], lambda t: torch.clamp(t, lo, hi), mode=mode)
    check_op(lambda t: pypto.clip(t, min=lo), [x], lambda t: torch.clamp(t, min=lo), mode=mode)
    check_op(lambda t: t.clip(max=hi), [x], lambda t: torch.clamp(t, max=hi), mode=mode)


@pytest.mark.parametrize("mode", MODES)
@pytest.mark.parametrize("dtype", NUMERIC)
def test_clip_tensor_bounds(dtype, mode):
    n, m = SHAPE[mode]
    x = rand((n, m), dtype, lo=-6, hi=6, seed=2)
    lo = rand((1, m), dtype, lo=-4, hi=0, seed=3)  # broadcast row
    hi = rand((n, m), dtype, lo=1, hi=4, seed=4)  # full tensor
    check_op(pypto.clip, [x, lo, hi], lambda t, a, b: torch.clamp(t, a, b), mode=mode)
    check_op(lambda t, b: pypto.clip(t, None, b), [x, hi], lambda t, b: torch.clamp(t, max=b), mode=mode)


def test_clip_rejects():
    check_raises(pypto.DTypeError, lambda t: pypto.clip(t, -1, 1), [rand((4, 4), I8)])
    check_raises(pypto.DTypeError, lambda t: pypto.clip(t), [rand((4, 4))])


# ---- comparisons ---------------------------------------------------------------------------------

CMP = {
    "eq": (pypto.eq, torch.eq, lambda a, b: a == b),
    "ne": (pypto.ne, torch.ne, lambda a, b: a != b),
    "gt": (pypto.gt, torch.gt, lambda a, b: a > b),
    "ge": (pypto.ge, torch.ge, lambda a, b: a >= b),
    "lt": (pypto.lt, torch.lt, lambda a, b: a < b),
    "le": (pypto.le, torch.le, lambda a, b: a <= b),
}


@pytest.mark.parametrize("mode", MODES)
@pytest.mark.parametrize("dtype", NUMERIC)
@pytest.mark.parametrize("op", list(CMP))
def test_compare(op, dtype, mode):
    fn, ref, operator = CMP[op]
    a, b = operands(SHAPE[mode], dtype, lo=-2, hi=3)  # small integers: many ties
    a, b = a.round() if dtype.is_floating_point else a, b.round() if dtype.is_floating_point else b
    got = check_op(fn, [a, b], ref, mode=mode)[0]
    assert got.dtype == torch.bool and got.any() and not got.all()
    check_op(operator, [a, b], ref, mode=mode)
    s = scalar_for(dtype, 1.0)
    check_op(lambda t: operator(t, s), [a], lambda t: ref(t, s), mode=mode)


@pytest.mark.parametrize("op", list(CMP))
def test_compare_broadcast_and_reject(op):
    fn, ref, _ = CMP[op]
    a, b = rand((6, 1), FP32, lo=-2, hi=3, seed=1).round(), rand((1, 5), FP32, lo=-2, hi=3, seed=2).round()
    check_op(fn, [a, b], ref)
    check_raises(pypto.DTypeError, fn, [rand((4, 4), I8), rand((4, 4), I8)])


# ---- where ---------------------------------------------------------------------------------------

@pytest.mark.parametrize("mode", MODES)
@pytest.mark.parametrize("dtype", NUMERIC)
def test_where(dtype, mode):
    shape = SHAPE[mode]
    c = rand(shape, torch.bool, seed=1)
    x, y = operands(shape, dtype, seed=2)
    s = scalar_for(dtype, 1.5)
    # a Python float is an fp32 scalar: other float dtypes take it as an Element of their dtype
    ps = pypto.Element(PYPTO_OF[dtype], s) if dtype in (FP16, BF16) else s
    check_op(pypto.where, [c, x, y], torch.where, mode=mode)
    check_op(lambda c_, t: pypto.where(c_, t, ps), [c, x], lambda c_, t: torch.where(c_, t, s), mode=mode)
    check_op(lambda c_, t: pypto.where(c_, ps, t), [c, y], lambda c_, t: torch.where(c_, s, t), mode=mode)
    check_op(lambda c_, t, u: t.where(c_, u), [c, x, y], torch.where, mode=mode)


@pytest.mark.parametrize("mode", MODES)
def test_where_broadcast_cond_from_compare(mode):
    n, m = SHAPE[mode]
    x, y = rand((n, m), seed=1), rand((n, m), seed=2)
    col = rand((n, 1), seed=3)
    check_op(lambda t, u, k: pypto.where(k > 0.0, t, u), [x, y, col],
             lambda t, u, k: torch.where(k > 0, t, u), mode=mode)


@pytest.mark.parametrize("mode", MODES)
def test_where_of_two_scalars_has_the_condition_shape(mode):
    c = rand(SHAPE[mode], torch.bool, seed=1)
    check_op(lambda c_: pypto.where(c_, 1.0, -2.5), [c], lambda c_: torch.where(c_, 1.0, -2.5), mode=mode,
             out_dtype=FP32)  # a float scalar is an fp32 element
    check_op(lambda c_: pypto.where(c_, 3, -4), [c], lambda c_: torch.where(c_, 3, -4).to(I32), mode=mode,
             out_dtype=I32)


def test_where_rejects():
    c, x = rand((4, 4), torch.bool), rand((4, 4), I8)
    check_raises(pypto.DTypeError, pypto.where, [c, x, x])
    check_raises(pypto.DTypeError, pypto.where, [rand((4, 4)), rand((4, 4)), rand((4, 4))])  # BOOL condition
    check_raises(pypto.DTypeError, lambda c_: pypto.where(c_, "1", 0.0), [rand((4, 4), torch.bool)])


# ---- cast ----------------------------------------------------------------------------------------

PYPTO_OF = {FP32: pypto.DT_FP32, FP16: pypto.DT_FP16, BF16: pypto.DT_BF16, I32: pypto.DT_INT32,
            I16: pypto.DT_INT16, I8: pypto.DT_INT8, torch.int64: pypto.DT_INT64, torch.uint8: pypto.DT_UINT8,
            torch.bool: pypto.DT_BOOL}
FLOAT_PAIRS = [(FP32, FP16), (FP32, BF16), (FP16, FP32), (BF16, FP32), (FP16, BF16), (BF16, FP16)]


@pytest.mark.parametrize("mode", MODES)
@pytest.mark.parametrize("src,dst", FLOAT_PAIRS)
def test_cast_float_to_float(src, dst, mode):
    x = rand(SHAPE[mode], FP32, lo=-100, hi=100, seed=4).to(src)
    check_op(lambda t: pypto.cast(t, PYPTO_OF[dst]), [x], lambda t: t.to(dst), out_dtype=dst, mode=mode)


HALVES = [-3.5, -2.5, -1.5, -0.5, 0.5, 1.5, 2.5, 3.5, -1.7, -1.2, 1.2, 1.7, 0.0, -0.25, 7.0, -7.75]
MODES_REF = {  # CastMode -> the rounding in plain Python (independent of torch)
    pypto.CastMode.CAST_RINT: round,  # half to even
    pypto.CastMode.CAST_ROUND: lambda v: math.copysign(math.floor(abs(v) + 0.5), v),
    pypto.CastMode.CAST_FLOOR: math.floor,
    pypto.CastMode.CAST_CEIL: math.ceil,
    pypto.CastMode.CAST_TRUNC: math.trunc,
    pypto.CastMode.CAST_NONE: math.trunc,  # float -> int without a mode truncates
}


@pytest.mark.parametrize("mode", list(MODES_REF), ids=lambda m: m.name)
@pytest.mark.parametrize("src,dst", [(FP32, I32), (FP16, I32), (BF16, I16), (FP32, I8)])
def test_cast_float_to_int_modes(src, dst, mode):
    x = torch.tensor(HALVES, dtype=src).reshape(2, 8)
    want = torch.tensor([int(MODES_REF[mode](v)) for v in x.float().flatten().tolist()], dtype=dst).reshape(2, 8)
    check_op(lambda t: pypto.cast(t, PYPTO_OF[dst], mode), [x], lambda t: want, out_dtype=dst)


def test_cast_round_modes_differ():
    """The test values separate the modes (a mode mapped to the wrong rounding is caught)."""
    outs = {m: tuple(int(MODES_REF[m](v)) for v in HALVES) for m in MODES_REF}
    assert len({outs[m] for m in MODES_REF if m is not pypto.CastMode.CAST_NONE}) == 5


@pytest.mark.parametrize("src,dst", [(I32, I8), (I32, I16), (I16, I8)])
def test_cast_int_saturation(src, dst):
    x = torch.tensor([[-100000, -129, -128, -1, 0, 1, 127, 128, 300, 40000]], dtype=torch.int64)
    x = x.clamp(torch.iinfo(src).min, torch.iinfo(src).max).to(src)
    info = torch.iinfo(dst)
    check_op(lambda t: pypto.cast(t, PYPTO_OF[dst], satmode=pypto.SaturationMode.ON), [x],
             lambda t: t.clamp(info.min, info.max), out_dtype=dst)


@pytest.mark.parametrize("mode", MODES)
@pytest.mark.parametrize("src,dst", [(I32, FP32), (I16, FP16), (I32, BF16), (I32, I16), (I16, I32),
                                     (I8, I32), (I8, FP16), (torch.bool, FP32), (FP32, torch.bool),
                                     (I32, torch.bool), (FP16, I8), (torch.int64, I32), (I32, torch.int64),
                                     (torch.uint8, FP16), (torch.uint8, I32)])
def test_cast_other_pairs(src, dst, mode):
    x = rand(SHAPE[mode], src, lo=-100, hi=100, seed=6)
    if src.is_floating_point:
        x = x.round()  # float -> int on integral values: independent of the rounding mode
        x[0, 0] = 0
    check_op(lambda t: pypto.cast(t, PYPTO_OF[dst]), [x], lambda t: t.to(dst), out_dtype=dst, mode=mode)


def test_cast_method_and_rejects():
    x = rand((3, 4), FP32)
    check_op(lambda t: t.cast(pypto.DT_FP16), [x], lambda t: t.half(), out_dtype=FP16)
    check_raises(pypto.DTypeError, lambda t: pypto.cast(t, torch.float16), [x])  # not a pypto dtype
    check_raises(pypto.UnsupportedDTypeError, lambda t: pypto.cast(t, pypto.DT_FP8), [x])  # not in this build


def test_vec_tile_rank_follows_the_output():
    """A broadcasting op is tiled over its output: a tile of the output's rank or more is accepted
    (extra sizes are for ops of higher rank), fewer sizes are refused (tests/golden/test_tile_rank.py)."""
    @pypto.jit
    def k(a: pypto.Tensor(), b: pypto.Tensor(), rank=2):
        pypto.set_vec_tile_shapes(*[8] * rank)
        return pypto.add(a, b)

    a, b = rand((6,), seed=1), rand((5, 6), seed=2)
    torch.testing.assert_close(k(a, b), a + b, rtol=0, atol=0)
    torch.testing.assert_close(k(a, b, 3), a + b, rtol=0, atol=0)
    with pytest.raises(pypto.ShapeError):
        k(a, b, 1)
