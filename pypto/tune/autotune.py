"""Kernels that remember their best configuration: `autotune` wraps a ``pypto.jit`` kernel so that
the first call with a new key (by default the shapes and dtypes of its tensor arguments) finds the
best configuration on disk, or runs a sweep (in this process) and stores it there, then every call
with that key runs the kernel compiled with it. Another process with the same kernel, candidates,
key and machine reads the stored best at once, without sweeping.

The cache folder is ``$PYPTO_TUNE_CACHE_DIR`` if set, else the user's cache folder
(``~/.cache/pypto/tune`` on Linux). One small JSON file per (kernel and its source, candidates,
key, machine model, baseline), written atomically.
"""

from __future__ import annotations

import json
import os
from dataclasses import dataclass

from ..errors import OptionError
from .key import describe_baseline, key_digest, kernel_identity, machine_identity
from .space import Space

CACHE_ENV = "PYPTO_TUNE_CACHE_DIR"


def cache_dir() -> str:
    """Where tuned configurations are stored: ``$PYPTO_TUNE_CACHE_DIR``, else the user cache folder."""
    env = os.environ.get(CACHE_ENV)
    if env:
        return env
    try:
        from platformdirs import user_cache_dir
    except ImportError:  # no platformdirs: the XDG default
        base = os.environ.get("XDG_CACHE_HOME") or os.path.join(os.path.expanduser("~"), ".cache")
        return os.path.join(base, "pypto", "tune")
    return os.path.join(user_cache_dir("pypto"), "tune")


@dataclass(frozen=True)
class TunedEntry:
    """Which configuration serves one key: ``source`` is ``"sweep"`` (tuned in this process) or
    ``"disk"`` (read from the cache folder); ``makespan_cycles`` is the sweep's figure for it."""

    key: tuple
    config: dict
    source: str
    makespan_cycles: int | None
    path: str


def autotune(space: Space | None = None, *, key=None, options: dict | None = None, constraints=(),
             strategy: str = "grid", budget: int | None = None, baseline=None, **params):
    """Decorate a ``pypto.jit`` kernel to tune itself per key and remember the best on disk::

        @pypto.tune.autotune(TILE=[16, 32, 64], options={"device_sched_mode": [0, 1, 2, 3]}, key=["x"])
        @pypto.jit
        def rows(x, out, TILE: int = 32): ...

    The candidates are a `space` (its shapes are not used: each key sweeps on the shapes of its
    first call) or ``params``/``options``/``constraints`` as for `space`. ``key``: the names of the
    arguments whose shapes and dtypes (tensors) or values select a configuration (default: every
    tensor argument). ``strategy``, ``budget`` and ``baseline`` are passed to `sweep` (which runs
    in this process). The wrapped kernel's ``cache_info()`` lists the configuration of each key."""
    if space is not None and not isinstance(space, Space):
        raise OptionError("autotune takes a pypto.tune.space or candidates as keywords", param="space",
                          expected="a Space, or e.g. TILE=[16, 32]", got=type(space).__name__)
    candidates = {"params": dict(space.params) if space else {}, "options": dict(space.options) if space else {},
                  "constraints": tuple(space.constraints) if space else ()}
    candidates["params"].update(params)
    candidates["options"].update(options or {})
    candidates["constraints"] += tuple([constraints] if isinstance(constraints, str) else constraints)
    if not candidates["params"] and not candidates["options"]:
        raise OptionError("autotune needs candidates to try", param="space", expected="e.g. TILE=[16, 32, 64]",
                          got="none")

    def wrap(kernel):
        if not hasattr(kernel, "cache_info"):
            raise OptionError("autotune decorates a pypto.jit kernel", param="kernel",
                              expected="@pypto.tune.autotune(...) above @pypto.jit", got=type(kernel).__name__)
        return Autotuned(kernel, candidates, key, strategy, budget, baseline)
    return wrap


class Autotuned:
    """A ``pypto.jit`` kernel that runs with the best configuration of each key (see `autotune`)."""

    def __init__(self, kernel, candidates: dict, key, strategy, budget, baseline):
        import functools
        import inspect

        from ..frontend.signature import Signature

        self.kernel, self.candidates, self.strategy, self.budget, self.baseline = \
            kernel, candidates, strategy, budget, baseline
        self.signature = Signature(kernel.fn, kernel.loc)
        self._params = inspect.signature(kernel.fn)
        tensors = [t.param for t in self.signature.tensors]
        self.key_names = list(key) if key is not None else tensors
        unknown = [n for n in self.key_names if n not in self._params.parameters]
        if unknown:
            raise OptionError(f"autotune key names {', '.join(map(repr, unknown))}, not parameters of "
                              f"{kernel.fn.__name__}", param="key", expected=", ".join(self._params.parameters),
                              got=", ".join(unknown))
        self._entries: dict = {}  # key -> TunedEntry
        self._kernels: dict = {}  # config text -> the kernel compiled with it
        self.sweeps = 0  # sweeps run by this process
        functools.update_wrapper(self, kernel.fn)

    def _bound(self, args, kwargs) -> dict:
        bound = self._params.bind(*args, **kwargs)
        return dict(bound.arguments)

    def key_of(self, *args, **kwargs) -> tuple:
        """The key a call with these arguments is served by."""
        values = self._bound(args, kwargs)
        out = []
        for name in self.key_names:
            v = values.get(name)
            out.append((name, tuple(v.shape), str(v.dtype)) if hasattr(v, "shape") else (name, repr(v)))
        return tuple(out)

    def _path(self, key: tuple) -> str:
        ident = {"kernel": kernel_identity(self.kernel), "candidates": _plain(self.candidates),
                 "key": _plain(key), "machine": machine_identity(), "baseline": describe_baseline(self.baseline)}
        name = getattr(self.kernel.fn, "__name__", "kernel")
        return os.path.join(cache_dir(), f"{name}-{key_digest(ident)}.json")

    def best_config(self, *args, **kwargs) -> dict:
        """The configuration serving a call with these arguments (tuned now if nothing is stored)."""
        key = self.key_of(*args, **kwargs)
        entry = self._entries.get(key)
        if entry is None:
            entry = self._entries[key] = self._find(key, self._bound(args, kwargs))
        return entry.config

    def _find(self, key: tuple, values: dict) -> TunedEntry:
        path = self._path(key)
        try:
            with open(path) as f:
                stored = json.load(f)
            return TunedEntry(key, stored["config"], "disk", stored.get("makespan_cycles"), path)
        except (OSError, ValueError, KeyError):
            pass  # nothing stored (or a torn file): tune now
        from .runner import sweep
        from .space import space as make_space

        shapes = {t.param: tuple(values[t.param].shape) for t in self.signature.tensors
                  if hasattr(values.get(t.param), "shape")}
        dtypes = {t.param: str(values[t.param].dtype).replace("torch.", "").replace("float", "fp")
                  for t in self.signature.tensors if t.dtype is None and hasattr(values.get(t.param), "dtype")}
        sp = make_space(shapes, params=self.candidates["params"], options=self.candidates["options"],
                        constraints=self.candidates["constraints"], dtypes=_dtype_names(dtypes))
        results = sweep(self.kernel, sp, strategy=self.strategy, budget=self.budget, runner="inprocess",
                        baseline=self.baseline)
        self.sweeps += 1
        best = results.best
        if best is None:
            first = results.failed[0].error.splitlines()[0] if results.failed else "no trial ran"
            raise OptionError(f"autotune of {self.kernel.fn.__name__}: no candidate ran successfully for key "
                              f"{key}", param="space", expected="at least one working configuration", got=first)
        _write_atomically(path, {"config": best.config, "makespan_cycles": best.makespan_cycles,
                                 "key": _plain(key), "kernel": self.kernel.fn.__name__})
        return TunedEntry(key, best.config, "sweep", best.makespan_cycles, path)

    def __call__(self, *args, **kwargs):
        from .render import apply
        from .space import config_key

        config = self.best_config(*args, **kwargs)
        text = config_key(config)
        tuned = self._kernels.get(text)
        if tuned is None:
            tuned = self._kernels[text] = apply(self.kernel, config)
        self.last_kernel = tuned
        return tuned(*args, **kwargs)

    @property
    def last_run(self):
        """The last call's record (of the kernel compiled with its key's configuration)."""
        k = getattr(self, "last_kernel", None)
        return k.last_run if k is not None else None

    def cache_info(self) -> list:
        """One `TunedEntry` per key served so far: its configuration and where it came from."""
        return list(self._entries.values())

    def cache_clear(self) -> None:
        """Forget the keys in this process (the files on disk stay)."""
        self._entries.clear()
        self._kernels.clear()


def _dtype_names(dtypes: dict) -> dict:
    names = {"fp32": "fp32", "fp16": "fp16", "bfp16": "bf16", "bfloat16": "bf16", "int32": "int32",
             "int8": "int8", "int64": "int64", "bool": "bool", "int16": "int16"}
    return {k: names.get(v, v) for k, v in dtypes.items()}


def _plain(obj):
    return json.loads(json.dumps(obj, default=str))


def _write_atomically(path: str, data: dict) -> None:
    """Write a fresh temporary file beside ``path`` and rename it: a reader sees the old file or
    the new one, never a part; an interrupted write removes its temporary."""
    import tempfile

    os.makedirs(os.path.dirname(path), exist_ok=True)
    fd, tmp = tempfile.mkstemp(prefix=f".{os.path.basename(path)}.", dir=os.path.dirname(path))
    try:
        with os.fdopen(fd, "w") as f:
            json.dump(data, f, default=str)
        os.replace(tmp, path)
    except BaseException:
        os.unlink(tmp)
        raise
