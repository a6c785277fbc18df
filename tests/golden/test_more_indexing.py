"""Golden tests of pypto/ops/more_indexing.py: atomic_add, index_put_, fillpad, gathermask,
index_add_ub / index_add__ub, experimental.gather_in_ub / gather_in_l1, and the re-exported
experimental.set_operation_options / get_operation_options."""

from __future__ import annotations

import pytest
import torch

import pypto

try:
    from tests.golden.helper import check_kernel, check_op, check_raises, rand
except ImportError:  # run without the repo root on sys.path: pytest puts this dir there
    from helper import check_kernel, check_op, check_raises, rand

FP32, FP16, BF16 = torch.float32, torch.float16, torch.bfloat16
I32, I16, I8, I64, U8 = torch.int32, torch.int16, torch.int8, torch.int64, torch.uint8


def data(shape, dtype, seed=0):
    return rand(shape, dtype, lo=-20 if dtype != U8 else 0, hi=20, seed=seed)


# ---- experimental.set_operation_options / get_operation_options --------------------------------------

def test_operation_options_reexported():
    import importlib

    opts = importlib.import_module("pypto.options")  # the module (pypto.options is the scope function)
    assert pypto.experimental.set_operation_options is opts.set_operation_options
    assert pypto.experimental.get_operation_options is opts.get_operation_options
    with opts.options():
        pypto.experimental.set_operation_options(combine_axis=False)
        assert pypto.experimental.get_operation_options()["combine_axis"] is False
    assert pypto.experimental.get_operation_options()["combine_axis"] is True
    with pytest.raises(pypto.OptionError):
        pypto.experimental.set_operation_options(no_such_option=1)


# ---- atomic_add ------------------------------------------------------------------------------------

@pypto.jit
def atomic_add_region(src: pypto.Tensor(), dst: pypto.Tensor()):
    pypto.atomic_add(src, [1, 2], dst)


@pytest.mark.parametrize("dtype", [FP32, FP16, BF16, I16, I32])
def test_atomic_add_dtypes(dtype):
    src, dst = data((3, 4), dtype), data((5, 7), dtype, 1)
    want = dst.float() if dtype in (FP16, BF16) else dst.clone()
    want[1:4, 2:6] += src.float() if dtype in (FP16, BF16) else src
    check_kernel(atomic_add_region, [src, dst], want.to(dtype), out=1)


@pypto.jit
def atomic_add_loop(src: pypto.Tensor(), dst: pypto.Tensor()):
    """Four row blocks of src accumulate into the same region of dst, then one more at row 2."""
    pypto.set_vec_tile_shapes(2, 8)
    for b in pypto.loop(4):
        pypto.atomic_add(src[b * 2:(b + 1) * 2, :], [0, 0], dst)
    pypto.atomic_add(src[0:2, :], [2, 0], dst)


def test_atomic_add_accumulates_across_loop_iterations():
    src, dst = data((8, 8), FP32), data((4, 8), FP32, 1)
    want = dst.clone()
    want[0:2] += src.reshape(4, 2, 8).sum(0)
    want[2:4] += src[0:2]
    check_kernel(atomic_add_loop, [src, dst], want, out=1)


@pypto.jit
def atomic_add_tails(x: pypto.Tensor([pypto.DYNAMIC, 16], pypto.DT_FP32),
                     dst: pypto.Tensor([pypto.DYNAMIC, 16], pypto.DT_FP32)):
    """Row blocks of 8 of x, the last one a tail, all added into dst's rows 4.."""
    pypto.set_vec_tile_shapes(8, 16)
    for b in pypto.loop(pypto.ceildiv(x.shape[0], 8)):
        pypto.atomic_add(pypto.view(x, [8, 16], [b * 8, 0]), [4, 0], dst)


@pytest.mark.parametrize("n", [16, 13, 5])
def test_atomic_add_adds_the_valid_part_of_a_tail_tile(n):
    # before issue 20 the region added to took dst's valid extent (8 rows), not src's (the
    # tail's 5): "valid extents differ at run time" for n = 13
    x, dst = data((n, 16), FP32), data((16, 16), FP32, 1)
    want = dst.clone()
    for b in range(0, n, 8):
        tile = x[b:b + 8]
        want[4:4 + len(tile)] += tile
    check_kernel(atomic_add_tails, [x, dst], want, out=1)


def test_atomic_add_past_the_end_of_a_dynamic_dst_is_refused_before_the_run():
    x, dst = data((8, 16), FP32), data((10, 16), FP32, 1)  # rows 4..12 of a 10-row dst
    before = dst.clone()
    with pytest.raises(pypto.PyptoError, match="memory under 'dst'"):
        atomic_add_tails(x, dst)
    assert torch.equal(dst, before)


def test_atomic_add_rejects():
    aa = lambda s, d: pypto.atomic_add(s, [0, 0], d)  # noqa: E731
    check_raises(pypto.DTypeError, aa, [data((2, 2), I8), data((4, 4), I8)])
    check_raises(pypto.DTypeError, aa, [data((2, 2), FP16), data((4, 4), FP32)])
    check_raises(pypto.ShapeError, lambda s, d: pypto.atomic_add(s, [3, 0], d), [data((2, 2), FP32),
                                                                                 data((4, 4), FP32)])
    check_raises(pypto.ShapeError, lambda s, d: pypto.atomic_add(s, [0], d), [data((2, 2), FP32),
                                                                              data((4, 4), FP32)])


# ---- index_put_ ------------------------------------------------------------------------------------

@pypto.jit
def index_put_rows(x: pypto.Tensor(), i: pypto.Tensor(), v: pypto.Tensor(), acc: bool):
    out = pypto.index_put_(x, (i,), v, acc)
    return pypto.add(out, 0)  # index_put_ returns the updated input


def test_index_put_upstream_example():
    x = torch.tensor([[1, 1, 1], [1, 1, 1], [0, 0, 0]], dtype=I32)
    i = torch.tensor([1, 2], dtype=I32)
    v = torch.tensor([[0, 1, 0], [0, 2, 0]], dtype=I32)
    check_kernel(index_put_rows, [x.clone(), i, v, True], torch.tensor([[1, 1, 1], [1, 2, 1], [0, 2, 0]], dtype=I32))
    x2 = x.clone()
    check_kernel(index_put_rows, [x2, i, v, False], torch.tensor([[1, 1, 1], [0, 1, 0], [0, 2, 0]], dtype=I32))
    assert torch.equal(x2, torch.tensor([[1, 1, 1], [0, 1, 0], [0, 2, 0]], dtype=I32))  # updated in place


@pytest.mark.parametrize("dtype", [FP32, FP16, BF16, I8, U8, I16, I32, I64])
def test_index_put_dtypes(dtype):
    x, v = data((5, 6), dtype), data((3, 6), dtype, 2)
    i = torch.tensor([4, 0, 2], dtype=I64)
    check_op(lambda a, b, c: pypto.index_put_(a, (b,), c), [x, i, v],
             lambda a, b, c: a.clone().index_put_((b,), c))


@pytest.mark.parametrize("dtype", [FP32, FP16, BF16, I8, I16, I32])
def test_index_put_accumulate_repeated(dtype):
    x, v = rand((4, 3, 5), dtype, lo=-5, hi=5), rand((6, 5), dtype, lo=-5, hi=5, seed=3)
    i0 = torch.tensor([0, 3, 0, 1, 0, 3], dtype=I32)
    i1 = torch.tensor([2, 1, 2, 0, 2, 1], dtype=I16)  # repeated (0, 2) and (3, 1) accumulate
    check_op(lambda a, b, c, d: pypto.index_put_(a, (b, c), d, accumulate=True), [x, i0, i1, v],
             lambda a, b, c, d: a.clone().index_put_((b.long(), c.long()), d, accumulate=True))


def test_index_put_full_index_3d():
    x, v = data((3, 4, 5), FP32), data((4,), FP32, 2)
    idx = [torch.tensor([0, 2, 1, 2]), torch.tensor([3, 0, 1, 1]), torch.tensor([4, 4, 0, 2])]
    check_op(lambda a, b, c, d, e: pypto.index_put_(a, (b, c, d), e), [x, *idx, v],
             lambda a, b, c, d, e: a.clone().index_put_((b, c, d), e))


def test_index_put_rejects():
    x = data((4, 5), FP32)
    put = lambda a, b, c: pypto.index_put_(a, (b,), c)  # noqa: E731
    check_raises(pypto.DTypeError, put, [data((4, 5), torch.bool), torch.tensor([0]), data((1, 5), torch.bool)])
    check_raises(pypto.DTypeError, lambda a, b, c: pypto.index_put_(a, (b,), c, True),
                 [data((4, 5), U8), torch.tensor([0]), data((1, 5), U8)])  # accumulate: no UINT8
    check_raises(pypto.DTypeError, put, [x, torch.tensor([0.0]), data((1, 5), FP32)])
    check_raises(pypto.DTypeError, put, [x, torch.tensor([0]), data((1, 5), FP16)])
    check_raises(pypto.ShapeError, put, [x, torch.tensor([[0]]), data((1, 5), FP32)])  # 1-D index
    check_raises(pypto.ShapeError, put, [x, torch.tensor([0, 1]), data((1, 5), FP32)])  # one row per index
    check_raises(pypto.ShapeError, put, [x, torch.tensor([0]), data((1, 4), FP32)])
    check_raises(pypto.ShapeError, lambda a, b, c: pypto.index_put_(a, (b, b), c),
                 [x, torch.tensor([0, 1]), data((2, 5), FP32)])  # values rank
    check_raises(pypto.KernelRuntimeError, put, [x, torch.tensor([4]), data((1, 5), FP32)])


# ---- fillpad ---------------------------------------------------------------------------------------

def _padded(a, valid, value):
    out = torch.full_like(a, value)
    out[tuple(slice(0, v) for v in valid)] = a[tuple(slice(0, v) for v in valid)]
    return out


@pytest.mark.parametrize("dtype,value", [(FP32, "-inf"), (FP16, 1.5), (BF16, float("inf")), (I8, 7), (U8, 3),
                                         (I16, -2), (I32, 5.0)])
def test_fillpad_2d(dtype, value):
    x = data((4, 6), dtype)
    body = lambda a: pypto.fillpad(pypto.view(a, [4, 6], [0, 0], valid_shape=[2, 3]), "constant", value)  # noqa
    check_op(body, [x], lambda a: _padded(a, (2, 3), float(value)))


def test_fillpad_1d_and_default_value():
    x = data((9,), FP32)
    check_op(lambda a: pypto.fillpad(pypto.view(a, [9], [0], valid_shape=[5])), [x], lambda a: _padded(a, (5,), 0))


def test_fillpad_tail_tile_of_a_view():
    x = data((5, 8), FP32)  # a [4, 8] window at row 2 has 3 valid rows: the 4th is padded
    check_op(lambda a: pypto.fillpad(pypto.view(a, [4, 8], [2, 0]), value=-1.0), [x],
             lambda a: torch.cat([a[2:5], torch.full((1, 8), -1.0)]))


def test_fillpad_rejects():
    check_raises(pypto.DTypeError, lambda a: pypto.fillpad(a), [data((4, 4), I64)])
    check_raises(pypto.DTypeError, lambda a: pypto.fillpad(a, value=0.5), [data((4, 4), I32)])
    check_raises(pypto.DTypeError, lambda a: pypto.fillpad(a, value="x"), [data((4, 4), FP32)])
    check_raises(pypto.ShapeError, lambda a: pypto.fillpad(a), [data((2, 2, 2), FP32)])
    check_raises(pypto.ShapeError, lambda a: pypto.fillpad(a, "reflect"), [data((4, 4), FP32)])


# ---- gathermask ------------------------------------------------------------------------------------

_MASKS = {1: (0, 2), 2: (1, 2), 3: (0, 4), 4: (1, 4), 5: (2, 4), 6: (3, 4), 7: (0, 1)}


@pytest.mark.parametrize("mode", range(1, 8))
@pytest.mark.parametrize("dtype", [FP32, FP16, BF16, I16, I32])
def test_gathermask_modes(mode, dtype):
    first, step = _MASKS[mode]
    x = data((3, 8), dtype)
    check_op(lambda a: pypto.gathermask(a, mode), [x], lambda a: a[..., first::step])


def test_gathermask_upstream_example_and_ranks():
    x = torch.arange(18, dtype=I32).reshape(3, 6)
    check_op(lambda a: pypto.gathermask(a, 1), [x], lambda a: torch.tensor([[0, 2, 4], [6, 8, 10], [12, 14, 16]]))
    y = data((2, 3, 2, 8), FP32)
    check_op(lambda a: pypto.gathermask(a, 5), [y], lambda a: a[..., 2::4])
    check_op(lambda a: pypto.gathermask(a, 2), [data((12,), FP16)], lambda a: a[1::2])


def test_gathermask_tiled_rows_with_tail():
    x = data((37, 16), FP32)
    check_op(lambda a: pypto.gathermask(a, 4), [x], lambda a: a[:, 1::4], mode="tiled")


def test_gathermask_rejects():
    check_raises(pypto.DTypeError, lambda a: pypto.gathermask(a, 1), [data((2, 4), I8)])
    check_raises(pypto.ShapeError, lambda a: pypto.gathermask(a, 0), [data((2, 4), FP32)])
    check_raises(pypto.ShapeError, lambda a: pypto.gathermask(a, 3), [data((2, 6), FP32)])  # 6 % 4


# ---- index_add_ub / index_add__ub ------------------------------------------------------------------

@pytest.mark.parametrize("dtype", [FP32, FP16, BF16, I16, I32])
def test_index_add_ub_dtypes(dtype):
    x = rand((4, 5), dtype, lo=-10, hi=10)
    s = rand((6, 5), dtype, lo=-10, hi=10, seed=2)
    i = torch.tensor([0, 3, 1, 0, 3, 3], dtype=I32)
    alpha = 2 if not dtype.is_floating_point else 0.5
    check_op(lambda a, b, c: pypto.index_add_ub(a, 0, b, c, alpha=alpha), [x, i, s],
             lambda a, b, c: a.index_add(0, b.long(), c, alpha=alpha))


def test_index_add_ub_upstream_example():
    x, s = torch.zeros(2, 3, dtype=I32), torch.ones(3, 3, dtype=I32)
    i = torch.tensor([0, 1, 0], dtype=I32)
    check_op(lambda a, b, c: pypto.index_add__ub(a, 0, b, c), [x, i, s],
             lambda a, b, c: torch.tensor([[2, 2, 2], [1, 1, 1]]))


@pypto.jit
def index_add_ub_in_place(x: pypto.Tensor(), i: pypto.Tensor(), s: pypto.Tensor()):
    out = pypto.index_add__ub(x, 1, i, s, alpha=-1.0)
    return pypto.add(out, 0.0)


def test_index_add__ub_updates_input():
    x, s, i = data((3, 6), FP32), data((3, 2), FP32, 4), torch.tensor([5, 1], dtype=I64)
    want = x.index_add(1, i, s, alpha=-1.0)
    got = check_kernel(index_add_ub_in_place, [x, i, s], want)
    assert torch.equal(x, got)


def test_index_add_ub_rejects():
    for f in (pypto.index_add_ub, pypto.index_add__ub):
        add = lambda a, b, c, f=f: f(a, 0, b, c)  # noqa: E731
        check_raises(pypto.DTypeError, add, [data((4, 5), I8), torch.tensor([0, 1]), data((2, 5), I8)])
        check_raises(pypto.ShapeError, add, [data((4, 5), FP32), torch.tensor([0, 1]), data((3, 5), FP32)])


# ---- experimental.gather_in_ub / gather_in_l1 ------------------------------------------------------

def _paged(src, idx, table, bs):
    logical = idx.reshape(-1).long()
    return src[table.reshape(-1).long()[logical // bs] * bs + logical % bs]


def test_gather_in_ub_upstream_example():
    param = torch.tensor([[0, 1, 2, 3], [10, 11, 12, 13], [20, 21, 22, 23], [30, 31, 32, 33], [40, 41, 42, 43],
                          [50, 51, 52, 53]], dtype=FP32)
    idx = torch.tensor([[0, 4, 3]], dtype=I32)
    table = torch.tensor([[0, 2, 1]], dtype=I32)
    check_op(lambda p, i, t: pypto.experimental.gather_in_ub(p, i, t, 2, -2), [param, idx, table],
             lambda p, i, t: p[[0, 2, 5]])


# a row move: any element type (upstream's models gather int8 quantized KV caches with it)
@pytest.mark.parametrize("dtype", [FP32, FP16, BF16, I8, I16, I32, I64, U8], ids=str)
def test_gather_in_ub_paged(dtype):
    param, table = data((16, 8), dtype), torch.tensor([[3, 1, 0, 2]], dtype=I32)
    idx = torch.tensor([[15, 0, 7, 4, 9]], dtype=I32)
    check_op(lambda p, i, t: pypto.experimental.gather_in_ub(p, i, t, 4), [param, idx, table],
             lambda p, i, t: _paged(p, i, t, 4))


@pytest.mark.parametrize("dtype", [FP32, FP16, BF16, I8])
@pytest.mark.parametrize("trans", [False, True])
def test_gather_in_l1(dtype, trans):
    src, table = data((12, 10), dtype), torch.tensor([[2, 0, 1]], dtype=I32)
    idx = torch.tensor([[11, 3, 0, 6]], dtype=I64)

    def want(s, i, t):  # [n, size] whatever the L1 layout flags say (as upstream)
        return _paged(s, i, t, 4)[:, :6]

    check_op(lambda s, i, t: pypto.experimental.gather_in_l1(s, i, t, 4, 6, False, trans), [src, idx, table], want)


def test_gather_in_rejects():
    ub = lambda p, i, t: pypto.experimental.gather_in_ub(p, i, t, 2)  # noqa: E731
    l1 = lambda p, i, t: pypto.experimental.gather_in_l1(p, i, t, 2, 4, False, False)  # noqa: E731
    table = torch.tensor([[0, 1]], dtype=I32)
    check_raises(pypto.DTypeError, ub, [data((4, 4), FP32), torch.tensor([[0]], dtype=I64), table])
    check_raises(pypto.DTypeError, l1, [data((4, 4), I32), torch.tensor([[0]], dtype=I32), table])
    check_raises(pypto.DTypeError, l1, [data((4, 4), FP32), torch.tensor([[0]]), table.to(I64)])
    check_raises(pypto.ShapeError, ub, [data((4, 4), FP32), torch.tensor([0], dtype=I32), table])
    check_raises(pypto.ShapeError, ub, [data((4, 4), FP32), torch.tensor([[0], [1]], dtype=I32), table])
    check_raises(pypto.ShapeError, lambda p, i, t: pypto.experimental.gather_in_ub(p, i, t, 2, -1),
                 [data((4, 4), FP32), torch.tensor([[0]], dtype=I32), table])
    check_raises(pypto.ShapeError, lambda p, i, t: pypto.experimental.gather_in_l1(p, i, t, 2, 5, False, False),
                 [data((4, 4), FP32), torch.tensor([[0]], dtype=I32), table])
    check_raises(pypto.KernelRuntimeError, ub, [data((4, 4), FP32), torch.tensor([[4]], dtype=I32), table])
    check_raises(pypto.KernelRuntimeError, ub, [data((4, 4), FP32), torch.tensor([[1]], dtype=I32),
                                                torch.tensor([[2, 0]], dtype=I32)])  # physical row 5


@pypto.jit
def gather_through_a_view(cache: pypto.Tensor([64, 8], pypto.DT_BF16), idx: pypto.Tensor([1, 6], pypto.DT_INT32),
                          table: pypto.Tensor([1, 16], pypto.DT_INT32), out: pypto.Tensor([6, 8], pypto.DT_BF16)):
    pypto.set_vec_tile_shapes(8, 8)
    first_rows = pypto.view(cache, [8, 8], [4, 0])  # as upstream's kernels pass it: the cache's base
    out[:] = pypto.experimental.gather_in_ub(first_rows, idx, table, 4)


def test_gather_in_ub_reads_the_cache_past_the_view_of_its_base():
    cache = data((64, 8), BF16)
    table = torch.tensor([[14, 0, 3, 9, 1, 2, 4, 5, 6, 7, 8, 10, 11, 12, 13, 0]], dtype=I32)
    idx = torch.tensor([[0, 5, 2, 13, 7, 11]], dtype=I32)
    want = _paged(cache[4:], idx, table, 4)  # rows from the view's first row: 14 * 4 + 0 + 4 = 60 < 64
    check_kernel(gather_through_a_view, [cache, idx, table, torch.zeros(6, 8, dtype=BF16)], want, out=3)
