"""Issue 20 D1: every view's valid extent is guarded before the run.

``out[rows] = x[rows] + y[rows shifted by one]`` with ``y`` one row short used to succeed with
``out``'s last row stale (ten rows short: eleven stale rows) while torch refuses the shapes. The
two extents have different forms through the loop index, so no size relation could be derived;
the relation is now checked for every iteration before anything runs, and a valid call still
matches torch."""

from __future__ import annotations

import pytest
import torch

import pypto
from pypto.errors import ArgumentValueError
from tests.golden.helper import check_kernel, rand

D = pypto.DYNAMIC
FP32 = pypto.DT_FP32
SENTINEL = -7.0


@pypto.jit
def shifted_add(x: pypto.Tensor([D, 64], FP32), y: pypto.Tensor([D, 64], FP32), out: pypto.Tensor([D, 64], FP32)):
    pypto.set_vec_tile_shapes(32, 64)
    for b in pypto.loop(pypto.ceildiv(x.shape[0], 32)):
        out[b * 32:(b + 1) * 32, :] = x[b * 32:(b + 1) * 32, :] + y[b * 32 + 1:(b + 1) * 32 + 1, :]


@pytest.mark.parametrize("ny", [100, 99, 90, 40])
def test_a_shifted_view_of_a_short_tensor_is_refused_before_the_run(ny):
    x, y, out = rand((100, 64), seed=1), rand((ny, 64), seed=2), torch.full((100, 64), SENTINEL)
    with pytest.raises(ArgumentValueError) as info:
        shifted_add(x, y, out)
    with pytest.raises(RuntimeError):  # torch refuses the same shapes
        _ = x + y[1:101]
    text = str(info.value)
    assert "y.shape[0] = " + str(ny) in text and "x.shape[0] = 100" in text and "at b = " in text
    assert info.value.param == "x" and "shifted_add" in text  # the parameter and the kernel line
    assert bool((out == SENTINEL).all()), "a refused call wrote into out"


def test_a_shifted_view_that_fits_matches_torch_and_the_verdict_is_remembered():
    x, y = rand((100, 64), seed=3), rand((101, 64), seed=4)
    check_kernel(shifted_add, [x, y, torch.full((100, 64), SENTINEL)], x + y[1:101], out=2)
    for n in (33, 64, 1):  # other sizes, one compiled version; each valid call matches torch
        x, y = rand((n, 64), seed=n), rand((n + 1, 64), seed=n + 1)
        check_kernel(shifted_add, [x, y, torch.full((n, 64), SENTINEL)], x + y[1:n + 1], out=2)
    assert shifted_add.cache_info().misses == 1


@pypto.jit
def shifted_store(x: pypto.Tensor([D, 64], FP32), out: pypto.Tensor([D, 64], FP32)):
    pypto.set_vec_tile_shapes(16, 64)
    for b in pypto.loop(pypto.ceildiv(x.shape[0], 16)):
        out[b * 16 + 2:(b + 1) * 16 + 2, :] = x[b * 16:(b + 1) * 16, :] * 3.0


def test_an_assignment_into_a_shifted_slice_that_would_cut_the_value_is_refused():
    x = rand((40, 64), seed=5)
    out = torch.full((41, 64), SENTINEL)  # torch: out[2:42] has 39 rows, x 40
    with pytest.raises(ArgumentValueError, match="does not fit its slice") as info:
        shifted_store(x, out)
    assert "at b = 2" in str(info.value)
    assert bool((out == SENTINEL).all())
    want = torch.full((42, 64), SENTINEL)
    want[2:] = x * 3.0
    check_kernel(shifted_store, [x, torch.full((42, 64), SENTINEL)], want, out=1)


@pypto.jit
def nested_unrolled(x: pypto.Tensor([D, 8], FP32), y: pypto.Tensor([D, 8], FP32), out: pypto.Tensor([D, 8], FP32)):
    pypto.set_vec_tile_shapes(4, 8)
    for b, f in pypto.loop_unroll(pypto.ceildiv(x.shape[0], 4), unroll_list=[2]):
        for r in pypto.loop(f):
            rows = slice((b + r) * 4, (b + r + 1) * 4)
            out[rows, :] = x[rows, :] - y[(b + r) * 4 + 1:(b + r + 1) * 4 + 1, :]


@pytest.mark.parametrize("n", [5, 8, 13])
def test_nested_and_unrolled_loops_are_checked_at_every_iteration(n):
    x = rand((n, 8), seed=n)
    out = torch.full((n, 8), SENTINEL)
    with pytest.raises(ArgumentValueError, match="valid extents differ"):
        nested_unrolled(x, rand((n, 8), seed=1), out)
    assert bool((out == SENTINEL).all())
    y = rand((n + 1, 8), seed=2)
    check_kernel(nested_unrolled, [x, y, torch.full((n, 8), SENTINEL)], x - y[1:n + 1], out=2)


@pypto.jit
def offsets_from_a_table(x: pypto.Tensor([D, 8], FP32), starts: pypto.Tensor([D], pypto.DT_INT32),
                         out: pypto.Tensor([D, 8], FP32)):
    pypto.set_vec_tile_shapes(4, 8)
    for b in pypto.loop(pypto.ceildiv(out.shape[0], 4)):
        s = starts[b]
        out[b * 4:(b + 1) * 4, :] = x[s:s + 4, :] + out[b * 4:(b + 1) * 4, :]


def test_a_view_at_an_offset_read_from_a_tensor_is_checked_before_the_run():
    x = rand((10, 8), seed=7)
    out = torch.full((8, 8), SENTINEL)
    starts = torch.tensor([0, 8], dtype=torch.int32)  # x[8:12] has 2 rows, out's tile 4
    with pytest.raises(ArgumentValueError, match="valid extents differ"):
        offsets_from_a_table(x, starts, out)
    assert bool((out == SENTINEL).all())
    starts = torch.tensor([6, 1], dtype=torch.int32)
    base = rand((8, 8), seed=8)
    want = torch.cat([x[6:10] + base[:4], x[1:5] + base[4:]])
    check_kernel(offsets_from_a_table, [x, starts, base.clone()], want, out=2)


@pypto.jit
def offsets_written_first(x: pypto.Tensor([D, 8], FP32), starts: pypto.Tensor([2], pypto.DT_INT32),
                          src: pypto.Tensor([2], pypto.DT_INT32), out: pypto.Tensor([D, 8], FP32)):
    pypto.set_vec_tile_shapes(4, 8)
    starts[:] = src + 0  # the offsets exist only once the call has run this line
    for b in pypto.loop(pypto.ceildiv(out.shape[0], 4)):
        s = starts[b]
        out[b * 4:(b + 1) * 4, :] = x[s:s + 4, :] + out[b * 4:(b + 1) * 4, :]


@pypto.jit
def offset_read_outside_loops(x: pypto.Tensor([D, 8], FP32), starts: pypto.Tensor([2], pypto.DT_INT32),
                              out: pypto.Tensor([D, 8], FP32)):
    pypto.set_vec_tile_shapes(4, 8)
    s = starts[1]
    out[0:4, :] = x[s:s + 4, :] + out[0:4, :]


def test_an_offset_the_call_writes_before_reading_it_is_checked_where_the_op_runs():
    """The last unchecked form: the offset's element does not exist before the run, so the extent
    is checked at the iteration that reads it; a mismatch restores the written arguments."""
    x = rand((10, 8), seed=9)
    out = torch.full((8, 8), SENTINEL)
    starts = torch.zeros(2, dtype=torch.int32)
    with pytest.raises(ArgumentValueError, match="valid extents differ.*at b = 1"):
        offsets_written_first(x, starts, torch.tensor([0, 8], dtype=torch.int32), out)
    assert bool((out == SENTINEL).all()) and starts.tolist() == [0, 0]  # the first tile ran, then was undone
    base = rand((8, 8), seed=10)
    want = torch.cat([x[6:10] + base[:4], x[1:5] + base[4:]])
    check_kernel(offsets_written_first, [x, starts, torch.tensor([6, 1], dtype=torch.int32), base.clone()], want,
                 out=3)
    assert starts.tolist() == [6, 1]


def test_an_offset_read_outside_any_loop_is_checked_before_the_run():
    x = rand((10, 8), seed=11)
    out = torch.full((4, 8), SENTINEL)
    with pytest.raises(ArgumentValueError, match="valid extents differ|sizes differ"):
        offset_read_outside_loops(x, torch.tensor([0, 8], dtype=torch.int32), out)
    assert bool((out == SENTINEL).all())
    base = rand((4, 8), seed=12)
    check_kernel(offset_read_outside_loops, [x, torch.tensor([0, 3], dtype=torch.int32), base.clone()],
                 x[3:7] + base, out=2)
