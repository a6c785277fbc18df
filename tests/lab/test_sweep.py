"""The Sweep tab and its views, driven from Python (no browser)."""
import re

import pytest
import torch

import pypto
import pypto.tune as tune
from pypto_lab.views import sweep as sv
from pypto_lab.widgets import Dashboard
from pypto_lab.widgets.sweep import SweepPanel, call_shapes, default_space_text, parse_space_text


@pypto.jit
def rows(x: pypto.Tensor([pypto.DYNAMIC, 128], pypto.DT_FP32),
         out: pypto.Tensor([pypto.DYNAMIC, 128], pypto.DT_FP32), TILE: int = 32):
    pypto.set_vec_tile_shapes(TILE, 128)
    for b in pypto.loop(pypto.ceildiv(x.shape[0], TILE)):
        r = slice(b * TILE, (b + 1) * TILE)
        out[r, :] = pypto.exp(x[r, :]) * 2.0


@pytest.fixture(scope="module")
def called():
    x, out = torch.randn(160, 128), torch.empty(160, 128)
    rows(x, out)
    return rows


def test_space_text_and_call_shapes(called):
    assert call_shapes(called.last_run) == {"x": (160, 128), "out": (160, 128)}
    assert default_space_text(called).startswith("TILE=16,32,64; device_sched_mode=0,1,2,3")
    assert parse_space_text("TILE=8,16; device_sched_mode=0,2\npass.auto_mix_partition=0,1") == \
        ({"TILE": [8, 16]}, {"device_sched_mode": [0, 2], "pass.auto_mix_partition": [0, 1]})
    with pytest.raises(ValueError, match="expected name=v1,v2"):
        parse_space_text("TILE")


def test_sweep_tab_runs_and_shows_the_results(called):
    board = Dashboard(called)
    assert "Sweep" in board.titles
    panel = board.panel("sweep")
    assert isinstance(panel, SweepPanel) and panel.shapes == {"x": (160, 128), "out": (160, 128)}
    before = (called.cache_info().misses, called.last_run)
    panel.space_text.value = "TILE=16,32,4096; device_sched_mode=0,1"
    results = panel.start()
    assert (called.cache_info().misses, called.last_run) == before  # the user's kernel is untouched
    # the tile that does not fit fails once: its other option combination is not run
    assert panel.progress.value == panel.progress.max == 5
    assert panel.count.value == "5 / 5 trials, 1 not ok"
    # the table: one row per trial, best first, the best marked
    body = panel.table.value
    assert body.count("<tr>") == 6 and "★" in body and "does not fit: op exp" in body
    first_row = re.findall(r"<tr>(.*?)</tr>", body)[1]
    assert f">{results.best.number} ★<" in first_row
    panel.descending.value = True
    desc = re.findall(r"<tr>(.*?)</tr>", panel.table.value)
    worst = max(results.ok, key=lambda r: r.makespan_cycles)
    assert f">{worst.number}<" in desc[1] and any("★" in r for r in desc[2:5])  # failed ones stay last
    # one scatter per parameter, a dot per ok trial and a mark per failed one
    assert panel.scatters.value.count("<svg") == 2
    assert panel.scatters.value.count("<circle") == 2 * 4 and panel.scatters.value.count('class="failed"') == 2 * 1
    front = sv.pareto_front(results.ok, "compile_seconds")
    assert panel.pareto.value.count('class="front"') == len(front) >= 1
    panel.pareto_axis.value = "ub_bytes"
    assert "UB bytes" in panel.pareto.value
    # the best trial's timeline beside the call's own
    assert not panel.best_button.disabled
    panel.best_button.click()
    current, best = panel.compare.children
    assert current.timeline is called.last_run.timeline
    assert best.timeline.stats["makespan_cycles"] == results.best.makespan_cycles


def test_a_bad_space_is_a_message_not_an_exception(called):
    panel = SweepPanel(called)
    panel.space_text.value = "device_sched_mode=0,7"
    assert panel.start() is None
    assert "cannot sweep" in panel.message.value and "device_sched_mode" in panel.message.value


def test_pareto_front_keeps_only_undominated_trials():
    recs = [tune.TrialRecord(i, {"a": i}, makespan_cycles=m, compile_seconds=c)
            for i, (m, c) in enumerate([(100, 0.5), (90, 0.6), (95, 0.7), (80, 1.0), (120, 0.1), (80, 2.0)])]
    assert [r.number for r in sv.pareto_front(recs)] == [4, 0, 1, 3]
    results = tune.Results(recs)
    svg = sv.scatter_svg(results, "a")
    assert svg.startswith("<svg") and svg.count("<circle") == 6
    assert sv.pareto_svg(results).count('class="front"') == 4


def test_the_shapes_come_from_the_call_even_on_another_thread(called):
    import threading

    from pypto_lab.widgets.tune import TunePanel

    tune_tab = TunePanel(called.last_run)
    tune_tab.controls["stitch_function_max_num"].value = 2  # options changed in the dashboard
    tune_tab.run_sweep()
    built = []
    t = threading.Thread(target=lambda: built.append(SweepPanel(called)))  # a widget callback's thread
    t.start()
    t.join()
    panel = built[0]
    assert panel.shapes == {"x": (160, 128), "out": (160, 128)}
    panel.space_text.value = "TILE=16,32; device_sched_mode=0,1"
    results = panel.start()
    assert len(results) == 4 and all(r.ok for r in results)


def test_a_background_sweep_cancels_keeps_its_store_and_resumes(called, tmp_path):
    import threading

    panel = SweepPanel(called)
    panel.space_text.value = "TILE=16,32; device_sched_mode=0,1,2,3"
    panel.store.value = str(tmp_path / "tab.jsonl")
    seen = []

    def slow(record, results):  # the user presses cancel after the second trial
        seen.append(record.number)
        if len(seen) == 2:
            panel.cancel()
    real = panel._trial_done
    panel._trial_done = lambda r, res: (slow(r, res), real(r, res))
    thread = panel.start(background=True)
    assert isinstance(thread, threading.Thread) and not panel.cancel_button.disabled
    results = panel.wait(60)
    assert not thread.is_alive() and results.interrupted and len(results) == 2
    assert "cancelled after 2 trial(s)" in panel.message.value and panel.cancel_button.disabled
    panel._trial_done = real
    resumed = panel.start()
    assert len(resumed) == 8 and len({r.number for r in resumed}) == 8 and not resumed.interrupted
    front = resumed.pareto(("makespan_cycles", "device_tasks"))
    assert front and all(r.ok for r in front)
    panel.pareto_axis.value = "device_tasks"
    assert panel.pareto.value.count('class="front"') == len(sv.pareto_front(resumed.ok, "device_tasks"))
