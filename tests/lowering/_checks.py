"""Invariant checks of every lowering level, shared by the tests of tests/lowering.

Each ``check_*`` takes the snapshot graph of one pass (``CompiledKernel.passes``) and raises an
AssertionError naming the op that breaks the invariant. Symbolic sizes are evaluated under the
environments of the root instances of the last call (``root_envs``).
"""

from __future__ import annotations

import math

from pypto.ir import expr as E
from pypto.passes.execute import verify_root
from pypto.passes.expand import WHOLE
from pypto.passes.partition import verify_subgraphs

MOVES = ("copy_in", "copy_out", "l1_to_l0a", "l1_to_l0b")
# ops lowered as one GM -> GM op over whole tensors (Expander.whole: reshape, gather, scatter ...):
# the only compute ops that touch GM directly
GM_COMPUTE = tuple(WHOLE)


def snapshot(compiled, name):
    found = [p for p in compiled.passes if p.name == name]
    assert found, f"no pass snapshot {name!r} in {[p.name for p in compiled.passes]}"
    return found[-1]


def root_envs(compiled) -> dict:
    """{root index: [env, ...]} of the root instances of the last call (static kernels: [{}])."""
    envs = {i: [] for i in range(len(compiled.lowered.roots))}
    last = compiled.executor.last
    if last is not None:
        for dt in last[0]:
            for inst in dt.roots:
                envs[inst.root].append(dict(inst.env))
    for i, ops in enumerate(snapshot(compiled, "expand").graph):
        if not envs[i] and not _symbolic(ops):
            envs[i].append({})
    return envs


def _symbolic(ops) -> bool:
    for op in ops:
        for a in op.inputs + op.outputs:
            for x in tuple(a.shape) + tuple(a.base) + tuple(a.extent):
                if isinstance(x, E.Expr):
                    return True
        if any(isinstance(g, E.Expr) for g in op.grid):
            return True
    return False


def _ev(x, env) -> int:
    return int(E.evaluate(x, env))


def _accesses(op):
    return [("in", k, a) for k, a in enumerate(op.inputs)] + [("out", k, a) for k, a in enumerate(op.outputs)]


# ---- expand: Tensor Graph -> Tile Graph ---------------------------------------------------------

def check_expand(tile_ops_per_root, envs) -> int:
    """Every output tile grid covers its output exactly; every access axis names a grid dim.

    Returns the number of (op, env) pairs checked (so a test can insist something was checked).
    """
    checked = 0
    for r, ops in enumerate(tile_ops_per_root):
        for op in ops:
            for role, k, a in _accesses(op):
                assert len(a.shape) == len(a.base) == len(a.axis) == len(a.extent), \
                    f"{op.kind}: {role}{k} has ranks {a.shape}/{a.base}/{a.axis}/{a.extent}"
                for d, ax in enumerate(a.axis):
                    assert ax is None or 0 <= ax < len(op.grid), \
                        f"{op.kind}: {role}{k} dim {d} uses grid axis {ax} of a rank-{len(op.grid)} grid"
            for env in envs.get(r, []):
                grid = [_ev(g, env) for g in op.grid]
                for k, a in enumerate(op.outputs):
                    used = set()
                    for d, (s, ax, x) in enumerate(zip(a.shape, a.axis, a.extent)):
                        s_, x_ = _ev(s, env), _ev(x, env)
                        assert s_ >= 1, f"{op.kind}: out{k} has tile size {s_} in dim {d}"
                        if ax is None:
                            assert s_ >= x_, (f"{op.kind}: out{k} dim {d} is not tiled but its tile {s_} is "
                                              f"smaller than the extent {x_}")
                            continue
                        used.add(ax)
                        g = grid[ax]
                        assert g * s_ >= x_, (f"{op.kind}: out{k} dim {d}: grid {g} x tile {s_} does not "
                                              f"cover extent {x_}")
                        if isinstance(x, int):  # a static extent: no grid point past the edge
                            assert (g - 1) * s_ < x_ or (g == 1 and x_ == 0), \
                                f"{op.kind}: out{k} dim {d}: grid {g} x tile {s_} overshoots extent {x_}"
                    for ax, g in enumerate(grid):
                        assert g <= 1 or ax in used, (f"{op.kind}: grid axis {ax} (extent {g}) moves no dim "
                                                      f"of out{k}: several grid points write one tile")
                checked += 1
    return checked


def tail_extents(a, grid, env=None) -> list:
    """Valid extent per dim of access ``a`` at every grid point: {point: extents}."""
    env = dict(env or {})
    names = tuple(f"__g{i}" for i in range(len(grid)))
    exprs = a.valid_exprs(names)
    out = {}
    for point in _points(grid):
        env.update(dict(zip(names, point)))
        out[point] = tuple(_ev(x, env) for x in exprs)
    return out


def _points(grid):
    if not grid:
        yield ()
        return
    for i in range(grid[0]):
        for rest in _points(grid[1:]):
            yield (i,) + rest


# ---- assign_memory ------------------------------------------------------------------------------

def check_memory(ops_per_root) -> None:
    """Compute ops read UB (vector) or L0A/L0B (cube, bias from L1) and write UB/L0C; every GM
    access belongs to a copy (reshape excepted); the copies move between the right levels."""
    for ops in ops_per_root:
        for op in ops:
            mems_in = [a.mem for a in op.inputs]
            mems_out = [a.mem for a in op.outputs]
            assert None not in mems_in + mems_out, f"{op.kind}: an access has no memory level"
            if op.kind == "copy_in":
                assert mems_in == ["GM"], f"copy_in reads {mems_in}"
                assert mems_out == (["L1"] if op.core == "AIC" else ["UB"]), f"{op.core} copy_in writes {mems_out}"
            elif op.kind == "copy_out":
                assert mems_out == ["GM"], f"copy_out writes {mems_out}"
                assert mems_in in (["UB"], ["L0C"]), f"copy_out reads {mems_in}"
                assert (mems_in == ["L0C"]) == (op.core == "AIC"), f"{op.core} copy_out reads {mems_in}"
            elif op.kind in ("l1_to_l0a", "l1_to_l0b"):
                assert mems_in == ["L1"] and mems_out == ["L0A" if op.kind.endswith("a") else "L0B"], \
                    f"{op.kind}: {mems_in} -> {mems_out}"
            elif op.kind in GM_COMPUTE:
                assert set(mems_in + mems_out) == {"GM"}, f"{op.kind}: {mems_in} -> {mems_out}"
            elif op.core == "AIC":
                assert mems_in[:2] == ["L0A", "L0B"] and all(m == "L1" for m in mems_in[2:]), \
                    f"cube op {op.kind} reads {mems_in}"
                assert mems_out == ["L0C"] * len(mems_out), f"cube op {op.kind} writes {mems_out}"
            else:
                assert set(mems_in) <= {"UB"}, f"vector op {op.kind} reads {mems_in}"
                assert set(mems_out) == {"UB"}, f"vector op {op.kind} writes {mems_out}"
            if "GM" in mems_in + mems_out:
                assert op.kind in ("copy_in", "copy_out") + GM_COMPUTE, f"{op.kind} touches GM directly"


# ---- partition ----------------------------------------------------------------------------------

def check_partition(ops_per_root, subgraphs_per_root) -> None:
    """verify_subgraphs, one grid and core per subgraph, every op in one subgraph, subgraphs
    ordered by the GM conflicts of their ops, and no subgraph reads back a GM tensor it wrote."""
    for ops, sgs in zip(ops_per_root, subgraphs_per_root):
        verify_subgraphs(sgs)
        where = {}
        for n, sg in enumerate(sgs):
            assert sg.core in ("AIV", "AIC")
            for op in sg.ops:
                assert op.grid == sg.grid, f"subgraph {sg.id}: {op.kind} has grid {op.grid}, not {sg.grid}"
                assert op.core == sg.core, f"subgraph {sg.id} ({sg.core}) holds {op.kind} on {op.core}"
                assert op.id not in where, f"{op.kind} is in two subgraphs"
                where[op.id] = n
            written = set()
            for op in sg.ops:
                for a in op.inputs:
                    assert not (a.mem == "GM" and a.value.id in written), (
                        f"subgraph {sg.id}: {op.kind} reads %{a.value.name} from GM after the same "
                        f"subgraph wrote it: other grid points' tiles are not there yet")
                written |= {a.value.id for a in op.outputs if a.mem == "GM"}
        assert set(where) == {op.id for op in ops}, "partition lost or invented ops"
        touched = {}
        for op in ops:
            for a, w in [(a, False) for a in op.inputs] + [(a, True) for a in op.outputs]:
                if a.mem != "GM":
                    continue
                for other, ow in touched.get(a.value.id, ()):
                    if (w or ow) and where[other.id] != where[op.id]:
                        assert where[other.id] < where[op.id], (
                            f"{op.kind} on %{a.value.name} runs in subgraph {where[op.id]}, before "
                            f"{other.kind} (subgraph {where[other.id]}) that precedes it in program order")
                touched.setdefault(a.value.id, []).append((op, w))


# ---- dedup + buffers ----------------------------------------------------------------------------

def check_leaves(leaves: dict, machine) -> None:
    """Buffers of each leaf fit their level and never overlap while both are live."""
    for name, leaf in leaves.items():
        assert leaf.name == name
        for b in leaf.buffers:
            assert 0 <= b.offset and b.offset + b.nbytes <= machine.capacity(b.mem), f"{name}: {b} overflows"
            assert b.first <= b.last
        for i, b in enumerate(leaf.buffers):
            for c in leaf.buffers[i + 1:]:
                if b.mem != c.mem or b.last < c.first or c.last < b.first:
                    continue
                assert b.offset + b.nbytes <= c.offset or c.offset + c.nbytes <= b.offset, \
                    f"{name}: live buffers {b.name} and {c.name} overlap"


# ---- execute graph ------------------------------------------------------------------------------

def check_roots(roots, subgraphs_per_root) -> None:
    """verify_root, calls match their subgraphs, and every pair of calls touching one GM tensor
    (one of them writing) is ordered by a (transitive) dependency."""
    for root, sgs in zip(roots, subgraphs_per_root):
        verify_root(root)
        assert len(root.calls) == len(sgs)
        for call, sg in zip(root.calls, sgs):
            assert tuple(call.grid) == tuple(sg.grid) and call.leaf.core == sg.core
        reach = {j: set() for j in range(len(root.calls))}
        for i, j in sorted(root.deps, key=lambda e: e[1]):
            reach[j] |= {i} | reach[i]
        for j, cj in enumerate(root.calls):
            for i in range(j):
                ci = root.calls[i]
                ri = {a.value.id for k, a in enumerate(ci.args) if k not in ci.writes}
                wi = {ci.args[k].value.id for k in ci.writes}
                rj = {a.value.id for k, a in enumerate(cj.args) if k not in cj.writes}
                wj = {cj.args[k].value.id for k in cj.writes}
                if wi & (rj | wj) or ri & wj:
                    assert i in reach[j], f"root {root.name}: call{j} conflicts with call{i} but does not depend on it"


# ---- codegen ------------------------------------------------------------------------------------

def check_codegen(compiled) -> None:
    """Every leaf has a PTO listing (TLOAD for its inputs, TSTORE for its outputs) and an
    executable ``def``."""
    low = compiled.lowered
    assert set(compiled.source) == set(low.leaves) == set(low.executables)
    for name, leaf in low.leaves.items():
        src = compiled.source[name]
        gm_compute = all(op.kind in GM_COMPUTE for op in leaf.ops)
        roles = {role for role, _, _ in leaf.params}
        assert name in src
        if not gm_compute:
            # a leaf of dead ops (results never used) stores nothing: see test_unused_values_*
            assert ("TSTORE" in src) == ("out" in roles), f"{name}: TSTORE vs params {roles} in\n{src}"
            assert ("TLOAD" in src) == ("in" in roles), f"{name}: TLOAD vs params {roles} in\n{src}"
        assert f"def {name}" in src.cpu, f"{name}: no def in\n{src.cpu}"
        assert all(callable(fn) for fn in low.executables[name].values())


def check_all(compiled, machine=None) -> None:
    """Every level's invariants for a compiled kernel (after one call for dynamic kernels)."""
    from pypto.runtime.machine import A2A3

    expand = snapshot(compiled, "expand").graph
    memory = snapshot(compiled, "assign_memory").graph
    parts = snapshot(compiled, "partition").graph
    n = check_expand(expand, root_envs(compiled))
    assert n > 0, "no tile op was checked"
    check_memory(memory)
    check_partition(memory, parts)
    check_leaves(compiled.lowered.leaves, machine or A2A3)
    check_roots(compiled.lowered.roots, parts)
    check_codegen(compiled)


def tile_bytes(shape, itemsize=4) -> int:
    return math.prod(shape) * itemsize
