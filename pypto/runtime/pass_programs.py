"""The program each pass leaves, made runnable for pass bisection (`runtime/pass_bisect.py`).

* a Tensor Graph: the reference executor on it;
* a Tile Graph: before assign_memory, every op a leaf of its own (no memory is assigned: its
  operands are in GM); after it, the fused groups assign_memory made, one leaf each, in a valid
  order (on-chip tiles do not name a group: two groups each load their own copy of a tile);
* partition's subgraphs: one leaf each, nothing shared; dedup's leaves: the shared leaves at the
  subgraphs' call sites; the Execute Graph: its roots;
* code generation: the compiled program itself.

Every program but the last runs its leaves through `LeafInterpreter` (no generated code), so it
does not depend on the passes after it but for the Execute Graph's call sites and dependencies
(``passes/execute.build_root``) and the runtime. `through_gm` runs a program's tile ops once more
as one leaf each with their on-chip tiles kept in GM, so that every op's result can be compared.
"""

from __future__ import annotations

import hashlib
from dataclasses import replace
from types import MappingProxyType

from ..ir.graph import Program
from ..ir.tile import LeafFunction, RootFunction, Subgraph, TileOp, leaf_symbols
from .execute import LoweredExecutor
from .leaf_interpreter import LeafInterpreter
from .reference import ReferenceExecutor


def _private_leaf(sg, tag) -> LeafFunction:
    """A leaf of ``sg`` alone (no other subgraph shares it; no buffer plan: it is interpreted)."""
    from ..passes.dedup import leaf_signature

    key, params, param_of = leaf_signature(sg)
    digest = hashlib.sha1(repr(key).encode()).hexdigest()[:10]
    return LeafFunction(f"{tag}_sg{sg.id}", sg.core, sg.ops, params, MappingProxyType(param_of), (), digest,
                        len(sg.grid))


def _groups(ops) -> dict:
    """{op id: group} joining the ops that share a local (on-chip) tile."""
    parent = {op.id: op.id for op in ops}

    def find(x):
        while parent[x] != x:
            parent[x] = parent[parent[x]]
            x = parent[x]
        return x

    owner: dict = {}
    for op in ops:
        for a in op.inputs + op.outputs:
            if a.mem != "GM":
                k = a.local_key
                if k in owner:
                    parent[find(op.id)] = find(owner[k])
                else:
                    owner[k] = op.id
    return {op.id: find(op.id) for op in ops}


def _in_gm(op):
    """``op`` with the operands no memory is assigned to yet (before assign_memory) in GM."""
    if all(a.mem is not None for a in op.inputs + op.outputs):
        return op
    gm = lambda accs: tuple(a.in_mem("GM") if a.mem is None else a for a in accs)  # noqa: E731
    return op.replace(inputs=gm(op.inputs), outputs=gm(op.outputs))


def _roots_from_subgraphs(lowered, subgraphs_per_root, leaves_per_root, storage):
    from ..passes.execute import build_root

    return [build_root(f"root{i}", sgs, lv, None, None, storage)
            for i, (sgs, lv) in enumerate(zip(subgraphs_per_root, leaves_per_root))]


def _interpreted(lowered, roots) -> LoweredExecutor:
    from .plan import mergeable_axes

    leaves = {c.leaf.name: c.leaf for r in roots for c in r.calls}
    executables = {}
    for name, leaf in leaves.items():
        it = LeafInterpreter(leaf)
        executables[name] = {"main": it, "tail": it, "default": it}
    prog = replace(lowered, roots=list(roots), leaves=leaves, executables=executables, sources={},
                   leaf_symbols={n: leaf_symbols(leaf) for n, leaf in leaves.items()},
                   merge={n: mergeable_axes(leaf) for n, leaf in leaves.items()}, call_evals={})
    return prog


def storage_of(lowered) -> dict:
    from ..passes.aliasing import LayoutAliases

    return LayoutAliases(lowered.program, lowered.views).storage


def program_of(snap, index, lowered, storage, options):
    """(how it runs, an executor with ``run(tensors, env, options)``) for the program pass
    ``snap`` left; (why not, None) when there is no way to run it."""
    from ..passes.partition import partition

    g = snap.graph
    if snap.name == "codegen":
        return "the generated code (the program that runs)", LoweredExecutor(lowered, options)
    if isinstance(g, Program):
        return "reference executor on this Tensor Graph", ReferenceExecutor(g)
    if lowered is None:
        return "not run: this version was compiled only up to a stage", None
    n_roots = len(lowered.roots)
    if isinstance(g, (list, tuple)) and len(g) == n_roots and all(isinstance(x, (list, tuple)) for x in g):
        items = [x for seg in g for x in seg]
        if all(isinstance(x, TileOp) for x in items):  # a Tile Graph: its ops, in the pass's groups
            g = [[_in_gm(op) for op in ops] for ops in g]
            fused = snap.fused_groups or [_groups(ops) for ops in g]
            sgs = [partition(list(ops), groups, storage) for ops, groups in zip(g, fused)]
            leaves = [[_private_leaf(sg, f"p{index}r{i}") for sg in s] for i, s in enumerate(sgs)]
            how = ("its fused groups (assign_memory's), one leaf each, interpreted" if snap.fused_groups
                   else "tile ops joined by their local tiles, one leaf each, interpreted")
            return (how,
                    LoweredExecutor(_interpreted(lowered, _roots_from_subgraphs(lowered, sgs, leaves, storage)), options))
        if all(isinstance(x, Subgraph) for x in items):  # partition: a leaf per subgraph
            leaves = [[_private_leaf(sg, f"p{index}r{i}") for sg in s] for i, s in enumerate(g)]
            return ("one leaf per subgraph (nothing shared), interpreted",
                    LoweredExecutor(_interpreted(lowered, _roots_from_subgraphs(lowered, g, leaves, storage)), options))
    if isinstance(g, (list, tuple)) and g and all(isinstance(r, RootFunction) for r in g):
        return "the Execute Graph's roots, leaves interpreted", LoweredExecutor(_interpreted(lowered, g), options)
    if isinstance(g, dict) and all(isinstance(x, LeafFunction) for x in g.values()):
        # the leaves dedup made, at the call sites of the subgraphs they stand for
        by_sg = [{c.subgraph: c.leaf for c in r.calls} for r in lowered.roots]
        sgs = [list(r.subgraphs) for r in lowered.roots]
        if all(sg.id in m for s, m in zip(sgs, by_sg) for sg in s):
            leaves = [[m[sg.id] for sg in s] for s, m in zip(sgs, by_sg)]
            return ("the shared leaves at their subgraphs' call sites, interpreted",
                    LoweredExecutor(_interpreted(lowered, _roots_from_subgraphs(lowered, sgs, leaves, storage)), options))
    return f"not run: no interpreter for a {snap.level} graph of this form", None


def _at_call_site(leaf, sg, args=None) -> list:
    """The tile ops a call of ``leaf`` for subgraph ``sg`` runs: the leaf's ops (kinds and attrs,
    as executed) on the subgraph's tiles, the GM ones given by the call's ``args`` if any."""
    out = []
    for i, op in enumerate(leaf.ops):
        site = sg.ops[i] if i < len(sg.ops) else op

        def acc(role, k, a, site_accs):
            p = leaf.param_of.get((i, role, k))
            if p is not None and args is not None:
                return args[p]
            return site_accs[k] if k < len(site_accs) else a

        out.append(op.replace(inputs=tuple(acc("in", k, a, site.inputs) for k, a in enumerate(op.inputs)),
                              outputs=tuple(acc("out", k, a, site.outputs) for k, a in enumerate(op.outputs)),
                              grid=sg.grid))
    return out


def tile_ops_of(snap, lowered):
    """The tile ops (per root) the program of ``snap`` runs, or None (a Tensor Graph, the code)."""
    g = snap.graph
    if snap.name == "codegen" or isinstance(g, Program) or lowered is None:
        return None
    if isinstance(g, dict) and all(isinstance(x, LeafFunction) for x in g.values()):
        out = []
        for r in lowered.roots:
            by_sg = {c.subgraph: c.leaf for c in r.calls}
            out.append([op for sg in r.subgraphs if sg.id in by_sg for op in _at_call_site(by_sg[sg.id], sg)])
        return out
    if isinstance(g, (list, tuple)) and g and all(isinstance(r, RootFunction) for r in g):
        out = []
        for r in g:
            sgs = {sg.id: sg for sg in r.subgraphs}
            out.append([op for c in r.calls if c.subgraph in sgs for op in _at_call_site(c.leaf, sgs[c.subgraph], c.args)])
        return out
    if isinstance(g, (list, tuple)) and all(isinstance(x, (list, tuple)) for x in g):
        items = [x for seg in g for x in seg]
        if all(isinstance(x, TileOp) for x in items):
            return [list(seg) for seg in g]
        if all(isinstance(x, Subgraph) for x in items):
            return [[op for sg in seg for op in sg.ops] for seg in g]
    return None


def through_gm(ops_per_root, index, lowered, storage, options) -> LoweredExecutor:
    """Every tile op its own leaf, its on-chip tiles moved to GM: each op's result is kept, so the
    first op that goes wrong inside a fused leaf shows."""
    from ..passes.partition import partition

    ids = iter(range(-1, -10 ** 9, -1))  # fresh ids: a shared leaf's ops recur at every call site
    sgs = []
    for ops in ops_per_root:
        gm = []
        for op in ops:
            to_gm = lambda accs: tuple(a if a.mem == "GM" else a.in_mem("GM") for a in accs)  # noqa: E731
            gm.append(op.replace(id=next(ids), inputs=to_gm(op.inputs), outputs=to_gm(op.outputs)))
        sgs.append(partition(gm, {op.id: op.id for op in gm}, storage))
    leaves = [[_private_leaf(sg, f"m{index}r{i}") for sg in s] for i, s in enumerate(sgs)]
    return LoweredExecutor(_interpreted(lowered, _roots_from_subgraphs(lowered, sgs, leaves, storage)), options)


__all__ = ["program_of", "tile_ops_of", "through_gm", "storage_of"]
