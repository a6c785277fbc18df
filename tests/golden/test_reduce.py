"""Golden tests of the reductions (sum, amax, amin) and softmax."""

from __future__ import annotations

import pytest
import torch

import pypto

try:
    from tests.golden.helper import check_kernel, check_op, check_raises, rand
except ImportError:  # run without the repo root on sys.path: pytest puts this dir there
    from helper import check_kernel, check_op, check_raises, rand

FP32, FP16, BF16 = torch.float32, torch.float16, torch.bfloat16
I32, I16, I8 = torch.int32, torch.int16, torch.int8
REDUCE_DTYPES = [FP32, FP16, BF16, I32, I16]
FLOATS = [FP32, FP16, BF16]

REDUCE = {
    "sum": (pypto.sum, torch.sum),
    "amax": (pypto.amax, torch.amax),
    "amin": (pypto.amin, torch.amin),
}
SHAPES = [(5, 7), (3, 4, 5), (2, 3, 4, 5)]
DIM_CASES = [(shape, dim) for shape in SHAPES for dim in range(-1, len(shape))]


def _input(shape, dtype, seed=0):
    # ints small enough that an int16 sum cannot overflow; floats with distinct values
    return rand(shape, dtype, lo=-20, hi=20, seed=seed) if not dtype.is_floating_point \
        else rand(shape, dtype, lo=-3, hi=3, seed=seed)


@pytest.mark.parametrize("keepdim", [False, True])
@pytest.mark.parametrize("shape,dim", DIM_CASES, ids=str)
@pytest.mark.parametrize("dtype", REDUCE_DTYPES)
@pytest.mark.parametrize("op", list(REDUCE))
def test_reduce(op, dtype, shape, dim, keepdim):
    fn, ref = REDUCE[op]
    x = _input(shape, dtype)
    got = check_op(lambda t: fn(t, dim, keepdim), [x], lambda t: ref(t, dim, keepdim))[0]
    assert got.dim() == len(shape) - (0 if keepdim else 1)


@pytest.mark.parametrize("op", list(REDUCE))
def test_reduce_methods_and_defaults(op):
    fn, ref = REDUCE[op]
    x = _input((4, 6), FP32)
    check_op(lambda t: getattr(t, op)(0, True), [x], lambda t: ref(t, 0, True))
    check_op(lambda t: fn(t), [x], lambda t: ref(t, -1))  # default: last dim, no keepdim


@pytest.mark.parametrize("keepdim", [False, True])
@pytest.mark.parametrize("shape,dim", [((37, 8), 1), ((37, 3, 8), 2), ((37, 3, 8), 1), ((33, 2, 3, 8), 2)],
                         ids=str)
@pytest.mark.parametrize("dtype", [FP32, BF16, I32])
@pytest.mark.parametrize("op", list(REDUCE))
def test_reduce_tiled_rows_with_tail(op, dtype, shape, dim, keepdim):
    """Row tiles of a DYNAMIC first dim (37 = 2 x 16 + 5), reduced along an inner dim."""
    fn, ref = REDUCE[op]
    x = _input(shape, dtype, seed=3)
    check_op(lambda t: fn(t, dim, keepdim), [x], lambda t: ref(t, dim, keepdim), mode="tiled",
             tile_inputs=[True])


@pytest.mark.parametrize("op", list(REDUCE))
def test_reduce_rejects(op):
    fn, _ = REDUCE[op]
    err = check_raises(pypto.DTypeError, lambda t: fn(t, 0), [rand((4, 4), I8)])
    assert isinstance(err, TypeError)
    check_raises(pypto.ShapeError, lambda t: fn(t, 2), [rand((4, 4))])  # dim out of range


# ---- reductions spanning several tiles ---------------------------------------------------------

TILE = 16


@pypto.jit
def column_sum(x: pypto.Tensor([pypto.DYNAMIC, 8], pypto.DT_FP32), out: pypto.Tensor([1, 8], pypto.DT_FP32)):
    """Per-tile partial sums of a tall tensor into a local buffer, then one sum of the partials."""
    pypto.set_vec_tile_shapes(TILE, 8)
    n_tiles = pypto.ceildiv(x.shape[0], TILE)
    partial = pypto.tensor([n_tiles, 8], pypto.DT_FP32, "partial")
    for b in pypto.loop(n_tiles):
        partial[b:b + 1, :] = pypto.sum(x[b * TILE:(b + 1) * TILE, :], 0, keepdim=True)
    out[:] = pypto.sum(partial, 0, keepdim=True)


@pypto.jit
def column_max_min(x: pypto.Tensor([pypto.DYNAMIC, 8], pypto.DT_FP32),
                   pmax: pypto.Tensor([pypto.DYNAMIC, 8], pypto.DT_FP32),
                   pmin: pypto.Tensor([pypto.DYNAMIC, 8], pypto.DT_FP32)):
    """Per-tile amax/amin written to caller buffers (one row per tile); returns the combined rows."""
    pypto.set_vec_tile_shapes(TILE, 8)
    for b in pypto.loop(pypto.ceildiv(x.shape[0], TILE)):
        tile = x[b * TILE:(b + 1) * TILE, :]
        pmax[b:b + 1, :] = pypto.amax(tile, 0, keepdim=True)
        pmin[b:b + 1, :] = pypto.amin(tile, 0, keepdim=True)
    return pypto.amax(pmax, 0, keepdim=True), pypto.amin(pmin, 0, keepdim=True)


@pytest.mark.parametrize("n", [16, 37, 100])
def test_sum_across_tiles(n):
    x = rand((n, 8), lo=-3, hi=3, seed=n)
    out = torch.full((1, 8), float("nan"))
    check_kernel(column_sum, [x, out], x.sum(0, keepdim=True), out=1)


@pytest.mark.parametrize("n", [16, 37, 100])
def test_amax_amin_across_tiles(n):
    # the extremes sit in the tail tile for n=37 and n=100: a dropped tail fails
    x = rand((n, 8), lo=-3, hi=3, seed=n)
    x[n - 1, :4] = 10.0
    x[n - 1, 4:] = -10.0
    tiles = -(-n // TILE)
    pmax, pmin = torch.zeros(tiles, 8), torch.zeros(tiles, 8)
    got = check_kernel(column_max_min, [x, pmax, pmin], (x.amax(0, keepdim=True), x.amin(0, keepdim=True)))
    assert got[0][0, 0] == 10.0 and got[1][0, 7] == -10.0
    rows = [x[b * TILE:(b + 1) * TILE] for b in range(tiles)]
    check_kernel(column_max_min, [x, pmax, pmin], [torch.stack([r.amax(0) for r in rows]),
                                                   torch.stack([r.amin(0) for r in rows])], out=[1, 2])


def test_whole_tensor_reduce_bigger_than_tile():
    @pypto.jit
    def k(x: pypto.Tensor()):
        pypto.set_vec_tile_shapes(16, 16)
        return pypto.sum(x, 0), pypto.amax(x, 1, keepdim=True)

    x = rand((70, 50), lo=-1, hi=1, seed=9)
    check_kernel(k, [x], (x.sum(0), x.amax(1, keepdim=True)))


# ---- softmax ----------------------------------------------------------------------------------------

@pytest.mark.parametrize("shape,dim", [((5, 7), -1), ((5, 7), 0), ((3, 4, 6), 1), ((3, 4, 6), 2),
                                       ((2, 3, 4, 5), 0), ((2, 3, 4, 5), 3)], ids=str)
@pytest.mark.parametrize("dtype", FLOATS)
def test_softmax(dtype, shape, dim):
    x = rand(shape, dtype, lo=-4, hi=4, seed=2)
    got = check_op(lambda t: pypto.softmax(t, dim), [x], lambda t: torch.softmax(t, dim), loose=True)[0]
    torch.testing.assert_close(got.float().sum(dim), torch.ones(got.sum(dim).shape), rtol=0, atol=2e-2)


@pytest.mark.parametrize("dtype", FLOATS)
def test_softmax_tiled_rows(dtype):
    x = rand((37, 16), dtype, lo=-4, hi=4, seed=5)
    check_op(lambda t: t.softmax(-1), [x], lambda t: torch.softmax(t, -1), mode="tiled", loose=True)


def test_softmax_matches_manual_formula():
    """softmax == exp(x - max) / sum(exp(x - max)) built from the primitive ops."""
    x = rand((6, 9), lo=-5, hi=5, seed=8)

    def manual(t):
        e = pypto.exp(pypto.sub(t, pypto.amax(t, -1, keepdim=True)))
        return pypto.div(e, pypto.sum(e, -1, keepdim=True))

    check_op(manual, [x], lambda t: torch.softmax(t, -1), loose=True)
    check_op(pypto.softmax, [x], lambda t: torch.softmax(t, -1), loose=True)


def test_softmax_rejects():
    check_raises(pypto.DTypeError, pypto.softmax, [rand((4, 4), I32)])
    check_raises(pypto.ShapeError, lambda t: pypto.softmax(t, 3), [rand((4, 4))])
