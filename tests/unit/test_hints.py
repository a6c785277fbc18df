"""`pypto.hints`: GM round trips between leaves that could fuse, leaves with idle pipes, cores
left idle by the tile grid, computed from real compiled kernels and their simulated timelines."""

import pytest
import torch

import pypto
from pypto import hints as H

FP32 = pypto.DT_FP32


@pypto.jit
def two_passes(x: pypto.Tensor([pypto.DYNAMIC, 64], FP32), tmp: pypto.Tensor([pypto.DYNAMIC, 64], FP32),
               out: pypto.Tensor([pypto.DYNAMIC, 64], FP32)):
    pypto.set_vec_tile_shapes(16, 64)
    for b in pypto.loop(pypto.ceildiv(x.shape[0], 16)):  # stores tmp ...
        tmp[b * 16:(b + 1) * 16, :] = x[b * 16:(b + 1) * 16, :] * 2.0
    for b in pypto.loop(pypto.ceildiv(x.shape[0], 16)):  # ... and loads it straight back
        out[b * 16:(b + 1) * 16, :] = pypto.exp(tmp[b * 16:(b + 1) * 16, :])


@pypto.jit
def fused(x: pypto.Tensor([pypto.DYNAMIC, 64], FP32), out: pypto.Tensor([pypto.DYNAMIC, 64], FP32)):
    pypto.set_vec_tile_shapes(16, 64)
    for b in pypto.loop(pypto.ceildiv(x.shape[0], 16)):
        out[b * 16:(b + 1) * 16, :] = pypto.exp(x[b * 16:(b + 1) * 16, :] * 2.0)


@pytest.fixture(scope="module")
def runs():
    x = torch.randn(64, 64, generator=torch.Generator().manual_seed(0))
    tmp, out, out2 = torch.empty(64, 64), torch.empty(64, 64), torch.empty(64, 64)
    two_passes(x, tmp, out)
    fused(x, out2)
    torch.testing.assert_close(out, torch.exp(x * 2.0))
    torch.testing.assert_close(out2, out)
    return two_passes.last_run, fused.last_run


def test_a_value_stored_and_loaded_back_is_a_round_trip(runs):
    split, one = runs
    trips = H.gm_round_trips(split.compiled)
    assert len(trips) == 1
    hint = trips[0]
    assert hint.kind == "gm_round_trip" and "%tmp goes UB -> GM -> UB" in hint.title
    first, second = hint.leaves
    assert first != second and "exp" in second and "(AIV)" in hint.title
    assert "4,096 B per tile" in hint.detail  # 16 x 64 fp32
    assert "also a kernel output" in hint.detail  # tmp is a parameter: only the load is avoidable
    assert H.gm_round_trips(one.compiled) == []  # fused: nothing goes through GM in between


def test_idle_pipes_compare_the_busiest_pipe_with_the_leafs_time(runs, monkeypatch):
    tl = runs[0].timeline
    per_leaf = {}
    for e in tl.events:
        total, pipes = per_leaf.setdefault(e.leaf, [0, {}])
        per_leaf[e.leaf][0] += e.duration
        for p, busy in e.pipes:
            pipes[p] = pipes.get(p, 0) + busy
    shares = {leaf: max(p.values()) / total for leaf, (total, p) in per_leaf.items()}
    monkeypatch.setattr(H, "PIPE_BUSY_BELOW", max(shares.values()) + 0.01)
    flagged = H.idle_pipes(tl)
    assert sorted(h.leaves[0] for h in flagged) == sorted(shares)
    for h in flagged:
        assert f"{shares[h.leaves[0]]:.0%} of the leaf's time" in h.title
    monkeypatch.setattr(H, "PIPE_BUSY_BELOW", min(shares.values()))
    assert all(h.leaves[0] != min(shares, key=shares.get) for h in H.idle_pipes(tl))


def test_idle_cores_count_the_cores_that_ran_a_task(runs):
    tl = runs[1].timeline
    used = {e.core for e in tl.events}
    [hint] = H.idle_cores(tl)
    assert hint.title == f"only {len(used)} of {tl.machine.aiv_cores} AIV cores ran a task"
    assert f"{len(tl.events)} AIV task(s)" in hint.detail
    kinds = [h.kind for h in H.kernel_hints(runs[1].compiled, tl)]
    # one-tile tasks wait on the GM latency (no pipe is busy then): idle pipes may be flagged too
    assert kinds[-1] == "idle_cores" and set(kinds) <= {"idle_pipes", "idle_cores"}
