"""Running a sweep: trials in this process, or on a Dask cluster (an embedded ``LocalCluster`` of
processes by default, or any scheduler by address). On Dask the kernel travels by its source
(`KernelSource`) and each worker keeps its own compiled versions; results stream back as they
finish (``as_completed``); a trial whose worker died is run again (Dask reschedules it, and
``retries`` covers errors raised by the trial itself)."""

from __future__ import annotations

import os
import time

from .results import Results
from .search import make_strategy
from .space import Space
from .source import KernelSource
from .trial import FAILED, Evaluator, TrialRecord

_EVALUATORS: dict = {}  # on a worker: (source, space, seed) -> Evaluator, kept between trials
_KEEP_EVALUATORS = 4


def run_trials(source: KernelSource, space: dict, numbered: list, seed: int = 0) -> list:
    """Trials on a worker: load the kernel by its source (once per process) and evaluate each
    ``(number, config)`` of ``numbered``; the worker keeps its compiled versions between calls."""
    import json

    key = (source, json.dumps(space, sort_keys=True), seed)
    evaluator = _EVALUATORS.get(key)
    if evaluator is None:
        while len(_EVALUATORS) >= _KEEP_EVALUATORS:  # a long-lived worker serves many sweeps
            _EVALUATORS.pop(next(iter(_EVALUATORS)))
        evaluator = _EVALUATORS[key] = Evaluator(source.load(), Space.from_dict(space), seed)
    return [evaluator.evaluate(config, number) for number, config in numbered]


class InProcessRunner:
    """Trials one after another in this process (``evaluator`` keeps the compiled versions; the
    lab re-simulates the best trial's timeline from it)."""

    def __init__(self, kernel, space: Space, seed: int = 0):
        self.evaluator = Evaluator(kernel, space, seed)

    def run(self, strategy, results: Results, budget: int | None, deadline: float | None, on_trial) -> None:
        number = len(results)
        while (budget is None or number < budget) and (deadline is None or time.monotonic() < deadline):
            config = strategy.ask()
            if config is None:
                break
            record = self.evaluator.evaluate(config, number)
            number += 1
            _finish(record, strategy, results, on_trial)

    def close(self) -> None:
        pass


class DaskRunner:
    """Trials on Dask workers. ``scheduler_address`` (``tcp://host:8786``) joins a running cluster;
    without it an embedded ``LocalCluster(processes=True)`` of ``n_workers`` single-threaded
    workers (default: one per core) is started and closed with the runner. ``client`` reuses an
    existing ``distributed.Client``. At most ``in_flight`` trials (default twice the workers) are
    submitted ahead, so a sampler learns from results as they come."""

    def __init__(self, source: KernelSource, space: Space, seed: int = 0, scheduler_address: str | None = None,
                 n_workers: int | None = None, client=None, retries: int = 2, in_flight: int | None = None,
                 chunk: int = 8):
        from distributed import Client, LocalCluster

        self.source, self.space, self.seed, self.retries = source, space, seed, retries
        self._own = []
        if client is None:
            if scheduler_address:
                client = Client(scheduler_address)
            else:
                cluster = LocalCluster(n_workers=n_workers or os.cpu_count() or 1, threads_per_worker=1,
                                       processes=True, dashboard_address=None)
                client = Client(cluster)
                self._own.append(cluster)
            self._own.insert(0, client)
        self.client = client
        self.workers = max(1, len(client.scheduler_info().get("workers", {})) or (n_workers or 1))
        self.in_flight = in_flight or 2 * self.workers
        self.chunk = max(1, chunk)

    def run(self, strategy, results: Results, budget: int | None, deadline: float | None, on_trial) -> None:
        from distributed import as_completed

        space = self.space.to_dict()
        number = len(results)
        pending = as_completed()
        batches: dict = {}
        # a few trials per Dask task amortise its overhead (a re-simulation takes milliseconds);
        # never more than an even share of what is left, so every worker gets some
        left = (self.space.size if budget is None else min(budget, self.space.size)) - number
        chunk = max(1, min(self.chunk, left // (2 * self.workers)))

        def submit() -> bool:
            nonlocal number
            numbered = []
            while len(numbered) < chunk:
                if (budget is not None and number >= budget) or (deadline is not None and time.monotonic() >= deadline):
                    break
                config = strategy.ask()
                if config is None:
                    break
                numbered.append((number, config))
                number += 1
            if not numbered:
                return False
            future = self.client.submit(run_trials, self.source, space, numbered, self.seed, pure=False,
                                        retries=self.retries, key=f"pypto-tune-{numbered[0][0]}-{os.urandom(4).hex()}")
            batches[future.key] = numbered
            pending.add(future)
            return True

        while len(batches) < self.in_flight and submit():
            pass
        for future in pending:
            numbered = batches.pop(future.key)
            try:
                records = future.result()
            except Exception as e:  # noqa: BLE001 - e.g. KilledWorker after every retry: recorded
                records = [TrialRecord(n, config, status=FAILED, error=f"{type(e).__name__}: {e}")
                           for n, config in numbered]
            for record in records:
                _finish(record, strategy, results, on_trial)
            while len(batches) < self.in_flight and submit():
                pass

    def close(self) -> None:
        for thing in self._own:
            thing.close()
        self._own = []


def _finish(record, strategy, results, on_trial) -> None:
    strategy.tell(record)
    results.add(record)
    if on_trial is not None:
        on_trial(record, results)


def sweep(kernel, space: Space, *, strategy="grid", budget: int | None = None, seconds: float | None = None,
          runner: str = "dask", scheduler_address: str | None = None, n_workers: int | None = None,
          client=None, store: str | None = None, source: str | None = None, seed: int = 0, on_trial=None,
          retries: int = 2) -> Results:
    """Search ``space`` for the configuration of ``kernel`` with the smallest simulated makespan.

    ``strategy``: ``"grid"`` (every configuration), ``"random"``, ``"tpe"`` (optuna's TPE sampler)
    or an object with ``ask()``/``tell(record)``. ``budget``: at most this many trials in all
    (including resumed ones); ``seconds``: stop submitting after this long. ``runner``:
    ``"dask"`` (the default: the cluster at ``scheduler_address``, or ``client``, or else an
    embedded ``LocalCluster`` of ``n_workers`` processes, one per core) or ``"inprocess"`` (no
    cluster: best for small spaces, and for kernels defined in a notebook). ``store``: a JSON file rewritten after
    every trial; if it exists its finished trials are kept and not run again. ``source``: the text
    of a module defining the kernel, for Dask when the kernel is not in a module file.
    ``on_trial(record, results)`` is called as each trial finishes.
    """
    from ..errors import OptionError

    if runner not in ("inprocess", "dask"):
        raise OptionError(f"unknown runner {runner!r}", param="runner", expected="'inprocess' or 'dask'",
                          got=repr(runner))
    name = getattr(kernel, "__name__", str(kernel))
    results = Results.load(store) if store and os.path.exists(store) else Results(path=store)
    results.kernel, results.space = name, space.to_dict()  # a resumed store takes this sweep's
    chosen = make_strategy(strategy, space, seed, finished=list(results.records))
    if runner == "dask":
        engine = DaskRunner(KernelSource.of(kernel, text=source), space, seed, scheduler_address, n_workers,
                            client, retries)
    else:
        engine = InProcessRunner(kernel, space, seed)
    deadline = time.monotonic() + seconds if seconds is not None else None
    try:
        engine.run(chosen, results, budget, deadline, on_trial)
    finally:
        engine.close()
    results.evaluator = getattr(engine, "evaluator", None)
    return results
