"""The differential fuzzer's short profile: random valid kernels against torch (see README.md).

Each example is a whole program (ranks 0-4, DYNAMIC/STATIC/int/named dims, tiles, loops with
views and assembles, runtime ``if``, chains of 2-8 ops) run with runtime sizes A, B, then A again
with new values: every call must match torch, and the kernel must compile once. A failure shows
hypothesis' shrunk program as a standalone script. The examples are derandomized so the suite is
repeatable; set ``PYPTO_FUZZ_SEED`` to explore other programs, or run ``bash scripts/fuzz.sh N``
for long sweeps.
"""

from __future__ import annotations

import os
import re
from dataclasses import replace

import pytest
from hypothesis import HealthCheck, Phase, given, settings
from hypothesis import seed as hypothesis_seed

from . import oracle
from .generate import programs
from .oracle import CAPACITY_ERRORS, repro_text, run_program
from .program import Dim, Epilogue, Program, Step
from .render import render
from .run import main as run_main
from .shrink import shrink, valid

# about 12 s of one core per profile on an idle machine (~0.3 s a kernel, three calls each)
EXAMPLES = int(os.environ.get("PYPTO_FUZZ_EXAMPLES", "40"))
SEED = os.environ.get("PYPTO_FUZZ_SEED")


def _fuzz(dtypes):
    @settings(max_examples=EXAMPLES, deadline=None, database=None, derandomize=SEED is None,
              suppress_health_check=list(HealthCheck), print_blob=False)
    @given(programs(dtypes=dtypes))
    def check(prog):
        outcome = run_program(prog)
        if outcome.status == "fail" or (outcome.status == "rejected" and outcome.kind not in CAPACITY_ERRORS):
            raise AssertionError("a valid program failed:\n" + repro_text(outcome))
    return hypothesis_seed(int(SEED))(check) if SEED is not None else check


@pytest.mark.parametrize("dtypes", [("fp32",), ("fp16", "bf16"), ("int32", "int16")], ids=["fp32", "half", "int"])
def test_random_kernels_match_torch(dtypes):
    _fuzz(dtypes)()


# ---- the fuzzer's own parts: the judge must be able to fail, the shrinker must shrink -----------

LOOP_PROGRAM = Program(
    dtype="fp32", dims=(Dim("dyn", (13, 5)), Dim("int", (7, 7))),
    input_masks=(frozenset(), frozenset({0})),
    steps=(Step("exp", (0,)), Step("add", (2, 1)), Step("sum", (3,), 1), Step("sub", (3, 4))),
    outputs=(5,), loop_tiles=(4,), vec_tile=(4, 8))


def test_a_correct_program_passes():
    outcome = run_program(LOOP_PROGRAM)
    assert outcome.status == "pass", outcome.detail


def test_a_loop_carried_accumulator_passes_and_a_lost_update_fails(monkeypatch):
    prog = replace(LOOP_PROGRAM, carry=True)
    assert "acc[0:4, :] = t5 + acc[0:4, :]" in render(prog)
    assert run_program(prog).status == "pass"
    monkeypatch.setattr(oracle, "render", lambda p: render(p).replace(
        "acc[0:4, :] = t5 + acc[0:4, :]", "acc[0:4, :] = t5 + 0.0", 1))
    assert run_program(prog).kind == "mismatch"


def test_a_wrong_number_is_a_mismatch(monkeypatch):
    def wrong_op(prog):  # the kernel computes abs where the reference computes exp
        return render(prog).replace("t2 = pypto.exp(t0)", "t2 = pypto.abs(t0)", 1)
    monkeypatch.setattr(oracle, "render", wrong_op)
    outcome = run_program(LOOP_PROGRAM)
    assert (outcome.status, outcome.kind) == ("fail", "mismatch")
    assert "expected" in outcome.detail and "pypto.abs(t0)" in repro_text(outcome)


def test_an_unwritten_tail_is_a_mismatch(monkeypatch):
    def floor_loop(prog):  # 13 rows in tiles of 4: floor division skips the last row
        return render(prog).replace("pypto.ceildiv(x0.shape[0], 4)", "x0.shape[0] // 4", 1)
    monkeypatch.setattr(oracle, "render", floor_loop)
    outcome = run_program(LOOP_PROGRAM)
    assert (outcome.status, outcome.kind) == ("fail", "mismatch")
    assert "call 0 sizes [13, 7]: out0: 7 of 91 elements differ" in outcome.detail


def test_an_internal_error_is_a_failure_and_a_pypto_error_a_rejection(monkeypatch):
    monkeypatch.setattr(oracle, "render", lambda prog: render(prog).replace(
        "t2 = pypto.exp(t0)", "t2 = pypto.exp(t0)\n        t2.no_such_attribute", 1))
    assert run_program(LOOP_PROGRAM).kind == "AttributeError"
    assert run_program(LOOP_PROGRAM).status == "fail"
    monkeypatch.setattr(oracle, "render", lambda prog: render(prog).replace(
        "t2 = pypto.exp(t0)", "t2 = pypto.exp(pypto.cast(t0, pypto.DT_INT32))", 1))
    assert run_program(LOOP_PROGRAM).status == "rejected"


def test_a_second_compile_is_a_failure():
    prog = replace(LOOP_PROGRAM, dims=(Dim("static", (13, 5)), Dim("int", (7, 7))))
    outcome = run_program(prog)
    assert (outcome.status, outcome.kind) == ("fail", "recompiled")


def test_shrink_keeps_only_what_the_failure_needs():
    calls = []

    def has_sum(prog):
        calls.append(prog)
        return any(s.op == "sum" for s in prog.steps)
    small = shrink(LOOP_PROGRAM, has_sum)
    assert [s.op for s in small.steps] == ["sum"]
    assert small.loop_tiles == () and small.vec_tile is None and small.n_inputs == 1
    assert all(valid(p) for p in calls)


def test_the_script_prints_one_summary_line(tmp_path, capsys):
    assert run_main(["3", "--seed", "7", "--out", str(tmp_path / "repros")]) == 0
    line = capsys.readouterr().out.strip()
    assert re.fullmatch(r"fuzz seed 7: 3 kernels run, \d passed, 0 failed, \d rejected-as-invalid "
                        r"\(PyptoError\), [\d.]+ s", line), line


def test_the_generator_reaches_every_feature():
    seen = set()

    @hypothesis_seed(3)
    @settings(max_examples=400, database=None, phases=[Phase.generate], deadline=None,
              suppress_health_check=list(HealthCheck))
    @given(programs())
    def draw(prog):
        assert valid(prog), prog
        seen.update({f"rank{prog.rank}", prog.dtype, *(d.kind for d in prog.dims), *(s.op for s in prog.steps)})
        seen.update(name for name, on in [
            ("loop", prog.loop_tiles), ("nested loop", len(prog.loop_tiles) == 2), ("window", prog.window),
            ("carry", prog.carry), ("strided", prog.strided), ("true division", prog.true_div),
            ("stepped views", prog.step), ("indivisible call", prog.true_div and prog.refuses_indivisible()), ("explicit views", prog.explicit_views), ("retile", prog.retile),
            ("ellipsis", prog.ellipsis_from is not None), ("broadcast", any(prog.input_masks)),
            ("tile larger than dim", prog.loop_tiles and prog.loop_tiles[0] > max(prog.dims[0].sizes)),
            ("epilogue " + (prog.epilogue.op if prog.epilogue else "none"), True)] if on)
    draw()
    wanted = {"rank0", "rank4", "fp32", "fp16", "bf16", "int32", "int16", "dyn", "named", "static", "int",
              "if", "where", "cast", "sum", "softmax", "cumsum", "tril", "loop", "nested loop", "window",
              "carry", "strided", "explicit views", "retile", "ellipsis", "broadcast", "tile larger than dim",
              "epilogue matmul", "epilogue transpose", "epilogue concat", "epilogue reshape",
              "true division", "stepped views", "indivisible call"}
    assert wanted <= seen, sorted(wanted - seen)


def test_the_oracle_tells_the_two_value_rule_from_a_wrong_number():
    """Issue 20 D2: with ``t = x - 3.0`` in fp16, ``(t - maximum(t, t)) * 1024`` is not 0 under
    upstream's AutoCast (the fp32 chain of sub and mul reads t unrounded, maximum the rounded
    copy), as it is in torch. The oracle compiles such a program again rounding at every op,
    where it matches torch, and passes it as ``two-value``; rounding at every op, it just passes."""
    from pypto.passes import autocast

    from .oracle import run_program
    from .program import Dim, Program, Step

    prog = Program(dtype="fp16", dims=(Dim("int", (16, 16)), Dim("dyn", (16, 8))), input_masks=(frozenset(),),
                   steps=(Step("add_s", (0,), -3.0), Step("maximum", (1, 1)), Step("sub", (1, 2)),
                          Step("mul_s", (3,), 1024.0)),
                   outputs=(4,), seed=5)
    outcome = run_program(prog)
    assert outcome.status == "pass" and outcome.kind == "two-value", outcome.detail
    assert "elements differ" in outcome.detail  # the default compile differs from torch ...
    autocast.SKIP_ROUND_TRIPS = False
    try:  # ... rounding at every op it does not
        assert run_program(prog).kind == ""
    finally:
        autocast.SKIP_ROUND_TRIPS = True


def test_the_extra_calls_cover_disagreeing_sizes_aliasing_and_empty_dims():
    """Issue 20 item 5: the sweep's oracle runs these calls (before, only the script's main ran
    the short call). ``out0 = x0 + x1`` over row tiles: x0 one column longer must be refused, x0
    also passed as out0 must read x0 as it was, and zero rows must give an empty result."""
    from .oracle import run_program
    from .program import Dim, Program, Step
    from .render import input_dims, output_dims, render

    prog = Program(dtype="fp32", dims=(Dim("dyn", (9, 5)), Dim("dyn", (8, 6))),
                   input_masks=(frozenset(), frozenset()), steps=(Step("add", (0, 1)),), outputs=(2,),
                   loop_tiles=(4,), seed=3)
    metas = prog.metas()
    assert prog.mismatch() == (0, 1) and prog.empty_call(metas)  # not on the looped axis 0
    assert prog.alias_input(metas, input_dims(prog), output_dims(prog, metas)) == 0
    source = render(prog)
    assert "MISMATCH = (0, 1)" in source and "ALIAS = 0" in source and "EMPTY = True" in source
    # a column window on axis 1 reads x[..., 2:5] of both: torch accepts x0 one longer there too
    assert replace(prog, window=(1, 2, 5)).mismatch() is None
    outcome = run_program(prog)
    assert outcome.status == "pass", outcome.detail


def test_true_division_stepped_views_and_reshape_are_judged():
    """Issue 20 item 5: a loop counting ``x0.shape[0] / 4``, every argument a stepped view
    ``base[1::2]`` and a reshape merging the last two axes pass; the judge fails a kernel that
    accepts a size of no multiple of the tile (ceildiv instead of the true division), and a call
    that writes a row of a stepped output's base between its rows."""
    prog = Program(dtype="fp32", dims=(Dim("dyn", (8, 12)), Dim("dyn", (3, 5)), Dim("int", (7, 7))),
                   input_masks=(frozenset(), frozenset()), steps=(Step("add", (0, 1)),), outputs=(3,),
                   loop_tiles=(4,), seed=3, true_div=True, step=2, epilogue=Epilogue("reshape", (2,)))
    source = render(prog)
    assert "pypto.loop(x0.shape[0] / 4)" in source and "INDIVISIBLE = True" in source and "STEP = 2" in source
    assert "pypto.reshape(t2, [t2.shape[0], t2.shape[1] * t2.shape[2]])" in source
    assert run_program(prog).status == "pass"
    assert run_program(replace(prog, explicit_views=True)).status == "pass"
    assert run_program(replace(prog, loop_tiles=(), true_div=False)).status == "pass"

    def ceildiv(p):
        return render(p).replace("pypto.loop(x0.shape[0] / 4)", "pypto.loop(pypto.ceildiv(x0.shape[0], 4))", 1)
    with pytest.MonkeyPatch.context() as mp:
        mp.setattr(oracle, "render", ceildiv)
        outcome = run_program(prog)
    assert (outcome.status, outcome.kind) == ("fail", "extra-call") and "no multiple" in outcome.detail

    def writes_a_gap(p):
        return render(p).replace("kernel(*ins, *outs)\n", "kernel(*ins, *outs)\n        outs[0]._base[0] = 0\n", 1)
    with pytest.MonkeyPatch.context() as mp:
        mp.setattr(oracle, "render", writes_a_gap)
        outcome = run_program(prog)
    assert outcome.status == "fail" and "between the stepped view's rows" in outcome.detail
