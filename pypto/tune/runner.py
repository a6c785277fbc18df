"""Running a sweep: trials in this process, or on a Dask cluster (an embedded ``LocalCluster`` of
processes by default, or any scheduler by address). On Dask the kernel travels by its source
(`KernelSource`) and each worker keeps its own compiled versions; results stream back as they
finish (``as_completed``); a trial whose worker died is run again (Dask reschedules it, and
``retries`` covers errors raised by the trial itself). The baseline runs once, on the driver: the
workers send back what each version they compile wrote, and the driver compares it with the
baseline's numbers before it records those trials (`check.py`)."""

from __future__ import annotations

import os
import time

from .results import Results
from .search import GridSearch, make_strategy
from .space import Space, compile_part, config_key
from .source import KernelSource, refuse_unguarded_script
from .trial import FAILED, MISMATCH, OK, Evaluator, TrialRecord

_EVALUATORS: dict = {}  # on a worker: (source, space, seed) -> Evaluator, kept between trials
_KEEP_EVALUATORS = 4


def run_trials(source: KernelSource, space: dict, numbered: list, seed: int = 0, fitted=(), sweep: str = "") -> tuple:
    """Trials on a worker: load the kernel by its source (once per process) and evaluate each
    ``(number, config)`` of ``numbered``; the worker keeps its compiled versions between calls.
    ``fitted``: keys of compiled parts the driver's `Evaluator.fit` already found to fit, not
    traced again here. Returns the records (their numbers not yet checked), per compiled part
    they ran its `SameSchedule` (the driver answers configurations of an already simulated
    schedule without sending them), and the `check.Outputs` of the versions they ran that sweep
    ``sweep`` (a token of the driver's run) was not given yet (the driver compares them with the
    baseline's: the worker never runs the baseline)."""
    import json

    key = (source, json.dumps(space, sort_keys=True), seed)
    evaluator = _EVALUATORS.get(key)
    if evaluator is None:
        while len(_EVALUATORS) >= _KEEP_EVALUATORS:  # a long-lived worker serves many sweeps
            _EVALUATORS.pop(next(iter(_EVALUATORS)))
        evaluator = _EVALUATORS[key] = Evaluator(source.load(), Space.from_dict(space), seed, report_outputs=True)
    evaluator.assume_fits(fitted)
    records, classes = [], {}
    for number, config in numbered:
        records.append(evaluator.evaluate(config, number))
        part = config_key(compile_part(config))
        if part not in classes:
            classes[part] = evaluator.same_schedule(config)
    return records, {part: c for part, c in classes.items() if c is not None}, \
        evaluator.outputs_for([c for _, c in numbered], sweep)


def local_cluster(n_workers: int | None = None):
    """The embedded Dask cluster a sweep starts without a scheduler address: a ``LocalCluster`` of
    ``n_workers`` single-threaded worker processes (default one per core), without a dashboard,
    without the workers' statistical profiler (its sampling thread costs a worker about a tenth
    of its CPU time; a sweep's trials are short and many) and with Dask's housekeeping timers
    slowed (`QUIET_TIMERS`). Its workers import pypto while starting (ready for trials when the
    cluster is up, all at once)."""
    import dask
    from distributed import LocalCluster

    with dask.config.set({"distributed.worker.profile.enabled": False, **QUIET_TIMERS}):
        return LocalCluster(n_workers=n_workers or os.cpu_count() or 1, threads_per_worker=1, processes=True,
                            dashboard_address=None, scheduler_kwargs=QUIET_SCHEDULER, preload=[__name__])


# Without a dashboard, Dask's scheduler still serves its health and metrics pages, on port 8787
# unless told otherwise: a second cluster on the machine (another sweep, a test run in parallel)
# then warns "Port 8787 is already in use". Any free loopback port does for a cluster nobody browses.
QUIET_SCHEDULER = {"dashboard_address": "127.0.0.1:0"}

# Dask's periodic housekeeping, by default: an event-loop health tick every 20 ms, a memory check
# every 100 ms, a system monitor (psutil) every 0.5 s, a work-stealing pass every 100 ms. Measured
# on an idle embedded cluster (2 cores, load 13): a worker 25 ms CPU a second, the driver (which
# hosts the scheduler) 44 ms a second, time a sweep's trials lose, more the longer a sweep runs on a
# loaded machine. Slowed as below: 4 ms and 7 ms a second. A sweep keeps little in Dask's memory,
# and its batches are about a second of work, so nothing here needs a faster look.
QUIET_TIMERS = {"distributed.admin.tick.interval": "1s", "distributed.admin.system-monitor.interval": "2s",
                "distributed.worker.memory.monitor-interval": "1s",
                "distributed.scheduler.work-stealing-interval": "1s"}


def dask_setup(worker) -> None:  # noqa: ARG001 - Dask's preload hook
    """Run by each worker of `local_cluster` as it starts: imports what every trial needs (torch,
    the simulator), so the first trials do not wait for it."""
    import torch  # noqa: F401

    from ..runtime import scheduler, timeline  # noqa: F401


class InProcessRunner:
    """Trials one after another in this process (``evaluator`` keeps the compiled versions; the
    lab re-simulates the best trial's timeline from it)."""

    def __init__(self, kernel, space: Space, seed: int = 0, baseline=None):
        self.evaluator = Evaluator(kernel, space, seed, baseline=baseline)

    def check(self) -> None:
        """Refuse before the first trial: a missing shape, or a baseline that does not run."""
        self.evaluator.check_shapes()
        for call in range(len(self.evaluator.space.shapes)):
            self.evaluator.reference(call)

    def run(self, strategy, results: Results, budget: int | None, deadline: float | None, on_trial,
            stop=None) -> None:
        number = results.next_number
        while (budget is None or len(results) < budget) and (deadline is None or time.monotonic() < deadline):
            if stop is not None and stop.is_set():
                results.interrupted = True
                break
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
    existing ``distributed.Client``. At most ``in_flight`` Dask tasks (default twice the workers)
    are submitted ahead, so a sampler learns from results as they come; each holds a batch of at
    most ``chunk`` trials (`_Batches`). ``checker``: the driver's `Evaluator` of the kernel, which
    runs the ``baseline`` and compares the workers' outputs with it (default: one made from the
    kernel loaded by its source)."""

    def __init__(self, source: KernelSource, space: Space, seed: int = 0, scheduler_address: str | None = None,
                 n_workers: int | None = None, client=None, retries: int = 2, in_flight: int | None = None,
                 chunk: int = 64, baseline=None, checker=None):
        from distributed import Client

        self.source, self.space, self.seed, self.retries = source, space, seed, retries
        self.baseline = baseline
        self.checker = checker
        self._own = []
        if client is None:
            if scheduler_address:
                client = Client(scheduler_address)
            else:
                cluster = local_cluster(n_workers)
                client = Client(cluster)
                self._own.append(cluster)
            self._own.insert(0, client)
        self.client = client
        self.workers = max(1, len(client.scheduler_info().get("workers", {})) or (n_workers or 1))
        self.in_flight = in_flight or 2 * self.workers
        self.chunk = max(1, chunk)

    def check(self) -> None:
        pass  # the baseline runs on the driver while the first trials run on the workers (`run`)

    def _checker(self):
        if self.checker is None:
            self.checker = Evaluator(self.source.load(), self.space, self.seed, baseline=self.baseline)
        return self.checker

    def run(self, strategy, results: Results, budget: int | None, deadline: float | None, on_trial,
            stop=None) -> None:
        from distributed import as_completed

        space = self.space.to_dict()
        pending = as_completed(with_results=True, raise_errors=False)  # results fetched as they finish
        checker = self._checker()
        batch = _Batches(self, strategy, results, budget, deadline, on_trial, stop, checker)
        batches: dict = {}
        token = os.urandom(8).hex()  # this run of the sweep: each worker sends it its versions' outputs once
        fit = getattr(strategy, "fit", None)
        fit = fit if isinstance(fit, _Fitter) else None

        def submit() -> bool:
            numbered = batch.take()
            if not numbered:
                return False
            # the driver traced each new tile once to see that it fits (`_Pruned`): the worker
            # need not trace it again before compiling it
            fitted = sorted({part for part in (config_key(compile_part(c)) for _, c in numbered)
                             if fit is not None and fit.fits(part)})
            future = self.client.submit(run_trials, self.source, space, numbered, self.seed, fitted, token, pure=False,
                                        retries=self.retries, key=f"pypto-tune-{numbered[0][0]}-{os.urandom(4).hex()}")
            batches[future.key] = numbered
            pending.add(future)
            return True

        try:
            while len(batches) < self.in_flight and submit():
                pass
            # the reference numbers, while the workers run their first trials (a baseline that
            # does not run raises here, as before an in-process sweep's first trial)
            for call in range(len(self.space.shapes)):
                checker.reference(call)
            for future, got in pending:
                numbered = batches.pop(future.key)
                if future.status == "error" or isinstance(got, BaseException):
                    # e.g. KilledWorker after every retry: recorded, and the schedules waiting
                    # on these trials are sent themselves
                    e = got[1] if isinstance(got, tuple) else got
                    batch.finished([TrialRecord(n, config, status=FAILED, error=f"{type(e).__name__}: {e}")
                                    for n, config in numbered], {})
                else:
                    batch.finished(*got)
                while len(batches) < self.in_flight and submit():
                    pass
            batch.close()
        finally:
            for future in list(pending.futures):  # interrupted: what is still queued is dropped
                future.cancel()

    def close(self) -> None:
        for thing in self._own:
            thing.close()
        self._own = []


class _Batches:
    """What a Dask sweep's driver sends, a batch of trials at a time, and what it answers itself.

    Configurations of one compiled part that simulate to the same schedule (`trial.SameSchedule`,
    learnt from the first trials of that part) are sent once: the others are answered from that
    trial's record when it comes back (the in-process runner's `Replayer` does the same, so a
    sweep simulates each schedule once on any number of workers, instead of once per worker).
    A batch holds as many trials as take about `BATCH_SECONDS` on a worker (one at first: the
    first trials compile), at most ``chunk`` (`LEARNING_BATCH` for a strategy that learns from
    each result, such as TPE), never more than an even share of what is left to send (the
    configurations left, times the share of those asked so far that were sent rather than
    answered here), so every worker gets some and none is left with a long last batch.

    A trial's record is kept (told to the strategy, added to the results) once the driver has
    compared the outputs of the version it ran, on its worker, with the baseline's (`check.py`):
    they come back with the batch that compiled that version."""

    # a Dask task costs the driver and its scheduler a few ms of CPU (more on a loaded machine):
    # a quarter second of trials keeps that near 1%, and the last batches short (at 1 s, a sweep of
    # a few seconds on two workers ended with one worker idle for most of a batch)
    BATCH_SECONDS = 0.25
    MIN_BATCH_SECONDS = 0.05
    LEARNING_BATCH = 8

    def __init__(self, runner, strategy, results, budget, deadline, on_trial, stop, checker=None):
        self.runner, self.strategy, self.results, self.checker = runner, strategy, results, checker
        self.budget, self.deadline, self.on_trial, self.stop = budget, deadline, on_trial, stop
        self.number = results.next_number
        self.submitted = len(results)
        self.asked = self.sent = 0  # configurations asked of the strategy by this sweep; of them, sent
        self.classes: dict = {}  # compiled part -> SameSchedule
        self.simulated: dict = {}  # schedule key -> the record of its trial (None: still running)
        self.waiting: dict = {}  # schedule key -> [(number, config)] answered when its trial comes back
        self.sent_key: dict = {}  # trial number -> its schedule key
        self.again: list = []  # (number, config) to send after all: their schedule's trial failed
        self.seconds: list = []  # wall time of recent trials that compiled nothing and simulated
        self.timed: set = set()  # schedule keys with a trial in ``seconds`` (its twins took no time)
        self.verdicts: dict = {}  # (worker, compiled part, call) -> (numbers match, check s, why not)
        self.held: list = []  # records whose versions' outputs have not been compared yet
        # a strategy that learns (TPE) asks a batch before it is told any of it: small batches
        learns = not isinstance(getattr(strategy, "inner", strategy), GridSearch)
        self.cap = min(runner.chunk, self.LEARNING_BATCH) if learns else runner.chunk

    def _chunk(self) -> int:
        left = (self.runner.space.size if self.budget is None else min(self.budget, self.runner.space.size)) \
            - self.submitted
        if self.asked:  # most configurations of a runtime sweep are answered here, not sent
            left = min(left, left * self.sent // self.asked)
        share = max(1, left // (2 * self.runner.workers))
        if not self.seconds:
            return 1
        # the mean, not the median: the few trials that simulate (the others of their schedule
        # are answered here, or by the worker's Replayer) are what a batch waits for
        typical = sum(self.seconds) / len(self.seconds)
        # ...but not below `MIN_BATCH_SECONDS` of trials: the last configurations of a runtime
        # sweep are mostly answered here, and a Dask task per fast trial costs more than it runs
        floor = int(self.MIN_BATCH_SECONDS / max(typical, 1e-6))
        return max(1, min(self.cap, max(share, floor), int(self.BATCH_SECONDS / max(typical, 1e-6))))

    def _key(self, config):
        same = self.classes.get(config_key(compile_part(config)))
        return same.key(config) if same is not None else None

    def take(self) -> list:
        """The next batch to send ((number, config) pairs; empty: nothing more to send now)."""
        numbered = []
        size = self._chunk()
        while len(numbered) < size:
            if self.again:
                numbered.append(self.again.pop())
                continue
            if self.stop is not None and self.stop.is_set():
                self.results.interrupted = True
                break
            if (self.budget is not None and self.submitted >= self.budget) or \
                    (self.deadline is not None and time.monotonic() >= self.deadline):
                break
            config = self.strategy.ask()
            if config is None:
                break
            number = self.number
            self.number += 1
            self.submitted += 1
            self.asked += 1
            key = self._key(config)
            if key is not None:
                if key in self.simulated:
                    done = self.simulated[key]
                    if done is None:
                        self.waiting.setdefault(key, []).append((number, config))
                    else:
                        _finish(_same_as(done, number, config), self.strategy, self.results, self.on_trial)
                    continue
                self.simulated[key] = None
                self.sent_key[number] = key
            numbered.append((number, config))
        self.sent += len(numbered)
        return numbered

    def finished(self, records: list, classes: dict, outputs=()) -> None:
        """A batch came back: compare the outputs of the versions it compiled with the baseline's,
        record its trials (and those held for a comparison that has now come), then those that
        waited on their schedules."""
        self.classes.update(classes)
        for out in outputs:
            self.verdicts[(out.worker, out.part, out.call)] = self.checker.check_outputs(out)
        still = []
        for record in self.held + list(records):
            if self._checked(record):
                self._record(record)
            else:
                still.append(record)
        self.held = still

    def close(self) -> None:
        """The sweep's end: a record still without its comparison fails (nothing is kept unchecked)."""
        held, self.held = self.held, []
        for record in held:
            record.status = FAILED
            record.error = "the outputs of its compiled version never came back to be compared with the baseline's"
            self._record(record)

    def _checked(self, record) -> bool:
        """Fill in whether ``record``'s numbers match the baseline's; False while a comparison it
        needs has not come back."""
        if record.status != OK or record.numbers_match is not None:
            return True  # failed, or already compared
        part = config_key(compile_part(record.config))
        got = [self.verdicts.get((record.worker, part, call)) for call in range(len(self.runner.space.shapes))]
        if any(g is None for g in got):
            return False
        why = next((w for _, _, w in got if w), "")
        record.numbers_match = None if why else all(m for m, _, _ in got)
        record.check_seconds = sum(s for _, s, _ in got)
        if why:
            record.status, record.error = FAILED, why
        elif not record.numbers_match:
            from .key import describe_baseline

            record.status = MISMATCH
            record.error = f"the numbers differ from the baseline's ({describe_baseline(self.runner.baseline)})"
        return True

    def _record(self, record) -> None:
        if not record.compiled and record.ok:
            # a trial the worker answered from a schedule it simulated before took no time: the
            # batches are sized by the trials that simulate (the driver sends only those)
            key = self._key(record.config)
            if key is None or key not in self.timed:
                if key is not None:
                    self.timed.add(key)
                self.seconds = self.seconds[-31:] + [record.seconds]
        _finish(record, self.strategy, self.results, self.on_trial)
        key = self.sent_key.pop(record.number, None)
        if key is None:  # sent before its part's schedules were known: may answer others later
            key = self._key(record.config)
            if key is not None and record.status in (OK, MISMATCH) and self.simulated.get(key) is None:
                self.simulated[key] = record
            return
        if record.status in (OK, MISMATCH):
            self.simulated[key] = record
            for number, config in self.waiting.pop(key, ()):
                _finish(_same_as(record, number, config), self.strategy, self.results, self.on_trial)
        else:  # not a figure to copy: the waiting ones run themselves
            self.simulated.pop(key, None)
            self.again.extend(reversed(self.waiting.pop(key, [])))

def _same_as(record: TrialRecord, number: int, config: dict) -> TrialRecord:
    """The record of ``config``, which simulates to the same schedule as ``record``'s trial did:
    its figures, nothing compiled or simulated for it."""
    got = TrialRecord.from_dict({**record.to_dict(), "number": number, "config": dict(config), "compiled": False,
                                 "seconds": 0.0})
    got.extra = {**record.extra, "same_schedule_as": record.number}
    return got


class _Fitter:
    """The sweep driver's `Evaluator`, made on first use: its `fit` estimates each new tile
    configuration once (a cluster sweep's driver traces it before sending its first trial; an
    in-process sweep shares its runner's), and on a cluster it runs the baseline and compares
    the workers' outputs with it (`DaskRunner` ``checker``)."""

    def __init__(self, kernel, space, seed, baseline):
        self.args, self.evaluator = (kernel, space, seed, baseline), None

    def get(self) -> Evaluator:
        if self.evaluator is None:
            kernel, space, seed, baseline = self.args
            self.evaluator = Evaluator(kernel, space, seed, baseline=baseline)
        return self.evaluator

    def __call__(self, config):
        return self.get().fit(config)

    def fits(self, part: str) -> bool:
        """Whether compiled part ``part`` (a `config_key` of a compile part) was traced here and fits."""
        return self.evaluator is not None and self.evaluator.fits(part)


def _finish(record, strategy, results, on_trial) -> None:
    strategy.tell(record)
    results.add(record)
    if on_trial is not None:
        on_trial(record, results)


class SweepInterrupted(KeyboardInterrupt):
    """Ctrl-C during a sweep: the finished trials are kept (in the store, if any); ``results``
    holds them. Running the same sweep with the same store resumes it."""

    def __init__(self, message: str, results):
        super().__init__(message)
        self.results = results


class _Pruned:
    """A strategy's proposals less those that need not run: configurations breaking the space's
    constraints, and those of a compiled version already known to fail or to give other numbers
    (a tile that does not fit is one failed trial, not one per runtime option combination). The
    inner strategy is told they failed, so a sampler learns; they are not trials."""

    def __init__(self, inner, space: Space, finished=(), fit=None):
        self.inner, self.space = inner, space
        self.pruned = 0
        self._peeked = None
        self.bad_parts: set = set()
        # fit(config) -> None or why its tiles cannot fit (`Evaluator.fit`): asked once per
        # compile-affecting part here, before the first trial of it is sent anywhere, so a tile
        # that cannot fit is one failed trial even when many of its runtime combinations would
        # be in flight at once on a cluster
        self.fit, self._fit_checked = fit, set()
        for r in finished:
            self._learn(r)

    def _learn(self, record) -> None:
        if record.status == MISMATCH or record.extra.get("stage") in ("compile", "fit"):
            self.bad_parts.add(config_key(compile_part(record.config)))

    def peek(self):
        """The next configuration without taking it (None: nothing is left to run)."""
        if self._peeked is None:
            self._peeked = self._next()
        return self._peeked

    def ask(self):
        if self._peeked is not None:
            config, self._peeked = self._peeked, None
            return config
        return self._next()

    def _next(self):
        while True:
            config = self.inner.ask()
            if config is None:
                return None
            part = config_key(compile_part(config))
            bad = part in self.bad_parts
            if not bad and self.space.allows(config):
                if self.fit is not None and part not in self._fit_checked:
                    self._fit_checked.add(part)
                    if self.fit(config) is not None:
                        self.bad_parts.add(part)  # this trial records why; the others of it never run
                return config
            self.pruned += 0 if bad else 1
            self.inner.tell(TrialRecord(-1, config, status=FAILED, error="pruned"))

    def tell(self, record) -> None:
        self._learn(record)
        self.inner.tell(record)


def sweep(kernel, space: Space, *, strategy="grid", budget: int | None = None, seconds: float | None = None,
          runner: str = "dask", scheduler_address: str | None = None, n_workers: int | None = None,
          client=None, store: str | None = None, source: str | None = None, seed: int = 0, on_trial=None,
          retries: int = 2, baseline=None, stop=None) -> Results:
    """Search ``space`` for the configuration of ``kernel`` with the smallest simulated makespan.

    ``strategy``: ``"grid"`` (every configuration; with a smaller ``budget``, spread over the
    space), ``"random"``, ``"tpe"`` (optuna's TPE sampler) or an object with ``ask()``/
    ``tell(record)``. ``budget``: at most this many trials in all (including resumed ones);
    ``seconds``: stop submitting after this long. ``runner``: ``"dask"`` (the default: the cluster
    at ``scheduler_address``, or ``client``, or else an embedded ``LocalCluster`` of ``n_workers``
    processes, one per core) or ``"inprocess"`` (no cluster: best for small spaces, and for
    kernels defined in a notebook). ``baseline``: what each compiled version's numbers are checked
    against: a configuration (``{"TILE": 32}``) or a torch function called like the kernel;
    default the kernel's defaults (a sweep whose tuned parameters have none is refused).
    ``store``: a journal file (JSON lines, one per trial, appended as each finishes); if it exists
    and was written by this same sweep (kernel and its source, shapes, space, machine, baseline)
    its trials are kept and not run again, else it is refused. ``source``: the text of a module
    defining the kernel, for Dask when the kernel is not in a module file. ``on_trial(record,
    results)`` is called as each trial finishes; ``stop`` (e.g. a ``threading.Event``) ends the
    sweep early once set. Ctrl-C raises `SweepInterrupted` (a KeyboardInterrupt) saying what was
    kept; its ``results`` hold the finished trials.
    """
    from ..errors import OptionError
    from .key import sweep_key
    from .store import Journal
    from .trial import check_baseline

    if runner not in ("inprocess", "dask"):
        raise OptionError(f"unknown runner {runner!r}", param="runner", expected="'inprocess' or 'dask'",
                          got=repr(runner))
    check_baseline(kernel, space, baseline)
    name = getattr(kernel, "__name__", str(kernel))
    key = sweep_key(kernel, space, baseline=baseline)
    journal, stored = Journal.open(store, key) if store else (None, [])
    results = Results([TrialRecord.from_dict(d) for d in stored], name, space.to_dict(), store, journal)
    try:
        fitter = _Fitter(kernel, space, seed, baseline)
        chosen = _Pruned(make_strategy(strategy, space, seed, finished=list(results.records), budget=budget),
                         space, results.records, fit=fitter)
        if runner == "dask" and ((budget is not None and len(results) >= budget) or chosen.peek() is None):
            results.pruned = chosen.pruned  # a finished sweep resumed: no cluster to start for it
            return results
        if runner == "dask":
            kernel_source = KernelSource.of(kernel, text=source)
            refuse_unguarded_script(kernel_source)
            engine = DaskRunner(kernel_source, space, seed, scheduler_address, n_workers, client, retries,
                                baseline=baseline, checker=fitter.get())
        else:
            engine = InProcessRunner(kernel, space, seed, baseline)
            fitter.evaluator = engine.evaluator  # its fit estimates serve its trials too
        try:
            engine.check()
            deadline = time.monotonic() + seconds if seconds is not None else None
            engine.run(chosen, results, budget, deadline, on_trial, stop)
        except KeyboardInterrupt:
            results.interrupted = True
            kept = f"; the store {store} keeps them: run the same sweep with store={store!r} to resume" if store \
                else " (give store= to keep trials across runs)"
            raise SweepInterrupted(f"sweep of {name} interrupted after {len(results)} trial(s){kept}",
                                   results) from None
        finally:
            engine.close()
    finally:
        if journal is not None:
            journal.close()
    results.pruned = chosen.pruned
    results.evaluator = getattr(engine, "evaluator", None)
    return results
