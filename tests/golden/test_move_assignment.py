"""``t[:] = x`` is upstream's ``t.move(x)``: a local tensor given a value of another shape becomes
that value (ds_v32's mla_prolog: ``cos_2d[:] = pypto.view(cos_2d, [tile, d], [off, 0])``, then a
reshape of cos_2d to the tile's rows); with the same shape the value is written into it (the
loop-carried state of the GLM attention kernels). Before issue 20 the first form was written into
the old tensor at offset 0, keeping its shape (the reshape then refused a changed element count).
"""

import torch

import pypto
from tests.golden.helper import check_kernel, rand

FP32 = pypto.DT_FP32


@pypto.jit
def rows_of_local(x: pypto.Tensor([8, 64], FP32), out: pypto.Tensor([4, 1, 64], FP32)):
    pypto.set_vec_tile_shapes(8, 64)
    t = pypto.tensor([8, 64], FP32, "t")
    t[:] = x * 2.0                               # same shape: written into t
    t[:] = pypto.view(t, [4, 64], [2, 0])        # another shape: t becomes rows 2..5
    pypto.set_vec_tile_shapes(4, 1, 64)
    out[:] = pypto.reshape(t, [4, 1, 64]) + 1.0


def test_a_local_assigned_another_shape_becomes_that_value():
    x = rand((8, 64))
    check_kernel(rows_of_local, [x, torch.zeros(4, 1, 64)], (x * 2.0)[2:6].reshape(4, 1, 64) + 1.0, out=1)


@pypto.jit
def carried(x: pypto.Tensor([pypto.DYNAMIC, 64], FP32), out: pypto.Tensor([4, 64], FP32)):
    pypto.set_vec_tile_shapes(4, 64)
    acc = pypto.tensor([4, 64], FP32, "acc")
    for i in pypto.loop(pypto.ceildiv(x.shape[0], 4)):
        tile = pypto.view(x, [4, 64], [i * 4, 0], valid_shape=[pypto.min(x.shape[0] - i * 4, 4), 64])
        if pypto.is_loop_begin(i):
            acc[:] = tile
        else:
            acc[:] = acc + tile                  # the same shape: state carried through acc
        if pypto.is_loop_end(i):
            out[:] = acc


def test_a_local_assigned_its_own_shape_carries_state_across_iterations():
    x = rand((16, 64), seed=3)
    check_kernel(carried, [x, torch.zeros(4, 64)], x.reshape(4, 4, 64).sum(0), out=1)
