"""A call interrupted mid-run (SIGINT, KeyboardInterrupt) is no cache hit, shows in ``last_run``, and
leaves the kernel usable (issue 11, item 12)."""

from __future__ import annotations

import signal
import threading
import time

import pytest
import torch

import pypto

# a Ctrl-C may land inside a gc or weakref callback, where Python reports it as unraisable and
# drops it: expected here (the test presses again), so not a warning of the suite
pytestmark = pytest.mark.filterwarnings("ignore::pytest.PytestUnraisableExceptionWarning")


class _CtrlC:
    """SIGINT to this (the main) thread after ``seconds``, then again every ``seconds`` until the
    interrupt was seen, as a user presses Ctrl-C again when the first press seems lost (a signal that
    lands inside a gc callback, e.g. hypothesis's, is reported as unraisable and dropped)."""

    def __init__(self, seconds: float):
        assert threading.current_thread() is threading.main_thread()  # pytest (and xdist) run tests there
        # whatever handles SIGINT now (Python's default, or SIG_IGN inherited from a shell that
        # runs the suite in the background) is replaced for the test and restored after it
        self.seen = threading.Event()
        self.raised = float("-inf")
        self.previous = signal.signal(signal.SIGINT, self._handler)
        self.main = threading.main_thread().ident
        self.thread = threading.Thread(target=self._press, args=(seconds,), daemon=True)
        self.thread.start()

    def _handler(self, signum, frame):
        # a press within a second of the last raise is ignored: that KeyboardInterrupt may still be
        # on its way to the test's `pytest.raises` (slow on a loaded machine), and a second one
        # raised there would escape the test and stop the worker
        now = time.monotonic()
        if not self.seen.is_set() and now - self.raised >= 1.0:
            self.raised = now
            raise KeyboardInterrupt

    def _press(self, seconds):
        while not self.seen.wait(seconds):
            signal.pthread_kill(self.main, signal.SIGINT)

    def cancel(self):
        self.seen.set()
        self.thread.join()
        signal.signal(signal.SIGINT, self.previous)


def _rows_kernel():
    @pypto.jit
    def rows(x: pypto.Tensor([pypto.DYNAMIC, 8], pypto.DT_FP32), out: pypto.Tensor([pypto.DYNAMIC, 8], pypto.DT_FP32)):
        pypto.set_vec_tile_shapes(1, 8)
        for b in pypto.loop(x.shape[0]):  # one root instance per row: a long walk for many rows
            out[b:b + 1, :] = x[b:b + 1, :] * 3.0

    return rows


def _run_until_interrupted(call, seconds=0.2, limit=60.0):
    ctrl_c = _CtrlC(seconds)
    try:
        with pytest.raises(KeyboardInterrupt):
            deadline = time.monotonic() + limit
            while time.monotonic() < deadline:  # each call is long; the signal lands inside one
                call()
        ctrl_c.seen.set()
    finally:
        ctrl_c.cancel()


def test_sigint_during_a_long_run_leaves_the_kernel_usable():
    rows = _rows_kernel()
    x, out = torch.randn(3, 8), torch.empty(3, 8)
    rows(x, out)
    big = torch.randn(30000, 8)
    for _attempt in range(5):  # the signal can land between two calls (rarely, on a loaded machine): again
        before = rows.cache_info()
        finished = []

        def call():
            rows(big, torch.empty(30000, 8))
            finished.append(rows.last_run)

        _run_until_interrupted(call)
        if rows.last_run.error is not None:
            break
    info = rows.cache_info()
    # every finished call is a hit; the interrupted one is not
    assert (info.hits, info.misses) == (before.hits + len(finished), before.misses)
    assert len(info.calls) == len(before.calls) + len(finished)
    run = rows.last_run
    assert all(run is not r for r in finished)
    assert run.error.startswith("KeyboardInterrupt") and run.cache_hit
    assert run.timeline is None
    for n in (3, 700):  # usable: the same version, right numbers, counted
        x, out = torch.randn(n, 8), torch.full((n, 8), float("nan"))
        rows(x, out)
        assert torch.equal(out, x * 3.0) and rows.last_run.cache_hit and rows.last_run.error is None
    assert rows.cache_info().hits == info.hits + 2 and rows.cache_info().versions == 1


SLOW_COMPILE = {"seconds": 0.0}


def test_sigint_during_a_compile_leaves_the_kernel_usable():
    @pypto.jit
    def scaled(x: pypto.Tensor([pypto.STATIC, 8], pypto.DT_FP32), out: pypto.Tensor([pypto.STATIC, 8], pypto.DT_FP32)):
        deadline = time.monotonic() + SLOW_COMPILE["seconds"]
        while time.monotonic() < deadline:  # a long trace (Python runs the body at compile time)
            time.sleep(0.01)
        out[:] = x * 2.0

    x, out = torch.randn(4, 8), torch.empty(4, 8)
    SLOW_COMPILE["seconds"] = 30.0
    try:
        _run_until_interrupted(lambda: scaled(x, out), limit=40.0)
    finally:
        SLOW_COMPILE["seconds"] = 0.0
    assert scaled.cache_info().versions == 0 and scaled.last_run is None
    scaled(x, out)  # compiles again (nothing was left pending) and runs
    assert torch.equal(out, x * 2.0) and scaled.cache_info().misses == 1
