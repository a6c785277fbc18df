"""Search spaces: the candidate values of a kernel's compile-time parameters and of pypto's options,
over one or several concrete call shapes.

A *configuration* is a flat dict: kernel parameters by their name (``{"TILE": 64}``), runtime
options by their option name (``{"device_sched_mode": 1}``) and pass options as
``"pass.<name>"``. Everything here is plain data (lists, dicts, ints, strings), so a space travels
to Dask workers as JSON-able values.
"""

from __future__ import annotations

import itertools
import math
from dataclasses import dataclass, field

from ..errors import OptionError

PASS_PREFIX = "pass."


@dataclass(frozen=True)
class Space:
    """The candidates of a sweep (build one with `space`).

    ``params``: kernel parameter -> candidate values; ``options``: option key (a runtime option's
    name or ``pass.<name>``) -> candidate values; ``shapes``: the calls each configuration runs, one
    dict per call of tensor parameter -> shape (DYNAMIC dims take each listed size); ``dtypes``:
    tensor parameter -> dtype name for parameters whose annotation gives none (default fp32).
    """

    params: dict = field(default_factory=dict)
    options: dict = field(default_factory=dict)
    shapes: tuple = ()
    dtypes: dict = field(default_factory=dict)

    @property
    def dims(self) -> dict:
        """Every searched name -> its candidate values, parameters first."""
        return {**self.params, **self.options}

    @property
    def size(self) -> int:
        """The number of configurations (the grid's size)."""
        return math.prod(len(v) for v in self.dims.values())

    def grid(self):
        """Every configuration, in a fixed order (the last name varies fastest)."""
        names = list(self.dims)
        for values in itertools.product(*self.dims.values()):
            yield dict(zip(names, values))

    def to_dict(self) -> dict:
        """JSON-able form (`Space.from_dict` reads it back)."""
        return {"params": {k: list(v) for k, v in self.params.items()},
                "options": {k: list(v) for k, v in self.options.items()},
                "shapes": [{k: list(s) for k, s in call.items()} for call in self.shapes],
                "dtypes": dict(self.dtypes)}

    @classmethod
    def from_dict(cls, d: dict) -> "Space":
        return space(shapes=d["shapes"], params=d.get("params"), options=d.get("options"),
                     dtypes=d.get("dtypes"))


def space(shapes, params: dict | None = None, options: dict | None = None, dtypes: dict | None = None,
          **kernel_params) -> Space:
    """Declare a search space.

    ``shapes``: one dict (or a list of dicts) of tensor parameter -> shape, e.g.
    ``{"x": (4096, 512), "out": (4096, 512)}``; each configuration runs every call and its figures
    are summed over them. ``params`` (or keyword arguments): kernel compile-time parameters ->
    candidates, e.g. ``TILE=[32, 64, 128]``. ``options``: runtime option name or ``"pass.<name>"``
    -> candidates, e.g. ``{"device_sched_mode": [0, 1, 2, 3]}``. Option values are checked against
    pypto's option table here; a kernel parameter's values are checked when the kernel compiles.
    """
    from ..options import OPTIONS, validate_group

    calls = [shapes] if isinstance(shapes, dict) else list(shapes)
    if not calls:
        raise OptionError("space(shapes=...) needs at least one call shape", expected="a dict of "
                          "tensor parameter -> shape, or a list of them", got="[]", param="shapes")
    frozen_calls = []
    for call in calls:
        if not isinstance(call, dict):
            raise OptionError("a call shape is a dict of tensor parameter -> shape", param="shapes",
                              expected="dict", got=type(call).__name__)
        frozen_calls.append({str(k): tuple(int(d) for d in v) for k, v in call.items()})
    all_params = {**(params or {}), **kernel_params}
    checked_options = {}
    for key, values in (options or {}).items():
        group, name = ("pass", key[len(PASS_PREFIX):]) if key.startswith(PASS_PREFIX) else ("runtime", key)
        if (group, name) not in OPTIONS:
            raise OptionError(f"unknown option {key!r} in the search space", param="options",
                              expected="a runtime option name or 'pass.<name>'", got=repr(key))
        values = _candidates(key, values)
        for v in values:
            validate_group(group, {name: v}, param=f"options[{key!r}]")
        checked_options[key] = values
    for param, name in (dtypes or {}).items():
        dtype_named(param, name)
    return Space({k: _candidates(k, v) for k, v in all_params.items()}, checked_options, tuple(frozen_calls),
                 dict(dtypes or {}))


def dtype_named(param: str, name: str):
    """The supported pypto dtype called ``name`` (``"fp16"``), given for tensor parameter ``param``."""
    from ..dtypes import SUPPORTED_DTYPES

    for d in SUPPORTED_DTYPES:
        if d.name == "DT_" + str(name).upper():
            return d
    raise OptionError(f"unknown dtype {name!r} for tensor parameter '{param}'", param=f"dtypes[{param!r}]",
                      expected="one of " + ", ".join(d.name[3:].lower() for d in SUPPORTED_DTYPES),
                      got=repr(name))


def _candidates(name, values) -> list:
    values = list(values) if isinstance(values, (list, tuple, range)) else [values]
    if not values:
        raise OptionError(f"no candidate values for {name!r}", param=name, expected="a non-empty list",
                          got="[]")
    return [list(v) if isinstance(v, tuple) else v for v in values]


def split(config: dict) -> tuple[dict, dict, dict]:
    """(kernel parameters, runtime options, pass options) of one configuration."""
    from ..options import OPTIONS

    params, runtime, passes = {}, {}, {}
    for k, v in config.items():
        if k.startswith(PASS_PREFIX):
            passes[k[len(PASS_PREFIX):]] = v
        elif ("runtime", k) in OPTIONS:
            runtime[k] = v
        else:
            params[k] = v
    return params, runtime, passes


def compile_part(config: dict) -> dict:
    """The values of ``config`` that can change the compiled program (kernel parameters, pass
    options and compile-affecting runtime options): trials that agree on them share a compile."""
    from ..options import OPTIONS

    params, runtime, passes = split(config)
    out = dict(params)
    out.update({PASS_PREFIX + k: v for k, v in passes.items()})
    out.update({k: v for k, v in runtime.items() if OPTIONS["runtime", k].affects_compile})
    return out


def config_key(config: dict) -> str:
    """A stable text key of a configuration (finished-trial lookup when resuming)."""
    import json

    return json.dumps(config, sort_keys=True, default=str)
