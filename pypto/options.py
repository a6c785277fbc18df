"""Every compile and runtime option of pypto, declared once.

Each option is one :class:`OptionSpec` row in ``_TABLE`` (group, name, kind, default, range or
choices, doc, whether it can change the compiled program). Validation, the ``set_*_options`` /
``get_*_options`` functions, :func:`describe` and the compile cache key all derive from that table.

Kinds and their normalised (hashable) values, as returned by :meth:`OptionSpec.validate`:

* ``int``      -- a plain ``int`` in ``[low, high]`` (or one of ``special``); ``IntEnum`` members
  such as ``RunMode.SIM`` become plain ints. ``bool`` is rejected.
* ``bool``     -- ``True``/``False`` only (``0``/``1`` are rejected).
* ``str``      -- a ``str``, one of ``choices`` when given.
* ``list_str`` -- a ``tuple`` of ``str`` (from a list or tuple; a bare string is refused, as
  upstream does).
* ``float_pair`` -- ``(rtol, atol)``: a tuple of two non-negative floats.
* ``dict``     -- a :class:`FrozenMap` (a read-only, hashable ``dict``) of merge settings. Keys are
  ints (``key_low`` .. int32 max), ``'DEFAULT'``, ``'func<magic>_<order>'`` or any other str
  (a semantic label); ints cannot be mixed with the DEFAULT/func keys. A ``(count, side)`` value
  keeps its side lower-cased; ``(count, 'auto')`` is just ``count``.
* ``scope``    -- ``(scope_id, allow_parallel_merge, allow_cross_scope_merge)``; a bare int ``i``
  means ``(i, False, False)``.

Values are looked up through layers: defaults <- global settings <- :func:`options` scopes
(innermost wins) <- the per-kernel jit dicts given to :func:`effective`. As upstream, ``set_*``
writes into the innermost active scope (or the global settings when no scope is active), so a
setting made inside ``with pypto.options(...)`` ends with that block. An unknown key is an error.
Scopes are per thread and per asyncio task (``scopes.py``: a scope one thread enters never changes
what another thread compiles or runs); settings made outside any scope are process-wide.

A value of the wrong type raises :class:`OptionTypeError` (a ``TypeError`` and a ``ValueError``),
a value out of range :class:`OptionError` (a ``ValueError``). The ``get_<group>_options()``
getters return lists and plain dicts; options marked ``listed=False`` (internal tuning knobs) are
set through :func:`set_options` only and left out of the getters, as upstream does.
"""

from __future__ import annotations

import difflib
import enum
import functools
import inspect
import numbers
import re
import threading
from dataclasses import dataclass, field, replace
from typing import Any, Callable, Mapping

from . import scopes as _scopes
from .errors import ExternalError, OptionError, OptionTypeError, error_code

INT32_MAX = 2**31 - 1


class RunMode(enum.IntEnum):
    """Where a kernel runs: the NPU (no backend in this build) or the CPU simulator."""

    NPU = 0
    SIM = 1


class CompStage(enum.IntEnum):
    """The stage after which compilation stops (anything but ALL_COMPLETE: the kernel is not run)."""

    ALL_COMPLETE = 0
    TENSOR_GRAPH = 1
    TILE_GRAPH = 2
    EXECUTE_GRAPH = 3
    CODEGEN_INSTRUCTION = 4
    CODEGEN_BINARY = 5


class FrozenMap(dict):
    """A read-only, hashable dict: the normalised value of ``dict`` options."""

    __slots__ = ()

    def __hash__(self) -> int:  # type: ignore[override]
        return hash(frozenset(self.items()))

    def _read_only(self, *args, **kwargs):
        raise TypeError("option values are read-only; set a new dict through the options API")

    __setitem__ = __delitem__ = clear = pop = popitem = setdefault = update = _read_only
    __ior__ = _read_only

    def __reduce__(self):
        return (FrozenMap, (dict(self),))


_FUNC_KEY = re.compile(r"func\d+_\d+")


def _show(value: object) -> str:
    return f"{value!r} ({type(value).__name__})"


def _is_int(value: object) -> bool:
    return isinstance(value, numbers.Integral) and not isinstance(value, bool)


def _is_real(value: object) -> bool:
    return isinstance(value, numbers.Real) and not isinstance(value, bool)


def _type_name(value: object) -> str:
    """The type of ``value`` in the option system's vocabulary (``int64``, ``string``, ``double``,
    ``list[int64]``, ``dict[string, int64]`` ...), the words an option's expected type is given in."""
    if isinstance(value, bool):
        return "bool"
    if _is_int(value):
        return "int64"
    if isinstance(value, str):
        return "string"
    if _is_real(value):
        return "double"
    if isinstance(value, list):
        inner = sorted({_type_name(v) for v in value})
        return f"list[{' | '.join(inner)}]" if inner else "list"
    if isinstance(value, tuple):
        return "tuple"
    if isinstance(value, Mapping):
        keys = sorted({_type_name(k) for k in value})
        vals = sorted({_type_name(v) for v in value.values()})
        return f"dict[{' | '.join(keys)}, {' | '.join(vals)}]" if keys else "dict"
    return "None" if value is None else type(value).__name__


# the declared type of each kind of option, in the same vocabulary
_KIND_TYPE = {"int": "int64", "bool": "bool", "str": "string", "list_str": "list[string]",
              "float_pair": "list[double]", "dict": "dict[int64, int64]", "scope": "int64 or tuple"}


def _type_check_header() -> str:
    """The first line of a type error: its error code and kind (as upstream's checks print them)."""
    return (f"CHECK FAILED: ErrCode: {error_code(TypeError):X}! "
            f"Enum: ExternalError::{ExternalError.INVALID_TYPE.name}")


@dataclass(frozen=True)
class OptionSpec:
    """One option: its type, allowed values, default and a one-line doc."""

    group: str
    name: str
    kind: str
    default: object
    doc: str
    low: int | float | None = None  # int: value range; dict: least count; scope: scope id range
    high: int | None = None
    choices: tuple | None = None  # str: allowed strings; dict: sides allowed in (count, side)
    special: tuple[int, ...] = ()  # int values allowed outside [low, high] (e.g. -1 = off)
    enum: type | None = None  # the IntEnum whose members name the int values
    affects_compile: bool = True  # False: only changes how the program is scheduled/simulated
    legacy_bool: bool = False  # int option that was a bool in older releases: True -> 1
    key_low: int = -1  # dict: the least int key (-1 = every group; vec_nbuffer_setting also -2)
    listed: bool = True  # False: internal tuning knob, settable but not in get_*/set_*_options

    @property
    def key(self) -> str:
        return f"{self.group}.{self.name}"

    @property
    def param(self) -> str:
        return f"{self.group}_options[{self.name!r}]"

    def expected(self) -> str:
        """The allowed values in words (used in error messages and :func:`describe`)."""
        k = self.kind
        if k == "int":
            text = f"int in [{self.low}, {self.high}]"
            if self.special:
                text = f"int {' or '.join(map(str, self.special))} or in [{self.low}, {self.high}]"
            if self.enum is not None:
                text += " (" + ", ".join(f"{self.enum.__name__}.{m.name}={m.value}" for m in self.enum) + ")"
            return text
        if k == "str":
            return "str" if self.choices is None else "one of " + ", ".join(map(repr, self.choices))
        if k == "list_str":
            return "list of str"
        if k == "float_pair":
            return "[rtol, atol]: two non-negative numbers"
        if k == "dict":
            value = f"int >= {self.low}"
            if self.choices:
                value += f" or (count >= 1, {'|'.join(map(repr, self.choices))})"
            return (f"dict {{int key in [{self.key_low}, {INT32_MAX}], or 'DEFAULT' / 'func<magic>_<order>' / "
                    f"label: {value}}}")
        if k == "scope":
            return (f"int scope id in [{self.low}, {self.high}] or "
                    "(scope_id, allow_parallel_merge: bool, allow_cross_scope_merge: bool)")
        return k  # bool

    def _fail(self, value: object, why: str | None = None) -> OptionError:
        """A value of the right type that is out of range (a ValueError)."""
        expected = self.expected() + (f"; {why}" if why else "")
        head = f"Option '{self.key}' value doesn't within the value range"
        if self.kind == "int":
            allowed = f"an integer in [{self.low}, {self.high}]"
            if self.special:
                allowed = " or ".join(map(str, self.special)) + " or " + allowed
            head += f". Invalid {self.name}: '{value}'. Expected {allowed}."
        elif why:
            head += f": {why}"
        return OptionError(head, expected=expected, got=_show(value), param=self.param)

    def _wrong_type(self, value: object, why: str | None = None) -> OptionTypeError:
        """A value of the wrong type (a TypeError, and a ValueError like every OptionError)."""
        expected = self.expected() + (f"; {why}" if why else "")
        head = (f"{_type_check_header()}\nOption '{self.key}' has invalid type. "
                f"Expected {_KIND_TYPE[self.kind]}, but got {_type_name(value)}")
        return OptionTypeError(head, expected=expected, got=f"{value!r} ({_type_name(value)})", param=self.param)

    def _wrong_element(self, value: object, index: int, want: type) -> OptionTypeError:
        """An element of a list (or tuple) value of the wrong type."""
        got = value[index]
        head = (f"{_type_check_header()}\nOption '{self.key}' has invalid list element type at index {index}. "
                f"Expected {want.__name__}, but got {type(got).__name__}")
        return OptionTypeError(head, expected=self.expected(), got=f"{value!r}", param=self.param)

    def validate(self, value: object) -> object:
        """Return the normalised, hashable form of ``value`` or raise :class:`OptionError`
        (:class:`OptionTypeError` when the type is wrong)."""
        k = self.kind
        if k == "int":
            return self._check_int(value)
        if k == "dict":
            return self._check_dict(value)
        if k == "scope":
            return self._check_scope(value)
        if k == "list_str":
            return self._check_list_str(value)
        if k == "float_pair":
            return self._check_pair(value)
        if k == "bool":
            if isinstance(value, bool):
                return value
            raise self._wrong_type(value)
        if not isinstance(value, str):  # str
            raise self._wrong_type(value)
        if self.choices is None or value in self.choices:
            return value
        raise self._fail(value)

    def _check_int(self, value):
        if self.legacy_bool and isinstance(value, bool):
            return int(value)
        if not _is_int(value):
            raise self._wrong_type(value, "bool is not an int option value" if isinstance(value, bool) else None)
        if value in self.special or self.low <= value <= self.high:
            return int(value)
        raise self._fail(value)

    def _check_list_str(self, value):
        # a bare str is refused (as upstream): "abc" would otherwise read as ['a', 'b', 'c'] or ['abc']
        if not isinstance(value, (list, tuple)):
            raise self._wrong_type(value)
        for i, v in enumerate(value):
            if not isinstance(v, str):
                raise self._wrong_element(value, i, str)
        return tuple(value)

    def _check_pair(self, value):
        if not isinstance(value, (list, tuple)) or not all(_is_real(v) for v in value):
            raise self._wrong_type(value)
        if len(value) == 2 and all(0 <= v < float("inf") for v in value):
            return (float(value[0]), float(value[1]))
        raise self._fail(value)

    def _check_dict(self, value):
        if not isinstance(value, Mapping):
            raise self._wrong_type(value)
        items = {}
        for key, count in value.items():
            if _is_int(key):
                if not self.key_low <= key <= INT32_MAX:
                    raise self._fail(value, f"int key {key} is out of range")
                key = int(key)
            elif not isinstance(key, str):
                raise self._wrong_type(value, f"key {key!r} is a {type(key).__name__}")
            elif not key:
                raise self._fail(value, "an empty str key")
            # any other str (including 'func_0' or 'func12') is a semantic label
            items[key] = self._check_count(value, key, count)
        if any(_is_int(k) for k in items) and any(_is_hash_order_key(k) for k in items):
            raise self._fail(value, "cannot mix int keys with 'DEFAULT' / 'func<magic>_<order>' keys "
                                    "in one setting")
        return FrozenMap(sorted(items.items(), key=lambda kv: (isinstance(kv[0], str), kv[0])))

    def _check_count(self, whole, key, count):
        if _is_int(count):
            if self.low <= count <= INT32_MAX:
                return int(count)
            raise self._fail(whole, f"merge count {count} of key {key!r} is out of range")
        if self.choices and isinstance(count, (list, tuple)):
            # (count, side): side is case-insensitive; 'auto' is the plain count
            if len(count) != 2:
                raise self._fail(whole, f"value of key {key!r} must be (count, side), got {len(count)} entries")
            n, side = count
            if not _is_int(n) or not isinstance(side, str):
                raise self._wrong_type(whole, f"value of key {key!r} must be (int count, str side)")
            side = side.lower()
            if not 1 <= n <= INT32_MAX or side not in self.choices:
                raise self._fail(whole, f"bad (count, side) {count!r} for key {key!r}")
            return int(n) if side == "auto" else (int(n), side)
        raise self._wrong_type(whole, f"value of key {key!r} is {count!r} ({type(count).__name__})")

    def _check_scope(self, value):
        if _is_int(value):
            value = (value, False, False)
        if not isinstance(value, (list, tuple)):
            raise self._wrong_type(value)
        if len(value) != 3:
            raise OptionError(f"Option '{self.key}' takes (scope_id, allow_parallel_merge, allow_cross_scope_merge). "
                              f"Expected 3 entries, but got {len(value)}", expected=self.expected(),
                              got=_show(value), param=self.param)
        for i, want in enumerate((int, bool, bool)):
            ok = _is_int(value[i]) if want is int else isinstance(value[i], bool)
            if not ok:
                head = (f"{_type_check_header()}\nOption '{self.key}' entry {i} has invalid type. "
                        f"Expected {want.__name__}, but got {_type_name(value[i])}")
                raise OptionTypeError(head, expected="(int, bool, bool)", got=_show(value), param=self.param)
        if not self.low <= value[0] <= self.high:
            raise OptionError(f"Option '{self.key}' scope_id {value[0]} is out of range. "
                              f"Expected {self.low}~{self.high}.", expected=self.expected(), got=_show(value),
                              param=self.param)
        if value[0] == -1 and (value[1] or value[2]):
            raise self._fail(value, "scope id -1 requires both flags False")
        return (int(value[0]), value[1], value[2])

    def user_form(self, value: object) -> object:
        """``value`` as the getters return it: lists for list options, a plain dict for maps."""
        if self.kind in ("list_str", "float_pair"):
            return list(value)
        if self.kind == "dict":
            return dict(value)
        return value


def _is_hash_order_key(key: object) -> bool:
    return key == "DEFAULT" or (isinstance(key, str) and _FUNC_KEY.fullmatch(key) is not None)


def _o(group: str, name: str, kind: str, default, doc: str, rng: tuple | None = None, **kw) -> OptionSpec:
    low, high = rng if rng is not None else (kw.pop("low", None), None)
    return OptionSpec(group, name, kind, default, doc, low=low, high=high, **kw)


_R = dict(affects_compile=False)  # runtime options that only change scheduling / simulation
# tuning knobs upstream keeps out of get_pass_options()/set_pass_options(): set_options(pass_options=..)
_INTERNAL = dict(listed=False)
_I32 = INT32_MAX
_VERIFY_PASSES = ("ExpandFunction", "ProcessAtomic", "L1CopyInReuseMerge", "InferDynShape",
                  "PreGraphProcess", "InferParamIndex", "CodegenPreproc")

# group, name, kind, default, one-line doc, (low, high), extras
_TABLE: tuple[OptionSpec, ...] = (
    _o("codegen", "support_dynamic_aligned", "bool", False,
       "Promise that dynamic tiles are always full (no unaligned tail)."),
    _o("codegen", "soc_version", "str", "", "Target SoC for code generation ('' = current device)."),
    _o("codegen", "enable_pmu_trace", "bool", False, "Instrument generated code with PMU counters."),
    _o("codegen", "vf_options", "str", "", "Extra options for the vector-function compiler."),
    _o("host", "compile_stage", "int", CompStage.ALL_COMPLETE,
       "Stop after this stage; anything but ALL_COMPLETE does not run the kernel: the call compiles "
       "(kernel.inspect shows the passes up to the stage), writes no output and returns None.", (0, 5),
       enum=CompStage),
    _o("host", "compile_monitor_enable", "int", 1, "Compile watchdog: 0 off, 1 on, 2 with per-pass "
       "detail (True/False of older releases mean 1/0).", (0, 2), legacy_bool=True),
    _o("host", "compile_timeout", "int", 600, "Time limit of a whole compilation, seconds.", (0, _I32)),
    _o("host", "compile_timeout_stage", "int", 0, "Time limit of one stage, seconds (0 = off).", (0, _I32)),
    _o("host", "compile_monitor_print_interval", "int", 60, "Seconds between watchdog reports.", (0, _I32)),
    _o("pass", "vec_nbuffer_setting", "dict", FrozenMap(), "Merge count of identical AIV subgraphs "
       "(-1 = every group; {} = automatic, {'DEFAULT': 1} = no merge).", low=0, key_low=-2),
    _o("pass", "cube_l1_reuse_setting", "dict", FrozenMap(), "Merge count of cube subgraphs loading the "
       "same GM data, or (count, side).", low=0, choices=("left", "right", "auto")),
    _o("pass", "cube_nbuffer_setting", "dict", FrozenMap({-1: 1}),
       "Merge count of identical AIC subgraphs ({-1: 1} = no merge).", low=1),
    _o("pass", "sg_set_scope", "scope", (-1, False, False),
       "Force following ops with the same scope id into one subgraph (-1 = off).", (-1, _I32)),
    _o("pass", "sg_set_ooo_scope", "int", -1, "Out-of-order scheduling scope of following ops (-1 = off).",
       (1, 100000), special=(-1,)),
    _o("pass", "ooo_sched_mode", "str", "", "Out-of-order scheduling heuristic ('' = default).",
       choices=("", "GAPMIN", "HLF")),
    _o("pass", "auto_mix_partition", "int", 0, "1: merge neighbouring cube and vector subgraphs when "
       "profitable.", (0, 1)),
    _o("pass", "sg_set_tunevf_mode", "int", 0, "Vector-function tuning mode of following ops.", (0, 2)),
    _o("pass", "enable_slice", "bool", False, "Enable the slice optimisation of views."),
    _o("pass", "pg_parallel_lower_bound", "int", 20, "Keep identical subgraphs unmerged when fewer than "
       "this (internal).", (0, _I32), **_INTERNAL),
    _o("pass", "pg_lower_bound", "int", 512, "Try to merge subgraphs smaller than this (internal).",
       (0, _I32), **_INTERNAL),
    _o("pass", "pg_partition_algorithm", "str", "Iso", "Graph partitioning algorithm (internal).",
       choices=("Iso", "OspSarkar", "OspBsp"), **_INTERNAL),
    _o("pass", "mg_copyin_upper_bound", "int", 104857600, "Stop merging above this many copied-in bytes "
       "(internal).", (0, _I32), **_INTERNAL),
    _o("pass", "mg_vec_parallel_lb", "int", 48, "Least parallelism kept when merging AIV subgraphs "
       "(internal).", (1, 48), **_INTERNAL),
    _o("pass", "copyout_resolve_coalescing", "int", 0, "Coalesce scattered copy-outs (0 = off, internal).",
       (0, 1000000), **_INTERNAL),
    _o("pass", "ooo_sort_mode_aic", "str", "", "Out-of-order sort algorithm of AIC tasks ('' = default, "
       "internal).", **_INTERNAL),
    _o("pass", "ooo_sort_mode_aiv", "str", "", "Out-of-order sort algorithm of AIV tasks ('' = default, "
       "internal).", **_INTERNAL),
    _o("runtime", "run_mode", "int", RunMode.SIM, "RunMode.NPU or RunMode.SIM (the default here).",
       (0, 1), enum=RunMode, **_R),
    _o("runtime", "device_sched_mode", "int", 0, "Ready queue: 0 FIFO, 1 L2 affinity (newest first), "
       "2 fair across AICPU threads, 3 = 1 and 2.", (0, 3), **_R),
    _o("runtime", "stitch_function_max_num", "int", 128, "Most root functions stitched into one device "
       "task.", (1, 1024), **_R),
    _o("runtime", "max_workspace_kb", "int", 0, "> 0: stitch by workspace size instead of by count.",
       (0, _I32), **_R),
    _o("runtime", "memory_budget_mb", "int", 0, "Most host memory one allocation of a call may take "
       "(a dense copy of a strided argument, the workspace), in MiB; 0: the memory the machine has "
       "available when the call allocates.", (0, 1 << 40), **_R),
    _o("runtime", "valid_shape_optimize", "int", 0, "1: full tiles of dynamic loops compiled static, "
       "the tail tile dynamic.", (0, 1)),
    _o("runtime", "ready_on_host_tensors", "list_str", (), "Inputs whose values the host knows, so "
       "value-dependent control flow launches early.", **_R),
    _o("runtime", "device_sched_parallelism", "int", 1, "Parallel degree of pypto.loop(parallel=True).",
       (1, 8), **_R),
    _o("runtime", "launch_sched_aicpu_num", "int", 7, "AICPU schedule threads (A2/A3 have at most 5; "
       "more means the hardware maximum).", (1, 7), **_R),
    _o("runtime", "launch_early_mode", "int", 0, "AICPU early launch: 0 on capture, 1 always, 2 never "
       "(SIM behaves as 0).", (0, 2), **_R),
    _o("verify", "enable_pass_verify", "bool", False, "Check pass outputs against the tensor reference."),
    _o("verify", "pass_verify_save_tensor", "bool", False, "Save the tensors that pass verify compares."),
    _o("verify", "pass_verify_save_tensor_dir", "str", "", "Folder for them ('' = output/output_<time>)."),
    _o("verify", "pass_verify_pass_filter", "list_str", _VERIFY_PASSES,
       "Passes to verify (['all'] = every pass, [] = tensor graph only)."),
    _o("verify", "pass_verify_error_tol", "float_pair", (1e-3, 1e-3), "[rtol, atol] of pass verify (upstream's rule)."),
    _o("debug", "compile_debug_mode", "int", 0, "1: dump graphs after every pass; 2: also keep code at "
       "a fixed path.", (0, 2)),
    _o("debug", "runtime_debug_mode", "int", 0, "1 swimlane data, 2 host AICORE model, 3 dependency "
       "check dump, 4 GM out-of-bounds check.", (0, 4)),
    _o("debug", "dump_pass_graph", "list_str", (), "Passes whose output graph is dumped."),
    _o("debug", "serial_execution", "bool", False, "This simulator only: run a call's tasks one at a "
       "time and tile by tile in program order, instead of batched by dependency level (to compare "
       "the two).", **_R),
    _o("operation", "combine_axis", "bool", True, "Inline tail-axis broadcasts in generated code."),
)

JIT_GROUPS: tuple[str, ...] = ("codegen", "host", "pass", "runtime", "verify", "debug")
GROUPS: tuple[str, ...] = JIT_GROUPS + ("operation",)
OPTIONS: dict[tuple[str, str], OptionSpec] = {
    (s.group, s.name): replace(s, default=s.validate(s.default)) for s in _TABLE}
_NAMES: dict[str, tuple[str, ...]] = {g: tuple(n for (gg, n) in OPTIONS if gg == g) for g in GROUPS}
assert set(_NAMES) == {s.group for s in _TABLE}


def _group_name(group: str, param: str | None = None) -> str:
    """Accept ``"runtime"`` or ``"runtime_options"``; reject anything else."""
    name = group[:-len("_options")] if isinstance(group, str) and group.endswith("_options") else group
    if name not in _NAMES:
        raise OptionError(f"unknown option group {group!r}", expected=", ".join(GROUPS),
                          got=_show(group), param=param)
    return name


def spec(group: str, name: str) -> OptionSpec:
    """The declaration of one option; an unknown name raises with the closest valid name."""
    group = _group_name(group)
    found = OPTIONS.get((group, name))
    if found is None:
        close = difflib.get_close_matches(str(name), _NAMES[group], n=1)
        raise OptionError(f"unknown option {name!r} in {group}_options (the option key: {group}.{name} "
                          "does not exist)", expected="one of " + ", ".join(_NAMES[group]), got=_show(name),
                          param=f"{group}_options", hint=f"did you mean {close[0]!r}?" if close else None)
    return found


def validate_group(group: str, values: Mapping | None, *, param: str | None = None) -> dict[str, object]:
    """Check a user dict for one group; return the normalised values of just the given keys."""
    group = _group_name(group, param)
    if values is None:
        return {}
    if not isinstance(values, Mapping):
        raise OptionError(f"{param or group + '_options'} must be a dict", expected="dict or None",
                          got=_show(values), param=param or f"{group}_options")
    return {name: spec(group, name).validate(value) for name, value in values.items()}


# ---------------------------------------------------------------------------------------------
# State: global settings (process-wide, versioned) and the scopes of this thread / task
# (scopes.py), so callers can cache effective() per (version, scope stack).

_lock = threading.RLock()
_root: dict[str, dict[str, object]] = {g: {} for g in GROUPS}  # below _global; reset_options keeps it
_global: dict[str, dict[str, object]] = {g: {} for g in GROUPS}
_version = 0


def state_version() -> tuple[int, int]:
    """Changes on every change of the global settings or of this context's scopes: (a counter
    bumped by global changes, the generation of this thread's / task's scope stack)."""
    return _version, _scopes.stack().gen


def active_scopes() -> int:
    """How many `options` scopes are active in this thread / task."""
    return len(_scopes.stack().scopes)


def _changed() -> None:
    global _version
    _version += 1


def _apply(validated: Mapping[str, Mapping[str, object]]) -> None:
    if _scopes.set_innermost(lambda layer: layer.with_options(validated)):
        return
    with _lock:
        for group, values in validated.items():
            _global.setdefault(group, {}).update(values)
        _changed()


def _layers(stack) -> list:
    return [_root, _global, *(layer.options for layer in stack.scopes), *(layer.options for layer in stack.forced)]


def _resolved_all() -> dict[str, dict[str, object]]:
    stack = _scopes.stack()
    memo = stack.memo.get("all")
    if memo is None or memo[0] != _version:
        with _lock:
            version = _version
            merged = {g: {n: OPTIONS[g, n].default for n in _NAMES[g]} for g in GROUPS}
            for layer in _layers(stack):
                for group, values in layer.items():
                    merged[group].update(values)
        memo = stack.memo["all"] = (version, merged)
    return memo[1]


def current(group: str) -> dict[str, object]:
    """Effective values of a group: defaults <- global settings <- scopes (innermost wins)."""
    return dict(_resolved_all()[_group_name(group)])


def traced_scope():
    """The subgraph scope an op traced now belongs to (``set_pass_options(sg_set_scope=...)``
    inside a kernel): None for the default -1, else (scope id, allow_parallel_merge,
    allow_cross_scope_merge)."""
    scope = _resolved_all()["pass"]["sg_set_scope"]
    return None if scope[0] == -1 else scope


def is_set(group: str, name: str) -> bool:
    """Whether a setter, a scope or a forced setting gives this option a value (rather than its
    default); a kernel's own jit options are not looked at here."""
    group = _group_name(group)
    with _lock:
        return any(name in layer.get(group, ()) for layer in _layers(_scopes.stack()))


def set_options(**group_dicts: Mapping | None) -> None:
    """Set several groups at once, e.g. ``set_options(pass_options={...}, runtime_options={...})``."""
    validated = {}
    for key, values in group_dicts.items():
        validated[_group_name(key, param=key)] = validate_group(key, values, param=key)
    _apply(validated)


def set_root_options(**group_dicts: Mapping | None) -> None:
    """Change the starting values themselves, e.g. ``set_root_options(pass_options={...})``.

    The root layer sits under the global settings and survives :func:`reset_options` (upstream's
    root scope, which its test configuration sets ``pass.enable_slice`` on). Clear it with
    :func:`reset_root_options`.
    """
    validated = {_group_name(k, param=k): validate_group(k, v, param=k) for k, v in group_dicts.items()}
    with _lock:
        for group, values in validated.items():
            _root[group].update(values)
        _changed()


def reset_root_options() -> None:
    """Drop every value set with :func:`set_root_options`."""
    with _lock:
        for values in _root.values():
            values.clear()
        _changed()


def reset_options() -> None:
    """Back to the starting values: clears the global settings and the values set in every active
    scope (not the root values of :func:`set_root_options`)."""
    _scopes.map_scopes(lambda layer: _scopes.Layer(layer.owner, {}, layer.extras))
    with _lock:
        _global.clear()
        _changed()


def _make_accessors(group: str) -> tuple[Callable[..., None], Callable[[], dict]]:
    """``set_<group>_options(*, name=None, ...)`` and ``get_<group>_options()`` over the listed
    options of a group (as upstream, internal knobs are reached through `set_options` only)."""
    listed = tuple(n for n in _NAMES[group] if OPTIONS[group, n].listed)

    def setter(**values: object) -> None:
        for name in values:
            if name not in listed:
                raise _no_such_parameter(setter.__name__, group, name, listed)
        given = {n: v for n, v in values.items() if v is not None}  # None leaves a value as it is
        _apply({group: validate_group(group, given, param=f"{group}_options")})

    def getter() -> dict[str, object]:
        merged = _resolved_all()[group]
        return {n: OPTIONS[group, n].user_form(merged[n]) for n in listed}

    lines = "\n".join(f"    {n}: {OPTIONS[group, n].doc}" for n in listed)
    setter.__name__ = setter.__qualname__ = f"set_{group}_options"
    getter.__name__ = getter.__qualname__ = f"get_{group}_options"
    setter.__doc__ = (f"Set {group} options in the current scope (validated first; None leaves an option "
                      f"unchanged).\n\n{lines}\n")
    getter.__doc__ = f"The effective {group} options (lists and dicts as the user writes them)."
    setter.__signature__ = inspect.Signature(
        [inspect.Parameter(n, inspect.Parameter.KEYWORD_ONLY, default=None) for n in listed],
        return_annotation=None)
    return setter, getter


def _no_such_parameter(func: str, group: str, name: str, listed: tuple) -> OptionTypeError:
    if (group, name) in OPTIONS:  # an internal knob
        return OptionTypeError(f"{func}() has no parameter {name!r}", expected=", ".join(listed), got=name,
                               param=f"{group}_options",
                               hint=f"{name} is an internal option: pypto.set_options({group}_options="
                                    f"{{{name!r}: ...}})")
    close = difflib.get_close_matches(str(name), listed, n=1)
    return OptionTypeError(f"unknown option {name!r} in {group}_options ({func}() has no such parameter)",
                           expected="one of " + ", ".join(listed), got=_show(name), param=f"{group}_options",
                           hint=f"did you mean {close[0]!r}?" if close else None)


set_codegen_options, get_codegen_options = _make_accessors("codegen")
set_host_options, get_host_options = _make_accessors("host")
set_pass_options, get_pass_options = _make_accessors("pass")
set_runtime_options, get_runtime_options = _make_accessors("runtime")
set_verify_options, get_verify_options = _make_accessors("verify")
set_debug_options, get_debug_options = _make_accessors("debug")
set_operation_options, get_operation_options = _make_accessors("operation")


class OptionScope:
    """The object :func:`options` returns: a context manager and a decorator.

    Entering pushes a fresh copy of the validated settings as the innermost scope of this thread
    or asyncio task; leaving pops it (and any scope left open above it), also when the block
    raises. One object may be entered by several threads at once (a decorated function).
    """

    def __init__(self, settings: dict[str, dict[str, object]], name: str = ""):
        self.settings = settings
        self.name = name

    def __enter__(self) -> "OptionScope":
        _scopes.push(self, self.settings)  # in this thread / task only (scopes.py)
        return self

    def __exit__(self, *exc) -> None:
        _scopes.pop(self)

    def __call__(self, fn: Callable) -> Callable:
        @functools.wraps(fn)
        def wrapper(*args, **kwargs):
            with self:
                return fn(*args, **kwargs)

        wrapper.__pypto_options__ = self  # lets a jit that traces ``fn`` itself apply the scope
        return wrapper

    def __repr__(self) -> str:
        return f"pypto.options({self.name!r}, {self.settings!r})"


def options(name: str = "", *, codegen_options=None, host_options=None, pass_options=None,
            runtime_options=None, verify_options=None, debug_options=None,
            operation_options=None) -> OptionScope:
    """A scope of option settings: ``with pypto.options(...):`` or ``@pypto.options(...)``.

    All dicts are validated here, so a mistake is reported where the scope is written.
    """
    given = dict(codegen=codegen_options, host=host_options, **{"pass": pass_options},
                 runtime=runtime_options, verify=verify_options, debug=debug_options,
                 operation=operation_options)
    settings = {g: validate_group(g, v, param=f"{g}_options") for g, v in given.items() if v is not None}
    return OptionScope(settings, name)


# ---------------------------------------------------------------------------------------------
# Resolution for one kernel call.

@dataclass(frozen=True)
class ResolvedOptions:
    """Every option's value for one compile/run, hashable; ``values`` is sorted by (group, name)."""

    values: tuple[tuple[tuple[str, str], object], ...]
    _index: dict = field(init=False, repr=False, compare=False, hash=False)

    def __post_init__(self):
        object.__setattr__(self, "_index", dict(self.values))

    def get(self, group: str, name: str) -> Any:
        if (group, name) not in self._index:
            spec(group, name)  # raises the helpful unknown-option error
        return self._index[group, name]

    def group(self, name: str) -> dict[str, object]:
        name = _group_name(name)
        return {n: v for (g, n), v in self.values if g == name}

    def runtime(self) -> dict[str, object]:
        """The runtime group (what the scheduler and simulator read)."""
        return self.group("runtime")

    @property
    def run_mode(self) -> RunMode:
        return RunMode(self._index["runtime", "run_mode"])

    def compile_key(self) -> tuple:
        """Only the options that can change the compiled program: part of the cache key."""
        return tuple((k, v) for k, v in self.values if OPTIONS[k].affects_compile)

    def non_default(self) -> dict[str, object]:
        """``{"group.name": value}`` for every value that differs from its default (for display)."""
        return {OPTIONS[k].key: v for k, v in self.values if v != OPTIONS[k].default}

    def with_overrides(self, overrides: Mapping[str, Mapping] | None) -> "ResolvedOptions":
        """A copy with some values replaced (validated), e.g. runtime knobs tuned in the lab."""
        index = dict(self._index)
        for group, values in (overrides or {}).items():
            g = _group_name(group)
            index.update({(g, n): v for n, v in validate_group(g, values, param=f"{g}_options").items()})
        return ResolvedOptions(tuple(sorted(index.items())))


def effective(overrides: Mapping[str, Mapping] | None = None) -> ResolvedOptions:
    """All current values merged with per-kernel jit dicts keyed by group (``"runtime"`` etc.),
    then with any active `forced` settings, which win over both."""
    stack = _scopes.stack()
    memo = stack.memo.get("base")
    if memo is None or memo[0] != _version:
        version = _version
        merged = _resolved_all()
        values = tuple(sorted(((g, n), v) for g in GROUPS for n, v in merged[g].items()))
        memo = stack.memo["base"] = (version, ResolvedOptions(values))
    base = memo[1]
    forced = [layer.options for layer in stack.forced]
    result = base.with_overrides(overrides) if overrides else base
    for f in forced:
        result = result.with_overrides(f)
    return result


class forced:
    """Context manager: these settings win over scopes AND a kernel's own ``@pypto.jit(...)``
    options while it is active (``pypto.options.forced(runtime_options={...})``)."""

    def __init__(self, **group_dicts):
        self.settings = {}
        for key, values in group_dicts.items():
            if values:
                group = _group_name(key)
                self.settings[group] = validate_group(group, values, param=key)

    def __enter__(self):
        _scopes.push(self, self.settings, forced=True)  # in this thread / task only
        return self

    def __exit__(self, *exc):
        _scopes.pop(self, forced=True)


def describe() -> str:
    """A Markdown table of every option: group, name, type/range, default, affects compile, doc."""
    rows = ["| option | type / range | default | compile | doc |", "|---|---|---|---|---|"]
    for s in OPTIONS.values():
        default = dict(s.default) if isinstance(s.default, FrozenMap) else s.default
        rows.append(f"| `{s.key}` | {s.expected()} | `{default!r}` | "
                    f"{'yes' if s.affects_compile else 'no'} | {s.doc} |")
    return "\n".join(rows)


# ``pypto.options`` is the scope function (the package re-exports it over this module's name), so
# the module-level helpers users reach through it are attached to it as well.
options.describe = describe
options.forced = forced
