"""The ``%%pypto`` cell magic: run a cell under runtime-option overrides, then show a dashboard
for every kernel it called.

The cell runs through ``shell.run_cell``, so it executes in the user's namespace with IPython's
own cell file names: tracebacks, ``linecache`` and kernel source lookup work as in a plain cell.
A pypto error raised in the cell is shown as its message alone (which already names the kernel
file and line) instead of a traceback through pypto's internals.
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


@contextlib.contextmanager
def _clean_pypto_errors(shell):
    """While the cell runs, show a PyptoError as its message only (any handler the user set for
    other exceptions keeps working)."""
    from pypto.errors import PyptoError

    saved_types, saved_handler = shell.custom_exceptions, shell.CustomTB

    def handler(sh, etype, value, tb, tb_offset=None):
        if not isinstance(value, PyptoError) and saved_types:
            return saved_handler(etype, value, tb, tb_offset=tb_offset)
        # IPython renders an exception through its _render_traceback_ when it has one
        value._render_traceback_ = lambda: sh.InteractiveTB.get_exception_only(etype, value)
        sh.showtraceback((etype, value, tb))
        return None

    shell.set_custom_exc(tuple(saved_types) + (PyptoError,), handler)
    try:
        yield
    finally:
        shell.custom_exceptions, shell.CustomTB = saved_types, saved_handler


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
                    [--valid-shape-opt 0|1] [--aicpu 1-7] [--show graph,passes,code,cache,timeline,tune]

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
        try:
            with scope, _clean_pypto_errors(self.shell):
                # the comment stands in for the magic's own line, so that line numbers in errors
                # and tracebacks are those of the notebook cell
                self.shell.run_cell(f"# %%pypto {line}\n{cell}", store_history=False)
        finally:
            remove_call_listener(called)
        self.last_kernels = kernels
        self.last_dashboards = self._show(kernels, tabs)

    def _show(self, kernels, tabs) -> list:
        from IPython.display import display

        from . import dashboard

        boards = []
        for kernel in kernels:
            board = dashboard(kernel, tabs=tabs)
            display(board)
            boards.append(board)
        return boards
