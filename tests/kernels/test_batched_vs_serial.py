"""The batched runtime gives the numbers of serial execution.

Every kernel here runs twice on the same inputs (outputs pre-filled with a sentinel): batched by
dependency level (the default) and with ``debug_options={"serial_execution": True}``, which runs
the tasks one tile at a time in program order. Both results must be equal, exactly unless a test
says why float rounding may differ, and match torch. Sizes are DYNAMIC and mostly prime, so loops
end in partial tiles. The sections: independent iterations, the plan cache, loop-carried
dependencies, hazards (WAR, WAW, in place, aliasing), reductions and matmuls split over tiles,
element-reading control flow, runtime options and half precision, and a property test over random
loop kernels.
"""

from __future__ import annotations

import pytest
import torch
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import pypto
from tests.kernels._serial_reference import SENTINEL, check_both, filled, rand

D = pypto.DYNAMIC
FP32 = pypto.DT_FP32
FP16 = pypto.DT_FP16
BF16 = pypto.DT_BF16
INT32 = pypto.DT_INT32
# torch's vectorised transcendental kernels (sigmoid, ...) round some elements one ulp away from
# their scalar remainder loop, so the same element can differ between a [5, 16] tile and a batch of
# them: batched and serial agree to an ulp there, not bit for bit
ULP = (2.5e-7, 1e-7)
# torch's batched GEMM ([B, m, k] @ [B, k, n]) sums K in another order than one [m, k] @ [k, n]
# (checked directly on torch: the same blocks differ in the last bits), so results downstream of a
# matmul agree to a few ulps
GEMM = (1e-6, 1e-6)


# ---- independent loop iterations ------------------------------------------------------------------

@pypto.jit
def row_blocks(x: pypto.Tensor([D, 40], FP32), y: pypto.Tensor([D, 40], FP32),
               out: pypto.Tensor([D, 40], FP32)):
    pypto.set_vec_tile_shapes(4, 16)  # 40 columns: two full column tiles and a tail of 8
    for i in pypto.loop(pypto.ceildiv(x.shape[0], 4)):
        rows = slice(i * 4, (i + 1) * 4)
        out[rows, :] = pypto.exp(x[rows, :]) * y[rows, :] - 0.5


@pytest.mark.parametrize("n", [1, 7, 13, 31])
def test_row_blocks(n):
    x, y = rand(n, 40, seed=n), rand(n, 40, seed=n + 1)
    check_both(row_blocks, [x, y, filled(n, 40)], {2: torch.exp(x) * y - 0.5}, loose=True,
               batches=n > 4)


@pypto.jit
def column_blocks(x: pypto.Tensor([6, D], FP32), out: pypto.Tensor([6, D], FP32)):
    pypto.set_vec_tile_shapes(6, 8)
    for j in pypto.loop(pypto.ceildiv(x.shape[1], 8)):
        cols = slice(j * 8, (j + 1) * 8)
        out[:, cols] = pypto.maximum(x[:, cols] * 3.0, x[:, cols] + 1.0)


def test_column_blocks():
    for n in (5, 29):
        x = rand(6, n, seed=n)
        check_both(column_blocks, [x, filled(6, n)], {1: torch.maximum(x * 3.0, x + 1.0)},
                   batches=n > 8)


TM, TN = 4, 8


@pypto.jit
def blocks_2d(x: pypto.Tensor([D, D], FP32), out: pypto.Tensor([D, D], FP32)):
    pypto.set_vec_tile_shapes(TM, TN)
    for i in pypto.loop(pypto.ceildiv(x.shape[0], TM)):
        for j in pypto.loop(pypto.ceildiv(x.shape[1], TN)):
            blk = x[i * TM:(i + 1) * TM, j * TN:(j + 1) * TN]
            out[i * TM:(i + 1) * TM, j * TN:(j + 1) * TN] = blk * 2.0 + 1.0


@pypto.jit
def blocks_2d_coords(x: pypto.Tensor([D, D], FP32), out: pypto.Tensor([D, D], FP32)):
    pypto.set_vec_tile_shapes(TM, TN)
    for i in pypto.loop(pypto.ceildiv(x.shape[0], TM)):
        for j in pypto.loop(pypto.ceildiv(x.shape[1], TN)):
            blk = x[i * TM:(i + 1) * TM, j * TN:(j + 1) * TN]
            # the block coordinates are added: each (i, j) must run exactly once, on its own block
            # (a leaf reading loop indices batches only tasks that agree on them: one step each)
            out[i * TM:(i + 1) * TM, j * TN:(j + 1) * TN] = blk * 2.0 + pypto.full([TM, TN], i * 100 + j, FP32)


@pytest.mark.parametrize("m, n", [(11, 19), (3, 5), (17, 33)])
def test_blocks_2d_nested_loops(m, n):
    x = rand(m, n, seed=m * n)
    check_both(blocks_2d, [x, filled(m, n)], {1: x * 2.0 + 1.0}, batches=m * n > TM * TN)
    coord = (torch.arange(m) // TM)[:, None] * 100 + (torch.arange(n) // TN)[None, :]
    check_both(blocks_2d_coords, [x, filled(m, n)], {1: x * 2.0 + coord.float()}, batches=False)


@pypto.jit
def strided_rows(x: pypto.Tensor([D, 24], FP32), out: pypto.Tensor([D, 24], FP32)):
    pypto.set_vec_tile_shapes(2, 16)
    for i in pypto.loop(1, x.shape[0], 3):  # rows 1, 4, 7, ...: two of every three keep the sentinel
        out[i:i + 2, :] = pypto.sqrt(pypto.abs(x[i:i + 2, :])) + 2.0


def test_loop_with_step_leaves_gaps():
    for n in (2, 11, 23):
        x = rand(n, 24, seed=n)
        want = torch.full((n, 24), SENTINEL)
        for i in range(1, n, 3):
            want[i:i + 2] = torch.sqrt(torch.abs(x[i:i + 2])) + 2.0
        check_both(strided_rows, [x, filled(n, 24)], {1: want}, batches=n > 4)


@pypto.jit
def mirror_lower(x: pypto.Tensor([D, D], FP32), out: pypto.Tensor([D, D], FP32)):
    pypto.set_vec_tile_shapes(2, 2)
    for i in pypto.loop(pypto.ceildiv(x.shape[0], 2)):
        for j in pypto.loop(i + 1):  # a triangle: the tasks' offsets are no single progression
            # block (i, j) of x, transposed, to block (j, i) of out: from one task to the next, the
            # offset in out can step backwards
            out[j * 2:(j + 1) * 2, i * 2:(i + 1) * 2] = pypto.transpose(x[i * 2:(i + 1) * 2, j * 2:(j + 1) * 2], 0, 1)


def test_triangular_loop_offsets_stepping_backwards():
    """Regression: batching such tasks as one run made a view with a negative stride (a crash)."""
    for n in (5, 8):
        x = rand(n, n, seed=n)
        want = filled(n, n)
        for i in range(0, n, 2):
            for j in range(0, i + 1, 2):
                want[j:j + 2, i:i + 2] = x[i:i + 2, j:j + 2].T
        check_both(mirror_lower, [x, filled(n, n)], {1: want})


UT = 3  # rows per tile of the unrolled loop


@pypto.jit
def unrolled(x: pypto.Tensor([D, 8], FP32), out: pypto.Tensor([D, 8], FP32)):
    pypto.set_vec_tile_shapes(UT, 8)
    for i, f in pypto.loop_unroll(pypto.ceildiv(x.shape[0], UT), unroll_list=[4, 2]):
        for k in range(f):  # the body of factor f handles tiles i .. i+f-1 and marks them with f
            rows = slice((i + k) * UT, (i + k + 1) * UT)
            out[rows, :] = x[rows, :] * 2.0 + float(f)


@pytest.mark.parametrize("n", [5, 19, 31])
def test_loop_unroll(n):
    x = rand(n, 8, seed=n)
    factors, rem = [], -(-n // UT)
    for f in (4, 2, 1):
        factors += [f] * (rem // f * f)
        rem %= f
    per_row = torch.tensor(factors, dtype=torch.float32).repeat_interleave(UT)[:n]
    # 31 rows = 11 tiles run the factor-4 body twice: those two iterations batch
    check_both(unrolled, [x, filled(n, 8)], {1: x * 2.0 + per_row[:, None]}, batches=n == 31)


@pypto.jit
def parallel_rows(x: pypto.Tensor([D, 16], FP32), out: pypto.Tensor([D, 16], FP32)):
    pypto.set_vec_tile_shapes(5, 16)
    for i in pypto.loop(pypto.ceildiv(x.shape[0], 5), parallel=True):
        out[i * 5:(i + 1) * 5, :] = pypto.sigmoid(x[i * 5:(i + 1) * 5, :])


def test_parallel_loop():
    x = rand(23, 16)
    check_both(parallel_rows, [x, filled(23, 16)], {1: torch.sigmoid(x)}, loose=True, tol=ULP)


# ---- one compiled version, many sizes: the plan cache ----------------------------------------------

@pypto.jit
def two_dyn(x: pypto.Tensor([D, D], FP32), out: pypto.Tensor([D, D], FP32)):
    pypto.set_vec_tile_shapes(4, 8)
    for i in pypto.loop(pypto.ceildiv(x.shape[0], 4)):
        rows = slice(i * 4, (i + 1) * 4)
        out[rows, :] = x[rows, :] * x[rows, :] + 3.0


def test_plan_cache_same_numbers_across_sizes_and_evictions():
    from pypto.runtime.execute import PLAN_CACHE_SIZE

    two_dyn.cache_clear()
    sizes = [(13, 7), (5, 11), (13, 7)] + [(k, 3) for k in range(1, PLAN_CACHE_SIZE + 3)] + [(13, 7), (5, 11)]
    first = {}
    for m, n in sizes:
        x = rand(m, n, seed=m * 31 + n)
        b = check_both(two_dyn, [x, filled(m, n)], {1: x * x + 3.0}, batches=m > 8 or n > 8)
        if (m, n) in first:  # a replayed (or re-planned after eviction) plan: the same numbers
            torch.testing.assert_close(b.args[1], first[m, n], rtol=0, atol=0)
        first[m, n] = b.args[1]
    info = two_dyn.cache_info()
    assert info.misses == 1  # every size through one compiled version
    plans = two_dyn.last_run.compiled.executor._plans
    assert 0 < len(plans) <= PLAN_CACHE_SIZE  # bounded: batched and serial plans share the bound


# ---- loop-carried dependencies ---------------------------------------------------------------------

@pypto.jit
def prefix_rows(x: pypto.Tensor([D, 20], FP32), out: pypto.Tensor([D, 20], FP32)):
    pypto.set_vec_tile_shapes(1, 8)  # each row in three column tiles (tail of 4)
    out[0:1, :] = x[0:1, :]
    for i in pypto.loop(1, x.shape[0]):
        out[i:i + 1, :] = out[i - 1:i, :] + x[i:i + 1, :]


def test_running_prefix_sum():
    for n in (1, 2, 13):
        x = rand(n, 20, seed=n)
        want = x.clone()
        for i in range(1, n):  # the same fp32 additions in the same order: exact
            want[i] = want[i - 1] + x[i]
        b = check_both(prefix_rows, [x, filled(n, 20)], {1: want})
        torch.testing.assert_close(b.args[1], want, rtol=0, atol=0)


@pypto.jit
def accumulate_per_batch(x: pypto.Tensor([D, D, 12], FP32), out: pypto.Tensor([D, 12], FP32)):
    pypto.set_vec_tile_shapes(1, 1, 12)
    for b in pypto.loop(x.shape[0]):
        acc = pypto.tensor([1, 12], FP32, "acc")  # no explicit init: a fresh local tensor is zero
        for s in pypto.loop(x.shape[1]):
            acc[:] = acc[:, :] + pypto.reshape(x[b:b + 1, s:s + 1, :], [1, 12]) * 2.0
        out[b:b + 1, :] = acc[:, :]


def test_local_accumulator_is_fresh_per_outer_iteration():
    for bsz, seq in ((3, 5), (7, 2), (1, 9)):
        # quarter-integers: every partial sum is exact, so any order gives the same fp32 number
        x = torch.randint(-40, 40, (bsz, seq, 12)).float() / 4
        check_both(accumulate_per_batch, [x, filled(bsz, 12)], {1: (x * 2.0).sum(1)}, batches=bsz > 1)


@pypto.jit
def last_iteration_value(x: pypto.Tensor([D, 8], FP32), out: pypto.Tensor([1, 8], FP32)):
    pypto.set_vec_tile_shapes(1, 8)
    t = pypto.tensor([1, 8], FP32, "t")
    for i in pypto.loop(x.shape[0]):
        t[:] = x[i:i + 1, :] * 3.0  # every iteration overwrites t: after the loop it holds the last row's
    out[:] = t[:, :] + 1.0


def test_value_defined_in_loop_read_after_it():
    for n in (1, 6, 11):
        x = rand(n, 8, seed=n)
        check_both(last_iteration_value, [x, filled(1, 8)], {1: x[-1:] * 3.0 + 1.0}, batches=False)


@pypto.jit
def escaping_values(x: pypto.Tensor([D, 8], FP32), w: pypto.Tensor([8, 8], FP32),
                    out: pypto.Tensor([2, 8], FP32)):
    pypto.set_vec_tile_shapes(1, 8)
    pypto.set_cube_tile_shapes([8, 8], [8, 8], [8, 8])
    for i in pypto.loop(x.shape[0]):
        t = pypto.exp(x[i:i + 1, :]) - 1.0  # traced values defined in the loop ...
        u = pypto.matmul(t, w, FP32)  # (a matmul result lives in GM, one buffer per iteration)
    out[0:1, :] = t * 2.0  # ... read after it: the last iteration's values
    out[1:2, :] = u + 1.0


def test_traced_values_escaping_a_loop():
    w = rand(8, 8, seed=9)
    for n in (1, 5):
        x = rand(n, 8, seed=n)
        t = torch.exp(x[-1:]) - 1.0
        want = torch.cat([t * 2.0, t @ w + 1.0])
        check_both(escaping_values, [x, w, filled(2, 8)], {2: want}, loose=True, batches=n > 1, tol=GEMM)


@pypto.jit
def flash_like(q: pypto.Tensor([D, 16], FP32), k: pypto.Tensor([D, 16], FP32), v: pypto.Tensor([D, 16], FP32),
               out: pypto.Tensor([D, 16], FP32)):
    """Online softmax: the running max, sum and output are local tensors updated every KV block."""
    BQ, BK = 8, 8
    pypto.set_cube_tile_shapes([8, 8], [16, 16], [16, 16])
    for i in pypto.loop(pypto.ceildiv(q.shape[0], BQ)):
        qb = q[i * BQ:(i + 1) * BQ, :]
        m = pypto.tensor([BQ, 1], FP32, "m")
        l = pypto.tensor([BQ, 1], FP32, "l")
        acc = pypto.tensor([BQ, 16], FP32, "acc")
        m[:] = pypto.full([BQ, 1], -1e30, FP32)
        for j in pypto.loop(pypto.ceildiv(k.shape[0], BK)):
            kb, vb = k[j * BK:(j + 1) * BK, :], v[j * BK:(j + 1) * BK, :]
            pypto.set_vec_tile_shapes(BQ, BK)
            s = pypto.matmul(qb, kb, FP32, b_trans=True) * 0.25
            m_old = m[:, :]
            m_new = pypto.maximum(m_old, pypto.amax(s, -1, keepdim=True))
            p = pypto.exp(s - m_new)
            pypto.set_vec_tile_shapes(BQ, 1)
            alpha = pypto.exp(m_old - m_new)
            l[:] = l[:, :] * alpha + pypto.sum(p, -1, keepdim=True)
            m[:] = m_new
            pypto.set_vec_tile_shapes(BQ, 16)
            acc[:] = acc[:, :] * alpha + pypto.matmul(p, vb, FP32)
        out[i * BQ:(i + 1) * BQ, :] = acc[:, :] / l[:, :]


def _attention(q, k, v, scale):
    return torch.softmax(q @ k.T * scale, dim=-1) @ v


def test_online_softmax_accumulators():
    for sq, sk in ((19, 23), (8, 5)):
        q, k, v = rand(sq, 16, seed=1), rand(sk, 16, seed=2), rand(sk, 16, seed=3)
        check_both(flash_like, [q, k, v, filled(sq, 16)], {3: _attention(q, k, v, 0.25)}, loose=True,
                   batches=sq > 8, tol=GEMM)


def test_flash_attention_example():
    from examples.flash_attention import flash_attention, reference

    g = torch.Generator().manual_seed(5)
    q, k, v = (torch.randn(2, 37, 64, generator=g) for _ in range(3))
    check_both(flash_attention, [q, k, v, filled(2, 37, 64)], {3: reference(q, k, v)}, loose=True, tol=GEMM)


# ---- hazards across iterations ---------------------------------------------------------------------

@pypto.jit
def shift_down(x: pypto.Tensor([D, 12], FP32), out: pypto.Tensor([D, 12], FP32)):
    pypto.set_vec_tile_shapes(1, 8)
    for i in pypto.loop(x.shape[0] - 1):
        out[i:i + 1, :] = out[i + 1:i + 2, :] * 2.0  # reads the row the next iteration overwrites (WAR)
        out[i + 1:i + 2, :] = x[i:i + 1, :] + 1.0


def test_write_after_read_across_iterations():
    for n in (2, 9):
        x, old = rand(n, 12, seed=n), rand(n, 12, seed=n + 50)
        want = old.clone()
        for i in range(n - 1):
            want[i] = want[i + 1] * 2.0
            want[i + 1] = x[i] + 1.0
        check_both(shift_down, [x, old], {1: want}, batches=False)


@pypto.jit
def last_wins(x: pypto.Tensor([D, 20], FP32), out: pypto.Tensor([2, 20], FP32)):
    pypto.set_vec_tile_shapes(2, 8)
    for i in pypto.loop(pypto.ceildiv(x.shape[0], 2)):
        out[:, :] = x[i * 2:(i + 1) * 2, :] - 1.0  # every iteration writes the same rows (WAW)


def test_write_after_write_last_iteration_wins():
    for n in (2, 8):  # the last block full: every element of out comes from it
        x = rand(n, 20, seed=n)
        check_both(last_wins, [x, filled(2, 20)], {1: x[-2:] - 1.0})
    x = rand(7, 20, seed=7)  # a tail block of one row: row 1 keeps what the block before wrote
    want = torch.stack([x[6], x[5]]) - 1.0
    check_both(last_wins, [x, filled(2, 20)], {1: want})


@pypto.jit
def in_place_rows(x: pypto.Tensor([D, 18], FP32)):
    pypto.set_vec_tile_shapes(4, 8)
    for i in pypto.loop(pypto.ceildiv(x.shape[0], 4)):
        rows = slice(i * 4, (i + 1) * 4)
        x[rows, :] = x[rows, :] * x[rows, :] - 2.0  # read and written by the same op
        x[rows, :] = pypto.abs(x[rows, :]) + x[rows, :]  # and again, reading that write


def test_in_place_updates():
    for n in (3, 17):
        x = rand(n, 18, seed=n)
        y = x * x - 2.0
        check_both(in_place_rows, [x], {0: torch.abs(y) + y})


@pypto.jit
def halves(buf: pypto.Tensor([D, 32], FP32)):
    """Reads the left half of ``buf`` and writes the right half, then reads back one row up."""
    pypto.set_vec_tile_shapes(2, 16)
    n = buf.shape[0]
    for i in pypto.loop(pypto.ceildiv(n, 2)):
        left = buf[i * 2:(i + 1) * 2, 0:16]
        buf[i * 2:(i + 1) * 2, 16:32] = left * 10.0
    for i in pypto.loop(1, n):
        # left half of row i from the right half of row i-1: a view of the same parameter written
        # by the previous loop, read before this loop overwrites row i's left half
        buf[i:i + 1, 0:16] = buf[i - 1:i, 16:32] + 1.0


def test_outputs_aliasing_inputs_through_views():
    for n in (1, 6, 11):
        buf = rand(n, 32, seed=n)
        want = buf.clone()
        want[:, 16:] = want[:, :16] * 10.0
        for i in range(1, n):
            want[i, :16] = want[i - 1, 16:] + 1.0
        check_both(halves, [buf], {0: want}, batches=n > 2)


@pypto.jit
def double_next(x: pypto.Tensor([D, 8], FP32), out: pypto.Tensor([D, 8], FP32)):
    pypto.set_vec_tile_shapes(1, 8)
    for i in pypto.loop(x.shape[0] - 1):
        out[i + 1:i + 2, :] = x[i:i + 1, :] * 2.0


def test_the_same_tensor_passed_as_input_and_output():
    """``kernel(a, a)``: the kernel reads ``x`` as it was when the call started (the read-only
    argument is copied first), so the result is the kernel's function of its input, batched or
    serial (before, the batched call ordered reads and writes by the tiles)."""
    a = rand(6, 8, seed=1)
    want = a.clone()
    want[1:] = a[:-1] * 2.0
    for serial in (True, False):
        b = a.clone()
        with pypto.options(debug_options={"serial_execution": serial}):
            double_next(b, b)
        torch.testing.assert_close(b, want, rtol=0, atol=0)


@pypto.jit
def double_rows(x: pypto.Tensor([D, 8], FP32), out: pypto.Tensor([D, 8], FP32)):
    pypto.set_vec_tile_shapes(1, 8)
    for i in pypto.loop(x.shape[0]):
        out[i:i + 1, :] = x[i:i + 1, :] * 2.0


def test_overlapping_views_passed_as_input_and_output():
    """``kernel(a[0:5], a[1:6])``: out's row i is x's row i + 1; x is read as it was before the
    call (a result that depends on neither the tile shape nor the schedule)."""
    a = rand(6, 8, seed=2)
    want = a.clone()
    want[1:6] = a[0:5] * 2.0
    for serial in (True, False):
        b = a.clone()
        with pypto.options(debug_options={"serial_execution": serial}):
            double_rows(b[0:5], b[1:6])
        torch.testing.assert_close(b, want, rtol=0, atol=0)
    b = a.clone()
    double_rows(b[0:3], b[3:6])  # views of one tensor that do not overlap: batched as usual
    torch.testing.assert_close(b, torch.cat([a[0:3], a[0:3] * 2.0]), rtol=0, atol=0)
    assert len(double_rows.last_run.compiled.executor.last[1].steps) == 1


# ---- reductions across tiles, matmul, mixed cores, broadcasts ---------------------------------------

@pypto.jit
def row_stats(x: pypto.Tensor([D, 50], FP32), out: pypto.Tensor([D, 50], FP32),
              stats: pypto.Tensor([D, 2], FP32)):
    pypto.set_vec_tile_shapes(4, 16)  # every row in four column tiles (tail of 2): partial + combine
    for i in pypto.loop(pypto.ceildiv(x.shape[0], 4)):
        rows = slice(i * 4, (i + 1) * 4)
        t = x[rows, :]
        out[rows, :] = pypto.softmax(t, -1)
        stats[rows, 0:1] = pypto.sum(t, -1, keepdim=True)
        stats[rows, 1:2] = pypto.amax(t, -1, keepdim=True)


def test_reductions_split_over_tiles_in_a_loop():
    for n in (3, 13):
        x = rand(n, 50, seed=n, scale=3.0)
        want_stats = torch.stack([x.sum(-1), x.amax(-1)], dim=-1)
        check_both(row_stats, [x, filled(n, 50), filled(n, 2)], {1: torch.softmax(x, -1), 2: want_stats},
                   loose=True)


@pypto.jit
def column_sums(x: pypto.Tensor([D, 24], FP32), out: pypto.Tensor([1, 24], FP32)):
    pypto.set_vec_tile_shapes(8, 8)  # the reduced dim (rows) spans ceil(n / 8) tiles
    out[:] = pypto.sum(x, 0, keepdim=True) + pypto.amin(x, 0, keepdim=True)


def test_reduction_over_the_dynamic_dim():
    for n in (5, 29):
        x = torch.randint(-64, 64, (n, 24)).float() / 8  # exact partial sums: any order is exact
        check_both(column_sums, [x, filled(1, 24)], {1: x.sum(0, keepdim=True) + x.amin(0, keepdim=True)})


@pypto.jit
def short_block_reductions(x: pypto.Tensor([D, 6], FP32), colmax: pypto.Tensor([D, 6], FP32),
                           colsm: pypto.Tensor([D, 6], FP32), total: pypto.Tensor([D, 1], FP32)):
    """Reductions across the rows of 8-row blocks, the last block cut short by the tensor's end."""
    pypto.set_vec_tile_shapes(2, 2)  # a block is four row tiles, a row three column tiles
    for i in pypto.loop(pypto.ceildiv(x.shape[0], 8)):
        v = x[i * 8:(i + 1) * 8, :]
        colmax[i:i + 1, :] = pypto.amax(v, 0, keepdim=True)  # row tiles wholly past the end
        colsm[i:i + 1, :] = pypto.sum(pypto.softmax(v, -1), 0, keepdim=True)
        total[i:i + 1, :] = pypto.sum(pypto.sum(v, -1, keepdim=True), 0, keepdim=True)


@pytest.mark.parametrize("n", [1, 3, 13])
def test_reductions_over_a_short_last_block(n):
    """Regression: the partial results of a reduction split over tiles (and the intermediates of a
    softmax split over tiles) had the full shape as valid shape, so a reduction fused after them
    summed rows past the tensor's end (uninitialised workspace), and amax met empty tiles."""
    x = rand(n, 6, seed=n)
    blocks = [x[b:b + 8] for b in range(0, n, 8)]

    def per_block(f, cols):  # row b holds block b's result; the rows past the last block keep the sentinel
        out = filled(n, cols)
        out[:len(blocks)] = torch.cat([f(v) for v in blocks])
        return out

    want = {1: per_block(lambda v: v.amax(0, keepdim=True), 6),
            2: per_block(lambda v: torch.softmax(v, -1).sum(0, keepdim=True), 6),
            3: per_block(lambda v: v.sum().reshape(1, 1), 1)}
    check_both(short_block_reductions, [x, filled(n, 6), filled(n, 6), filled(n, 1)], want, loose=True,
               batches=False)


def _matmul_kernel(a_trans, b_trans, split_k):
    @pypto.jit
    def mm(a: pypto.Tensor([D, D], FP32), b: pypto.Tensor([D, D], FP32), out: pypto.Tensor([D, D], FP32)):
        pypto.set_cube_tile_shapes([8, 8], [8, 16], [8, 8], enable_split_k=split_k)
        pypto.set_vec_tile_shapes(8, 8)
        out[:] = pypto.matmul(a, b, FP32, a_trans=a_trans, b_trans=b_trans)
    return mm


@pypto.jit
def split_k_row_sums(a: pypto.Tensor([D, 40], FP32), b: pypto.Tensor([40, 8], FP32), out: pypto.Tensor([D, 8], FP32)):
    pypto.set_cube_tile_shapes([8, 8], [8, 16], [8, 8], enable_split_k=True)
    pypto.set_vec_tile_shapes(8, 8)
    for i in pypto.loop(pypto.ceildiv(a.shape[0], 16)):
        p = pypto.matmul(a[i * 16:(i + 1) * 16, :], b, FP32)  # partial products per K chunk, then summed
        out[i:i + 1, :] = pypto.sum(p, 0, keepdim=True)  # ... over rows past the end of a's last block


def test_split_k_matmul_then_row_sum_over_a_short_block():
    for m in (5, 21):
        a, b = rand(m, 40, seed=m), rand(40, 8, seed=1)
        want = filled(m, 8)
        for r in range(0, m, 16):
            want[r // 16] = (a[r:r + 16] @ b).sum(0)
        check_both(split_k_row_sums, [a, b, filled(m, 8)], {2: want}, loose=True, tol=GEMM, batches=False)


MATMULS = {(at, bt, sk): _matmul_kernel(at, bt, sk) for at, bt, sk in
           [(False, False, False), (True, False, False), (False, True, False), (True, True, True),
            (False, False, True)]}


@pytest.mark.parametrize("a_trans, b_trans, split_k", list(MATMULS))
def test_matmul_cube_tiles_with_tails(a_trans, b_trans, split_k):
    m, k, n = 19, 37, 13  # tails in M, N and K (K in chunks of 16 under split_k)
    a = rand(*((k, m) if a_trans else (m, k)), seed=1)
    b = rand(*((n, k) if b_trans else (k, n)), seed=2)
    want = (a.T if a_trans else a) @ (b.T if b_trans else b)
    check_both(MATMULS[a_trans, b_trans, split_k], [a, b, filled(m, n)], {2: want}, loose=True, tol=GEMM)


@pypto.jit
def mixed_cores(x: pypto.Tensor([D, 16], FP32), w: pypto.Tensor([16, 24], FP32),
                bias: pypto.Tensor([24], FP32), out: pypto.Tensor([D, 24], FP32)):
    """Per row block: exp on AIV, matmul on AIC (the exp goes through GM), bias and relu on AIV."""
    pypto.set_cube_tile_shapes([8, 8], [16, 16], [8, 8])
    pypto.set_vec_tile_shapes(8, 8)
    for i in pypto.loop(pypto.ceildiv(x.shape[0], 8)):
        rows = slice(i * 8, (i + 1) * 8)
        h = pypto.matmul(pypto.exp(x[rows, :]) * 0.5, w, FP32)
        out[rows, :] = pypto.relu(h + bias)  # bias [24]: a lower-rank operand broadcast over rows


def test_mixed_aic_aiv_loop():
    w, bias = rand(16, 24, seed=7), rand(24, seed=8)
    for n in (5, 27):
        x = rand(n, 16, seed=n)
        want = torch.relu((torch.exp(x) * 0.5) @ w + bias)
        check_both(mixed_cores, [x, w, bias, filled(n, 24)], {3: want}, loose=True, tol=GEMM)


@pypto.jit
def scale_shift(x: pypto.Tensor([D, D, 20], FP32), gamma: pypto.Tensor([20], FP32),
                beta: pypto.Tensor([1, 20], FP32), out: pypto.Tensor([D, D, 20], FP32)):
    pypto.set_vec_tile_shapes(1, 4, 8)
    for b in pypto.loop(x.shape[0]):
        for s in pypto.loop(pypto.ceildiv(x.shape[1], 4)):
            blk = x[b:b + 1, s * 4:(s + 1) * 4, :]
            out[b:b + 1, s * 4:(s + 1) * 4, :] = blk * gamma + beta  # rank 1 and rank 2 against rank 3


def test_broadcast_lower_rank_operands():
    gamma, beta = rand(20, seed=1), rand(1, 20, seed=2)
    for bsz, seq in ((2, 7), (3, 13)):
        x = rand(bsz, seq, 20, seed=seq)
        check_both(scale_shift, [x, gamma, beta, filled(bsz, seq, 20)], {3: x * gamma + beta})


# ---- control flow and addresses that read tensor elements -------------------------------------------

@pypto.jit
def element_control(x: pypto.Tensor([D, 16], FP32), meta: pypto.Tensor([D], INT32),
                    out: pypto.Tensor([D, 16], FP32)):
    """meta[0]: how many rows to process; meta[1 + i]: the source row of row i; its sign a branch."""
    pypto.set_vec_tile_shapes(1, 8)
    for i in pypto.loop(meta[0]):  # a loop bound read from an element
        src = meta[i + 1]
        row = x[src:src + 1, :]  # an address read from an element
        if src > 2:  # a branch on an element
            out[i:i + 1, :] = row * 2.0
        else:
            out[i:i + 1, :] = row - 100.0


def test_loop_bound_branch_and_address_from_elements():
    n = 9
    x = rand(n, 16, seed=3)
    for rows, sources in ((5, [8, 0, 3, 3, 1]), (0, []), (7, [2, 6, 4, 0, 8, 5, 7])):
        meta = torch.tensor([rows] + sources + [0] * (n - 1 - rows), dtype=torch.int32)
        want = torch.full((n, 16), SENTINEL)
        for i, s in enumerate(sources):
            want[i] = x[s] * 2.0 if s > 2 else x[s] - 100.0
        check_both(element_control, [x, meta, filled(n, 16)], {2: want}, batches=False)
    assert element_control.cache_info().misses == 1


@pypto.jit
def chase_rows(x: pypto.Tensor([D, 8], FP32), idx: pypto.Tensor([D], INT32), out: pypto.Tensor([D, 8], FP32)):
    pypto.set_vec_tile_shapes(1, 4)
    for i in pypto.loop(x.shape[0]):
        src = idx[i]  # an earlier row (written by an earlier iteration), this one, or a later one
        out[i:i + 1, :] = out[src:src + 1, :] * 0.5 + x[i:i + 1, :]


def test_element_addressed_reads_of_rows_written_earlier():
    n = 9
    x, init = rand(n, 8, seed=1), rand(n, 8, seed=2)
    idx = torch.tensor([0, 0, 1, 5, 2, 8, 3, 6, 7], dtype=torch.int32)
    want = init.clone()
    for i in range(n):
        want[i] = want[idx[i]] * 0.5 + x[i]
    check_both(chase_rows, [x, idx, init], {2: want}, batches=False)


@pypto.jit
def growing_bound(x: pypto.Tensor([D, 8], FP32), cnt: pypto.Tensor([1, D], INT32), out: pypto.Tensor([D, 8], FP32)):
    pypto.set_vec_tile_shapes(1, 8)
    for i in pypto.loop(x.shape[0]):
        for j in pypto.loop(cnt[0, i]):  # a bound the previous iteration wrote
            out[j:j + 1, :] = out[j:j + 1, :] + x[i:i + 1, :]
        cnt[0:1, i + 1:i + 2] = cnt[0:1, i:i + 1] + 1


def test_loop_bound_written_by_the_previous_iteration():
    n = 5
    x = rand(n, 8, seed=3)
    cnt = torch.zeros(1, n + 1, dtype=torch.int32)
    cnt[0, 0] = 1
    want, want_cnt = torch.zeros(n, 8), cnt.clone()
    for i in range(n):
        for j in range(min(int(want_cnt[0, i]), n)):
            want[j] += x[i]
        want_cnt[0, i + 1] = want_cnt[0, i] + 1
    check_both(growing_bound, [x, cnt, torch.zeros(n, 8)], {1: want_cnt, 2: want}, batches=False)


@pypto.jit
def write_then_loop(x: pypto.Tensor([D, 8], INT32), count: pypto.Tensor([1, 8], INT32),
                    out: pypto.Tensor([D, 8], INT32)):
    """Writes ``count`` from the data, then loops ``count[0, 0]`` times: the bound must be what the
    kernel wrote, not what the caller passed in."""
    pypto.set_vec_tile_shapes(4, 8)
    count[:] = pypto.sum(x, 0, keepdim=True)  # a cross-tile reduction over the dynamic rows
    for i in pypto.loop(pypto.ceildiv(x.shape[0], 4)):  # batched work pending before the read
        out[i * 4:(i + 1) * 4, :] = x[i * 4:(i + 1) * 4, :] * 3
    for j in pypto.loop(count[0, 0]):  # rows 0 .. count-1 get one more
        out[j:j + 1, :] = out[j:j + 1, :] + 1


def test_loop_bound_reads_the_kernels_own_write():
    for n, first_col in ((6, [0, 1, 0, 2, 0, 1]), (9, [1, 2, 0, 0, 0, 1, 2, 0, 0])):
        x = torch.arange(n * 8, dtype=torch.int32).reshape(n, 8) % 3
        x[:, 0] = torch.tensor(first_col, dtype=torch.int32)
        count_in = torch.full((1, 8), 1, dtype=torch.int32)  # a stale value: reading it is wrong
        col_sums = x.sum(0, keepdim=True, dtype=torch.int32)
        want = x * 3
        want[:int(col_sums[0, 0])] += 1
        check_both(write_then_loop, [x, count_in, torch.zeros(n, 8, dtype=torch.int32)],
                   {1: col_sums, 2: want}, batches=n > 4)


def test_branch_on_the_kernels_own_write_is_refused_at_its_line():
    """A region's runtime conditions are decided when the region starts, so a condition on an
    element the kernel writes earlier in the same region would see the caller's stale value: it
    is refused at compile time, naming the tensor (a silent wrong branch is worse)."""
    @pypto.jit
    def write_then_branch(x: pypto.Tensor([D, 8], INT32), flag: pypto.Tensor([1, 8], INT32),
                          out: pypto.Tensor([D, 8], INT32)):
        pypto.set_vec_tile_shapes(4, 8)
        flag[:] = pypto.amax(x, 0, keepdim=True)
        if flag[0, 0] > 0:
            out[:] = x + 1
        else:
            out[:] = x - 1

    x, flag, out = torch.zeros(5, 8, dtype=torch.int32), torch.ones(1, 8, dtype=torch.int32), \
        torch.zeros(5, 8, dtype=torch.int32)
    with pytest.raises(pypto.KernelSyntaxError, match="reads tensor 'flag', which the kernel writes") as e:
        write_then_branch(x, flag, out)
    assert "pypto.loop(1)" in str(e.value) and "test_batched_vs_serial.py" in str(e.value)
    assert torch.equal(flag, torch.ones(1, 8, dtype=torch.int32)) and not out.any()  # nothing ran


@pypto.jit
def write_then_branch_in_region(x: pypto.Tensor([D, 8], INT32), flag: pypto.Tensor([1, 8], INT32),
                                out: pypto.Tensor([D, 8], INT32)):
    """The same decision in a region of its own, after the write: it sees the written value."""
    pypto.set_vec_tile_shapes(4, 8)
    flag[:] = pypto.amax(x, 0, keepdim=True)
    for _ in pypto.loop(1):
        if flag[0, 0] > 0:
            out[:] = x + 1
        else:
            out[:] = x - 1


def test_branch_reads_the_kernels_own_write_in_a_later_region():
    for n, stale, top in ((5, 1, 0), (5, 0, 1)):  # the caller's flag says the opposite of the data
        x = torch.zeros(n, 8, dtype=torch.int32)
        x[n - 1, 0] = top
        flag_in = torch.full((1, 8), stale, dtype=torch.int32)
        want = x + 1 if top > 0 else x - 1
        check_both(write_then_branch_in_region, [x, flag_in, torch.zeros(n, 8, dtype=torch.int32)],
                   {1: x.amax(0, keepdim=True), 2: want}, batches=False)


# ---- valid_shape_optimize, stitching, half precision ------------------------------------------------

def _tails_body(x: pypto.Tensor([D, D], FP32), w: pypto.Tensor([D, 8], FP32), out: pypto.Tensor([D, 8], FP32),
                stats: pypto.Tensor([D, 1], FP32)):
    pypto.set_vec_tile_shapes(4, 8)
    pypto.set_cube_tile_shapes([4, 4], [8, 8], [8, 8])
    for i in pypto.loop(pypto.ceildiv(x.shape[0], 4)):
        rows = slice(i * 4, (i + 1) * 4)
        t = x[rows, :] * 0.5
        stats[rows, :] = pypto.amax(t, -1, keepdim=True)  # reduced over ceil(k / 8) tiles
        out[rows, :] = pypto.matmul(t, w, FP32) + 1.0  # K = x.shape[1] with a tail


TAILS = {vso: pypto.jit(_tails_body, runtime_options={"valid_shape_optimize": vso}) for vso in (0, 1)}


@pytest.mark.parametrize("vso", [0, 1])
def test_valid_shape_optimize(vso):
    for m, k in ((13, 21), (4, 8), (9, 3)):
        x, w = rand(m, k, seed=m), rand(k, 8, seed=k)
        b = check_both(TAILS[vso], [x, w, filled(m, 8), filled(m, 1)],
                       {2: (x * 0.5) @ w + 1.0, 3: (x * 0.5).amax(-1, keepdim=True)}, loose=True, tol=GEMM,
                       batches=m > 4 or k > 8)
        variants = {s.variant for s in b.steps}
        assert variants <= ({"main", "tail"} if vso else {"default"})


@pytest.mark.parametrize("max_num", [1, 3])
def test_stitching_into_small_device_tasks(max_num):
    kernel = pypto.jit(prefix_rows.fn, runtime_options={"stitch_function_max_num": max_num})
    x = rand(7, 20, seed=7)
    want = torch.cumsum(x, 0)
    check_both(kernel, [x, filled(7, 20)], {1: want})
    assert len(kernel.last_run.compiled.executor.last[0]) > 1  # several device tasks, one plan


@pypto.jit
def half_rows(x: pypto.Tensor([D, 40], FP16), y: pypto.Tensor([D, 40], BF16),
              out16: pypto.Tensor([D, 40], FP16), outbf: pypto.Tensor([D, 40], BF16),
              out32: pypto.Tensor([D, 40], FP32)):
    pypto.set_vec_tile_shapes(4, 16)
    for i in pypto.loop(pypto.ceildiv(x.shape[0], 4)):
        rows = slice(i * 4, (i + 1) * 4)
        a, b = x[rows, :], y[rows, :]
        out16[rows, :] = pypto.softmax(a * 2.0, -1)  # reduced across three column tiles
        outbf[rows, :] = pypto.maximum(b, pypto.cast(a, BF16)) - 1.0
        out32[rows, :] = pypto.cast(a, FP32) + pypto.cast(b, FP32)


def test_fp16_bf16_loop():
    for n in (3, 11):
        x = rand(n, 40, seed=n, dtype=torch.float16)
        y = rand(n, 40, seed=n + 1, dtype=torch.bfloat16)
        want = {2: torch.softmax(x.float() * 2.0, -1).half(),
                3: (torch.maximum(y.float(), x.bfloat16().float()) - 1.0).bfloat16(),
                4: x.float() + y.float()}
        outs = [filled(n, 40, dtype=torch.float16), filled(n, 40, dtype=torch.bfloat16), filled(n, 40)]
        check_both(half_rows, [x, y, *outs], want)


@pypto.jit
def half_matmul(a: pypto.Tensor([D, 24], FP16), b: pypto.Tensor([24, D], FP16), out: pypto.Tensor([D, D], FP32)):
    pypto.set_cube_tile_shapes([8, 8], [16, 16], [8, 8])
    pypto.set_vec_tile_shapes(8, 8)
    out[:] = pypto.matmul(a, b, FP32)


def test_fp16_matmul_fp32_out():
    a, b = rand(11, 24, seed=1, dtype=torch.float16), rand(24, 13, seed=2, dtype=torch.float16)
    check_both(half_matmul, [a, b, filled(11, 13)], {2: a.float() @ b.float()}, loose=True, tol=GEMM)


# ---- property: random loop kernels -------------------------------------------------------------------

# (name, pypto form, torch form) of each link of a chain: t is the running value (a block of rows,
# the last block cut short by the tensor's end), y the same block of a second input. Every link
# keeps values bounded so chains stay finite.
LINKS = {
    "scale": (lambda t, y: t * -1.5, lambda t, y: t * -1.5),
    "shift": (lambda t, y: t + 0.75, lambda t, y: t + 0.75),
    "relu": (lambda t, y: pypto.relu(t), lambda t, y: torch.relu(t)),
    "decay": (lambda t, y: pypto.exp(pypto.abs(t) * -1.0), lambda t, y: torch.exp(torch.abs(t) * -1.0)),
    "add_y": (lambda t, y: t + y, lambda t, y: t + y),
    "mul_y": (lambda t, y: t * y, lambda t, y: t * y),
    "max_y": (lambda t, y: pypto.maximum(t, y), lambda t, y: torch.maximum(t, y)),
    "center": (lambda t, y: t - pypto.sum(t, -1, keepdim=True) * 0.125,
               lambda t, y: t - t.sum(-1, keepdim=True) * 0.125),
    "sub_max": (lambda t, y: t - pypto.amax(t, -1, keepdim=True), lambda t, y: t - t.amax(-1, keepdim=True)),
    "add_min": (lambda t, y: t + pypto.amin(t, -1, keepdim=True), lambda t, y: t + t.amin(-1, keepdim=True)),
    "softmax": (lambda t, y: pypto.softmax(t, -1), lambda t, y: torch.softmax(t, -1)),
    # across the rows of the block, whose last one may hold fewer valid rows than the tile
    "sub_colmax": (lambda t, y: t - pypto.amax(t, 0, keepdim=True), lambda t, y: t - t.amax(0, keepdim=True)),
    "center_cols": (lambda t, y: t - pypto.sum(t, 0, keepdim=True) * 0.125,
                    lambda t, y: t - t.sum(0, keepdim=True) * 0.125),
    "add_total": (lambda t, y: t + pypto.sum(pypto.sum(t, -1, keepdim=True), 0, keepdim=True) * 0.0625,
                  lambda t, y: t + t.sum() * 0.0625),
}


def _chain_kernel(cols, tile_rows, tile_cols, block, step, chain):
    """out[rows of block i] = chain(x, y) for every ``step``-th block of ``block`` rows."""
    def chain_loop(x: pypto.Tensor([D, cols], FP32), y: pypto.Tensor([D, cols], FP32),
                   out: pypto.Tensor([D, cols], FP32)):
        pypto.set_vec_tile_shapes(tile_rows, tile_cols)
        for i in pypto.loop(0, pypto.ceildiv(x.shape[0], block), step):
            rows = slice(i * block, (i + 1) * block)
            t, yb = x[rows, :], y[rows, :]
            for name in chain:
                t = LINKS[name][0](t, yb)
            out[rows, :] = t
    return pypto.jit(chain_loop)


@st.composite
def chain_kernels(draw):
    cols = draw(st.integers(1, 40))
    tile_cols = draw(st.integers(max(1, -(-cols // 4)), 16))  # at most four column tiles per row
    tile_rows = draw(st.integers(1, 4))
    block = tile_rows * draw(st.integers(1, 2))
    step = draw(st.sampled_from([1, 1, 2]))
    chain = draw(st.lists(st.sampled_from(sorted(LINKS)), min_size=2, max_size=5))
    sizes = draw(st.lists(st.integers(1, 23), min_size=1, max_size=2))  # DYNAMIC rows, tails likely
    return cols, tile_rows, tile_cols, block, step, tuple(chain), sizes


@settings(max_examples=40, deadline=None, derandomize=True,
          suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large])
@given(chain_kernels())
def test_random_loop_kernels(spec):
    cols, tile_rows, tile_cols, block, step, chain, sizes = spec
    kernel = _chain_kernel(cols, tile_rows, tile_cols, block, step, chain)
    for n in sizes:  # several sizes through one compiled version
        x, y = rand(n, cols, seed=n), rand(n, cols, seed=n + 1000)
        want = torch.full((n, cols), SENTINEL)
        for b in range(0, -(-n // block), step):
            rows = slice(b * block, (b + 1) * block)
            t = x[rows]
            for name in chain:
                t = LINKS[name][1](t, y[rows])
            want[rows] = t
        check_both(kernel, [x, y, filled(n, cols)], {2: want}, loose=True, batches=False)
    assert kernel.cache_info().misses == 1
