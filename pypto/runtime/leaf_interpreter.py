"""A leaf function run op by op from its Block Graph, without the generated code.

`codegen/cpu.py` turns a leaf into Python source with a few economies (an op computed into its
first operand, into the output's GM view or into the tile kept from the previous call; buffers
deleted after their last use). The interpreter here runs the same ops with the same reference
semantics (`OpDef.compute`) and none of those economies: every op makes a fresh tensor. Pass
bisection (`runtime/pass_bisect.py`) runs the programs of the passes before code generation
with it, so that their numbers do not depend on the code generator they precede.
"""

from __future__ import annotations

from functools import partial
from types import MappingProxyType

from ..ops.registry import REGISTRY
from ..codegen.cpu import CREATES, MOVES, RUNTIME, shift_attrs
from ..passes.expand import WHOLE

_HALF = ("fp16", "bf16")


class LeafInterpreter:
    """Stands where `codegen.cpu.LeafExecutable` stands: ``for_batch(nb)`` is a function
    ``(P, ev, B, S, O=None, W=None, M=None) -> {param index: result}`` that interprets ``leaf``'s ops."""

    def __init__(self, leaf):
        self.leaf = leaf
        self.name = leaf.name
        self._attrs = {}  # nb -> per-op attrs with dims moved past the batch dims

    def for_batch(self, nb: int):
        attrs = self._attrs.get(nb)
        if attrs is None:
            attrs = self._attrs[nb] = [MappingProxyType(dict(op.attrs) if op.kind in WHOLE else shift_attrs(op.attrs, nb))
                                       for op in self.leaf.ops]
        return partial(self._run, attrs)

    def __call__(self, P, ev, B, S=None):
        return self.for_batch(len(B))(P, ev, tuple(B), S or {})

    def _run(self, attrs, P, ev, B, S, O=None, W=None, M=None):  # noqa: ARG002 - O, W, M: the generated code's economies
        leaf = self.leaf
        param_of = leaf.param_of
        local, out = {}, {}
        nb = len(B)
        for i, op in enumerate(leaf.ops):
            ins = []
            for k, a in enumerate(op.inputs):
                p = param_of.get((i, "in", k))
                ins.append(P[p] if p is not None else local[a.local_key])
            results = _compute(op, i, ins, attrs[i], ev, B, S, nb)
            for k, (a, r) in enumerate(zip(op.outputs, results)):
                p = param_of.get((i, "out", k))
                if p is not None:
                    out[p] = r
                else:
                    local[a.local_key] = r
        return out


def _compute(op, i, ins, attrs, ev, B, S, nb) -> tuple:
    kind = op.kind
    if kind in MOVES:  # a data move keeps the values
        return (ins[0],)
    dts = tuple(a.value.dtype.torch() for a in op.outputs)
    if kind in ("full", "tensor"):
        value = ev(attrs["value"]) if kind == "full" else 0
        return (RUNTIME["_full"](B, S[i], value, dts[0]),)
    rank = len(op.outputs[0].shape)
    if kind == "expand_clone":
        return (RUNTIME["_expand"](RUNTIME["_pad_rank"](ins[0], rank, nb), B, S[i]).to(dts[0]),)
    d = REGISTRY[kind]
    if kind == "reshape":
        return RUNTIME["_reshape_batch"](d.compute, ins[0], attrs, ev, dts, B)
    if kind in WHOLE:
        return RUNTIME["_whole"](d.compute, ins, attrs, ev, dts, B)
    args = []
    for x, a in zip(ins, op.inputs):
        if len(a.shape) < rank:
            x = RUNTIME["_pad_rank"](x, rank, nb)
        if d.fp32_math and a.value.dtype.short in _HALF:
            x = x.float()
        args.append(x)
    r = d.compute(args, attrs, ev)
    rs = r if isinstance(r, tuple) else (r,)
    assert kind not in CREATES
    return tuple(t if t.dtype is dt else t.to(dt) for t, dt in zip(rs, dts))


__all__ = ["LeafInterpreter"]
