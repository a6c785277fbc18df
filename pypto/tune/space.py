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
    constraints: tuple = ()  # expressions (text) or callables(config) -> bool; see `space`

    def allows(self, config: dict, machine=None) -> bool:
        """Whether ``config`` meets every constraint (checked before anything compiles)."""
        if not self.constraints:
            return True
        names = None
        for c in self.constraints:
            if callable(c):
                ok = c(config)
            else:
                if names is None:
                    names = {**memory_names(machine), **config}
                ok = eval(_compiled(c), {"__builtins__": {}, **_FUNCTIONS}, names)  # noqa: S307 - checked names only
            if not ok:
                return False
        return True

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
                "dtypes": dict(self.dtypes),
                "constraints": [c if isinstance(c, str) else f"<function {getattr(c, '__qualname__', c)}>"
                                for c in self.constraints]}

    @classmethod
    def from_dict(cls, d: dict) -> "Space":
        """The space of `to_dict` (a function constraint stays behind: the sweep's driver applies
        it before a configuration is sent anywhere)."""
        return space(shapes=d["shapes"], params=d.get("params"), options=d.get("options"),
                     dtypes=d.get("dtypes"),
                     constraints=[c for c in d.get("constraints", ()) if not c.startswith("<function")])


def space(shapes, params: dict | None = None, options: dict | None = None, dtypes: dict | None = None,
          constraints=(), **kernel_params) -> Space:
    """Declare a search space.

    ``shapes``: one dict (or a list of dicts) of tensor parameter -> shape, e.g.
    ``{"x": (4096, 512), "out": (4096, 512)}``; each configuration runs every call and its figures
    are summed over them. ``params`` (or keyword arguments): kernel compile-time parameters ->
    candidates, e.g. ``TILE=[32, 64, 128]``. ``options``: runtime option name or ``"pass.<name>"``
    -> candidates, e.g. ``{"device_sched_mode": [0, 1, 2, 3]}``. Option values are checked against
    pypto's option table here; a kernel parameter's values are checked when the kernel compiles.
    ``constraints``: expressions over the searched names and the machine's local memories in
    bytes (``UB``, ``L1``, ``L0A``, ``L0B``, ``L0C``), e.g. ``"BQ * BK * 4 * 2 <= UB"``, or
    functions of a configuration returning a bool; a configuration that breaks one is never
    compiled nor run (it is counted in ``Results.pruned``).
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
    dims = {**all_params, **checked_options}
    checked = tuple(_constraint(c, dims) for c in ([constraints] if isinstance(constraints, str) else constraints))
    return Space({k: _candidates(k, v) for k, v in all_params.items()}, checked_options, tuple(frozen_calls),
                 dict(dtypes or {}), checked)


_MEMORIES = {"UB": "ub_bytes", "L1": "l1_bytes", "L0A": "l0a_bytes", "L0B": "l0b_bytes", "L0C": "l0c_bytes"}
_FUNCTIONS = {"min": min, "max": max, "abs": abs}


def memory_names(machine=None) -> dict:
    """``UB``, ``L1``, ``L0A``, ``L0B``, ``L0C`` -> bytes of ``machine`` (default: the current one)."""
    from ..runtime.machine import current_machine

    m = machine or current_machine()
    return {name: getattr(m, attr) for name, attr in _MEMORIES.items()}


_CODE: dict = {}


def _compiled(text: str):
    code = _CODE.get(text)
    if code is None:
        code = _CODE[text] = compile(text, "<constraint>", "eval")
    return code


def _constraint(c, dims: dict):
    """A checked constraint: a callable as given, or an expression naming only known names."""
    import ast

    if callable(c):
        return c
    if not isinstance(c, str):
        raise OptionError("a constraint is an expression (text) or a function of a configuration",
                          param="constraints", expected="e.g. 'BQ * BK <= 4096'", got=type(c).__name__)
    try:
        tree = ast.parse(c, mode="eval")
    except SyntaxError as e:
        raise OptionError(f"constraint {c!r} is not a Python expression", param="constraints",
                          expected="e.g. 'BQ * BK <= 4096'", got=str(e.msg)) from None
    known = set(dims) | set(_MEMORIES) | set(_FUNCTIONS)
    unknown = sorted({n.id for n in ast.walk(tree) if isinstance(n, ast.Name)} - known)
    if unknown:
        raise OptionError(f"constraint {c!r} names {', '.join(unknown)}, not searched", param="constraints",
                          expected="names of the space (" + ", ".join(dims) + ") or " + ", ".join(_MEMORIES),
                          got=", ".join(unknown))
    if any(isinstance(n, (ast.Attribute, ast.Lambda)) for n in ast.walk(tree)):
        raise OptionError(f"constraint {c!r} uses attributes or lambdas", param="constraints",
                          expected="arithmetic and comparisons of the space's names", got=c)
    return c


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
