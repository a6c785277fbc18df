"""Search strategies find the known best configuration of a space."""
import torch

import pypto.tune as tune
from pypto.tune.search import GridSearch, OptunaSearch, RandomSearch
from pypto.tune.trial import TrialRecord

from tune_kernels import exp_rows

SHAPE = {"x": (256, 128), "out": (256, 128)}
OPTIONS = {"device_sched_mode": [0, 1, 2, 3], "launch_sched_aicpu_num": [1, 3]}


def brute_force_best(tiles):
    """The best (makespan, config) found by calling the kernel and re-simulating each option
    combination with RunRecord.simulate (the Tune tab's engine), independently of pypto.tune."""
    best = None
    x, out = torch.randn(*SHAPE["x"]), torch.empty(*SHAPE["out"])
    for tile in tiles:
        exp_rows(x, out, TILE=tile)
        run = exp_rows.last_run
        for mode in OPTIONS["device_sched_mode"]:
            for n in OPTIONS["launch_sched_aicpu_num"]:
                cycles = run.simulate({"device_sched_mode": mode, "launch_sched_aicpu_num": n}).stats["makespan_cycles"]
                if best is None or cycles < best[0]:
                    best = (cycles, {"TILE": tile, "device_sched_mode": mode, "launch_sched_aicpu_num": n})
    return best


def test_grid_and_tpe_find_the_known_best_of_a_kernel_space():
    tiles = [8, 16, 32, 64]
    cycles, config = brute_force_best(tiles)
    space = tune.space(SHAPE, TILE=tiles, options=OPTIONS)
    grid = tune.sweep(exp_rows, space, runner="inprocess")
    assert len(grid) == space.size == 32
    assert grid.best.makespan_cycles == cycles
    assert grid.best.config["TILE"] == config["TILE"]
    tpe = tune.sweep(exp_rows, space, strategy="tpe", budget=20, seed=0, runner="inprocess")
    assert len(tpe) == 20 and len({r.key for r in tpe}) == 20  # never the same configuration twice
    assert tpe.best.makespan_cycles == cycles


def _bowl(config):
    """A synthetic objective with one known minimum at a=7, b=2, c='y'."""
    a, b, c = config["a"], config.get("b", 2), config.get("c", "y")
    return (a - 7) ** 2 * 10 + (b - 2) ** 2 * 30 + (0 if c == "y" else 500) + 100


def _drive(strategy, budget):
    seen = []
    for n in range(budget):
        config = strategy.ask()
        if config is None:
            break
        seen.append(config)
        strategy.tell(TrialRecord(n, config, makespan_cycles=_bowl(config)))
    return seen


SYNTH = tune.space({"x": (1,)}, a=list(range(12)), b=list(range(6)), c=["x", "y", "z"])  # 216 points


def test_tpe_needs_fewer_trials_than_the_grid_on_a_synthetic_space():
    seen = _drive(OptunaSearch(SYNTH, seed=0), 80)
    assert len({str(sorted(c.items())) for c in seen}) == len(seen)
    assert min(map(_bowl, seen)) == 100  # the optimum, in 80 of 216 configurations
    grid = _drive(GridSearch(SYNTH), 1000)
    assert len(grid) == 216 and min(map(_bowl, grid)) == 100


def test_strategies_stop_when_the_space_is_used_up():
    small = tune.space({"x": (1,)}, a=[1, 2, 3])
    for strategy in (GridSearch(small), RandomSearch(small, seed=3), OptunaSearch(small, seed=1)):
        seen = _drive(strategy, 10)
        assert sorted(c["a"] for c in seen) == [1, 2, 3]


def test_a_custom_strategy_is_accepted():
    class Descending:
        def __init__(self):
            self.left = [64, 32, 16]
            self.told = []

        def ask(self):
            return {"TILE": self.left.pop(0)} if self.left else None

        def tell(self, record):
            self.told.append(record.config["TILE"])

    s = Descending()
    results = tune.sweep(exp_rows, tune.space(SHAPE, TILE=[16, 32, 64]), strategy=s, runner="inprocess")
    assert s.told == [64, 32, 16] == [r.config["TILE"] for r in results]
