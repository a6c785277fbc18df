"""Golden tests of prod, argmax, argmin, var, cumsum, cumprod and argsort.

arg* and argsort inputs hold distinct values along the reduced/sorted dim (each line a permutation
of small integers, exact in fp16/bf16), so the reference indices are unambiguous. Tie behaviour is
pinned separately: argmax/argmin return the first index among equal extremes, argsort is stable.
"""

from __future__ import annotations

import pytest
import torch

import pypto

try:
    from tests.golden.helper import check_kernel, check_op, check_raises, rand
except ImportError:  # run without the repo root on sys.path: pytest puts this dir there
    from helper import check_kernel, check_op, check_raises, rand

FP32, FP16, BF16 = torch.float32, torch.float16, torch.bfloat16
I32, I16, I64, I8 = torch.int32, torch.int16, torch.int64, torch.int8
FLOATS = [FP32, FP16, BF16]
SHAPES = [(5, 7), (3, 4, 5), (2, 3, 4, 5)]
DIM_CASES = [(shape, dim) for shape in SHAPES for dim in range(-1, len(shape))]
# tiled mode: a DYNAMIC first dim of 37 (33) rows = 16-row tiles + a tail; the op runs on an inner dim
TILED_CASES = [((37, 8), 1), ((37, 3, 8), 2), ((37, 3, 8), 1), ((33, 2, 3, 8), 2), ((33, 2, 3, 8), 3)]


def distinct(shape, dim, dtype=FP32, seed=0):
    """Each line along ``dim`` a permutation of 0..n-1, shifted to straddle 0 (exact in fp16/bf16)."""
    g = torch.Generator().manual_seed(seed)
    n = shape[dim]
    return (torch.argsort(torch.rand(shape, generator=g), dim=dim).float() - n / 2).to(dtype)


def near_one(shape, dtype, seed=0):
    """Products stay in range: floats in [0.6, 1.4), ints in [-3, 3] (|prod| <= 3**7 fits int16)."""
    if dtype.is_floating_point:
        return rand(shape, dtype, lo=0.6, hi=1.4, seed=seed)
    return rand(shape, dtype, lo=-3, hi=4, seed=seed)


# ---- prod -------------------------------------------------------------------------------------------

@pytest.mark.parametrize("keepdim", [False, True])
@pytest.mark.parametrize("shape,dim", DIM_CASES, ids=str)
@pytest.mark.parametrize("dtype", [FP32, I32, I16])
def test_prod(dtype, shape, dim, keepdim):
    x = near_one(shape, dtype)
    check_op(lambda t: pypto.prod(t, dim, keepdim), [x], lambda t: torch.prod(t, dim, keepdim), loose=True)


@pytest.mark.parametrize("shape,dim", TILED_CASES, ids=str)
@pytest.mark.parametrize("dtype", [FP32, I32])
def test_prod_tiled_rows_with_tail(dtype, shape, dim):
    x = near_one(shape, dtype, seed=1)
    check_op(lambda t: pypto.prod(t, dim, True), [x], lambda t: torch.prod(t, dim, True), mode="tiled", loose=True)


def test_prod_across_tiles():
    """The reduced dim spans several tiles: partial products per tile, then a combine."""
    @pypto.jit
    def k(x: pypto.Tensor(), y: pypto.Tensor()):
        pypto.set_vec_tile_shapes(16, 16)
        return pypto.prod(x, 0), pypto.prod(y, 1, True)

    x, y = near_one((70, 20), FP32, seed=2) ** 0.1, near_one((20, 70), I32, seed=3)
    y[:, 8:] = torch.where(y[:, 8:] == 0, 1, y[:, 8:]).sign()  # a few large factors, then +-1: no overflow
    check_kernel(k, [x, y], (x.prod(0), y.prod(1, keepdim=True).to(I32)), loose=True)


def test_prod_rejects():
    check_raises(pypto.DTypeError, lambda t: pypto.prod(t, 0), [rand((4, 4), FP16)])
    check_raises(pypto.ShapeError, lambda t: pypto.prod(t, 2), [rand((4, 4))])


# ---- argmax / argmin --------------------------------------------------------------------------------

ARG = {"argmax": (pypto.argmax, torch.argmax), "argmin": (pypto.argmin, torch.argmin)}


@pytest.mark.parametrize("keepdim", [False, True])
@pytest.mark.parametrize("shape,dim", DIM_CASES, ids=str)
@pytest.mark.parametrize("dtype", FLOATS)
@pytest.mark.parametrize("op", list(ARG))
def test_arg_reduce(op, dtype, shape, dim, keepdim):
    fn, ref = ARG[op]
    x = distinct(shape, dim, dtype, seed=4)
    got = check_op(lambda t: fn(t, dim, keepdim), [x], lambda t: ref(t, dim, keepdim), out_dtype=I32)[0]
    assert got.dtype == I32


@pytest.mark.parametrize("shape,dim", TILED_CASES, ids=str)
@pytest.mark.parametrize("op", list(ARG))
def test_arg_reduce_tiled_rows_with_tail(op, shape, dim):
    fn, ref = ARG[op]
    x = distinct(shape, dim, BF16, seed=5)
    check_op(lambda t: fn(t, dim, True), [x], lambda t: ref(t, dim, True), out_dtype=I32, mode="tiled")


def test_arg_reduce_defaults_methods_and_ties():
    x = torch.tensor([[1.0, 3.0, 3.0, 0.0], [2.0, -1.0, 5.0, -1.0]])
    got = check_op(lambda t: (t.argmax(), t.argmin(), pypto.argmax(t, 0, True)), [x],
                   lambda t: (torch.tensor([1, 2]), torch.tensor([3, 1]), torch.tensor([[1, 0, 1, 0]])),
                   out_dtype=I32)
    # ties: the first index among equal extremes (row 0 max 3 at 1 and 2; row 1 min -1 at 1 and 3)
    assert got[0].tolist() == [1, 2] and got[1].tolist() == [3, 1]


@pytest.mark.parametrize("op", list(ARG))
def test_arg_reduce_rejects(op):
    fn, _ = ARG[op]
    check_raises(pypto.DTypeError, lambda t: fn(t, 0), [rand((4, 4), I32)])
    check_raises(pypto.ShapeError, lambda t: fn(t, -3), [rand((4, 4))])


# ---- var --------------------------------------------------------------------------------------------

VAR_CASES = [((5, 7), 1), ((5, 7), 0), ((5, 7), None), ((3, 4, 5), 1), ((3, 4, 5), [0, 2]), ((3, 4, 5), (-1, -2)),
             ((2, 3, 4, 5), 3), ((2, 3, 4, 5), [1, 2]), ((2, 3, 4, 5), [])]


@pytest.mark.parametrize("correction", [1, 0, 2.5])
@pytest.mark.parametrize("keepdim", [False, True])
@pytest.mark.parametrize("shape,dim", VAR_CASES, ids=str)
@pytest.mark.parametrize("dtype", FLOATS)
def test_var(dtype, shape, dim, keepdim, correction):
    x = rand(shape, dtype, lo=-3, hi=3, seed=6)
    tdim = None if dim in (None, []) else dim
    check_op(lambda t: pypto.var(t, dim, correction=correction, keepdim=keepdim), [x],
             lambda t: torch.var(t, dim=tdim, correction=correction, keepdim=keepdim), loose=True)


@pytest.mark.parametrize("shape,dim", TILED_CASES + [((37, 3, 8), [1, 2])], ids=str)
@pytest.mark.parametrize("dtype", [FP32, BF16])
def test_var_tiled_rows_with_tail(dtype, shape, dim):
    x = rand(shape, dtype, lo=-3, hi=3, seed=7)
    check_op(lambda t: pypto.var(t, dim, keepdim=True), [x], lambda t: torch.var(t, dim, keepdim=True),
             mode="tiled", loose=True)


def test_var_method_and_upstream_example():
    x = torch.tensor([[1.0, 2, 3], [4, 5, 6]])
    got = check_op(lambda t: (t.var(1, keepdim=True), t.var([1], correction=0)), [x],
                   lambda t: (torch.var(t, 1, keepdim=True), torch.var(t, 1, correction=0)))
    assert got[0].tolist() == [[1.0], [1.0]]


def test_var_rejects():
    check_raises(pypto.DTypeError, lambda t: pypto.var(t, 0), [rand((4, 4), I32)])
    check_raises(pypto.ShapeError, lambda t: pypto.var(t, [1, -1]), [rand((4, 4))])  # repeated dim
    check_raises(pypto.ShapeError, lambda t: pypto.var(t, 2), [rand((4, 4))])
    check_raises(pypto.ArgumentTypeError, lambda t: pypto.var(t, 0, correction="1"), [rand((4, 4))])


# ---- cumsum / cumprod -------------------------------------------------------------------------------

@pytest.mark.parametrize("shape,dim", DIM_CASES, ids=str)
@pytest.mark.parametrize("dtype", FLOATS + [I32, I16])
def test_cumsum(dtype, shape, dim):
    x = rand(shape, dtype, lo=-3, hi=3, seed=8) if dtype.is_floating_point else rand(shape, dtype, lo=-50, hi=50)
    got = check_op(lambda t: pypto.cumsum(t, dim), [x], lambda t: torch.cumsum(t, dim),
                   out_dtype=None if dtype.is_floating_point else I64, loose=True)[0]
    assert got.dtype == (dtype if dtype.is_floating_point else I64)  # upstream: INT16/INT32 -> INT64


@pytest.mark.parametrize("shape,dim", DIM_CASES, ids=str)
@pytest.mark.parametrize("dtype", FLOATS)
def test_cumprod(dtype, shape, dim):
    x = near_one(shape, dtype, seed=9)
    check_op(lambda t: pypto.cumprod(t, dim), [x], lambda t: torch.cumprod(t, dim), loose=True)


@pytest.mark.parametrize("shape,dim", TILED_CASES, ids=str)
@pytest.mark.parametrize("dtype", [FP32, BF16, I32])
def test_scans_tiled_rows_with_tail(dtype, shape, dim):
    x = near_one(shape, dtype, seed=10)
    check_op(lambda t: pypto.cumsum(t, dim), [x], lambda t: torch.cumsum(t, dim), mode="tiled", loose=True,
             out_dtype=None if dtype.is_floating_point else I64)
    if dtype.is_floating_point:
        check_op(lambda t: t.cumprod(dim), [x], lambda t: torch.cumprod(t, dim), mode="tiled", loose=True)


def test_scans_upstream_examples_and_methods():
    x = torch.tensor([[0, 1, 2], [3, 4, 5]], dtype=I32)
    got = check_op(lambda t: t.cumsum(0), [x], lambda t: torch.cumsum(t, 0), out_dtype=I64)[0]
    assert got.tolist() == [[0, 1, 2], [3, 5, 7]]
    got = check_op(lambda t: pypto.cumprod(t, 0), [x.float()], lambda t: torch.cumprod(t, 0))[0]
    assert got.tolist() == [[0, 1, 2], [0, 4, 10]]


def test_scans_reject():
    check_raises(pypto.DTypeError, lambda t: pypto.cumsum(t, 0), [rand((4, 4), I8)])
    check_raises(pypto.DTypeError, lambda t: pypto.cumprod(t, 0), [rand((4, 4), I32)])
    check_raises(pypto.ShapeError, lambda t: pypto.cumsum(t, 2), [rand((4, 4))])


# ---- argsort ----------------------------------------------------------------------------------------

ARGSORT_CASES = [c for c in DIM_CASES if not (len(c[0]) == 4 and c[1] == 0)]  # upstream: no 4-D dim 0


@pytest.mark.parametrize("descending", [True, False])
@pytest.mark.parametrize("shape,dim", ARGSORT_CASES, ids=str)
@pytest.mark.parametrize("dtype", [FP32, FP16])
def test_argsort(dtype, shape, dim, descending):
    x = distinct(shape, dim, dtype, seed=11)
    check_op(lambda t: pypto.argsort(t, dim, descending), [x],
             lambda t: torch.argsort(t, dim=dim, descending=descending), out_dtype=I32)


@pytest.mark.parametrize("shape,dim", TILED_CASES, ids=str)
def test_argsort_tiled_rows_with_tail(shape, dim):
    x = distinct(shape, dim, FP16, seed=12)
    check_op(lambda t: pypto.argsort(t, dim, False), [x], lambda t: torch.argsort(t, dim=dim), out_dtype=I32,
             mode="tiled")


def test_argsort_defaults_and_stable_ties():
    x = torch.tensor([[1.0, 2.0, 3.0], [1.0, 2.0, 3.0]])
    got = check_op(pypto.argsort, [x], lambda t: torch.argsort(t, dim=-1, descending=True), out_dtype=I32)[0]
    assert got.tolist() == [[2, 1, 0], [2, 1, 0]]  # default: last dim, descending (upstream's docs)
    ties = torch.tensor([[2.0, 1.0, 2.0, 1.0]])
    got = check_op(lambda t: (pypto.argsort(t, -1, True), pypto.argsort(t, -1, False)), [ties],
                   lambda t: (torch.tensor([[0, 2, 1, 3]]), torch.tensor([[1, 3, 0, 2]])), out_dtype=I32)
    assert [g.tolist() for g in got] == [[[0, 2, 1, 3]], [[1, 3, 0, 2]]]  # stable: equal values keep input order


def test_argsort_rejects():
    check_raises(pypto.DTypeError, pypto.argsort, [rand((4, 4), BF16)])
    check_raises(pypto.ShapeError, lambda t: pypto.argsort(t, 0), [rand((2, 3, 4, 5))])
    check_raises(pypto.ShapeError, lambda t: pypto.argsort(t, 2), [rand((4, 4))])


# ---- pass verify: the reference executor (whole tensors) agrees with the tiled program ----------------

def test_scans_pass_verify():
    @pypto.jit(verify_options={"enable_pass_verify": True})
    def k(x: pypto.Tensor()):
        pypto.set_vec_tile_shapes(4, 2, 8)
        return (pypto.argmax(x, 2), pypto.var(x, [1, 2], keepdim=True), pypto.cumsum(x, 1), pypto.argsort(x, 2),
                pypto.prod(x, 0, True))

    x = distinct((9, 3, 20), 2, seed=13) / 8
    check_kernel(k, [x], (x.argmax(2).to(I32), x.var([1, 2], keepdim=True), x.cumsum(1),
                          torch.argsort(x, dim=2, descending=True).to(I32), x.prod(0, keepdim=True)), loose=True)
