"""The ``%%pypto`` cell magic: run a cell under runtime-option overrides, then show a dashboard
for every kernel it called.

The cell runs through ``shell.run_cell``, so it executes in the user's namespace with IPython's
own cell file names: tracebacks, ``linecache`` and kernel source lookup work as in a plain cell.
A pypto error raised in the cell is shown as its message alone (which already names the kernel
file and line) instead of a traceback through pypto's internals. An error fails the notebook cell
itself (the magic re-raises it), so "Run All", nbclient and papermill stop at it.
"""

from __future__ import annotations

import argparse
import contextlib
import shlex

from IPython.core.error import UsageError
from IPython.core.magic import Magics, cell_magic, magics_class

from . import TABS, parse_tabs

USAGE = ("%%pypto [--run-mode SIM|NPU] [--sched-mode 0-3] [--stitch 1-1024] [--valid-shape-opt 0|1] "
         "[--aicpu 1-7] [--show " + ",".join(TABS) + "]")


def _int_in(lo: int, hi: int):
    def parse(text: str) -> int:
        try:
            value = int(text)
        except ValueError:
            value = None
        if value is None or not lo <= value <= hi:
            raise argparse.ArgumentTypeError(f"expected an integer in {lo}..{hi}, got {text!r}")
        return value

    return parse


def _run_mode(text: str) -> int:
    from pypto.options import RunMode

    modes = {"SIM": RunMode.SIM, "NPU": RunMode.NPU, "1": RunMode.SIM, "0": RunMode.NPU}
    mode = modes.get(text.strip().upper())
    if mode is None:
        raise argparse.ArgumentTypeError(f"expected SIM, NPU, 1 or 0, got {text!r}")
    return mode


def _tabs(text: str) -> tuple:
    try:
        return parse_tabs(text)
    except ValueError as e:
        raise argparse.ArgumentTypeError(str(e)) from None


class _Parser(argparse.ArgumentParser):
    def error(self, message):  # argparse would print and exit; IPython shows UsageError as one line
        raise UsageError(f"{message}. usage: {USAGE}")


# flag -> (runtime option, parser)
_FLAGS = {
    "--run-mode": ("run_mode", _run_mode),
    "--sched-mode": ("device_sched_mode", _int_in(0, 3)),
    "--stitch": ("stitch_function_max_num", _int_in(1, 1024)),
    "--valid-shape-opt": ("valid_shape_optimize", _int_in(0, 1)),
    "--aicpu": ("launch_sched_aicpu_num", _int_in(1, 7)),
}


def _parser() -> _Parser:
    p = _Parser(prog="%%pypto", add_help=False, allow_abbrev=False)
    for flag, (option, kind) in _FLAGS.items():
        p.add_argument(flag, dest=option, type=kind, default=None, metavar=option)
    p.add_argument("--show", dest="show", type=_tabs, default=TABS)
    return p


def parse_line(line: str) -> tuple[dict, tuple]:
    """The magic's flags as (runtime option overrides, tabs to show); UsageError when bad."""
    try:
        words = shlex.split(line)
    except ValueError as e:
        raise UsageError(f"{e}. usage: {USAGE}") from None
    args = vars(_parser().parse_args(words))
    tabs = args.pop("show")
    return {k: v for k, v in args.items() if v is not None}, tabs


class CellFailed(Exception):
    """The code of a ``%%pypto`` cell could not run (a syntax error): raised by the magic so that
    the cell fails and "Run All" or nbclient stop there. Shows as the error it stands for."""

    def __init__(self, message: str, rendered: list | None = None):
        super().__init__(message)
        self.rendered = rendered

    def _render_traceback_(self) -> list:
        return self.rendered or [f"{type(self).__name__}: {self}"]


class _CellErrors:
    """While the cell runs: catch the exception that ends it, render it the way IPython would
    (a PyptoError as its message only) without showing it yet, so the magic can re-raise it and
    the notebook cell itself fails, showing the error once. A handler the user set for some
    exceptions keeps handling those."""

    def __init__(self, shell):
        self.shell, self.error = shell, None

    def __enter__(self):
        from pypto.errors import PyptoError

        sh = self.shell
        self.saved = saved_types, saved_handler = sh.custom_exceptions, sh.CustomTB

        def handler(_sh, etype, value, tb, tb_offset=None):
            if saved_types and isinstance(value, saved_types) and not isinstance(value, PyptoError):
                return saved_handler(etype, value, tb, tb_offset=tb_offset)  # the user's own handler
            if isinstance(value, PyptoError):  # the message already names the kernel line
                stb = sh.InteractiveTB.get_exception_only(etype, value)
            elif isinstance(value, SyntaxError):  # the cell did not compile: no frames to show
                stb = sh.SyntaxTB.structured_traceback(etype, value, [])
            elif hasattr(value, "_render_traceback_"):
                stb = value._render_traceback_()
            else:  # IPython's own traceback of the cell (Cell In[N], line M), rendered now
                stb = sh.InteractiveTB.structured_traceback(etype, value, tb, tb_offset=tb_offset)
            value._render_traceback_ = lambda: stb
            self.error = value
            return None  # shown once, when the magic re-raises it

        sh.set_custom_exc((Exception,), handler)
        return self

    def __exit__(self, *exc):
        self.shell.custom_exceptions, self.shell.CustomTB = self.saved
        return False

    def raise_for(self, result) -> None:
        """Re-raise what ended the cell (or say that it failed before it ran)."""
        if self.error is not None:
            error, self.error = self.error, None
            if isinstance(error, SyntaxError):  # IPython would show a SyntaxError with our frames
                raise CellFailed(f"{type(error).__name__}: {error}", error._render_traceback_()) from None
            raise error.with_traceback(None)
        if result is not None and not result.success:
            cause = result.error_before_exec or result.error_in_exec
            raise CellFailed(f"the %%pypto cell failed with {type(cause).__name__} (shown above)")


@contextlib.contextmanager
def _numbered_as_this_cell(shell):
    """Name the code run inside the magic after the notebook cell (``Cell In[N]`` in tracebacks
    and pypto's errors): IPython 9 counts the cell up before running it, so the inner run would
    otherwise be numbered as the next cell."""
    running = getattr(getattr(shell, "displayhook", None), "exec_result", None)
    number = getattr(running, "execution_count", None)
    saved = shell.execution_count
    if number is not None:
        shell.execution_count = number
    try:
        yield
    finally:
        shell.execution_count = saved


@magics_class
class PyptoMagics(Magics):
    """Holds ``%%pypto``; ``last_kernels`` / ``last_dashboards`` are those of the latest cell."""

    def __init__(self, shell=None, **kwargs):
        super().__init__(shell, **kwargs)
        self.last_kernels: list = []
        self.last_dashboards: list = []

    @cell_magic
    def pypto(self, line: str, cell: str):
        """Run the cell with runtime-option overrides for every jit kernel it calls, then show a
        dashboard per kernel called (in call order)::

            %%pypto [--run-mode SIM|NPU] [--sched-mode 0-3] [--stitch 1-1024]
                    [--valid-shape-opt 0|1] [--aicpu 1-7]
                    [--show graph,passes,code,cache,timeline,tune,sweep]

        ``--show`` takes a comma separated subset of the tabs (default: all).
        """
        import pypto
        from pypto.frontend.jit import add_call_listener, remove_call_listener

        runtime, tabs = parse_line(line)
        kernels: list = []

        def called(kernel):
            if not any(k is kernel for k in kernels):
                kernels.append(kernel)

        # the flags apply to every kernel the cell calls, even one with its own runtime_options
        from pypto.options import forced

        scope = forced(runtime_options=runtime) if runtime else contextlib.nullcontext()
        add_call_listener(called)
        errors = _CellErrors(self.shell)
        try:
            with scope, errors:
                # the comment stands in for the magic's own line, so that line numbers in errors
                # and tracebacks are those of the notebook cell
                with _numbered_as_this_cell(self.shell):
                    result = self.shell.run_cell(f"# %%pypto {line}\n{cell}", store_history=False)
        finally:
            remove_call_listener(called)
        self.last_kernels = kernels
        # the kernels called before an error still get their dashboards
        self.last_dashboards = self._show(kernels, tabs)
        errors.raise_for(result)

    def _show(self, kernels, tabs) -> list:
        from IPython.display import display

        from . import dashboard

        boards = []
        for kernel in kernels:
            board = dashboard(kernel, tabs=tabs)
            display(board)
            boards.append(board)
        return boards
