"""A write into a view whose given ``valid_shape`` reaches past the memory it views.

``pypto.view(t, [24, 16], [8, 0], valid_shape=[20, 16])`` of a 12-row tensor has 4 rows of
memory under it. Writing 20 valid rows into it (``v[:] = ...``, ``assemble``) wrote those 4 rows
and dropped the other 16 without a word (issue 20; the same through an in-place reshape of the
output); torch refuses the shapes (``out[8:32] = twenty_rows``). Now the call is refused before
the run: at compile time for static sizes, by a size guard for DYNAMIC ones. A write that fits
the memory computes what torch does, and reading such a view (mxfp8's scale views) is unchanged.
"""

import pytest
import torch

import pypto
from pypto.errors import PyptoError, ShapeError
from tests.golden.helper import check_kernel, rand

FP32 = pypto.DT_FP32


def _through_reshape(x: pypto.Tensor([24, 16], FP32), out: pypto.Tensor([24, 8], FP32)):
    pypto.set_vec_tile_shapes(32, 16)
    rows = pypto.reshape(out, [12, 16], inplace=True)
    window = pypto.view(rows, [24, 16], [8, 0], valid_shape=[20, 16])
    window[:] = pypto.view(x, [24, 16], [0, 0], valid_shape=[20, 16]) + 1.0


def _direct(x: pypto.Tensor([24, 16], FP32), out: pypto.Tensor([12, 16], FP32)):
    pypto.set_vec_tile_shapes(32, 16)
    window = pypto.view(out, [24, 16], [8, 0], valid_shape=[20, 16])
    pypto.assemble(pypto.view(x, [24, 16], [0, 0], valid_shape=[20, 16]) + 1.0, [0, 0], window)


def _view_of_the_view(x: pypto.Tensor([24, 16], FP32), out: pypto.Tensor([12, 16], FP32)):
    pypto.set_vec_tile_shapes(32, 16)
    window = pypto.view(out, [24, 16], [8, 0], valid_shape=[20, 16])
    inner = pypto.view(window, [8, 16], [2, 0])  # rows 10..17 of out: 2 exist
    inner[:] = pypto.view(x, [8, 16], [0, 0]) + 1.0


@pytest.mark.parametrize("body, out_shape", [(_through_reshape, (24, 8)), (_direct, (12, 16)),
                                             (_view_of_the_view, (12, 16))])
def test_a_write_cut_at_the_viewed_tensors_edge_is_refused_before_the_run(body, out_shape):
    x, out = rand((24, 16)), torch.zeros(out_shape)
    with pytest.raises(ShapeError, match="reaches past the memory of .dst. in dim 0") as info:
        pypto.jit(body)(x, out)
    assert info.value.param == "dst"
    assert torch.equal(out, torch.zeros(out_shape))  # nothing ran
    with pytest.raises(RuntimeError):  # what torch says of the same write
        out.reshape(12, 16)[8:32] = x[:20] + 1.0


@pypto.jit
def dynamic_window(x: pypto.Tensor([24, 16], FP32), out: pypto.Tensor([pypto.DYNAMIC, 16], FP32)):
    pypto.set_vec_tile_shapes(32, 16)
    window = pypto.view(out, [24, 16], [8, 0], valid_shape=[20, 16])
    window[:] = pypto.view(x, [24, 16], [0, 0], valid_shape=[20, 16]) + 1.0


def test_with_a_dynamic_size_the_guard_refuses_a_short_tensor_and_a_long_one_computes():
    x = rand((24, 16), seed=1)
    short = torch.zeros(12, 16)
    with pytest.raises(PyptoError, match="memory under .dst."):
        dynamic_window(x, short)
    assert torch.equal(short, torch.zeros(12, 16))
    for rows in (28, 40):
        out = torch.full((rows, 16), 5.0)
        want = out.clone()
        want[8:28] = x[:20] + 1.0  # torch's own write of the same rows
        check_kernel(dynamic_window, [x, out], want, out=1)


def _fits(x: pypto.Tensor([24, 16], FP32), out: pypto.Tensor([12, 16], FP32)):
    pypto.set_vec_tile_shapes(32, 16)
    window = pypto.view(out, [24, 16], [8, 0], valid_shape=[20, 16])
    pypto.assemble(pypto.view(x, [4, 16], [0, 0]) + 1.0, [0, 0], window)  # 4 rows: what exists


def test_a_write_that_fits_the_memory_writes_what_torch_does():
    x, out = rand((24, 16), seed=2), torch.full((12, 16), 3.0)
    want = out.clone()
    want[8:12] = x[:4] + 1.0
    check_kernel(pypto.jit(_fits), [x, out], want, out=1)


def _reads_past_the_end(x: pypto.Tensor([12, 16], FP32), out: pypto.Tensor([24, 16], FP32)):
    pypto.set_vec_tile_shapes(32, 16)
    window = pypto.view(x, [24, 16], [8, 0], valid_shape=[20, 16])  # 4 rows exist
    pypto.assemble(window + 1.0, [0, 0], out)


def test_reading_such_a_view_still_reads_the_rows_that_exist():
    x, out = rand((12, 16), seed=3), torch.full((24, 16), 7.0)
    want = out.clone()
    want[:4] = x[8:] + 1.0
    check_kernel(pypto.jit(_reads_past_the_end), [x, out], want, out=1)
