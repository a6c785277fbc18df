"""Leaves write their results straight into the output views (issue 18, item 4): reductions and
fp32 matmuls compute into the view of the GM tensor they end in, a step that reads and writes
one workspace (a running maximum) still writes its other outputs directly, and the cached call's
replay recognises a result computed in place (no copy of it onto itself). The numbers are
checked against torch, and against the interpreted first call, which they must equal exactly."""

from __future__ import annotations

import importlib.util
import pathlib

import pytest
import torch

import pypto

try:
    from tests.golden.helper import assert_matches, check_kernel, rand
except ImportError:
    from helper import assert_matches, check_kernel, rand

EXAMPLES = pathlib.Path(__file__).resolve().parents[2] / "examples"


def _split_softmax():
    """The seed softmax: a (1, 4, 1, 64) tile cuts each 256-wide row in 4 (partial reductions into
    workspaces, then the combine), one loop iteration per batch row."""
    @pypto.jit
    def softmax(x: pypto.Tensor([pypto.DYNAMIC, 4, 1, 256], pypto.DT_FP32),
                out: pypto.Tensor([pypto.DYNAMIC, 4, 1, 256], pypto.DT_FP32)):
        pypto.set_vec_tile_shapes(1, 4, 1, 64)
        for i in pypto.loop(x.shape[0]):
            out[i:i + 1, :, :, :] = pypto.softmax(x[i:i + 1, :, :, :], -1)
    return softmax


def _counting_copies(monkeypatch):
    calls = []
    real = torch.Tensor.copy_

    def copy_(self, src, *args, **kwargs):
        calls.append(tuple(self.shape))
        return real(self, src, *args, **kwargs)
    monkeypatch.setattr(torch.Tensor, "copy_", copy_)
    return calls


def test_split_reductions_write_their_workspaces_without_copies(monkeypatch):
    k = _split_softmax()
    x = rand((6, 4, 1, 256), seed=3)
    outs = []
    for _ in range(3):  # interpreted, replay generated, replayed
        out = torch.full_like(x, -5.0)
        check_kernel(k, (x, out), torch.softmax(x, -1), out=1, loose=True)
        outs.append(out)
    assert all(torch.equal(o, outs[0]) for o in outs[1:])  # the replay computes what the interpreter did
    copies = _counting_copies(monkeypatch)
    out = torch.full_like(x, -5.0)
    k(x, out)
    monkeypatch.undo()
    assert torch.equal(out, outs[0])
    assert copies == []  # every result, partial maxima and sums included, computed where it belongs


def _flash(seq):
    spec = importlib.util.spec_from_file_location("example_flash_direct", EXAMPLES / "flash_attention.py")
    ex = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(ex)
    g = torch.Generator().manual_seed(seq)
    q, kk, v = (torch.randn(1, seq, ex.D, generator=g) for _ in range(3))
    return ex, q, kk, v


@pytest.mark.parametrize("seq", [256, 200])
def test_a_running_maximum_step_writes_its_other_outputs_directly(seq):
    """Flash attention's online softmax reads and writes its running maximum in one step (that
    output is copied after the leaf); its scores, sum and exponentials go straight to their views."""
    ex, q, kk, v = _flash(seq)
    outs = []
    for _ in range(3):
        out = torch.zeros(1, seq, ex.D)
        ex.flash_attention(q, kk, v, out)
        assert_matches(out, ex.reference(q, kk, v), loose=True)
        outs.append(out)
    assert all(torch.equal(o, outs[0]) for o in outs[1:])


def test_matmul_into_a_tail_tile_view():
    """A cube result for a tile the tensor cuts short lands in a strided view: computed apart
    and copied (torch's matmul ``out=`` would view that output as one matrix)."""
    @pypto.jit
    def mm(a: pypto.Tensor([pypto.DYNAMIC, 16], pypto.DT_FP32), b: pypto.Tensor([7, 16], pypto.DT_FP32),
           out: pypto.Tensor([pypto.DYNAMIC, 7], pypto.DT_FP32)):
        pypto.set_cube_tile_shapes([8, 8], [16, 16], [16, 16])
        for i in pypto.loop(pypto.ceildiv(a.shape[0], 8)):
            out[i * 8:(i + 1) * 8, :] = pypto.matmul(a[i * 8:(i + 1) * 8, :], b, pypto.DT_FP32, b_trans=True)
    a, b = rand((19, 16), seed=4), rand((7, 16), seed=5)
    for _ in range(3):
        check_kernel(mm, (a, b, torch.full((19, 7), 3.0)), a @ b.T, out=2)


def _local_plus_tail():
    """A full tile of ones plus a block of ``x`` that the last iteration cuts to a single valid
    row, into a zeroed local: the add's result (and so what lands in ``acc``) has that row only."""
    @pypto.jit
    def local_plus_tail(x: pypto.Tensor([pypto.DYNAMIC, 16], pypto.DT_FP32),
                        out: pypto.Tensor([pypto.DYNAMIC, 16], pypto.DT_FP32)):
        pypto.set_vec_tile_shapes(8, 16)
        for i in pypto.loop(pypto.ceildiv(x.shape[0], 8)):
            acc = pypto.tensor([8, 16], pypto.DT_FP32, "acc")
            acc[:] = pypto.full([8, 16], 1.0, pypto.DT_FP32) + x[i * 8:(i + 1) * 8, :]
            out[i * 8:(i + 1) * 8, :] = acc[:, :] * 2.0
    return local_plus_tail


def _last_acc(k):
    compiled = k.last_run.compiled
    acc = next(v for op in pypto.ir.graph.iter_ops(compiled.program.body) for v in op.outputs if v.name == "acc")
    return compiled.executor.last_memory.last_instance(acc)


def test_a_one_row_tail_is_not_broadcast_over_the_rows_it_lacks():
    """A tail tile cut to one valid row has size 1 where the op does not broadcast: computed into
    a full-size view, torch would stretch that row over the 7 rows the program never writes (the
    leaf's own op crops them: `align_valid`). The local keeps its zeros there, as the reference
    executor's does, for the interpreted call and the replay alike; the bisection agrees."""
    k = _local_plus_tail()
    x = rand((17, 16), seed=8)
    for _ in range(3):  # interpreted, replay generated, replayed
        out = torch.full_like(x, -5.0)
        check_kernel(k, (x, out), (x + 1.0) * 2.0, out=1)
        acc = _last_acc(k)
        assert_matches(acc[:1], x[16:] + 1.0, what="the valid row of the last acc")
        assert torch.equal(acc[1:], torch.zeros(7, 16)), "rows past the tail were written"
    assert pypto.bisect_passes(k, x, torch.zeros_like(x)).ok


@pytest.mark.parametrize("seq", [97])
def test_flash_attention_tail_rows_of_its_running_sum_stay_unwritten(seq):
    """seq 97: the last query block has one valid row. Its running sum ``l`` (a zeroed local) is
    written in that row only, where the lab's pass bisection once saw the direct writes stretch it
    over the block (each row then equal to the first) and report codegen as DIFFERENT."""
    ex, q, kk, v = _flash(seq)
    out = torch.zeros(1, seq, ex.D)
    ex.flash_attention(q, kk, v, out)
    assert_matches(out, ex.reference(q, kk, v), loose=True)
    compiled = ex.flash_attention.last_run.compiled
    l_value = next(v for op in pypto.ir.graph.iter_ops(compiled.program.body) for v in op.outputs if v.name == "l")
    last_l = compiled.executor.last_memory.last_instance(l_value)
    assert float(last_l[0, 0]) > 0 and torch.equal(last_l[1:], torch.zeros(31, 1))
    assert pypto.bisect_passes(ex.flash_attention, q, kk, v, torch.zeros(1, seq, ex.D)).ok


def _ffn():
    spec = importlib.util.spec_from_file_location("example_ffn_direct", EXAMPLES / "ffn.py")
    ex = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(ex)
    return ex


@pytest.mark.parametrize("batch", [64, 70])
def test_half_matmuls_and_casts_write_their_views_rounding_once(monkeypatch, batch):
    """The bf16 FFN: the bf16 x bf16 -> fp32 product is computed into its workspace view, the cast
    to bf16 and the bf16 product are rounded by the copy into their views (one rounding, no
    rounded temporary copied again); the only copies of the cached call change a dtype (those
    roundings and the operands' upcasts into kept fp32 tiles), none moves a computed result."""
    ex = _ffn()
    g = torch.Generator().manual_seed(batch)
    x = torch.randn(batch, ex.H, generator=g).bfloat16()
    w1 = (torch.randn(ex.H, ex.F, generator=g) / ex.H ** 0.5).bfloat16()
    w2 = (torch.randn(ex.F, ex.H, generator=g) / ex.F ** 0.5).bfloat16()
    want = ex.reference(x, w1, w2)
    outs = []
    for _ in range(3):  # interpreted, replay generated, replayed
        out = torch.zeros(batch, ex.H, dtype=torch.bfloat16)
        ex.ffn(x, w1, w2, out)
        assert_matches(out, want, loose=True)
        outs.append(out)
    assert all(torch.equal(o, outs[0]) for o in outs[1:])
    calls = []
    real = torch.Tensor.copy_

    def copy_(self, src, *args, **kwargs):
        calls.append((self.dtype, src.dtype))
        return real(self, src, *args, **kwargs)
    monkeypatch.setattr(torch.Tensor, "copy_", copy_)
    out = torch.zeros(batch, ex.H, dtype=torch.bfloat16)
    ex.ffn(x, w1, w2, out)
    monkeypatch.undo()
    assert torch.equal(out, outs[0])
    assert calls and all(dst != src for dst, src in calls), calls


@pytest.mark.parametrize("dtype", [torch.bfloat16, torch.float16])
@pytest.mark.parametrize("out_dtype", [torch.float32, torch.bfloat16, torch.float16])
def test_half_matmul_into_a_view_equals_computing_it_apart(dtype, out_dtype):
    """The matmul's ``into`` for fp16/bf16 operands (upcast, fp32 product, the copy rounding once)
    gives the bits of its compute rounded by ``.to``: a batch of row blocks against one shared
    weight matrix (stride 0, as a loop's batch passes it), and a batch of distinct matrices."""
    from pypto.ops.registry import REGISTRY

    d = REGISTRY["matmul"]
    g = torch.Generator().manual_seed(7)
    a = (torch.randn(5, 16, 48, generator=g) * 3).to(dtype)
    shared = torch.randn(48, 24, generator=g).to(dtype).expand(5, 48, 24)
    distinct = torch.randn(5, 48, 24, generator=g).to(dtype)
    attrs = {"a_trans": False, "b_trans": False}
    for b in (shared, distinct):
        want = d.compute([a, b], attrs, None).to(out_dtype)
        dst = torch.full((5, 16, 24), float("nan"), dtype=out_dtype)
        assert d.into([a, b], attrs, None, dst) is not None
        assert torch.equal(dst, want)


def test_float_cast_into_a_view_rounds_as_to():
    """A cast between fp32 / fp16 / bf16 computed into a view rounds as the cast's compute does,
    overflow, subnormals, infinities and NaN included (the mode only matters for float -> int)."""
    from pypto.dtypes import from_torch
    from pypto.ops.registry import REGISTRY

    d = REGISTRY["cast"]
    x = torch.cat([torch.randn(1000, generator=torch.Generator().manual_seed(8)) * 1e3,
                   torch.tensor([7e4, -1e5, 3e-8, -6e-6, 1e-41, float("inf"), float("-inf"), float("nan"),
                                 65504.0, 65520.0, 3.4e38])])
    for src in (torch.float32, torch.float16, torch.bfloat16):
        for dt in (torch.float32, torch.float16, torch.bfloat16):
            xs = x.to(src)
            attrs = {"dtype": from_torch(dt), "mode": 0, "satmode": 0}
            want = d.compute([xs], attrs, None)
            assert want.dtype is dt
            dst = torch.empty(xs.shape, dtype=dt)
            d.into([xs], attrs, None, dst)
            assert torch.equal(dst.isnan(), want.isnan())
            assert torch.equal(dst.nan_to_num(0.0), want.nan_to_num(0.0))
