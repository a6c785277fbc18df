"""Issue 11, "wrong numbers, silently": runtime sizes that disagree, aliased arguments and true
division of sizes. Each mismatch is refused before anything is written (the outputs keep their
sentinel), each valid call still matches torch (the golden helper), and one compiled version
serves them all."""

from __future__ import annotations

import time

import pytest
import torch

import pypto
from pypto.errors import ArgumentValueError, KernelSyntaxError
from tests.golden.helper import check_kernel, rand

D = pypto.DYNAMIC
FP32 = pypto.DT_FP32
SENTINEL = -7.0


def _untouched(*outs):
    for out in outs:
        assert bool((out == SENTINEL).all()), "an output was written by a refused call"


def _out(*shape):
    return torch.full(shape, SENTINEL)


# ---- item 1: DYNAMIC dims checked against each other ---------------------------------------------

@pypto.jit
def add_whole(x: pypto.Tensor([D, 64], FP32), b: pypto.Tensor([D, 64], FP32), out: pypto.Tensor([D, 64], FP32)):
    pypto.set_vec_tile_shapes(8, 64)
    out[:] = x + b


@pytest.mark.parametrize("rows_b", [1, 5, 9])
def test_elementwise_operands_with_different_runtime_rows_are_refused(rows_b):
    x, b, out = rand((8, 64), seed=1), rand((rows_b, 64), seed=2), _out(8, 64)
    with pytest.raises(ArgumentValueError) as info:
        add_whole(x, b, out)
    text = str(info.value)
    assert "pypto.add" in text and "x.shape[0] = 8" in text and f"b.shape[0] = {rows_b}" in text
    assert "add_whole" in text  # the kernel line
    if rows_b == 1:  # a runtime 1 is not broadcast, and the message says why
        assert "never broadcasts" in text
    _untouched(out)
    check_kernel(add_whole, [x, rand((8, 64), seed=3), _out(8, 64)], x + rand((8, 64), seed=3), out=2)
    assert add_whole.cache_info().misses == 1


@pypto.jit
def add_tiled(x: pypto.Tensor([D, 64], FP32), y: pypto.Tensor([D, 64], FP32), out: pypto.Tensor([D, 64], FP32)):
    pypto.set_vec_tile_shapes(32, 64)
    for b in pypto.loop(pypto.ceildiv(x.shape[0], 32)):
        rows = slice(b * 32, (b + 1) * 32)
        out[rows, :] = x[rows, :] + y[rows, :]


def test_tiled_views_of_tensors_with_different_rows_are_refused():
    """The README's kernel: views of x and y have equal shapes (32) but valid extents over
    different sizes; y shorter (or longer) than x was a partial result."""
    for nx, ny in ((100, 3), (3, 100), (100, 99)):
        out = _out(nx, 64)
        with pytest.raises(ArgumentValueError, match="x.shape\\[0\\] == y.shape\\[0\\]"):
            add_tiled(rand((nx, 64)), rand((ny, 64)), out)
        _untouched(out)
    x, y = rand((100, 64), seed=4), rand((100, 64), seed=5)
    check_kernel(add_tiled, [x, y, _out(100, 64)], x + y, out=2)


def test_an_assigned_value_that_does_not_fit_its_slice_is_refused():
    """out has fewer rows than x: the assembled tiles would be cut. (More rows than x is upstream's
    assemble: the valid part is written, see test_memory_semantics.)"""
    x, y = rand((100, 64)), rand((100, 64))
    out = _out(40, 64)
    with pytest.raises(ArgumentValueError, match="x.shape\\[0\\] <= out.shape\\[0\\]"):
        add_tiled(x, y, out)
    _untouched(out)


@pypto.jit
def where_rows(c: pypto.Tensor([D, 16], pypto.DT_BOOL), x: pypto.Tensor([D, 16], FP32),
               y: pypto.Tensor([D, 16], FP32), out: pypto.Tensor([D, 16], FP32)):
    pypto.set_vec_tile_shapes(8, 16)
    out[:] = pypto.where(c, x, y)


def test_where_checks_all_three_operands():
    c, x, y = rand((8, 16), torch.bool), rand((8, 16), seed=1), rand((8, 16), seed=2)
    out = _out(8, 16)
    with pytest.raises(ArgumentValueError, match="'condition' dim 0 and 'other' dim 0|'input' dim 0 and 'other'"):
        where_rows(c, x, rand((5, 16)), out)
    _untouched(out)
    check_kernel(where_rows, [c, x, y, _out(8, 16)], torch.where(c, x, y), out=3)


@pypto.jit
def mm(a: pypto.Tensor([D, D], FP32), b: pypto.Tensor([D, 32], FP32), out: pypto.Tensor([D, 32], FP32)):
    pypto.set_cube_tile_shapes([16, 16], [16, 16], [16, 16])
    out[:] = pypto.matmul(a, b)


def test_matmul_k_is_checked_before_the_run():
    a = rand((16, 32), seed=1)
    out = _out(16, 32)
    with pytest.raises(ArgumentValueError, match="K of 'input' and K of 'mat2'") as info:
        mm(a, rand((20, 32)), out)
    assert "a.shape[1] = 32 and b.shape[0] = 20" in str(info.value)
    _untouched(out)
    b = rand((32, 32), seed=2)
    check_kernel(mm, [a, b, _out(16, 32)], a @ b, out=2)
    # K through the signature: the leaf needs no check of its own
    assert not any("k_check" in op.attrs for op in mm.last_run.compiled.program.ops())


@pypto.jit
def cat_rows(a: pypto.Tensor([D, D], FP32), b: pypto.Tensor([D, D], FP32), out: pypto.Tensor([D, D], FP32)):
    pypto.set_vec_tile_shapes(16, 16)
    out[:] = pypto.concat([a, b], 0)


def test_concat_checks_the_other_dims():
    a = rand((4, 16), seed=1)
    out = _out(8, 16)
    with pytest.raises(ArgumentValueError, match="pypto.concat: dim 1"):
        cat_rows(a, rand((4, 12)), out)
    _untouched(out)
    b = rand((4, 16), seed=2)
    check_kernel(cat_rows, [a, b, _out(8, 16)], torch.cat([a, b]), out=2)


@pypto.jit
def branchy(x: pypto.Tensor([D, 16], FP32), y: pypto.Tensor([D, 16], FP32), out: pypto.Tensor([D, 16], FP32)):
    pypto.set_vec_tile_shapes(8, 16)
    if x.shape[0] == y.shape[0]:
        out[:] = x + y
    else:
        out[:] = x * 2.0


def test_a_guard_applies_only_on_the_branch_that_runs():
    x, y = rand((8, 16), seed=1), rand((8, 16), seed=2)
    check_kernel(branchy, [x, y, _out(8, 16)], x + y, out=2)
    check_kernel(branchy, [x, rand((3, 16)), _out(8, 16)], x * 2.0, out=2)


def test_guarded_cached_call_stays_cheap():
    """The guards of a cached call are one generated function over the bound sizes."""
    x, y = rand((32, 64), seed=1), rand((32, 64), seed=2)
    out = torch.empty(32, 64)
    add_tiled(x, y, out)
    check = add_tiled.last_run.compiled.executor.check_sizes
    assert check is not None and len(check.guards) == 2  # x ~ y, and x fits out
    env = {"x.shape[0]": 32, "y.shape[0]": 32, "out.shape[0]": 32}
    t0 = time.perf_counter()
    for _ in range(10000):
        check(env)
    assert (time.perf_counter() - t0) / 10000 < 20e-6


# ---- item 3: true division of a runtime size ------------------------------------------------------

@pypto.jit
def per_block(x: pypto.Tensor([D, 16], FP32), out: pypto.Tensor([D, 16], FP32)):
    pypto.set_vec_tile_shapes(8, 16)
    for b in pypto.loop(x.shape[0] / 8):
        out[b * 8:(b + 1) * 8, :] = x[b * 8:(b + 1) * 8, :] + 1.0


def test_true_division_of_a_size_must_be_exact():
    x = rand((16, 16))
    check_kernel(per_block, [x, _out(16, 16)], x + 1.0, out=1)
    out = _out(20, 16)
    with pytest.raises(ArgumentValueError) as info:
        per_block(rand((20, 16)), out)
    text = str(info.value)
    assert "x.shape[0] / 8" in text and "x.shape[0] = 20" in text
    assert "x.shape[0] // 8" in text and "pypto.ceildiv(x.shape[0], 8)" in text
    _untouched(out)


def test_true_division_mixing_a_size_and_a_loop_index_is_refused_at_compile_time():
    @pypto.jit
    def mixed(x: pypto.Tensor([D, 16], FP32), out: pypto.Tensor([D, 16], FP32)):
        for i in pypto.loop(2):
            for b in pypto.loop((x.shape[0] - i) / 8):
                out[b:b + 1, :] = x[b:b + 1, :]

    with pytest.raises(KernelSyntaxError, match="pypto.ceildiv"):
        mixed(rand((16, 16)), _out(16, 16))


def test_true_division_outside_kernels_is_upstreams_integer_division():
    assert (pypto.symbolic_scalar(6) / 4).concrete() == 1
    assert str(pypto.symbolic_scalar("n") / 4) == str(pypto.symbolic_scalar("n") // 4)


# ---- item 2: aliased and overlapping arguments ----------------------------------------------------

@pypto.jit
def exp_plus(x: pypto.Tensor([D, 64], FP32), out: pypto.Tensor([D, 64], FP32)):
    pypto.set_vec_tile_shapes(4, 64)
    for b in pypto.loop(pypto.ceildiv(x.shape[0], 4)):
        out[b * 4:(b + 1) * 4, :] = pypto.exp(x[b * 4:(b + 1) * 4, :]) + x[b * 4:(b + 1) * 4, :]


@pytest.mark.parametrize("shift", [1, -1, 0, 3])
def test_output_overlapping_the_input_reads_the_input_as_it_was(shift):
    """out is x shifted by ``shift`` rows (0: the same tensor); before, tile b read rows tile b-1
    had written (an error of 2.6e8)."""
    buf = rand((24, 64), seed=abs(shift))
    x = buf[max(-shift, 0):][:16]
    out = buf[max(shift, 0):][:16]
    want = torch.exp(x.clone()) + x.clone()
    check_kernel(exp_plus, [x, out], want, out=1)


@pypto.jit
def two_outputs(x: pypto.Tensor([D, 8], FP32), out1: pypto.Tensor([D, 8], FP32), out2: pypto.Tensor([D, 8], FP32)):
    pypto.set_vec_tile_shapes(4, 8)
    out1[:] = x + 1.0
    out2[:] = x * 2.0


def test_two_written_arguments_sharing_memory_run_in_program_order():
    """out1 and out2 overlap by 7 rows: the call runs its tasks one at a time, in program order
    (out2's writes come last), whatever the batching."""
    x = rand((8, 8))
    want = torch.full((9, 8), SENTINEL)
    want[0:8] = x + 1.0
    want[1:9] = x * 2.0
    for serial in (True, False):
        buf = torch.full((9, 8), SENTINEL)
        with pypto.options(debug_options={"serial_execution": serial}):
            two_outputs(x, buf[0:8], buf[1:9])
        torch.testing.assert_close(buf, want, rtol=0, atol=0)
    a, b = torch.empty(8, 8), torch.empty(8, 8)
    check_kernel(two_outputs, [x, a, b], (x + 1.0, x * 2.0), out=[1, 2])


def test_read_only_arguments_may_share_memory():
    buf = rand((8, 64), seed=5)
    check_kernel(add_tiled, [buf, buf, _out(8, 64)], buf + buf, out=2)


@pypto.jit
def norm(x: pypto.Tensor([8, D], FP32), gamma: pypto.Tensor([D], FP32), out: pypto.Tensor([8, D], FP32)):
    pypto.set_vec_tile_shapes(8, 64)
    out[:] = pypto.rms_norm(x, gamma, 1e-6)


def test_rms_norm_gamma_is_checked_against_the_last_dim():
    x, gamma = rand((8, 48), seed=1), rand((48,), seed=2)
    out = _out(8, 48)
    with pytest.raises(ArgumentValueError, match="'gamma' and the last dim of 'input'"):
        norm(x, rand((40,)), out)
    _untouched(out)
    want = x / torch.sqrt((x * x).mean(-1, keepdim=True) + 1e-6) * gamma
    check_kernel(norm, [x, gamma, _out(8, 48)], want, out=2)


def test_two_written_strided_arguments_sharing_memory_are_refused():
    """Strided outputs run on dense copies written back after the call: overlapping ones would be
    written back one over the other: refused before anything runs."""
    buf = torch.full((8, 10), SENTINEL)
    with pytest.raises(ArgumentValueError, match="'out1' and 'out2' are both written"):
        two_outputs(rand((8, 8)), buf[:, 0:8], buf[:, 2:10])
    _untouched(buf)
    x = rand((8, 8), seed=3)
    buf = torch.empty(8, 16)
    check_kernel(two_outputs, [x, buf[:, 0:8], buf[:, 8:16]], (x + 1.0, x * 2.0), out=[1, 2])


@pypto.jit
def add_static_bias(x: pypto.Tensor([D, 64], FP32), bias: pypto.Tensor([8, 64], FP32),
                    out: pypto.Tensor([D, 64], FP32)):
    pypto.set_vec_tile_shapes(8, 64)
    out[:] = x + bias


def test_a_runtime_size_against_a_static_one_is_checked():
    x, bias = rand((8, 64), seed=1), rand((8, 64), seed=2)
    check_kernel(add_static_bias, [x, bias, _out(8, 64)], x + bias, out=2)
    out = _out(5, 64)
    with pytest.raises(ArgumentValueError, match="x.shape\\[0\\] = 5"):
        add_static_bias(rand((5, 64)), bias, out)
    _untouched(out)


@pypto.jit
def update_cache(cache: pypto.Tensor([D, 8], FP32), new: pypto.Tensor([D, 8], FP32),
                 cache_out: pypto.Tensor([D, 8], FP32)):
    pypto.set_vec_tile_shapes(4, 8)
    cache[:] = cache + new
    cache_out[:] = cache * 2.0


def test_the_same_tensor_for_two_written_parameters_is_one_memory_in_program_order():
    """Upstream's models pass a KV cache as an input updated in place and as the output: the very
    same tensor for two written parameters is one memory, its accesses ordered as the program says."""
    c, n = rand((8, 8), seed=1), rand((8, 8), seed=2)
    want = (c + n) * 2.0
    for serial in (True, False):
        buf = c.clone()
        with pypto.options(debug_options={"serial_execution": serial}):
            check_kernel(update_cache, [buf, n, buf], want, out=2)


def test_the_same_strided_view_for_two_written_parameters_is_one_memory():
    c, n = rand((8, 8), seed=1), rand((8, 8), seed=2)
    want = (c + n) * 2.0
    base = torch.zeros(8, 16)
    view = base[:, 0:8]  # strided: the call runs on one dense copy for both parameters
    view.copy_(c)
    update_cache(view, n, view)
    torch.testing.assert_close(view, want, rtol=0, atol=0)
    assert bool((base[:, 8:] == 0).all())
