"""The columnar simulator's public face: `Timeline.events` / `.deps` / `.aicpu` behave like the
lists they replace, the vectorised stats equal the reference computation over plain lists, the
compact root stream replays exactly like the tuple form, huge timelines draw merged bars, and a
simulation stays within its memory budget per task."""

from __future__ import annotations

import dataclasses
import gc
import tracemalloc

import pytest
import torch

import pypto
from pypto.runtime.eventlog import AicpuSpans, DepEdges, TaskEvents, merged_bars
from pypto.runtime.stream import RootStream
from pypto.runtime.timeline import AicpuEvent, TaskEvent

try:
    from tests.timing import _timing_checks as C
    from tests.timing import _timing_kernels as K
except ImportError:
    import _timing_checks as C
    import _timing_kernels as K

RUNNERS = {"chains": K.run_chains, "batch_lens": K.run_batch_lens, "count_loop": K.run_count_loop,
           "tails": K.run_tails, "gather_rows": K.run_gather_rows}


def _as_lists(tl):
    return dataclasses.replace(tl, events=list(tl.events), deps=list(tl.deps), aicpu=list(tl.aicpu))


@pytest.mark.parametrize("kernel", sorted(RUNNERS))
@pytest.mark.parametrize("opts", [{}, {"device_sched_mode": 3, "valid_shape_optimize": 1},
                                  {"stitch_function_max_num": 1, "device_sched_mode": 1}])
def test_vectorised_stats_equal_the_reference(kernel, opts):
    tl = RUNNERS[kernel]().simulate(opts)
    assert isinstance(tl.events, TaskEvents) and isinstance(tl.deps, DepEdges) and isinstance(tl.aicpu, AicpuSpans)
    plain = _as_lists(tl)
    assert plain.stats == tl.stats
    assert plain.critical_path_cycles == tl.critical_path_cycles
    C.check_invariants(tl)


def test_sequences_behave_like_lists():
    tl = K.run_chains(blocks=6).timeline
    ev, deps, spans = tl.events, tl.deps, tl.aicpu
    items = list(ev)
    assert len(items) == len(ev) > 0 and all(isinstance(e, TaskEvent) for e in items)
    assert ev[0] is items[0] and ev[-1] is items[-1] and ev[1:3] == items[1:3]  # made once, then kept
    assert ev == items and items == list(ev)
    with pytest.raises(IndexError):
        ev[len(ev)]
    assert all(isinstance(a, AicpuEvent) for a in spans) and len(list(spans)) == len(spans)
    assert [a.start for a in spans] == [a.start for a in _as_lists(tl).aicpu]
    assert all(isinstance(d, tuple) and len(d) == 3 for d in deps) and deps[0] == list(deps)[0]
    # the control thread's spans come in simulation order: stitch before its submit
    control = [a for a in spans if a.thread == "control"]
    assert control[0].name == "stitch" and any(a.name == "submit" for a in control)


def test_long_sequences_make_items_afresh(monkeypatch):
    import pypto.runtime.eventlog as L

    monkeypatch.setattr(L, "KEEP_ITEMS", 2)
    tl = K.run_chains(blocks=2).simulate()
    assert tl.events[0] == tl.events[0] and tl.events[0] is not tl.events[0]  # equal, not kept
    assert list(tl.events) == list(tl.events)


def test_root_stream_replays_like_the_tuple_form():
    record = K.run_batch_lens()
    stream = record.compiled.executor.last_stream
    assert isinstance(stream, RootStream)
    tuples = list(stream)
    assert sum(1 for t in tuples if t[0] == "root") == stream.roots
    from pypto.runtime.scheduler import simulate

    lowered = record.compiled.lowered
    from pypto.runtime.machine import A2A3

    for opts in ({}, {"device_sched_mode": 2, "stitch_function_max_num": 3}):
        a = simulate(lowered, stream, dict(opts), A2A3, lowered.memory_key)
        b = simulate(lowered, tuples, dict(opts), A2A3, lowered.memory_key)
        assert a.events == b.events and list(a.aicpu) == list(b.aicpu) and list(a.deps) == list(b.deps)


def test_root_stream_keeps_order_flushes_and_odd_values():
    s = RootStream()
    s.flush_marker()
    s.append_root(0, {"i": 3, "N": 64}, {"lens"}, False, {("lens", (0,)): 5})
    s.append_root(1, {"i": 4, "N": 64}, (), True)
    s.flush_marker()
    s.append_root(1, {"x": 2.5}, (), False)  # not an int: kept as given
    assert list(s) == [("flush",), ("root", 0, {"i": 3, "N": 64}, frozenset({"lens"}), False, {("lens", (0,)): 5}),
                       ("root", 1, {"i": 4, "N": 64}, frozenset(), True, None), ("flush",),
                       ("root", 1, {"x": 2.5}, frozenset(), False, None)]
    assert s.roots == 3 and len(s) == 5 and s.env(1) == {"i": 4, "N": 64}


def _flat(rows, cols, tile):
    @pypto.jit
    def flat(x: pypto.Tensor([rows, cols], pypto.DT_FP32), out: pypto.Tensor([rows, cols], pypto.DT_FP32)):
        pypto.set_vec_tile_shapes(*tile)
        out[:] = pypto.exp(x) + 1.0

    x = torch.randn(rows, cols)
    out = torch.empty_like(x)
    flat(x, out)
    torch.testing.assert_close(out, torch.exp(x) + 1.0)
    return flat, (x, out)


def test_huge_timelines_draw_merged_bars(monkeypatch):
    from pypto import display
    from pypto_lab.views import timeline as V

    kernel, _ = _flat(64, 1024, (1, 64))  # 1024 tasks
    tl = kernel.last_run.timeline
    tasks, spans = merged_bars(tl, tl.stats["makespan_cycles"] / 50)
    assert sum(c for *_, c in tasks) == len(tl.events) and sum(c for *_, c in spans) == len(tl.aicpu)
    assert len(tasks) < len(tl.events) and {b[0] for b in tasks} == {e.core for e in tl.events}
    # plain lists merge the same way (lanes may come in another order)
    plain = merged_bars(_as_lists(tl), tl.stats["makespan_cycles"] / 50)
    assert sorted(plain[0]) == sorted(tasks) and sorted(plain[1]) == sorted(spans)
    static = V.static_svg(tl, width=200)  # the lab's static fallback merges bars below a pixel
    assert 0 < static.count("<rect") < len(tl.events)
    monkeypatch.setattr(display, "MAX_BARS", 100)
    svg = display.timeline_svg(tl)
    assert 0 < svg.count("<rect") < len(tl.events) and "tasks" in svg
    monkeypatch.setattr(V, "MAX_INLINE_TASKS", 100)
    html = V.timeline_html(tl)
    assert "the interactive chart is in the lab" in html and "mountStatic" not in html and "<rect" in html


def test_memory_per_task_stays_small():
    """10k tasks: building and holding the timeline (and its stats) peaks well under 300 bytes
    per task (the object-per-task simulator this replaced peaked near 1.6 KB at 1M tasks)."""
    kernel, args = _flat(10, 16000, (1, 16))
    kernel.last_run.timeline.stats  # one-time costs (imports, cost tables) outside the measurement
    kernel(*args)
    gc.collect()
    tracemalloc.start()
    try:
        tl = kernel.last_run.timeline
        assert tl.stats["tasks"] == 10_000
        held, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    assert peak / 10_000 < 300 and held / 10_000 < 120, (held / 10_000, peak / 10_000)
