"""AssignMemoryType + GenerateMoveOp: decide where every tile lives and insert the copies.

Vector ops compute in UB, cube ops read L0A/L0B and write L0C. A value stays in UB between its
producer and a consumer when both run on the vector core over the same grid and the consumer
reads exactly the producer's tiles (1:1): those ops will be fused into one leaf. Every other
edge goes through GM: the producer gets a ``copy_out`` and the consumer a ``copy_in``
(GM->UB, or GM->L1->L0A/L0B for the cube). Fusing never creates a cycle between fused groups.
"""

from __future__ import annotations

from types import MappingProxyType

from ..ir.tile import TileOp
from .expand import WHOLE

_NO_ATTRS = MappingProxyType({})  # shared by the copies that carry no attrs


class _Groups:
    """Fused groups (union-find) and the GM dependencies between them, kept in both directions so
    a cycle check can search from whichever end reaches fewer groups."""

    def __init__(self):
        self.parent: dict = {}
        self.deps: dict = {}  # root -> groups it depends on (direct edges; ids may be stale)
        self.users: dict = {}  # root -> groups that depend on it (the same edges reversed)
        self.scope: dict = {}  # root -> the subgraph scope of its scoped members (absent: none)

    def new(self, gid, scope=None):
        if scope is not None:
            self.scope[gid] = scope
        self.parent[gid] = gid
        self.deps[gid] = set()
        self.users[gid] = set()
        return gid

    def find(self, g):
        while self.parent[g] != g:
            self.parent[g] = self.parent[self.parent[g]]
            g = self.parent[g]
        return g

    def depends_any(self, sources, h) -> bool:
        """Does any group in ``sources`` depend (transitively, through one edge or more) on group
        ``h``? Searches back from the sources and forward from ``h`` in turn, advancing the side
        that has seen fewer groups: the answer costs about twice the smaller of the two searches,
        so a check near the end of a long program does not walk all of it."""
        h = self.find(h)
        after_h = {h}  # groups that reach h (or are h)
        forward = [h]
        before = set()  # groups some source reaches
        backward = []
        for g in sources:
            for x in self.deps[self.find(g)]:
                x = self.find(x)
                if x in after_h:
                    return True
                if x not in before:
                    before.add(x)
                    backward.append(x)
        while backward and forward:
            if len(after_h) <= len(before):  # the side that has seen fewer groups goes next
                for x in self.users[forward.pop()]:
                    x = self.find(x)
                    if x in before:
                        return True
                    if x not in after_h:
                        after_h.add(x)
                        forward.append(x)
            else:
                for x in self.deps[backward.pop()]:
                    x = self.find(x)
                    if x in after_h:
                        return True
                    if x not in before:
                        before.add(x)
                        backward.append(x)
        return False

    def may_join(self, a, b) -> bool:
        """Upstream's ``sg_set_scope`` rule: ops of one scope id form their own subgraph, apart
        from other scopes and (unless the scope allows cross-scope merging) from unscoped ops."""
        sa, sb = self.scope.get(self.find(a)), self.scope.get(self.find(b))
        if sa is None or sb is None:
            s = sa or sb
            return s is None or bool(s[2])
        return sa[0] == sb[0]

    def union(self, a, b):
        a, b = self.find(a), self.find(b)
        if a != b:
            if b in self.scope:
                self.scope.setdefault(a, self.scope.pop(b))
            self.parent[b] = a
            self.deps[a] |= self.deps.pop(b)
            self.users[a] |= self.users.pop(b)

    def add_deps(self, g, hs):
        """Record that group g runs after each group in hs (direct edges; walks find the rest)."""
        g = self.find(g)
        new = {self.find(h) for h in hs} - {g}
        self.deps[g] |= new
        for h in new:
            self.users[h].add(g)


def _same_tiles(p, a) -> bool:
    return p.shape == a.shape and p.axis == a.axis and p.base == a.base


def assign_memory(ops, gm_values: set, new_id, fuse: bool = True, storage=None):
    """(ops with copies inserted and memory levels set, {op id: fused group id}). ``storage`` maps
    the id of a value that lives in another's memory (passes/aliasing.py) to that memory's id: the
    GM hazards between groups are per memory, not per name."""
    sid = (lambda v: storage.get(v, v)) if storage else (lambda v: v)  # noqa: E731
    written = {op.outputs[0].value.id for op in ops if op.kind == "copy_out"}
    producer: dict = {}  # value id -> (op, access)
    groups = _Groups()
    group_of: dict = {}
    ub_reads: set = set()  # (op id, input index)
    need_gm = set(gm_values) | written
    # per GM value: its last writer group and the groups that read it since (the order partition
    # will enforce; older accesses are ordered transitively through these)
    last_write: dict = {}
    readers: dict = {}
    for op in ops:
        gid = groups.new(op.id, op.scope)
        group_of[op.id] = gid
        fusible, gm_groups = [], set()
        # earlier groups this op must follow through a GM tensor (RAW, WAR, WAW): fusing one of
        # them with a group that in turn depends on this op would make a cycle
        gm_writes = [sid(a.value.id) for a in op.outputs] if op.kind == "copy_out" or op.kind in WHOLE else []
        hazard = set()
        # a gathered operand (passes/gather.py) is read from its pieces, not from its own tensor
        gathered = [x for _, pieces in op.attrs.get("gather", ()) for x in pieces]
        for a in (*op.inputs, *gathered):
            if (producer.get(a.value.id) is None or a.value.id in written) and sid(a.value.id) in last_write:
                hazard.add(last_write[sid(a.value.id)])
        for v in gm_writes:
            if v in last_write:
                hazard.add(last_write[v])
            hazard |= readers.get(v, set())
        for k, a in enumerate(op.inputs):
            p = producer.get(a.value.id)
            if p is None:
                continue
            pop, pacc = p
            if (fuse and op.core == "AIV" and pop.core == "AIV" and op.grid == pop.grid and op.grid != ()
                    and pop.kind not in WHOLE and a.value.id not in written and _same_tiles(pacc, a)):
                fusible.append((k, pop))
            else:
                gm_groups.add(group_of[pop.id])
                need_gm.add(a.value.id)
        inputs_of = {groups.find(h) for h in gm_groups | hazard} | {groups.find(group_of[p.id]) for _, p in fusible}
        for k, pop in fusible:
            g = group_of[pop.id]
            # fusing g would close a cycle through GM when another group this op reads depends on g
            # (or g is read through GM too): g's tiles would be read inside one batched leaf
            if not groups.may_join(g, gid) or groups.find(g) in {groups.find(h) for h in gm_groups} \
                    or groups.depends_any([h for h in inputs_of if h != groups.find(g)], g):
                gm_groups.add(g)  # keep this edge in GM
                need_gm.add(op.inputs[k].value.id)
                continue
            groups.union(g, gid)
            gid = groups.find(gid)
            ub_reads.add((op.id, k))
        gid = groups.find(gid)
        groups.add_deps(gid, {h for h in gm_groups | hazard if groups.find(h) != gid})
        for k, a in enumerate(op.inputs):
            if (op.id, k) not in ub_reads:
                readers.setdefault(sid(a.value.id), set()).add(gid)
        for a in gathered:
            readers.setdefault(sid(a.value.id), set()).add(gid)
        for v in gm_writes:
            last_write[v] = gid
            readers[v] = set()
        for a in op.outputs:
            producer[a.value.id] = (op, a)

    out = []
    for op in ops:
        g = op.id
        pre, post = [], []
        ins = []
        gather = dict(op.attrs.get("gather", ()))
        for k, a in enumerate(op.inputs):
            if op.kind in WHOLE:
                ins.append(a.in_mem("GM"))
            elif (op.id, k) in ub_reads:
                ins.append(a.in_mem("UB"))
            elif op.core == "AIC":
                l1 = a.in_mem("L1")
                kattrs = {"k_tile": op.attrs["k_tile"], "k_l1": op.attrs["k_l1"],
                          "k_dim": op.attrs["k_dims"][k]} if k < 2 else {}
                if k in gather:  # the pieces straight into one L1 tile (passes/gather.py)
                    pieces = tuple(x.in_mem("GM") for x in gather[k])
                    pre.append(_op(new_id, "gather_in", pieces, (l1,), op, {**kattrs, "dim": 0}))
                else:
                    pre.append(_op(new_id, "copy_in", (a.in_mem("GM"),), (l1,), op, kattrs))
                if k < 2:
                    l0 = a.in_mem("L0A" if k == 0 else "L0B")
                    pre.append(_op(new_id, "l1_to_l0a" if k == 0 else "l1_to_l0b", (l1,), (l0,), op, kattrs))
                    ins.append(l0)
                else:
                    ins.append(l1)  # bias stays in L1 (the bias table path)
            else:
                ub = a.in_mem("UB")
                pre.append(_op(new_id, "copy_in", (a.in_mem("GM"),), (ub,), op))
                ins.append(ub)
        outs = []
        for a in op.outputs:
            if op.kind == "copy_out" or op.kind in WHOLE:
                outs.append(a.in_mem("GM"))
                continue
            local = a.in_mem("L0C" if op.core == "AIC" else "UB")
            outs.append(local)
            if a.value.id in need_gm:
                post.append(_op(new_id, "copy_out", (local,), (a.in_mem("GM"),), op))
        attrs = op.attrs
        if gather:
            attrs = MappingProxyType({n: v for n, v in attrs.items() if n != "gather"})
        body = [op.replace(inputs=tuple(ins), outputs=tuple(outs), attrs=attrs)]
        if op.kind == "clone" and len(pre) == 1 and _same_tile(pre[0].outputs[0], outs[0]):
            # a clone of a tile loaded from GM is that load, into the clone's own buffer (upstream
            # removes the register copy): one UB tile instead of two
            pre, body = [], [pre[0].replace(outputs=(outs[0],))]
        for x in pre + body + post:
            out.append(x)
            group_of[x.id] = groups.find(group_of.get(g, g))
    return out, {o.id: groups.find(group_of[o.id]) for o in out}


def _same_tile(a, b) -> bool:
    """Do two local accesses hold the same tile (shape, dtype, grid axes)?"""
    return tuple(a.shape) == tuple(b.shape) and a.value.dtype is b.value.dtype and tuple(a.axis) == tuple(b.axis)


def _op(new_id, kind, ins, outs, like: TileOp, attrs=None) -> TileOp:
    return TileOp(new_id(), kind, ins, outs, like.grid, MappingProxyType(attrs) if attrs else _NO_ATTRS, like.src,
                  like.core, like.loc, like.scope)
