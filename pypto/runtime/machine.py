"""The simulated machine: cores, memories, bandwidths, op costs and AICPU overheads in one frozen
object. Every number the timing simulator uses is a named, documented field here.

The values come from data files, one per platform (``platforms/A2.json``: Ascend 910B;
``platforms/A3.json``: one die of an Ascend 910C; ``platforms/A5.json``: an Ascend 950PR, whose
buffer sizes and core counts are upstream's and whose timing is not calibrated), where every parameter has a unit, a source
and a label: *measured* (a published figure), *fitted* (by ``python -m pypto.calibrate`` on the
published timings of the calibration corpus, see docs/CALIBRATION.md) or *default* (upstream's
simulation parameter or ours, not measured). Vector ops use upstream's compiler latency /
parallelism model ``L + (ceil(bytes/256) - 1) * max(1, (256/elem)/P)`` (table below) times the
fitted ``vector_scale``; copies a latency plus bytes over bandwidth, per core and, for HBM,
shared chip-wide (runtime/costmodel.py, runtime/scheduler.py).
"""

from __future__ import annotations

import functools
import json
import os
from dataclasses import dataclass, field, fields, replace
from pathlib import Path

from .. import scopes as _scopes

PLATFORMS = Path(__file__).with_name("platforms")


def _vector_table():
    # op kind -> (latency L in cycles, parallelism P in elements per cycle for 4-byte types)
    fast = (6, 64)
    transcendental = (12, 32)
    table = {k: fast for k in ("add", "sub", "mul", "maximum", "minimum", "neg", "abs", "relu", "eq", "ne", "gt",
                                "ge", "lt", "le", "where", "clip", "cast", "clone", "full", "tensor",
                                "expand_clone", "transpose", "reshape")}
    table.update({k: transcendental for k in ("exp", "log", "sqrt", "rsqrt", "reciprocal", "div", "sigmoid",
                                              "tanh")})
    table.update({"sum": (10, 64), "amax": (10, 64), "amin": (10, 64), "topk": (40, 16), "softmax": (50, 16)})
    table.update({"topk_partial": (40, 16), "topk_merge": (40, 16)})  # a tiled topk: per-tile sorts, merges
    # issue 6: layout ops move data like transpose; indexing ops address element by element
    table.update({k: fast for k in ("permute", "tril", "triu", "interleave", "deinterleave", "arange", "one_hot",
                                    "quantize", "dequantize")})
    table.update({k: (30, 8) for k in ("gather", "index_select", "index_add", "scatter", "scatter_update")})
    table.update({"pack": fast, "unpack": fast})  # pack.py: byte copies (GM to GM)
    table.update({"uniform": (40, 16), "normal": (60, 8)})  # Philox rounds; Box-Muller adds log/sqrt/sin/cos
    # math.py / bitwise.py: rounding, sign, bitwise, logical and predicates are single cheap vector
    # instructions; trig, erf, exp/log variants, pow and the division-based ops are multi-step
    table.update({k: fast for k in ("ceil", "floor", "trunc", "round", "sign", "signbit", "axpy_", "bitwise_and",
                                    "bitwise_or", "bitwise_xor", "bitwise_not", "bitwise_left_shift",
                                    "bitwise_right_shift", "logical_and", "logical_not", "isfinite", "isnan",
                                    "copysign")})
    table.update({k: transcendental for k in ("acos", "acosh", "asin", "asinh", "atan", "atanh", "cbrt", "cos",
                                              "cosh", "erf", "erfc", "exp2", "expm1", "log10", "log1p", "log2",
                                              "sin", "sinh", "tan", "pow", "fmod", "remainder", "floor_div",
                                              "ceil_div", "hypot", "atan2", "gcd")})
    # activation.py / scan.py: lrelu is compare+mul+select, prelu adds a per-channel broadcast,
    # expand_exp_dif is sub+exp; argmax/argmin track an index beside the value; var is a mean pass
    # plus a squared-difference sum; scans carry along the scanned dim; argsort is a full sort
    # (dearer than topk's partial one); the online-softmax pair costs like softmax's pieces
    table.update({"lrelu": fast, "prelu": (10, 64), "expand_exp_dif": transcendental, "prod": (10, 64),
                  "argmax": (16, 32), "argmin": (16, 32), "var": (30, 32), "cumsum": (20, 16), "cumprod": (20, 16),
                  "argsort": (60, 8), "online_softmax": (50, 16), "online_softmax_update": (30, 32)})
    # more_indexing.py: index_put and the paged gathers address element by element like gather;
    # fillpad is a fill plus a copy, gathermask one masked (strided) vector copy. atomic_add lowers
    # to view + add + assemble and is costed through those
    table.update({k: (30, 8) for k in ("index_put", "gather_in_ub", "gather_in_l1")})
    table.update({"fillpad": fast, "gathermask": fast})
    return table


@dataclass(frozen=True)
class MachineModel:
    """An Ascend-like machine. The named platforms (`MACHINES`) are loaded from their data files;
    the field defaults are the A2 (910B) values before calibration."""

    name: str = "A2A3"
    # cores and local memories (bytes)
    aic_cores: int = 24
    aiv_cores: int = 48
    ub_bytes: int = 192 * 1024
    l1_bytes: int = 512 * 1024
    l0a_bytes: int = 64 * 1024
    l0b_bytes: int = 64 * 1024
    l0c_bytes: int = 128 * 1024
    clock_ghz: float = 1.85
    max_sched_aicpu: int = 5  # schedule threads usable on A2/A3 (launch_sched_aicpu_num is capped to it)
    # memory system: bytes per cycle and latencies in cycles
    l2_bytes: int = 192 * 1024 * 1024
    gm_read_bw: float = 32.0  # GM (HBM) -> UB / L1, per core
    l2_read_bw: float = 110.0  # L2 hit -> UB / L1, per core
    gm_write_bw: float = 64.0  # UB / L0C -> GM, per core
    hbm_bw: float = 700.0  # chip-wide HBM bytes per cycle, shared by the tasks in flight (0: no cap)
    gm_read_latency: int = 1400
    l2_line_bytes: int = 512  # a read of a shorter row segment still moves whole lines
    # a cube operand or result in ND layout is converted to / from the fractal layout row by row:
    # one DMA burst per row, and a row shorter than this costs a burst of this many bytes
    nd_burst_bytes: int = 32
    l2_read_latency: int = 300
    gm_write_latency: int = 300
    l1_to_l0a_bw: float = 512.0
    l1_to_l0b_bw: float = 256.0
    mte1_latency: int = 8
    # compute
    vector_costs: dict = field(default_factory=_vector_table, compare=False, hash=False)
    vector_default: tuple = (10, 128)
    vector_scale: float = 1.0
    sort_cycles: float = 1.0  # vector cycles per element per sort / merge pass (costmodel._sort_cycles)
    # cube ops (matmul, scaled_mm, conv: runtime/costmodel.py) cost latency + MACs / this rate
    cube_macs_per_cycle: dict = field(default_factory=lambda: {1: 8192, 2: 4096, 4: 1024},
                                      compare=False, hash=False)  # by operand itemsize
    cube_latency: int = 20
    dynamic_op_overhead: int = 24  # scalar cycles per op of dynamic-shape code (tails; no valid_shape_optimize)
    # AICPU (control and schedule threads) and launch
    root_stitch_cycles: int = 1500  # control AICPU: evaluate one root instance's expressions and stitch it
    device_task_build_cycles: int = 4000  # control AICPU: finish a device task before submitting it
    device_task_sync_cycles: int = 5000  # device: a device task starts after the one before finished, plus this
    submit_cycles: int = 100  # hand a device task to the schedule threads
    dispatch_cycles: int = 200  # schedule thread: send one task to a core
    completion_cycles: int = 240  # schedule thread: notice a finished task
    resolve_cycles: int = 390  # schedule thread: resolve the successors of a finished task
    aicpu_task_scale: float = 1.0  # multiplies dispatch, completion, resolve and fair_extra (fitted)
    fair_extra_cycles: int = 150  # device_sched_mode 2/3: extra bookkeeping per dispatch
    wait_device_cycles: int = 2000  # control AICPU: handshake when control flow waits for device data
    launch_cycles: int = 20000  # AI cores start after launch; launch_early_mode=1 overlaps control with it
    # a task waiting in a core's pending slot starts its loads while the running task finishes
    # (double buffering across consecutive tiles); False: tasks on a core never overlap
    overlap_pending_loads: bool = True
    # where each value comes from: name -> {"label", "source", "unit", "doc"} (from the platform file)
    sources: dict = field(default_factory=dict, compare=False, hash=False, repr=False)
    platform: str = ""  # the data file's platform name ("" for a model built in code)

    def capacity(self, mem: str) -> int:
        """Bytes of the local memory level ``mem`` ("UB", "L1", "L0A", "L0B", "L0C")."""
        return {"UB": self.ub_bytes, "L1": self.l1_bytes, "L0A": self.l0a_bytes, "L0B": self.l0b_bytes,
                "L0C": self.l0c_bytes}[mem]

    def cycles_to_us(self, cycles: float) -> float:
        return cycles / (self.clock_ghz * 1000.0)

    def with_(self, **kw) -> "MachineModel":
        return replace(self, **kw)

    def describe(self) -> str:
        """One line per parameter: value, unit, label (measured / fitted / default) and source."""
        rows = []
        for f in fields(self):
            info = self.sources.get(f.name)
            if info is None:
                continue
            base = f" (the {info['from']}'s)" if info.get("from") else ""
            rows.append(f"{f.name} = {getattr(self, f.name)!r} {info.get('unit', '')}  [{info.get('label')}{base}] "
                        f"{info.get('source', '')}")
        return "\n".join(rows)


def _platform_data(name: str) -> dict:
    return json.loads((PLATFORMS / f"{name}.json").read_text(encoding="utf-8"))


def platform_parameters(name: str) -> dict:
    """The parameter entries of platform ``name`` (its data file, over its base's). An entry taken
    from the base says so (``"from": <base>``): a fitted A2 figure on another chip was fitted on
    the A2's points, not that chip's."""
    data = _platform_data(name)
    params = {}
    if data.get("base"):
        for key, entry in platform_parameters(data["base"]).items():
            params[key] = {**entry, "from": entry.get("from", data["base"])}
    params.update(data["parameters"])
    return params


@functools.lru_cache(maxsize=None)
def _platform_key(platform: str, key: str, default):
    """Top-level ``key`` of a platform file, else of its base's, else ``default``. Cached: these
    describe the chip (its SoC, its features) and nothing rewrites them while a process runs
    (a calibration rewrites only ``parameters``)."""
    data = _platform_data(platform)
    if key in data:
        return data[key]
    return _platform_key(data["base"], key, default) if data.get("base") else default


def has_feature(machine, feature: str) -> bool:
    """Whether ``machine`` (a MachineModel or a name) has ``feature``, an ability upstream's
    operator docs give some SoCs only (its platform file's ``features``, e.g. ``"bf16_bias"``: a
    bf16 bias for bf16 matmul operands, on the Ascend 950 and not on A2/A3)."""
    return feature in _platform_key(machine_model(machine).platform or "A2", "features", ())


def soc_of(machine) -> tuple[int, str]:
    """``(soc_version, soc_name)`` the emulated NPU reports on ``machine`` (a MachineModel or a
    name): torch_npu's SoC number (220: Ascend910B1, 260: an Ascend 950) and upstream's
    ``SoC_version`` name. Upstream's test filters read the number (``@pytest.mark.soc("950")``
    tests run only on 260). A machine built in code reports its platform's, else the A2's."""
    platform = machine_model(machine).platform or "A2"
    return int(_platform_key(platform, "soc_version", 220)), str(_platform_key(platform, "soc_name", "Ascend910B1"))


def from_platform(platform: str, name: str | None = None) -> MachineModel:
    """The MachineModel of a platform data file (``platforms/<platform>.json``)."""
    params = platform_parameters(platform)
    known = {f.name for f in fields(MachineModel)}
    values = {}
    for key, entry in params.items():
        if key not in known:
            raise ValueError(f"platforms/{platform}.json: unknown machine parameter {key!r}")
        v = entry["value"]
        if key == "cube_macs_per_cycle":
            v = {int(k): int(x) for k, x in v.items()}
        values[key] = v
    return MachineModel(name or platform, sources=params, platform=platform, **values)


A2 = from_platform("A2")
A3 = from_platform("A3")
A2A3 = from_platform("A2", "A2A3")  # the default: one 910B (a 910C die is the same per die)
SMALL = A2A3.with_(name="small", aic_cores=2, aiv_cores=4, ub_bytes=64 * 1024, l1_bytes=128 * 1024,
                   l0a_bytes=32 * 1024, l0b_bytes=32 * 1024, l0c_bytes=64 * 1024, l2_bytes=256 * 1024,
                   max_sched_aicpu=3, platform="", sources={})
A5 = from_platform("A5")  # Ascend 950PR: numbers and buffer sizes; its timing is not calibrated
MACHINES = {"A2A3": A2A3, "A2": A2, "A3": A3, "A5": A5, "small": SMALL}

# The process-wide machine can be chosen before anything runs, for programs that cannot call
# set_machine (upstream's unmodified tests: PYPTO_MACHINE=A5 makes the emulated NPU an Ascend 950).
MACHINE_ENV = "PYPTO_MACHINE"


def machine_model(machine) -> MachineModel:
    """A MachineModel from a name in MACHINES or a MachineModel."""
    if isinstance(machine, MachineModel):
        return machine
    if machine in MACHINES:
        return MACHINES[machine]
    from ..errors import OptionError

    raise OptionError("unknown machine model", expected="one of " + ", ".join(MACHINES) + " or a MachineModel",
                      got=repr(machine), param="machine")


def _initial_machine() -> MachineModel:
    name = os.environ.get(MACHINE_ENV, "").strip()
    if not name:
        return A2A3
    if name in MACHINES:
        return MACHINES[name]
    from ..errors import OptionError

    raise OptionError(f"environment variable {MACHINE_ENV}: unknown machine model",
                      expected="one of " + ", ".join(MACHINES), got=repr(name), param=MACHINE_ENV)


_current = {"machine": _initial_machine()}


def set_machine(machine) -> None:
    """Choose the machine model compiles (buffer capacities) and timing simulations use: for the
    process, or, inside ``with pypto.options(...)``, for that block of this thread / task only."""
    model = machine_model(machine)
    if not _scopes.set_extra("machine", model):
        _current["machine"] = model


def current_machine() -> MachineModel:
    """The machine model of this thread / task (its scopes), else the process-wide one."""
    extras = _scopes.stack().extras
    return extras.get("machine", _current["machine"]) if extras else _current["machine"]
