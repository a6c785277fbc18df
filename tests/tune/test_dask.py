"""Sweeps on a Dask LocalCluster of 2 worker processes: the same results as in-process, and a
trial whose worker dies is run again, not lost."""
import os

import pytest

import pypto.tune as tune

from tune_kernels import exp_rows

distributed = pytest.importorskip("distributed")

SHAPE = {"x": (200, 128), "out": (200, 128)}
FIGURES = ("status", "makespan_cycles", "critical_path_cycles", "device_tasks", "tasks", "l2_hit_rate",
           "utilization_aiv", "numbers_match")


@pytest.fixture(scope="module")
def client():
    cluster = distributed.LocalCluster(n_workers=2, threads_per_worker=1, processes=True,
                                       dashboard_address=None)
    c = distributed.Client(cluster)
    yield c
    c.close()
    cluster.close()


def test_dask_sweep_gives_the_same_results_as_in_process(client):
    space = tune.space(SHAPE, TILE=[2048, 16, 32], options={"device_sched_mode": [0, 1]})
    here = tune.sweep(exp_rows, space, runner="inprocess")
    there = tune.sweep(exp_rows, space, client=client)
    # in-process, the tile that does not fit fails once (its other option combination is never
    # run); on Dask both may be in flight before the first failure comes back
    assert len(here) == 5 and 5 <= len(there) <= 6
    by_key = {r.key: r for r in there}
    for r in here:
        assert {f: getattr(r, f) for f in FIGURES} == {f: getattr(by_key[r.key], f) for f in FIGURES}
    assert there.best.key == here.best.key
    assert {r.worker for r in there} <= set(client.scheduler_info()["workers"])  # ran on the workers


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
