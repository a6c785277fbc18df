"""AutoCast: bf16 vector math goes through fp32 (the A2/A3 vector unit has no bf16 arithmetic).

Each vector op that computes in fp32 and reads bf16 gets explicit casts: bf16 -> fp32 before,
fp32 -> bf16 after. The numbers are those of the reference semantics, now visible in the graph.
"""

from __future__ import annotations

from dataclasses import replace
from types import MappingProxyType

from ..dtypes import DT_BF16, DT_FP32
from ..ir.graph import Block, Branch, Op
from ..ops.registry import REGISTRY

_SKIP = {"cast", "view", "assemble", "reshape", "tensor", "full", "clone", "concat", "transpose", "expand_clone"}


def autocast(program, new_id, new_value):
    def cast(v, dt, loc, tiles):
        out = new_value(dt, v.shape, v.valid_shape, f"{v.name}_{dt.short}")
        return out, Op(new_id(), "cast", (v,), (out,), MappingProxyType({"dtype": dt, "mode": 0, "satmode": 0}),
                       tiles, loc)

    def rewrite(op):
        d = REGISTRY[op.kind]
        if op.kind in _SKIP or d.kind != "vector" or not d.fp32_math \
                or not any(v.dtype is DT_BF16 for v in op.inputs):
            return [op]
        pre, ins = [], []
        for v in op.inputs:
            if v.dtype is DT_BF16:
                nv, c = cast(v, DT_FP32, op.loc, op.tiles)
                pre.append(c)
                ins.append(nv)
            else:
                ins.append(v)
        outs, post = [], []
        for v in op.outputs:
            if v.dtype is DT_BF16:
                wide = new_value(DT_FP32, v.shape, v.valid_shape, f"{v.name}_fp32")
                outs.append(wide)
                post.append(Op(new_id(), "cast", (wide,), (v,),
                               MappingProxyType({"dtype": DT_BF16, "mode": 0, "satmode": 0}), op.tiles, op.loc))
            else:
                outs.append(v)
        return pre + [replace(op, inputs=tuple(ins), outputs=tuple(outs))] + post

    def region(r):
        if isinstance(r, Branch):
            return Branch(r.cond, region(r.then), region(r.orelse), r.loc)
        items = []
        for item in r.items:
            if isinstance(item, Op):
                items.extend(rewrite(item))
            else:
                items.append(replace(item, bodies=tuple(region(b) for b in item.bodies)))
        return Block(tuple(items), r.returns)

    return replace(program, body=region(program.body))
