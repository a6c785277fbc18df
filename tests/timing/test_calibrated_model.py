"""The structure of the calibrated timing model (issue 17): the cube streamed along K with
overlapping pipes, the K tile and its L1 step changing the time as the hardware's do, a chip-wide
HBM bandwidth, the stitch effect, determinism, and the machine's data files."""

from __future__ import annotations

import json

import numpy as np
import pytest
import torch

import pypto
from pypto.calibrate.cases import kernel_span_us, load_all
from pypto.calibrate.fit import BOUNDS, fitted_names
from pypto.calibrate.replay import timing_only
from pypto.runtime.machine import A2A3, MACHINES, PLATFORMS, platform_parameters

FP16 = pypto.DT_FP16


def _matmul(k0, k1, size=1024):
    @pypto.jit
    def mm(a: pypto.Tensor([size, size], FP16), b: pypto.Tensor([size, size], FP16)):
        pypto.set_cube_tile_shapes([128, 128], [k0, k1], [256, 256])
        return pypto.matmul(a, b, FP16)

    return mm


def _span(kernel, *args, machine=A2A3, **runtime):
    return timing_only(kernel, *args).simulate(machine, **runtime).stats["makespan_cycles"]


@pytest.fixture(scope="module")
def half_1024():
    return torch.empty(1024, 1024, dtype=torch.float16)


def test_cube_pipes_overlap_along_k(half_1024):
    tl = timing_only(_matmul(64, 256), half_1024, half_1024).simulate(A2A3)
    for e in tl.events:
        pipes = dict(e.pipes)
        assert {"MTE2", "MTE1", "M", "FIXPIPE"} <= set(pipes)
        # loads of K step i+1 run while the cube multiplies step i: the task is shorter than its
        # pipes' busy cycles one after the other, and at least as long as the busiest pipe
        assert max(pipes.values()) <= e.duration < sum(pipes.values())


def test_the_k_tile_and_its_l1_step_change_the_time(half_1024):
    a = half_1024
    t = {kt: _span(_matmul(*kt), a, a) for kt in ((32, 256), (64, 256), (128, 256), (64, 64))}
    assert len(set(t.values())) == len(t), t  # every tiling its own time
    # the guide's tiles are the fastest: a 128-deep K tile no longer double-buffers L0B (64 KB),
    # a 32-deep one pays the per-instruction costs twice as often
    assert t[(64, 256)] < t[(32, 256)] < t[(128, 256)]
    # kL1 = kL0 loads 128-byte row segments of A: whole L2 lines move for each ("big packets")
    assert t[(64, 256)] < t[(64, 64)]


def _copy_kernel(rows, cols, blocks):
    per = rows // blocks

    @pypto.jit
    def copy(x: pypto.Tensor([rows, cols], pypto.DT_FP32), y: pypto.Tensor([rows, cols], pypto.DT_FP32)):
        pypto.set_vec_tile_shapes(8, cols)
        for b in pypto.loop(blocks):
            y[b * per:(b + 1) * per, :] = x[b * per:(b + 1) * per, :] + 0.0

    return copy


def test_hbm_bandwidth_is_shared_by_the_whole_chip():
    rows, cols = 4096, 2048
    x = torch.empty(rows, cols)
    sim = timing_only(_copy_kernel(rows, cols, 4), x, x.clone())
    moved = 2 * rows * cols * 4  # read and written once
    capped = sim.simulate(A2A3)
    cycles = capped.stats["makespan_cycles"] - A2A3.launch_cycles
    assert moved / cycles <= A2A3.hbm_bw * 1.01  # never faster than the chip's HBM
    assert moved / cycles > 0.5 * A2A3.hbm_bw  # and bound by it here
    wider = sim.simulate(A2A3.with_(hbm_bw=2 * A2A3.hbm_bw))
    uncapped = sim.simulate(A2A3.with_(hbm_bw=0))
    # (past the cap, scheduling details move the makespan by a fraction of a percent either way)
    assert uncapped.stats["makespan_cycles"] <= 1.01 * wider.stats["makespan_cycles"]
    assert wider.stats["makespan_cycles"] < 0.8 * capped.stats["makespan_cycles"]


def test_a_matmul_assembled_into_an_output_is_one_cube_task():
    @pypto.jit
    def mm(a: pypto.Tensor([256, 128], pypto.DT_FP32), b: pypto.Tensor([128, 512], pypto.DT_FP32),
           out: pypto.Tensor([256, 1024], pypto.DT_FP32)):
        pypto.set_cube_tile_shapes([128, 128], [64, 128], [256, 256])
        out[:, 256:768] = pypto.matmul(a, b)

    a, b = torch.randn(256, 128), torch.randn(128, 512)
    out = torch.zeros(256, 1024)
    mm(a, b, out)
    torch.testing.assert_close(out[:, 256:768], a @ b, rtol=1e-4, atol=1e-4)
    assert (out[:, :256] == 0).all() and (out[:, 768:] == 0).all()
    assert {e.core_type for e in mm.last_run.timeline.events} == {"AIC"}


def test_simulations_are_deterministic():
    case = load_all()["ptoisa_fa_s0_128_s1_1024"]
    runs = [case.build().simulate(A2A3) for _ in range(2)]
    sim = case.build()
    runs += [sim.simulate(A2A3), sim.simulate(A2A3)]
    ref = runs[0].events
    for tl in runs[1:]:
        assert np.array_equal(tl.events.start, ref.start) and np.array_equal(tl.events.end, ref.end)
        assert np.array_equal(tl.events.core, ref.core)
    assert len({kernel_span_us(tl) for tl in runs}) == 1


def test_every_published_point_has_a_case():
    from pathlib import Path

    import pypto.calibrate as calibrate

    points = json.loads((Path(calibrate.__file__).parent / "points.json").read_text())
    cases = load_all()
    assert {p["id"] for p in points} == set(cases)
    for p in points:
        c = cases[p["id"]]
        assert c.published_us > 0 and c.source and c.how
        if p["unit"] == "us":
            assert c.published_us == pytest.approx(p["published"])


@pytest.mark.parametrize("platform", ["A2", "A3", "A5"])
def test_every_machine_parameter_has_a_source_and_a_label(platform):
    params = platform_parameters(platform)
    for name, entry in params.items():
        assert entry["label"] in ("measured", "fitted", "default"), name
        assert entry["source"] and entry["doc"] and "unit" in entry, name
    machine = MACHINES[platform]
    for name in fitted_names(machine):
        lo, hi, why = BOUNDS[name]
        assert lo <= getattr(machine, name) <= hi and why
    assert (PLATFORMS / f"{platform}.json").exists()
    text = machine.describe()
    # a parameter taken from the base platform says so ("[fitted (the A2's)]"); the A5 (Ascend 950)
    # has upstream's simulation figures of its own and no published measurement
    assert "[fitted" in text and ("[measured" in text or platform == "A5")


def test_stitching_many_roots_into_one_device_task_pays_off():
    @pypto.jit
    def rows(x: pypto.Tensor([64 * 32, 64], pypto.DT_FP32), y: pypto.Tensor([64 * 32, 64], pypto.DT_FP32)):
        pypto.set_vec_tile_shapes(32, 64)
        for b in pypto.loop(64):
            y[b * 32:(b + 1) * 32, :] = x[b * 32:(b + 1) * 32, :] * 2.0

    x = torch.empty(64 * 32, 64)
    sim = timing_only(rows, x, x.clone())
    one = sim.simulate(A2A3, stitch_function_max_num=1)
    many = sim.simulate(A2A3, stitch_function_max_num=64)
    assert one.device_tasks == 64 and many.device_tasks < 64 / 3
    # device tasks run one after another, each after a synchronisation on the device
    synced = (one.device_tasks - many.device_tasks) * A2A3.device_task_sync_cycles
    assert one.stats["makespan_cycles"] - many.stats["makespan_cycles"] >= 0.9 * synced
    assert one.stats["makespan_cycles"] > 2 * many.stats["makespan_cycles"]
    for tl in (one, many):  # no task of a device task starts before the one before has finished
        ev, first = tl.events, tl.events.dt_first
        dt_of = np.searchsorted(first, np.arange(len(ev.start)), "right") - 1
        for d in range(1, tl.device_tasks):
            assert ev.start[dt_of == d].min() >= ev.end[dt_of == d - 1].max()


def _fa_softmax_leaf(monkeypatch):
    """The fused online-softmax leaf of the unrolled flash-attention case (4 K/V tiles in one
    task) with the sizes and L2 hits the scheduler costs it with."""
    import pypto.runtime.scheduler as scheduler
    from pypto.calibrate.corpus import flash_attention

    seen = {}
    real = scheduler.leaf_schedule

    def spy(machine, leaf, sizes, l2, dynamic, *rest):
        seen.setdefault(leaf.name, (leaf, sizes, l2, dynamic))
        return real(machine, leaf, sizes, l2, dynamic, *rest)

    monkeypatch.setattr(scheduler, "leaf_schedule", spy)
    flash_attention.build_unrolled(128, 512).simulate(A2A3)
    (got,) = [v for k, v in seen.items() if "exp" in k and "amax" in k]
    return got


def test_the_scalar_unit_issues_ahead_of_the_pipes(monkeypatch):
    from pypto.runtime.costmodel import leaf_schedule

    leaf, sizes, l2, dynamic = _fa_softmax_leaf(monkeypatch)
    assert dynamic  # its offsets follow the loop index: dynamic-shape scalar code per op
    fixed = leaf_schedule(A2A3, leaf, sizes, l2, False)
    scalar = leaf_schedule(A2A3, leaf, sizes, l2, True)
    # the scalar cost is paid (S busy) but hidden behind the pipes: the next tile's load is
    # issued while this tile's vector ops still wait for their data
    assert scalar.busy["S"] > 0.1 * fixed.duration
    assert fixed.duration <= scalar.duration < fixed.duration + 0.25 * scalar.busy["S"]


def test_a_consumer_of_part_of_a_written_tile_hits_l2():
    from pypto.calibrate.corpus import flash_attention

    tl = flash_attention.build_unrolled(128, 1024).simulate(A2A3)
    halves = [e for e in tl.events if e.core_type == "AIV" and "amax" in e.leaf]
    assert len(halves) == 2  # the two vector cores each read one half of every S tile
    # each S tile was just written by the cube: both halves find it in L2, not only the one
    # whose origin is the tile's
    assert halves[0].l2_hits == halves[1].l2_hits == 1024 // 128


def _cache_update(blocks, block_size, tokens):
    @pypto.jit
    def update(cache_in: pypto.Tensor([blocks, block_size, 1, 128], pypto.DT_INT8),
               index: pypto.Tensor([tokens], pypto.DT_INT64), rows: pypto.Tensor([tokens, 128], pypto.DT_INT8),
               cache_out: pypto.Tensor([blocks, block_size, 1, 128], pypto.DT_INT8)):
        pypto.set_vec_tile_shapes(tokens, 1, 1, 128)
        idx = pypto.reshape(index, [tokens, 1], inplace=True)
        src = pypto.reshape(rows, [tokens, 1, 1, 128], inplace=True)
        cache_out.move(pypto.scatter_update(cache_in, -2, idx, src))

    return update


def _cache_update_call(blocks, stride, block_size=128, tokens=8):
    """The kernel and its arguments: 8 rows written at every ``stride``-th row of the cache."""
    cache = torch.zeros(blocks, block_size, 1, 128, dtype=torch.int8)
    index = torch.arange(tokens, dtype=torch.int64) * stride
    rows = torch.ones(tokens, 128, dtype=torch.int8)
    return _cache_update(blocks, block_size, tokens), cache, index, rows


def test_an_in_place_cache_update_moves_only_its_rows():
    # upstream's QuantIndexerProlog writes 8 rows of a 64k-row key cache, in place, the cache
    # passed as input and output: no task copies the cache
    kernel, cache, index, rows = _cache_update_call(512, 1000)
    tl = timing_only(kernel, cache, index, rows, cache).simulate(A2A3)
    assert [e.leaf for e in tl.events if "copy" in e.leaf] == []
    (update,) = [e for e in tl.events if "scatter_update" in e.leaf]
    assert update.duration < 2000  # the rows, not the 8 MB cache (~10^5 cycles at 128 B/cycle)
    # passed two different tensors, the output is a copy of the updated cache
    tl2 = timing_only(kernel, cache, index, rows, cache.clone()).simulate(A2A3)
    assert len([e for e in tl2.events if "copy" in e.leaf]) > 100
    # and the numbers are those of torch, either way
    out = cache.clone()
    kernel(out, index, rows, out)
    expected = cache.clone().view(-1, 128)
    expected[index] = rows
    assert torch.equal(out.view(-1, 128), expected)


def _skinny_weight_matmul(fmt):
    @pypto.jit
    def linear(x: pypto.Tensor([16, 1536], pypto.DT_INT8),
               w: pypto.Tensor([1536, 128], pypto.DT_INT8, format=fmt),
               y: pypto.Tensor([16, 128], pypto.DT_INT32)):
        pypto.set_cube_tile_shapes([16, 16], [128, 128], [128, 128])
        y[:] = pypto.matmul(x, w, pypto.DT_INT32)

    return linear


def test_an_nz_weight_moves_whole_fractal_blocks():
    x, w = torch.empty(16, 1536, dtype=torch.int8), torch.empty(1536, 128, dtype=torch.int8)
    y = torch.empty(16, 128, dtype=torch.int32)

    def load_cycles(fmt):
        tl = timing_only(_skinny_weight_matmul(fmt), x, w, y).simulate(A2A3)
        return sum(dict(e.pipes).get("MTE2", 0) for e in tl.events if e.core_type == "AIC"), \
            tl.stats["makespan_cycles"]

    (nd, nd_span), (nz, nz_span) = load_cycles(pypto.TileOpFormat.TILEOP_ND), load_cycles(pypto.TileOpFormat.TILEOP_NZ)
    # ND: each 128-byte row segment of a K step moves a 512-byte L2 line; NZ: contiguous blocks
    assert nz < 0.5 * nd
    assert nz_span < nd_span


def test_a_real_calls_timeline_sees_one_cache_passed_twice():
    kernel, cache, index, rows = _cache_update_call(64, 100)
    kernel(cache, index, rows, cache)
    assert not [e for e in kernel.last_run.timeline.events if "copy" in e.leaf]
    kernel(cache, index, rows, cache.clone())
    assert [e for e in kernel.last_run.timeline.events if "copy" in e.leaf]


def _tail_matmul(rows, width):
    """(rows, width) x (width, width) in bf16: the same bytes in and out for any width when
    rows * width is fixed; only the tail axis changes."""
    @pypto.jit
    def mm(a: pypto.Tensor([rows, width], pypto.DT_BF16), b: pypto.Tensor([width, width], pypto.DT_BF16),
           out: pypto.Tensor([rows, width], pypto.DT_BF16)):
        pypto.set_cube_tile_shapes([512, 512], [width, width], [width, width])
        out[:] = pypto.matmul(a, b, pypto.DT_BF16)

    def simulation():
        e = lambda *s: torch.empty(*s, dtype=torch.bfloat16)  # noqa: E731
        return timing_only(mm, e(rows, width), e(width, width), e(rows, width))

    return simulation


def _pipe_cycles(timeline, pipe):
    return sum(dict(e.pipes).get(pipe, 0) for e in timeline.events if e.core_type == "AIC")


def test_a_small_tail_axis_costs_a_burst_per_row():
    """ND cube operands and results move one DMA burst per row: a 16-wide bf16 tail (32-byte
    rows) pays the burst floor on MTE2 and FIXPIPE, a 64-wide one moving the same bytes does
    not; with the floor at one 32-byte block the two move at one bandwidth."""
    narrow, wide = _tail_matmul(16384 * 4, 16)(), _tail_matmul(16384, 64)()
    floor = A2A3.with_(nd_burst_bytes=128)
    flat = A2A3.with_(nd_burst_bytes=32)
    for pipe in ("MTE2", "FIXPIPE"):
        n_floor, w_floor = _pipe_cycles(narrow.simulate(floor), pipe), _pipe_cycles(wide.simulate(floor), pipe)
        n_flat, w_flat = _pipe_cycles(narrow.simulate(flat), pipe), _pipe_cycles(wide.simulate(flat), pipe)
        assert w_floor == w_flat, pipe  # 128-byte rows are at the floor: unchanged
        assert n_floor > 2 * n_flat, pipe  # 32-byte rows cost 128 each (plus each write's fixed latency)
        assert n_floor > 2 * w_floor, pipe
    assert narrow.simulate(floor).stats["makespan_cycles"] > narrow.simulate(flat).stats["makespan_cycles"]
