"""The invariants of every lowering pass, checked on a spread of kernels (static and dynamic
sizes, tails, reductions and softmax across tiles, broadcasts, transposes, concat, matmul, bf16),
each of which must also compute the torch result. The verifiers themselves must be able to fail."""

from __future__ import annotations

from types import MappingProxyType

import pytest
import torch

import pypto
from pypto.ir.graph import Value
from pypto.ir.tile import Access, CallOp, LeafFunction, RootFunction, Subgraph, TileOp
from pypto.passes.execute import verify_root
from pypto.passes.partition import verify_subgraphs

try:
    from tests.lowering import _checks as C
except ImportError:  # run without the repo root on sys.path: pytest puts this dir there
    import _checks as C

D = pypto.DYNAMIC
FP32, BF16 = pypto.DT_FP32, pypto.DT_BF16


def _rand(*shape, seed=0, dtype=torch.float32):
    g = torch.Generator().manual_seed(seed)
    return torch.randn(*shape, generator=g).to(dtype)


# ---- the kernels: (kernel, args builder, expected builder, tolerances) ----------------------------

@pypto.jit
def ew_tail(x: pypto.Tensor([100, 70], FP32), y: pypto.Tensor([100, 70], FP32),
            out: pypto.Tensor([100, 70], FP32)):
    pypto.set_vec_tile_shapes(32, 32)
    out[:] = pypto.exp(x) * y + 1.0


@pypto.jit
def reduce_tail(x: pypto.Tensor([100, 70], FP32), rows: pypto.Tensor([100, 1], FP32),
                cols: pypto.Tensor([70], FP32), mx: pypto.Tensor([1, 70], FP32)):
    pypto.set_vec_tile_shapes(32, 32)
    rows[:] = pypto.sum(x, dim=1, keepdim=True)
    cols[:] = pypto.sum(x, dim=0)
    mx[:] = pypto.amax(x, dim=0, keepdim=True)


@pypto.jit
def softmax_tail(x: pypto.Tensor([100, 70], FP32), out: pypto.Tensor([100, 70], FP32)):
    pypto.set_vec_tile_shapes(32, 32)
    out[:] = pypto.softmax(x * 0.5, dim=1)


@pypto.jit
def bcast(x: pypto.Tensor([100, 70], FP32), r: pypto.Tensor([1, 70], FP32), c: pypto.Tensor([100, 1], FP32),
          out: pypto.Tensor([100, 70], FP32)):
    pypto.set_vec_tile_shapes(32, 32)
    out[:] = (x + r) * c - x


@pypto.jit
def transpose_add(x: pypto.Tensor([96, 96], FP32), out: pypto.Tensor([96, 96], FP32)):
    pypto.set_vec_tile_shapes(32, 32)
    y = pypto.exp(x)
    out[:] = y + pypto.transpose(y, 0, 1)


@pypto.jit
def concat3d(x: pypto.Tensor([3, 40, 30], FP32), y: pypto.Tensor([3, 40, 20], FP32),
             out: pypto.Tensor([3, 40, 50], FP32)):
    pypto.set_vec_tile_shapes(2, 16, 16)
    out[:] = pypto.concat([pypto.sigmoid(x), y * 2.0], dim=2)


@pypto.jit
def mm_relu(a: pypto.Tensor([100, 64], FP32), b: pypto.Tensor([64, 80], FP32), out: pypto.Tensor([100, 80], FP32)):
    pypto.set_cube_tile_shapes([32, 32], [32, 64], [32, 32])
    pypto.set_vec_tile_shapes(32, 32)
    out[:] = pypto.relu(pypto.matmul(a, b, FP32)) + 1.0


@pypto.jit
def dyn_rows(x: pypto.Tensor([D, 70], FP32), out: pypto.Tensor([D, 70], FP32)):
    pypto.set_vec_tile_shapes(16, 32)
    for b in pypto.loop(pypto.ceildiv(x.shape[0], 16)):
        rows = slice(b * 16, (b + 1) * 16)
        out[rows, :] = pypto.softmax(x[rows, :], dim=1) + pypto.sum(x[rows, :], dim=1, keepdim=True)


@pypto.jit
def bf16_chain(x: pypto.Tensor([40, 48], BF16), y: pypto.Tensor([40, 48], BF16), out: pypto.Tensor([40, 48], BF16)):
    pypto.set_vec_tile_shapes(16, 16)
    out[:] = pypto.exp(x) * y + 1.0


@pypto.jit
def reshape_full(x: pypto.Tensor([16, 32], FP32), out: pypto.Tensor([32, 16], FP32), f: pypto.Tensor([16, 32], FP32)):
    out[:] = pypto.reshape(x * 2.0, [32, 16])
    f[:] = pypto.full([16, 32], 3.0, FP32)


def _softmax_rows_plus_sum(x):
    return torch.softmax(x, 1) + x.sum(1, keepdim=True)


CASES = {
    "elementwise-tail": (ew_tail, lambda: [_rand(100, 70), _rand(100, 70, seed=1), torch.zeros(100, 70)],
                         lambda a: {2: torch.exp(a[0]) * a[1] + 1.0}, {}),
    "reductions-across-tiles": (reduce_tail, lambda: [_rand(100, 70), torch.zeros(100, 1), torch.zeros(70),
                                                      torch.zeros(1, 70)],
                                lambda a: {1: a[0].sum(1, keepdim=True), 2: a[0].sum(0),
                                           3: a[0].amax(0, keepdim=True)}, dict(rtol=1e-5, atol=1e-5)),
    "softmax-across-tiles": (softmax_tail, lambda: [_rand(100, 70) * 3, torch.zeros(100, 70)],
                             lambda a: {1: torch.softmax(a[0] * 0.5, 1)}, {}),
    "broadcast": (bcast, lambda: [_rand(100, 70), _rand(1, 70, seed=1), _rand(100, 1, seed=2), torch.zeros(100, 70)],
                  lambda a: {3: (a[0] + a[1]) * a[2] - a[0]}, {}),
    "transpose": (transpose_add, lambda: [_rand(96, 96), torch.zeros(96, 96)],
                  lambda a: {1: torch.exp(a[0]) + torch.exp(a[0]).T}, {}),
    "concat-3d": (concat3d, lambda: [_rand(3, 40, 30), _rand(3, 40, 20, seed=1), torch.zeros(3, 40, 50)],
                  lambda a: {2: torch.cat([torch.sigmoid(a[0]), a[1] * 2], 2)}, {}),
    "matmul-vector": (mm_relu, lambda: [_rand(100, 64), _rand(64, 80, seed=1), torch.zeros(100, 80)],
                      lambda a: {2: torch.relu(a[0] @ a[1]) + 1}, dict(rtol=1e-4, atol=1e-4)),
    "dynamic-loop": (dyn_rows, lambda: [_rand(37, 70), torch.zeros(37, 70)],
                     lambda a: {1: _softmax_rows_plus_sum(a[0])}, dict(rtol=1e-5, atol=1e-5)),
    "bf16": (bf16_chain, lambda: [_rand(40, 48, dtype=torch.bfloat16), _rand(40, 48, seed=1, dtype=torch.bfloat16),
                                  torch.zeros(40, 48, dtype=torch.bfloat16)],
             lambda a: {2: (torch.exp(a[0].float()).bfloat16().float() * a[1].float()).bfloat16().float() + 1.0},
             dict(rtol=1.6e-2, atol=1e-2)),
    "reshape-full": (reshape_full, lambda: [_rand(16, 32), torch.zeros(32, 16), torch.zeros(16, 32)],
                     lambda a: {1: (a[0] * 2).reshape(32, 16), 2: torch.full((16, 32), 3.0)}, {}),
}


@pytest.mark.parametrize("case", list(CASES))
def test_every_pass_keeps_its_invariants_and_the_numbers(case):
    kernel, make_args, expected, tol = CASES[case]
    args = make_args()
    want = expected([a.clone() for a in args])
    kernel(*args)
    for k, w in want.items():
        torch.testing.assert_close(args[k].float(), w.float(), **tol)
    compiled = kernel.inspect(*args)
    levels = {p.name: p.level for p in compiled.passes}
    assert levels == {"trace": "tensor", "autocast": "tensor", "expand": "tile", "assign_memory": "tile",
                      "partition": "block", "dedup+allocate_buffers": "block", "execute_graph": "execute",
                      "codegen": "execute"}
    C.check_all(compiled)


def test_expand_tails_are_valid_extents_of_the_edge_tiles():
    args = CASES["elementwise-tail"][1]()
    compiled = ew_tail.inspect(*args)
    (ops,) = C.snapshot(compiled, "expand").graph
    (exp,) = [op for op in ops if op.kind == "exp"]
    assert exp.grid == (4, 3)  # ceil(100/32) x ceil(70/32)
    (out,) = exp.outputs
    assert out.shape == (32, 32) and out.extent == (100, 70)
    valid = C.tail_extents(out, exp.grid)
    assert valid[(0, 0)] == (32, 32)
    assert valid[(3, 1)] == (4, 32) and valid[(1, 2)] == (32, 6) and valid[(3, 2)] == (4, 6)
    assert sum(r * c for r, c in valid.values()) == 100 * 70  # the tiles cover the output exactly once


def test_reduction_across_tiles_goes_through_a_partial_workspace():
    compiled = reduce_tail.inspect(*CASES["reductions-across-tiles"][1]())
    (ops,) = C.snapshot(compiled, "expand").graph
    sums = [op for op in ops if op.kind == "sum"]
    partial = [op for op in sums if not op.attrs.get("combine")]
    combine = [op for op in sums if op.attrs.get("combine")]
    assert len(partial) == 2 and len(combine) == 2
    by_dim = {op.attrs["dim"]: op for op in combine}
    assert by_dim[1].grid == (4, 1) and by_dim[0].grid == (1, 3)
    # the combining op reads all 3 (resp. 4) partials of its row (column) block at once
    assert by_dim[1].inputs[0].shape == (32, 3) and by_dim[0].inputs[0].shape == (4, 32)


def test_dynamic_kernel_invariants_hold_for_every_root_instance():
    for n in (1, 16, 45):
        x, out = _rand(n, 70, seed=n), torch.zeros(n, 70)
        dyn_rows(x, out)
        torch.testing.assert_close(out, _softmax_rows_plus_sum(x), rtol=1e-5, atol=1e-5)
        compiled = dyn_rows.inspect(x, out)
        envs = C.root_envs(compiled)
        assert sum(len(e) for e in envs.values()) == -(-n // 16)
        assert C.check_expand(C.snapshot(compiled, "expand").graph, envs) > 0
    assert dyn_rows.cache_info().misses == 1


# ---- the checks and verifiers can fail ------------------------------------------------------------

def _value(i, name, shape=(32, 32)):
    return Value(i, name, FP32, shape, shape, "workspace")


def _acc(v, mem, axis=(0, 1), shape=(32, 32), extent=(64, 64)):
    return Access(v, mem, shape, (0, 0), axis, extent)


def _op(i, kind, ins, outs, grid=(2, 2), core="AIV"):
    return TileOp(i, kind, tuple(ins), tuple(outs), grid, MappingProxyType({}), 0, core)


def test_verify_subgraphs_rejects_a_read_of_a_local_tile_never_written():
    x, y = _value(1, "x"), _value(2, "y")
    bad = Subgraph(0, (_op(10, "exp", [_acc(x, "UB")], [_acc(y, "UB")]),), (2, 2), "AIV")
    with pytest.raises(AssertionError, match="never wrote"):
        verify_subgraphs([bad])
    good = Subgraph(0, (_op(9, "copy_in", [_acc(x, "GM")], [_acc(x, "UB")]),) + bad.ops, (2, 2), "AIV")
    verify_subgraphs([good])
    mixed = Subgraph(0, good.ops[:1] + (_op(11, "exp", [_acc(x, "UB")], [_acc(y, "UB")], grid=(2, 1)),),
                     (2, 2), "AIV")
    with pytest.raises(AssertionError, match="grid"):
        verify_subgraphs([mixed])


def test_verify_root_rejects_a_backward_dependency():
    leaf = LeafFunction("leaf", "AIV", (), (), MappingProxyType({}), (), "h", 2)
    calls = tuple(CallOp(i, leaf, (2, 2), (), (), i) for i in range(2))
    verify_root(RootFunction("r", calls, ((0, 1),)))
    with pytest.raises(AssertionError, match="backwards"):
        verify_root(RootFunction("r", calls, ((1, 0),)))


def test_expand_check_rejects_a_grid_that_misses_the_tail():
    x, y = _value(1, "x", (70, 70)), _value(2, "y", (70, 70))
    short = _op(1, "exp", [_acc(x, None, extent=(70, 70))], [_acc(y, None, extent=(70, 70))], grid=(2, 3))
    with pytest.raises(AssertionError, match="does not cover"):
        C.check_expand([[short]], {0: [{}]})
    long = _op(1, "exp", [_acc(x, None, extent=(70, 70))], [_acc(y, None, extent=(70, 70))], grid=(4, 3))
    with pytest.raises(AssertionError, match="overshoots"):
        C.check_expand([[long]], {0: [{}]})
    dup = _op(1, "exp", [_acc(x, None, extent=(70, 70))], [_acc(y, None, (0, None), extent=(70, 32))],
              grid=(3, 3))
    with pytest.raises(AssertionError, match="several grid points"):
        C.check_expand([[dup]], {0: [{}]})


def test_memory_check_rejects_a_vector_op_reading_gm():
    x, y = _value(1, "x"), _value(2, "y")
    with pytest.raises(AssertionError, match="reads"):
        C.check_memory([[_op(1, "exp", [_acc(x, "GM")], [_acc(y, "UB")])]])
    with pytest.raises(AssertionError, match="cube op"):
        C.check_memory([[_op(1, "matmul", [_acc(x, "UB"), _acc(y, "L0B")], [_acc(y, "L0C")], core="AIC")]])


def test_partition_check_rejects_a_subgraph_reading_back_its_own_gm_write():
    x, y = _value(1, "x"), _value(2, "y")
    ops = (_op(1, "copy_in", [_acc(x, "GM")], [_acc(x, "UB")]),
           _op(2, "copy_out", [_acc(x, "UB")], [_acc(y, "GM")]),
           _op(3, "copy_in", [_acc(y, "GM", axis=(1, 0))], [_acc(y, "UB", axis=(1, 0))]),
           _op(4, "copy_out", [_acc(y, "UB", axis=(1, 0))], [_acc(x, "GM")]))
    with pytest.raises(AssertionError, match="after the same subgraph wrote it"):
        C.check_partition([ops], [[Subgraph(0, ops, (2, 2), "AIV")]])
    split = [Subgraph(0, ops[:2], (2, 2), "AIV"), Subgraph(1, ops[2:], (2, 2), "AIV")]
    C.check_partition([ops], [split])
    with pytest.raises(AssertionError, match="precedes it in program order"):
        C.check_partition([ops], [split[::-1]])


def test_roots_check_rejects_a_missing_dependency():
    x, y = _value(1, "x"), _value(2, "y")
    leaf = LeafFunction("leaf", "AIV", (), (("in", FP32, (32, 32)), ("out", FP32, (32, 32))),
                        MappingProxyType({}), (), "h", 2)
    write_y = CallOp(1, leaf, (2, 2), (_acc(x, "GM"), _acc(y, "GM")), (1,), 0)
    read_y = CallOp(2, leaf, (2, 2), (_acc(y, "GM"), _acc(x, "GM")), (1,), 1)
    sgs = [Subgraph(i, (), (2, 2), "AIV") for i in range(2)]
    C.check_roots([RootFunction("r", (write_y, read_y), ((0, 1),))], [sgs])
    with pytest.raises(AssertionError, match="does not depend"):
        C.check_roots([RootFunction("r", (write_y, read_y), ())], [sgs])
