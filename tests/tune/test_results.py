"""Results: table, CSV, JSON persistence and resume; rendering and applying the best."""
import csv
import io
import json

import pytest
import torch

import pypto
import pypto.tune as tune
from pypto.tune.cli import main as cli_main, parse_shapes

from tune_kernels import exp_rows

SHAPE = {"x": (200, 128), "out": (200, 128)}
SPACE = tune.space(SHAPE, TILE=[16, 32, 64], options={"device_sched_mode": [0, 1]})


def test_csv_and_table_hold_every_trial():
    results = tune.sweep(exp_rows, tune.space(SHAPE, TILE=[2048, 32]), runner="inprocess")
    rows = list(csv.DictReader(io.StringIO(results.to_csv())))
    assert [r["TILE"] for r in rows] == ["2048", "32"]
    assert rows[0]["status"] == "failed" and rows[0]["error"].startswith("does not fit: op exp")
    assert rows[1]["status"] == "ok" and int(rows[1]["makespan_cycles"]) == results.best.makespan_cycles
    table = results.table()
    assert table.splitlines()[1].split()[:3] == [str(results.best.number), "32", "ok"]  # best first
    assert "failed" in table.splitlines()[2]


def test_resume_from_the_store_skips_finished_trials(tmp_path):
    store = str(tmp_path / "sweep.jsonl")
    ran = []
    first = tune.sweep(exp_rows, SPACE, budget=4, store=store, runner="inprocess",
                       on_trial=lambda r, _: ran.append(r.config))
    assert len(first) == 4 and len(open(store).read().splitlines()) == 1 + 4  # the key, then one line per trial
    resumed = []
    second = tune.sweep(exp_rows, SPACE, store=store, runner="inprocess",
                        on_trial=lambda r, _: resumed.append(r.config))
    assert len(resumed) == 2 and not any(c in ran for c in resumed)  # only the two never run
    assert len(second) == 6 and sorted(r.number for r in second) == list(range(6))
    assert {r.key for r in second} == {tune.TrialRecord(0, c).key for c in SPACE.grid()}
    loaded = tune.Results.load(store)
    assert [r.to_dict() for r in loaded] == [r.to_dict() for r in second]
    # a TPE sweep resumed from the same file has nothing left to run either
    again = []
    tune.sweep(exp_rows, SPACE, strategy="tpe", store=store, runner="inprocess",
               on_trial=lambda r, _: again.append(r))
    assert again == []


def test_a_results_file_of_another_format_is_refused(tmp_path):
    bad = tmp_path / "old.json"
    bad.write_text(json.dumps({"version": 99, "records": []}))
    with pytest.raises(pypto.PyptoError, match="version"):
        tune.Results.load(str(bad))


def test_render_and_apply_the_best():
    results = tune.sweep(exp_rows, tune.space(SHAPE, TILE=[16, 64], options={"device_sched_mode": [0, 2]}),
                         runner="inprocess")
    best = results.best
    text = tune.render(exp_rows, best)
    assert text.splitlines()[0] == f"@pypto.jit(runtime_options={{'device_sched_mode': {best.config['device_sched_mode']}}})"
    assert f"TILE: int = {best.config['TILE']}" in text
    assert f"pypto.set_vec_tile_shapes({best.config['TILE']}, 128)" in text
    tuned = tune.apply(exp_rows, best)
    x, out = torch.randn(*SHAPE["x"]), torch.empty(*SHAPE["out"])
    tuned(x, out)
    assert torch.allclose(out, torch.exp(x) + 1.0)
    assert tuned.last_run.timeline.stats["makespan_cycles"] == best.makespan_cycles
    assert tuned.cache_info().entries[0].key.endswith(f"TILE={best.config['TILE']}")
    with pytest.raises(pypto.PyptoError, match="no parameter 'TILES'"):
        tune.apply(exp_rows, {"TILES": 8})


def test_cli_prints_the_table_and_the_best(tmp_path, capsys):
    from pathlib import Path

    kernel_file = Path(__file__).with_name("tune_kernels.py")
    csv_path = tmp_path / "out.csv"
    code = cli_main([f"{kernel_file}:exp_rows", "--shape", "x=64,128", "--shape", "out=64,128",
                     "--param", "TILE=16,32", "--option", "device_sched_mode=0,1", "--inprocess",
                     "--csv", str(csv_path)])
    printed = capsys.readouterr().out
    assert code == 0 and "best: #" in printed and "@pypto.jit" in printed
    assert len(csv_path.read_text().splitlines()) == 5
    assert parse_shapes(["x=1,2", "out=1,2", "x=3,2", "out=3,2"]) == [{"x": (1, 2), "out": (1, 2)},
                                                                       {"x": (3, 2), "out": (3, 2)}]


def test_cli_checks_against_a_given_baseline(capsys):
    from pathlib import Path

    from pypto.tune.cli import run

    kernel = f"{Path(__file__).with_name('tune_kernels.py')}:first_rows"
    args = [kernel, "--shape", "x=64,128", "--shape", "out=64,128", "--param", "TILE=16,32", "--param", "STEP=1,2",
            "--inprocess"]
    assert run(args) == 2 and "have no default" in capsys.readouterr().err
    assert run(args + ["--baseline", "TILE=32", "--baseline", "STEP=1"]) == 0
    printed = capsys.readouterr().out
    assert "mismatch" in printed and "best: #" in printed


def test_cli_reports_a_bad_kernel_name_without_a_traceback(capsys):
    from pypto.tune.cli import run

    assert run(["no_colon_here", "--shape", "x=1"]) == 2
    err = capsys.readouterr().err
    assert "module:kernel or file.py:kernel" in err and "Traceback" not in err
