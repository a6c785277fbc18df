"""``pypto.function``: the older, explicit way of writing a kernel.

::

    a = pypto.tensor((64, 64), pypto.DT_FP32, "a")      # declared outside any kernel
    b = pypto.tensor((64, 64), pypto.DT_FP32, "b")
    with pypto.function("MAIN", a, b):
        pypto.set_vec_tile_shapes(32, 32)
        for i in pypto.loop(2):
            b[i * 32:(i + 1) * 32, :] = a[i * 32:(i + 1) * 32, :] + 1
    pypto.runtime._device_run_once_data_from_host(pypto.from_torch(x), pypto.from_torch(y))

The ``with`` body is traced once, with the declared tensors standing for the function's
arguments in the order given; when the block ends the function is compiled, and it becomes the
function that ``pypto.runtime._device_run_once_data_from_host`` runs. A runtime condition
outside any ``pypto.loop`` needs every path traced: write the body as ``for _ in f:`` over the
object the ``with`` gives (``with pypto.function(...) as f``), which replays it once per path.

An exception inside the body aborts the recording: errors of pypto pass through, any other
exception is wrapped in :class:`pypto.error.FeError` (as upstream).
"""

from __future__ import annotations

import time

from .. import options as _options
from ..errors import ArgumentTypeError, FeError, KernelSyntaxError, PyptoError, user_loc
from ..ir import expr as E
from ..ir.graph import Program, TensorParam
from ..ir.guards import dedup
from .builder import PathExplorer, Tracer, current
from .compile import compile_program
from .control import global_tiles
from .host_tensor import HostTensor


class Controller:
    """Recording state of ``pypto.function`` (upstream ``pypto._controller.Controller``):
    ``in_function`` is True while a function body is being recorded."""

    in_function = False


class FunctionRecording:
    """What ``with pypto.function(name, *tensors) as f`` gives: iterate it (``for _ in f:``) to
    trace the body once per control-flow path; without iterating, the body is one path."""

    def __init__(self, name: str, tensors: list, loc):
        self.name = name
        self.tensors = tensors
        self.loc = loc
        self.tracer = Tracer(name)
        self.params: list = []
        self._inline = PathExplorer(loc)
        self._region = None  # set by __iter__ when the body was replayed per path

    # ---- recording -------------------------------------------------------------------------------
    def begin(self) -> None:
        if current() is not None:
            raise KernelSyntaxError(f"pypto.function '{self.name}' is recorded inside another kernel or function",
                                    expected="pypto.function at the top level of the host program",
                                    got=f"inside '{current().kernel_name}'", loc=self.loc)
        self.tracer.vec_tile, self.tracer.cube_tile = global_tiles()
        self.tracer.__enter__()
        try:
            for i, t in enumerate(self.tensors):
                dims = t.declared_dims()
                if dims is None:
                    raise ArgumentTypeError(f"argument {i} of pypto.function '{self.name}' has no shape",
                                            expected="a tensor declared with a shape: pypto.tensor(shape, dtype, name)",
                                            got=repr(t), param=t.name or f"args[{i}]", loc=self.loc)
                value = self.tracer.new_value(t.dtype, dims, kind="param", name=t.name or f"arg{i}", loc=self.loc)
                self.params.append(TensorParam(value.name, i, value))
                t._bind(value)
            self.tracer.push_block(self._inline)
        except BaseException:
            self.finish_abort()
            raise

    def __iter__(self):
        if self._region is not None:
            raise KernelSyntaxError(f"the paths of pypto.function '{self.name}' were already traced",
                                    expected="one 'for _ in f:' loop per function", loc=user_loc(2))
        inline = self.tracer.pop_block(self._inline)
        if inline.items:
            self.tracer.push_block(self._inline)
            raise KernelSyntaxError(f"pypto.function '{self.name}' recorded ops before 'for _ in f:'",
                                    expected="the whole body inside the 'for _ in f:' loop", loc=user_loc(2))
        explorer = PathExplorer(self.loc)
        more, path = True, 0
        saved = (self.tracer.vec_tile, self.tracer.cube_tile)
        while more:
            self.tracer.vec_tile, self.tracer.cube_tile = saved
            self.tracer.push_block(explorer)
            yield path
            more = explorer.finish(self.tracer.pop_block(explorer))
            path += 1
        self._region = explorer.region()
        self.tracer.push_block(self._inline)  # the (empty) rest of the with body

    def finish(self):
        """End the recording: the traced program (the caller compiles it)."""
        block = self.tracer.pop_block(self._inline)
        if self._inline.finish(block):
            cond, _, where = self._inline.paths[0][0][0]
            raise KernelSyntaxError(
                f"the body of pypto.function '{self.name}' decides a runtime condition outside pypto.loop",
                expected="every path traced: write the body inside 'for _ in f:' "
                         f"(with pypto.function('{self.name}', ...) as f)",
                got=f"condition {E.render(cond)}", loc=where or self.loc)
        region = self._region if self._region is not None else self._inline.region()
        if self._region is not None and block.items:
            raise KernelSyntaxError(f"pypto.function '{self.name}' recorded ops after its 'for _ in f:' loop",
                                    expected="the whole body inside the loop", loc=self.loc)
        symbols = []
        for t in self.tensors:
            for d in t.declared_dims():
                if isinstance(d, E.Sym) and d.name not in symbols:
                    symbols.append(d.name)
        guards = dedup(self.tracer.size_guards)
        self.finish_abort()
        return Program(self.name, tuple(self.params), (), region, tuple(symbols), self.loc, guards)

    def finish_abort(self) -> None:
        """Leave the tracer and unbind the declared tensors (always runs, error or not)."""
        for t in self.tensors:
            t._unbind()
        if self.tracer is not None:
            self.tracer.__exit__(None, None, None)
            self.tracer = None


class RecordFunc(FunctionRecording):
    """The recording of one ``pypto.function`` (upstream ``pypto_impl.RecordFunc``): made when
    the ``with`` block opens (it starts tracing), then either ``EndFunction()`` (compile the
    traced body; it becomes the function the device runs) or ``AbortRecording()`` (drop it)."""

    def __init__(self, name: str, tensors=(), loc=None):
        super().__init__(name, list(tensors), loc if loc is not None else user_loc(2))
        self._t0 = time.perf_counter()
        self.begin()

    def EndFunction(self) -> None:  # noqa: N802 - upstream's name
        """Compile the recorded body and make it the function the device runs."""
        try:
            program = self.finish()
        finally:
            self.finish_abort()
        opts = _options.effective(None)
        compiled = compile_program(program, self.name, (self.name, id(program)), _key_text(self.tensors), opts,
                                   None, time.perf_counter() - self._t0)
        from ..runtime.device import record_function

        record_function(RecordedFunction(self.name, self.tensors, compiled, opts))

    def AbortRecording(self) -> None:  # noqa: N802 - upstream's name
        """Drop the recording (after an error in the body): nothing is compiled."""
        self.finish_abort()


def _finalize_function_recording(func, first_exc):
    """End or abort the recording ``func`` and return the error to raise, if any: the body's
    error ``first_exc`` wins (the recording is aborted, a failure to abort is not reported);
    without one, a failure of ``EndFunction`` is returned."""
    if func is None:
        return first_exc
    try:
        if first_exc is None:
            func.EndFunction()
        else:
            func.AbortRecording()
    except Exception as e:  # noqa: BLE001 - returned to the caller, who raises it
        return first_exc if first_exc is not None else e
    return first_exc


class RecordedFunction:
    """A compiled ``pypto.function``: its arguments (the declared tensors, in order), the
    `CompiledKernel` (``compiled``: passes, generated code) and the `RunRecord` of its last run."""

    def __init__(self, name: str, tensors: list, compiled, opts):
        self.name = name
        self.tensors = tensors
        self.compiled = compiled
        self.options = opts
        self.last_run = None

    def __repr__(self) -> str:
        args = ", ".join(repr(t) for t in self.tensors)
        return f"<pypto.function {self.name}({args})>"


class function:  # noqa: N801 - upstream spells it pypto.function
    """``with pypto.function(name, *tensors):`` records a kernel over declared tensors (see the
    module docstring); a list of tensors counts as its elements. On a clean exit the function is
    compiled and becomes the one the device runs (``pypto.runtime._device_run_once_data_from_host``).
    ``as f`` gives the `RecordFunc`."""

    def __init__(self, name: str, *args):
        loc = user_loc(2)
        if not isinstance(name, str):
            raise ArgumentTypeError("pypto.function: 'name' must be a str", got=repr(name), param="name", loc=loc)
        tensors = []
        flat = [t for a in args for t in (a if isinstance(a, (list, tuple)) else (a,))]  # upstream allows lists
        for i, a in enumerate(flat):
            if not isinstance(a, HostTensor):
                raise ArgumentTypeError(
                    f"argument {i + 1} of pypto.function '{name}' is not a declared tensor",
                    expected="tensors made outside the function: pypto.tensor(shape, dtype, name) or pypto.from_torch",
                    got=type(a).__name__ if not hasattr(a, "_value") else f"a tensor traced inside a kernel ({a!r})",
                    param=f"args[{i}]", loc=loc)
            if any(a is t for t in tensors):
                raise ArgumentTypeError(f"tensor '{a.name}' is passed twice to pypto.function '{name}'",
                                        expected="each argument once", got=repr(a), param=f"args[{i}]", loc=loc)
            tensors.append(a)
        self._name, self._tensors, self._loc = name, tensors, loc
        self._recording = None

    def __enter__(self) -> RecordFunc:
        from .. import pypto_impl  # looked up at each call: the recording class is upstream's hook

        Controller.in_function = True
        try:
            self._recording = pypto_impl.RecordFunc(self._name, self._tensors, self._loc)
        except Exception as e:
            Controller.in_function = False
            if isinstance(e, PyptoError):
                raise
            raise FeError(e) from e
        except BaseException:
            Controller.in_function = False
            raise
        return self._recording

    def __exit__(self, kind, exc, tb):
        rec = self._recording
        try:
            if exc is not None and not isinstance(exc, Exception):  # KeyboardInterrupt ...: just drop it
                return False
            err = _finalize_function_recording(rec, exc)
        finally:
            Controller.in_function = False
            if isinstance(rec, FunctionRecording):
                rec.finish_abort()  # whatever the end or abort did, the tracer is left
        if err is None or (err is exc and isinstance(exc, PyptoError)):
            return False
        if isinstance(err, PyptoError):
            raise err
        raise FeError(err) from err


def _key_text(tensors) -> str:
    return ", ".join(f"{t.name or f'arg{i}'}: {t._describe()}" for i, t in enumerate(tensors))
