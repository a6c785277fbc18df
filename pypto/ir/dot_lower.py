"""Graphviz DOT of every compile stage below the Tensor Graph, and a node budget for all of them.

* Tile Graph: one cluster per root, one node per tile op (``kind ×tiles``), data-flow edges.
* Block Graph after partition: one cluster per root, one nested cluster per subgraph with its ops
  in order; dashed edges where one subgraph reads a GM tensor another wrote.
* Block Graph after dedup+allocate_buffers: one cluster per leaf function with its ops in order
  and a note listing its GM params and local buffers.
* Execute Graph: one cluster per root, one node per leaf call, dependency edges.
* Generated code: one node per leaf, grouped by core.
* Tensor Graph: `tensor_dot` is `program_to_dot` while that stays within the budget.

A graph larger than `MAX_NODES` is summarised, never dropped: a run of a repeating pattern of
identical ops (or calls, or clusters) is drawn once inside a cluster labelled ``×repeats``, and
whatever still does not fit becomes one summary node counting what it stands for.
"""

from __future__ import annotations

import math
import re
from collections import Counter

from . import expr as E
from .dot import _Dot, _q, program_to_dot
from .graph import Block, Branch, Loop, Op, iter_ops

MAX_NODES = 400  # what the renderers aim for; no output goes past HARD_LIMIT
HARD_LIMIT = 500
MAX_PERIOD = 16  # longest repeating pattern that is recognised
MAX_EDGES = 1000  # above this many call dependencies the Execute Graph shows the transitive reduction

_AIC, _AIV, _NOTE, _MORE = "#fde2e2", "#e2f0fd", "#fffbe6", "#eeeeee"
_HEAD = ['  rankdir=TB;', '  node [fontname="Helvetica", fontsize=10, shape=box];',
         '  edge [fontname="Helvetica", fontsize=9];']
_NODE_RE = re.compile(r'^\s*("(?:[^"\\]|\\.)*"|[A-Za-z_][\w]*)\s*\[', re.M)


def count_nodes(dot: str) -> int:
    """The number of node statements in DOT text (``name [...]`` lines other than defaults)."""
    return sum(1 for m in _NODE_RE.finditer(dot) if m.group(1) not in ("node", "edge", "graph"))


def tooltip(*lines) -> str:
    """A ``tooltip`` attribute (shown on hover in the SVG): the non-empty ``lines``, capped."""
    text = "\n".join(str(x) for x in lines if x)
    if len(text) > 600:
        text = text[:599] + "…"
    return f", tooltip={_q(text)}" if text else ""


def source_of(loc) -> str:
    """``source: file:line  code`` of an op's kernel line (empty when unknown)."""
    if loc is None:
        return ""
    code = loc.source_line()
    return f"source: {loc}" + (f"  {code}" if code else "")


def _access_tip(a) -> str:
    return f"%{a.value.name}: {a.value.dtype.short}{E.render_dims(a.shape)} in {a.mem}"


def _fill(core) -> str:
    return _AIC if core == "AIC" else _AIV


def _grid(grid) -> str:
    return "x".join(E.render(g) for g in grid) or "1"


def _tiles(grid):
    count = 1
    for g in grid:
        if not isinstance(g, int):
            return "N"
        count *= g
    return count


def _tally(names, top: int = 6) -> str:
    """``add ×3, mul ×2, …`` for a list of names, most frequent first."""
    c = Counter(names)
    parts = [f"{k} ×{n}" if n > 1 else str(k) for k, n in c.most_common(top)]
    if len(c) > top:
        parts.append(f"… {len(c) - top} more kinds")
    return ", ".join(parts)


# ---- summarising ----------------------------------------------------------------------------------

def collapse(keys, max_period: int = MAX_PERIOD) -> list:
    """Cover ``keys`` in order with groups ``(start, period, repeats)``: a pattern of ``period``
    keys repeated ``repeats`` times (``(i, 1, 1)`` for an item that repeats nothing). The longest
    coverage wins, and the shortest period among equals."""
    out, i, n = [], 0, len(keys)
    while i < n:
        best_p, best_r = 1, 1
        for p in range(1, min(max_period, (n - i) // 2) + 1):
            pattern = keys[i:i + p]
            r = 1
            while i + (r + 1) * p <= n and keys[i + r * p:i + (r + 1) * p] == pattern:
                r += 1
            if r > 1 and p * r > best_p * best_r:
                best_p, best_r = p, r
        out.append((i, best_p, best_r))
        i += best_p * best_r
    return out


def _water(sizes, budget: int) -> int:
    """The largest cap c with sum(min(s, c)) <= budget."""
    lo, hi = 0, max(sizes, default=0)
    while lo < hi:
        mid = (lo + hi + 1) // 2
        if sum(min(s, mid) for s in sizes) <= budget:
            lo = mid
        else:
            hi = mid - 1
    return lo


class Plan:
    """Which clusters and items of a two-level graph get a node, within a node budget.

    ``clusters`` is a list of item lists. Items (and whole clusters) collapse into repeating
    patterns only when the graph is over budget; then every drawn cluster gets a fair share of
    nodes, the rest of a cluster becomes one summary node, and clusters past ``max_clusters``
    become one summary node for the graph (``hidden``).

    After planning: ``drawn`` is a list of ``(cluster index, cluster repeats, groups, rest)`` with
    ``groups`` the item groups to draw (`collapse` form) and ``rest`` the first item index that is
    summarised (the cluster length when none is); ``node(ci, ii)`` names the node standing for an
    item and ``carried(a, b)`` tells whether an edge joins two instances of one pattern.
    """

    def __init__(self, clusters, item_key, cluster_key=None, limit: int = MAX_NODES, extra: int = 0,
                 max_clusters: int | None = None):
        self.clusters = clusters
        n = len(clusters)
        total = sum(len(c) for c in clusters) + extra * n
        self.hidden: list = []
        self._node: dict = {}
        self._inst: dict = {}
        if total <= limit:
            self.summarised = False
            self.drawn = [(ci, 1, [(i, 1, 1) for i in range(len(c))], len(c))
                          for ci, c in enumerate(clusters)]
        else:
            self.summarised = True
            cgroups = (collapse([cluster_key(ci) for ci in range(n)], 4) if cluster_key
                       else [(ci, 1, 1) for ci in range(n)])
            shown = []  # (ci, repeats, [instance cluster indices])
            for start, p, r in cgroups:
                for j in range(p):
                    shown.append((start + j, r, [start + j + k * p for k in range(r)]))
            max_clusters = max_clusters or max(1, limit // 4)
            if len(shown) > max_clusters:
                for _, _, inst in shown[max_clusters - 1:]:
                    self.hidden += inst
                shown = shown[:max_clusters - 1]
            budget = limit - (extra + 1) * len(shown) - (1 if self.hidden else 0)
            item_groups = [collapse([item_key(x) for x in clusters[ci]]) for ci, _, _ in shown]
            cap = _water([sum(p for _, p, _ in g) for g in item_groups], max(budget, len(shown)))
            self.drawn = []
            for (ci, r, inst), groups in zip(shown, item_groups):
                keep, used = [], 0
                for g in groups:
                    if used + g[1] > cap:
                        break
                    keep.append(g)
                    used += g[1]
                rest = keep[-1][0] + keep[-1][1] * keep[-1][2] if keep else 0
                self.drawn.append((ci, r, keep, rest))
                for other in inst[1:]:  # a repeated cluster stands for each of its instances
                    self._alias(other, ci, groups, rest)
        for ci, _, groups, rest in self.drawn:
            self._alias(ci, ci, groups, rest)
        for ci in self.hidden:
            for ii in range(len(clusters[ci])):
                self._node[ci, ii] = "hidden"

    def _alias(self, ci, rep, groups, rest):
        for gi, (start, p, r) in enumerate(groups):
            if start >= rest:
                break
            for k in range(r):
                for j in range(p):
                    ii = start + k * p + j
                    if ii < len(self.clusters[ci]):
                        self._node[ci, ii] = f"n{rep}_{start + j}"
                        self._inst[ci, ii] = (gi, k)
        for ii in range(rest, len(self.clusters[ci])):
            self._node[ci, ii] = f"more{rep}"

    def node(self, ci, ii) -> str:
        return self._node[ci, ii]

    def carried(self, a, b) -> bool:
        """Do items ``a`` and ``b`` (``(ci, ii)``) sit in two instances of one pattern of a cluster?"""
        ia, ib = self._inst.get(a), self._inst.get(b)
        return a[0] == b[0] and ia is not None and ib is not None and ia[0] == ib[0] and ia[1] != ib[1]

    def rest_node(self, ci, rest, what: str, name_of, pad: str) -> list:
        items = self.clusters[ci][rest:]
        if not items:
            return []
        label = f"… {len(items)} more {what}\n{_tally([name_of(x) for x in items])}"
        return [f'{pad}more{ci} [label={_q(label)}, shape=note, style=filled, fillcolor="{_MORE}"];']

    def hidden_node(self, what: str, item_what: str, name_of, pad: str = "  ") -> list:
        if not self.hidden:
            return []
        items = [x for ci in self.hidden for x in self.clusters[ci]]
        label = (f"… {len(self.hidden)} more {what}, {len(items)} {item_what}\n"
                 f"{_tally([name_of(x) for x in items])}")
        return [f'{pad}hidden [label={_q(label)}, shape=note, style=filled, fillcolor="{_MORE}"];']


def _open(lines, pad, name, label, color=None):
    lines.append(f"{pad}subgraph {name} {{")
    style = f' style="rounded,filled"; fillcolor={_q(color)};' if color else ' style="rounded";'
    lines.append(f"{pad}  label={_q(label)};{style}")


def _draw_items(lines, plan, ci, groups, pad, node_line):
    """Nodes of one cluster's drawn groups; a repeated pattern sits in a ``×repeats`` cluster."""
    items = plan.clusters[ci]
    for start, p, r in groups:
        inner = pad
        if r > 1:
            _open(lines, pad, f"cluster_rep{ci}_{start}", f"×{r}", "#f5f5f5")
            inner = pad + "  "
        for j in range(p):
            lines.append(inner + node_line(f"n{ci}_{start + j}", items[start + j], start + j))
        if r > 1:
            lines.append(pad + "}")


def _edge_lines(plan, edges, pad="  ", style: str = "") -> list:
    """Deduplicated edges between the nodes standing for items ``(ci, ii)``; an edge between two
    instances of one pattern is dashed and does not rank."""
    out, seen = [], set()
    attrs = f" [{style}]" if style else ""
    for a, b in edges:
        na, nb = plan.node(*a), plan.node(*b)
        if na == nb or (na, nb) in seen:
            continue
        seen.add((na, nb))
        if plan.carried(a, b):
            out.append(f'{pad}{na} -> {nb} [style=dashed, constraint=false, color="#888888"];')
        else:
            out.append(f"{pad}{na} -> {nb}{attrs};")
    return out


_SUMMARISED = "summarised: repeated patterns drawn once (×repeats), the rest counted"


def _graph(name, lines, summarised, notes=()) -> str:
    head = [f"digraph {_q(name)} {{"] + _HEAD
    notes = ([_SUMMARISED] if summarised else []) + list(notes)
    if notes:
        head.append(f"  label={_q(chr(10).join(notes))}; labelloc=t;")
    return "\n".join(head + lines + ["}"])


# ---- Tensor Graph -------------------------------------------------------------------------------

class _SummaryDot(_Dot):
    """`program_to_dot` with repeating op patterns drawn once and a node budget."""

    def __init__(self, limit):
        super().__init__()
        self.limit = limit

    def region(self, region, pad: str):
        if isinstance(region, Branch):
            return super().region(region, pad)  # recurses into this method for each path
        items = list(region.items)
        keys = [(it.kind, tuple((v.dtype.short, E.render_dims(v.shape)) for v in it.outputs))
                if isinstance(it, Op) else ("loop", it.id) for it in items]
        for start, p, r in collapse(keys):
            if self.nodes >= self.limit:
                self.more(items[start:], pad)
                return
            inner = pad
            if r > 1:
                self.open(f"×{r}", pad, "#f5f5f5")
                inner = pad + "  "
            for item in items[start:start + p]:
                if isinstance(item, Loop):
                    for factor, body in zip(item.factors, item.bodies):
                        extra = f" unroll {factor}" if len(item.factors) > 1 else ""
                        bounds = f"[{E.render(item.start)}, {E.render(item.stop)})"
                        self.open(f"loop {item.index} in {bounds}{extra}", inner, "#eef7ee")
                        self.region(body, inner + "  ")
                        self.lines.append(inner + "}")
                else:
                    self.op(item, inner)
            if r > 1:
                self.lines.append(pad + "}")

    def more(self, items, pad):
        kinds = []
        for it in items:
            kinds += [op.kind for op in (iter_ops(Block((it,))) if isinstance(it, Loop) else [it])]
        self.cluster += 1
        label = f"… {len(kinds)} more ops\n{_tally(kinds)}"
        self.lines.append(f'{pad}more{self.cluster} [label={_q(label)}, shape=note, style=filled, '
                          f'fillcolor="{_MORE}"];')
        self.nodes += 1


def tensor_dot(program) -> str:
    """DOT of a Tensor Graph: `program_to_dot`, or a pattern-collapsed summary when that has more
    than `HARD_LIMIT` nodes."""
    text = program_to_dot(program)
    if count_nodes(text) <= HARD_LIMIT:
        return text
    d = _SummaryDot(MAX_NODES)
    d.lines += [f"digraph {_q(program.name)} {{", "  rankdir=TB;", '  node [fontname="Helvetica", fontsize=10];',
                '  edge [fontname="Helvetica", fontsize=9];', f"  label={_q(_SUMMARISED)}; labelloc=t;"]
    for p in program.params:
        d.value(p.value, "  ")
    d.region(program.body, "  ")
    d.lines.append("}")
    return "\n".join(d.lines)


# ---- Tile Graph ---------------------------------------------------------------------------------

def tile_dot(roots_ops) -> str:
    """DOT of a Tile Graph (a list of tile-op lists, one per root): data-flow between tile ops."""
    clusters = [list(ops) for ops in roots_ops]
    plan = Plan(clusters, lambda op: (op.kind, op.core, _grid(op.grid)), max_clusters=MAX_NODES // 4)

    def node_line(name, op, _):
        count = _tiles(op.grid)
        label = f"{op.kind} ×{count}" if count != 1 else op.kind
        tip = tooltip(f"{op.kind} on {op.core}, grid [{_grid(op.grid)}]",
                      *(f"in  {_access_tip(a)}" for a in op.inputs),
                      *(f"out {_access_tip(a)}" for a in op.outputs), source_of(op.loc))
        return (f'{name} [label={_q(label + chr(10) + op.core)}, style=filled, '
                f'fillcolor="{_fill(op.core)}"{tip}];')

    lines = []
    for ci, _, groups, rest in plan.drawn:
        _open(lines, "  ", f"cluster_r{ci}", f"root {ci}")
        _draw_items(lines, plan, ci, groups, "    ", node_line)
        lines += plan.rest_node(ci, rest, "tile ops", lambda op: op.kind, "    ")
        lines.append("  }")
    lines += plan.hidden_node("roots", "tile ops", lambda op: op.kind)
    edges = []
    for ci, ops in enumerate(clusters):
        last = {}
        for ii, op in enumerate(ops):
            for a in op.inputs:
                if (a.value.id, a.mem) in last:
                    edges.append(((ci, last[(a.value.id, a.mem)]), (ci, ii)))
            for a in op.outputs:
                last[(a.value.id, a.mem)] = ii
    lines += _edge_lines(plan, edges)
    return _graph("tile", lines, plan.summarised)


# ---- Block Graph ----------------------------------------------------------------------------------

def partition_dot(roots_subgraphs) -> str:
    """DOT of the partition: per root, one cluster per subgraph (core, grid) with its ops in order;
    dashed edges where a later subgraph reads a GM tensor an earlier one wrote."""
    where = [(ri, sg) for ri, sgs in enumerate(roots_subgraphs) for sg in sgs]
    clusters = [list(sg.ops) for _, sg in where]
    plan = Plan(clusters, lambda op: (op.kind, op.core),
                cluster_key=lambda ci: (where[ci][0], where[ci][1].core, _grid(where[ci][1].grid),
                                        tuple(op.kind for op in where[ci][1].ops)),
                max_clusters=MAX_NODES // 4)

    def node_line(name, op, _):
        mems = ", ".join(a.mem for a in op.outputs)
        tip = tooltip(op.kind, *(f"in  {_access_tip(a)}" for a in op.inputs),
                      *(f"out {_access_tip(a)}" for a in op.outputs), source_of(op.loc))
        return f"{name} [label={_q(op.kind + chr(10) + '-> ' + mems)}{tip}];"

    lines, open_root = [], None
    for ci, r, groups, rest in plan.drawn:
        ri, sg = where[ci]
        if ri != open_root:
            if open_root is not None:
                lines.append("  }")
            _open(lines, "  ", f"cluster_r{ri}", f"root {ri}")
            open_root = ri
        label = f"sg{sg.id}  {sg.core}  grid[{_grid(sg.grid)}]" + (f"  ×{r}" if r > 1 else "")
        _open(lines, "    ", f"cluster_sg{ci}", label, _fill(sg.core))
        _draw_items(lines, plan, ci, groups, "      ", node_line)
        lines += plan.rest_node(ci, rest, "ops", lambda op: op.kind, "      ")
        lines.append("    }")
    if open_root is not None:
        lines.append("  }")
    lines += plan.hidden_node("subgraphs", "ops", lambda op: op.kind)
    edges = []
    for ci, ops in enumerate(clusters):  # the ops of a subgraph run in order
        edges += [((ci, ii), (ci, ii + 1)) for ii in range(len(ops) - 1)]
    body = _edge_lines(plan, edges)
    gm_edges, writer = [], {}
    for ci, (ri, sg) in enumerate(where):
        for ii, op in enumerate(sg.ops):
            for a in op.inputs:
                w = writer.get((ri, a.value.root.id)) if a.mem == "GM" else None
                if w is not None and w[0] != ci:
                    gm_edges.append((w, (ci, ii)))
        for ii, op in enumerate(sg.ops):
            for a in op.outputs:
                if a.mem == "GM":
                    writer[(ri, a.value.root.id)] = (ci, ii)
    body += _edge_lines(plan, gm_edges, style='style=dashed, color="#555555", label="GM"')
    return _graph("partition", lines + body, plan.summarised)


def leaves_dot(leaves) -> str:
    """DOT of the leaf functions (``{name: LeafFunction}``): one cluster per leaf with its ops in
    order and a note listing its GM params and local buffers."""
    from ..passes.buffers import buffer_of  # the buffer assigned to each local tile

    leaf_list = list(leaves.values())
    clusters = [list(leaf.ops) for leaf in leaf_list]
    plan = Plan(clusters, lambda op: (op.kind, tuple(a.mem for a in op.inputs + op.outputs)),
                extra=1, max_clusters=MAX_NODES // 5)
    lines = []
    for ci, _, groups, rest in plan.drawn:
        leaf = leaf_list[ci]
        names = {k: b.name for k, b in buffer_of(leaf).items()}

        def operand(i, role, k, a, leaf=leaf, names=names):
            p = leaf.param_of.get((i, role, k))
            return f"P{p}" if p is not None else names.get(a.local_key, f"%{a.value.name}")

        def node_line(name, op, i, operand=operand):
            outs = ", ".join(operand(i, "out", k, a) for k, a in enumerate(op.outputs))
            ins = ", ".join(operand(i, "in", k, a) for k, a in enumerate(op.inputs))
            tip = tooltip(f"{leaf.name} op {i}: {op.kind} on {leaf.core}",
                          *(f"in  {_access_tip(a)}" for a in op.inputs),
                          *(f"out {_access_tip(a)}" for a in op.outputs), source_of(op.loc))
            return f"{name} [label={_q(f'{i}: {op.kind}' + chr(10) + f'{outs} <- {ins}')}{tip}];"

        _open(lines, "  ", f"cluster_l{ci}", f"{leaf.name}  {leaf.core}  hash {leaf.hash}", _fill(leaf.core))
        lines.append(f'    info{ci} [label={_q(_leaf_note(leaf))}, shape=note, style=filled, '
                     f'fillcolor="{_NOTE}"];')
        _draw_items(lines, plan, ci, groups, "    ", node_line)
        lines += plan.rest_node(ci, rest, "ops", lambda op: op.kind, "    ")
        lines.append("  }")
    lines += plan.hidden_node("leaves", "ops", lambda op: op.kind)
    edges = [((ci, ii), (ci, ii + 1)) for ci, ops in enumerate(clusters) for ii in range(len(ops) - 1)]
    lines += _edge_lines(plan, edges)
    lines += _grid_rows(plan, lambda ci: f"info{ci}")
    return _graph("leaves", lines, plan.summarised)


def grid_columns(n: int) -> int:
    """Columns of the grid many clusters are laid out in (one row up to 4)."""
    return n if n <= 4 else math.ceil(math.sqrt(n)) + 1


def _grid_rows(plan, first_node) -> list:
    """Invisible edges that stack the drawn clusters in rows of `grid_columns`, instead of one
    row as wide as all of them: the last node of a cluster above the first of the one below."""
    drawn = plan.drawn
    cols = grid_columns(len(drawn))
    out = []
    for k in range(len(drawn) - cols):
        ci, _, groups, rest = drawn[k]
        below = drawn[k + cols][0]
        if rest < len(plan.clusters[ci]):
            last = f"more{ci}"
        elif groups:
            start, p, _ = groups[-1]
            last = f"n{ci}_{start + p - 1}"
        else:
            last = first_node(ci)
        out.append(f"  {last} -> {first_node(below)} [style=invis];")
    return out


def _leaf_note(leaf, max_lines: int = 12) -> str:
    rows = [f"P{p} {role} {dtype.short}{E.render_dims(shape)}"
            for p, (role, dtype, shape) in enumerate(leaf.params)]
    bufs = [f"{b.name} {b.mem} @0x{b.offset:x} {b.nbytes} B ops {b.first}..{b.last}" for b in leaf.buffers]
    if len(bufs) > max_lines:
        more = leaf.buffers[max_lines - 1:]
        bufs = bufs[:max_lines - 1] + [f"… {len(more)} more buffers: {_tally([b.mem for b in more])}"]
    if len(rows) > max_lines:
        rows = rows[:max_lines - 1] + [f"… {len(leaf.params) - max_lines + 1} more params"]
    return "\n".join(["GM params:"] + (rows or ["(none)"]) + ["local buffers:"] + (bufs or ["(none)"]))


# ---- Execute Graph --------------------------------------------------------------------------------

def execute_dot(roots) -> str:
    """DOT of the Execute Graph: per root, one node per leaf call and the dependency edges."""
    clusters = [list(r.calls) for r in roots]
    plan = Plan(clusters, lambda c: (c.leaf.name, _grid(c.grid)),
                cluster_key=lambda ci: tuple((c.leaf.name, _grid(c.grid)) for c in clusters[ci]),
                max_clusters=MAX_NODES // 4)

    def node_line(name, c, _):
        args = [f"{'out' if k in c.writes else 'in '} {_access_tip(a)}" for k, a in enumerate(c.args)]
        tip = tooltip(f"call {c.leaf.name} on {c.leaf.core}, grid [{_grid(c.grid)}]", *args, source_of(c.loc))
        return (f'{name} [label={_q(f"{c.leaf.name}" + chr(10) + f"grid[{_grid(c.grid)}]")}, '
                f'style="rounded,filled", fillcolor="{_fill(c.leaf.core)}"{tip}];')

    lines, edges, reduced = [], [], False
    for ci, r in enumerate(roots):
        deps = list(r.deps)
        if len(deps) > MAX_EDGES:
            deps, reduced = _reduce(len(r.calls), deps), True
        edges += [((ci, i), (ci, j)) for i, j in deps]
    for ci, rep, groups, rest in plan.drawn:
        _open(lines, "  ", f"cluster_{ci}", roots[ci].name + (f"  ×{rep}" if rep > 1 else ""))
        _draw_items(lines, plan, ci, groups, "    ", node_line)
        lines += plan.rest_node(ci, rest, "calls", lambda c: c.leaf.name, "    ")
        lines.append("  }")
    lines += plan.hidden_node("roots", "calls", lambda c: c.leaf.name)
    lines += _edge_lines(plan, edges)
    lines += _edge_lines(plan, _across_roots(roots), style='style=dashed, color="#555555", label="GM"')
    notes = ["dependencies implied by others are not drawn"] if reduced else []
    return _graph("execute", lines, plan.summarised, notes)


def _across_roots(roots) -> list:
    """Edges from the call that last wrote a GM tensor in an earlier root to each call of a later
    root that reads it (the roots run in order; inside a root, ``deps`` says it)."""
    edges, writer = [], {}
    for ri, r in enumerate(roots):
        for ci, c in enumerate(r.calls):
            for k, a in enumerate(c.args):
                w = writer.get(a.value.root.id) if k not in c.writes and a.mem == "GM" else None
                if w is not None and w[0] != ri:
                    edges.append((w, (ri, ci)))
        for ci, c in enumerate(r.calls):
            for k in c.writes:
                writer[c.args[k].value.root.id] = (ri, ci)
    return list(dict.fromkeys(edges))


def _reduce(n, deps) -> list:
    """The transitive reduction of a DAG's edges (unchanged if they have a cycle)."""
    succ = [[] for _ in range(n)]
    indeg = [0] * n
    for i, j in deps:
        succ[i].append(j)
        indeg[j] += 1
    order, ready = [], [i for i in range(n) if indeg[i] == 0]
    while ready:
        i = ready.pop()
        order.append(i)
        for j in succ[i]:
            indeg[j] -= 1
            if indeg[j] == 0:
                ready.append(j)
    if len(order) != n:
        return list(deps)
    reach = [0] * n  # bit j: j is reachable from i through at least one edge
    for i in reversed(order):
        for j in succ[i]:
            reach[i] |= reach[j] | (1 << j)
    out = []
    for i in range(n):
        implied = 0
        for j in succ[i]:
            implied |= reach[j]
        out += [(i, j) for j in dict.fromkeys(succ[i]) if not (implied >> j) & 1]
    return out


# ---- generated code -------------------------------------------------------------------------------

def codegen_dot(sources, leaves=None) -> str:
    """DOT of the generated code (``{leaf name: listing}``): one node per leaf with its core,
    variants and instruction counts, grouped by core."""
    leaves = leaves or {}
    names = list(sources)

    def core(name):
        leaf = leaves.get(name)
        if leaf is not None:
            return leaf.core
        m = re.search(r"core=(\w+)", str(sources[name]))
        return m.group(1) if m else "?"

    cores = list(dict.fromkeys(core(n) for n in names))
    clusters = [[n for n in names if core(n) == c] for c in cores]
    plan = Plan(clusters, lambda n: n, max_clusters=MAX_NODES)

    def node_line(name, leaf_name, _):
        src = sources[leaf_name]
        variants = list(getattr(src, "variants", None) or {})
        body = str(variants and src.variants[variants[0]] or src)
        instr = [ln.split()[0] for ln in body.splitlines()
                 if ln.strip() and not ln.lstrip().startswith(("//", "for "))]
        label = f"{leaf_name}\n{len(instr)} instructions" + (f" · {'/'.join(variants)}" if variants else "")
        label += "\n" + _tally(instr)
        return f'{name} [label={_q(label)}, style="rounded,filled", fillcolor="{_fill(core(leaf_name))}"];'

    lines = []
    for ci, _, groups, rest in plan.drawn:
        _open(lines, "  ", f"cluster_{ci}", f"{cores[ci]} leaves")
        _draw_items(lines, plan, ci, groups, "    ", node_line)
        lines += plan.rest_node(ci, rest, "leaves", lambda n: core(n), "    ")
        lines.append("  }")
    return _graph("codegen", lines, plan.summarised)
