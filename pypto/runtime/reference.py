"""The reference executor: walks the Tensor Graph with torch, one loop iteration at a time.

It is the living definition of the language's semantics. Runtime tensors hold the *valid* part of
each value, so tails need no special casing: slicing a view at the edge of its parent gives the
clipped tile, ops compute on it, and assemble writes back only what is valid.
"""

from __future__ import annotations


from ..errors import KernelRuntimeError, PyptoError
from ..ir import expr as E
from ..ir.graph import Branch, Loop, Op, Program, iter_ops, unbound_symbols
from ..ops.registry import REGISTRY

_HALF = ("torch.float16", "torch.bfloat16")  # compared by name: torch is imported lazily


class ReferenceExecutor:
    """Runs a `Program` on torch tensors. ``run(tensors, env)`` returns the kernel's results."""

    def __init__(self, program: Program):
        self.program = program
        self._defs = {op.id: REGISTRY[op.kind] for op in iter_ops(program.body)}
        self._out_dtypes = {op.id: tuple(v.dtype.torch() for v in op.outputs) for op in iter_ops(program.body)}
        written = set()
        for op in iter_ops(program.body):
            d = self._defs[op.id]
            if d.writes_input is not None:
                written.add(op.inputs[d.writes_input].root.id)
        self.written_params = tuple(p.index for p in program.params if p.value.id in written)
        self._param_pos = {p.value.id: i for i, p in enumerate(program.params)}
        self.symbol_defaults = dict.fromkeys(unbound_symbols(program), 0)  # user-named symbols read 0

    def run(self, tensors: list, env: dict, options=None):
        """Execute with the caller's ``tensors`` (in signature order) and dynamic sizes ``env``.

        Parameters the kernel writes are computed on copies and copied back only on success, so a
        failed run leaves the caller's tensors as they were.
        """
        params = self.program.params
        work = list(tensors)
        written = {params[i].value.id for i in range(len(params)) if params[i].index in self.written_params}
        for i, p in enumerate(params):
            if p.value.id in written:
                work[i] = tensors[i].clone()
        env = {**self.symbol_defaults, **env}
        state = _State(self, {p.value.id: work[i] for i, p in enumerate(params)}, env,
                       {p.value.name: work[i] for i, p in enumerate(params)})
        returns = state.region(self.program.body)
        self.last_values = state.values  # value id -> its last runtime tensor (for pass verify)
        for i, p in enumerate(params):
            if p.value.id in written:
                tensors[i].copy_(work[i])
        if returns is None:
            return None
        out = []
        for v in returns:
            if v.id in self._param_pos:
                out.append(tensors[self._param_pos[v.id]])
            else:
                t = state.values[v.id]
                out.append(t.clone() if t._base is not None else t)
        return out


class _State:
    __slots__ = ("ex", "values", "env", "params")

    def __init__(self, ex, values, env, params):
        self.ex, self.values, self.env, self.params = ex, values, env, params

    def load(self, param, indices):
        t = self.params[param]
        try:
            return int(t[tuple(indices)])
        except IndexError:
            raise KernelRuntimeError(f"element read out of range: {param}{list(indices)}",
                                     expected=f"indices within {list(t.shape)}", got=list(indices)) from None

    def ev(self, x):
        if isinstance(x, E.Expr):
            return E.evaluate(x, self.env, self.load)
        if isinstance(x, tuple):
            return tuple(self.ev(i) for i in x)
        return x

    def region(self, region):
        while isinstance(region, Branch):
            region = region.then if self.ev(region.cond) else region.orelse
        for item in region.items:
            if isinstance(item, Op):
                self.op(item)
            else:
                self.loop(item)
        return region.returns

    def loop(self, lp: Loop):
        start, stop = self.ev(lp.start), self.ev(lp.stop)
        remaining = max(0, -(-(stop - start) // lp.step))
        cur = start
        for factor, body in zip(lp.factors, lp.bodies):
            for _ in range(remaining // factor):
                self.env[lp.index] = cur
                self.region(body)
                cur += lp.step * factor
            remaining %= factor

    def op(self, op: Op):
        d = self.ex._defs[op.id]
        ins = [self.values[v.id] for v in op.inputs]
        if d.fp32_math:
            ins = [t.float() if str(t.dtype) in _HALF else t for t in ins]
        try:
            out = d.compute(ins, op.attrs, self.ev)
        except PyptoError as e:
            raise e.with_loc(op.loc)
        except Exception as e:  # a torch failure inside an op: report it at the kernel line
            raise KernelRuntimeError(f"pypto.{op.kind} failed at run time: {e}", loc=op.loc) from e
        outs = out if isinstance(out, tuple) else (out,)
        for v, t, want in zip(op.outputs, outs, self.ex._out_dtypes[op.id]):
            self.values[v.id] = t if t.dtype == want else t.to(want)
