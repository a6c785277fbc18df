"""Pass verify: run each compile stage on copies of the inputs and compare it with the reference.

Stages, in pipeline order:
  * "tensor": the Tensor Graph run by the reference executor (the semantics everything is
    checked against);
  * "tile" (expand + assign_memory): the lowered program with fusion disabled, so every op's
    result goes through GM and can be compared op by op;
  * "block/execute" (partition, dedup, buffers, execute graph, codegen): the program that runs.
The first stage whose results diverge is reported with the first op whose output differs.
"""

from __future__ import annotations

from dataclasses import dataclass

from .._lazy import torch
from ..errors import KernelRuntimeError
from ..ir import expr as E
from ..ir.graph import iter_ops
from .execute import LoweredExecutor
from .reference import ReferenceExecutor


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
    if a.shape != b.shape:
        return False, float("inf")
    if a.dtype in (torch.bool,) or not a.dtype.is_floating_point:
        diff = (a.to(torch.int64) - b.to(torch.int64)).abs().max().item() if a.numel() else 0
        return diff == 0, float(diff)
    diff = (a.float() - b.float()).abs()
    bound = atol + rtol * b.float().abs()
    ok = bool((diff <= bound).all()) if a.numel() else True
    return ok, float(diff.max()) if a.numel() else 0.0


def _outputs(tensors, written, returns):
    return [t for t, w in zip(tensors, written) if w] + list(returns or [])


def verify(compiled, tensors, env, options, real_run):
    """Run the stages; returns the results of ``real_run`` (the call itself) and the report."""
    rtol, atol = options.get("verify", "pass_verify_error_tol")
    program = compiled.program
    written = [p.value.id in compiled.lowered.written_params for p in program.params]
    ref = ReferenceExecutor(program)
    ref_inputs = [t.clone() for t in tensors]
    ref_returns = ref.run(ref_inputs, env)
    expected = _outputs(ref_inputs, written, ref_returns)
    report = []

    if getattr(compiled, "verify_lowered", None) is None:
        from ..passes.pipeline import lower

        compiled.verify_lowered = lower(program, options, fuse=False)[0]
    tile_exec = LoweredExecutor(compiled.verify_lowered, options)
    tile_inputs = [t.clone() for t in tensors]
    tile_returns = tile_exec.run(tile_inputs, env, options)
    report.append(_compare("tile", "expand, assign_memory", expected,
                           _outputs(tile_inputs, written, tile_returns), rtol, atol, program, ref, tile_exec))

    results = real_run()
    got = _outputs(tensors, written, results)
    report.append(_compare("block/execute", "partition, dedup+allocate_buffers, execute_graph, codegen", expected,
                           got, rtol, atol, program, ref, compiled.executor))
    for r in report:
        if not r.ok:
            raise PassVerifyError(
                f"pass verify: the {r.stage} stage ({r.passes}) diverges from the tensor-graph reference"
                + (f" first at {r.first_bad_op}" if r.first_bad_op else ""),
                expected=f"results within rtol={rtol}, atol={atol}", got=f"max |diff| {r.max_abs_diff:.3g}",
                param="verify_options['enable_pass_verify']")
    return results, report


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


__all__ = ["verify", "PassVerifyError", "StageResult", "E"]
