"""Golden tests of the indexing ops: gather (and ``t[dim:index]``), index_select, index_add(_),
scatter(_) (and ``t[dim:index] = src``), scatter_update and one_hot, across upstream's A2/A3 dtypes."""

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
IDX = [I32, I64]


def data(shape, dtype, seed=0):
    return rand(shape, dtype, lo=-50 if dtype != U8 else 0, hi=50, seed=seed)


def index(shape, high, dtype=I64, seed=1):
    g = torch.Generator().manual_seed(seed)
    return torch.randint(0, high, shape, generator=g, dtype=torch.int64).to(dtype)


def perm_index(shape, high, dim, dtype=I64, seed=1):
    """Distinct indices along ``dim`` (no duplicate targets for scatter without reduce)."""
    g = torch.Generator().manual_seed(seed)
    n = shape[dim]
    rows = torch.stack([torch.randperm(high, generator=g)[:n] for _ in range(int(torch.tensor(shape).prod()) // n)])
    moved = list(shape[:dim]) + list(shape[dim + 1:]) + [n]
    return rows.reshape(moved).movedim(-1, dim).contiguous().to(dtype)


# ---- gather ----------------------------------------------------------------------------------------

@pytest.mark.parametrize("dtype", [FP32, FP16, BF16, I16, I32])
@pytest.mark.parametrize("idt", IDX)
def test_gather_dtypes(dtype, idt):
    x, i = data((5, 7), dtype), index((3, 6), 5, idt)
    check_op(lambda a, b: pypto.gather(a, 0, b), [x, i], lambda a, b: torch.gather(a, 0, b.long()))


@pytest.mark.parametrize("shape,ishape,dim", [((4, 6), (4, 9), 1), ((4, 6), (2, 3), -1), ((3, 4, 5), (3, 2, 5), 1),
                                              ((3, 4, 5), (2, 4, 3), 0), ((2, 3, 4, 5), (2, 3, 4, 7), 3)], ids=str)
def test_gather_shapes(shape, ishape, dim):
    x, i = data(shape, FP32), index(ishape, shape[dim])
    want = lambda a, b: torch.gather(a, dim, b)  # noqa: E731
    check_op(lambda a, b: pypto.gather(a, dim, b), [x, i], want)
    check_op(lambda a, b: a.gather(dim, b), [x, i], want)


def test_gather_by_tensor_indexing():
    x, i = data((4, 6), FP16), index((4, 3), 6, I32)
    check_op(lambda a, b: a[1:b], [x, i], lambda a, b: torch.gather(a, 1, b.long()))


def test_gather_tiled_rows_with_tail():
    x, i = data((37, 8), FP32), index((37, 5), 8, I32)
    check_op(lambda a, b: pypto.gather(a, 1, b), [x, i], lambda a, b: torch.gather(a, 1, b.long()), mode="tiled")


def test_gather_rejects():
    x = data((4, 6), FP32)
    check_raises(pypto.DTypeError, lambda a, b: pypto.gather(a, 0, b), [x, index((2, 6), 4, I16)])  # index dtype
    check_raises(pypto.DTypeError, lambda a, b: pypto.gather(a, 0, b), [x, index((2, 6), 4).float()])
    check_raises(pypto.DTypeError, lambda a, b: pypto.gather(a, 0, b), [data((4, 6), I8), index((2, 6), 4)])
    check_raises(pypto.ShapeError, lambda a, b: pypto.gather(a, 0, b), [x, index((6,), 4)])  # rank
    check_raises(pypto.ShapeError, lambda a, b: pypto.gather(a, 0, b), [x, index((2, 7), 4)])  # too wide
    check_raises(pypto.ShapeError, lambda a, b: pypto.gather(a, 2, b), [x, index((2, 6), 4)])  # dim
    check_raises(pypto.KernelSyntaxError, lambda a, b: a[:b], [x, index((2, 6), 4)])
    err = check_raises(pypto.KernelRuntimeError, lambda a, b: pypto.gather(a, 0, b),
                       [x, torch.tensor([[0, 1, 4, 0, 0, 0]])])
    assert "out of range" in str(err)


# ---- index_select ----------------------------------------------------------------------------------

@pytest.mark.parametrize("dtype", [FP32, FP16, BF16, I8, I16, I32, U8])
@pytest.mark.parametrize("idt", IDX)
def test_index_select_dtypes(dtype, idt):
    x, i = data((5, 6), dtype), index((4,), 5, idt)
    check_op(lambda a, b: pypto.index_select(a, 0, b), [x, i], lambda a, b: torch.index_select(a, 0, b.long()))


@pytest.mark.parametrize("shape,ishape,dim", [((3, 4), (2,), 1), ((3, 4, 5), (6,), -1), ((3, 4, 5), (2, 3), 1),
                                              ((2, 3, 4, 5), (2, 2), 0), ((4, 8), (3, 5), -1)], ids=str)
def test_index_select_shapes(shape, ishape, dim):
    x, i = data(shape, FP32), index(ishape, shape[dim])
    d = dim % len(shape)

    def want(a, b):
        return torch.index_select(a, d, b.reshape(-1)).reshape(*a.shape[:d], *b.shape, *a.shape[d + 1:])

    check_op(lambda a, b: pypto.index_select(a, dim, b), [x, i], want)


def test_index_select_rejects():
    x = data((4, 6), FP32)
    check_raises(pypto.ShapeError, lambda a, b: pypto.index_select(a, 0, b), [x, index((2, 2, 2), 4)])
    check_raises(pypto.DTypeError, lambda a, b: pypto.index_select(a, 0, b), [data((4, 6), I64), index((2,), 4)])
    check_raises(pypto.DTypeError, lambda a, b: pypto.index_select(a, 0, b), [x, index((2,), 4, I8)])
    check_raises(pypto.KernelRuntimeError, lambda a, b: pypto.index_select(a, 1, b), [x, torch.tensor([6])])


# ---- index_add / index_add_ ------------------------------------------------------------------------

@pytest.mark.parametrize("dtype", [FP32, FP16, BF16, I8, I16, I32])
def test_index_add_dtypes(dtype):
    x = rand((4, 5), dtype, lo=-10, hi=10)
    s = rand((6, 5), dtype, lo=-10, hi=10, seed=2)
    i = torch.tensor([0, 3, 1, 0, 3, 3])  # repeated indices accumulate
    alpha = 2 if not dtype.is_floating_point else 0.5
    check_op(lambda a, b, c: pypto.index_add(a, 0, b, c, alpha=alpha), [x, i, s],
             lambda a, b, c: a.index_add(0, b, c, alpha=alpha))


@pytest.mark.parametrize("shape,n,dim", [((4, 6), 3, 1), ((3, 4, 5), 7, 1), ((3, 4, 5), 2, -1),
                                         ((2, 3, 4, 5), 4, 0)], ids=str)
def test_index_add_shapes(shape, n, dim):
    d = dim % len(shape)
    sshape = list(shape)
    sshape[d] = n
    x, s, i = data(shape, FP32), data(tuple(sshape), FP32, 3), index((n,), shape[d], I32)
    want = lambda a, b, c: a.index_add(d, b.long(), c)  # noqa: E731
    check_op(lambda a, b, c: pypto.index_add(a, dim, b, c), [x, i, s], want)
    check_op(lambda a, b, c: a.index_add(dim, b, c), [x, i, s], want)


@pypto.jit
def index_add_in_place(x: pypto.Tensor(), i: pypto.Tensor(), s: pypto.Tensor()):
    out = pypto.index_add_(x, 1, i, s, alpha=-1.0)
    return pypto.add(out, 0.0)  # index_add_ returns the updated input


def test_index_add_in_place_updates_input():
    x, s, i = data((3, 6), FP32), data((3, 2), FP32, 4), torch.tensor([5, 1], dtype=I32)
    want = x.index_add(1, i.long(), s, alpha=-1.0)
    got = check_kernel(index_add_in_place, [x, i, s], want)
    assert torch.equal(x, got)  # the kernel parameter was updated in place


def test_index_add_rejects():
    x, s = data((4, 5), FP32), data((3, 5), FP32, 1)
    add = lambda a, b, c: pypto.index_add(a, 0, b, c)  # noqa: E731
    check_raises(pypto.ShapeError, add, [x, index((2,), 4), s])  # one index per source row
    check_raises(pypto.ShapeError, add, [x, index((3, 1), 4), s])  # index must be 1-D
    check_raises(pypto.ShapeError, add, [x, index((3,), 4), data((3, 4), FP32)])  # other dims differ
    check_raises(pypto.DTypeError, add, [x, index((3,), 4), data((3, 5), FP16)])
    check_raises(pypto.DTypeError, add, [data((4, 5), U8), index((3,), 4), data((3, 5), U8)])
    check_raises(pypto.DTypeError, lambda a, b, c: pypto.index_add(a, 0, b, c, alpha=0.5),
                 [data((4, 5), I32), index((3,), 4), data((3, 5), I32)])
    check_raises(pypto.KernelRuntimeError, add, [x, torch.tensor([0, 4, 1]), s])


# ---- scatter / scatter_ ----------------------------------------------------------------------------

@pytest.mark.parametrize("dtype", [FP32, FP16, BF16, I8, U8, I16, I32])
@pytest.mark.parametrize("idt", IDX)
def test_scatter_dtypes(dtype, idt):
    x, s = data((5, 6), dtype), data((3, 4), dtype, 2)
    i = perm_index((3, 4), 5, 0, idt)
    check_op(lambda a, b, c: pypto.scatter(a, 0, b, c), [x, i, s], lambda a, b, c: a.scatter(0, b.long(), c))
    value = 2.5 if dtype.is_floating_point else 7
    check_op(lambda a, b: pypto.scatter(a, 0, b, value), [x, i], lambda a, b: a.scatter(0, b.long(), value))


@pytest.mark.parametrize("reduce,torch_reduce", [("add", "sum"), ("multiply", "prod")])
@pytest.mark.parametrize("dtype", [FP32, BF16, I32])
def test_scatter_reduce(dtype, reduce, torch_reduce):
    x, s = rand((4, 6), dtype, lo=-3, hi=3), rand((4, 5), dtype, lo=-3, hi=3, seed=5)
    i = index((4, 5), 6, seed=3)  # repeated targets combine
    check_op(lambda a, b, c: pypto.scatter(a, 1, b, c, reduce=reduce), [x, i, s],
             lambda a, b, c: a.scatter_reduce(1, b, c, torch_reduce))


@pytest.mark.parametrize("shape,ishape,dim", [((4, 6), (4, 3), 1), ((3, 4, 5), (2, 4, 3), 1),
                                              ((3, 4, 5), (3, 2, 5), 0), ((2, 3, 4, 5), (2, 3, 2, 5), -1)], ids=str)
def test_scatter_shapes(shape, ishape, dim):
    d = dim % len(shape)
    x, s, i = data(shape, FP32), data(ishape, FP32, 2), perm_index(ishape, shape[d], d)
    want = lambda a, b, c: a.scatter(d, b, c)  # noqa: E731
    check_op(lambda a, b, c: pypto.scatter(a, dim, b, c), [x, i, s], want)
    check_op(lambda a, b, c: a.scatter(dim, b, c), [x, i, s], want)


@pypto.jit
def scatter_in_place(x: pypto.Tensor(), i: pypto.Tensor(), s: pypto.Tensor()):
    pypto.scatter_(x, 1, i, s)
    x[0:i] = s  # t[dim:index] = src is scatter_ along dim 0


def test_scatter_in_place_and_indexing_assignment():
    x, s = data((4, 6), FP32), data((4, 6), FP32, 2)
    r, c = torch.meshgrid(torch.arange(3), torch.arange(4), indexing="ij")
    i = ((r + c) % 4).to(I32)  # distinct along both dims: no unspecified duplicate writes
    want = x.scatter(1, i.long(), s).scatter(0, i.long(), s)
    check_kernel(scatter_in_place, [x, i, s], want, out=0)


def test_scatter_rejects():
    x = data((4, 6), FP32)
    sc = lambda a, b, c: pypto.scatter(a, 0, b, c)  # noqa: E731
    check_raises(pypto.DTypeError, sc, [x, index((2, 3), 4, I16), data((2, 3), FP32)])
    check_raises(pypto.DTypeError, sc, [x, index((2, 3), 4), data((2, 3), FP16)])
    check_raises(pypto.DTypeError, sc, [data((4, 6), I64), index((2, 3), 4), data((2, 3), I64)])
    check_raises(pypto.DTypeError, lambda a, b: pypto.scatter(a, 0, b, 1.5), [data((4, 6), I32), index((2, 3), 4)])
    check_raises(pypto.ShapeError, sc, [x, index((2, 7), 4), data((2, 7), FP32)])
    check_raises(pypto.ShapeError, sc, [x, index((2, 3), 4), data((1, 3), FP32)])
    check_raises(pypto.ShapeError, lambda a, b: pypto.scatter(a, 0, b, 1.0, reduce="max"), [x, index((2, 3), 4)])
    check_raises(pypto.KernelRuntimeError, sc, [x, torch.tensor([[0, 9]]), data((1, 2), FP32)])


# ---- scatter_update --------------------------------------------------------------------------------

@pytest.mark.parametrize("dtype", [FP32, FP16, BF16, I32, I16, I8])
@pytest.mark.parametrize("idt", [I64, I32, I16])
def test_scatter_update_2d(dtype, idt):
    cache, src = data((16, 8), dtype), data((6, 8), dtype, 2)
    idx = torch.randperm(16, generator=torch.Generator().manual_seed(3))[:6].reshape(3, 2).to(idt)
    want = cache.clone()
    want[idx.reshape(-1).long()] = src
    check_op(lambda c, i, s: pypto.scatter_update(c, -2, i, s), [cache, idx, src], lambda c, i, s: want.to(c.dtype))


def test_scatter_update_upstream_example():
    x = torch.zeros(8, 3, dtype=I32)
    y = torch.tensor([[1, 2], [4, 5]])
    z = torch.arange(1, 13, dtype=I32).reshape(4, 3)
    want = torch.zeros(8, 3, dtype=I32)
    want[[1, 2, 4, 5]] = z
    check_op(lambda c, i, s: c.scatter_update(-2, i, s), [x, y, z], lambda c, i, s: want)


@pypto.jit
def paged_kv_update(cache: pypto.Tensor(), slots: pypto.Tensor(), kv: pypto.Tensor()):
    """A paged KV cache [blocks, block_size, 1, d] takes one new token per sequence and step."""
    pypto.set_vec_tile_shapes(1, 1, 1, 16)
    for b in pypto.loop(slots.shape[0]):
        pypto.scatter_update(cache, -2, slots[b:b + 1, :], kv[b:b + 1, :, :, :])


def test_scatter_update_paged_kv_cache_in_place():
    cache = data((3, 4, 1, 16), BF16)
    slots = torch.tensor([[1, 8], [4, 10]])  # the upstream example: block = slot // 4, row = slot % 4
    kv = data((2, 2, 1, 16), BF16, 5)
    want = cache.clone()
    for i in range(2):
        for j in range(2):
            s = int(slots[i, j])
            want[s // 4, s % 4, 0] = kv[i, j, 0]
    check_kernel(paged_kv_update, [cache, slots, kv], want, out=0)


def test_scatter_update_rejects():
    c, s = data((16, 8), FP32), data((4, 8), FP32)
    up = lambda a, b, d: pypto.scatter_update(a, -2, b, d)  # noqa: E731
    check_raises(pypto.ShapeError, lambda a, b, d: pypto.scatter_update(a, -1, b, d), [c, index((2, 2), 16), s])
    check_raises(pypto.ShapeError, up, [c, index((4,), 16), s])  # index [b, s]
    check_raises(pypto.ShapeError, up, [c, index((2, 3), 16), s])  # b*s rows
    check_raises(pypto.ShapeError, up, [c, index((2, 2), 16), data((4, 7), FP32)])
    check_raises(pypto.ShapeError, up, [data((16,), FP32), index((2, 2), 16), data((4,), FP32)])
    check_raises(pypto.DTypeError, up, [c, index((2, 2), 16), data((4, 8), FP16)])  # src dtype != input's
    check_raises(pypto.DTypeError, up, [c, index((2, 2), 16, I8), s])
    check_raises(pypto.KernelRuntimeError, up, [c, torch.tensor([[0, 1], [2, 16]]), s])


# ---- one_hot ---------------------------------------------------------------------------------------

@pytest.mark.parametrize("dtype", [I8, I16, I32, I64])
@pytest.mark.parametrize("shape", [(6,), (3, 5), (2, 3, 4)], ids=str)
def test_one_hot(dtype, shape):
    x = index(shape, 7, dtype)
    check_op(lambda a: pypto.one_hot(a, 7), [x], lambda a: torch.nn.functional.one_hot(a.long(), 7), out_dtype=I64)


@pypto.jit
def one_hot_rows(x: pypto.Tensor([pypto.DYNAMIC, 3], pypto.DT_INT32),
                 out: pypto.Tensor([pypto.DYNAMIC, 3, 5], pypto.DT_INT64), sizes=(16, 3, 5)):
    for b in pypto.loop(pypto.ceildiv(x.shape[0], 16)):
        pypto.set_vec_tile_shapes(*sizes)  # as upstream: one size per dim of the [16, 3, 5] result
        out[b * 16:(b + 1) * 16] = pypto.one_hot(x[b * 16:(b + 1) * 16], 5)


def test_one_hot_tiled_rows_with_tail():
    x = index((37, 3), 5, I32)
    out = torch.full((37, 3, 5), -1, dtype=I64)
    check_kernel(one_hot_rows, [x, out], torch.nn.functional.one_hot(x.long(), 5), out=1)
    with pytest.raises(pypto.ShapeError, match="rank 3"):  # a tile of the index's rank is too short
        one_hot_rows(x, out, (16, 3))


def test_one_hot_rejects():
    check_raises(pypto.DTypeError, lambda a: pypto.one_hot(a, 4), [data((3,), FP32)])
    check_raises(pypto.ShapeError, lambda a: pypto.one_hot(a, 0), [index((3,), 2)])
    err = check_raises(pypto.KernelRuntimeError, lambda a: pypto.one_hot(a, 4), [torch.tensor([0, 4, 1])])
    assert "num_classes" not in str(err) or "out of range" in str(err)
