"""reshape(..., inplace=True): the reshaped tensor and its source are one memory (upstream gives
it no address of its own), so writes through either name are seen through the other."""

import torch

import pypto
from tests.golden.helper import check_kernel, rand

FP32 = pypto.DT_FP32
SENTINEL = -7.0


def ops_of(kernel, kind):
    return [op for op in kernel.last_run.compiled.passes[0].graph.body.items if getattr(op, "kind", None) == kind]


def test_an_output_filled_through_its_inplace_reshape():
    @pypto.frontend.jit
    def fill(x: pypto.Tensor([pypto.STATIC, pypto.STATIC], FP32),
             out: pypto.Tensor([pypto.STATIC, pypto.STATIC, pypto.STATIC], FP32)):
        pypto.set_vec_tile_shapes(64, 64)
        flat = pypto.reshape(out, [out.shape[0] * 64, 64], inplace=True)
        for b in pypto.loop(out.shape[0], name="b", idx_name="b"):
            pypto.assemble(pypto.view(x, [64, 64], [b * 64, 0]) + 1.0, [b * 64, 0], flat)

    x = rand((192, 64))
    check_kernel(fill, [x, torch.full((3, 64, 64), SENTINEL)], (x + 1.0).reshape(3, 64, 64), out=1)


def test_a_not_inplace_reshape_is_a_copy():
    @pypto.frontend.jit
    def copy(x: pypto.Tensor([4, 16], FP32), out: pypto.Tensor([64], FP32), seen: pypto.Tensor([64], FP32)):
        pypto.set_vec_tile_shapes(4, 16)
        flat = pypto.reshape(out, [64])
        flat[0:16] = pypto.reshape(x, [64])[0:16] * 2.0  # writes the copy only
        seen[:] = flat + 0.0

    x = rand((4, 16))
    want_seen = torch.full((64,), SENTINEL)
    want_seen[:16] = x.reshape(64)[:16] * 2.0
    check_kernel(copy, [x, torch.full((64,), SENTINEL), torch.zeros(64)],
                 (torch.full((64,), SENTINEL), want_seen), out=[1, 2])


def test_reads_after_writes_through_the_other_name():
    @pypto.frontend.jit
    def mixed(x: pypto.Tensor([8, 32], FP32), out: pypto.Tensor([8, 32], FP32), got: pypto.Tensor([8, 32], FP32)):
        pypto.set_vec_tile_shapes(8, 32)
        flat = pypto.reshape(out, [256], inplace=True)
        flat[0:128] = pypto.reshape(x, [256])[0:128] + 1.0  # through the reshape
        got[:] = out * 2.0  # the source sees it
        out[4:8, :] = x[4:8, :] - 1.0  # through the source
        flat[0:64] = flat[128:192] * 3.0  # the reshape sees that

    x = rand((8, 32))
    want = torch.cat([x[:4] + 1.0, x[4:] - 1.0])
    first = torch.full((8, 32), SENTINEL)
    first[:4] = x[:4] + 1.0
    want.view(-1)[0:64] = want.view(-1)[128:192] * 3.0
    check_kernel(mixed, [x, torch.full((8, 32), SENTINEL), torch.zeros(8, 32)], (want, first * 2.0), out=[1, 2])


def test_iterations_see_earlier_iterations_writes():
    @pypto.frontend.jit
    def running(x: pypto.Tensor([8, 16], FP32), out: pypto.Tensor([8, 16], FP32)):
        pypto.set_vec_tile_shapes(1, 16)
        out[0:1, :] = x[0:1, :] + 0.0
        flat = pypto.reshape(out, [128], inplace=True)
        for i in pypto.loop(1, 8, name="i", idx_name="i"):
            prev = pypto.view(out, [1, 16], [i - 1, 0])  # read through the source ...
            row = pypto.reshape(prev + pypto.view(x, [1, 16], [i, 0]), [16])
            pypto.assemble(row, [i * 16], flat)  # ... written through the reshape

    x = rand((8, 16))
    check_kernel(running, [x, torch.full((8, 16), SENTINEL)], torch.cumsum(x, 0), out=1)


def test_reading_through_an_inplace_reshape_copies_nothing_back():
    @pypto.frontend.jit
    def read_only(x: pypto.Tensor([4, 16], FP32), out: pypto.Tensor([64], FP32)):
        pypto.set_vec_tile_shapes(64)
        out[:] = pypto.reshape(x, [64], inplace=True) * 2.0

    x = rand((4, 16))
    check_kernel(read_only, [x, torch.zeros(64)], x.reshape(64) * 2.0, out=1)
    assert len(ops_of(read_only, "reshape")) == 1 and len(ops_of(read_only, "assemble")) == 1  # out[:] = ...
