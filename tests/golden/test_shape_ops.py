"""Golden tests of the shape and data-movement ops: transpose, reshape, concat, expand_clone,
clone, full/zeros/ones, view (valid_shape), assemble, integer indexing and topk."""

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
BOOL = torch.bool
PT = {FP32: pypto.DT_FP32, FP16: pypto.DT_FP16, BF16: pypto.DT_BF16, I32: pypto.DT_INT32,
      I16: pypto.DT_INT16, I8: pypto.DT_INT8, I64: pypto.DT_INT64, U8: pypto.DT_UINT8, BOOL: pypto.DT_BOOL}
# The movement ops accept every dtype this build supports.
ANY = [FP32, FP16, BF16, I32, I16, I8, I64, U8, BOOL]


def data(shape, dtype, seed=0):
    return rand(shape, dtype, lo=-50, hi=50, seed=seed)


def test_unsupported_dtype_is_rejected_at_the_call():
    """Dtype-agnostic ops have no dtype to refuse; a dtype this build lacks stops at the call."""
    err = check_raises(pypto.DTypeError, pypto.clone, [torch.zeros(2, 2, dtype=torch.float64)])
    assert isinstance(err, pypto.UnsupportedDTypeError) and isinstance(err, TypeError)


# ---- transpose -------------------------------------------------------------------------------------

@pytest.mark.parametrize("shape,dims", [((5, 7), (0, 1)), ((5, 7), None), ((2, 3, 4), (0, 2)), ((2, 3, 4), (1, 2)),
                                        ((2, 3, 4, 5), (1, 3)), ((2, 3, 4, 5), (-1, 0))], ids=str)
@pytest.mark.parametrize("dtype", ANY)
def test_transpose(dtype, shape, dims):
    x = data(shape, dtype)
    d0, d1 = dims or (-2, -1)
    body = (lambda t: pypto.transpose(t, d0, d1)) if dims else (lambda t: t.transpose())
    check_op(body, [x], lambda t: t.transpose(d0, d1))


def test_transpose_tiled_rows_with_tail():
    x = data((37, 3, 4), FP32)
    check_op(lambda t: pypto.transpose(t, 1, 2), [x], lambda t: t.transpose(1, 2), mode="tiled")


# ---- reshape ---------------------------------------------------------------------------------------

@pytest.mark.parametrize("shape,new", [((6, 4), [24]), ((6, 4), [-1]), ((6, 4), [2, -1, 4]), ((4, 6), [2, 3, 4]),
                                       ((2, 3, 4), [6, 4]), ((2, 3, 4), [-1, 2]), ((2, 3, 2, 2), [3, 8])], ids=str)
@pytest.mark.parametrize("dtype", [FP32, BF16, I32, I8, BOOL])
def test_reshape(dtype, shape, new):
    x = data(shape, dtype)
    check_op(lambda t: pypto.reshape(t, new), [x], lambda t: t.reshape(new))
    check_op(lambda t: t.reshape(new), [x], lambda t: t.reshape(new))


def test_reshape_tiled_rows_with_tail():
    x = data((37, 2, 4), FP32)
    check_op(lambda t: pypto.reshape(t, [16, 8]), [x], lambda t: t.reshape(37, 8), mode="tiled",
             tile_inputs=[True])


def test_reshape_rejects():
    check_raises(pypto.ShapeError, lambda t: pypto.reshape(t, [5, 5]), [data((6, 4), FP32)])
    check_raises(pypto.ShapeError, lambda t: pypto.reshape(t, [-1, -1]), [data((6, 4), FP32)])


# ---- concat ----------------------------------------------------------------------------------------

@pytest.mark.parametrize("shapes,dim", [([(3, 4), (5, 4)], 0), ([(3, 4), (3, 2)], 1), ([(3, 4), (3, 2)], -1),
                                        ([(2, 4), (1, 4), (3, 4)], 0), ([(3, 1), (3, 2), (3, 5)], 1),
                                        ([(2, 3, 4), (2, 1, 4), (2, 2, 4)], 1), ([(2, 3, 4), (2, 3, 1)], 2),
                                        ([(1, 2, 3, 4), (2, 2, 3, 4)], 0)], ids=str)
@pytest.mark.parametrize("dtype", [FP32, FP16, BF16, I32, I8, BOOL])
def test_concat(dtype, shapes, dim):
    xs = [data(s, dtype, seed=i) for i, s in enumerate(shapes)]
    check_op(lambda *ts: pypto.concat(list(ts), dim), xs, lambda *ts: torch.cat(ts, dim))


def test_concat_tiled_rows_with_tail():
    a, b, c = data((37, 3), FP32, 1), data((37, 5), FP32, 2), data((37, 1), FP32, 3)
    check_op(lambda *ts: pypto.concat(list(ts), 1), [a, b, c], lambda *ts: torch.cat(ts, 1), mode="tiled")


def test_concat_rejects():
    check_raises(pypto.DTypeError, lambda a, b: pypto.concat([a, b], 0), [data((2, 3), FP32), data((2, 3), FP16)])
    check_raises(pypto.ShapeError, lambda a, b: pypto.concat([a, b], 0), [data((2, 3), FP32), data((2, 4), FP32)])


# ---- expand_clone, clone ---------------------------------------------------------------------------

@pytest.mark.parametrize("shape,target", [((1, 6), [5, 6]), ((5, 1), [5, 6]), ((1, 1), [3, 4]),
                                          ((1, 1, 4), [2, 3, 4]), ((2, 1, 4, 1), [2, 3, 4, 2])], ids=str)
@pytest.mark.parametrize("dtype", [FP32, FP16, BF16, I32, I16, I8, BOOL])
def test_expand_clone(dtype, shape, target):
    x = data(shape, dtype)
    check_op(lambda t: pypto.expand_clone(t, target), [x], lambda t: t.expand(target).clone())
    check_op(lambda t: t.expand_clone(target), [x], lambda t: t.expand(target).clone())


def test_expand_clone_tiled_rows_with_tail():
    x = data((37, 1), FP32)
    check_op(lambda t: pypto.expand_clone(t, [16, 8]), [x], lambda t: t.expand(37, 8), mode="tiled")


def test_expand_clone_rejects():
    check_raises(pypto.ShapeError, lambda t: pypto.expand_clone(t, [4, 6]), [data((2, 6), FP32)])
    check_raises(pypto.ShapeError, lambda t: pypto.expand_clone(t, [2, 6, 1]), [data((2, 6), FP32)])


@pytest.mark.parametrize("mode", ["direct", "tiled"])
@pytest.mark.parametrize("dtype", ANY)
def test_clone(dtype, mode):
    x = data((37, 6) if mode == "tiled" else (4, 3, 5), dtype)
    check_op(pypto.clone, [x], lambda t: t.clone(), mode=mode)
    check_op(lambda t: t.clone(), [x], lambda t: t.clone(), mode=mode)


# ---- full / zeros / ones ---------------------------------------------------------------------------

FILL_DTYPES = [FP32, FP16, BF16, I32, I16, I8]


@pytest.mark.parametrize("dtype", FILL_DTYPES)
def test_full_zeros_ones(dtype):
    dt = PT[dtype]
    value = -3.25 if dtype.is_floating_point else -3
    check_op(lambda: pypto.full([3, 5], value, dt), [], lambda: torch.full((3, 5), value, dtype=dtype))
    check_op(lambda: pypto.zeros([2, 3, 4], dt), [], lambda: torch.zeros((2, 3, 4), dtype=dtype))
    check_op(lambda: pypto.ones([4], dt), [], lambda: torch.ones(4, dtype=dtype))


def test_full_defaults_and_bool():
    check_op(lambda: pypto.full([2, 3], 1.5), [], lambda: torch.full((2, 3), 1.5))  # DT_FP32 by default
    check_op(lambda: pypto.zeros([2, 3]), [], lambda: torch.zeros(2, 3))
    check_op(lambda: pypto.full([2, 3], True, pypto.DT_BOOL), [], lambda: torch.ones(2, 3, dtype=BOOL))


@pytest.mark.parametrize("dtype", [FP32, FP16, BF16])
def test_full_rounds_the_value_to_the_dtype_and_saturates_to_infinity(dtype):
    import sys
    big = sys.float_info.max  # beyond every device float: the fill is an infinity (upstream's -max padding)
    check_op(lambda: pypto.full([2, 3], -big, PT[dtype]), [], lambda: torch.full((2, 3), float("-inf"), dtype=dtype))
    check_op(lambda: pypto.full([2, 3], 1e300, PT[dtype]), [], lambda: torch.full((2, 3), float("inf"), dtype=dtype))
    check_op(lambda: pypto.full([2], 0.1, PT[dtype]), [], lambda: torch.full((2,), 0.1, dtype=torch.float64).to(dtype))


def test_full_combines_with_inputs():
    x = data((4, 6), FP32)
    check_op(lambda t: t + pypto.full([4, 6], 2.5, pypto.DT_FP32), [x], lambda t: t + 2.5)


def test_full_rejects():
    check_raises(pypto.DTypeError, lambda: pypto.full([2, 2], 1.5, pypto.DT_INT32), [])  # float into int
    check_raises(pypto.DTypeError, lambda: pypto.full([2, 2], 1, pypto.DT_FP8), [])  # unsupported dtype
    check_raises(pypto.DTypeError, lambda t: pypto.full([2, 2], t, pypto.DT_FP32), [data((2, 2), FP32)])


@pypto.jit
def fill_rows(out: pypto.Tensor([pypto.DYNAMIC, 8]), dtype=pypto.DT_INT32):
    """Row i of ``out`` = 3 * i + 1, the fill value being the symbolic loop index."""
    pypto.set_vec_tile_shapes(1, 8)
    for i in pypto.loop(out.shape[0]):
        out[i:i + 1, :] = pypto.full([1, 8], i * 3 + 1, dtype)


@pytest.mark.parametrize("dtype", [I32, I16, FP32, FP16, BF16])
@pytest.mark.parametrize("n", [1, 5, 12])
def test_full_symbolic_fill_value(dtype, n):
    out = torch.full((n, 8), -7).to(dtype)
    want = (torch.arange(n) * 3 + 1).to(dtype)[:, None].expand(n, 8)
    check_kernel(fill_rows, [out, PT[dtype]], want, out=0)


@pypto.jit
def fill_valid(out: pypto.Tensor([4, 8])):
    """full with a valid_shape smaller than its shape writes only the valid rows."""
    out[:] = pypto.full([4, 8], 2.0, pypto.DT_FP32, valid_shape=[2, 8])


def test_full_valid_shape():
    out = torch.full((4, 8), -1.0)
    want = torch.cat([torch.full((2, 8), 2.0), torch.full((2, 8), -1.0)])
    check_kernel(fill_valid, [out], want, out=0)


# ---- view with valid_shape, assemble ---------------------------------------------------------------

@pypto.jit
def lower_triangle(x: pypto.Tensor([8, 8]), out: pypto.Tensor([8, 8]), row_sums: pypto.Tensor([8, 1])):
    """Row i views x[i, :] with valid_shape [1, i + 1]: only that many columns exist."""
    pypto.set_vec_tile_shapes(1, 8)
    for i in pypto.loop(8):
        row = pypto.view(x, [1, 8], [i, 0], valid_shape=[1, i + 1])
        out[i:i + 1, :] = row  # assemble writes the valid part only
        row_sums[i:i + 1, :] = pypto.sum(row, 1, keepdim=True)


def test_view_explicit_valid_shape():
    x = rand((8, 8), lo=1, hi=2, seed=4)
    out, sums = torch.full((8, 8), -5.0), torch.zeros(8, 1)
    keep = torch.ones(8, 8).tril().bool()
    want = torch.where(keep, x, torch.tensor(-5.0))
    check_kernel(lower_triangle, [x, out, sums], [want, x.tril().sum(1, keepdim=True)], out=[1, 2])


@pytest.mark.parametrize("dtype", [FP32, BF16, I32])
def test_view_windows(dtype):
    x = data((6, 10), dtype)
    check_op(lambda t: pypto.view(t, [2, 4], [1, 3]), [x], lambda t: t[1:3, 3:7])
    check_op(lambda t: t.view([3, 10], [3, 0]) + t.view([3, 10], [0, 0]), [x], lambda t: t[3:6] + t[0:3])
    check_op(lambda t: t[2:5, -4:], [x], lambda t: t[2:5, -4:])
    check_op(lambda t: t[..., 1:3], [x], lambda t: t[..., 1:3])


@pypto.jit
def swap_halves(x: pypto.Tensor([4, 8]), out: pypto.Tensor([4, 8]), out2: pypto.Tensor([4, 8])):
    left, right = x[:, 0:4], x[:, 4:8]
    pypto.assemble(right, [0, 0], out)
    pypto.assemble(left, [0, 4], out)
    pypto.assemble([(left, [0, 4]), (right, [0, 0])], out2)  # the list form


@pypto.jit
def assemble_local(x: pypto.Tensor([4, 8])):
    """Build a local tensor from pieces and return it: rows reversed in two blocks."""
    buf = pypto.tensor([4, 8], pypto.DT_FP32, "buf")
    buf[0:2, :] = x[2:4, :]
    buf.assemble(x[0:2, :], [2, 0])  # the method form: dst.assemble(src, offsets)
    return buf


def test_assemble():
    x = data((4, 8), FP32)
    want = torch.cat([x[:, 4:], x[:, :4]], 1)
    check_kernel(swap_halves, [x, torch.zeros(4, 8), torch.zeros(4, 8)], [want, want], out=[1, 2])
    check_kernel(assemble_local, [x], torch.cat([x[2:], x[:2]]))


def test_assemble_rejects():
    check_raises(pypto.DTypeError, lambda a, b: pypto.assemble(a, [0, 0], b), [data((2, 2), FP32), data((4, 4), FP16)])
    check_raises(pypto.ShapeError, lambda a, b: pypto.assemble(a, [3, 0], b), [data((2, 2), FP32), data((4, 4), FP32)])


# ---- integer indexing ------------------------------------------------------------------------------

@pypto.jit
def rows_2d(x: pypto.Tensor([pypto.DYNAMIC, 8]), out: pypto.Tensor([pypto.DYNAMIC, 8]),
            part: pypto.Tensor([pypto.DYNAMIC, 3])):
    pypto.set_vec_tile_shapes(8)
    for i in pypto.loop(x.shape[0]):
        row = x[i]  # [8]: the row dim is squeezed away
        out[i] = pypto.mul(row, 2.0)  # a [8] row assigned into [N, 8]
        part[i, :] = x[i, 2:5]


@pypto.jit
def rows_3d(x: pypto.Tensor([pypto.DYNAMIC, 3, 4]), out: pypto.Tensor([pypto.DYNAMIC, 4, 3]),
            last: pypto.Tensor([3, 4])):
    pypto.set_vec_tile_shapes(3, 4)
    for i in pypto.loop(x.shape[0]):
        out[i] = pypto.transpose(x[i], 0, 1)
    last[:] = x[-1]


@pytest.mark.parametrize("n", [1, 5])
def test_integer_indexing_and_assignment(n):
    x = data((n, 8), FP32)
    out, part = torch.zeros(n, 8), torch.zeros(n, 3)
    check_kernel(rows_2d, [x, out, part], [x * 2, x[:, 2:5]], out=[1, 2])
    x3 = data((n, 3, 4), FP32, seed=1)
    check_kernel(rows_3d, [x3, torch.zeros(n, 4, 3), torch.zeros(3, 4)], [x3.transpose(1, 2), x3[-1]], out=[1, 2])


@pypto.jit
def gather_rows(x: pypto.Tensor([pypto.DYNAMIC, 8]), idx: pypto.Tensor([pypto.DYNAMIC], pypto.DT_INT32),
                out: pypto.Tensor([pypto.DYNAMIC, 8])):
    """out[i] = x[idx[i]]: an element read of an INT32 parameter used as a view offset."""
    for i in pypto.loop(idx.shape[0]):
        j = idx[i]
        out[i:i + 1, :] = x[j:j + 1, :]


def test_element_read_as_offset():
    x = data((6, 8), FP32)
    idx = torch.tensor([5, 0, 3, 3], dtype=torch.int32)
    check_kernel(gather_rows, [x, idx, torch.zeros(4, 8)], x[idx.long()], out=2)


# ---- topk --------------------------------------------------------------------------------------------

def distinct(shape, dtype, seed=0):
    """Distinct values per tensor (a permutation), exact in fp16/bf16: no ties to disambiguate."""
    g = torch.Generator().manual_seed(seed)
    n = torch.Size(shape).numel()
    return (torch.randperm(n, generator=g).float() - n // 2).reshape(shape).to(dtype)


@pytest.mark.parametrize("largest", [True, False])
@pytest.mark.parametrize("shape,k,dim", [((4, 10), 3, -1), ((4, 10), 10, 1), ((9, 5), 2, 0), ((2, 3, 8), 4, 2),
                                         ((2, 6, 3), 1, 1)], ids=str)
@pytest.mark.parametrize("dtype", [FP32, FP16, BF16])
def test_topk(dtype, shape, k, dim, largest):
    x = distinct(shape, dtype, seed=k)
    vals, idx = check_op(lambda t: pypto.topk(t, k, dim, largest), [x],
                         lambda t: torch.topk(t, k, dim, largest, sorted=True), out_dtype=(None, I32))
    assert torch.equal(torch.gather(x, dim, idx.long()), vals)  # the indices point at the values


def test_topk_tiled_rows_with_tail_and_method():
    x = distinct((37, 12), FP32, seed=1)
    check_op(lambda t: t.topk(4), [x], lambda t: torch.topk(t, 4), out_dtype=(None, I32), mode="tiled")


def stable_topk(t, k, dim=-1, largest=True):
    """torch's top-k with ties in index order (pypto's sorts are stable)."""
    order = torch.sort(t, dim=dim, descending=largest, stable=True).indices.narrow(dim, 0, k)
    return torch.gather(t, dim, order), order


@pytest.mark.parametrize("largest", [True, False])
@pytest.mark.parametrize("n,tile,k", [(1000, 128, 10), (1000, 128, 200), (1000, 128, 1000), (65536, 4096, 1024)],
                         ids=str)
def test_topk_along_a_dim_longer_than_its_tile_merges_the_tiles_candidates(n, tile, k, largest):
    """The sorted dim is tiled: per-tile candidates, merged in groups (two merge levels for the
    last case), indices global; ties (rounded values) come out lowest index first."""
    x = torch.round(rand((3, n), FP32, seed=n) * 40) / 4

    def body(t):
        pypto.set_vec_tile_shapes(1, tile)
        return pypto.topk(t, k, -1, largest)

    vals, idx = check_op(body, [x], lambda t: stable_topk(t, k, -1, largest), out_dtype=(None, I32))
    assert torch.equal(torch.gather(x, 1, idx.long()), vals)


@pypto.jit
def topk_of_valid_prefix(x: pypto.Tensor([2, 3000], pypto.DT_BF16), n: pypto.Tensor([1], pypto.DT_INT32),
                         vals: pypto.Tensor([2, 64], pypto.DT_BF16), idx: pypto.Tensor([2, 64], pypto.DT_INT32)):
    pypto.set_vec_tile_shapes(2, 256)
    valid = n[0]
    v, i = pypto.topk(pypto.view(x, [2, 3000], [0, 0], valid_shape=[2, valid]), 64, -1, True)
    vals[:] = v
    idx[:] = i


def valid_prefix_case(valid):
    x = distinct((2, 3000), BF16, seed=valid)
    x[:, valid:] = 1e4  # would win if read
    want_v, want_i = stable_topk(x[:, :valid].float(), min(64, valid))
    return x, torch.tensor([valid], dtype=I32), want_v.to(BF16), want_i.to(I32)


@pytest.mark.parametrize("valid", [3000, 1500, 257, 64])
def test_tiled_topk_reads_only_the_valid_part(valid):
    """Candidates past the valid extent never take part."""
    x, n, want_v, want_i = valid_prefix_case(valid)
    vals, idx = torch.zeros(2, 64, dtype=BF16), torch.zeros(2, 64, dtype=I32)
    check_kernel(topk_of_valid_prefix, [x, n, vals, idx], (want_v, want_i), out=[2, 3])


def test_tiled_topk_of_fewer_valid_entries_than_k_gives_that_many():
    x, n, want_v, want_i = valid_prefix_case(20)
    vals, idx = torch.zeros(2, 64, dtype=BF16), torch.full((2, 64), -7, dtype=I32)
    topk_of_valid_prefix(x, n, vals, idx)
    assert torch.equal(vals[:, :20], want_v) and torch.equal(idx[:, :20], want_i)
    assert (idx[:, 20:] == -7).all()  # not written, as an untiled topk clips k to the valid size


def test_topk_rejects():
    err = check_raises(pypto.DTypeError, lambda t: pypto.topk(t, 2), [data((3, 5), I32)])
    assert isinstance(err, TypeError)
    check_raises(pypto.ShapeError, lambda t: pypto.topk(t, 6), [data((3, 5), FP32)])
    check_raises(pypto.ShapeError, lambda t: pypto.topk(t, 0), [data((3, 5), FP32)])
