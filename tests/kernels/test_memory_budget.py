"""Issue 20 D3: sizes are checked before allocation.

A stride-0 expand to a huge number of rows used to be made dense (a 256 GB request) before the
call was refused anyway, and ``pypto.full([2**20, 2**20])`` asked torch for a 4 TiB workspace:
both ended in torch's RuntimeError (or the OOM killer). Now a `MemoryBudgetError` (a PyptoError
and a MemoryError) names the argument or the workspace and the bytes, nothing is allocated or
written, and the next good call works."""

from __future__ import annotations

import pytest
import torch

import pypto
from pypto.errors import MemoryBudgetError, PyptoError
from tests.golden.helper import check_kernel, rand

D = pypto.DYNAMIC
FP32 = pypto.DT_FP32
SENTINEL = -7.0


@pypto.jit
def doubled(x: pypto.Tensor([D, 64], FP32), out: pypto.Tensor([D, 64], FP32)):
    pypto.set_vec_tile_shapes(8, 64)
    out[:] = x * 2.0


def test_a_huge_expanded_argument_is_refused_before_its_dense_copy():
    x = torch.randn(1, 64).expand(10**12, 64)  # 256 TB once dense
    out = torch.full((8, 64), SENTINEL)
    with pytest.raises(MemoryBudgetError) as info:
        doubled(x, out)
    e = info.value
    assert isinstance(e, PyptoError) and isinstance(e, MemoryError)
    assert e.param == "x" and "256,000,000,000,000 bytes" in str(e)
    assert bool((out == SENTINEL).all())
    y = rand((8, 64), seed=1)
    check_kernel(doubled, [y, out], y * 2.0, out=1)


def test_the_budget_option_bounds_a_dense_copy():
    x = rand((64, 8192), seed=2)[:, ::2]  # strided: a 1 MiB dense copy (64 x 4096 x 4 bytes)
    base = rand((64, 4096), seed=3)
    out = torch.full((64, 4096), SENTINEL)

    @pypto.jit(runtime_options={"memory_budget_mb": 1})
    def within(a: pypto.Tensor([D, 4096], FP32), o: pypto.Tensor([D, 4096], FP32)):
        pypto.set_vec_tile_shapes(2, 4096)
        o[:] = a + 1.0
    check_kernel(within, [x, out], x + 1.0, out=1)  # exactly 1 MiB: allowed

    wide = rand((65, 8192), seed=4)[:, ::2]  # 65 rows: more than 1 MiB
    out2 = torch.full((65, 4096), SENTINEL)
    with pytest.raises(MemoryBudgetError, match="memory_budget_mb'\\] = 1"):
        within(wide, out2)
    assert bool((out2 == SENTINEL).all())
    del base


def test_a_huge_workspace_is_refused_before_it_is_allocated():
    @pypto.jit
    def from_a_huge_tile(out: pypto.Tensor([8, 64], FP32)):
        pypto.set_vec_tile_shapes(8, 64)
        t = pypto.full([2**20, 2**20], 1.0, FP32)  # 4 TiB
        out[:] = t[0:8, 0:64] * 2.0

    out = torch.full((8, 64), SENTINEL)
    with pytest.raises(MemoryBudgetError) as info:
        from_a_huge_tile(out)
    assert "workspace" in str(info.value) and "4,398,046,511,104 bytes" in str(info.value)
    assert info.value.param == "runtime_options['memory_budget_mb']"
    assert bool((out == SENTINEL).all())


def test_the_budget_option_is_validated():
    with pytest.raises(PyptoError, match="memory_budget_mb"):
        pypto.set_runtime_options(memory_budget_mb=-1)
