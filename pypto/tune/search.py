"""Search strategies: which configuration to try next.

A strategy answers `ask` (the next configuration, or None when it has nothing left) and learns
from `tell` (a finished `TrialRecord`). `GridSearch` walks the whole space; `RandomSearch` samples
it without repeats; `OptunaSearch` asks an optuna sampler (TPE by default), which needs far fewer
trials on a large space. Any object with these two methods can be passed to `sweep`.
"""

from __future__ import annotations

import random

from .space import Space, config_key
from .trial import TrialRecord


class GridSearch:
    """Every configuration of the space, in order (skipping finished ones when resuming). With a
    ``budget`` smaller than the space, the first ``budget`` configurations are spread over it
    (`spread`: every value of every name soon, not the first corner of the grid), then the rest
    follow in order."""

    def __init__(self, space: Space, done: set | None = None, budget: int | None = None, seed: int = 0):
        self._configs = spread(space, seed) if budget is not None and budget < space.size else space.grid()
        self._done = set(done or ())

    def ask(self) -> dict | None:
        for config in self._configs:
            key = config_key(config)
            if key not in self._done:
                self._done.add(key)
                return config
        return None

    def tell(self, record: TrialRecord) -> None:
        self._done.add(record.key)


def spread(space: Space, seed: int = 0):
    """The configurations of ``space``, the first ones spread over it: rounds of a Latin
    hypercube (each round lists every value of the name with the most values once, and every
    other name's values as evenly, shuffled per name), then whatever is left in grid order."""
    names = list(space.dims)
    values = list(space.dims.values())
    rng = random.Random(seed)
    seen: set = set()
    longest = max((len(v) for v in values), default=1)
    while len(seen) < space.size // 2:  # later rounds mostly hit seen points: finish in order
        columns = []
        for v in values:
            column = [i % len(v) for i in range(longest)]
            rng.shuffle(column)
            columns.append(column)
        fresh = 0
        for row in zip(*columns):
            if row not in seen:
                seen.add(row)
                fresh += 1
                yield {n: v[i] for n, v, i in zip(names, values, row)}
        if fresh == 0:
            break
    for config in space.grid():
        row = tuple(v.index(config[n]) for n, v in zip(names, values))
        if row not in seen:
            yield config


class RandomSearch(GridSearch):
    """Configurations drawn at random, each at most once (``seed`` makes the order repeatable)."""

    def __init__(self, space: Space, seed: int = 0, done: set | None = None):
        super().__init__(space, done)
        configs = list(space.grid())
        random.Random(seed).shuffle(configs)
        self._configs = iter(configs)


class OptunaSearch:
    """An optuna study minimising the makespan: TPE (seeded) unless ``sampler`` names another
    optuna sampler. Failed and mismatching trials are told as failed, so the sampler avoids them.
    A configuration it proposes again is answered from the finished trial, not re-run."""

    def __init__(self, space: Space, seed: int = 0, sampler=None, finished: list | None = None):
        import optuna

        optuna.logging.set_verbosity(optuna.logging.WARNING)
        self._optuna = optuna
        self.dims = space.dims
        self._dist = {name: optuna.distributions.CategoricalDistribution(list(range(len(values))))
                      for name, values in self.dims.items()}
        self.size = space.size
        # constant liar: trials asked but not yet told (in flight on Dask workers) count as
        # bad ones, so a batch of asks spreads out instead of proposing the same region
        self.study = optuna.create_study(direction="minimize",
                                         sampler=sampler or optuna.samplers.TPESampler(seed=seed, constant_liar=True))
        self._pending: dict = {}
        self._finished: dict = {}  # config key -> value (None: failed)
        for record in finished or ():
            self._finished[record.key] = _value(record)
            params = self._indices(record.config)
            if params is not None:
                self.study.add_trial(optuna.trial.create_trial(
                    params=params, distributions=self._dist, value=_value(record),
                    state=optuna.trial.TrialState.COMPLETE if _value(record) is not None
                    else optuna.trial.TrialState.FAIL))

    def _indices(self, config: dict):
        try:
            return {n: self.dims[n].index(config[n]) for n in self.dims}
        except (KeyError, ValueError):
            return None  # a record from another space

    def ask(self) -> dict | None:
        # a proposal already finished is answered at once; give up when the sampler keeps
        # proposing finished ones (the space is used up, or nearly)
        for _ in range(max(50, 2 * self.size)):
            if len(self._finished) + len(self._pending) >= self.size:
                return None
            trial = self.study.ask(self._dist)
            config = {n: self.dims[n][trial.params[n]] for n in self.dims}
            key = config_key(config)
            if key in self._finished or key in self._pending:
                self._tell(trial, self._finished.get(key))
                continue
            self._pending[key] = trial
            return config
        return None

    def tell(self, record: TrialRecord) -> None:
        trial = self._pending.pop(record.key, None)
        self._finished[record.key] = _value(record)
        if trial is not None:
            self._tell(trial, _value(record))

    def _tell(self, trial, value):
        if value is None:
            self.study.tell(trial, state=self._optuna.trial.TrialState.FAIL)
        else:
            self.study.tell(trial, value)


def _value(record: TrialRecord):
    return float(record.makespan_cycles) if record.ok and record.makespan_cycles is not None else None


def make_strategy(name_or_strategy, space: Space, seed: int = 0, finished: list | None = None,
                  budget: int | None = None):
    """``"grid"``, ``"random"``, ``"tpe"`` (optuna) or an object with ``ask``/``tell``."""
    from ..errors import OptionError

    done = {r.key for r in finished or ()}
    if not isinstance(name_or_strategy, str):
        if not (hasattr(name_or_strategy, "ask") and hasattr(name_or_strategy, "tell")):
            raise OptionError("a search strategy needs ask() and tell()", param="strategy",
                              expected="'grid', 'random', 'tpe' or an object with ask/tell",
                              got=type(name_or_strategy).__name__)
        return name_or_strategy
    if name_or_strategy == "grid":
        return GridSearch(space, done, budget, seed)
    if name_or_strategy == "random":
        return RandomSearch(space, seed, done)
    if name_or_strategy in ("tpe", "optuna"):
        return OptunaSearch(space, seed, finished=finished)
    raise OptionError(f"unknown search strategy {name_or_strategy!r}", param="strategy",
                      expected="'grid', 'random' or 'tpe'", got=repr(name_or_strategy))
