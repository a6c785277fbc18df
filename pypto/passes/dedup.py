"""SubgraphToFunction: one leaf function per isomorphism class of subgraphs.

Two subgraphs are isomorphic when they run the same ops on tiles of the same shapes, dtypes and
memory levels; they then share one leaf and differ only in their GM arguments (tensor, offsets,
valid extents), which each call passes at run time.
"""

from __future__ import annotations

import hashlib
from types import MappingProxyType

from ..ir import expr as E
from ..ir.tile import LeafFunction
from .buffers import allocate


def _canon(v):
    if isinstance(v, dict) or isinstance(v, MappingProxyType):
        return tuple(sorted((k, _canon(x)) for k, x in v.items()))
    if isinstance(v, (tuple, list)):
        return tuple(_canon(x) for x in v)
    if isinstance(v, E.Expr):
        return ("expr", E.render(v))
    if hasattr(v, "short"):
        return v.short
    return v


def leaf_signature(sg):
    """(structural key, GM params, param_of) of a subgraph."""
    local_ids: dict = {}
    params, param_of, key = [], {}, []

    def local(a):
        k = a.local_key
        if k not in local_ids:
            local_ids[k] = len(local_ids)
        return ("L", local_ids[k], a.mem, a.value.dtype.short, _canon(a.shape))

    for i, op in enumerate(sg.ops):
        ins, outs = [], []
        for role, accs, dst in (("in", op.inputs, ins), ("out", op.outputs, outs)):
            for k, a in enumerate(accs):
                if a.mem == "GM":
                    param_of[(i, role, k)] = len(params)
                    params.append((role, a.value.dtype, a.shape))
                    dst.append(("P", len(params) - 1, a.value.dtype.short, _canon(a.shape), a.axis))
                else:
                    dst.append(local(a))
        attrs = {k: v for k, v in op.attrs.items()}
        key.append((op.kind, tuple(ins), tuple(outs), _canon(attrs)))
    return (sg.core, len(sg.grid), tuple(key)), tuple(params), param_of


def dedup(subgraphs, registry: dict, machine) -> list:
    """The leaf function of each subgraph; ``registry`` (key -> leaf) is shared by the kernel."""
    leaves = []
    for sg in subgraphs:
        key, params, param_of = leaf_signature(sg)
        leaf = registry.get(key)
        if leaf is None:
            digest = hashlib.sha1(repr(key).encode()).hexdigest()[:10]
            kinds = "_".join(dict.fromkeys(o.kind for o in sg.ops if not o.kind.startswith(("copy", "l1_"))))
            name = f"leaf{len(registry)}_{kinds or 'copy'}"[:48]
            leaf = allocate(LeafFunction(name, sg.core, sg.ops, params, MappingProxyType(param_of), (), digest,
                                         len(sg.grid)), machine)
            registry[key] = leaf
        leaves.append(leaf)
    return leaves
