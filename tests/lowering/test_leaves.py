"""Leaf functions: dedup of isomorphic subgraphs, cube leaves of matmul, buffer allocation and
overflow (reported, or split when only the fusion overflows), and fp16/bf16 through autocast."""

from __future__ import annotations

import itertools

import pytest
import torch

import pypto
from pypto.errors import ShapeError
from pypto.passes.buffers import BufferOverflowError
from pypto.passes.dedup import dedup
from pypto.passes.memory import assign_memory
from pypto.passes.partition import partition
from pypto.runtime.machine import A2A3

try:
    from tests.lowering import _checks as C
except ImportError:
    import _checks as C

D = pypto.DYNAMIC
FP32, FP16, BF16 = pypto.DT_FP32, pypto.DT_FP16, pypto.DT_BF16


def _rand(*shape, seed=0, dtype=torch.float32):
    return torch.randn(*shape, generator=torch.Generator().manual_seed(seed)).to(dtype)


# ---- dedup ----------------------------------------------------------------------------------------

@pypto.jit
def ew256(x: pypto.Tensor([256, 256], FP32), y: pypto.Tensor([256, 256], FP32), out: pypto.Tensor([256, 256], FP32)):
    pypto.set_vec_tile_shapes(32, 32)
    out[:] = pypto.exp(x) + y * 3.0


def test_elementwise_256_with_32_tiles_is_one_leaf_over_an_8x8_grid():
    x, y, out = _rand(256, 256), _rand(256, 256, seed=1), torch.zeros(256, 256)
    ew256(x, y, out)
    torch.testing.assert_close(out, torch.exp(x) + y * 3)
    compiled = ew256.inspect(x, y, out)
    assert len(compiled.lowered.leaves) == 1
    (root,) = compiled.lowered.roots
    (call,) = root.calls
    assert call.grid == (8, 8) and call.leaf.grid_rank == 2
    (dt,) = compiled.executor.last[0]
    (task,) = dt.tasks
    assert task.points.shape == (64, 2)  # 64 tile instances of the one leaf
    C.check_all(compiled)


@pypto.jit
def two_halves(x: pypto.Tensor([64, 64], FP32), out: pypto.Tensor([64, 64], FP32)):
    pypto.set_vec_tile_shapes(32, 64)
    out[0:32, :] = pypto.exp(x[0:32, :]) * 2.0
    out[32:64, :] = pypto.exp(x[32:64, :]) * 2.0


def test_isomorphic_subgraphs_share_one_leaf_with_different_arguments():
    x, out = _rand(64, 64), torch.zeros(64, 64)
    two_halves(x, out)
    torch.testing.assert_close(out, torch.exp(x) * 2)
    compiled = two_halves.inspect(x, out)
    (root,) = compiled.lowered.roots
    assert len(root.calls) == 2 and len(compiled.lowered.leaves) == 1
    assert root.calls[0].leaf is root.calls[1].leaf
    assert [c.args[0].base for c in root.calls] == [(0, 0), (32, 0)]
    C.check_all(compiled)


def test_tails_do_not_multiply_leaves():
    @pypto.jit
    def tail(x: pypto.Tensor([100, 70], FP32), out: pypto.Tensor([100, 70], FP32)):
        pypto.set_vec_tile_shapes(32, 32)
        out[:] = pypto.sigmoid(x) * 2.0

    x, out = _rand(100, 70), torch.zeros(100, 70)
    tail(x, out)
    torch.testing.assert_close(out, torch.sigmoid(x) * 2)
    compiled = tail.inspect(x, out)
    assert len(compiled.lowered.leaves) == 1
    assert compiled.lowered.roots[0].calls[0].grid == (4, 3)


# ---- matmul ---------------------------------------------------------------------------------------

@pypto.jit
def mm(a: pypto.Tensor([256, 128], FP32), b: pypto.Tensor([128, 192], FP32), out: pypto.Tensor([256, 192], FP32)):
    pypto.set_cube_tile_shapes([64, 128], [32, 128], [64, 64])
    out[:] = pypto.matmul(a, b, FP32)


def test_matmul_is_an_aic_leaf_per_output_tile():
    a, b, out = _rand(256, 128), _rand(128, 192, seed=1), torch.zeros(256, 192)
    mm(a, b, out)
    torch.testing.assert_close(out, a @ b, rtol=1e-4, atol=1e-4)
    compiled = mm.inspect(a, b, out)
    cube = [leaf for leaf in compiled.lowered.leaves.values() if any(op.kind == "matmul" for op in leaf.ops)]
    assert len(cube) == 1 and cube[0].core == "AIC"
    calls = [c for c in compiled.lowered.roots[0].calls if c.leaf is cube[0]]
    assert [c.grid for c in calls] == [(256 // 64, 192 // 64)]
    (op,) = [op for op in cube[0].ops if op.kind == "matmul"]
    assert [a.mem for a in op.inputs] == ["L0A", "L0B"] and op.outputs[0].mem == "L0C"
    assert op.outputs[0].shape == (64, 64) and op.attrs["k_tile"] == 32
    assert "TMATMUL" in compiled.source[cube[0].name]
    C.check_all(compiled)


def test_matmul_with_tails_in_m_n_and_k():
    @pypto.jit
    def mm_tail(a: pypto.Tensor([100, 70], FP32), b: pypto.Tensor([70, 50], FP32), out: pypto.Tensor([100, 50], FP32)):
        pypto.set_cube_tile_shapes([32, 32], [32, 64], [32, 32])
        out[:] = pypto.matmul(a, b, FP32)

    a, b, out = _rand(100, 70), _rand(70, 50, seed=1), torch.zeros(100, 50)
    mm_tail(a, b, out)
    torch.testing.assert_close(out, a @ b, rtol=1e-4, atol=1e-4)
    compiled = mm_tail.inspect(a, b, out)
    (call,) = [c for c in compiled.lowered.roots[0].calls if c.leaf.core == "AIC"]
    assert call.grid == (4, 2)
    C.check_all(compiled)


@pypto.jit
def mm_vec(a: pypto.Tensor([128, 64], FP32), b: pypto.Tensor([64, 96], FP32), bias: pypto.Tensor([1, 96], FP32),
           out: pypto.Tensor([128, 96], FP32)):
    pypto.set_cube_tile_shapes([64, 64], [32, 64], [32, 32])
    pypto.set_vec_tile_shapes(32, 32)
    out[:] = pypto.relu(pypto.matmul(a, b, FP32) + bias) * 2.0


def test_mixed_matmul_and_vector_gives_aic_and_aiv_leaves_with_a_dependency():
    a, b, bias, out = _rand(128, 64), _rand(64, 96, seed=1), _rand(1, 96, seed=2), torch.zeros(128, 96)
    mm_vec(a, b, bias, out)
    torch.testing.assert_close(out, torch.relu(a @ b + bias) * 2, rtol=1e-4, atol=1e-4)
    compiled = mm_vec.inspect(a, b, bias, out)
    (root,) = compiled.lowered.roots
    cores = [c.leaf.core for c in root.calls]
    assert "AIC" in cores and "AIV" in cores
    i = cores.index("AIC")
    j = next(k for k, c in enumerate(root.calls) if c.leaf.core == "AIV" and (i, k) in root.deps)
    assert root.calls[i].grid == (2, 3) and root.calls[j].grid == (4, 3)
    written = {root.calls[i].args[k].value.id for k in root.calls[i].writes}
    assert written & {a.value.id for a in root.calls[j].args}
    (dt,) = compiled.executor.last[0]
    raw = [(dt.tasks[s].leaf.core, dt.tasks[t].leaf.core) for s, t, kind in dt.edges if kind == "RAW"]
    assert ("AIC", "AIV") in raw
    # the cube task runs before the vector task that reads its result
    order = [dt.tasks[k].leaf.core for _, k in compiled.executor.last[1].order]
    assert order.index("AIC") < order.index("AIV")
    C.check_all(compiled)


# ---- buffer overflow ------------------------------------------------------------------------------

def test_a_tile_that_cannot_fit_ub_names_the_op_the_buffer_and_the_sizes():
    @pypto.jit
    def big(x: pypto.Tensor([512, 2048], FP32), out: pypto.Tensor([512, 2048], FP32)):
        pypto.set_vec_tile_shapes(256, 1024)
        out[:] = pypto.exp(x)

    x, out = torch.zeros(512, 2048), torch.zeros(512, 2048)
    with pytest.raises(BufferOverflowError) as info:
        big(x, out)
    assert isinstance(info.value, ShapeError) and isinstance(info.value, ValueError)
    msg = str(info.value)
    assert "exp" in msg  # the op
    assert "UB" in msg and "%x" in msg and "ub0" in msg  # the buffer
    assert str(256 * 1024 * 4) in msg and str(A2A3.ub_bytes) in msg  # the sizes
    assert "fp32[256, 1024]" in msg
    assert "set_vec_tile_shapes" in msg
    assert "out[:] = pypto.exp(x)" in msg  # the kernel line


def test_a_cube_tile_that_cannot_fit_l0c_is_reported():
    @pypto.jit
    def big_mm(a: pypto.Tensor([256, 64], FP32), b: pypto.Tensor([64, 256], FP32), out: pypto.Tensor([256, 256], FP32)):
        pypto.set_cube_tile_shapes([256, 256], [64, 64], [256, 256])
        out[:] = pypto.matmul(a, b, FP32)

    with pytest.raises(BufferOverflowError) as info:
        big_mm(torch.zeros(256, 64), torch.zeros(64, 256), torch.zeros(256, 256))
    msg = str(info.value)
    assert "matmul" in msg and "L0C" in msg and str(256 * 256 * 4) in msg and str(A2A3.l0c_bytes) in msg


@pypto.jit
def wide_chain(x: pypto.Tensor([256, 256], FP32), y: pypto.Tensor([256, 256], FP32),
               u: pypto.Tensor([256, 256], FP32), v: pypto.Tensor([256, 256], FP32),
               out: pypto.Tensor([256, 256], FP32)):
    pypto.set_vec_tile_shapes(128, 128)  # 64 KB tiles: three fit UB, four do not
    out[:] = (x + y) * (u + v)


def test_a_fused_chain_that_overflows_is_split_instead_of_failing():
    args = [_rand(256, 256, seed=s) for s in range(4)]
    out = torch.zeros(256, 256)
    wide_chain(*args, out)
    torch.testing.assert_close(out, (args[0] + args[1]) * (args[2] + args[3]))
    compiled = wide_chain.inspect(*args, out)
    leaves = compiled.lowered.leaves
    assert len(leaves) > 1
    C.check_all(compiled)
    # each leaf fits, and the fused form really would not have
    for leaf in leaves.values():
        assert sum(b.nbytes for b in leaf.buffers if b.mem == "UB") <= 3 * C.tile_bytes((128, 128))
    tile_ops = C.snapshot(compiled, "expand").graph[0]
    ids = itertools.count(10 ** 9)
    ops, groups = assign_memory(tile_ops, compiled.lowered.global_values, lambda: next(ids), fuse=True)
    with pytest.raises(BufferOverflowError):
        dedup(partition(ops, groups), {}, A2A3)


# ---- tiles the framework chooses fit UB --------------------------------------------------------

@pypto.jit
def cache_update(cache: pypto.Tensor([128, 512], FP32), index: pypto.Tensor([1, 8], pypto.DT_INT32),
                 rows: pypto.Tensor([8, 512], FP32)):
    pypto.set_vec_tile_shapes(24, 512)
    pypto.scatter_update(cache, -2, index, rows)  # in place


def test_an_in_place_update_writes_its_input_with_no_copy_back():
    cache, rows = _rand(128, 512), _rand(8, 512, seed=1)  # 256 KB: more than UB in one tile
    index = torch.tensor([[3, 17, 40, 41, 99, 100, 126, 0]], dtype=torch.int32)
    want = cache.clone()
    want[index[0].long()] = rows
    cache_update(cache, index, rows)
    torch.testing.assert_close(cache, want)
    compiled = cache_update.inspect(cache, index, rows)
    C.check_all(compiled)
    ops = C.snapshot(compiled, "expand").graph[0]
    # passes/fold.py: the whole-tensor update writes the cache's own storage, flagged for the cost
    # model; no copy of the whole result back into the cache (which would need UB-sized tiles)
    assert not [op for op in ops if op.kind == "copy_out"]
    (update,) = [op for op in ops if op.kind == "scatter_update"]
    assert update.attrs.get("in_place") and update.outputs[0].value.name == "cache"


@pypto.jit
def long_k(a: pypto.Tensor([128, 4096], FP32), b: pypto.Tensor([4096, 128], FP32),
           out: pypto.Tensor([128, 128], FP32)):
    pypto.set_cube_tile_shapes([128, 128], [64, 512], [128, 128], True)
    out[:] = pypto.matmul(a, b, FP32)


def test_a_split_k_combine_takes_fewer_rows_when_all_its_chunks_would_not_fit_ub():
    a, b = _rand(128, 4096), _rand(4096, 128, seed=1)
    out = torch.zeros(128, 128)
    long_k(a, b, out)  # 8 chunks of a 128x128 fp32 tile: 512 KB at once
    torch.testing.assert_close(out, a @ b, rtol=1e-4, atol=1e-3)
    compiled = long_k.inspect(a, b, out)
    C.check_all(compiled)
    (combine,) = [op for op in C.snapshot(compiled, "expand").graph[0] if op.kind == "sum"]
    assert combine.inputs[0].shape == (8, 16, 128) and combine.grid == (8, 1)
    for leaf in compiled.lowered.leaves.values():
        assert sum(b.nbytes for b in leaf.buffers if b.mem == "UB") <= A2A3.ub_bytes


@pypto.jit
def staged_rows(x: pypto.Tensor([128, 512], BF16), out: pypto.Tensor([256, 512], BF16)):
    pypto.set_vec_tile_shapes(256, 512)  # the local below is 256 KB: no UB tile could hold it
    stage = pypto.tensor([256, 512], BF16, "stage")
    pypto.set_vec_tile_shapes(64, 512)
    stage[0:128, :] = x
    out[:] = stage


def test_a_local_tensor_is_zeroed_memory_not_a_tile_op():
    x = _rand(128, 512, dtype=torch.bfloat16)
    out = torch.ones(256, 512, dtype=torch.bfloat16)
    staged_rows(x, out)
    assert torch.equal(out[:128], x) and not out[128:].any()  # the unwritten half reads as zeros
    compiled = staged_rows.inspect(x, out)
    C.check_all(compiled)
    assert not [op for op in C.snapshot(compiled, "expand").graph[0] if op.kind == "tensor"]


@pypto.jit
def copy_rows(kv: pypto.Tensor([512, 512], BF16), out: pypto.Tensor([256, 512], BF16)):
    pypto.set_vec_tile_shapes(128, 512)  # 128 KB tiles: one fits UB, two do not
    pypto.assemble(pypto.clone(pypto.view(kv, [256, 512], [64, 0])), [0, 0], out)


def test_a_clone_of_a_tile_loaded_from_gm_is_the_load_itself():
    kv, out = _rand(512, 512, dtype=torch.bfloat16), torch.zeros(256, 512, dtype=torch.bfloat16)
    copy_rows(kv, out)
    assert torch.equal(out, kv[64:320])
    compiled = copy_rows.inspect(kv, out)
    C.check_all(compiled)
    (leaf,) = compiled.lowered.leaves.values()
    assert [op.kind for op in leaf.ops] == ["copy_in", "copy_out"] and len(leaf.buffers) == 1
