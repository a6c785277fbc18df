"""Pass bisection: run the program each pass leaves on the same inputs and find the first pass
whose numbers differ from the Tensor Graph reference, op by op.

Pass verify (`runtime/verify.py`) compares two coarse stages; this runs the program of every
pass snapshot (`CompiledKernel.passes`; how each is run: `runtime/pass_programs.py`, without the
generated code before code generation) on copies of the same inputs. Results are compared by pass
verify's rule (`verify._close`): the kernel's outputs and every op result the program keeps in GM,
against the reference's last instance of each value. A fused program keeps few op results; when
only outputs differ, its tile ops run once more one leaf each, through GM, to name the op.

A lowered program runs twice, its workspaces filled with two different values where it is planned
to write before reading (`memory.unwritten_fill`). An op result's elements that differ between the
two runs are computed from memory the program never wrote: the device leaves them unspecified
(past a tail's valid rows, say), so they are not compared (``ValueCheck.unspecified`` counts them).
A kernel output must not depend on such memory: it is compared in both runs.
"""

from __future__ import annotations

from dataclasses import dataclass, field, replace
from typing import Optional

from .._lazy import torch
from ..ir.graph import Program, iter_ops
from .memory import unwritten_fill
from .pass_programs import program_of, storage_of, through_gm, tile_ops_of
from .reference import ReferenceExecutor

SHOWN_ELEMENTS = 6  # differing elements kept per op (index, expected, got)


@dataclass(frozen=True)
class ValueCheck:
    """One op's result after one pass against the reference: ``elements`` holds the first
    differing elements as (index, expected, got)."""

    op: str
    value: str
    loc: object
    ok: bool
    max_abs_diff: float
    shape: tuple = ()
    elements: tuple = ()
    written_by: tuple = ()  # for a kernel output: the ops whose results are assembled into it
    unspecified: int = 0  # elements computed from memory the program never wrote: not compared

    @property
    def where(self) -> str:
        if self.op == "output":
            return f"output %{self.value}" + (f" (written by {', '.join(self.written_by)})" if self.written_by else "")
        return f"op {self.op} -> %{self.value}" + (f" ({self.loc})" if self.loc else "")


@dataclass(frozen=True)
class PassCheck:
    """The numbers of the program pass ``index`` (``name``) leaves. ``ok`` is None when that
    program could not be run (``how`` says why); ``values`` holds one `ValueCheck` per compared
    op result, ``outputs`` one per kernel output."""

    index: int
    name: str
    level: str
    how: str
    ok: Optional[bool]
    max_abs_diff: float = 0.0
    values: tuple = ()
    outputs: tuple = ()

    @property
    def bad_values(self) -> tuple:
        return tuple(v for v in self.values if not v.ok)


@dataclass(frozen=True)
class PassBisection:
    """The numbers after every pass of one compiled kernel, for one set of inputs.

    ``culprit`` is the first pass whose program gives numbers other than the reference's;
    ``suspects`` the passes from the last one that ran and matched up to it (several when a pass
    in between could not be run); ``first_bad_value`` the first op (program order) whose result
    differs there."""

    kernel: str
    checks: tuple
    rtol: float
    atol: float
    reference: str = "the Tensor Graph run by the reference executor"
    notes: tuple = field(default=())

    @property
    def first_bad(self) -> Optional[PassCheck]:
        return next((c for c in self.checks if c.ok is False), None)

    @property
    def ok(self) -> bool:
        return self.first_bad is None

    @property
    def culprit(self) -> Optional[str]:
        bad = self.first_bad
        return None if bad is None else bad.name

    @property
    def suspects(self) -> tuple:
        bad = self.first_bad
        if bad is None:
            return ()
        out = []
        for c in self.checks:
            if c is bad:
                break
            out = [] if c.ok else out + [c.name]
        return tuple(out) + (bad.name,)

    @property
    def first_bad_value(self) -> Optional[ValueCheck]:
        bad = self.first_bad
        if bad is None:
            return None
        return next(iter(bad.bad_values), None) or next((o for o in bad.outputs if not o.ok), None)

    def __str__(self) -> str:
        lines = [f"pass bisection of {self.kernel} (rtol={self.rtol}, atol={self.atol}; against {self.reference})"]
        for c in self.checks:
            verdict = {True: "same numbers", False: "DIFFERENT", None: "not run"}[c.ok]
            skipped = sum(v.unspecified for v in c.values)
            lines.append(f"  #{c.index} {c.name:<24} {verdict:<14} {c.how}"
                         + (f"  max |diff| {c.max_abs_diff:.3g}" if c.ok is False else "")
                         + (f"  ({skipped} elements from unwritten memory not compared)" if skipped else ""))
        bad = self.first_bad
        if bad is None:
            lines.append("every pass keeps the reference's numbers")
            return "\n".join(lines)
        lines.append(f"first pass that changes the numbers: {' or '.join(self.suspects)}")
        for v in bad.bad_values or tuple(o for o in bad.outputs if not o.ok):
            lines.append(f"  {v.where}: max |diff| {v.max_abs_diff:.3g}")
            for idx, want, got in v.elements:
                lines.append(f"      [{', '.join(map(str, idx))}] expected {want:.6g}  got {got:.6g}")
        return "\n".join(lines)


# ---- comparing -------------------------------------------------------------------------------------------------

def _writers(program) -> dict:
    """{parameter name: the ops (as `ValueCheck.where` text) whose results are assembled into it}."""
    made_by = {v.id: op for op in iter_ops(program.body) for v in op.outputs}
    out: dict = {}
    for op in iter_ops(program.body):
        if op.kind != "assemble":
            continue
        src = op.inputs[0]
        producer = made_by.get(src.id)
        while producer is not None and producer.kind == "view":
            producer = made_by.get(producer.inputs[0].id)
        if producer is not None:
            where = f"op {producer.kind} -> %{producer.outputs[0].name}" + (f" ({producer.loc})" if producer.loc else "")
            out.setdefault(op.inputs[1].root.name, []).append(where)
    return {k: tuple(dict.fromkeys(v)) for k, v in out.items()}


def _cropped(have, want):
    if have is not None and have.shape != want.shape and have.dim() == want.dim():
        return have[tuple(slice(0, n) for n in want.shape)]
    return have


def _differs(a, b):
    """Where two runs' results differ (NaN equal to NaN); None when they cannot be compared."""
    if a is None or b is None or a.shape != b.shape:
        return None
    if a.dtype.is_floating_point:
        return ~((a == b) | (torch.isnan(a) & torch.isnan(b)))
    return a != b


def _value_check(op_kind, name, loc, have, want, rtol, atol, other=None) -> ValueCheck:
    """``have`` against ``want``; with ``other`` (the same result from the run with the other
    fill of unwritten memory) the elements that differ between the runs are not compared."""
    from .verify import _close

    have = _cropped(have, want)
    unspecified = 0
    mask = _differs(have, _cropped(other, want)) if other is not None else None
    if mask is not None and have.shape == want.shape and bool(mask.any()):
        unspecified = int(mask.sum())
        have = torch.where(mask, want.to(have.dtype), have)
    good, diff = _close(have, want, rtol, atol)
    elements = ()
    if not good and have.shape == want.shape:
        a, b = have.double(), want.double()
        off = ~((a - b).abs() <= (a.abs() + b.abs()) * (rtol / 2) + atol)
        off &= ~(torch.isnan(a) & torch.isnan(b))
        idx = off.nonzero()[:SHOWN_ELEMENTS].tolist()
        elements = tuple((tuple(i), float(want[tuple(i)]), float(have[tuple(i)])) for i in idx)
    return ValueCheck(op_kind, name, loc, good, diff, tuple(want.shape), elements, unspecified=unspecified)


def _compare(index, name, level, how, program, ref_values, expected, got_outputs, got_value, rtol, atol,
             other=None) -> PassCheck:
    """``other``: (outputs, value getter) of the run with the other fill of unwritten memory."""
    values, worst = [], 0.0
    for op in iter_ops(program.body):
        if op.kind in ("view", "assemble"):
            continue
        for v in op.outputs:
            want = ref_values.get(v.id)
            have = got_value(v)
            if want is None or have is None or not isinstance(want, torch.Tensor):
                continue
            c = _value_check(op.kind, v.name, op.loc, have, want, rtol, atol,
                             other[1](v) if other is not None else None)
            values.append(c)
            worst = max(worst, c.max_abs_diff)
    outputs = []
    writers = _writers(program)
    runs = [got_outputs] + ([other[0]] if other is not None else [])
    for k, (label, want) in enumerate(expected):
        checks = [_value_check("output", label, None, run[k], want, rtol, atol) for run in runs]
        c = replace(next((x for x in checks if not x.ok), checks[0]), written_by=writers.get(label, ()))
        outputs.append(c)
        worst = max(worst, c.max_abs_diff)
    ok = all(c.ok for c in values) and all(c.ok for c in outputs)
    return PassCheck(index, name, level, how, ok, worst, tuple(values), tuple(outputs))


UNWRITTEN_FILLS = (0, 1)  # the two values a lowered program's unwritten workspace memory starts at


def _run_and_compare(index, snap, how, executor, program, ref_values, expected, tensors, env, options, outputs,
                     rtol, atol, again=None) -> PassCheck:
    """``again``: a fresh executor of the same program (a lowered one), run with the other fill of
    unwritten memory; without it a lowered program runs once (nothing is left unspecified)."""
    if isinstance(executor, ReferenceExecutor):
        inputs = [t.clone() for t in tensors]
        try:
            returns = executor.run(inputs, dict(env))
        except Exception as e:  # a program that fails to run gives no numbers: that is a difference
            return PassCheck(index, snap.name, snap.level, f"{how}; failed: {type(e).__name__}: {e}", False,
                             float("inf"))
        return _compare(index, snap.name, snap.level, how, program, ref_values, expected, outputs(inputs, returns),
                        executor.last_values.get, rtol, atol)
    runs = []
    for fill, ex in zip(UNWRITTEN_FILLS, (executor, again) if again is not None else (executor,)):
        inputs = [t.clone() for t in tensors]
        try:
            with unwritten_fill(fill):
                returns = ex.run(inputs, dict(env), options)
        except Exception as e:  # a program that fails to run gives no numbers: that is a difference
            return PassCheck(index, snap.name, snap.level, f"{how}; failed: {type(e).__name__}: {e}", False,
                             float("inf"))
        memory = ex.last_memory
        got_value = (lambda v, m=memory: m.last_instance(v)) if memory is not None else (lambda v: None)
        runs.append((outputs(inputs, returns), got_value))
    return _compare(index, snap.name, snap.level, how, program, ref_values, expected, *runs[0], rtol, atol,
                    runs[1] if len(runs) > 1 else None)


def bisect(compiled, tensors, env, options) -> PassBisection:
    """The numbers after every pass of ``compiled`` for the call ``(tensors, env)`` (the caller's
    tensors are not written: every program runs on copies)."""
    rtol, atol = options.get("verify", "pass_verify_error_tol")
    program = compiled.program
    lowered = compiled.lowered
    written_ids = lowered.written_params if lowered is not None else set(
        p.value.id for p in program.params if p.index in ReferenceExecutor(program).written_params)
    written = [p.value.id in written_ids for p in program.params]
    ref = ReferenceExecutor(program)
    ref_inputs = [t.clone() for t in tensors]
    ref_returns = ref.run(ref_inputs, env)
    labels = [p.name for p, w in zip(program.params, written) if w] + [f"return {k}" for k in range(len(ref_returns or ()))]

    def outputs(inputs, returns):
        return [t for t, w in zip(inputs, written) if w] + list(returns or [])

    expected = list(zip(labels, outputs(ref_inputs, ref_returns)))
    storage = storage_of(lowered) if lowered is not None else {}
    checks = []
    for index, snap in enumerate(compiled.passes):
        try:
            how, executor = program_of(snap, index, lowered, storage, options)
            again = None if executor is None or isinstance(executor, ReferenceExecutor) else \
                program_of(snap, index, lowered, storage, options)[1]
        except Exception as e:  # a program this pass left that cannot be put together to run
            checks.append(PassCheck(index, snap.name, snap.level, f"not run: {type(e).__name__}: {e}", None))
            continue
        if executor is None:
            checks.append(PassCheck(index, snap.name, snap.level, how, None))
            continue
        checks.append(_run_and_compare(index, snap, how, executor, program, ref.last_values, expected, tensors, env,
                                       options, outputs, rtol, atol, again))
    bad = next((c for c in checks if c.ok is False), None)
    if bad is not None and not bad.bad_values:  # only outputs differ (fused): find the op, one op a leaf
        snap = compiled.passes[bad.index]
        try:
            ops = tile_ops_of(snap, lowered)
            if ops is not None:
                how = "its tile ops one leaf each, on-chip tiles kept in GM, interpreted"
                fine = _run_and_compare(bad.index, snap, how, through_gm(ops, bad.index, lowered, storage, options),
                                        program, ref.last_values, expected, tensors, env, options, outputs, rtol, atol,
                                        through_gm(ops, bad.index, lowered, storage, options))
                if fine.bad_values:
                    checks[checks.index(bad)] = replace(bad, values=fine.values, how=f"{bad.how}; per op: {how}")
        except Exception:  # noqa: BLE001 - the op-by-op run only refines the verdict already made
            pass
    return PassBisection(compiled.name, tuple(checks), rtol, atol)


def bisect_passes(kernel, *args, **kwargs) -> PassBisection:
    """Run ``kernel``'s program after each of its passes on these arguments and compare the
    numbers with the Tensor Graph reference: the first pass that changes them (``culprit``), and
    per op the values side by side. The arguments are not written. The result is also kept on the
    compiled version (``kernel.inspect(*args).bisection``), where the lab's Passes tab shows it."""
    if not callable(getattr(kernel, "inspect", None)) or not hasattr(kernel, "_lookup"):
        from ..errors import ArgumentTypeError, user_loc

        raise ArgumentTypeError("pypto.bisect_passes: kernel is not a pypto.jit kernel", expected="a @pypto.jit kernel",
                                got=type(kernel).__name__, param="kernel", loc=user_loc(2))
    compiled = kernel.inspect(*args, **kwargs)
    _, tensors, env, *_ = kernel._lookup(args, kwargs, count=False)
    result = bisect(compiled, tensors, env, kernel._resolved_record()[1])
    compiled.bisection = result
    return result


__all__ = ["bisect", "bisect_passes", "PassBisection", "PassCheck", "ValueCheck"]
