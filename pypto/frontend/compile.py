"""From a traced program to a runnable `CompiledKernel`, and one run of it.

Shared by ``pypto.function`` (and usable by any front end that traces a `Program`): the trace
snapshot, the pass pipeline, the executor and the optional pass dump, then a run with the
options of the call, through pass verification when ``verify_options`` asks for it.
"""

from __future__ import annotations

import time

from ..ir.dot_lower import tensor_dot
from ..ir.printer import format_program
from ..passes.dump import dump_compiled
from ..passes.pipeline import lower
from ..record import CompiledKernel, PassSnapshot
from ..runtime.execute import LoweredExecutor
from ..runtime.verify import verify


def compile_program(program, name: str, key, key_text: str, opts, returns, trace_seconds: float) -> CompiledKernel:
    """Lower ``program`` with the resolved options ``opts``; every stage is kept on the result."""
    t0 = time.perf_counter()
    snapshot = PassSnapshot("trace", "tensor", format_program(program), trace_seconds, program, tensor_dot)
    lowered, stages = lower(program, opts)
    compiled = CompiledKernel(name, key, key_text, program, [snapshot] + stages, opts, 0.0, returns=returns)
    compiled.source = lowered.sources
    compiled.lowered = lowered
    compiled.executor = LoweredExecutor(lowered, opts)
    compiled.compile_seconds = trace_seconds + time.perf_counter() - t0
    monitor_compile(compiled.compile_seconds, opts)
    compiled.dump_dir = dump_compiled(compiled, opts)  # debug_options: compile_debug_mode, dump_pass_graph
    return compiled


_monitor = {"total_elapsed": 0.0}


def monitor_compile(seconds: float, opts) -> None:
    """The compile monitor (``host_options['compile_monitor_enable']`` 1 or 2) keeps the total time
    of the compilation that finished last."""
    if opts.get("host", "compile_monitor_enable"):
        _monitor["total_elapsed"] = float(seconds)


def compile_monitor_total_elapsed() -> float:
    """Seconds the last monitored compilation took, tracing included (0.0 before any)."""
    return _monitor["total_elapsed"]


def run_compiled(compiled: CompiledKernel, tensors: list, env: dict, opts):
    """Run with the caller's tensors (written in place) and sizes: (results, verify report)."""
    if opts.get("verify", "enable_pass_verify"):
        return verify(compiled, tensors, env, opts, lambda: compiled.executor.run(tensors, env, opts))
    return compiled.executor.run(tensors, env, opts), None
