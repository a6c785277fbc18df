"""Process-wide settings of upstream's ``pypto.config`` that are not option groups.

* ``set_global_config(key, value)`` / ``get_global_config(key)``: upstream's global configuration
  (``platform.*``, ``host.*``, ``simulation.*``, ``codegen.*``, ``tensor_print.*``, ``pass.*``).
  Every key is declared once below with its type, range and upstream's default; an unknown key or
  a bad value is an :class:`OptionError`. These settings steer upstream's toolchain (its cost-model
  simulator, code generation threads, profiling); this simulator's numbers and timing do not
  depend on them (the machine model and ``runtime_options`` configure the timing), so they are
  validated, stored and read back.
* ``set_print_options`` / ``get_print_options``: the ``tensor_print.*`` keys under another name.
* ``set_semantic_label``: the label of the code that follows (upstream's toolkit groups ops by it).
* ``set_matrix_size``: the original m, k, n of NZ inputs reshaped before a matmul; the NZ layout is
  not modelled here, so the value is checked and stored.
* ``set_conv_tile_shapes`` / ``get_conv_tile_shapes``: L1/L0 tile shapes of ``pypto.conv``, which
  runs as one whole-tensor task here, so they are checked and stored.

The stored values are shared by all threads (they are global on upstream too).
"""

from __future__ import annotations

import difflib
import operator
import re
import threading
from dataclasses import dataclass, fields

from .errors import ArgumentTypeError, ArgumentValueError, OptionError, PyptoError, user_loc
from .options import INT32_MAX, OptionSpec


@dataclass(frozen=True)
class GlobalConfigSpec(OptionSpec):
    """One global configuration key (``name`` is the dotted key, e.g. ``simulation.accuracy_level``)."""

    @property
    def key(self) -> str:
        return self.name

    @property
    def param(self) -> str:
        return f"set_global_config({self.name!r}, value)"


def _g(name: str, kind: str, default, doc: str, rng: tuple | None = None, **kw) -> GlobalConfigSpec:
    low, high = rng if rng is not None else (None, None)
    return GlobalConfigSpec("global", name, kind, default, doc, low=low, high=high, **kw)


_I = (-2**31, INT32_MAX)
_TABLE = (
    _g("platform.enable_cost_model", "bool", False, "Run upstream's cost-model simulation (static shapes)."),
    _g("platform.enable_dyn_cost_model", "bool", False, "Run upstream's cost-model simulation (dynamic shapes)."),
    _g("platform.enable_aihac_backend", "bool", True, "Use upstream's AIHAC code-generation backend."),
    _g("platform.test_is_tig", "bool", False, "Upstream internal test switch."),
    _g("platform.dump_source_location", "bool", True, "Record source locations in upstream's dumps."),
    _g("platform.enable_checker", "bool", False, "Run upstream's program checker."),
    _g("platform.device_platform", "str", "ASCEND_910B2", "The device upstream compiles for."),
    _g("platform.enable_prof_func", "bool", False, "Profile every function on the device."),
    _g("platform.enable_prof_aicore_time", "bool", False, "Collect each leaf function's latency (PMU)."),
    _g("platform.enable_prof_aicore_pmu", "bool", False, "Collect each leaf function's latency and PMU values."),
    _g("host.strategy", "str", "PVC2_OOO", "Host-side pass strategy."),
    _g("simulation.debug_single_func", "bool", False, "Simulate one leaf function only."),
    _g("simulation.leaf_function", "str", "DEBUG_LEAF_FUNC", "The leaf function simulated alone."),
    _g("simulation.draw_function_graph", "bool", True, "Draw task / tile dependency graphs."),
    _g("simulation.build_task_based_topo", "bool", True, "Build task dependencies from the frontend topology."),
    _g("simulation.sim_mode", "int", 0, "Upstream simulation mode.", (0, 2)),
    _g("simulation.accuracy_level", "int", 1, "Accuracy of upstream's tile-op delay model (0, 1 or 2).", (0, 2)),
    _g("simulation.pv_run_level", "int", 0, "Run level of upstream's PvModel.", (0, 2)),
    _g("simulation.log_level", "int", 3, "Log level of upstream's simulator (1 to 5).", (1, 5)),
    _g("simulation.timeout_threshold", "int", -1, "Stop the simulation after this many cycles (-1: never).", _I),
    _g("simulation.json_path", "str", "", "A json file the simulator loads."),
    _g("simulation.agent_json_path", "str", "", "The program.json used to rebuild functions for the cost model."),
    _g("simulation.args", "list_str", (), "Command-line arguments of upstream's simulator."),
    _g("codegen.parallel_compile", "int", 128, "Threads that generate and build device code.", (1, INT32_MAX)),
    _g("codegen.support_dynamic_aligned", "bool", False, "(Deprecated) dynamic data is always aligned."),
    _g("codegen.soc_version", "str", "", "The SoC version kernels are compiled for."),
    _g("codegen.fixed_output_path", "bool", False, "Keep device code in a fixed output folder."),
    _g("codegen.force_overwrite", "bool", True, "Regenerate device code on every compile."),
    _g("codegen.codegen_support_tile_tensor", "bool", True, "Generated code uses PTO-ISA tile tensors."),
    _g("tensor_print.edgeitems", "int", 3, "Items printed at each end of a tensor.", (0, INT32_MAX)),
    _g("tensor_print.precision", "int", 4, "Digits after the point when printing.", (0, INT32_MAX)),
    _g("tensor_print.threshold", "int", 1000, "Elements above which a printed tensor is summarised.", (0, INT32_MAX)),
    _g("tensor_print.linewidth", "int", 80, "Characters per printed line.", (1, INT32_MAX)),
    _g("pass.enable_binary_cache", "bool", False, "Reuse pre-compiled binaries."),
    _g("pass.enable_pass_configs", "bool", True, "Load per-pass configurations."),
    _g("pass.enable_cv_fuse", "bool", False, "Fuse cube and vector computation."),
    _g("pass.pass_thread_num", "int", 1, "Worker threads of the pass manager.", (1, INT32_MAX)),
    _g("pass.vf_opt_mark_for", "bool", False, "Mark loops for vector-function fusion."),
) + tuple(
    _g(f"pass.default_pass_configs.{name}", "bool", default, doc) for name, default, doc in (
        ("print_graph", False, "Print each pass's graph."),
        ("print_program", False, "Export the program as JSON."),
        ("dump_graph", False, "Dump each pass's graph."),
        ("dump_pass_time_cost", True, "Dump each pass's time."),
        ("pre_check", False, "Check a pass's input."),
        ("post_check", False, "Check a pass's output."),
        ("expected_value_check", False, "Check values against their allowed ranges."),
        ("disable_pass", False, "Skip the pass."),
        ("health_check", False, "Check compiler resources between passes."),
        ("use_max_freq_label", False, "Reuse the most frequent semantic label."),
        ("addr_check", False, "Check memory addresses."),
    ))

GLOBAL_CONFIG: dict[str, GlobalConfigSpec] = {s.name: s for s in _TABLE}

_lock = threading.Lock()
_values: dict[str, object] = {}
_state: dict[str, object] = {"label": None, "matrix_size": None, "conv_tiles": None}


def _spec(key) -> GlobalConfigSpec:
    if not isinstance(key, str):
        raise OptionError("a global config key must be a str", expected="e.g. 'simulation.accuracy_level'",
                          got=repr(key), param="key", loc=user_loc(3))
    spec = GLOBAL_CONFIG.get(key[len("global."):] if key.startswith("global.") else key)
    if spec is None:
        close = difflib.get_close_matches(key, GLOBAL_CONFIG, n=1)
        raise OptionError(f"unknown global config key {key!r}",
                          expected="one of " + ", ".join(sorted({k.split('.')[0] + '.*' for k in GLOBAL_CONFIG})),
                          got=key, param="key", hint=f"did you mean {close[0]!r}?" if close else None,
                          loc=user_loc(3))
    return spec


def set_global_config(key: str, value) -> None:
    """Set one global configuration key (see the module docstring; ``describe_global_config()``)."""
    spec = _spec(key)
    try:
        checked = spec.validate(value)
    except OptionError as e:
        raise e.with_loc(user_loc(2)).with_traceback(None) from None
    with _lock:
        _values[spec.name] = checked


def get_global_config(key: str):
    """The value of a global configuration key (its default until set)."""
    spec = _spec(key)
    value = _values.get(spec.name, spec.default)
    return list(value) if isinstance(value, tuple) else value


def reset_global_config() -> None:
    """Every global configuration key back to its default."""
    with _lock:
        _values.clear()


def describe_global_config() -> str:
    """One line per global configuration key: key, allowed values, default and doc."""
    return "\n".join(f"{s.name}: {s.expected()} = {s.default!r}  {s.doc}" for s in _TABLE)


# ---- tensor printing -------------------------------------------------------------------------------

def set_print_options(*, edgeitems: int = 3, precision: int = 4, threshold: int = 10, linewidth: int = 10) -> None:
    """Tensor print options (upstream's defaults for the call); stored as ``tensor_print.*``."""
    values = {"edgeitems": edgeitems, "precision": precision, "threshold": threshold, "linewidth": linewidth}
    checked = {}
    for name, value in values.items():
        try:
            checked[name] = GLOBAL_CONFIG[f"tensor_print.{name}"].validate(value)
        except OptionError as e:
            raise OptionError(f"pypto.set_print_options: invalid '{name}'", expected=e.expected, got=e.got,
                              param=name, loc=user_loc(2)) from None
    with _lock:
        _values.update({f"tensor_print.{k}": v for k, v in checked.items()})


def get_print_options() -> dict:
    """The tensor print options: ``edgeitems``, ``precision``, ``threshold``, ``linewidth``."""
    return {k: get_global_config(f"tensor_print.{k}") for k in ("edgeitems", "precision", "threshold", "linewidth")}


# ---- semantic labels -------------------------------------------------------------------------------

_FUNC_ORDER_LABEL = re.compile(r"func\d+_\d+")


def set_semantic_label(label: str) -> None:
    """Label the code that follows (until the next label). Labels of the form ``func<n>_<m>``
    are reserved (they name a function's hash order in pass settings)."""
    loc = user_loc(2)
    if not isinstance(label, str):
        raise ArgumentTypeError("pypto.set_semantic_label: 'label' must be a str", got=repr(label), param="label",
                                loc=loc)
    if _FUNC_ORDER_LABEL.fullmatch(label):
        raise ArgumentValueError(f"semantic label {label!r} conflicts with function-granularity hashOrder keys "
                                 "(the reserved form func<magic>_<order>)",
                                 expected="any other string", got=label, param="label", loc=loc)
    _state["label"] = (label, loc)


def get_semantic_label() -> str | None:
    """The label set last by ``set_semantic_label`` (None before any)."""
    entry = _state["label"]
    return entry[0] if entry else None


# ---- matmul sizes of reshaped NZ inputs --------------------------------------------------------------

def set_matrix_size(size) -> None:
    """The original ``[m, k, n]`` of NZ matmul inputs that were reshaped (ints or symbolic scalars).

    As upstream, ``0`` marks a size not given (``[m, 0, n]`` leaves ``k`` to the operands), and a
    list of fewer than three entries gives none of them; more than three, or a negative size, is
    refused (upstream silently drops extras, which only hides a mistake).
    """
    from .frontend.scalar import SymbolicScalar

    loc = user_loc(2)
    if not isinstance(size, (list, tuple)) or len(size) > 3 or not all(
            isinstance(s, SymbolicScalar) or (isinstance(s, int) and not isinstance(s, bool) and s >= 0)
            for s in size):
        raise ArgumentValueError("pypto.set_matrix_size takes [m, k, n]",
                                 expected="up to three ints >= 0 (0: not given) or symbolic scalars",
                                 got=repr(size), param="size", loc=loc)
    _state["matrix_size"] = list(size)


def get_matrix_size() -> list | None:
    """The ``[m, k, n]`` set last by ``set_matrix_size`` (None before any)."""
    return _state["matrix_size"]


# ---- conv tile shapes --------------------------------------------------------------------------------

@dataclass(frozen=True)
class TileL1Info:
    """Conv tile sizes in L1 (upstream ``TileL1Info``): input/output height and width, input
    channels of the feature map and of the weight, output channels (``tileN``) and batch."""

    tileHin: int = 1  # noqa: N815 - upstream's field names
    tileHout: int = 1  # noqa: N815
    tileWin: int = 1  # noqa: N815
    tileWout: int = 16  # noqa: N815
    tileCinFmap: int = 16  # noqa: N815
    tileCinWeight: int = 16  # noqa: N815
    tileN: int = 16  # noqa: N815
    tileBatch: int = 1  # noqa: N815


@dataclass(frozen=True)
class TileL0Info:
    """Conv tile sizes in L0 (upstream ``TileL0Info``): output height and width, K and N."""

    tileH: int = 1  # noqa: N815
    tileW: int = 16  # noqa: N815
    tileK: int = 16  # noqa: N815
    tileN: int = 16  # noqa: N815


def _tile_info(obj, cls, param: str, loc):
    if obj is None:
        return None
    values = {}
    for f in fields(cls):
        v = getattr(obj, f.name, None)
        if not isinstance(v, (bool, int)) and hasattr(v, "__index__"):
            try:  # a concrete pypto.symbolic_scalar(32), as upstream's int64 binding takes it
                v = operator.index(v)
            except (TypeError, ValueError, PyptoError):
                pass
        if isinstance(v, bool) or not isinstance(v, int) or v < 1:
            raise ArgumentValueError(f"pypto.set_conv_tile_shapes: '{param}.{f.name}' must be a positive int",
                                     expected=f"a {cls.__name__} with positive sizes", got=repr(v), param=param,
                                     loc=loc)
        values[f.name] = v
    return cls(**values)


def set_conv_tile_shapes(tile_l1_info, tile_l0_info=None) -> None:
    """Conv tile shapes in L1 and (optionally) L0. ``pypto.conv`` runs as one whole-tensor task in
    this simulator, so they are checked (positive sizes) and stored, and change no number."""
    loc = user_loc(2)
    if tile_l1_info is None:
        raise ArgumentTypeError("pypto.set_conv_tile_shapes needs 'tile_l1_info'", expected="a TileL1Info",
                                got="None", param="tile_l1_info", loc=loc)
    l1 = _tile_info(tile_l1_info, TileL1Info, "tile_l1_info", loc)
    l0 = _tile_info(tile_l0_info, TileL0Info, "tile_l0_info", loc)
    _state["conv_tiles"] = (l1, l0 if l0 is not None else TileL0Info(), l0 is not None)


def get_conv_tile_shapes():
    """``(tile_l1_info, tile_l0_info, l0_set)`` as set last (None before any)."""
    return _state["conv_tiles"]


__all__ = ["set_global_config", "get_global_config", "reset_global_config", "describe_global_config",
           "set_print_options", "get_print_options", "set_semantic_label", "get_semantic_label", "set_matrix_size",
           "get_matrix_size", "TileL1Info", "TileL0Info", "set_conv_tile_shapes", "get_conv_tile_shapes"]
