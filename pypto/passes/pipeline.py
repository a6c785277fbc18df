"""The lowering pipeline: the passes in order, each leaving a snapshot on the compiled kernel.

    autocast -> expand (Tensor Graph -> Tile Graph) -> assign_memory -> partition
    -> dedup (Block Graph: leaf functions) -> allocate_buffers -> execute_graph -> codegen

Every level has a verifier run after the pass that produces it.
"""

from __future__ import annotations

import itertools
import time
from dataclasses import dataclass, field
from functools import cached_property

from ..codegen import cpu, pto
from ..ir import expr as E
from ..ir.graph import Value, iter_ops
from ..ir.printer import format_program
from ..ir.dot_lower import codegen_dot, execute_dot, leaves_dot, partition_dot, tensor_dot, tile_dot
from ..ir.tile import leaf_symbols
from ..record import PassSnapshot
from ..runtime.memory import definition_scopes
from ..runtime.plan import mergeable_axes
from ..runtime.machine import current_machine
from . import autocast as _autocast
from .aliasing import LayoutAliases
from .buffers import BufferOverflowError
from .dedup import dedup
from .execute import build_root, verify_root
from .expand import expand_segment
from .fold import fold_assembled_results, fold_in_place_updates
from .gather import fold_gathers
from .memory import assign_memory
from .partition import partition, verify_subgraphs
from .segments import escaping_values, split_segments
from .verifiers import verify_tensor_graph, verify_tile_ops


class KernelSource(str):
    """The PTO-style listing of a leaf (the string itself) with its executable form (``cpu``) and,
    with valid_shape_optimize, its ``variants`` ({"main": ..., "tail": ...})."""

    pto: str
    cpu: str
    variants: dict


def _source(text, cpu_text, variants):
    s = KernelSource(text)
    s.pto, s.cpu, s.variants = text, cpu_text, variants
    return s


@dataclass(eq=False)
class Lowered:
    """Everything the lowered runtime needs for one compiled kernel."""

    program: object
    control: object
    roots: list
    leaves: dict
    executables: dict
    sources: dict
    global_values: set
    views: dict
    written_params: set
    leaf_symbols: dict = field(default_factory=dict)
    scopes: dict = field(default_factory=dict)  # value id -> loop indices around its definition
    merge: dict = field(default_factory=dict)  # leaf name -> grid axes its ops do not mix along
    # value id -> the value whose memory it is (passes/aliasing.py): the next one, and the last one
    aliases: dict = field(default_factory=dict)
    alias_final: dict = field(default_factory=dict)
    call_evals: dict = field(default_factory=dict, repr=False)  # call id -> CallEval (runtime/control.py)

    def merge_axes(self, leaf) -> frozenset:
        return self.merge[leaf.name]

    @cached_property
    def dep_targets(self) -> dict:
        """{value id: final target} for the values living in another's memory that some call writes
        (through any of its names): their accesses are accesses of that memory for the dependency
        engine. A memory no call writes orders nothing: its names keep their own regions."""
        if not self.alias_final:
            return {}
        final = self.alias_final
        written = {final[a.value.id].id if a.value.id in final else a.value.id
                   for r in self.roots for c in r.calls for a in (c.args[k] for k in c.writes)}
        return {vid: t for vid, t in final.items() if t.id in written}

    def memory_key(self, value, seq, env=None):
        """Identity of a GM region for the dependency engine: the buffer's (`buffer_key`), or for a
        value living in a written value's memory (a reshape alias, a forwarded result) that memory's."""
        target = self.dep_targets.get(value.id) if self.alias_final else None
        return self.buffer_key(value if target is None else target, seq, env)

    def buffer_key(self, value, seq, env=None):
        """Identity of a GM buffer (runtime/memory.py): kernel-wide for parameters and values shared
        between roots, per iteration of the loops around the definition of a value created inside
        loops, per root instance for a root's own intermediates."""
        scope = self.scopes.get(value.id)
        if scope is not None:
            if env is None:  # no loop indices given: at least tell root instances apart
                return (value.id, None, seq)
            return (value.id, tuple(env.get(n) for n in scope))
        if value.id in self.global_values or value.id in self.param_ids:
            return value.id
        return (value.id, seq)

    @cached_property
    def param_ids(self) -> frozenset:
        """Value ids of the kernel's parameters (memory_key asks for every call argument)."""
        return frozenset(p.value.id for p in self.program.params)


def _tile_text(roots_ops) -> str:
    out = []
    for i, ops in enumerate(roots_ops):
        out.append(f"root {i}:")
        out += [f"  {op.describe()}" for op in ops]
    return "\n".join(out)


def _block_text(leaves) -> str:
    return "\n".join(pto.listing(leaf) for leaf in leaves.values())


def _exec_text(roots) -> str:
    out = []
    for r in roots:
        out.append(f"root {r.name}:")
        for k, c in enumerate(r.calls):
            grid = "x".join(E.render(g) for g in c.grid) or "1"
            args = ", ".join(f"{'w' if i in c.writes else 'r'}:%{a.value.name}" for i, a in enumerate(c.args))
            out.append(f"  call{k} {c.leaf.name}[{c.leaf.core}] grid[{grid}] ({args})")
        if r.deps:
            out.append("  deps: " + ", ".join(f"call{i}->call{j}" for i, j in r.deps))
    return "\n".join(out)


def _alias_text(layout_aliases) -> str:
    """The values living in another value's memory (passes/aliasing.py), one line each."""
    return "".join(f"\nmemory: %{layout_aliases.sources[vid].name} is %{t.name}'s memory"
                   for vid, t in layout_aliases.aliases.items())


# host_options["compile_stage"] -> the last pass that runs (upstream's stop points: the final
# tensor graph, the final tile graph, the execute graph, then code generation)
STOP_AFTER = {1: "autocast", 2: "assign_memory", 3: "execute_graph"}


def lower(program, options, machine=None, fuse: bool = True, stop_at_stage: bool = True):
    """(Lowered, [PassSnapshot ...]) for a traced program; (None, snapshots so far) when
    ``host_options["compile_stage"]`` stops the compile before code generation (unless
    ``stop_at_stage`` is False: pass verify of a compile-only call checks every pass)."""
    machine = machine or current_machine()
    ids = itertools.count(max([p.value.id for p in program.params] +
                              [v.id for op in iter_ops(program.body) for v in op.outputs] + [0]) + 1)
    new_id = lambda: next(ids)  # noqa: E731

    def new_value(dtype, shape, valid_or_name=None, name=None):
        if isinstance(valid_or_name, str):
            valid, name = None, valid_or_name
        else:
            valid = valid_or_name
        shape = tuple(E.simplify_dim(s) for s in shape)
        return Value(new_id(), name or "t", dtype, shape, tuple(valid) if valid else shape, "workspace")

    snaps = []

    def snap(name, level, t0, graph, text_fn, dot_fn, fused_groups=None):
        snaps.append(PassSnapshot(name, level, text_fn, time.perf_counter() - t0, graph, dot_fn, fused_groups))

    t0 = time.perf_counter()
    program = _autocast.autocast(program, new_id, lambda dt, s, v, n: new_value(dt, s, v, n))
    verify_tensor_graph(program, "autocast")
    snap("autocast", "tensor", t0, program, format_program, tensor_dot)
    stop = STOP_AFTER.get(int(options.get("host", "compile_stage"))) if stop_at_stage else None
    if stop == "autocast":
        return None, snaps

    control, segments = split_segments(program)
    views = {op.outputs[0].id: op for op in iter_ops(program.body) if op.kind == "view"}
    escaping = escaping_values(program, segments)
    layout_aliases = LayoutAliases(program, views)  # reshapes and assembles that move no data
    storage = layout_aliases.storage
    in_gm = escaping | set(storage) | {v.id for v in layout_aliases.aliases.values()}

    t0 = time.perf_counter()
    def folded(ops):  # copies the device would not make (passes/fold.py, passes/gather.py)
        ops = expand_segment([op for op in ops if op not in layout_aliases.dropped], views, new_id, new_value)
        ops = fold_in_place_updates(fold_assembled_results(ops, in_gm), in_gm)
        return fold_gathers(ops, in_gm, new_id)

    tile_ops = [folded(ops) for ops in segments]
    verify_tile_ops(tile_ops, "expand", memory_assigned=False)
    snap("expand", "tile", t0, tile_ops, _tile_text, tile_dot)

    registry: dict = {}
    for attempt in (True, False):
        try:
            t0 = time.perf_counter()
            assigned = [assign_memory(ops, in_gm, new_id, fuse=fuse and attempt, storage=storage) for ops in tile_ops]
            verify_tile_ops([a[0] for a in assigned], "assign_memory", memory_assigned=True)
            snap("assign_memory", "tile", t0, [a[0] for a in assigned], _tile_text, tile_dot,
                 [a[1] for a in assigned])  # its fusion, which pass bisection runs (pass_programs.py)
            if stop == "assign_memory":
                return None, snaps
            t0 = time.perf_counter()
            subgraphs = [partition(ops, groups, storage) for ops, groups in assigned]
            for sgs in subgraphs:
                verify_subgraphs(sgs)
            snap("partition", "block", t0, subgraphs,
                 lambda sg: "\n".join(f"root {i}: " + "; ".join(
                     f"sg{s.id}[{s.core}, {len(s.ops)} ops, grid {'x'.join(E.render(g) for g in s.grid) or '1'}]"
                     for s in sgs) for i, sgs in enumerate(sg)), partition_dot)
            t0 = time.perf_counter()
            registry = {}
            leaves_per_root = [dedup(sgs, registry, machine) for sgs in subgraphs]
            break
        except BufferOverflowError:
            if not (fuse and attempt):
                raise
            del snaps[-2:]  # split the fused leaves and try again
    leaves = {leaf.name: leaf for leaf in registry.values()}
    snap("dedup+allocate_buffers", "block", t0, leaves, _block_text, leaves_dot)

    t0 = time.perf_counter()
    roots = []
    for i, (sgs, lv) in enumerate(zip(subgraphs, leaves_per_root)):
        root = build_root(f"root{i}", sgs, lv, new_id, tile_ops[i], storage)
        verify_root(root)
        roots.append(root)
    snap("execute_graph", "execute", t0, roots, lambda rs: _exec_text(rs) + _alias_text(layout_aliases), execute_dot)
    if stop == "execute_graph":
        return None, snaps

    t0 = time.perf_counter()
    vso = bool(options.get("runtime", "valid_shape_optimize"))
    executables, sources, symbols = {}, {}, {}
    for name, leaf in leaves.items():
        if vso:
            main_src, main_fn = cpu.compile_leaf(leaf, "main")
            tail_src, tail_fn = cpu.compile_leaf(leaf, "tail")
            executables[name] = {"main": main_fn, "tail": tail_fn}
            text = pto.listing(leaf, "main") + "\n" + pto.listing(leaf, "tail")
            sources[name] = _source(text, main_src + "\n" + tail_src,
                                    {"main": pto.listing(leaf, "main"), "tail": pto.listing(leaf, "tail")})
        else:
            src, fn = cpu.compile_leaf(leaf)
            executables[name] = {"default": fn}
            sources[name] = _source(pto.listing(leaf), src, {})
        symbols[name] = leaf_symbols(leaf)
    snap("codegen", "execute", t0, sources, lambda s: "\n".join(f"== {k} ==\n{v}" for k, v in s.items()),
         lambda s: codegen_dot(s, leaves))

    written = set()
    for op in iter_ops(program.body):
        if op.kind == "assemble":
            written.add(op.inputs[1].root.id)
    lowered = Lowered(program, control, roots, leaves, executables, sources, escaping, views, written, symbols,
                      definition_scopes(program, escaping - {p.value.id for p in program.params}),
                      {name: mergeable_axes(leaf) for name, leaf in leaves.items()}, layout_aliases.aliases,
                      {vid: layout_aliases.final(vid) for vid in storage})
    return lowered, snaps


