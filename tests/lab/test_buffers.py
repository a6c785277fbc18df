"""Buffers over time: per-leaf occupancy from the buffer plan, per-core tracks over the
schedule, capacity flags, and the lab's view of them."""

from __future__ import annotations

import numpy as np
import pytest
import torch

import pypto
from pypto.runtime import buffers as B
from pypto_lab import views as V
from pypto_lab.widgets import Dashboard

D = pypto.DYNAMIC
FP32 = pypto.DT_FP32


@pypto.jit
def exp_add(x: pypto.Tensor([D, 64], FP32), y: pypto.Tensor([D, 64], FP32), out: pypto.Tensor([D, 64], FP32)):
    pypto.set_vec_tile_shapes(32, 64)
    for b in pypto.loop(pypto.ceildiv(x.shape[0], 32)):
        rows = slice(b * 32, (b + 1) * 32)
        out[rows, :] = pypto.exp(x[rows, :]) + y[rows, :]


@pytest.fixture(scope="module")
def run():
    from tests.golden.helper import assert_matches

    x, y, out = torch.randn(200, 64), torch.randn(200, 64), torch.empty(200, 64)
    exp_add(x, y, out)
    assert_matches(out, torch.exp(x) + y)
    return exp_add.last_run


def test_leaf_occupancy_follows_the_buffer_plan(run):
    leaf = next(iter(run.compiled.lowered.leaves.values()))
    occ = B.leaf_occupancy(leaf)
    assert occ.n_ops == len(leaf.ops)
    for i in range(occ.n_ops):
        want = sum(b.nbytes for b in leaf.buffers if b.mem == "UB" and b.first <= i <= b.last)
        assert occ.live["UB"][i] == want
        assert set(occ.names["UB"][i]) == {b.name for b in leaf.buffers if b.mem == "UB" and b.first <= i <= b.last}
    assert occ.footprint["UB"] == max(b.offset + b.nbytes for b in leaf.buffers if b.mem == "UB")


def test_core_tracks_cover_the_schedule(run):
    tl = run.timeline
    core = B.busiest_cores(tl)[0]
    tracks = B.core_tracks(tl, core)
    assert [t.mem for t in tracks] == ["UB"]  # a vector kernel holds UB only
    t = tracks[0]
    assert t.times[0] == 0 and t.times[-1] == tl.stats["makespan_cycles"]
    assert np.all(np.diff(t.times) >= 0) and len(t.times) == len(t.bytes) + 1
    ev = tl.events
    mine = [k for k in range(len(ev)) if ev.core_names[int(ev.core[k])] == core]
    assert set(t.task[t.task >= 0].tolist()) == set(mine)
    idle = t.task < 0
    assert np.all(t.bytes[idle] == 0) and t.peak <= t.capacity
    assert B.core_tracks(tl, "AIC99") == []


def test_over_capacity_is_flagged(run):
    tl = run.timeline
    leaves = list(run.compiled.lowered.leaves.values())
    assert B.over_capacity(leaves, tl.machine) == []
    tiny = tl.machine.with_(ub_bytes=1024)
    found = B.over_capacity(leaves, tiny)
    assert found and found[0][1] == "UB" and found[0][3] == 1024


def test_buffers_view_and_timeline_tab(run):
    tl = run.timeline
    html = V.buffers_html(tl)
    assert 'class="pypto-buffers"' in html and "stroke-dasharray" in html and "of 192.0 KB" in html
    leaf = next(iter(run.compiled.lowered.leaves))
    assert f"({leaf}) op 0" in html and "test_buffers.py:" in html  # tooltips name the task, op and kernel line
    board = Dashboard(exp_add)
    panel = board.panel("timeline")
    assert panel.buffers.value == ""  # drawn when the fold is opened
    panel.buffer_box.selected_index = 0
    assert 'class="pypto-buffers"' in panel.buffers.value


def test_timeline_payload_carries_buffer_tracks(run):
    tl = run.timeline
    meta, _ = V.swimlane_payload(tl)
    tracks = meta["buffers"]
    assert tracks["capacity"]["UB"] == tl.machine.capacity("UB")
    ev = tl.events
    ran = {ev.core_names[int(c)] for c in np.unique(ev.core)}
    for lane, mems in zip(meta["lanes"], tracks["lanes"]):
        assert bool(mems) == (lane["name"] in ran), lane  # a track under every core that ran a task
        for m in mems:
            assert m["mem"] == "UB" and 0 < m["peak"] <= m["plan"] <= tracks["capacity"]["UB"]
    leaves = run.compiled.lowered.leaves
    for name, prof in zip(meta["leaves"], tracks["profiles"]):
        occ = B.leaf_occupancy(leaves[name])
        assert prof["live"]["UB"] == occ.live["UB"].tolist() and prof["footprint"]["UB"] == occ.footprint["UB"]
        assert len(prof["ops"]) == len(leaves[name].ops) and any("test_buffers.py:" in s for s in prof["lines"])
    assert not tracks["over"]


def test_timeline_payload_flags_plans_over_capacity(run):
    tiny = run.simulate(machine=run.timeline.machine.with_(ub_bytes=1024))
    tracks = V.swimlane_payload(tiny)[0]["buffers"]
    assert tracks["over"] and all("over its capacity of 1.0 KB" in f for f in tracks["over"])
    assert any(m["plan"] > tracks["capacity"]["UB"] for mems in tracks["lanes"] for m in mems)
