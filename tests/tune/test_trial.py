"""Trials: re-simulation instead of recompiling, the recorded figures, failures and the numbers check."""
import pytest
import torch

import pypto
import pypto.tune as tune
from pypto.options import OPTIONS
from pypto.runtime.machine import current_machine
from pypto.runtime.scheduler import Replayer

from tune_kernels import exp_rows, tile_dependent

SHAPE = {"x": (200, 128), "out": (200, 128)}


def test_replayer_gives_the_same_timeline_as_run_simulate():
    x, out = torch.randn(200, 128), torch.empty(200, 128)
    exp_rows(x, out)
    run = exp_rows.last_run
    c = run.compiled
    replayer = Replayer(c.lowered, c.executor.last_stream, c.lowered.memory_key)
    base = {n: c.options.get("runtime", n) for (g, n) in OPTIONS if g == "runtime"}
    for opts in ({"device_sched_mode": 1}, {"stitch_function_max_num": 2, "launch_sched_aicpu_num": 2},
                 {"device_sched_mode": 3}, {"device_sched_mode": 1}):  # the last repeats: reuse is clean
        want = run.simulate(opts).stats
        got = replayer.simulate({**base, **opts}, current_machine()).stats
        assert got == want


def test_runtime_only_changes_resimulate_without_compiling():
    space = tune.space(SHAPE, TILE=[16, 32], options={"device_sched_mode": [0, 1, 2, 3],
                                                      "stitch_function_max_num": [1, 128]})
    results = tune.sweep(exp_rows, space, runner="inprocess")
    assert len(results) == 16 and all(r.ok for r in results)
    assert results.evaluator.compiles == 2  # one per TILE: the 8 option combinations re-simulate
    assert sum(r.compiled for r in results) == 2
    # figures agree with the kernel's own call under the same options
    best = results.best
    x, out = torch.randn(200, 128), torch.empty(200, 128)
    runtime = {k: v for k, v in best.config.items() if k != "TILE"}
    exp_rows(x, out, TILE=best.config["TILE"])
    s = exp_rows.last_run.simulate(runtime).stats
    assert (best.makespan_cycles, best.critical_path_cycles, best.device_tasks, best.tasks) == \
        (s["makespan_cycles"], s["critical_path_cycles"], s["device_tasks"], s["tasks"])
    assert best.utilization_aiv == pytest.approx(s["utilization"]["AIV"])
    assert best.l2_hit_rate == pytest.approx(s["l2_hit_rate"])
    assert best.compile_seconds > 0 and best.ub_bytes > 0 and best.numbers_match is True


def test_invalid_candidates_are_recorded_and_skipped():
    space = tune.space(SHAPE, TILE=[2048, 32], options={"device_sched_mode": [0, 1]})
    results = tune.sweep(exp_rows, space, runner="inprocess")
    failed = results.failed
    assert [r.config["TILE"] for r in failed] == [2048]  # once, not once per option combination
    assert all(r.status == "failed" and r.error.startswith("does not fit") and "UB" in r.error for r in failed)
    assert [r.config["TILE"] for r in results.ok] == [32, 32]
    assert results.best.config["TILE"] == 32
    assert results.evaluator.compiles == 1  # the tile that cannot fit is never compiled (tests/tune/test_fit.py)
    assert len(results) == 3


def test_numbers_check_rejects_a_tile_that_changes_the_result():
    space = tune.space(SHAPE, TILE=[16, 32, 64])
    results = tune.sweep(tile_dependent, space, runner="inprocess")
    status = {r.config["TILE"]: (r.status, r.numbers_match) for r in results}
    assert status == {16: ("mismatch", False), 32: ("ok", True), 64: ("mismatch", False)}
    assert results.best.config == {"TILE": 32}  # mismatching trials are never ranked
    # the same tiles on a kernel whose numbers do not depend on them all pass
    assert all(r.numbers_match for r in tune.sweep(exp_rows, space, runner="inprocess"))


def test_space_rejects_unknown_options_and_bad_values():
    with pytest.raises(pypto.PyptoError, match="unknown option 'no_such_option'"):
        tune.space(SHAPE, options={"no_such_option": [1]})
    with pytest.raises(ValueError, match="device_sched_mode"):
        tune.space(SHAPE, options={"device_sched_mode": [0, 9]})
    with pytest.raises(ValueError, match="no candidate values for 'TILE'"):
        tune.space(SHAPE, TILE=[])
    with pytest.raises(ValueError, match=r"unknown dtype 'fp99' for tensor parameter 'x'"):
        tune.space(SHAPE, dtypes={"x": "fp99"})


def test_a_missing_shape_is_refused_before_any_trial_naming_the_parameter():
    ran = []
    with pytest.raises(pypto.PyptoError, match="no shape for tensor parameter 'out'"):
        tune.sweep(exp_rows, tune.space({"x": (8, 128)}, TILE=[32]), runner="inprocess",
                   on_trial=lambda r, _: ran.append(r))
    assert ran == []


def test_several_call_shapes_sum_their_figures():
    small, big = {"x": (64, 128), "out": (64, 128)}, {"x": (256, 128), "out": (256, 128)}
    one = [tune.sweep(exp_rows, tune.space(s, TILE=[32]), runner="inprocess")[0] for s in (small, big)]
    both = tune.sweep(exp_rows, tune.space([small, big], TILE=[32]), runner="inprocess")[0]
    assert both.makespan_cycles == one[0].makespan_cycles + one[1].makespan_cycles
    assert both.tasks == one[0].tasks + one[1].tasks


def test_kept_versions_are_bounded_and_the_users_kernel_untouched():
    x, out = torch.randn(8, 128), torch.empty(8, 128)
    exp_rows(x, out)
    before = (exp_rows.cache_info().misses, exp_rows.last_run)
    ev = tune.Evaluator(exp_rows, tune.space(SHAPE, TILE=[8, 16, 32]), max_versions=2)
    for tile in (8, 16, 32, 32, 8):  # 8 was dropped when 32 came: compiled again
        assert ev.evaluate({"TILE": tile}).ok
    assert ev.compiles == 4 and len(ev._versions) == 2
    assert (exp_rows.cache_info().misses, exp_rows.last_run) == before


def test_trials_of_the_baselines_compile_use_its_run_instead_of_compiling_again():
    """A runtime-only sweep of the defaults: the baseline's run (for the reference numbers) is the
    version every trial re-simulates, so the kernel runs once, not twice; the figures are those of
    a sweep that has to compile its own version (a torch baseline leaves nothing to reuse)."""
    space = tune.space(SHAPE, options={"device_sched_mode": [0, 1, 3], "launch_sched_aicpu_num": [1, 2]})
    ev = tune.Evaluator(exp_rows, space)
    real, calls = ev.kernel, []

    class Counting:  # the kernel's full runs (not the tile-fit estimate's trace-only calls)
        def __call__(self, *args, **kw):
            got = real(*args, **kw)
            if getattr(getattr(real.last_run.compiled, "executor", None), "last_stream", None) is not None:
                calls.append(kw)
            return got

        def __getattr__(self, name):
            return getattr(real, name)

    ev.kernel = Counting()
    got = [ev.evaluate(c, i) for i, c in enumerate(space.grid())]
    assert calls == [{}]  # the baseline's run only
    other = tune.Evaluator(exp_rows, space, baseline=lambda x, out: out.copy_(torch.exp(x) + 1.0))
    want = [other.evaluate(c, i) for i, c in enumerate(space.grid())]
    assert other.compiles == ev.compiles == 1
    figures = ("status", "makespan_cycles", "critical_path_cycles", "device_tasks", "tasks", "l2_hit_rate",
               "numbers_match", "ub_bytes")
    assert [{f: getattr(r, f) for f in figures} for r in got] == [{f: getattr(r, f) for f in figures} for r in want]
    assert all(r.ok and r.numbers_match for r in got)
    # a tile sweep: the default tile's trial is the baseline's run ({"TILE": 32} is the default,
    # the same compile as {}), kept until that trial comes, however late; the others compile
    space = tune.space(SHAPE, TILE=[16, 8, 32])
    ev = tune.Evaluator(exp_rows, space)
    real, calls = ev.kernel, []
    ev.kernel = Counting()
    recs = [ev.evaluate(c, i) for i, c in enumerate(space.grid())]
    assert all(r.ok and r.numbers_match for r in recs)
    assert calls == [{}, {"TILE": 16}, {"TILE": 8}] and ev.compiles == 3
    alone = tune.Evaluator(exp_rows, tune.space(SHAPE, TILE=[32]), baseline=lambda x, out: out.copy_(torch.exp(x) + 1.0))
    assert {f: getattr(recs[2], f) for f in figures} == {f: getattr(alone.evaluate({"TILE": 32}), f) for f in figures}
