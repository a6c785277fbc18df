"""Autotuning sweeps: search a kernel's tile parameters and pypto's options for the shortest
simulated makespan, in this process or on a Dask cluster.

    space = pypto.tune.space({"x": (4096, 512), "out": (4096, 512)}, TILE=[32, 64, 128],
                             options={"device_sched_mode": [0, 1, 2, 3]})
    results = pypto.tune.sweep(kernel, space, strategy="tpe", budget=200)
    print(results.table())
    print(pypto.tune.render(kernel, results.best))
    tuned = pypto.tune.apply(kernel, results.best)

`space` declares the candidates (`space.py`); a trial compiles only when a compile-affecting value
changes and otherwise re-simulates the cached call (`trial.py`); strategies choose the next
configuration (`search.py`); runners execute trials here or on Dask (`runner.py`); `Results`
hold the records (`results.py`); `render`/`apply` use the best (`render.py`). Command line:
``python -m pypto.tune module:kernel --shape x=4096,512 ...`` (`cli.py`). `autotune` makes a kernel
tune itself per key and remember the best on disk (`autotune.py`). A sweep's ``store`` is a
journal keyed by what its results depend on (`store.py`, `key.py`).
"""

from .autotune import Autotuned, autotune, cache_dir
from .render import apply, render
from .results import Results
from .runner import DaskRunner, InProcessRunner, SweepInterrupted, sweep
from .search import GridSearch, OptunaSearch, RandomSearch
from .source import KernelSource
from .space import Space, memory_names as space_memory, space
from .trial import Evaluator, TrialRecord

__all__ = ["Autotuned", "DaskRunner", "Evaluator", "GridSearch", "InProcessRunner", "KernelSource",
           "OptunaSearch", "RandomSearch", "Results", "Space", "SweepInterrupted", "TrialRecord", "apply",
           "autotune", "cache_dir", "render", "space", "space_memory", "sweep"]
