"""Tiles that cannot fit the machine's local memories are rejected before compiling, once per
tile configuration (not per runtime-option combination), with the memory and the op in the
trial record; the estimate never rejects a tile the compiler would accept."""
import pytest
import torch

import pypto
import pypto.tune as tune
from pypto.passes.buffers import BufferOverflowError
from pypto.tune.runner import _Fitter, _Pruned
from pypto.tune.search import make_strategy
from pypto.tune.trial import Evaluator

from tune_kernels import exp_rows, mm_tiles

ROWS = {"x": (512, 128), "out": (512, 128)}
MATS = {"a": (256, 256), "b": (256, 256), "out": (256, 256)}


def _compiles(kernel, shapes, config) -> bool:
    args = [torch.randn(shapes[name]) for name in shapes]
    try:
        pypto.jit(kernel.fn)(*args, **config)
    except BufferOverflowError:
        return False
    return True


@pytest.mark.parametrize("kernel, shapes, space", [
    (exp_rows, ROWS, {"TILE": [64, 128, 256, 512]}),
    (mm_tiles, MATS, {"M0": [64, 256], "K0": [64, 256], "N0": [64, 256]}),
])
def test_the_estimate_rejects_exactly_what_the_compiler_rejects_here(kernel, shapes, space):
    sp = tune.space(shapes, **space)
    ev = Evaluator(kernel, sp)
    verdicts = {tuple(c.values()): (ev.fit(c) is None, _compiles(kernel, shapes, c)) for c in sp.grid()}
    # a rejection is always right (the compile fails too); on these kernels none is missed either
    assert all(not compiles for fits, compiles in verdicts.values() if not fits)
    assert {k for k, (fits, _) in verdicts.items() if not fits} == \
        {k for k, (_, compiles) in verdicts.items() if not compiles}
    assert any(not fits for fits, _ in verdicts.values()) and any(fits for fits, _ in verdicts.values())
    assert ev.compiles == 0  # the estimate traced, nothing compiled


def test_a_tile_that_cannot_fit_is_one_failed_trial_with_the_reason():
    space = tune.space(ROWS, TILE=[32, 256, 512], options={"device_sched_mode": [0, 1, 2, 3]})
    results = tune.sweep(exp_rows, space, runner="inprocess")
    failed = [r for r in results if not r.ok]
    assert sorted(r.config["TILE"] for r in failed) == [256, 512]  # one each, not one per sched mode
    assert len(results) == 4 + 2
    ub = pypto.tune.space_memory()["UB"]
    for r in failed:
        fit = r.extra["fit"]
        assert r.extra["stage"] == "fit" and fit["memory"] == "UB" and fit["capacity"] == ub
        assert fit["needed"] == 2 * r.config["TILE"] * 128 * 4 > ub and fit["op"] == "exp"
        assert r.error.startswith("does not fit: op exp") and f"{fit['needed']} bytes of UB" in r.error
        assert r.makespan_cycles is None and not r.compiled
    assert results.evaluator.compiles == 1  # TILE=32 only: the others were never compiled
    assert results.best.config["TILE"] == 32


def test_a_cluster_driver_sends_one_trial_of_a_tile_that_cannot_fit():
    # the driver asks for the next configurations before any result is back (trials in flight):
    # only the first of each tile that cannot fit is handed out
    space = tune.space(ROWS, TILE=[32, 512], options={"device_sched_mode": [0, 1, 2, 3]})
    chosen = _Pruned(make_strategy("grid", space, 0), space, fit=_Fitter(exp_rows, space, 0, None))
    handed = []
    while (config := chosen.ask()) is not None:
        handed.append(config)
    assert [c["TILE"] for c in handed] == [32, 32, 32, 32, 512]


def test_a_worker_does_not_trace_again_a_tile_the_driver_found_to_fit(monkeypatch):
    # a Dask sweep's driver traces each new tile once (`_Pruned`); the parts it found to fit go
    # with the batch, so the worker compiles them without tracing them a second time
    from pypto.tune import runner
    from pypto.tune.source import KernelSource
    from pypto.tune.space import compile_part, config_key

    space = tune.space(ROWS, TILE=[32, 64, 512])
    fitter = _Fitter(exp_rows, space, 0, None)
    configs = list(space.grid())
    assert [fitter(c) is None for c in configs] == [True, True, False]
    parts = [config_key(compile_part(c)) for c in configs]
    fitted = [p for p in parts if fitter.fits(p)]
    assert fitted == parts[:2]  # the tile that cannot fit is never passed on as fitting

    traced = []
    real = Evaluator._fit
    monkeypatch.setattr(Evaluator, "_fit", lambda self, config: traced.append(config["TILE"]) or real(self, config))
    monkeypatch.setattr(runner, "_EVALUATORS", {})
    records, _, outputs = runner.run_trials(KernelSource.of(exp_rows), space.to_dict(), list(enumerate(configs)),
                                            fitted=fitted)
    assert traced == [512]  # only the tile the driver did not vouch for
    alone = Evaluator(exp_rows, space)
    for record, config in zip(records, configs):  # the same records as a worker that traced every tile
        want = alone.evaluate(config, record.number)
        assert (record.status, record.makespan_cycles, record.extra.get("stage")) == \
            (want.status, want.makespan_cycles, want.extra.get("stage"))
    assert [r.status for r in records] == ["ok", "ok", "failed"]
    # the numbers of the two that ran are compared on the driver, with the baseline it runs
    assert [out.part for out in outputs] == parts[:2]
    assert [alone.check_outputs(out)[0] for out in outputs] == [True, True]
