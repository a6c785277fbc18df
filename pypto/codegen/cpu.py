"""The executable form of a leaf function: generated Python over torch.

A leaf runs for a batch of tile instances at once (they run in parallel on the simulated cores
anyway): every loaded tile has a leading batch dim, so ``[n, 32, 64]`` holds n tiles of 32x64.
The generated function takes the loaded GM inputs and returns the tiles to store; op semantics
come from each op's registered reference compute, with dims shifted past the batch dim.
"""

from __future__ import annotations

import math
from types import MappingProxyType

from ..ops.registry import REGISTRY
from ..passes.expand import WHOLE
from .._lazy import torch

_HALF = ("torch.float16", "torch.bfloat16")


def shift_attrs(attrs) -> dict:
    """Op attrs for batched tiles: dims move past the leading batch dim."""
    out = dict(attrs)
    if "dim" in out:
        out["dim"] = out["dim"] + 1
    if "dims" in out:
        out["dims"] = tuple(d + 1 for d in out["dims"])
    if "bcast" in out:
        out["bcast"] = tuple((False,) + tuple(f) for f in out["bcast"])
    return out


def _apply(kind, ins, attrs, ev, out_dtypes):
    d = REGISTRY[kind]
    if d.fp32_math:
        ins = [t.float() if str(t.dtype) in _HALF else t for t in ins]
    res = d.compute(ins, attrs, ev)
    res = res if isinstance(res, tuple) else (res,)
    return tuple(r if r.dtype == dt else r.to(dt) for r, dt in zip(res, out_dtypes))


def _pad_rank(x, rank):
    """Insert size-1 dims after the batch dim so a lower-rank operand broadcasts like numpy."""
    while x.dim() < rank + 1:
        x = x.unsqueeze(1)
    return x


def _full(n, shape, value, dtype):
    return torch.full((n, *shape), value, dtype=dtype)


def _expand(x, shape):
    size = [x.shape[0]] + [s if x.shape[k + 1] == 1 else x.shape[k + 1] for k, s in enumerate(shape)]
    return x.expand(size).clone()


def _per_instance(kind, x, attrs, ev, out_dtype):
    return torch.stack([_apply(kind, [x[i]], attrs, ev, (out_dtype,))[0] for i in range(x.shape[0])])


def _whole(kind, ins, attrs, ev, out_dtypes, n):
    """A whole-tensor (GM->GM) op, one instance at a time, with its unshifted attrs."""
    res = [_apply(kind, [x[i] for x in ins], attrs, ev, out_dtypes) for i in range(n)]
    return tuple(torch.stack([r[k] for r in res]) for k in range(len(out_dtypes)))


RUNTIME = {"_apply": _apply, "_pad_rank": _pad_rank, "_full": _full, "_expand": _expand,
           "_per_instance": _per_instance, "_whole": _whole, "torch": torch}


def generate(leaf, variant: str = "") -> tuple[str, dict]:
    """(Python source, its constants) of the executable form of ``leaf``."""
    lines = [f"def {leaf.name}{'_' + variant if variant else ''}(P, ev, n):",
             f"    \"\"\"{leaf.core} leaf {leaf.name}{' (' + variant + ' variant)' if variant else ''}: "
             f"P[i] is the batch of tiles of GM param i.\"\"\"",
             "    out = {}"]
    consts: dict = {}
    local: dict = {}

    def buf(a):
        key = a.local_key
        if key not in local:
            local[key] = f"{a.mem.lower()}{len(local)}_{a.value.name}".replace(".", "_")
        return local[key]

    def src(op, role, k, a):
        p = leaf.param_of.get((i, role, k))
        return f"P[{p}]" if p is not None else buf(a)

    for i, op in enumerate(leaf.ops):
        ins = [src(op, "in", k, a) for k, a in enumerate(op.inputs)]
        outs = [f"out[{leaf.param_of[(i, 'out', k)]}]" if (i, "out", k) in leaf.param_of else buf(a)
                for k, a in enumerate(op.outputs)]
        kind = op.kind
        dts = tuple(a.value.dtype.torch() for a in op.outputs)
        if kind in ("copy_in", "copy_out", "l1_to_l0a", "l1_to_l0b"):
            lines.append(f"    {outs[0]} = {ins[0]}  # {kind}: {op.inputs[0].mem} -> {op.outputs[0].mem}")
            continue
        aname = f"A{i}"
        consts[aname] = MappingProxyType(dict(op.attrs) if kind in WHOLE else shift_attrs(op.attrs))
        consts[f"D{i}"] = dts
        rank = len(op.outputs[0].shape)
        if kind in ("full", "tensor"):
            consts[f"S{i}"] = op.outputs[0].shape
            value = "ev(A%d['value'])" % i if kind == "full" else "0"
            lines.append(f"    {outs[0]} = _full(n, ev(S{i}), {value}, D{i}[0])")
        elif kind == "expand_clone":
            consts[f"S{i}"] = op.outputs[0].shape
            lines.append(f"    {outs[0]} = _expand(_pad_rank({ins[0]}, {rank}), ev(S{i})).to(D{i}[0])")
        elif kind in WHOLE:  # reshape, gather ...: per instance on the whole (valid) tensors
            target = ", ".join(outs) + ("," if len(outs) == 1 else "")
            lines.append(f"    {target} = _whole({kind!r}, [{', '.join(ins)}], {aname}, ev, D{i}, n)")
        else:
            padded = ", ".join(f"_pad_rank({x}, {rank})" if len(a.shape) < rank else x
                               for x, a in zip(ins, op.inputs))
            target = ", ".join(outs) + ("," if len(outs) == 1 else "")
            lines.append(f"    {target} = _apply({kind!r}, [{padded}], {aname}, ev, D{i})")
    lines.append("    return out")
    return "\n".join(lines) + "\n", consts


def compile_leaf(leaf, variant: str = ""):
    """(source, callable) of the executable form."""
    source, consts = generate(leaf, variant)
    namespace = dict(RUNTIME)
    namespace.update(consts)
    code = compile(source, f"<pypto leaf {leaf.name}{'.' + variant if variant else ''}>", "exec")
    exec(code, namespace)  # noqa: S102 - our own generated code
    return source, namespace[f"{leaf.name}{'_' + variant if variant else ''}"]


def nbytes(shape, dtype) -> int:
    return math.prod(shape) * dtype.itemsize
