"""A `pypto.tensor` declared inside a `pypto.loop` body is private to each iteration.

Each iteration runs the declaration again, so each has its own instance: the dependency engine
must not order one iteration's use of its scratch after another iteration's (no WAR/WAW edge
between iterations), while a tensor declared outside the loop and written inside is one buffer
for every iteration and keeps those edges. The numbers are the same either way.

The kernels accumulate over an inner loop (a branch on its first iteration), so the scratch tensor
is used by several root functions of one outer iteration: the case where its identity comes from
the loop indices around its declaration rather than from one root instance.
"""

import torch

import pypto
from pypto.ir.graph import iter_ops
from tests.golden.helper import check_kernel, rand

D = pypto.DYNAMIC
FP32 = pypto.DT_FP32
ROWS, COLS, STEPS = 16, 32, 3


def _accumulate(acc, x, y, b):
    """acc = sum over s of x[b rows] @ y[s block]^T, the first step assigning."""
    for s in pypto.loop(STEPS, name="LOOP_s", idx_name="s"):
        xb = pypto.view(x, [ROWS, COLS], [b * ROWS, 0])
        yb = pypto.view(y, [COLS, COLS], [s * COLS, 0])
        prod = pypto.matmul(xb, yb, FP32, b_trans=True)
        if pypto.cond(s == 0):
            acc[:] = prod
        else:
            acc[:] = acc + prod


@pypto.frontend.jit
def private_scratch(x: pypto.Tensor([D, COLS], FP32), y: pypto.Tensor([STEPS * COLS, COLS], FP32),
                    out: pypto.Tensor([D, COLS], FP32)):
    pypto.set_vec_tile_shapes(ROWS, COLS)
    pypto.set_cube_tile_shapes([ROWS, ROWS], [COLS, COLS], [COLS, COLS])
    for b in pypto.loop(x.shape[0] // ROWS, name="LOOP_b", idx_name="b"):
        acc = pypto.tensor([ROWS, COLS], FP32, "acc")  # one per iteration of b
        _accumulate(acc, x, y, b)
        out[b * ROWS:(b + 1) * ROWS, :] = acc * 2.0


@pypto.frontend.jit
def shared_scratch(x: pypto.Tensor([D, COLS], FP32), y: pypto.Tensor([STEPS * COLS, COLS], FP32),
                   out: pypto.Tensor([D, COLS], FP32)):
    pypto.set_vec_tile_shapes(ROWS, COLS)
    pypto.set_cube_tile_shapes([ROWS, ROWS], [COLS, COLS], [COLS, COLS])
    acc = pypto.tensor([ROWS, COLS], FP32, "acc")  # one for the whole call
    for b in pypto.loop(x.shape[0] // ROWS, name="LOOP_b", idx_name="b"):
        _accumulate(acc, x, y, b)
        out[b * ROWS:(b + 1) * ROWS, :] = acc * 2.0


def _args(blocks=4):
    x, y = rand((blocks * ROWS, COLS), seed=1), rand((STEPS * COLS, COLS), seed=2)
    return x, y, torch.full((blocks * ROWS, COLS), -7.0)


def _expected(x, y):
    blocks = x.shape[0] // ROWS
    acc = torch.zeros(blocks, ROWS, COLS)
    for s in range(STEPS):
        acc += x.view(blocks, ROWS, COLS) @ y[s * COLS:(s + 1) * COLS].T
    return acc.reshape(-1, COLS) * 2.0


def _cross_iteration_edges(timeline):
    """{kind: count} of the dependency edges between tasks of different iterations of b."""
    b_of = {e.task: dict(e.loop_indices).get("b") for e in timeline.events}
    out: dict = {}
    for i, j, kind in timeline.deps:
        if b_of[i] != b_of[j]:
            out[kind] = out.get(kind, 0) + 1
    return out


def test_a_loop_body_tensor_computes_the_right_numbers():
    x, y, out = _args()
    check_kernel(private_scratch, (x, y, out), _expected(x, y), out=2)


def test_a_tensor_shared_by_the_iterations_computes_the_right_numbers():
    x, y, out = _args()
    check_kernel(shared_scratch, (x, y, out), _expected(x, y), out=2)


def test_a_loop_body_tensor_puts_no_edge_between_iterations():
    x, y, out = _args()
    private_scratch(x, y, out)
    tl = private_scratch.last_run.timeline
    assert _cross_iteration_edges(tl) == {}
    # inside one iteration the accumulation is still ordered (RAW through acc)
    assert any(kind == "RAW" for _, _, kind in tl.deps)


def test_a_tensor_declared_outside_the_loop_keeps_its_edges_between_iterations():
    x, y, out = _args()
    shared_scratch(x, y, out)
    edges = _cross_iteration_edges(shared_scratch.last_run.timeline)
    assert edges.get("WAR", 0) > 0 and edges.get("WAW", 0) > 0, edges


def test_private_iterations_shorten_the_critical_path():
    x, y, out = _args(blocks=6)
    private_scratch(x, y, out)
    private = private_scratch.last_run.timeline.stats
    shared_scratch(x, y, out)
    shared = shared_scratch.last_run.timeline.stats
    assert private["tasks"] == shared["tasks"]
    # shared: the six accumulations run one after another; private: side by side
    assert private["critical_path_cycles"] * 3 < shared["critical_path_cycles"], (private, shared)


def test_every_iteration_gets_its_own_instance():
    x, y, out = _args(blocks=5)
    lowered = private_scratch.inspect(x, y, out).lowered
    acc = next(op.outputs[0] for op in iter_ops(lowered.program.body) if op.kind == "tensor")
    assert len({lowered.memory_key(acc, seq, {"b": b}) for seq, b in enumerate(range(5))}) == 5
    # the root instances of one iteration share that iteration's instance
    assert lowered.memory_key(acc, 0, {"b": 1}) == lowered.memory_key(acc, 7, {"b": 1})
