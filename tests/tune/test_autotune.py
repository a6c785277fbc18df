"""autotune: a kernel tunes itself per key, remembers the best on disk, and another process
reads it at once."""
import os
import subprocess
import sys
import textwrap

import pytest
import torch

import pypto
import pypto.tune as tune

from tune_kernels import exp_rows

CANDIDATES = dict(TILE=[16, 32, 64], options={"device_sched_mode": [0, 1]})


def test_autotune_sweeps_once_per_key_and_a_second_process_reads_the_best(tmp_path, monkeypatch):
    monkeypatch.setenv("PYPTO_TUNE_CACHE_DIR", str(tmp_path))
    assert tune.cache_dir() == str(tmp_path)
    tuned = tune.autotune(key=["x"], **CANDIDATES)(exp_rows)
    x, out = torch.randn(96, 128), torch.empty(96, 128)
    tuned(x, out)
    assert torch.allclose(out, torch.exp(x) + 1.0)
    assert tuned.sweeps == 1
    [entry] = tuned.cache_info()
    assert entry.source == "sweep" and entry.key == (("x", (96, 128), "torch.float32"),)
    reference = tune.sweep(exp_rows, tune.space({"x": (96, 128), "out": (96, 128)}, **CANDIDATES),
                           runner="inprocess")
    assert entry.config == reference.best.config
    assert tuned.last_run.timeline.stats["makespan_cycles"] == reference.best.makespan_cycles
    tuned(torch.randn(96, 128), torch.empty(96, 128))  # the same key: no sweep
    tuned(torch.randn(40, 128), torch.empty(40, 128))  # another key: its own sweep
    assert tuned.sweeps == 2 and len(tuned.cache_info()) == 2
    assert sorted(os.listdir(tmp_path)) == sorted(os.path.basename(e.path) for e in tuned.cache_info())

    script = textwrap.dedent(f'''
        import sys, torch
        sys.path.insert(0, {os.path.dirname(__file__)!r})
        import pypto.tune as tune
        from tune_kernels import exp_rows
        tuned = tune.autotune(key=["x"], TILE=[16, 32, 64], options={{"device_sched_mode": [0, 1]}})(exp_rows)
        tuned(torch.randn(96, 128), torch.empty(96, 128))
        [e] = tuned.cache_info()
        print(tuned.sweeps, e.source, sorted(e.config.items()))
    ''')
    env = {**os.environ, "PYTHONPATH": os.path.dirname(os.path.dirname(pypto.__file__))}
    done = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, env=env, timeout=300)
    assert done.returncode == 0, done.stderr
    assert done.stdout.split()[:2] == ["0", "disk"]
    assert done.stdout.strip().endswith(str(sorted(entry.config.items())))


def test_autotune_refuses_bad_arguments():
    with pytest.raises(pypto.PyptoError, match="needs candidates"):
        tune.autotune(key=["x"])
    with pytest.raises(pypto.PyptoError, match="key names 'y'"):
        tune.autotune(key=["y"], TILE=[16])(exp_rows)
    with pytest.raises(pypto.PyptoError, match="decorates a pypto.jit kernel"):
        tune.autotune(TILE=[16])(lambda x: x)
