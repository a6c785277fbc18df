"""Trials: run one configuration of a space and record what the simulator says about it.

An `Evaluator` keeps one compiled version per distinct compile-affecting part of a configuration
(kernel parameters, pass options, compile-affecting runtime options) and call shape. A trial that
changes only runtime options re-simulates that version's recorded call (`runtime.scheduler.
Replayer`, the engine behind ``RunRecord.simulate`` and the lab's Tune tab, with the call's tasks
built once); nothing recompiles and no number is recomputed.

A version's numbers are compared once, when it is compiled, with the baseline's: an explicit
``baseline`` (a configuration, or a torch function called like the kernel), else the kernel's
defaults; without either the sweep is refused (`check_baseline`). Only the outputs the baseline
writes (and what it returns) are compared, exactly first, with a tolerance only for floating
point results that differ in their last bits (another tile shape sums in another order;
`check.py`). On a Dask worker the comparison moves to the sweep's driver: the worker keeps what
each version's run wrote (`outputs_for`) and never runs the baseline itself.
"""

from __future__ import annotations

import functools
import socket
import sys
import time
from collections import OrderedDict
from dataclasses import asdict, dataclass, field

from ..errors import OptionError
from .check import Outputs, compare, digest, returned, same
from .key import describe_baseline
from .space import Space, compile_part, config_key, dtype_named, split

OK, FAILED, MISMATCH = "ok", "failed", "mismatch"


@dataclass
class TrialRecord:
    """One trial: its configuration, status (``ok``, ``failed`` or ``mismatch``: the numbers differ
    from the reference configuration's), the error of a failed trial, and the simulated figures,
    summed over the space's call shapes (utilisation and L2 hit rate: averaged)."""

    number: int
    config: dict
    status: str = OK
    error: str = ""
    makespan_cycles: int | None = None
    makespan_us: float | None = None
    critical_path_cycles: int | None = None
    utilization_aic: float | None = None
    utilization_aiv: float | None = None
    l2_hit_rate: float | None = None
    device_tasks: int | None = None
    tasks: int | None = None
    compile_seconds: float | None = None  # of the compiled version(s) the trial ran, compiled now or before
    compiled: bool = False  # this trial compiled a new version (else it re-simulated a cached one)
    ub_bytes: int | None = None  # the largest UB footprint of any leaf
    numbers_match: bool | None = None  # None: not compared (the trial failed before it could be, or a
    # Dask worker's trial before the driver has compared its version's outputs)
    check_seconds: float | None = None  # of comparing the version's outputs with the baseline's
    seconds: float = 0.0  # wall time of the trial
    worker: str = ""
    extra: dict = field(default_factory=dict)

    @property
    def ok(self) -> bool:
        return self.status == OK

    @property
    def key(self) -> str:
        return config_key(self.config)

    def to_dict(self) -> dict:
        return asdict(self)

    @classmethod
    def from_dict(cls, d: dict) -> "TrialRecord":
        return cls(**d)


@dataclass
class _Version:
    """One compiled version for one call shape (or the error compiling or running it)."""

    replayer: object = None
    runtime: dict = field(default_factory=dict)
    machine: object = None
    compile_seconds: float = 0.0
    ub_bytes: int = 0
    numbers_match: bool | None = None
    check_seconds: float = 0.0
    error: str = ""
    stage: str = "compile"  # where a failed version failed: "fit" (its tiles cannot fit), "compile"
    detail: dict = field(default_factory=dict)  # of a version that does not fit: `fit.Overflow.to_dict`
    outputs: object = None  # what its run wrote (`check.Outputs`), for another process to compare


class Evaluator:
    """Runs configurations of ``space`` on ``kernel`` (a ``pypto.jit`` function) in this process.

    ``compiles`` counts the versions compiled (a runtime-only change compiles nothing). At most
    ``max_versions`` compiled versions are kept (least recently used first out); a version keeps
    only what re-simulation needs (the lowered program and the call's recorded root instances).
    With ``report_outputs`` (a Dask worker) nothing is compared here and the baseline never runs:
    each compiled version keeps its `check.Outputs` for the sweeps whose drivers compare them
    (`outputs_for`, `check_outputs`), and its trials' ``numbers_match`` stay None until then.
    """

    def __init__(self, kernel, space: Space, seed: int = 0, max_versions: int = 64, baseline=None,
                 report_outputs: bool = False):
        from ..frontend.signature import Signature

        # a private kernel over the same function: the sweep's versions and calls stay out of the
        # user's kernel (its cache, cache_info and last_run are untouched)
        self.kernel = _private_copy(kernel)
        self.space, self.seed, self.baseline = space, seed, baseline
        self.report_outputs = report_outputs
        self._sent: dict = {}  # (compile part, call) -> the sweeps its version's outputs went to
        self.signature = Signature(kernel.fn, kernel.loc)
        self.compiles = 0
        self.max_versions = max_versions
        self._versions: OrderedDict = OrderedDict()  # (compile part, call) -> _Version
        self._reference: dict = {}  # call -> (written argument indices, their values, returned)
        # call -> (compiled, root stream) of the baseline's run, when the baseline is a config: the
        # version of a trial whose compile-affecting part is the baseline's (a runtime-only sweep of
        # the defaults: every trial) is that run, not compiled and run a second time
        self._baseline_runs: dict = {}
        self._inputs: dict = {}  # call -> the seeded arguments, never passed to a kernel
        self._input_digests: dict = {}  # call -> `check.digest` of those
        self._config_parts: dict = {}  # configuration items -> `_parts`
        self._fits: dict = {}  # compile key -> None (fits, as far as the estimate can tell) or an Overflow

    # ---- inputs and the reference ------------------------------------------------------------------
    def inputs(self, call: int) -> list:
        """Fresh, seeded arguments for call shape number ``call`` (outputs start random too, so a
        version that leaves part of an output unwritten differs from one that writes it)."""
        if call not in self._inputs:
            self._inputs[call] = self._make_inputs(call)
        return [t.clone() for t in self._inputs[call]]

    def inputs_digest(self, call: int) -> str:
        """The `check.digest` of call shape ``call``'s seeded arguments."""
        if call not in self._input_digests:
            self.inputs(call)
            self._input_digests[call] = digest(self._inputs[call])
        return self._input_digests[call]

    def check_shapes(self) -> None:
        """Raise `OptionError` unless every call shape gives every tensor parameter a shape."""
        for call in range(len(self.space.shapes)):
            self._shapes_of(call)

    def _shapes_of(self, call: int) -> list:
        from ..errors import OptionError

        shapes = self.space.shapes[call]
        out = []
        for spec in self.signature.tensors:
            shape = shapes.get(spec.param)
            if shape is None:
                if spec.dims and all(d.kind == "fixed" for d in spec.dims):  # the annotation fixes it
                    shape = tuple(d.size for d in spec.dims)
                else:
                    raise OptionError(f"no shape for tensor parameter '{spec.param}' in call shape {call}",
                                      param="shapes", expected=f"a shape for each of "
                                      f"{', '.join(t.param for t in self.signature.tensors)}",
                                      got=f"shapes for {', '.join(shapes) or 'none'}")
            out.append(shape)
        return out

    def _arg_specs(self, call: int) -> list:
        """(shape, torch dtype) of each tensor argument of call shape ``call``."""
        out = []
        for spec, shape in zip(self.signature.tensors, self._shapes_of(call)):
            dtype = spec.dtype or dtype_named(spec.param, self.space.dtypes.get(spec.param, "fp32"))
            out.append((shape, dtype.torch()))
        return out

    def _make_inputs(self, call: int) -> list:
        import torch

        g = torch.Generator().manual_seed(self.seed + call)
        args = []
        for shape, tdt in self._arg_specs(call):
            if tdt.is_floating_point:
                t = torch.randn(shape, generator=g).to(tdt)
            elif tdt == torch.bool:
                t = torch.randint(0, 2, shape, generator=g).bool()
            else:
                t = torch.randint(0, 8, shape, generator=g).to(tdt)
            args.append(t)
        return args

    def reference(self, call: int):
        """(indices of the arguments the baseline writes, their values, the tensors it returns)
        on call ``call``; raises `BaselineError` if the baseline cannot run."""
        if call not in self._reference:
            import torch

            args = self.inputs(call)
            pristine = self._inputs[call]
            try:
                result = self._run_baseline(args, call)
            except Exception as e:  # noqa: BLE001 - said once, in words, for every trial
                raise BaselineError(f"the baseline ({describe_baseline(self.baseline)}) failed on call shape "
                                    f"{call}: {_error_text(e)}", param="baseline",
                                    expected="a baseline that runs on the space's shapes", got=_error_text(e)) from e
            written = [i for i, (a, p) in enumerate(zip(args, pristine)) if not torch.equal(a, p)]
            returned_ = returned(result, args)
            if not written and not returned_:
                raise BaselineError(f"the baseline ({describe_baseline(self.baseline)}) wrote no output and "
                                    f"returned none on call shape {call}: there is nothing to check trials "
                                    "against", param="baseline", expected="a baseline that writes the outputs",
                                    got="every argument unchanged")
            self._reference[call] = (written, [args[i] for i in written], returned_)
        return self._reference[call]

    def check_outputs(self, outputs: Outputs) -> tuple:
        """Compare another process's run of a version (`check.Outputs`, e.g. a Dask worker's) with
        the baseline's run here: (numbers match, or None when they could not be compared; seconds
        the comparison took; why they could not be compared)."""
        reference = self.reference(outputs.call)
        t0 = time.perf_counter()
        match, why = compare(outputs, reference, self._inputs[outputs.call], self.inputs_digest(outputs.call))
        return match, time.perf_counter() - t0, why

    def outputs_for(self, configs, sweep: str) -> list:
        """The `check.Outputs` of the versions that ``configs`` ran here (``report_outputs``),
        less those already given to sweep ``sweep`` (a token of one sweep's run: a sweep run
        again, or resumed, on the same workers is told them again)."""
        got = []
        for config in configs:
            part = self._parts(config)[0]
            for call in range(len(self.space.shapes)):
                v = self._versions.get((part, call))
                sent = self._sent.setdefault((part, call), set())
                if v is not None and v.outputs is not None and sweep not in sent:
                    sent.add(sweep)
                    got.append(v.outputs)
        return got

    def _run_baseline(self, args, call: int):
        from ..options import forced

        b = self.baseline
        if callable(b):
            return b(*args)
        params, runtime, passes = split(b or {})
        with forced(runtime_options=runtime or None, pass_options=passes or None):
            try:
                result = self.kernel(*args, **params)
                compiled = self.kernel.last_run.compiled
                stream = getattr(compiled.executor, "last_stream", None)
                if stream is not None:
                    self._baseline_runs[call] = (compiled, stream)
                return result
            finally:
                self.kernel.cache_clear()

    # ---- compiled versions ---------------------------------------------------------------------
    def _parts(self, config: dict) -> tuple:
        """(key of the compile-affecting part, validated runtime options) of ``config``, worked
        out once per configuration (a sweep asks again for every call shape and every trial)."""
        try:
            memo = tuple(config.items())
            got = self._config_parts.get(memo)
        except TypeError:  # an unhashable value (a list): work it out each time
            memo, got = None, None
        if got is None:
            got = (config_key(compile_part(config)), _runtime_options(config))
            if memo is not None:
                if len(self._config_parts) >= 100_000:
                    self._config_parts.clear()
                self._config_parts[memo] = got
        return got

    def version(self, config: dict, call: int) -> tuple[_Version, bool]:
        """The compiled version for ``config``'s compile-affecting values on call ``call``, and
        whether it was compiled now."""
        key = (self._parts(config)[0], call)
        v = self._versions.get(key)
        if v is not None:
            self._versions.move_to_end(key)
            return v, False
        unfit = self.fit(config)
        if unfit is not None:  # rejected before compiling: the record says which memory and op
            v = _Version(error=str(unfit), stage="fit", detail=unfit.to_dict())
        else:
            v = self._compile(config, call)
        self._versions[key] = v
        if len(self._versions) > self.max_versions:  # bounded: the least recently used goes
            self._versions.popitem(last=False)
        return v, unfit is None  # a tile rejected by the estimate compiled nothing

    def fit(self, config: dict):
        """None if ``config``'s tiles can fit the machine's local memories on every call shape as
        far as `fit.overflow` can tell from the traced program (nothing lowered or run), else the
        `fit.Overflow`; worked out once per compile-affecting part."""
        key = self._parts(config)[0]
        if key not in self._fits:
            self._fits[key] = self._fit(config)
        return self._fits[key]

    def fits(self, part: str) -> bool:
        """Whether compiled part ``part`` (the `config_key` of a configuration's compile part) was
        traced by `fit` here and found to fit."""
        return part in self._fits and self._fits[part] is None

    def assume_fits(self, parts) -> None:
        """Take the compiled parts ``parts`` as fitting without tracing them (another process's
        `fit` found so: a Dask sweep's driver checks each new tile once, before sending it). A
        tile the estimate would have rejected is compiled and run as any tile it lets through."""
        for part in parts:
            self._fits.setdefault(part, None)

    def _fit(self, config: dict):
        import torch

        from ..options import CompStage, forced
        from ..runtime.machine import current_machine
        from .fit import overflow

        params, runtime, passes = split(compile_part(config))
        for call in range(len(self.space.shapes)):
            try:
                # tracing reads only shapes and dtypes: no data is made
                args = [torch.empty(shape, dtype=tdt) for shape, tdt in self._arg_specs(call)]
                with forced(runtime_options=runtime or None, pass_options=passes or None,
                            host_options={"compile_stage": int(CompStage.TENSOR_GRAPH)}):
                    self.kernel(*args, **params)
                program = self.kernel.last_run.compiled.program
            except Exception:  # noqa: BLE001 - it does not trace: the compile says why, in full
                return None
            finally:
                self.kernel.cache_clear()
            got = overflow(program, current_machine())
            if got is not None:
                return got
        return None

    def _compile(self, config: dict, call: int) -> _Version:
        from ..options import forced
        from ..runtime.machine import current_machine
        from ..runtime.scheduler import Replayer

        params, runtime, passes = split(compile_part(config))
        reference = None
        if not self.report_outputs:
            try:
                reference = self.reference(call)
            except BaselineError as e:
                return _Version(error=str(e))
        self.compiles += 1
        if call in self._baseline_runs and self._is_baseline(params, runtime, passes):
            # the baseline's own run: the same compile, the same inputs, so the same numbers
            compiled, stream = self._baseline_runs.pop(call)
            v = _Version(Replayer(compiled.lowered, stream, compiled.lowered.memory_key), compiled.options.runtime(),
                         current_machine(), compiled.compile_seconds, _ub_bytes(compiled))
            v.numbers_match, v.check_seconds = True, 0.0
            return v
        args = self.inputs(call)
        try:
            with forced(runtime_options=runtime or None, pass_options=passes or None):
                result = self.kernel(*args, **params)
            run = self.kernel.last_run
            compiled = run.compiled
            stream = getattr(compiled.executor, "last_stream", None)
            if stream is None:
                raise RuntimeError("this call cannot be re-simulated (it recorded no root instances)")
        except Exception as e:  # noqa: BLE001 - a failing candidate is recorded, not fatal
            return _Version(error=_error_text(e))
        finally:
            # the private kernel's versions hold their last call's tensors: the sweep keeps its own
            self.kernel.cache_clear()
        v = _Version(Replayer(compiled.lowered, stream, compiled.lowered.memory_key), compiled.options.runtime(),
                     current_machine(), compiled.compile_seconds, _ub_bytes(compiled))
        if reference is None:  # compared by the process that ran the baseline
            part = config_key(compile_part(config))
            v.outputs = Outputs.of_run(_worker_name(), part, call, args, self._inputs[call],
                                       self.inputs_digest(call), result)
            self._sent.pop((part, call), None)  # compiled again (the first was dropped): to be sent again
            return v
        t0 = time.perf_counter()
        written, want, want_returned = reference
        v.numbers_match = same([args[i] for i in written] + returned(result, args), want + want_returned)
        v.check_seconds = time.perf_counter() - t0
        return v

    def _is_baseline(self, params: dict, runtime: dict, passes: dict) -> bool:
        """Whether a compile part (split) is the baseline configuration's: a kernel parameter
        given its default value is the same compile as one left out."""
        if callable(self.baseline):
            return False
        bparams, bruntime, bpasses = split(self.baseline or {})
        defaults = self._defaults()
        try:
            return (runtime, passes) == (bruntime, bpasses) and {**defaults, **params} == {**defaults, **bparams}
        except (TypeError, ValueError, RuntimeError):  # values that do not compare plainly: compile it
            return False

    def _defaults(self) -> dict:
        import inspect

        fn = getattr(self.kernel, "fn", self.kernel)
        return {n: p.default for n, p in inspect.signature(fn).parameters.items()
                if p.default is not inspect.Parameter.empty}

    # ---- trials --------------------------------------------------------------------------------------
    def evaluate(self, config: dict, number: int = 0) -> TrialRecord:
        """Run ``config`` on every call shape: a record, failed (with its error) rather than raised."""
        t0 = time.perf_counter()
        rec = TrialRecord(number, dict(config), worker=_worker_name())
        makespan = critical = devtasks = tasks = ub = 0
        us = compile_s = check_s = 0.0
        util_c, util_v, l2 = [], [], []
        match, unchecked = True, False
        try:
            runtime = self._parts(config)[1]
            for call in range(len(self.space.shapes)):
                v, new = self.version(config, call)
                rec.compiled = rec.compiled or new
                s = _simulated(v, runtime).stats
                makespan += s["makespan_cycles"]
                us += s["makespan_us"]
                critical += s["critical_path_cycles"]
                devtasks += s["device_tasks"]
                tasks += s["tasks"]
                util_c.append(s["utilization"].get("AIC", 0.0))
                util_v.append(s["utilization"].get("AIV", 0.0))
                l2.append(s.get("l2_hit_rate", 0.0))
                compile_s += v.compile_seconds
                check_s += v.check_seconds
                ub = max(ub, v.ub_bytes)
                unchecked = unchecked or v.numbers_match is None
                match = match and bool(v.numbers_match)
        except _TrialFailed as e:
            rec.status, rec.error = FAILED, str(e)
            rec.extra["stage"] = e.stage  # the compiled version failed: every trial of it would
            if e.detail:
                rec.extra["fit"] = dict(e.detail)
        except Exception as e:  # noqa: BLE001 - an invalid combination is recorded, not fatal
            rec.status, rec.error = FAILED, _error_text(e)
        else:
            rec.makespan_cycles, rec.makespan_us, rec.critical_path_cycles = makespan, us, critical
            rec.device_tasks, rec.tasks, rec.compile_seconds, rec.ub_bytes = devtasks, tasks, compile_s, ub
            rec.utilization_aic, rec.utilization_aiv = _mean(util_c), _mean(util_v)
            rec.l2_hit_rate = _mean(l2)
            rec.numbers_match, rec.check_seconds = match, check_s
            if unchecked and self.report_outputs:  # the driver compares, then says
                rec.numbers_match, rec.check_seconds = None, None
            elif not match:
                rec.status = MISMATCH
                rec.error = f"the numbers differ from the baseline's ({describe_baseline(self.baseline)})"
        rec.seconds = time.perf_counter() - t0
        return rec

    def same_schedule(self, config: dict):
        """A `SameSchedule` for ``config``'s compiled versions (one per call shape), or None when
        one of them failed or is not compiled here yet: a sweep's driver uses it to send one
        configuration of each schedule to the workers and answer the others from its record."""
        part = self._parts(config)[0]
        calls = []
        for call in range(len(self.space.shapes)):
            v = self._versions.get((part, call))
            if v is None or v.error:
                return None
            calls.append((v.runtime, v.replayer.schedule_keyer(v.machine)))
        return SameSchedule(part, calls)

    def timeline(self, config: dict, call: int = 0):
        """The simulated Timeline of ``config`` on call shape ``call`` (for the lab)."""
        return _simulated(self.version(config, call)[0], self._parts(config)[1])


class SameSchedule:
    """Which configurations of one compiled part simulate to the same schedules, to the cycle: the
    `runtime.scheduler.ScheduleKey` of each call shape's version under its compile's runtime
    options. Picklable (workers send it to the sweep's driver)."""

    def __init__(self, part: str, calls: list):
        self.part, self.calls = part, calls

    def key(self, config: dict):
        """A hashable key shared by exactly the configurations of this part that give the same
        schedule on every call shape, or None when it cannot be told (invalid options)."""
        try:
            runtime = _runtime_options(config)
        except Exception:  # noqa: BLE001 - the trial itself says what is wrong
            return None
        keys = []
        for base, keyer in self.calls:
            full = {**base, **runtime}
            k = keyer(full)
            if k is None:
                return None
            keys.append((bool(full.get("valid_shape_optimize", 0)), k))
        return (self.part, tuple(keys))


class _TrialFailed(Exception):
    def __init__(self, message: str, stage: str = "compile", detail: dict | None = None):
        super().__init__(message)
        self.stage, self.detail = stage, detail or {}


class BaselineError(OptionError):
    """The baseline a sweep checks its numbers against is missing or does not run."""


def check_baseline(kernel, space: Space, baseline) -> None:
    """Refuse a sweep whose numbers could not be checked: with no ``baseline``, every kernel
    parameter the space tunes needs a default (the kernel's defaults are the reference)."""
    import inspect

    if baseline is not None:
        if not callable(baseline) and not isinstance(baseline, dict):
            raise BaselineError("baseline= is a configuration dict or a function", param="baseline",
                                expected="e.g. {'TILE': 32}, or a torch function called like the kernel",
                                got=type(baseline).__name__)
        return
    fn = getattr(kernel, "fn", kernel)
    params = inspect.signature(fn).parameters
    missing = [n for n in space.params if n in params and params[n].default is inspect.Parameter.empty]
    if missing:
        names = ", ".join(map(repr, missing))
        raise BaselineError(f"cannot check the numbers of this sweep: kernel parameter(s) {names} have no "
                            "default, so there is no reference configuration", param="baseline",
                            expected="baseline={" + ", ".join(f"{n!r}: <a trusted value>" for n in missing) +
                            "} or baseline=<a torch function computing the outputs>",
                            got="no baseline and no defaults",
                            hint="the kernel's defaults are the reference when every tuned parameter has one")


def _simulated(v: _Version, runtime: dict):
    """The Timeline of version ``v`` under its compile's runtime options updated by ``runtime``."""
    if v.error:
        raise _TrialFailed(v.error, v.stage, v.detail)
    return v.replayer.simulate({**v.runtime, **runtime}, v.machine)


def _runtime_options(config: dict) -> dict:
    """The validated runtime options of ``config``."""
    from ..options import validate_group

    return validate_group("runtime", split(config)[1], param="runtime_options")


def _private_copy(kernel):
    import pypto

    from .render import jit_keywords

    return pypto.jit(getattr(kernel, "fn", kernel), **jit_keywords(kernel))


def _error_text(e: BaseException) -> str:
    return f"{type(e).__name__}: {e}"


def _mean(xs):
    return sum(xs) / len(xs) if xs else None


def _ub_bytes(compiled) -> int:
    """The largest UB footprint of a leaf of ``compiled`` (bytes)."""
    best = 0
    for leaf in getattr(compiled.lowered, "leaves", {}).values():
        for b in getattr(leaf, "buffers", ()):
            if getattr(b, "mem", None) == "UB":
                best = max(best, b.offset + b.nbytes)
    return best


def _worker_name() -> str:
    distributed = sys.modules.get("distributed")  # never imported just to ask (in-process sweeps)
    if distributed is not None:
        try:
            return distributed.get_worker().address
        except ValueError:  # not inside a Dask worker
            pass
    return _local_name()


@functools.lru_cache(maxsize=1)
def _local_name() -> str:
    return f"{socket.gethostname()}:local"
