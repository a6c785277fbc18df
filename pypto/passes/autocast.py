"""AutoCast: half-precision vector math the A2/A3 vector unit cannot do goes through fp32.

As upstream's AutoCast pass:

* every vector op that reads bf16 and computes in fp32 (the A2/A3 vector unit has no bf16
  arithmetic), and fp16 add / sub / mul (tensor or scalar operand), fmod and index_add (no fp16
  form either), gets explicit casts: half -> fp32 before, fp32 -> half after;
* then a value cast to half only to be cast back to fp32 by the next such op skips the round
  trip: the consumer reads the fp32 value, so a chain of these ops keeps fp32 intermediates and
  rounds once, where its result leaves the chain (a kernel output, a matmul operand, an op that
  has a half form). The half copy is still made where anything else reads it.

Other fp16 ops compute natively in fp16 on the device; here they compute in fp32 and round their
result, which is the same correctly rounded value.
"""

from __future__ import annotations

from dataclasses import replace
from types import MappingProxyType

from ..dtypes import DT_BF16, DT_FP16, DT_FP32
from ..ir.graph import Block, Branch, Loop, Op
from ..ops.registry import REGISTRY

# Whether a cast back to fp32 right after an inserted cast to half is skipped (upstream's
# RemoveRedundantCastChain: a chain keeps fp32 and rounds once, other readers get the rounded copy,
# so one half tensor can be read as two values). False rounds at every op, as torch does: the
# differential fuzzer's oracle compiles a failing program again so to tell a difference that is
# only this rule from a wrong number (tests/fuzz/oracle.py). Read when a kernel compiles.
SKIP_ROUND_TRIPS = True

_SKIP = {"cast", "view", "view_dtype", "assemble", "reshape", "tensor", "full", "clone", "concat", "transpose", "expand_clone"}
# the ops the A2/A3 vector unit has no fp16 form of (upstream's list, in this package's op names)
FP16_IN_FP32 = frozenset({"add", "sub", "mul", "fmod", "index_add"})


def _widened(op) -> set:
    """The half dtypes whose operands ``op`` reads through fp32 casts."""
    d = REGISTRY[op.kind]
    if op.kind in _SKIP or d.kind != "vector":
        return set()
    out = set()
    if d.fp32_math:
        out.add(DT_BF16)
    if op.kind in FP16_IN_FP32:
        out.add(DT_FP16)
    return out


def autocast(program, new_id, new_value):
    inserted: set = set()  # ids of the casts made here

    def cast(v, dt, loc, tiles, src=None, dst=None, scope=None):
        if dst is None:
            dst = new_value(dt, v.shape, v.valid_shape, f"{v.name}_{dt.short}")
        op = Op(new_id(), "cast", (src or v,), (dst,), MappingProxyType({"dtype": dt, "mode": 0, "satmode": 0}),
                tiles, loc, scope)  # in the scope of the op it serves: it fuses with it
        inserted.add(op.id)
        return dst, op

    def rewrite(op):
        wide = _widened(op)
        if not wide or not any(v.dtype in wide for v in op.inputs):
            return [op]
        pre, ins, done = [], [], {}
        for v in op.inputs:
            if v.dtype in wide:
                if v.id not in done:  # one cast per distinct operand
                    nv, c = cast(v, DT_FP32, op.loc, op.tiles, scope=op.scope)
                    pre.append(c)
                    done[v.id] = nv
                ins.append(done[v.id])
            else:
                ins.append(v)
        outs, post = [], []
        for v in op.outputs:
            if v.dtype in wide:
                w = new_value(DT_FP32, v.shape, v.valid_shape, f"{v.name}_fp32")
                outs.append(w)
                post.append(cast(w, v.dtype, op.loc, op.tiles, src=w, dst=v, scope=op.scope)[1])
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

    program = replace(program, body=region(program.body))
    return skip_round_trips(program, inserted) if SKIP_ROUND_TRIPS else program


def skip_round_trips(program, inserted: set):
    """Drop the inserted ``fp32 -> half -> fp32`` round trips (see the module docstring)."""
    narrowed: dict = {}  # half value id -> (its fp32 source, path of the block that made it)
    rename: dict = {}  # value id -> the value to read instead
    dropped: set = set()

    def scan(r, path):
        if isinstance(r, Branch):
            scan(r.then, path + ("then",))
            scan(r.orelse, path + ("else",))
            return
        for k, item in enumerate(r.items):
            if isinstance(item, Loop):
                for j, body in enumerate(item.bodies):
                    scan(body, path + (k, j))
            elif item.id in inserted:
                src, dst = item.inputs[0], item.outputs[0]
                if dst.dtype is DT_FP32:  # a cast in: skip it when its half input came from fp32 here
                    made = narrowed.get(src.id)
                    if made is not None and path[:len(made[1])] == made[1]:
                        rename[dst.id] = made[0]
                        dropped.add(item.id)
                else:
                    narrowed[dst.id] = (src, path)

    scan(program.body, ())
    if not rename:
        return program
    used: set = set()

    def apply(r):
        if isinstance(r, Branch):
            return Branch(r.cond, apply(r.then), apply(r.orelse), r.loc)
        items = []
        for item in r.items:
            if isinstance(item, Loop):
                items.append(replace(item, bodies=tuple(apply(b) for b in item.bodies)))
            elif item.id not in dropped:
                if any(v.id in rename for v in item.inputs):
                    item = replace(item, inputs=tuple(rename.get(v.id, v) for v in item.inputs))
                used.update(v.id for v in item.inputs)
                items.append(item)
        returns = r.returns
        if returns:
            returns = tuple(rename.get(v.id, v) for v in returns)
            used.update(v.id for v in returns)
        return Block(tuple(items), returns)

    def prune(r):  # half copies nobody reads any more
        if isinstance(r, Branch):
            return Branch(r.cond, prune(r.then), prune(r.orelse), r.loc)
        items = tuple(replace(item, bodies=tuple(prune(b) for b in item.bodies)) if isinstance(item, Loop) else item
                      for item in r.items
                      if not (isinstance(item, Op) and item.id in inserted and item.outputs[0].id not in used
                              and item.outputs[0].dtype is not DT_FP32))
        return Block(items, r.returns)

    return replace(program, body=prune(apply(program.body)))
