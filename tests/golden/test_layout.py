"""Golden tests of the layout ops: unsqueeze, permute, pad, tril/triu (and tril_/triu_),
interleave and deinterleave, across upstream's A2/A3 dtypes."""

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
ANY = [FP32, FP16, BF16, I32, I16, I8, I64, U8, BOOL]
F = torch.nn.functional


def data(shape, dtype, seed=0):
    return rand(shape, dtype, lo=-50 if dtype != U8 else 0, hi=50, seed=seed)


# ---- unsqueeze -------------------------------------------------------------------------------------

@pytest.mark.parametrize("dim", [0, 1, 2, -1, -3])
@pytest.mark.parametrize("dtype", [FP32, BF16, I8, BOOL])
def test_unsqueeze(dtype, dim):
    x = data((3, 4), dtype)
    check_op(lambda t: pypto.unsqueeze(t, dim), [x], lambda t: t.unsqueeze(dim))
    check_op(lambda t: t.unsqueeze(dim), [x], lambda t: t.unsqueeze(dim))


def test_unsqueeze_feeds_broadcasting():
    x, y = data((5, 6), FP32), data((5,), FP32, 1)
    check_op(lambda a, b: a * pypto.unsqueeze(b, -1), [x, y], lambda a, b: a * b[:, None])


def test_unsqueeze_rejects():
    check_raises(pypto.ShapeError, lambda t: pypto.unsqueeze(t, 3), [data((3, 4), FP32)])
    check_raises(pypto.ShapeError, lambda t: pypto.unsqueeze(t, -4), [data((3, 4), FP32)])


# ---- permute ---------------------------------------------------------------------------------------

@pytest.mark.parametrize("dtype", ANY)
def test_permute_dtypes(dtype):
    x = data((2, 3, 4), dtype)
    check_op(lambda t: pypto.permute(t, [2, 0, 1]), [x], lambda t: t.permute(2, 0, 1))


@pytest.mark.parametrize("shape,dims", [((5, 7), [1, 0]), ((2, 3, 4), [1, 2, 0]), ((2, 3, 4), [0, 2, 1]),
                                        ((1, 2, 3, 4), [3, 1, 0, 2]), ((2, 3, 4, 5), [-1, -2, 0, 1]),
                                        ((40, 300), [1, 0])], ids=str)
def test_permute_shapes(shape, dims):
    x = data(shape, FP32)
    check_op(lambda t: pypto.permute(t, dims), [x], lambda t: t.permute(*dims))
    check_op(lambda t: t.permute(dims), [x], lambda t: t.permute(*dims))


def test_permute_identity_is_the_input():
    x = data((3, 4), FP16)
    check_op(lambda t: pypto.permute(t, [0, 1]) + 0, [x], lambda t: t)


def test_permute_tiled_rows_with_tail():
    x = data((37, 3, 4), FP32)
    check_op(lambda t: pypto.permute(t, [0, 2, 1]), [x], lambda t: t.permute(0, 2, 1), mode="tiled")


def test_permute_rejects():
    x = data((2, 3, 4), FP32)
    check_raises(pypto.ShapeError, lambda t: pypto.permute(t, [0, 1]), [x])
    check_raises(pypto.ShapeError, lambda t: pypto.permute(t, [0, 1, 1]), [x])
    check_raises(pypto.ShapeError, lambda t: pypto.permute(t, [0, 1, 3]), [x])


# ---- pad -------------------------------------------------------------------------------------------

@pytest.mark.parametrize("dtype", [FP32, FP16, BF16, I8, I16, I32, U8])
def test_pad_dtypes(dtype):
    x = data((3, 5), dtype)
    value = -1.5 if dtype.is_floating_point else 7
    check_op(lambda t: pypto.pad(t, (0, 2, 0, 1), value=value), [x], lambda t: F.pad(t, (0, 2, 0, 1), value=value))


@pytest.mark.parametrize("shape,pads", [((7,), (0, 3)), ((3, 5), (0, 4)), ((1, 1, 2, 2), (0, 1, 0, 1)),
                                        ((2, 3, 4), (1, 2, 3, 0)), ((2, 3, 4), (0, 0, 0, 0, 1, 1))], ids=str)
def test_pad_shapes(shape, pads):
    x = data(shape, FP32)
    check_op(lambda t: pypto.pad(t, pads), [x], lambda t: F.pad(t, pads))
    check_op(lambda t: t.pad(pads, "constant", float("-inf")), [x], lambda t: F.pad(t, pads, value=float("-inf")))


def test_pad_tiled_rows_with_tail():
    x = data((37, 5), FP32)
    check_op(lambda t: pypto.pad(t, (0, 3), value=2.0), [x], lambda t: F.pad(t, (0, 3), value=2.0), mode="tiled")


def test_pad_rejects():
    x = data((3, 5), FP32)
    check_raises(pypto.ShapeError, lambda t: pypto.pad(t, (0, 1), mode="reflect"), [x])
    check_raises(pypto.ShapeError, lambda t: pypto.pad(t, (0, -1)), [x])
    check_raises(pypto.ShapeError, lambda t: pypto.pad(t, (0, 1, 2)), [x])
    check_raises(pypto.ShapeError, lambda t: pypto.pad(t, (0, 1) * 3), [x])
    check_raises(pypto.DTypeError, lambda t: pypto.pad(t, (0, 1), value=float("-inf")), [data((3, 5), I32)])
    check_raises(pypto.DTypeError, lambda t: pypto.pad(t, (0, 1)), [data((3, 5), I64)])


# ---- tril / triu -----------------------------------------------------------------------------------

@pytest.mark.parametrize("op", ["tril", "triu"])
@pytest.mark.parametrize("dtype", [FP32, FP16, BF16, I8, I16, I32])
def test_tri_dtypes(op, dtype):
    x = data((5, 6), dtype)
    check_op(lambda t: getattr(pypto, op)(t), [x], lambda t: getattr(torch, op)(t))


@pytest.mark.parametrize("op", ["tril", "triu"])
@pytest.mark.parametrize("shape,diagonal", [((4, 4), 0), ((4, 7), 2), ((6, 3), -2), ((2, 3, 5), 1),
                                            ((2, 2, 3, 4), -1), ((3, 3), 5)], ids=str)
def test_tri_shapes(op, shape, diagonal):
    x = data(shape, FP32)
    check_op(lambda t: getattr(pypto, op)(t, diagonal), [x], lambda t: getattr(torch, op)(t, diagonal))
    check_op(lambda t: getattr(t, op)(diagonal), [x], lambda t: getattr(torch, op)(t, diagonal))


@pypto.jit
def causal_rows(x: pypto.Tensor([8, 8]), out: pypto.Tensor([8, 8])):
    """tril with a symbolic diagonal: row block i keeps columns <= its global row."""
    pypto.set_vec_tile_shapes(2, 8)
    for i in pypto.loop(4):
        out[i * 2:i * 2 + 2, :] = pypto.tril(x[i * 2:i * 2 + 2, :], i * 2)


def test_tril_symbolic_diagonal():
    x, out = data((8, 8), FP32), torch.zeros(8, 8)
    check_kernel(causal_rows, [x, out], torch.tril(x), out=1)


@pypto.jit
def tri_in_place(x: pypto.Tensor(), y: pypto.Tensor()):
    pypto.tril_(x, -1)
    y.triu_(1)


def test_tri_in_place():
    x, y = data((4, 5), FP32), data((4, 5), I32, 1)
    check_kernel(tri_in_place, [x, y], [torch.tril(x, -1), torch.triu(y, 1)], out=[0, 1])


def test_tri_rejects():
    check_raises(pypto.ShapeError, lambda t: pypto.tril(t), [data((5,), FP32)])
    check_raises(pypto.DTypeError, lambda t: pypto.triu(t), [data((3, 3), U8)])
    check_raises(pypto.ShapeError, lambda t: pypto.triu(t, 1.5), [data((3, 3), FP32)])


# ---- interleave / deinterleave ---------------------------------------------------------------------

def torch_interleave(a, b):
    n = a.shape[-1]
    stream = torch.stack([a, b], -1).flatten(-2)
    return stream[..., :n], stream[..., n:]


def torch_deinterleave(a, b=None):
    stream = a if b is None else torch.cat([a, b], -1)
    return stream[..., 0::2], stream[..., 1::2]


INTERLEAVE = [I8, U8, I16, I32, FP16, FP32, BF16]


@pytest.mark.parametrize("dtype", INTERLEAVE)
def test_interleave_round_trip(dtype):
    a, b = data((3, 8), dtype), data((3, 8), dtype, 1)
    check_op(pypto.interleave, [a, b], torch_interleave)
    check_op(lambda x, y: pypto.deinterleave(*pypto.interleave(x, y)), [a, b], lambda x, y: (x, y))
    check_op(pypto.deinterleave, [a, b], torch_deinterleave)
    check_op(lambda x: pypto.deinterleave(x), [a], torch_deinterleave)


def test_interleave_upstream_example():
    a = torch.arange(8, dtype=FP32).reshape(2, 4)
    b = a + 10
    out0 = torch.tensor([[0.0, 10.0, 1.0, 11.0], [4.0, 14.0, 5.0, 15.0]])
    out1 = torch.tensor([[2.0, 12.0, 3.0, 13.0], [6.0, 16.0, 7.0, 17.0]])
    check_op(pypto.interleave, [a, b], lambda x, y: (out0, out1))


@pytest.mark.parametrize("shape", [(6,), (2, 3, 4), (2, 2, 3, 10)], ids=str)
def test_interleave_shapes(shape):
    a, b = data(shape, FP32), data(shape, FP32, 1)
    check_op(pypto.interleave, [a, b], torch_interleave)
    check_op(lambda x: pypto.deinterleave(x), [a], torch_deinterleave)


def test_interleave_tiled_rows_with_tail():
    a, b = data((37, 6), FP16), data((37, 6), FP16, 1)
    check_op(pypto.interleave, [a, b], torch_interleave, mode="tiled")
    check_op(lambda x: pypto.deinterleave(x), [a], torch_deinterleave, mode="tiled", tile_inputs=[True])


def test_interleave_rejects():
    check_raises(pypto.ShapeError, pypto.interleave, [data((2, 5), FP32), data((2, 5), FP32)])  # odd last dim
    check_raises(pypto.ShapeError, pypto.interleave, [data((2, 4), FP32), data((3, 4), FP32)])
    check_raises(pypto.DTypeError, pypto.interleave, [data((2, 4), FP32), data((2, 4), FP16)])
    check_raises(pypto.DTypeError, pypto.interleave, [data((2, 4), I64), data((2, 4), I64)])
    check_raises(pypto.ShapeError, lambda x: pypto.deinterleave(x), [data((2, 3), FP32)])
