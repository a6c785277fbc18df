"""Sweeps on a Dask LocalCluster of 2 worker processes: the same results as in-process, and a
trial whose worker dies is run again, not lost."""
import os

import pytest
import torch

import pypto
import pypto.tune as tune

from tune_kernels import exp_rows

distributed = pytest.importorskip("distributed")

SHAPE = {"x": (200, 128), "out": (200, 128)}
FIGURES = ("status", "makespan_cycles", "critical_path_cycles", "device_tasks", "tasks", "l2_hit_rate",
           "utilization_aiv", "numbers_match")


@pytest.fixture(scope="module")
def client():
    from pypto.tune.runner import QUIET_SCHEDULER

    cluster = distributed.LocalCluster(n_workers=2, threads_per_worker=1, processes=True,
                                       dashboard_address=None, scheduler_kwargs=QUIET_SCHEDULER)
    c = distributed.Client(cluster)
    yield c
    c.close()
    cluster.close()


def test_dask_sweep_gives_the_same_results_as_in_process(client):
    space = tune.space(SHAPE, TILE=[2048, 16, 32], options={"device_sched_mode": [0, 1]})
    here = tune.sweep(exp_rows, space, runner="inprocess")
    there = tune.sweep(exp_rows, space, client=client)
    # the tile that does not fit fails once, its other option combination never run: on Dask too,
    # though both would be in flight before the first failure came back (the driver estimates
    # the fit before sending the first)
    assert len(here) == 5 and len(there) == 5
    by_key = {r.key: r for r in there}
    for r in here:
        assert {f: getattr(r, f) for f in FIGURES} == {f: getattr(by_key[r.key], f) for f in FIGURES}
    assert there.best.key == here.best.key
    assert {r.worker for r in there} <= set(client.scheduler_info()["workers"])  # ran on the workers


def test_configurations_of_one_schedule_are_simulated_once_on_the_cluster(client):
    # 200 rows in tiles of 32: 7 roots, no parallel loop. Every stitch limit above 7 and every
    # parallelism give one schedule, so these 16 configurations are 2 schedules (the mode's)
    space = tune.space(SHAPE, options={"device_sched_mode": [0, 1], "stitch_function_max_num": [8, 16, 64, 128],
                                       "device_sched_parallelism": [1, 2]})
    here = tune.sweep(exp_rows, space, runner="inprocess")
    there = tune.sweep(exp_rows, space, client=client)
    assert len(there) == 16 and len({r.number for r in there}) == 16
    by_key = {r.key: r for r in there}
    for r in here:
        assert {f: getattr(r, f) for f in FIGURES} == {f: getattr(by_key[r.key], f) for f in FIGURES}
    answered = [r for r in there if "same_schedule_as" in r.extra]
    # at most the first batches (one trial each, sent before any came back) and one trial per
    # schedule went to the workers; the others were answered from those trials' records
    sent = 16 - len(answered)
    assert sent <= 2 * len(client.scheduler_info()["workers"]) + 2, sent
    runs = {r.number: r for r in there if "same_schedule_as" not in r.extra}
    for r in answered:
        twin = runs[r.extra["same_schedule_as"]]
        assert twin.config["device_sched_mode"] == r.config["device_sched_mode"] and not r.compiled


KILLER = '''
import os
import pypto

# the first worker to load this module dies (a crash mid-trial); the marker lets the next one live
if not os.path.exists({marker!r}):
    open({marker!r}, "w").close()
    os._exit(1)

ROWS = pypto.Tensor([pypto.DYNAMIC, 128], pypto.DT_FP32)


@pypto.jit
def doubled(x: ROWS, out: ROWS, TILE: int = 32):
    pypto.set_vec_tile_shapes(TILE, 128)
    for b in pypto.loop(pypto.ceildiv(x.shape[0], TILE)):
        r = slice(b * TILE, (b + 1) * TILE)
        out[r, :] = x[r, :] * 2.0
'''


def test_a_killed_workers_trial_is_retried(client, tmp_path):
    marker = str(tmp_path / "died-once")
    text = KILLER.format(marker=marker)
    namespace = {}
    open(marker, "w").close()  # this process only defines the kernel
    exec(compile(text, "<killer>", "exec"), namespace)
    os.remove(marker)
    results = tune.sweep(namespace["doubled"], tune.space(SHAPE, TILE=[32]), client=client, source=text)
    assert os.path.exists(marker)  # a worker did die
    assert len(results) == 1 and results[0].ok and results[0].numbers_match, results[0].error


def test_a_dask_sweep_resumes_from_its_store_with_new_numbers(client, tmp_path):
    store = str(tmp_path / "d.jsonl")
    space = tune.space(SHAPE, TILE=[16, 32], options={"device_sched_mode": [0, 1, 2]})
    first = tune.sweep(exp_rows, space, client=client, store=store, budget=3)
    assert len(first) == 3
    second = tune.sweep(exp_rows, space, client=client, store=store)
    numbers = [r.number for r in second]
    assert len(second) == 6 and len(set(numbers)) == 6 and min(numbers[3:]) > max(numbers[:3])
    assert {r.key for r in second} == {tune.TrialRecord(0, c).key for c in space.grid()}


def _free_port() -> int:
    import socket

    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def test_a_sweep_on_a_scheduler_and_workers_started_as_separate_processes(tmp_path):
    import subprocess
    import sys
    import time

    import pypto

    port = _free_port()
    address = f"tcp://127.0.0.1:{port}"
    env = {**os.environ, "PYTHONPATH": os.path.dirname(os.path.dirname(pypto.__file__))}
    procs = [subprocess.Popen([sys.executable, "-m", "distributed.cli.dask_scheduler", "--host", "127.0.0.1",
                               "--port", str(port), "--dashboard-address", "127.0.0.1:0", "--no-show"],
                              env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, cwd=tmp_path)]
    try:
        for _ in range(2):
            procs.append(subprocess.Popen([sys.executable, "-m", "distributed.cli.dask_worker", address,
                                           "--nthreads", "1", "--nworkers", "1", "--no-dashboard"],
                                          env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
                                          cwd=tmp_path))
        with distributed.Client(address, timeout=60) as c:
            c.wait_for_workers(2, timeout=90)
            space = tune.space(SHAPE, TILE=[16, 32], options={"device_sched_mode": [0, 1]})
            there = tune.sweep(exp_rows, space, scheduler_address=address)
            here = tune.sweep(exp_rows, space, runner="inprocess")
            assert len(there) == 4 and all(r.ok and r.numbers_match for r in there)
            assert there.best.key == here.best.key and there.best.makespan_cycles == here.best.makespan_cycles
            assert {r.worker for r in there} <= set(c.scheduler_info()["workers"])
    finally:
        for p in reversed(procs):
            p.terminate()
        for p in procs:
            try:
                p.wait(20)
            except subprocess.TimeoutExpired:
                p.kill()


def test_a_finished_dask_sweep_resumed_starts_no_cluster(tmp_path, monkeypatch):
    store = str(tmp_path / "done.jsonl")
    space = tune.space(SHAPE, TILE=[16, 32])
    done = tune.sweep(exp_rows, space, runner="inprocess", store=store)

    def no_cluster(*a, **k):
        raise AssertionError("a cluster was started for a sweep with nothing left to run")
    monkeypatch.setattr(distributed, "LocalCluster", no_cluster)
    again = tune.sweep(exp_rows, space, store=store)  # runner="dask" by default
    assert [r.to_dict() for r in again] == [r.to_dict() for r in done]


def _worker_state():
    import sys

    import dask

    return dask.config.get("distributed.worker.profile.enabled"), "torch" in sys.modules


def _timers():
    import dask

    from pypto.tune.runner import QUIET_TIMERS

    return {k: dask.config.get(k) for k in QUIET_TIMERS}


def test_the_embedded_clusters_workers_start_ready_and_without_the_profiler():
    import dask
    from dask.utils import parse_timedelta

    from pypto.tune.runner import local_cluster

    before = _timers()
    cluster = local_cluster(1)
    try:
        with distributed.Client(cluster) as c:
            got = c.run(_worker_state)
            timers = list(c.run(_timers).values())
            # the scheduler, here in this process, took its timers when it started
            stealing = cluster.scheduler.periodic_callbacks["stealing"].callback_time
        assert list(got.values()) == [(False, True)]  # no profiler; torch imported as it started
        # Dask's housekeeping slowed in the workers (a 20 ms health tick costs a worker's trials CPU)
        assert [{k: parse_timedelta(v) for k, v in t.items()} for t in timers] == \
            [{"distributed.admin.tick.interval": 1, "distributed.admin.system-monitor.interval": 2,
              "distributed.worker.memory.monitor-interval": 1, "distributed.scheduler.work-stealing-interval": 1}]
        assert stealing == 1000  # ms
    finally:
        cluster.close()
    assert dask.config.get("distributed.worker.profile.enabled")  # this process's setting is untouched
    assert _timers() == before


def test_the_embedded_cluster_binds_no_fixed_port(recwarn):
    """Dask's default scheduler port for its web pages is 8787: with it taken (a second sweep, a
    parallel test run), the embedded cluster must start without "Port 8787 is already in use"."""
    import socket
    import warnings

    from pypto.tune.runner import local_cluster

    holder = socket.socket()
    try:
        holder.bind(("", 8787))
        holder.listen()
    except OSError:
        pass  # already taken by someone else: the case this test is about
    try:
        warnings.simplefilter("always")
        cluster = local_cluster(1)
        try:
            address = cluster.scheduler.services["dashboard"].port
        finally:
            cluster.close()
    finally:
        holder.close()
    assert address != 8787
    assert not [w for w in recwarn if "already in use" in str(w.message)]


def test_the_driver_answers_a_known_schedule_and_sends_again_what_waited_on_a_failed_trial():
    from types import SimpleNamespace

    from pypto.tune.results import Results
    from pypto.tune.runner import _Batches
    from pypto.tune.search import GridSearch
    from pypto.tune.trial import Evaluator

    space = tune.space(SHAPE, options={"device_sched_mode": [0, 1], "stitch_function_max_num": [8, 16]})
    c0, c1, c2, c3 = space.grid()  # (mode, stitch): 0/8, 0/16, 1/8, 1/16: 7 roots, so 2 schedules
    evaluator = Evaluator(exp_rows, space)
    results = Results()
    batches = _Batches(SimpleNamespace(space=space, workers=1, chunk=64), GridSearch(space), results,
                       None, None, None, None)
    assert batches.take() == [(0, c0)]  # nothing known yet: one trial
    first = evaluator.evaluate(c0, 0)
    batches.finished([first], {_part(c0): evaluator.same_schedule(c0)})
    assert batches.take() == [(2, c2)]  # c1 is c0's schedule: answered, not sent
    copy = next(r for r in results if r.number == 1)
    assert copy.config == c1 and copy.extra["same_schedule_as"] == 0 and copy.makespan_cycles == first.makespan_cycles
    assert batches.take() == []  # c3 waits for c2's schedule
    batches.finished([tune.TrialRecord(2, c2, status="failed", error="KilledWorker: gone")], {})
    assert batches.take() == [(3, c3)]  # c2 failed: c3 is not answered from it, it is sent
    assert sorted(r.number for r in results) == [0, 1, 2]


def _part(config):
    from pypto.tune.space import compile_part, config_key

    return config_key(compile_part(config))


def test_a_batch_is_a_share_of_what_is_left_to_send_not_of_every_configuration_left():
    # a runtime sweep answers most configurations on the driver (their schedule is known): a
    # batch is sized by the trials still to send, else one worker would get most of them at once
    # and the other would idle through the sweep's end
    from types import SimpleNamespace

    from pypto.tune.results import Results
    from pypto.tune.runner import _Batches
    from pypto.tune.search import GridSearch

    space = tune.space(SHAPE, options={"device_sched_mode": [0, 1, 2, 3], "stitch_function_max_num": list(range(1, 101))})
    batches = _Batches(SimpleNamespace(space=space, workers=2, chunk=64), GridSearch(space), Results(),
                       None, None, None, None)
    assert batches._chunk() == 1  # nothing known yet (the first trials compile)
    batches.seconds = [0.01] * 8  # 10 ms trials: the time target allows 25
    batches.submitted = batches.asked = 100
    batches.sent = 100
    every_one_sent = batches._chunk()
    batches.sent = 10  # one in ten was sent: about 30 of the 300 left will be
    assert every_one_sent == int(batches.BATCH_SECONDS / 0.01) and 2 * 2 * batches._chunk() <= 30
    # ...but a Dask task is not spent on less than MIN_BATCH_SECONDS of trials
    batches.seconds = [0.002] * 8
    assert batches._chunk() > 30 // (2 * 2) and batches._chunk() * 0.002 >= batches.MIN_BATCH_SECONDS - 1e-9


def test_the_numbers_are_checked_on_the_driver_which_alone_runs_the_baseline(client):
    # the workers send back what each version they compile wrote; the driver compares it with the
    # baseline it runs: a tile that gives other numbers is a mismatch on Dask as in-process, with
    # a config, a torch function and the kernel's defaults as the baseline
    from tune_kernels import first_rows, tile_dependent

    space = tune.space(SHAPE, TILE=[16, 32], options={"device_sched_mode": [0, 1]})
    there = tune.sweep(tile_dependent, space, client=client)
    here = tune.sweep(tile_dependent, space, runner="inprocess")
    got = {r.key: (r.status, r.numbers_match) for r in there}
    # in-process the mismatching tile's second configuration is never run; on Dask it may have
    # been in flight before the first came back: then it is a mismatch too
    assert {k: v for k, v in got.items() if k in {r.key for r in here}} == \
        {r.key: (r.status, r.numbers_match) for r in here}
    assert {r.config["TILE"]: got[r.key] for r in there} == {16: ("mismatch", False), 32: ("ok", True)}
    assert all(r.check_seconds is not None for r in there)
    steps = tune.space(SHAPE, TILE=[32], STEP=[1, 2])
    for baseline in ({"TILE": 32, "STEP": 1}, lambda x, out: out.copy_(torch.exp(x) + 1.0)):
        checked = tune.sweep(first_rows, steps, client=client, baseline=baseline)
        assert {r.config["STEP"]: (r.status, r.numbers_match) for r in checked} == \
            {1: ("ok", True), 2: ("mismatch", False)}
    with pytest.raises(pypto.PyptoError, match="baseline .* failed"):  # said before any trial is kept
        tune.sweep(first_rows, steps, client=client, baseline={"TILE": 4096, "STEP": 1})


def test_a_worker_runs_no_baseline_and_its_outputs_are_compared_by_the_driver(monkeypatch):
    from pypto.tune import runner
    from pypto.tune.source import KernelSource
    from pypto.tune.trial import Evaluator

    from tune_kernels import tile_dependent

    space = tune.space(SHAPE, TILE=[16, 32], options={"device_sched_mode": [0, 1]})
    configs = list(space.grid())
    ran = []
    real = Evaluator._run_baseline
    monkeypatch.setattr(Evaluator, "_run_baseline", lambda self, *a: ran.append(self) or real(self, *a))
    monkeypatch.setattr(runner, "_EVALUATORS", {})
    records, _, outputs = runner.run_trials(KernelSource.of(tile_dependent), space.to_dict(), list(enumerate(configs)))
    assert ran == []  # the worker ran the trials' versions only
    assert [r.status for r in records] == ["ok"] * 4 and all(r.numbers_match is None for r in records)
    assert [(o.part, o.call) for o in outputs] == [('{"TILE": 16}', 0), ('{"TILE": 32}', 0)]  # one per version
    driver = Evaluator(tile_dependent, space)
    assert [driver.check_outputs(o)[0] for o in outputs] == [False, True]  # 1/16 added, not 1/32
    assert len(ran) == 1  # the driver's baseline, run once for every comparison
    # other seeded inputs (another torch on a worker) are said, not compared into a mismatch
    other = Evaluator(tile_dependent, space, seed=1)
    match, _, why = other.check_outputs(outputs[1])
    assert match is None and "seeded inputs differ" in why


def test_a_trial_is_kept_only_once_its_versions_outputs_are_compared():
    from types import SimpleNamespace

    from pypto.tune.results import Results
    from pypto.tune.runner import _Batches
    from pypto.tune.search import GridSearch
    from pypto.tune.trial import Evaluator

    from tune_kernels import tile_dependent

    space = tune.space(SHAPE, TILE=[16, 32])
    c16, c32 = space.grid()
    worker = Evaluator(tile_dependent, space, report_outputs=True)
    r16, r32 = worker.evaluate(c16, 0), worker.evaluate(c32, 1)
    out16, out32 = worker.outputs_for([c16, c32], "sweep 1")
    assert worker.outputs_for([c16], "sweep 1") == [] and worker.outputs_for([c16], "sweep 2") == [out16]
    results = Results()
    runner = SimpleNamespace(space=space, workers=1, chunk=64, baseline=None)
    batches = _Batches(runner, GridSearch(space), results, None, None, None, None, Evaluator(tile_dependent, space))
    batches.finished([r16], {}, [])  # its version's outputs have not come (yet): held, not kept
    assert len(results) == 0 and r16.numbers_match is None
    batches.finished([r32], {}, [out32, out16])
    assert [(r.number, r.status, r.numbers_match) for r in results] == [(0, "mismatch", False), (1, "ok", True)]
    r_late = worker.evaluate(c16, 2)
    r_late.worker = "tcp://elsewhere:1"  # run by a version on another worker, never reported
    batches.finished([r_late], {}, [])
    batches.close()  # nothing is kept unchecked
    assert results[-1].number == 2 and results[-1].status == "failed" and "never came back" in results[-1].error


def test_batches_are_sized_by_the_trials_that_simulate_not_their_twins():
    # a worker answers a configuration of a schedule it simulated before in no time: counting
    # those made the mean trial look ~0 s and the next batches 64 trials (over a second) long
    from types import SimpleNamespace

    from pypto.tune.results import Results
    from pypto.tune.runner import _Batches
    from pypto.tune.search import GridSearch
    from pypto.tune.trial import Evaluator

    space = tune.space(SHAPE, options={"device_sched_mode": [0, 1], "stitch_function_max_num": [8, 16]})
    c0, c1, c2, _ = space.grid()  # c1 is c0's schedule (7 roots: any limit above 7 is one)
    ev = Evaluator(exp_rows, space)
    first, twin, other = ev.evaluate(c0, 0), ev.evaluate(c1, 1), ev.evaluate(c2, 2)
    first.compiled, first.seconds, twin.seconds, other.seconds = False, 0.01, 0.0, 0.01
    batches = _Batches(SimpleNamespace(space=space, workers=1, chunk=64, baseline=None), GridSearch(space),
                       Results(), None, None, None, None, ev)
    batches.finished([first, twin, other], {_part(c0): ev.same_schedule(c0)})
    assert batches.seconds == [0.01, 0.01]
