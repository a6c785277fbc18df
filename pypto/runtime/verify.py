"""Pass verify: run each compile stage on copies of the inputs and compare it with the reference.

Stages, in pipeline order:
  * "tensor": the Tensor Graph run by the reference executor (the semantics everything is
    checked against);
  * "tile" (expand + assign_memory): the lowered program with fusion disabled, so every op's
    result goes through GM and can be compared op by op;
  * "block/execute" (partition, dedup, buffers, execute graph, codegen): the program that runs.
The first stage whose results diverge is reported with the first op whose output differs.

``set_verify_golden_data(goldens=[...])`` adds one more check to the next verified call: each
argument whose golden is not None must match it (upstream's coarse check against the user's own
reference results). Values compare by upstream's precision rule with ``pass_verify_error_tol``
(`_close`). Each verified call is logged (`verify_log`).
"""

from __future__ import annotations

import math
from dataclasses import dataclass

from .._lazy import torch
from ..errors import ArgumentTypeError, ArgumentValueError, KernelRuntimeError, user_loc
from ..ir import expr as E
from ..ir.graph import iter_ops
from .execute import LoweredExecutor
from .reference import ReferenceExecutor
from . import verify_log
from .verify_data import describe_goldens, verify_datas


class PassVerifyError(KernelRuntimeError):
    """A compile stage computes different numbers than the Tensor Graph reference."""


@dataclass(frozen=True)
class StageResult:
    stage: str
    passes: str
    ok: bool
    max_abs_diff: float
    first_bad_op: str | None = None


def _close(a, b, rtol, atol):
    """(ok, max |diff|) of the result ``a`` against the expected ``b``, by pass verify's rule.

    Integers and booleans must be equal. Floating values follow upstream's precision check: an
    element is *off* when ``|a - b| > rtol * (|a| + |b|) / 2 + atol`` and *wrong* when the difference
    is more than 128 times that bound (or a NaN/inf that the other side does not have). They match
    when nothing is wrong and at most a few elements are off: ``n * min(rtol, atol)`` of the ``n``
    elements that are not zero on both sides, or, when that rounds to 0, ``min(16, isqrt(n) // 2)``.
    So one rounding step that a cancellation magnifies passes; a wrong value does not.
    """
    if a.shape != b.shape:
        return False, float("inf")
    if not a.numel():
        return True, 0.0
    if a.dtype in (torch.bool,) or not a.dtype.is_floating_point:
        diff = (a.to(torch.int64) - b.to(torch.int64)).abs().max().item()
        return diff == 0, float(diff)
    av, bv = a.double(), b.double()
    finite = torch.isfinite(av) & torch.isfinite(bv)
    same_special = (av == bv) | (torch.isnan(av) & torch.isnan(bv))
    if not bool((finite | same_special).all()):
        return False, float("inf")
    av, bv = torch.where(finite, av, 0.0), torch.where(finite, bv, 0.0)
    diff = (av - bv).abs()
    magnitude = av.abs() + bv.abs()
    bound = magnitude * (rtol / 2) + atol
    if bool((diff > bound * 128).any()):
        return False, float(diff.max())
    counted = int((magnitude > 0).sum())
    allowed = int(counted * min(rtol, atol)) or min(16, math.isqrt(counted) // 2)
    return int((diff > bound).sum()) <= allowed, float(diff.max())


def _outputs(tensors, written, returns):
    return [t for t, w in zip(tensors, written) if w] + list(returns or [])


def verify(compiled, tensors, env, options, real_run):
    """Run the stages; returns the results of ``real_run`` (the call itself) and the report.

    A version compiled only up to a stage (``host_options["compile_stage"]``) has no executor: its
    passes are verified on a full lowering made for the purpose, which also stands for the call."""
    executor = compiled.executor
    if executor is None:
        if getattr(compiled, "verify_executor", None) is None:
            from ..passes.pipeline import lower

            compiled.verify_executor = LoweredExecutor(lower(compiled.program, options, stop_at_stage=False)[0],
                                                       options)
        executor = compiled.verify_executor
        real_run = lambda: executor.run(tensors, env, options)  # noqa: E731
    if executor.check_sizes is not None:  # before the reference runs on mismatched sizes
        executor.check_sizes(env)
    rtol, atol = options.get("verify", "pass_verify_error_tol")
    program = compiled.program
    written = [p.value.id in executor.lowered.written_params for p in program.params]
    ref = ReferenceExecutor(program)
    ref_inputs = [t.clone() for t in tensors]
    ref_returns = ref.run(ref_inputs, env)
    expected = _outputs(ref_inputs, written, ref_returns)
    report = []

    if getattr(compiled, "verify_lowered", None) is None:
        from ..passes.pipeline import lower

        compiled.verify_lowered = lower(program, options, fuse=False, stop_at_stage=False)[0]
    tile_exec = LoweredExecutor(compiled.verify_lowered, options)
    originals = [t.clone() for t in tensors]  # the inputs as given: a mismatch is bisected on them
    tile_inputs = [t.clone() for t in tensors]
    tile_returns = tile_exec.run(tile_inputs, env, options)
    report.append(_compare("tile", "expand, assign_memory", expected,
                           _outputs(tile_inputs, written, tile_returns), rtol, atol, program, ref, tile_exec))

    results = real_run()
    got = _outputs(tensors, written, results)
    report.append(_compare("block/execute", "partition, dedup+allocate_buffers, execute_graph, codegen", expected,
                           got, rtol, atol, program, ref, executor))
    goldens = _pending["goldens"]
    if goldens is not None:
        _pending["goldens"] = None  # they belong to this call only
        verify_datas.reset()
        report.append(_compare_goldens(goldens, tensors, program, rtol, atol))
    verify_log.record(compiled.name, report, rtol, atol)
    for r in report:
        if not r.ok:
            against = "the goldens of set_verify_golden_data" if r.stage == "golden" else "the tensor-graph reference"
            bisection = _bisect(compiled, originals, env, options) if r.stage != "golden" else None
            err = PassVerifyError(
                f"pass verify: the {r.stage} stage ({r.passes}) diverges from {against}"
                + (f" first at {r.first_bad_op}" if r.first_bad_op else "") + _culprit_text(bisection),
                expected=f"results within rtol={rtol}, atol={atol}", got=f"max |diff| {r.max_abs_diff:.3g}",
                param="verify_options['enable_pass_verify']")
            err.bisection = bisection
            raise err
    compiled.bisection = None  # this call's numbers matched: an older bisection no longer applies
    return results, report


def _bisect(compiled, tensors, env, options):
    """The pass bisection of a mismatch (`pass_bisect.py`), kept on ``compiled`` for the lab;
    None when it cannot be made (the verify error stands on its own)."""
    from .pass_bisect import bisect

    try:
        compiled.bisection = bisect(compiled, tensors, env, options)
    except Exception:  # noqa: BLE001 - a bisection that fails must not hide the mismatch itself
        compiled.bisection = None
    return compiled.bisection


def _culprit_text(bisection) -> str:
    if bisection is None or bisection.ok:
        return ""
    value = bisection.first_bad_value
    return (f"; the first pass whose program gives other numbers: {' or '.join(bisection.suspects)}"
            + (f" ({value.where})" if value is not None else "") + " (pypto.bisect_passes)")


_pending = {"goldens": None, "in_out": None}


def set_verify_golden_data(in_out_tensors=None, goldens=None) -> None:
    """Reference results for the next call verified with ``verify_options`` ``enable_pass_verify``:
    ``goldens`` has one entry per kernel argument, in order, None where nothing is compared
    (inputs); each other entry (a CPU torch tensor or a ``pypto.from_torch`` tensor) must match
    what the call leaves in that argument. ``in_out_tensors`` (upstream's actual arguments of an
    explicit ``pypto.function`` run) is accepted and checked; the arguments of the call are used."""
    loc = user_loc(2)
    if goldens is not None:
        _pending["goldens"] = [_cpu_tensor(g, f"goldens[{i}]", loc) for i, g in enumerate(goldens)]
        describe_goldens(_pending["goldens"])
    if in_out_tensors is not None:
        _pending["in_out"] = [_cpu_tensor(t, f"in_out_tensors[{i}]", loc) for i, t in enumerate(in_out_tensors)]


def _cpu_tensor(t, where: str, loc):
    from ..frontend.host_tensor import host_data

    if t is None:
        return None
    t = host_data(t)
    if not isinstance(t, torch.Tensor):
        raise ArgumentTypeError(f"set_verify_golden_data: {where} is not a tensor", expected="a CPU torch.Tensor or None",
                                got=type(t).__name__, param=where, loc=loc)
    if not t.is_cpu:
        raise ArgumentValueError(f"set_verify_golden_data: {where} is on device {t.device}",
                                 expected="a CPU tensor (call .cpu() first)", got=str(t.device), param=where, loc=loc)
    return t


def _compare_goldens(goldens, tensors, program, rtol, atol) -> StageResult:
    if len(goldens) != len(tensors):
        raise ArgumentValueError("set_verify_golden_data: one golden per kernel argument",
                                 expected=f"{len(tensors)} entries ({', '.join(p.name for p in program.params)})",
                                 got=f"{len(goldens)} entries", param="goldens")
    worst, bad = 0.0, None
    for param, have, want in zip(program.params, tensors, goldens):
        if want is None:
            continue
        if want.numel() != have.numel():
            raise ArgumentValueError(f"set_verify_golden_data: the golden of '{param.name}' has another size",
                                     expected=f"{have.numel()} elements {list(have.shape)}",
                                     got=f"{want.numel()} elements {list(want.shape)}", param="goldens")
        good, diff = _close(have.reshape(-1), want.reshape(-1).to(have.dtype), rtol, atol)
        worst = max(worst, diff)
        if not good and bad is None:
            bad = f"argument '{param.name}'"
    return StageResult("golden", "the user's goldens (set_verify_golden_data)", bad is None, worst, bad)


def _compare(stage, passes, expected, got, rtol, atol, program, ref, executor) -> StageResult:
    worst, ok = 0.0, True
    for a, b in zip(got, expected):
        good, diff = _close(a, b, rtol, atol)
        ok = ok and good
        worst = max(worst, diff)
    if ok:
        return StageResult(stage, passes, True, worst)
    return StageResult(stage, passes, False, worst, _first_bad_op(program, ref, executor, rtol, atol))


def _first_bad_op(program, ref, executor, rtol, atol):
    """The first op (program order) whose materialised result differs from the reference."""
    memory = getattr(executor, "last_memory", None)
    if memory is None:
        return None
    for op in iter_ops(program.body):
        if op.kind in ("view", "assemble"):
            continue
        for v in op.outputs:
            want = ref.last_values.get(v.id)
            have = memory.last_instance(v)
            if want is None or have is None:
                continue
            have = have[tuple(slice(0, n) for n in want.shape)]
            good, _ = _close(have, want, rtol, atol)
            if not good:
                where = f" ({op.loc})" if op.loc else ""
                return f"op {op.kind} -> %{v.name}{where}"
    return None


__all__ = ["verify", "PassVerifyError", "StageResult", "set_verify_golden_data", "E"]
