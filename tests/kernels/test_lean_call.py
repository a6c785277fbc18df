"""The lean cached call (issue 18, item 3): a call of the version and sizes of an earlier one binds
with the generated binder, replays the plan's steps as one generated function on views of the
caller's tensors kept between calls, and leaves its run record to be made when read. These tests
change what the kept views could go stale on (new tensors at the same sizes, the same tensor
object over other memory, memory shared with an output) and check the numbers, the record and
the refusals each time."""

from __future__ import annotations

import threading

import pytest
import torch

import pypto

try:
    from tests.golden.helper import assert_matches, check_kernel, rand
except ImportError:
    from helper import assert_matches, check_kernel, rand

try:  # the row kernel the workspace-reuse tests use: (x + y) * y over 16-row blocks
    from tests.kernels.test_workspace_reuse import _add_mul
except ImportError:
    from test_workspace_reuse import _add_mul


def _warm(kernel, rows=40):
    x, y, out = rand((rows, 64), seed=1), rand((rows, 64), seed=2), torch.zeros(rows, 64)
    for _ in range(3):  # the compiling call generates its plan's replay; the next calls use it
        check_kernel(kernel, (x, y, out), (x + y) * y, out=2)
    return x, y, out


def test_new_tensors_at_the_same_sizes_are_computed_not_the_kept_views():
    k = _add_mul()
    _warm(k)
    for seed in range(3, 7):
        x, y, out = rand((40, 64), seed=seed), rand((40, 64), seed=seed + 10), torch.zeros(40, 64)
        check_kernel(k, (x, y, out), (x + y) * y, out=2)
    assert k.cache_info().misses == 1


def test_the_same_tensors_changed_in_place_between_calls():
    k = _add_mul()
    x, y, out = _warm(k)
    x.mul_(-3.0)
    y.add_(0.5)
    check_kernel(k, (x, y, out), (x + y) * y, out=2)


def test_an_output_moved_to_other_memory_is_written_there():
    k = _add_mul()
    x, y, out = _warm(k)
    old = out.clone()
    out.set_(torch.full((40, 64), 7.0).untyped_storage(), 0, (40, 64), (64, 1))  # same object, new memory
    check_kernel(k, (x, y, out), (x + y) * y, out=2)
    out.resize_(80, 64)  # grows its storage: a new data pointer, then back to the annotated size
    out.resize_(40, 64)
    out.zero_()
    check_kernel(k, (x, y, out), (x + y) * y, out=2)
    assert old.shape == out.shape


def test_an_output_that_is_an_input_after_lean_calls():
    k = _add_mul()
    x, y, _ = _warm(k)
    want = (x + y) * y
    k(x, y, x)  # out is x: the inputs are read as they were before any write
    assert_matches(x, want)
    a = rand((40, 64), seed=9)
    b = a.clone()
    k(a, a, a)  # one tensor for all three
    assert_matches(a, (b + b) * b)
    x2, y2, out2 = rand((40, 64), seed=11), rand((40, 64), seed=12), torch.zeros(40, 64)
    check_kernel(k, (x2, y2, out2), (x2 + y2) * y2, out=2)  # and the lean path again


def test_views_of_a_larger_tensor_at_an_offset():
    k = _add_mul()
    _warm(k)
    base = rand((120, 64), seed=5)
    x, y = base[0:40], base[40:80]  # contiguous views of one storage, read only
    out = torch.zeros(100, 64)[20:60]
    for _ in range(3):
        check_kernel(k, (x, y, out), (x + y) * y, out=2)


def test_last_run_of_a_lean_call_is_made_once_when_read():
    k = _add_mul()
    x, y, out = _warm(k)
    k(x, y, out)
    run = k.last_run
    assert run is k.last_run and run.cache_hit and run.compile_seconds == 0.0 and run.error is None
    assert run.timeline is not None and run.timeline.stats["tasks"] > 0
    assert k.last_run is run  # reading the timeline made nothing new
    log = k.cache_info().calls
    assert log[-1].hit and log[-1].reason is None and log[-1].key == run.key
    assert k.cache_info().hits >= 3
    memory = run.compiled.executor.last_memory
    assert memory is not None and memory.tensors[2] is out


def test_a_refused_call_after_lean_calls_keeps_the_record_and_the_outputs():
    k = _add_mul()
    x, y, out = _warm(k)
    run = k.last_run
    before = out.clone()
    with pytest.raises(pypto.PyptoError):
        k(x, y.double(), out)
    assert k.last_run is run and k.refused_call is not None
    assert torch.equal(out, before)
    x2 = rand((40, 64), seed=21)
    check_kernel(k, (x2, y, out), (x2 + y) * y, out=2)
    assert k.refused_call is None


def test_a_new_size_after_lean_calls_plans_and_then_replays():
    k = _add_mul()
    _warm(k)
    for rows in (24, 40, 24, 57, 57, 57):
        x, y, out = rand((rows, 64), seed=rows), rand((rows, 64), seed=rows + 1), torch.zeros(rows, 64)
        check_kernel(k, (x, y, out), (x + y) * y, out=2)
    assert k.cache_info().misses == 1


def test_threads_calling_one_kernel_with_their_own_tensors():
    k = _add_mul()
    _warm(k)
    errors = []

    def work(seed):
        try:
            for i in range(20):
                x, y = rand((40, 64), seed=seed * 100 + i), rand((40, 64), seed=seed * 100 + i + 50)
                out = torch.zeros(40, 64)
                k(x, y, out)
                assert_matches(out, (x + y) * y)
        except Exception as e:  # noqa: BLE001 - reported below
            errors.append(e)

    threads = [threading.Thread(target=work, args=(s,)) for s in range(3)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert not errors, errors[0]


def _plan_of(kernel, rows):
    executor = kernel.last_run.compiled.executor
    return next(p for key, p in executor._plans.items() if rows in key)


def test_the_compiling_call_makes_its_replay_and_a_new_size_makes_its_own_at_its_second_call():
    # upstream's st test_kernel_reuse: the call after the compiling one is the cached call (no
    # one-time work left); a size seen once pays no replay it may never use
    k = _add_mul()
    x, y, out = rand((40, 64), seed=1), rand((40, 64), seed=2), torch.zeros(40, 64)
    check_kernel(k, (x, y, out), (x + y) * y, out=2)
    assert _plan_of(k, 40).replay is not None
    x2, y2, out2 = rand((56, 64), seed=3), rand((56, 64), seed=4), torch.zeros(56, 64)
    check_kernel(k, (x2, y2, out2), (x2 + y2) * y2, out=2)
    assert _plan_of(k, 56).replay is None
    out2.zero_()
    check_kernel(k, (x2, y2, out2), (x2 + y2) * y2, out=2)
    assert _plan_of(k, 56).replay is not None
    out.zero_()
    check_kernel(k, (x, y, out), (x + y) * y, out=2)  # the replay made by the compiling call
    assert k.cache_info().misses == 1
