"""Regressions of issue 19: results a user can trust (keyed stores, numbers always checked, a
linear journal, unique trial numbers across resumes, a clean interrupt, no __main__ trap, a cheap
check, a grid budget spread over the space, failed compiles once, constraints)."""
import os
import subprocess
import sys
import textwrap

import pytest
import torch

import pypto
import pypto.tune as tune

from tune_kernels import exp_rows, first_rows, tile_dependent

SHAPE = {"x": (200, 128), "out": (200, 128)}
SPACE = tune.space(SHAPE, TILE=[16, 32, 64], options={"device_sched_mode": [0, 1]})


def test_a_store_of_other_shapes_or_another_kernel_is_refused(tmp_path):
    store = str(tmp_path / "s.jsonl")
    first = tune.sweep(exp_rows, SPACE, store=store, runner="inprocess")
    assert len(first) == 6
    other_shape = tune.space({"x": (64, 128), "out": (64, 128)}, TILE=[16, 32, 64],
                             options={"device_sched_mode": [0, 1]})
    with pytest.raises(pypto.PyptoError, match=r"holds another sweep: shapes .*\(200, 128\)"):
        tune.sweep(exp_rows, other_shape, store=store, runner="inprocess")
    with pytest.raises(pypto.PyptoError, match="kernel 'exp_rows' \\(this sweep: 'tile_dependent'\\)"):
        tune.sweep(tile_dependent, SPACE, store=store, runner="inprocess")
    # the refusals changed nothing: the same sweep resumes with nothing left to run
    again = tune.sweep(exp_rows, SPACE, store=store, runner="inprocess")
    assert [r.to_dict() for r in again] == [r.to_dict() for r in first]
    # another shape in its own store is a new sweep with its own best
    fresh = tune.sweep(exp_rows, other_shape, store=str(tmp_path / "small.jsonl"), runner="inprocess")
    assert len(fresh) == 6 and fresh.best.makespan_cycles < first.best.makespan_cycles


def test_numbers_are_always_checked_against_a_baseline():
    space = tune.space(SHAPE, TILE=[32], STEP=[1, 2])
    with pytest.raises(pypto.PyptoError, match=r"(?s)'TILE', 'STEP' have no default.*baseline="):
        tune.sweep(first_rows, space, runner="inprocess")
    checked = tune.sweep(first_rows, space, runner="inprocess", baseline={"TILE": 32, "STEP": 1})
    status = {r.config["STEP"]: (r.status, r.numbers_match) for r in checked}
    assert status == {1: ("ok", True), 2: ("mismatch", False)}  # half the rows unwritten never wins
    assert checked.best.config["STEP"] == 1
    by_torch = tune.sweep(first_rows, space, runner="inprocess",
                          baseline=lambda x, out: out.copy_(torch.exp(x) + 1.0))
    assert [r.status for r in by_torch] == ["ok", "mismatch"]
    with pytest.raises(pypto.PyptoError, match="baseline .* failed"):
        tune.sweep(first_rows, space, runner="inprocess", baseline={"TILE": 4096, "STEP": 1})


def test_the_store_is_an_append_only_journal(tmp_path):
    store = tmp_path / "s.jsonl"
    sizes, texts = [], []

    def watch(record, results):
        texts.append(store.read_bytes())

    tune.sweep(exp_rows, SPACE, store=str(store), runner="inprocess", on_trial=watch)
    for before, after in zip(texts, texts[1:]):
        assert after.startswith(before) and after.count(b"\n") == before.count(b"\n") + 1
    assert os.listdir(tmp_path) == ["s.jsonl"]
    # a torn last line (a write interrupted) is dropped, and the next trial starts a line of its own
    data = store.read_bytes()
    lines = data.splitlines(keepends=True)
    store.write_bytes(b"".join(lines[:-1]) + lines[-1][:20])
    resumed = tune.sweep(exp_rows, SPACE, store=str(store), runner="inprocess")
    assert len(resumed) == 6 and len(tune.Results.load(str(store))) == 6


def test_an_interrupted_sweep_says_so_and_resumes_with_new_numbers(tmp_path):
    store = str(tmp_path / "s.jsonl")

    def interrupt(record, results):
        if len(results) == 3:
            raise KeyboardInterrupt

    with pytest.raises(KeyboardInterrupt, match=r"interrupted after 3 trial\(s\).*store=.*to resume") as info:
        tune.sweep(exp_rows, SPACE, store=store, runner="inprocess", on_trial=interrupt)
    assert isinstance(info.value, tune.SweepInterrupted) and len(info.value.results) == 3
    assert info.value.__context__ is None or info.value.__suppress_context__
    assert os.listdir(tmp_path) == ["s.jsonl"]  # no temporary file left
    # trials in flight when it stopped leave gaps (here: number 3 never finished)
    lines = open(store).read().splitlines()
    import json
    records = [json.loads(line) for line in lines[1:]]
    records[-1]["number"] = 4
    with open(store, "w") as f:
        f.write("\n".join([lines[0], *map(json.dumps, records)]) + "\n")
    resumed = tune.sweep(exp_rows, SPACE, store=store, runner="inprocess")
    numbers = [r.number for r in resumed]
    assert len(resumed) == 6 and len(set(numbers)) == 6 and numbers[3:] == [5, 6, 7]


def test_a_script_without_the_main_guard_is_refused_before_any_worker_starts(tmp_path):
    script = tmp_path / "unguarded.py"
    script.write_text(textwrap.dedent('''
        import pypto
        import pypto.tune as tune

        ROWS = pypto.Tensor([pypto.DYNAMIC, 128], pypto.DT_FP32)

        @pypto.jit
        def twice(x: ROWS, out: ROWS, TILE: int = 32):
            pypto.set_vec_tile_shapes(TILE, 128)
            for b in pypto.loop(pypto.ceildiv(x.shape[0], TILE)):
                r = slice(b * TILE, (b + 1) * TILE)
                out[r, :] = x[r, :] * 2.0

        results = tune.sweep(twice, tune.space({"x": (64, 128), "out": (64, 128)}, TILE=[16, 32]), n_workers=1)
    '''))
    env = {**os.environ, "PYTHONPATH": os.path.dirname(os.path.dirname(pypto.__file__))}
    done = subprocess.run([sys.executable, str(script)], capture_output=True, text=True, timeout=120, env=env)
    assert done.returncode != 0
    assert "unguarded.py line 14 runs a Dask sweep at the top level" in done.stderr
    assert 'if __name__ == "__main__":' in done.stderr and "Nanny" not in done.stderr


def test_the_check_compares_written_outputs_exactly_first(monkeypatch):
    calls = []
    real = torch.allclose
    monkeypatch.setattr(torch, "allclose", lambda *a, **k: calls.append(1) or real(*a, **k))
    results = tune.sweep(exp_rows, SPACE, runner="inprocess")
    assert all(r.ok and r.numbers_match for r in results)
    assert calls == []  # equal results need no tolerance (and no clone of unchanged inputs)
    assert results.evaluator._reference[0][0] == [1]  # only `out` is compared
    assert all(r.check_seconds is not None for r in results)


def test_a_grid_budget_is_spread_over_the_space():
    space = tune.space(SHAPE, TILE=[16, 32, 64], options={"device_sched_mode": [0, 1, 2, 3]})
    results = tune.sweep(exp_rows, space, budget=6, runner="inprocess")
    assert len(results) == 6 and len({r.key for r in results}) == 6
    assert {r.config["TILE"] for r in results} == {16, 32, 64}
    assert {r.config["device_sched_mode"] for r in results} == {0, 1, 2, 3}
    full = tune.sweep(exp_rows, space, runner="inprocess")  # no budget: every configuration, in order
    assert [r.config for r in full] == list(space.grid())


def test_constraints_prune_before_compiling():
    space = tune.space(SHAPE, TILE=[8, 16, 32, 64], options={"device_sched_mode": [0, 1]},
                       constraints=["TILE * 128 * 4 * 2 <= UB // 16"])
    results = tune.sweep(exp_rows, space, runner="inprocess")
    ub = pypto.tune.space_memory()["UB"]
    allowed = [t for t in (8, 16, 32, 64) if t * 128 * 8 <= ub // 16]
    assert sorted({r.config["TILE"] for r in results}) == allowed
    assert results.evaluator.compiles == len(allowed)
    assert results.pruned == 2 * (4 - len(allowed))
    with pytest.raises(pypto.PyptoError, match="names BQ, not searched"):
        tune.space(SHAPE, TILE=[8], constraints=["BQ < 4"])
