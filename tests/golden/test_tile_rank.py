"""One vector tile setting for ops of several ranks (upstream's tile-rank rule).

A vector tile may have more sizes than an op's tensor has dims: a rank-R op is tiled by the first
R sizes, each clipped to its dim. Fewer sizes than the rank of the tensor an op is tiled over is
an error. Numbers go through the golden helper; the tile shapes are read off the expanded graph.
"""

import pytest
import torch

import pypto
from tests.golden.helper import check_kernel, rand

FP32 = torch.float32


def expanded_ops(kernel, *args, kind):
    """The tile ops of ``kind`` in the expand snapshot of the version compiled for ``args``."""
    compiled = kernel.inspect(*args)
    (snap,) = [p for p in compiled.passes if p.name == "expand"]
    return [op for ops in snap.graph for op in ops if op.kind == kind]


@pypto.jit
def abs_1d(x: pypto.Tensor([], pypto.DT_FP32), out: pypto.Tensor([], pypto.DT_FP32)):
    pypto.set_vec_tile_shapes(2, 8)
    out[:] = pypto.abs(x)


def test_a_1d_op_under_a_2d_tile_takes_the_first_size():
    x = torch.tensor([-1.0, -8.0, 2.0])
    out = torch.zeros(3)
    check_kernel(abs_1d, [x, out], x.abs(), out=1)
    (op,) = expanded_ops(abs_1d, x, out, kind="abs")
    assert op.outputs[0].shape == (2,) and op.grid == (2,)  # tile 2 (not 8) over 3 elements


@pypto.jit
def rms_norm(x: pypto.Tensor([pypto.DYNAMIC, 64], pypto.DT_FP32), gamma: pypto.Tensor([64], pypto.DT_FP32),
             bias: pypto.Tensor([64], pypto.DT_FP32), out: pypto.Tensor([pypto.DYNAMIC, 64], pypto.DT_FP32)):
    pypto.set_vec_tile_shapes(4, 64)
    g = pypto.exp(gamma) * 0.5 + bias  # 1-D ops under the 2-D tile
    for b in pypto.loop(pypto.ceildiv(x.shape[0], 4)):
        rows = x[b * 4:(b + 1) * 4, :]
        ms = pypto.sum(rows * rows, -1, keepdim=True) * (1.0 / 64)
        out[b * 4:(b + 1) * 4, :] = rows * pypto.rsqrt(ms + 1e-6) * g  # [4, 64] * [64]


@pytest.mark.parametrize("n", [4, 9])
def test_one_2d_tile_serves_1d_params_and_2d_rows(n):
    x, gamma, bias = rand((n, 64), seed=1), rand((64,), seed=2), rand((64,), seed=3)
    out = torch.zeros(n, 64)
    want = x * torch.rsqrt((x * x).mean(-1, keepdim=True) + 1e-6) * (torch.exp(gamma) * 0.5 + bias)
    check_kernel(rms_norm, [x, gamma, bias, out], want, out=3, loose=True)
    (exp,) = expanded_ops(rms_norm, x, gamma, bias, out, kind="exp")
    assert exp.outputs[0].shape == (4,) and exp.grid == (16,)  # 64 elements by the first size, 4


@pypto.jit
def mixed_3d(x: pypto.Tensor([4, 6, 8], pypto.DT_FP32), y: pypto.Tensor([6, 8], pypto.DT_FP32),
             z: pypto.Tensor([8], pypto.DT_FP32)):
    pypto.set_vec_tile_shapes(2, 4, 8)
    yz = pypto.maximum(y, z)  # 2-D result: tiled (2, 4)
    zz = pypto.neg(z)  # 1-D: tiled (2,)
    s = pypto.sum(x + yz, 1)  # 3-D reduce (over its input) to [4, 8]
    return s * zz, pypto.amax(yz, 0, keepdim=True)


def test_ops_of_three_ranks_under_one_3d_tile():
    x, y, z = rand((4, 6, 8), seed=4), rand((6, 8), seed=5), rand((8,), seed=6)
    yz = torch.maximum(y, z)
    check_kernel(mixed_3d, [x, y, z], ((x + yz).sum(1) * -z, yz.amax(0, keepdim=True)), loose=True)
    (mx,) = expanded_ops(mixed_3d, x, y, z, kind="maximum")
    assert mx.outputs[0].shape == (2, 4)
    (neg,) = expanded_ops(mixed_3d, x, y, z, kind="neg")
    assert neg.outputs[0].shape == (2,) and neg.grid == (4,)


@pypto.jit
def transposed(x: pypto.Tensor([16, 32], pypto.DT_FP32)):
    pypto.set_vec_tile_shapes(4, 8, 2)
    return pypto.transpose(x, 0, 1) + 1.0


def test_transpose_tile_follows_the_input_dims():
    x = rand((16, 32), seed=7)
    check_kernel(transposed, [x], x.t() + 1.0)
    (op,) = expanded_ops(transposed, x, kind="transpose")
    assert op.inputs[0].shape == (4, 8) and op.outputs[0].shape == (8, 4)


@pypto.jit
def permuted(x: pypto.Tensor([4, 6, 8], pypto.DT_FP32)):
    pypto.set_vec_tile_shapes(2, 3, 4)
    return pypto.permute(x, [2, 0, 1])


def test_permute_tile_follows_the_input_dims():
    x = rand((4, 6, 8), seed=8)
    check_kernel(permuted, [x], x.permute(2, 0, 1))
    (op,) = expanded_ops(permuted, x, kind="permute")
    assert op.inputs[0].shape == (2, 3, 4) and op.outputs[0].shape == (4, 2, 3)


@pypto.jit
def put_points(x: pypto.Tensor([8, 16], pypto.DT_FP32), i: pypto.Tensor([4], pypto.DT_INT32),
               j: pypto.Tensor([4], pypto.DT_INT32), v: pypto.Tensor([4], pypto.DT_FP32)):
    pypto.set_vec_tile_shapes(4)  # index_put is tiled over its 1-D indices, not over x
    pypto.index_put_(x, (i, j), v)


def test_index_put_is_tiled_over_its_values():
    x, v = rand((8, 16), seed=9), rand((4,), seed=10)
    i, j = torch.tensor([0, 7, 3, 3], dtype=torch.int32), torch.tensor([15, 0, 4, 5], dtype=torch.int32)
    want = x.clone().index_put_((i.long(), j.long()), v)
    check_kernel(put_points, [x, i, j, v], want, out=0)


@pypto.jit
def put_rows(x: pypto.Tensor([6, 3, 8], pypto.DT_FP32), i: pypto.Tensor([4], pypto.DT_INT32),
             v: pypto.Tensor([4, 3, 8], pypto.DT_FP32)):
    pypto.set_vec_tile_shapes(2)  # one size: the values' trailing dims [3, 8] stay whole
    pypto.index_put_(x, (i,), v, True)


@pypto.jit
def put_rows_2d_tile(x: pypto.Tensor([6, 3, 8], pypto.DT_FP32), i: pypto.Tensor([4], pypto.DT_INT32),
                     v: pypto.Tensor([4, 3, 8], pypto.DT_FP32)):
    pypto.set_vec_tile_shapes(2, 3)  # completed to (2, 3, 8)
    pypto.index_put_(x, (i,), v)


@pytest.mark.parametrize("kernel, accumulate", [(put_rows, True), (put_rows_2d_tile, False)])
def test_index_put_tile_shorter_than_the_values_is_completed(kernel, accumulate):
    x, v = rand((6, 3, 8), seed=11), rand((4, 3, 8), seed=12)
    i = torch.tensor([5, 0, 2, 4], dtype=torch.int32)
    want = x.clone().index_put_((i.long(),), v, accumulate=accumulate)
    check_kernel(kernel, [x, i, v], want, out=0)


# ---- what upstream refuses: fewer tile sizes than the rank of the tiled tensor --------------------

@pypto.jit
def short_tile(x: pypto.Tensor([8, 16], pypto.DT_FP32)):
    pypto.set_vec_tile_shapes(16)
    return pypto.exp(x)


@pypto.jit
def short_tile_reduce(x: pypto.Tensor([8, 16], pypto.DT_FP32)):
    pypto.set_vec_tile_shapes(8)
    return pypto.sum(x, 1)  # the result is 1-D, but the op is tiled over its 2-D input


@pypto.jit
def short_tile_broadcast(x: pypto.Tensor([16], pypto.DT_FP32), y: pypto.Tensor([8, 16], pypto.DT_FP32)):
    pypto.set_vec_tile_shapes(16)
    return x + y  # the first operand is 1-D, the op is tiled over its 2-D result


@pytest.mark.parametrize("kernel, shapes, rank, line", [
    (short_tile, [(8, 16)], 2, "return pypto.exp(x)"),
    (short_tile_reduce, [(8, 16)], 2, "return pypto.sum(x, 1)"),
    (short_tile_broadcast, [(16,), (8, 16)], 2, "return x + y"),
])
def test_fewer_tile_sizes_than_the_rank_is_an_error(kernel, shapes, rank, line):
    args = [rand(s) for s in shapes]
    with pytest.raises(pypto.ShapeError) as info:
        kernel(*args)
    err = info.value
    assert isinstance(err, ValueError) and err.param == "vec_tile_shapes"
    assert f"at least {rank} sizes" in str(err) and "set_vec_tile_shapes(" in str(err)
    assert err.loc is not None and err.loc.source_line().startswith(line)
