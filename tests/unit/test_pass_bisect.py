"""Pass bisection (`pypto.bisect_passes`, and pass verify on a mismatch): every pass's program runs
on the same inputs; a deliberately broken pass is named, with the op and the values side by side."""

from __future__ import annotations

import sys
import pathlib
from types import MappingProxyType

import pytest
import torch

import pypto
from pypto.codegen import cpu
from pypto.passes import pipeline
from pypto.runtime.verify import PassVerifyError

sys.path.insert(0, str(pathlib.Path(__file__).resolve().parents[1] / "golden"))
from helper import assert_matches  # noqa: E402

sys.path.insert(0, str(pathlib.Path(__file__).resolve().parents[2] / "examples"))

D = pypto.DYNAMIC
FP32 = pypto.DT_FP32
VERIFY = {"enable_pass_verify": True}


def _add_and_exp():
    """A fresh kernel (its own cache): ``out = x + 1`` and ``out2 = exp(x) * 2`` per 16-row tile."""
    @pypto.jit(verify_options=VERIFY)
    def add_and_exp(x: pypto.Tensor([D, 64], FP32), out: pypto.Tensor([D, 64], FP32),
                    out2: pypto.Tensor([D, 64], FP32)):
        pypto.set_vec_tile_shapes(16, 64)
        for b in pypto.loop(pypto.ceildiv(x.shape[0], 16)):
            rows = slice(b * 16, (b + 1) * 16)
            out[rows, :] = x[rows, :] + 1.0
            out2[rows, :] = pypto.exp(x[rows, :]) * 2.0
    return add_and_exp


def _args(seed=0):
    x = torch.randn(50, 64, generator=torch.Generator().manual_seed(seed))
    return x, torch.zeros(50, 64), torch.zeros(50, 64)


def _corrupt_add(ops):
    """Tile ops with every ``add``'s scalar changed from 1.0 to 3.0 (the broken pass's doing)."""
    return tuple(op.replace(attrs=MappingProxyType({**op.attrs, "scalar": 3.0})) if op.kind == "add" else op
                 for op in ops)


def _assert_names_add(bisection, culprit, x):
    assert bisection.culprit == culprit
    assert all(c.ok for c in bisection.checks if c.index < bisection.first_bad.index)
    value = bisection.first_bad_value
    assert value is not None and value.where.startswith(("op add -> %add", "output %out (written by op add")), value
    assert value.elements, "the differing elements are shown"
    # expected is torch's x + 1, got what the broken pass computes (x + 3); an op's value is the one
    # of the last loop iteration (rows 48..49 of 50), the kernel's output is the whole tensor
    first_row = 0 if value.op == "output" else 48
    for (i, j), want, got in value.elements:
        row = first_row + i
        assert_matches(torch.tensor(want), x[row, j] + 1.0, what=f"expected value at {(row, j)}")
        assert_matches(torch.tensor(got), x[row, j] + 3.0, what=f"computed value at {(row, j)}")
    assert culprit in str(bisection)


def _example_call(name):
    """(kernel, arguments) of one of the examples, with the inputs its check() uses."""
    mod = __import__("norms" if name.endswith("_norm") else name)
    g = torch.Generator().manual_seed(0)
    if name == "ffn":
        x = torch.randn(70, mod.H, generator=g).bfloat16()
        w1 = (torch.randn(mod.H, mod.F, generator=g) / mod.H ** 0.5).bfloat16()
        w2 = (torch.randn(mod.F, mod.H, generator=g) / mod.F ** 0.5).bfloat16()
        return mod.ffn, (x, w1, w2, torch.zeros(70, mod.H, dtype=torch.bfloat16))
    if name == "flash_attention":
        q, k, v = (torch.randn(2, 100, mod.D, generator=g) for _ in range(3))
        return mod.flash_attention, (q, k, v, torch.zeros(2, 100, mod.D))
    x = torch.randn(37, mod.H, generator=g).bfloat16()
    gamma, beta = torch.randn(mod.H, generator=g).bfloat16(), torch.randn(mod.H, generator=g).bfloat16()
    out = torch.zeros(37, mod.H, dtype=torch.bfloat16)
    return (mod.rms_norm, (x, gamma, out)) if name == "rms_norm" else (mod.layer_norm, (x, gamma, beta, out))


@pytest.mark.parametrize("example", ["tiled", "ffn", "rms_norm", "layer_norm", "flash_attention"])
def test_every_pass_keeps_the_numbers_of_sound_kernels(example):
    if example == "tiled":
        kernel, args = _add_and_exp(), _args()
    else:
        kernel, args = _example_call(example)
    before = [a.clone() for a in args]
    b = pypto.bisect_passes(kernel, *args)
    assert b.ok, str(b)
    ran = [c for c in b.checks if c.ok is not None]
    assert [c.name for c in ran] == [p.name for p in kernel.inspect(*args).passes], str(b)
    for a, was in zip(args, before):  # nothing the caller passed is written
        assert torch.equal(a, was)
    assert kernel.inspect(*args).bisection is b
    _every_op_through_gm_keeps_the_numbers(kernel, args)


@pytest.mark.parametrize("seq", [96, 97])
def test_flash_attention_with_a_tail_block_has_no_broken_pass(seq):
    """Every pass runs (assign_memory's program too: its own fused groups, not groups guessed from
    shared tiles, which made a cycle) and keeps the numbers; and no op result past the last query
    block's tail is computed from memory nothing wrote (issue 20: an elementwise result is valid
    only where every operand is; before, the first operand's extent let the tail's op results
    claim rows of unwritten workspace, counted here as not compared)."""
    import flash_attention as fa

    g = torch.Generator().manual_seed(seq)
    q, k, v = (torch.randn(2, seq, fa.D, generator=g) for _ in range(3))
    args = (q, k, v, torch.zeros(2, seq, fa.D))
    b = pypto.bisect_passes(fa.flash_attention, *args)
    assert b.ok and b.culprit is None, str(b)
    assert all(c.ok for c in b.checks), str(b)  # none "not run"
    assert "fused groups" in {c.name: c.how for c in b.checks}["assign_memory"]
    unspecified = sum(v.unspecified for c in b.checks for v in c.values)
    assert unspecified == 0, str(b)  # a partial query block too (seq 97): its tail rows are not valid
    assert all(o.unspecified == 0 for c in b.checks for o in c.outputs)  # outputs are compared whole


def test_an_output_read_from_unwritten_memory_is_a_difference():
    """An op result's elements that differ between the two fills are not compared; a kernel
    output's are: the run whose output is off makes the pass DIFFERENT, whichever fill it had."""
    from pypto.runtime import pass_bisect as PB

    kernel = _add_and_exp()
    args = _args(6)
    program = kernel.inspect(*args).program
    want = args[0] + 1.0
    off = want.clone()
    off[3, 5] += 7.0  # what memory nothing wrote gave in one run
    op_value = next(v for op in pypto.ir.graph.iter_ops(program.body) if op.kind == "add" for v in op.outputs)
    for first, second in ((want, off), (off, want)):
        got = lambda t: (lambda v: t if v.id == op_value.id else None)  # noqa: E731 - one run's op results
        check = PB._compare(0, "p", "tile", "", program, {op_value.id: want}, [("out", want)], [first],
                            got(first), 1e-3, 1e-3, ([second], got(second)))
        assert check.ok is False
        assert [o.ok for o in check.outputs] == [False]
        (value,) = check.values
        assert value.ok and value.unspecified == 1  # the op result: that element is not compared


def _every_op_through_gm_keeps_the_numbers(kernel, args):
    """The op-by-op run that names the op inside a fused leaf is sound too, at every lower level."""
    from pypto.runtime import pass_bisect as PB
    from pypto.runtime import pass_programs as PP
    from pypto.runtime.reference import ReferenceExecutor

    compiled = kernel.inspect(*args)
    _, tensors, env, *_ = kernel._lookup(args, {}, count=False)
    options = kernel._resolved_record()[1]
    rtol, atol = options.get("verify", "pass_verify_error_tol")
    program, lowered = compiled.program, compiled.lowered
    written = [p.value.id in lowered.written_params for p in program.params]
    ref = ReferenceExecutor(program)
    ref_inputs = [t.clone() for t in tensors]
    ref.run(ref_inputs, env)
    outputs = lambda ins, rets: [t for t, w in zip(ins, written) if w] + list(rets or [])  # noqa: E731
    expected = list(zip([p.name for p, w in zip(program.params, written) if w], outputs(ref_inputs, None)))
    storage = PP.storage_of(lowered)
    ran = 0
    for index, snap in enumerate(compiled.passes):
        ops = PP.tile_ops_of(snap, lowered)
        if ops is None:
            continue
        check = PB._run_and_compare(index, snap, "", PP.through_gm(ops, index, lowered, storage, options), program,
                                    ref.last_values, expected, tensors, env, options, outputs, rtol, atol,
                                    PP.through_gm(ops, index, lowered, storage, options))
        assert check.ok, (snap.name, [v.where for v in check.bad_values], check.how)
        assert len(check.values) >= len(compiled.lowered.leaves), "every op's result is compared"
        ran += 1
    assert ran == 5  # expand, assign_memory, partition, dedup+allocate_buffers, execute_graph


@pytest.mark.parametrize("seq", [96, 97, 100])
def test_pass_verify_is_clean_on_flash_attention_with_a_tail_block(seq):
    """seq not a multiple of the K/V block (64): the reference once counted the rows past the
    last block's tail, and pass verify raised a mismatch the kernel did not have."""
    import flash_attention as fa

    kernel = pypto.jit(fa.flash_attention.__wrapped__, verify_options=VERIFY)
    g = torch.Generator().manual_seed(seq)
    q, k, v = (torch.randn(2, seq, fa.D, generator=g) for _ in range(3))
    out = torch.zeros(2, seq, fa.D)
    kernel(q, k, v, out)
    assert [(r.stage, r.ok) for r in kernel.last_run.verify] == [("tile", True), ("block/execute", True)]
    assert_matches(out, fa.reference(q, k, v), loose=True)


def test_a_broken_tile_pass_is_named_with_the_op(monkeypatch):
    real = pipeline.assign_memory

    def broken_assign_memory(ops, *a, **kw):
        out, groups = real(ops, *a, **kw)
        return list(_corrupt_add(out)), groups

    monkeypatch.setattr(pipeline, "assign_memory", broken_assign_memory)
    kernel = _add_and_exp()
    x, out, out2 = _args(1)
    with pytest.raises(PassVerifyError, match=r"first pass whose program gives other numbers: assign_memory") as e:
        kernel(x, out, out2)
    assert "add" in str(e.value)
    _assert_names_add(e.value.bisection, "assign_memory", x)
    assert kernel.last_run.compiled.bisection is e.value.bisection  # the lab's Passes tab reads it here


def test_a_broken_dedup_is_named_after_partition_checks_out(monkeypatch):
    real = pipeline.dedup

    def broken_dedup(subgraphs, registry, machine):
        leaves = real(subgraphs, registry, machine)
        swapped = {}
        for key, leaf in registry.items():  # the shared leaves run corrupted, the subgraphs stay sound
            swapped[id(leaf)] = registry[key] = type(leaf)(leaf.name, leaf.core, _corrupt_add(leaf.ops), leaf.params,
                                                           leaf.param_of, leaf.buffers, leaf.hash, leaf.grid_rank)
        return [swapped.get(id(leaf), leaf) for leaf in leaves]

    monkeypatch.setattr(pipeline, "dedup", broken_dedup)
    kernel = _add_and_exp()
    x, out, out2 = _args(2)
    with pytest.raises(PassVerifyError) as e:
        kernel(x, out, out2)
    b = e.value.bisection
    _assert_names_add(b, "dedup+allocate_buffers", x)
    assert {c.name: c.ok for c in b.checks}["partition"] is True


def test_broken_generated_code_is_blamed_on_codegen_not_on_the_passes_before(monkeypatch):
    real = cpu.compile_leaf

    def broken_compile_leaf(leaf, variant=""):
        src, ex = real(leaf, variant)
        if not any(op.kind == "add" for op in leaf.ops):
            return src, ex

        class OffByTwo:  # the generated add computes x + 3: what a wrong template would do
            def for_batch(self, nb):
                fn = ex.for_batch(nb)
                return lambda *a, **kw: {p: r + 2.0 for p, r in fn(*a, **kw).items()}
        return src, OffByTwo()

    monkeypatch.setattr(cpu, "compile_leaf", broken_compile_leaf)
    kernel = _add_and_exp()
    x, out, out2 = _args(3)
    b = pypto.bisect_passes(kernel, x, out, out2)
    _assert_names_add(b, "codegen", x)
    assert b.suspects == ("codegen",)
    assert [c.ok for c in b.checks[:-1]] == [True] * (len(b.checks) - 1)


def test_a_sound_verified_call_clears_an_old_bisection(monkeypatch):
    kernel = _add_and_exp()
    args = _args(4)
    kernel(*args)
    compiled = kernel.last_run.compiled
    compiled.bisection = object()  # as left by an earlier mismatch
    kernel(*args)
    assert compiled.bisection is None


def test_bad_input_is_a_clear_error_and_changes_nothing():
    with pytest.raises(pypto.PyptoError, match="kernel is not a pypto.jit kernel") as e:
        pypto.bisect_passes(torch.add, torch.zeros(2))
    assert e.value.param == "kernel" and "test_pass_bisect.py" in str(e.value)
    kernel = _add_and_exp()
    with pytest.raises(pypto.PyptoError):  # the kernel's own refusal of a wrong shape, at this line
        pypto.bisect_passes(kernel, torch.zeros(4, 32), torch.zeros(4, 32), torch.zeros(4, 32))
    args = _args(5)
    assert pypto.bisect_passes(kernel, *args).ok  # and the next good call works
