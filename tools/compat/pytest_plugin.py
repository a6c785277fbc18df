"""Per-test outcomes of an upstream test file under pytest (child side).

pytest runs in the child process (after emulation is installed) on one upstream file, from
upstream's root, so upstream's own ``pytest.ini`` and ``conftest.py`` files apply as in their
CI. This plugin records each test's outcome (``passed``, ``failed``, ``error`` for a
setup/teardown failure, ``skipped``), the numeric checks it made and, for failures, the
exception itself (not pytest's rendering of it). A collection error is the file's error.
"""

from __future__ import annotations

import os

import pytest

from .asserts import is_numeric_assert_source
from . import descendants
from .checks import count_assert, tally
from .failures import Failure, clean_paths, first_line, from_exception
from .recorder import Recorder


def emulated_soc_tag() -> str:
    """The tag upstream's conftest matches against ``@pytest.mark.soc(...)``: "950" for SoC 260,
    else "910" (its rule), from the SoC the emulated NPU reports (``PYPTO_MACHINE``)."""
    from pypto.runtime.machine import current_machine, soc_of

    return "950" if soc_of(current_machine())[0] == 260 else "910"


class CompatPlugin:
    def __init__(self, recorder: Recorder, upstream_root: str, pypto_root: str):
        self.recorder = recorder
        self.roots = (upstream_root, pypto_root)
        self.outcome: str = "passed"
        self.failure: Failure | None = None

    def _exception_failure(self, excinfo) -> Failure:
        exc = excinfo.value
        if isinstance(exc, pytest.Collector.CollectError) and exc.__cause__ is not None:
            exc = exc.__cause__  # pytest re-raises import errors as CollectError(text) from the original
        return from_exception(exc, *self.roots)

    def _text(self, longrepr) -> str:
        root, pypto_root = (os.path.join(os.path.abspath(r), "") for r in self.roots)
        return clean_paths(first_line(str(longrepr)), root, pypto_root)

    @pytest.hookimpl(hookwrapper=True)
    def pytest_runtest_protocol(self, item, nextitem):
        tally.start_case()
        self.outcome, self.failure = "passed", None
        yield
        descendants.collect()
        self.recorder.add_case(item.nodeid, self.outcome, tally.case_calls, tally.case_failures, self.failure)

    @pytest.hookimpl(hookwrapper=True)
    def pytest_runtest_makereport(self, item, call):
        report = (yield).get_result()
        if report.skipped and self.outcome == "passed":
            self.outcome = "skipped"
        elif report.failed and self.outcome in ("passed", "skipped"):
            self.outcome = "failed" if call.when == "call" else "error"
            if call.excinfo is not None:
                self.failure = self._exception_failure(call.excinfo)
            else:  # e.g. a strict xfail that passed
                self.failure = Failure("Failed", self._text(report.longrepr), origin="upstream")

    @pytest.hookimpl(tryfirst=True)
    def pytest_collection_modifyitems(self, config, items):
        """Before upstream's conftest drops the tests of other SoCs (its filter keeps tests marked
        for the emulated card's tag, "910" or, on the A5, "950", and on a 910 unmarked ones):
        record the others, which do not run in this pass."""
        tag = emulated_soc_tag()
        for item in items:
            marker = item.get_closest_marker("soc")
            if marker is None or not marker.args:
                continue
            socs = marker.args[0] if isinstance(marker.args[0], (list, tuple)) else marker.args
            socs = [str(s).strip() for s in socs]
            if tag not in socs:
                function = getattr(item, "function", None)
                self.recorder.add_soc_only(item.nodeid, socs, getattr(function, "__name__", item.name))

    def pytest_assertion_pass(self, item, lineno, orig, expl):
        """A passing ``assert`` of a test module (pytest rewrites them; this hook needs
        ``enable_assertion_pass_hook``): a numeric one counts as a check. A failing one fails
        the test itself."""
        if is_numeric_assert_source(orig):
            root = os.path.join(os.path.abspath(self.roots[0]), "")
            path = str(getattr(item, "path", item.fspath))
            count_assert(True, f"{os.path.relpath(path, root) if path.startswith(root) else path}:{lineno}")

    @pytest.hookimpl(hookwrapper=True)
    def pytest_make_collect_report(self, collector):
        report = (yield).get_result()
        if not report.failed:
            return
        call = getattr(report, "call", None)  # pytest drops it once this hook returns
        if call is not None and call.excinfo is not None:
            self.recorder.set_error(self._exception_failure(call.excinfo))
        else:
            self.recorder.set_error(Failure("CollectError", self._text(report.longrepr)))


    @pytest.hookimpl(wrapper=True)
    def pytest_load_initial_conftests(self, early_config, parser, args):
        try:
            return (yield)
        except Exception as e:  # pytest reports a conftest that fails to import as a usage error
            cause = getattr(e, "cause", None) or e
            self.recorder.set_error(from_exception(cause, *self.roots))
            raise

    def pytest_internalerror(self, excrepr, excinfo):
        self.recorder.set_error(self._exception_failure(excinfo))


def run_pytest(path: str, recorder: Recorder, upstream_root: str, pypto_root: str) -> int:
    """Run pytest on one file; returns pytest's exit code."""
    plugin = CompatPlugin(recorder, upstream_root, pypto_root)
    # xdist by name: plugin autoloading is off in the child, and upstream's conftest implements
    # an xdist hook (pytest_configure_node) that pytest refuses without it
    args = [path, "--rootdir", upstream_root, "-q", "-p", "no:cacheprovider", "-p", "xdist.plugin",
            "--no-header", "-rN", "--tb=short", "-o", "enable_assertion_pass_hook=true"]
    code = int(pytest.main(args, plugins=[plugin]))
    if code in (pytest.ExitCode.INTERNAL_ERROR, pytest.ExitCode.USAGE_ERROR):
        recorder.set_error(Failure("PytestError", f"pytest exited with {pytest.ExitCode(code).name}",
                                   origin="harness"))
    return code
