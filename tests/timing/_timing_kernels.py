"""Kernels the timing tests simulate, each built for one runtime behaviour, and small runners that
call them on fixed data (checking the numbers) and return the kernel's RunRecord."""

from __future__ import annotations

import torch

import pypto

D = pypto.DYNAMIC
FP32 = pypto.DT_FP32
INT32 = pypto.DT_INT32


def _rand(*shape, seed=0, scale=1.0):
    g = torch.Generator().manual_seed(seed)
    return torch.randn(*shape, generator=g, dtype=torch.float32) * scale


# ---- producer -> consumer chains: y = exp(x block) on AIV, then y @ w on AIC ------------------------
# The consumer is a matmul on the cube, so y cannot stay in UB: it is written to GM by one task
# and read back by another. Each loop iteration is an independent chain.

CH_R, CH_C = 64, 64


@pypto.jit
def chains(x: pypto.Tensor([D, CH_C], FP32), w: pypto.Tensor([CH_C, CH_C], FP32),
           out: pypto.Tensor([D, CH_C], FP32)):
    pypto.set_vec_tile_shapes(CH_R, CH_C)
    pypto.set_cube_tile_shapes([CH_R, CH_R], [CH_C, CH_C], [CH_C, CH_C])
    for b in pypto.loop(x.shape[0] // CH_R):
        y = pypto.exp(x[b * CH_R:(b + 1) * CH_R, :])
        out[b * CH_R:(b + 1) * CH_R, :] = pypto.matmul(y, w)


def run_chains(blocks=48):
    x, w = _rand(CH_R * blocks, CH_C, seed=1, scale=0.1), _rand(CH_C, CH_C, seed=2, scale=0.1)
    out = torch.zeros(CH_R * blocks, CH_C)
    chains(x, w, out)
    torch.testing.assert_close(out, torch.exp(x) @ w, rtol=1e-4, atol=1e-4)
    return chains.last_run


# ---- independent tiles, no loop: one root, `tiles` ready tasks at once ---------------------------------

@pypto.jit
def wide(x: pypto.Tensor([D, 64], FP32), out: pypto.Tensor([D, 64], FP32)):
    pypto.set_vec_tile_shapes(16, 64)
    out[:] = pypto.exp(x) + 1.0


def run_wide(tiles=48):
    x = _rand(16 * tiles, 64, seed=3)
    out = torch.zeros_like(x)
    wide(x, out)
    torch.testing.assert_close(out, torch.exp(x) + 1.0)
    return wide.last_run


# ---- a 16-iteration loop of row blocks (one root instance per iteration) -----------------------------

LOOP_R = 128


def _rows_body(x, out):
    pypto.set_vec_tile_shapes(16, 64)
    for b in pypto.loop(x.shape[0] // LOOP_R):
        out[b * LOOP_R:(b + 1) * LOOP_R, :] = pypto.exp(x[b * LOOP_R:(b + 1) * LOOP_R, :]) + 1.0


@pypto.jit
def rows(x: pypto.Tensor([D, 64], FP32), out: pypto.Tensor([D, 64], FP32)):
    _rows_body(x, out)


@pypto.jit(runtime_options={"stitch_function_max_num": 2})
def rows_stitch2(x: pypto.Tensor([D, 64], FP32), out: pypto.Tensor([D, 64], FP32)):
    _rows_body(x, out)


@pypto.jit
def rows_parallel(x: pypto.Tensor([D, 64], FP32), out: pypto.Tensor([D, 64], FP32)):
    pypto.set_vec_tile_shapes(16, 64)
    for b in pypto.loop(x.shape[0] // LOOP_R, parallel=True):
        out[b * LOOP_R:(b + 1) * LOOP_R, :] = pypto.exp(x[b * LOOP_R:(b + 1) * LOOP_R, :]) + 1.0


def run_rows(kernel=rows, iterations=16):
    x = _rand(LOOP_R * iterations, 64, seed=4)
    out = torch.zeros_like(x)
    kernel(x, out)
    torch.testing.assert_close(out, torch.exp(x) + 1.0)
    return kernel.last_run


# ---- control flow that reads tensor elements, after device work in the same call ---------------------

def _count_body(x, lens, y, out):
    pypto.set_vec_tile_shapes(16, 64)
    y[:] = pypto.exp(x) * 2.0  # device work the control flow would wait for
    n = lens[0]
    for i in pypto.loop(n):
        out[i * 16:(i + 1) * 16, :] = x[i * 16:(i + 1) * 16, :] + 1.0


@pypto.jit
def count_loop(x: pypto.Tensor([D, 64], FP32), lens: pypto.Tensor([D], INT32),
               y: pypto.Tensor([D, 64], FP32), out: pypto.Tensor([D, 64], FP32)):
    _count_body(x, lens, y, out)


@pypto.jit(runtime_options={"ready_on_host_tensors": ["lens"]})
def count_loop_host(x: pypto.Tensor([D, 64], FP32), lens: pypto.Tensor([D], INT32),
                    y: pypto.Tensor([D, 64], FP32), out: pypto.Tensor([D, 64], FP32)):
    _count_body(x, lens, y, out)


def run_count_loop(kernel=count_loop, n=8):
    x = _rand(256, 64, seed=5)
    y, out = torch.zeros_like(x), torch.zeros_like(x)
    lens = torch.tensor([n], dtype=torch.int32)
    kernel(x, lens, y, out)
    torch.testing.assert_close(y, torch.exp(x) * 2.0)
    want = torch.zeros_like(x)
    want[:16 * n] = x[:16 * n] + 1.0
    torch.testing.assert_close(out, want)
    return kernel.last_run


MAXS, HD = 16, 64


@pypto.jit
def batch_lens(x: pypto.Tensor([D, MAXS, HD], FP32), lens: pypto.Tensor([D], INT32),
               y: pypto.Tensor([D, MAXS, HD], FP32), out: pypto.Tensor([D, MAXS, HD], FP32)):
    pypto.set_vec_tile_shapes(1, 4, HD)
    y[:] = pypto.exp(x)
    for b in pypto.loop(x.shape[0]):
        for s in pypto.loop(lens[b]):  # per-batch length as a loop bound
            out[b:b + 1, s:s + 1, :] = y[b:b + 1, s:s + 1, :] * 2.0


BATCH_LENS = [3, 16, 7, 0, 10, 5]


def run_batch_lens():
    B = len(BATCH_LENS)
    x = _rand(B, MAXS, HD, seed=6)
    lens = torch.tensor(BATCH_LENS, dtype=torch.int32)
    y, out = torch.zeros_like(x), torch.zeros_like(x)
    batch_lens(x, lens, y, out)
    want = torch.zeros_like(x)
    for b, n in enumerate(BATCH_LENS):
        want[b, :n] = torch.exp(x[b, :n]) * 2.0
    torch.testing.assert_close(out, want)
    return batch_lens.last_run


# ---- tails in both dims: [100, 70] with [16, 32] tiles -> 6 x 2 full tiles, 9 partial ones ----------

@pypto.jit
def tails(x: pypto.Tensor([D, D], FP32), out: pypto.Tensor([D, D], FP32)):
    pypto.set_vec_tile_shapes(16, 32)
    out[:] = pypto.exp(x) * 2.0 + 1.0


TAILS_SHAPE = (100, 70)
TAILS_MAIN, TAILS_TAIL = 6 * 2, 7 * 3 - 6 * 2


def run_tails():
    x = _rand(*TAILS_SHAPE, seed=7)
    out = torch.zeros_like(x)
    tails(x, out)
    torch.testing.assert_close(out, torch.exp(x) * 2.0 + 1.0)
    return tails.last_run


def executed_tiles(record) -> int:
    """Tile instances the functional executor ran for the call behind ``record``."""
    done, _ = record.compiled.executor.last
    return sum(int(t.points.shape[0]) for dt in done for t in dt.tasks)


# ---- written data and L2 capacity: fill y, then read it back tile by tile in a loop ------------------

def make_fill_then_read(n):
    @pypto.jit
    def fill_then_read(y: pypto.Tensor([n, 64], FP32), out: pypto.Tensor([n, 64], FP32)):
        pypto.set_vec_tile_shapes(64, 64)
        y[:] = pypto.full([n, 64], 3.0, FP32)  # writes only: n * 256 bytes
        for i in pypto.loop(n // 64):
            out[i * 64:(i + 1) * 64, :] = y[i * 64:(i + 1) * 64, :] + 1.0

    y, out = torch.zeros(n, 64), torch.zeros(n, 64)
    fill_then_read(y, out)
    assert torch.all(y == 3.0) and torch.all(out == 4.0)
    return fill_then_read.last_run


# ---- tensor elements in a view's valid shape or offset (not only in loop bounds) ----------------------

@pypto.jit
def gather_rows(x: pypto.Tensor([D, 64], FP32), idx: pypto.Tensor([D], INT32),
                y: pypto.Tensor([D, 64], FP32), out: pypto.Tensor([D, 64], FP32)):
    pypto.set_vec_tile_shapes(16, 64)
    y[:] = pypto.exp(x)
    for b in pypto.loop(idx.shape[0]):
        r = idx[b]  # a view offset read from a tensor
        out[b * 16:(b + 1) * 16, :] = pypto.view(x, [16, 64], [r * 16, 0]) + 1.0


def run_gather_rows():
    x = _rand(128, 64, seed=8)
    idx = torch.tensor([3, 0, 7, 1], dtype=torch.int32)
    y, out = torch.zeros_like(x), torch.zeros(64, 64)
    gather_rows(x, idx, y, out)
    want = torch.cat([x[16 * int(i):16 * int(i) + 16] + 1.0 for i in idx])
    torch.testing.assert_close(out, want)
    return gather_rows.last_run
