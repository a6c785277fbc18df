"""The compiled-version cache is bounded and owned by its kernel (issue 11, item 11).

A STATIC dim fed many sizes kept every version (2,000 sizes: 2,000 versions and ~0.9 GiB), and
per-call-site tables lived in a module-level cache that outlived ``cache_clear()`` and the kernel.
"""

from __future__ import annotations

import gc
import weakref

import pytest
import torch

import pypto
from pypto.frontend.version_cache import DEFAULT_MAXSIZE


def _double(**jit):
    @pypto.jit(**jit)
    def double(x: pypto.Tensor([pypto.STATIC], pypto.DT_FP32), out: pypto.Tensor([pypto.STATIC], pypto.DT_FP32)):
        out[:] = x * 2.0

    return double


def _call(kernel, n: int):
    x, out = torch.randn(n), torch.empty(n)
    kernel(x, out)
    assert torch.equal(out, x * 2.0)


def _rss() -> int:
    try:
        import psutil
    except ImportError:  # the peak instead: it only grows, so it bounds the growth too
        import resource
        return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024
    return psutil.Process().memory_info().rss


def test_default_bound_and_info_fields():
    kernel = _double()
    _call(kernel, 3)
    info = kernel.cache_info()
    assert kernel.cache_maxsize == DEFAULT_MAXSIZE == info.maxsize and DEFAULT_MAXSIZE >= 16
    assert (info.hits, info.misses, info.versions, info.currsize, info.evictions) == (0, 1, 1, 1, 0)
    assert str(info).splitlines()[0] == "CacheInfo(hits=0, misses=1, versions=1)"  # the printed contract


def test_least_recently_used_version_goes_first():
    kernel = _double(cache_maxsize=3)
    for n in (1, 2, 3):
        _call(kernel, n)
    _call(kernel, 1)  # 1 is now the most recently used: 2 goes next
    _call(kernel, 4)
    info = kernel.cache_info()
    assert [e.key for e in info.entries] == ["x: fp32[1], out: fp32[1]", "x: fp32[3], out: fp32[3]",
                                             "x: fp32[4], out: fp32[4]"]  # compile order
    assert info.evictions == 1 and info.misses == 4 and info.hits == 1
    assert str(info).splitlines()[0] == "CacheInfo(hits=1, misses=4, versions=3, evictions=1)"
    _call(kernel, 2)  # evicted: compiles again
    assert kernel.cache_info().misses == 5 and kernel.cache_info().evictions == 2
    kernel.cache_maxsize = 1  # shrinking evicts at once
    assert kernel.cache_info().versions == 1 and kernel.cache_info().evictions == 4
    _call(kernel, 2)
    assert kernel.cache_info().hits == 2  # the one kept is the most recent
    kernel.cache_maxsize = None
    for n in range(5, 9):
        _call(kernel, n)
    assert kernel.cache_info().versions == 5 and kernel.cache_info().maxsize is None
    kernel.cache_clear()
    assert kernel.cache_info().evictions == 0 and kernel.cache_info().versions == 0


@pytest.mark.parametrize("bad, error", [(0, pypto.OptionError), (-3, pypto.OptionError), ("8", TypeError),
                                        (2.0, TypeError), (True, TypeError)])
def test_bad_maxsize_is_refused(bad, error):
    with pytest.raises(error, match="cache_maxsize"):
        _double(cache_maxsize=bad)
    kernel = _double()
    with pytest.raises(error, match="cache_maxsize"):
        kernel.cache_maxsize = bad
    assert kernel.cache_maxsize == DEFAULT_MAXSIZE


def test_many_static_sizes_keep_memory_bounded():
    kernel = _double(cache_maxsize=8)
    alive: list = []
    for n in range(1, 51):
        _call(kernel, n)
    rss0 = _rss()
    for n in range(51, 301):
        _call(kernel, n)
        alive.append(weakref.ref(kernel.last_run.compiled))
    gc.collect()
    grown = _rss() - rss0
    info = kernel.cache_info()
    assert info.versions == 8 and info.evictions == 292 and info.misses == 300
    assert sum(r() is not None for r in alive) <= 9  # the 8 cached (+ the last call's record)
    assert grown < 64 << 20, f"RSS grew by {grown >> 20} MiB over 250 evicted versions"


def test_everything_a_kernel_owns_goes_with_cache_clear_and_with_the_kernel():
    @pypto.jit
    def rows(x: pypto.Tensor([pypto.DYNAMIC, 8], pypto.DT_FP32), out: pypto.Tensor([pypto.DYNAMIC, 8], pypto.DT_FP32)):
        pypto.set_vec_tile_shapes(4, 8)
        for b in pypto.loop(pypto.ceildiv(x.shape[0], 4)):
            out[b * 4:(b + 1) * 4, :] = x[b * 4:(b + 1) * 4, :] + 1.0

    def fill(kernel):
        for n in (5, 9, 17, 33):  # several size sets: plans and per-call-site tables fill up
            x, out = torch.randn(n, 8), torch.empty(n, 8)
            kernel(x, out)
            assert torch.equal(out, x + 1.0)
        compiled = kernel.last_run.compiled
        evals = list(compiled.lowered.call_evals.values())
        assert evals and all(e.table for e in evals)
        return [weakref.ref(compiled), weakref.ref(compiled.executor)] + [weakref.ref(e.fn) for e in evals]

    refs = fill(rows)
    rows.cache_clear()
    gc.collect()
    assert all(r() is None for r in refs)
    refs = fill(rows)
    del rows
    gc.collect()
    assert all(r() is None for r in refs)


def test_a_call_site_table_is_bounded():
    from pypto.runtime.control import CALL_TABLE_SIZE

    @pypto.jit
    def rows(x: pypto.Tensor([pypto.DYNAMIC, 8], pypto.DT_FP32), out: pypto.Tensor([pypto.DYNAMIC, 8], pypto.DT_FP32)):
        pypto.set_vec_tile_shapes(1, 8)
        for b in pypto.loop(x.shape[0]):
            out[b:b + 1, :] = x[b:b + 1, :] * 3.0

    n = CALL_TABLE_SIZE + 300  # one table key per loop index
    x, out = torch.randn(n, 8), torch.empty(n, 8)
    rows(x, out)
    assert torch.equal(out, x * 3.0)
    tables = [e.table for e in rows.last_run.compiled.lowered.call_evals.values()]
    assert tables and all(0 < len(t) <= CALL_TABLE_SIZE for t in tables)
