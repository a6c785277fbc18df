"""``pypto.jit``: the decorator, the per-signature compile cache and the call path.

A call binds its arguments to the signature, builds a cache key from what is static (dtypes,
ranks, static dims, constants, compile-affecting options, tile settings and the kernel source),
compiles on a miss and runs the compiled program. DYNAMIC dims are not in the key, so changing
them never recompiles.
"""

from __future__ import annotations

import collections
import copy
import functools
import inspect
import math
import sys
import time
import weakref
from typing import Callable

from .. import artefacts as _artefacts
from .. import backend as _backend
from .. import options as _options
from .._lazy import LazyModule
from ..dtypes import DT_UINT8, PACKED_FP4, from_torch
from .fp4 import unpack_e2m1
from ..errors import (AnnotationError, ArgumentTypeError, ArgumentValueError, BackendUnavailableError,
                      PyptoError, SourceLoc, user_loc)
from ..ir.dot_lower import tensor_dot
from ..ir.printer import format_program
from ..record import CacheEntry, CacheInfo, CallLogEntry, CompiledKernel, PassSnapshot, RunRecord, call_log_entry
from ..passes.dump import dump_compiled
from ..passes.pipeline import lower
from ..runtime.argument_overlap import refuse_written_overlaps
from ..runtime.collector import paused
from ..runtime.execute import DECLINED, LoweredExecutor
from ..runtime.workspace_budget import DEFAULT_BYTES as DEFAULT_WORKSPACE_BYTES, WorkspaceBudget, check_budget
from ..runtime.verify import verify
from .checks import check_source
from .compile import monitor_compile
from .user_traceback import filter_user_traceback
from .execute_hook import ExecuteHookType, ExecutionSteps
from .launcher import make_binder
from .host_tensor import HostTensor
from .control import _global_tiles, global_tiles
from ..runtime.machine import _current as _process_machine, current_machine
from .. import scopes as _scopes
from .signature import Signature
from .version_cache import DEFAULT_MAXSIZE, VersionCache, check_maxsize
from .outputs import check_outputs
from ..runtime.memory_budget import require_fits
from .nz_format import is_nz, nz_aligned_shape, nz_padded
from .strided import check_written, dense_numpy, write_back
from .trace import trace

_GROUPS = ("codegen_options", "host_options", "pass_options", "runtime_options", "verify_options",
           "debug_options")
# Upstream keyword arguments that do not change anything in this build but are accepted.
_ACCEPTED_COMPAT = ("infer_controlflow_shape", "use_cache", "new_ir", "create_new_logical_tensor")
_SIMPLE = (int, float, str, bool, type(None))
_ORDINAL = {1: "1st", 2: "2nd", 3: "3rd"}


def _ordinal(i: int) -> str:
    return _ORDINAL.get(i, f"{i}th")


def _freeze(v):
    """A hashable stand-in for a compile-time constant (lists become tuples, and so on)."""
    if isinstance(v, _SIMPLE):
        return (type(v).__name__, v)
    if isinstance(v, (list, tuple)):
        return (type(v).__name__, tuple(_freeze(x) for x in v))
    if isinstance(v, dict):
        return ("dict", tuple(sorted((repr(k), _freeze(x)) for k, x in v.items())))
    if hasattr(v, "__dataclass_fields__"):
        return (type(v).__qualname__, tuple((f, _freeze(getattr(v, f))) for f in v.__dataclass_fields__))
    try:
        hash(v)
        return (type(v).__qualname__, v)
    except TypeError:
        return (type(v).__qualname__, repr(v))


def _snapshot(options: dict) -> dict:
    """A copy of a user's option dict to compare it with later (lists inside are copied too)."""
    try:
        return copy.deepcopy(options)
    except Exception:  # an uncopyable value: compare by identity of the values
        return dict(options)


def _code_names(code) -> set:
    names = set(code.co_names)
    for c in code.co_consts:
        if inspect.iscode(c):
            names |= _code_names(c)
    return names


class _EveryKernelsVersions:
    """The compiled versions of every live kernel, as upstream's class-wide kernel cache
    (``JitCallableWrapper._kernel_module_cache``): ``clear()`` drops them all, so each kernel
    compiles again at its next call."""

    def clear(self) -> None:
        for kernel in list(_LIVE_KERNELS):
            kernel.cache_clear()

    def __len__(self) -> int:
        return sum(len(kernel._versions) for kernel in list(_LIVE_KERNELS))


_LIVE_KERNELS: "weakref.WeakSet" = weakref.WeakSet()


class JitFunction(ExecutionSteps, metaclass=ExecuteHookType):
    """A kernel compiled on first use and cached per static signature.

    Call it with torch tensors (CPU; numpy arrays work too) for the tensor parameters, then the
    compile-time constants. Inspect it with `cache_info`, `inspect` and `last_run`. Upstream's
    call steps (``_execute_kernel``, ``compile``, ...) and their hook: `execute_hook`.
    """

    _kernel_module_cache = _EveryKernelsVersions()

    def __init__(self, fn: Callable, *, _scope_locals: dict | None = None, cache_maxsize=DEFAULT_MAXSIZE,
                 workspace_bytes=DEFAULT_WORKSPACE_BYTES, **jit_options):
        scope = getattr(fn, "__pypto_options__", None)
        if scope is not None:  # @pypto.jit over @pypto.options(...): trace the function itself
            fn = fn.__wrapped__
            for group, values in scope.settings.items():
                jit_options.setdefault(f"{group}_options", values)
        self._scope_locals = _scope_locals
        if not inspect.isfunction(fn):
            raise AnnotationError("pypto.jit can only decorate functions", expected="a def function",
                                  got=type(fn).__name__)
        self.fn = fn
        code = fn.__code__
        self.loc = SourceLoc(code.co_filename, _def_line(code), fn.__name__)
        overrides = {}
        # As upstream, the runtime_options dict is read at every call (a script may set run_mode in
        # it after decorating); the other groups are copied here. _sync_runtime re-validates it.
        self._live_runtime = None
        self._runtime_seen = None
        for key, value in jit_options.items():
            if key in _ACCEPTED_COMPAT:
                continue
            if key not in _GROUPS:
                raise _options_error(key, self.loc)
            if key == "runtime_options" and isinstance(value, dict):
                self._live_runtime, self._runtime_seen = value, _snapshot(value)
            if value:
                try:
                    overrides[key[:-len("_options")]] = _options.validate_group(key[:-len("_options")], value,
                                                                                param=key)
                except PyptoError as e:
                    raise e.with_loc(self.loc).with_traceback(None) from None
        self.jit_options = overrides
        self._sig: Signature | None = None
        self._loop_names: dict | None = None
        self._source_key = (code.co_code, repr(code.co_consts), code.co_names, code.co_varnames,
                            code.co_filename, fn.__qualname__)
        self._guard_names = tuple(sorted(n for n in _code_names(code) if isinstance(fn.__globals__.get(n), _SIMPLE)))
        # compiled versions: LRU-bounded, one compile per key when threads race (version_cache.py)
        self._versions = VersionCache(check_maxsize(cache_maxsize, loc=self.loc), self._evicted)
        # what every version's plans keep between calls, bounded in bytes (runtime/workspace_budget.py)
        self._workspace = WorkspaceBudget(check_budget(workspace_bytes, loc=self.loc))
        self._hits = 0
        self._misses = 0
        self._opts = (-1, None, None, False, None, False)
        self._fast = None  # (binder, entry, ...) of the version the last call used (launcher.py)
        self.call_log: collections.deque = collections.deque(maxlen=256)
        # the last call's RunRecord, or what a lean call leaves for it (a tuple, see last_run)
        self._run: RunRecord | tuple | None = None
        self._made = None  # (that tuple, the RunRecord made of it)
        functools.update_wrapper(self, fn)
        _LIVE_KERNELS.add(self)

    @property
    def last_run(self) -> RunRecord | None:
        """What the last call did (`RunRecord`): cache hit, seconds, its timeline (simulated when
        first read), the pass-verify report, the error that stopped it."""
        run = self._run
        if run.__class__ is not tuple:
            return run
        made = self._made
        if made is not None and made[0] is run:
            return made[1]
        seconds, key, compiled, opts, stream, machine = run  # a lean call's: made now, once
        record = RunRecord(True, 0.0, seconds, key, compiled, None,
                           _simulation(compiled, opts, stream, machine, ()) if stream is not None else None)
        self._made = (run, record)
        return record

    @last_run.setter
    def last_run(self, record: RunRecord | None) -> None:
        self._run = record

    # ---- the call path -------------------------------------------------------------------------
    def __call__(self, *args, **kwargs):
        before = self._run
        try:
            fast = self._fast
            if fast is not None and fast[10] and not kwargs:  # the cached call (see _lean_call)
                result = self._lean_call(fast, args)
                if result is not DECLINED:
                    return result
            result, npu = self._call(args, kwargs)
        except PyptoError as e:
            self._refused(e, before)
            raise e.with_traceback(None)  # the message already points at the kernel line
        except Exception as e:  # a Python mistake in the kernel body: show the user's frames only
            self._refused(e, before)
            filter_user_traceback(e)
            raise
        if npu:  # run_mode NPU, served on the simulator by a registered stand-in
            _backend.npu_stand_in().launched(self, args, kwargs, result)
        return result

    _refusal = None  # (what refused the last call, the last_run it left in place)

    def _refused(self, error, before) -> None:
        if self._run is before:  # refused before running: last_run is still the call before
            self._refusal = (_stopped_by(error), before)

    @property
    def refused_call(self) -> str | None:
        """What refused this kernel's last call (``"ShapeError: ..."``) when it failed before
        running, so that ``last_run`` still describes the call before it; None otherwise."""
        got = self._refusal
        return got[0] if got is not None and got[1] is self._run else None

    def _call(self, args, kwargs):
        # Threads may call one kernel at once: read each shared slot (_fast, _opts) once, into locals.
        t0 = time.perf_counter()
        if self._live_runtime is not None:
            self._check_runtime_dict()
        fast = self._fast
        bound = _fast_bind(self, fast, args) if not kwargs and fast is not None else None
        if bound is not None:  # the same version as the last call: no key, no lookup
            entry = fast[1]
            tensors, env = bound
            record = fast[9]
            hit, reason, strided = True, None, None
        else:
            record = self._resolved_record()
            if record[3] and _backend.npu_stand_in() is None:  # refuse before compiling anything
                raise BackendUnavailableError(
                    "runtime_options['run_mode'] is NPU, but this build has no NPU backend",
                    expected="pypto.RunMode.SIM (1), the CPU simulator", got="pypto.RunMode.NPU (0)",
                    param="runtime_options['run_mode']", loc=self.loc,
                    hint="to run NPU-mode scripts on the simulator, emulate the NPU: "
                         "pypto.emulate.install() or python -m pypto.emulate script.py")
            entry, tensors, env, hit, reason, strided = self._lookup(args, kwargs, count=True, record=record)
        compiled = entry.compiled
        t1 = time.perf_counter()
        opts = record[1]
        if record[5]:  # compiled up to its stage: nothing runs (never remembered for the fast path)
            if hit:
                entry.hits += 1
                self._hits += 1
            self.last_run = RunRecord(hit, 0.0 if hit else compiled.compile_seconds, 0.0, entry.key, compiled)
            self.call_log.append(CallLogEntry(hit, entry.key, reason, time.perf_counter() - t0))
            return None, record[3]
        try:
            if opts.get("verify", "enable_pass_verify"):
                results, report = verify(compiled, tensors, env, opts,
                                         lambda: compiled.executor.run(tensors, env, opts))
            else:
                results, report = compiled.executor.run(tensors, env, opts), None
            if strided is not None:
                write_back(strided, compiled, tensors)
        except BaseException as e:  # an error or an interrupt mid-run: not a hit, and last_run says so
            self.last_run = RunRecord(hit, 0.0 if hit else compiled.compile_seconds, time.perf_counter() - t1,
                                      entry.key, compiled, error=_stopped_by(e))
            raise
        if hit:  # counted once the call ran (an interrupted call is no hit)
            entry.hits += 1
            self._hits += 1
        sizes = tuple(env.values())  # the call's dynamic sizes: its concrete shapes, per version
        served = entry.served
        served[sizes] = served.get(sizes, 0) + 1
        if not hit and entry.compiled_for is None:
            entry.compiled_for = sizes
        if strided is None and bound is None:
            self._remember(entry, record)
        t2 = time.perf_counter()
        compile_s = 0.0 if hit else compiled.compile_seconds
        self.last_run = RunRecord(hit, compile_s, t2 - t1, entry.key, compiled, verify=report,
                                  simulator=_simulator(compiled, opts))
        self.call_log.append(CallLogEntry(hit, entry.key, reason, t2 - t0))
        device_perf = _artefacts.device_perf_requested()
        if record[4] is not None or device_perf:  # debug options, DUMP_DEVICE_PERF, emulated SIM
            _artefacts.after_call(self.last_run, record[4], device_perf)
        for listener in _CALL_LISTENERS:
            listener(self)
        if results is None or compiled.returns is None:
            return None, record[3]
        if compiled.returns == "tensor":
            return results[0], record[3]
        return (tuple(results) if compiled.returns == "tuple" else list(results)), record[3]

    def _lean_call(self, fast, args):
        """A cached call of the version the last call used, with sizes it has a plan for: bind
        (the generated binder), replay the plan's steps (one generated function, runtime/replay.py)
        and record the call; its timeline and memory are built when read. `DECLINED` when any of
        that does not apply (nothing done): the full path takes the call."""
        t0 = time.perf_counter()
        if self._live_runtime is not None:
            self._check_runtime_dict()
            if self._fast is not fast:
                return DECLINED
        bound = _fast_bind(self, fast, args)
        if bound is None:
            return DECLINED
        tensors, env = bound
        entry, record = fast[1], fast[9]
        compiled, opts = entry.compiled, record[1]
        sizes = tuple(env.values())
        t1 = time.perf_counter()
        try:
            results = compiled.executor.replay(tensors, sizes, opts)
        except BaseException as e:  # an error or an interrupt mid-run: not a hit, and last_run says so
            self.last_run = RunRecord(True, 0.0, time.perf_counter() - t1, entry.key, compiled, error=_stopped_by(e))
            raise
        if results is DECLINED:
            return DECLINED
        entry.hits += 1
        self._hits += 1
        served = entry.served
        served[sizes] = served.get(sizes, 0) + 1
        t2 = time.perf_counter()
        self._run = (t2 - t1, entry.key, compiled, opts, compiled.executor.last_stream, fast[11])
        self.call_log.append(call_log_entry(True, entry.key, None, t2 - t0))
        if _artefacts.device_perf_requested():  # DUMP_DEVICE_PERF (read at every call, as upstream)
            _artefacts.after_call(self.last_run, None, True)
        for listener in _CALL_LISTENERS:
            listener(self)
        returns = compiled.returns
        if results is None or returns is None:
            return None
        if returns == "tensor":
            return results[0]
        return tuple(results) if returns == "tuple" else list(results)

    def _remember(self, entry, record) -> None:
        """Make ``entry`` the version the next call tries first (launcher.py)."""
        binder = entry.__dict__.get("_binder")
        if binder is None:
            key = entry.compiled.key
            written = entry.compiled.lowered.written_params
            binder = entry.__dict__["_binder"] = make_binder(
                self._sig, key[0], dict(entry.compiled.program.constants),
                frozenset(i for i, p in enumerate(entry.compiled.program.params) if p.value.id in written))
        g = self.fn.__globals__
        # the version of the options this call resolved (not re-read: another thread may have
        # changed the global settings since, and then the next call must look up again); the
        # scope stack's gen covers scoped tiles and machine, so only the process-wide ones are kept
        opts = record[1]
        # the lean call serves versions that run plainly: no NPU stand-in, no files, not compile-only,
        # no pass verify (each of those keeps the full path)
        lean = not (record[3] or record[4] is not None or record[5] or opts.get("verify", "enable_pass_verify"))
        self._fast = (binder, entry, record[0], _global_tiles["vec"], _global_tiles["cube"],
                      _process_machine["machine"], tuple(_freeze(g.get(n)) for n in self._guard_names),
                      _closure_key(self.fn), _backend.npu_stand_in(), record, lean, current_machine(),
                      tuple(g.get(n) for n in self._guard_names))

    def _evicted(self, entry) -> None:
        """A version left the cache to make room: the next call must not reuse it."""
        fast = self._fast
        if fast is not None and fast[1] is entry:
            self._fast = None

    @property
    def cache_maxsize(self) -> int | None:
        """How many compiled versions this kernel keeps (least recently used out first; None:
        unbounded). Set it (``kernel.cache_maxsize = 16``) or give it to ``pypto.jit``."""
        return self._versions.maxsize

    @cache_maxsize.setter
    def cache_maxsize(self, value) -> None:
        self._versions.resize(check_maxsize(value))

    @property
    def workspace_bytes(self) -> int:
        """How many bytes of workspaces and leaf temporaries this kernel's cached calls keep for the
        next call with the same sizes (default 256 MiB; least recently used plans' out first; 0:
        every call allocates). Set it (``kernel.workspace_bytes = 1 << 30``) or give it to
        ``pypto.jit``; ``cache_info()`` shows what is held."""
        return self._workspace.limit

    @workspace_bytes.setter
    def workspace_bytes(self, value) -> None:
        self._workspace.resize(check_budget(value))

    def _check_runtime_dict(self) -> None:
        """Compare the decorator's runtime_options dict with what was last validated."""
        live = self._live_runtime
        try:
            same = live == self._runtime_seen
        except Exception:  # a value whose == is not a bool (an array): validation will say why
            same = False
        if not same:
            self._sync_runtime(live)

    def _sync_runtime(self, live) -> None:
        """The runtime_options dict given to the decorator changed: validate and use it. A change
        of a compile-affecting option (valid_shape_optimize) then misses the cache with that reason."""
        try:
            values = _options.validate_group("runtime", live, param="runtime_options")
        except PyptoError as e:
            e.hint = e.hint or (f"the runtime_options dict of kernel '{self.fn.__name__}' ({self.loc}) "
                                f"was changed after decoration")
            e.loc = e.loc or user_loc()
            e.args = (e._format(),)
            raise e
        if values:
            self.jit_options["runtime"] = values
        else:
            self.jit_options.pop("runtime", None)
        self._runtime_seen = _snapshot(live)
        self._opts = (-1, None, None, False, None, False)
        self._fast = None

    def _resolved(self):
        """The options of a call made now, in this thread / task."""
        return self._resolved_record()[1]

    def _resolved_record(self) -> tuple:
        """(state version, resolved options, compile-key id, run_mode is NPU, artefacts wanted,
        compile only) for a call made now in this thread / task; kept for the next call in the same
        state."""
        version = _options.state_version()
        record = self._opts
        if record[0] != version:
            resolved = _options.effective(self.jit_options)
            # the compile-affecting options, interned to a small int so that hashing the cache key
            # on every call does not rehash every option value
            ckey = _OPTION_KEYS.setdefault(resolved.compile_key(), len(_OPTION_KEYS))
            explicit_sim = ("run_mode" in self.jit_options.get("runtime", {})
                            or _options.is_set("runtime", "run_mode"))
            record = self._opts = (version, resolved, ckey, resolved.run_mode == _options.RunMode.NPU,
                                   _artefacts.wanted(resolved, explicit_sim),  # files the calls write (artefacts/)
                                   compile_only(resolved))
        return record

    def _lookup(self, args, kwargs, count: bool, record: tuple | None = None):
        sig = self._sig or self._signature()
        try:
            raw, consts = sig.bind(args, kwargs)
            record = record or self._resolved_record()
            tensors, dtypes, tkey, env, strided = _bind_tensors(sig, raw, None, record[1])
        except PyptoError as e:  # a bad argument: point at the call that passed it
            raise self._at_call_site(e)
        opts = record[1]
        g = self.fn.__globals__
        key = (tkey, tuple((k, _freeze(v)) for k, v in consts.items()), record[2], global_tiles(),
               tuple(_freeze(g.get(n)) for n in self._guard_names), _closure_key(self.fn), current_machine())
        entry = self._versions.get(key)
        reason = None
        if entry is None:
            why = self._miss_reason(key)
            entry, compiled_here = self._versions.get_or_compile(
                key, lambda: self._compile(key, sig, tensors, dtypes, consts, opts))
            if compiled_here:  # a call that waited for another thread's compile of this key is a hit
                reason = why
                if count:
                    self._misses += 1
        if not record[5]:  # a refused call is not a hit (a compile-only call writes nothing)
            if strided is not None:
                check_written(strided, entry.compiled, sig.tensors, self.loc)
                refuse_written_overlaps(entry.compiled.lowered, tensors, strided)
            check_outputs(entry.compiled, sig.tensors, tensors, dict(strided or ()), self.loc)
        if any(t.requires_grad for t in tensors):  # the kernel reads values and records no autograd graph
            tensors = [t.detach() if t.requires_grad else t for t in tensors]
        return entry, tensors, env, reason is None, reason, strided

    def _at_call_site(self, error: PyptoError) -> PyptoError:
        """``error`` (about an argument) located at the user's call, naming where the kernel is."""
        if error.loc is None:
            error.loc = user_loc()
            if error.loc is None:
                error.loc = self.loc
            else:
                where = f"kernel '{self.fn.__name__}' is defined at {self.loc}"
                error.hint = f"{error.hint}; {where}" if error.hint else where
            error.args = (error._format(),)
        return error

    def _signature(self) -> Signature:
        try:
            self._sig = Signature(self.fn, self.loc, self._scope_locals)
        except PyptoError as e:
            raise e.with_loc(self.loc)
        return self._sig

    def _compile(self, key, sig, tensors, dtypes, consts, opts) -> CacheEntry:
        with paused():
            return self._compile_now(key, sig, tensors, dtypes, consts, opts)

    def _compile_now(self, key, sig, tensors, dtypes, consts, opts) -> CacheEntry:
        t0 = time.perf_counter()
        if self._loop_names is None:
            self._loop_names = check_source(self.fn, [t.param for t in sig.tensors])
        program, returns = trace(self.fn, self.fn.__name__, sig.tensors, tensors, dtypes, consts,
                                 (key[3][0], key[3][1]), self._loop_names, self.loc)
        t1 = time.perf_counter()
        snapshot = PassSnapshot("trace", "tensor", format_program, t1 - t0, program, tensor_dot)
        key_text = _key_text(sig, tensors, dtypes, consts, opts)
        lowered, stages = lower(program, opts)
        compiled = CompiledKernel(self.fn.__name__, key, key_text, program, [snapshot] + stages, opts,
                                  0.0, returns=returns)
        if lowered is not None:  # None: host_options compile_stage stopped before code generation
            compiled.source = lowered.sources
            compiled.lowered = lowered
            compiled.executor = LoweredExecutor(lowered, opts, self._workspace)
        compiled.compile_seconds = time.perf_counter() - t0
        monitor_compile(compiled.compile_seconds, opts)
        compiled.dump_dir = dump_compiled(compiled, opts)  # debug_options: compile_debug_mode, dump_pass_graph
        return CacheEntry(key_text, 0, compiled.compile_seconds, compiled, _layout(sig, tensors, dtypes))

    def _miss_reason(self, key) -> str:
        """Why ``key`` compiled: what differs from the nearest cached version (the one with the
        fewest differences, the newest of those), named by its index when there are several."""
        keys = self._versions.keys()
        if not keys:
            return "first call"
        best, best_parts = 0, None
        for index in range(len(keys) - 1, -1, -1):
            parts = self._key_changes(key, keys[index])
            if best_parts is None or len(parts) < len(best_parts):
                best, best_parts = index, parts
        text = "; ".join(best_parts) or "new signature"
        return text if len(keys) == 1 else f"{text} (against version #{best})"

    def _key_changes(self, key, prev) -> list:
        parts = []
        (tk, ck, ok, tiles, gk, clk, mach), (ptk, pck, pok, ptiles, pgk, pclk, pmach) = key, prev
        sig = self._sig
        for spec, new, old in zip(sig.tensors, tk, ptk):
            if new[0] is not old[0]:
                parts.append(f"{spec.param}.dtype {old[0].short} -> {new[0].short}")
            elif new[1] != old[1]:
                parts.append(f"{spec.param} rank {old[1]} -> {new[1]}")
            else:
                for d, (a, b) in enumerate(zip(new[2], old[2])):
                    if a != b:
                        parts.append(f"{spec.param}.shape[{d}] {b} -> {a} (static)")
        for (name, new), (_, old) in zip(ck, pck):
            if new != old:
                parts.append(f"constant {name} {old[1]!r} -> {new[1]!r}")
        if ok != pok:
            new_o, old_o = _option_values(ok), _option_values(pok)
            changed = [f"{g}.{n}" for (g, n), v in new_o.items() if old_o.get((g, n)) != v]
            parts.append("options " + ", ".join(changed))
        if tiles != ptiles:
            parts.append("global tile shapes")
        if mach != pmach:
            parts.append(f"machine model {pmach.name} -> {mach.name}")
        if gk != pgk or clk != pclk:
            parts.append("a global or captured value used by the kernel")
        return parts

    # ---- inspection ----------------------------------------------------------------------------
    def inspect(self, *args, **kwargs) -> CompiledKernel:
        """The compiled version for these arguments (compiled if needed; nothing runs)."""
        try:
            if self._live_runtime is not None:
                self._check_runtime_dict()
            entry = self._lookup(args, kwargs, count=False)[0]
        except PyptoError as e:
            raise e.with_traceback(None)
        except Exception as e:
            filter_user_traceback(e)
            raise
        return entry.compiled

    def cache_info(self) -> CacheInfo:
        """Hits, misses and one entry per compiled version (key, hits, compile seconds), in compile
        order; ``maxsize`` (`cache_maxsize`) and ``evictions`` (versions dropped to make room)."""
        versions = self._versions
        return CacheInfo(self._hits, self._misses, versions.entries(), tuple(self.call_log),
                         maxsize=versions.maxsize, evictions=versions.evictions,
                         workspace_bytes=self._workspace.held, workspace_limit=self._workspace.limit)

    def cache_clear(self) -> None:
        """Drop every compiled version (with everything they hold: plans, per-call-site tables) and
        reset the counters."""
        self._versions.clear()
        self._hits = self._misses = 0
        self.call_log.clear()
        self.last_run = None
        self._fast = None

    def __repr__(self) -> str:
        return f"<pypto.jit kernel {self.fn.__qualname__}: {len(self._versions)} compiled version(s)>"

    def __get__(self, obj, objtype=None):  # support kernels defined as methods
        return self if obj is None else functools.partial(self, obj)


def _fast_bind(kernel, fast, args):
    """(tensors, env) when this call can reuse the version ``fast`` remembers as is, else None."""
    version, gen = fast[2]
    # a scope entered or changed in this thread / task gives its stack a new gen (scopes.py)
    if version != _options._version or _scopes._current.get().gen != gen \
            or _global_tiles["vec"] is not fast[3] or _global_tiles["cube"] is not fast[4] \
            or _process_machine["machine"] is not fast[5] or _backend.npu_stand_in() is not fast[8]:
        return None
    guards, closure = fast[6], fast[7]
    if guards:
        g = kernel.fn.__globals__
        seen = fast[12]  # the very values the version saw: equal when every one is still there
        for n, v in zip(kernel._guard_names, seen):
            if g.get(n) is not v:
                if tuple(_freeze(g.get(n)) for n in kernel._guard_names) != guards:
                    return None
                break
    if closure and _closure_key(kernel.fn) != closure:
        return None
    try:
        return fast[0](args)
    except RuntimeError:  # a tensor torch cannot answer is_contiguous() for (sparse): the full path says why
        return None


def _stopped_by(error: BaseException) -> str:
    """What ended a call early, for ``RunRecord.error``."""
    text = str(error).split("\n", 1)[0]
    return f"{type(error).__name__}: {text}" if text else type(error).__name__


def _def_line(code) -> int:
    """The line of the ``def`` itself (``co_firstlineno`` is the first decorator's line)."""
    import linecache

    first = code.co_firstlineno
    for line in range(first, first + 64):
        text = linecache.getline(code.co_filename, line).lstrip()
        if not text:
            continue
        if text.startswith(("def ", "async def ")):
            return line
    return first


def compile_only(opts) -> bool:
    """``host_options["compile_stage"]`` is not ALL_COMPLETE: compile up to that stage, run nothing."""
    return opts.get("host", "compile_stage") != _options.CompStage.ALL_COMPLETE


def _simulator(compiled, opts, ran_on=None):
    """What simulates the timing of the call just made, run only when asked for: the `_simulation`
    of this call's stream; ``ran_on`` is the machine of the call when the caller knows it (not
    the machine of the moment the timeline is read)."""
    executor = compiled.executor
    stream = getattr(executor, "last_stream", None)
    if stream is None:
        return None
    return _simulation(compiled, opts, stream, ran_on or current_machine(), getattr(executor, "last_same", ()))


def _simulation(compiled, opts, stream, ran_on, same):
    """``simulate(overrides=None, machine=None)`` of one call: a closure over its ``stream`` (the
    lab reads the call's sizes from it, pypto_lab/widgets/sweep.py)."""
    def simulate(overrides=None, machine=None):
        return _simulate(compiled, opts, stream, ran_on, same, overrides, machine)
    return simulate


def _simulate(compiled, opts, stream, ran_on, same, overrides=None, machine=None):
    """The timeline of one call (its ``stream``) under its options, ``overrides`` of the runtime
    options and ``machine`` (a model or its name; default: the machine it ran on)."""
    from ..runtime.machine import machine_model
    from ..runtime.scheduler import simulate as run_sim
    from ..runtime.tasks import aliased_keys

    rt = opts.runtime()
    if overrides:
        rt.update(_options.validate_group("runtime", overrides, param="runtime_options"))
    return run_sim(compiled.lowered, stream, rt, machine_model(machine) if machine else ran_on,
                   aliased_keys(compiled.lowered.memory_key, same))


def _option_values(ckey_id) -> dict:
    for values, i in _OPTION_KEYS.items():
        if i == ckey_id:
            return dict(values)
    return {}


def _closure_key(fn):
    if not fn.__closure__:
        return ()
    out = []
    for cell in fn.__closure__:
        try:
            v = cell.cell_contents
        except ValueError:
            continue
        # immutable values only: a list the kernel appends to while tracing must not force a
        # recompile on every call
        if isinstance(v, _SIMPLE) or (isinstance(v, tuple) and all(isinstance(x, _SIMPLE) for x in v)):
            out.append(_freeze(v))
    return tuple(out)


_CALL_LISTENERS: list = []  # callables(kernel) notified after every successful call (the lab uses it)


def add_call_listener(fn) -> None:
    """Call ``fn(kernel)`` after every successful kernel call (until `remove_call_listener`)."""
    _CALL_LISTENERS.append(fn)


def remove_call_listener(fn) -> None:
    if fn in _CALL_LISTENERS:
        _CALL_LISTENERS.remove(fn)


_TORCH_DT: dict = {}
_torch = LazyModule("torch")
_OPTION_KEYS: dict = {}  # compile-affecting option values -> small int (cache key part)


def _bind_tensors(sig: Signature, raw: list, loc, opts=None):
    """Check each tensor argument against its spec; return tensors, dtypes, key part and sizes.
    A dense copy of a strided argument is checked against the memory budget first (``opts``)."""
    tensors, dtypes, key, env, where = [], [], [], {}, {}
    strided = None  # [(index, caller's tensor)] of arguments replaced by dense copies (strided.py)
    for n, (spec, t) in enumerate(zip(sig.tensors, raw), 1):
        original = t
        if not isinstance(t, _torch.Tensor):
            if type(t).__module__ == "numpy" and hasattr(t, "__array_interface__"):
                if not getattr(getattr(t, "flags", None), "c_contiguous", True):
                    require_fits(t.nbytes, f"a dense copy of tensor argument '{spec.param}'", opts,
                                 param=spec.param, loc=loc)
                t, copied = dense_numpy(t, spec.param, loc)
                if copied or not original.flags.writeable or not t.is_contiguous():
                    # the caller's array: written back after the run, or refused (outputs.py)
                    strided = (strided or []) + [(n - 1, original)]
                    t = t.contiguous()
            elif isinstance(t, HostTensor) and t.data is not None:  # pypto.from_torch(x): x itself
                t = t.data
            else:
                raise ArgumentTypeError(f"tensor argument '{spec.param}' ({_ordinal(n)} tensor) is not a tensor",
                                        expected="a CPU torch.Tensor (or numpy array)",
                                        got=type(t).__name__, param=spec.param, loc=loc)
        if t.layout is not _torch.strided:  # sparse (COO, CSR ...) or mkldnn: no dense memory to address
            raise ArgumentTypeError(f"tensor argument '{spec.param}' is a {str(t.layout).replace('torch.', '')} tensor",
                                    expected="a dense (strided) CPU tensor", got=f"layout {t.layout}",
                                    param=spec.param, loc=loc, hint=f"pass {spec.param}.to_dense()")
        if not t.is_cpu:
            raise ArgumentTypeError(f"tensor argument '{spec.param}' is on device {t.device}",
                                    expected="a CPU tensor (this build simulates the NPU on the CPU)",
                                    got=str(t.device), param=spec.param, loc=loc)
        dt = _TORCH_DT.get(t.dtype)
        if dt is None:
            if spec.dtype in PACKED_FP4 and t.dtype == getattr(_torch, "float4_e2m1fn_x2", None):
                t, dt = t.view(_torch.uint8), DT_UINT8  # torch's own packed fp4: the same bytes
            else:
                dt = _TORCH_DT[t.dtype] = from_torch(t.dtype, param=spec.param, loc=loc)
        if spec.dtype is not None and dt is not spec.dtype and spec.dtype in PACKED_FP4:
            # packed fp4 bytes: the kernel computes with their decoded values (pypto/frontend/fp4.py)
            t, dt = unpack_e2m1(t, spec.param, loc), spec.dtype
        if spec.dtype is not None and dt is not spec.dtype:
            raise ArgumentTypeError(f"tensor argument '{spec.param}' has the wrong dtype (it does not match the "
                                    f"dtype of its annotation)",
                                    expected=f"{spec.dtype.name} ({spec.describe()})",
                                    got=f"{dt.name} ({t.dtype})", param=spec.param, loc=loc)
        if not t.is_contiguous():  # a view: the call runs on a dense copy (strided.py)
            require_fits(t.numel() * t.element_size(), f"a dense copy of tensor argument '{spec.param}'", opts,
                         param=spec.param, loc=loc)
            strided = (strided or []) + [(n - 1, t)]
            t = t.contiguous()
        if t.__class__ is not _torch.Tensor and is_nz(t):  # NZ storage: its aligned shape (nz_format.py)
            aligned = nz_aligned_shape(tuple(t.shape), t.element_size())
            if aligned != tuple(t.shape):  # checked against the memory budget before it is allocated
                require_fits(math.prod(aligned) * t.element_size(),
                             f"the NZ-aligned copy of tensor argument '{spec.param}'", opts, param=spec.param, loc=loc)
                t = nz_padded(t, aligned)
                # written back into the caller's tensor (replacing a strided entry's dense copy)
                strided = [(i, o) for i, o in (strided or []) if i != n - 1] + [(n - 1, original)]
        shape = tuple(t.shape)
        if spec.dims is None:
            kd = shape
        else:
            nd = len(spec.dims)
            if len(shape) < nd or (len(shape) != nd and not spec.rest_static):
                raise ArgumentValueError(
                    f"tensor argument '{spec.param}' has rank {len(shape)}",
                    expected=f"rank {nd}{' or more' if spec.rest_static else ''}: {spec.describe()}",
                    got=f"shape {list(shape)}", param=spec.param, loc=loc)
            kd = list(shape)
            for i, ds in enumerate(spec.dims):
                size = shape[i]
                if ds.kind == "fixed":
                    if size != ds.size:
                        raise ArgumentValueError(
                            f"tensor argument '{spec.param}' does not match the shape of its annotation: size "
                            f"{size} in dim {i}, which is fixed",
                            expected=f"{spec.param}.shape[{i}] == {ds.size} ({spec.describe()})",
                            got=f"shape {list(shape)}", param=spec.param, loc=loc)
                elif ds.kind == "dynamic":
                    prev = env.get(ds.symbol)
                    if prev is not None and prev != size:
                        raise ArgumentValueError(
                            f"dynamic dim '{ds.symbol}' has different sizes in one call",
                            expected=f"{where[ds.symbol]} == {spec.param}.shape[{i}]",
                            got=f"{prev} and {size}", param=spec.param, loc=loc)
                    env[ds.symbol] = size
                    where.setdefault(ds.symbol, f"{spec.param}.shape[{i}]")
                    kd[i] = -1
            kd = tuple(kd)
        tensors.append(t)
        dtypes.append(dt)
        key.append((dt, len(shape), kd))
    return tensors, dtypes, tuple(key), env, strided


def _layout(sig, tensors, dtypes) -> tuple:
    """(dynamic symbols in the order a call's sizes come, ((param, dtype, dims), ...)): what
    names the sizes counted in ``CacheEntry.served``."""
    symbols, params = [], []
    for spec, t, dt in zip(sig.tensors, tensors, dtypes):
        dims = []
        for i, size in enumerate(t.shape):
            ds = spec.dims[i] if spec.dims is not None and i < len(spec.dims) else None
            if ds is not None and ds.kind == "dynamic":
                if ds.symbol not in symbols:
                    symbols.append(ds.symbol)
                dims.append(ds.symbol)
            else:
                dims.append(size)
        params.append((spec.param, dt.short, tuple(dims)))
    return tuple(symbols), tuple(params)


def _key_text(sig, tensors, dtypes, consts, opts) -> str:
    parts = []
    for spec, t, dt in zip(sig.tensors, tensors, dtypes):
        dims = []
        for i, size in enumerate(t.shape):
            ds = spec.dims[i] if spec.dims is not None and i < len(spec.dims) else None
            dims.append(ds.symbol if ds is not None and ds.kind == "dynamic" else str(size))
        parts.append(f"{spec.param}: {dt.short}[{', '.join(dims)}]")
    parts += [f"{k}={v!r}" for k, v in consts.items()]
    changed = {k: v for k, v in opts.non_default().items()
               if _options.OPTIONS[tuple(k.split(".", 1))].affects_compile}
    parts += [f"{k}={v!r}" for k, v in changed.items()]
    return ", ".join(parts)


def _options_error(key, loc):
    import difflib

    close = difflib.get_close_matches(key, _GROUPS + _ACCEPTED_COMPAT, n=1)
    return _options.OptionError(f"pypto.jit got an unknown keyword argument '{key}'",
                                expected="one of " + ", ".join(_GROUPS), got=key, param=key,
                                hint=f"did you mean '{close[0]}'?" if close else None, loc=loc)


def jit(dyn_func=None, *, codegen_options=None, host_options=None, pass_options=None, runtime_options=None,
        verify_options=None, debug_options=None, cache_maxsize=DEFAULT_MAXSIZE,
        workspace_bytes=DEFAULT_WORKSPACE_BYTES, **kwargs):
    """Compile a PyPTO kernel on first call and cache it per static signature.

    Spellings: ``@pypto.jit``, ``@pypto.jit(runtime_options={...})`` and ``pypto.jit(fn, ...)``.
    The six option groups are dicts validated against pypto's option table. As upstream, the
    ``runtime_options`` dict is read again at every call (a change made to it after decorating
    applies to the next call, and is validated then); the other groups are copied here. Global
    settings (``pypto.set_*_options``) are read at every call.

    ``cache_maxsize`` bounds the compiled versions the kernel keeps (default `DEFAULT_MAXSIZE`,
    ``None`` = unbounded): beyond it the least recently used version is dropped (a later call
    with its signature compiles again) and ``cache_info().evictions`` counts it.
    ``workspace_bytes`` bounds what cached calls keep for the next call (GM workspaces and leaf
    temporaries, reused instead of allocated again; default 256 MiB per kernel, see
    `JitFunction.workspace_bytes`).
    """
    groups = dict(codegen_options=codegen_options, host_options=host_options, pass_options=pass_options,
                  runtime_options=runtime_options, verify_options=verify_options, debug_options=debug_options)
    groups.update(kwargs)

    # the decorating scope's locals resolve string annotations of kernels made in factories
    scope_locals = dict(sys._getframe(1).f_locals)

    def wrap(fn):
        return JitFunction(fn, _scope_locals=scope_locals, cache_maxsize=cache_maxsize,
                           workspace_bytes=workspace_bytes, **groups)

    if dyn_func is None:
        if kwargs:  # validate unknown keywords at decoration time, not at first call
            for k in kwargs:
                if k not in _ACCEPTED_COMPAT:
                    raise _options_error(k, user_loc(2))
        return wrap
    return wrap(dyn_func)


