"""``pypto.reshape(x, shape, inplace=True)``: the reshaped tensor and ``x`` are one memory.

Upstream gives an inplace reshape no address of its own, so a write through either name is seen
through the other (an output tensor filled through a 2-D reshape of it, a cache updated through
a flat view). The lowering makes a reshape no task only where nothing writes through it
(passes/aliasing.py); a written one is a copy, so the tracer keeps the two names coherent with
explicit copies, placed where a program could tell the difference:

* the names of one memory form a *group*: the reshaped source and its inplace reshapes (a view
  of a member counts as that member);
* after a write through one member, the others are stale; before a member is read (or partly
  written) while stale, it is refreshed: the source from the member that was written, an
  inplace reshape from the source (``reshape`` into a fresh value, ``assemble`` into the member);
* at the end of a loop body every member the body reads is made current, so the next iteration
  sees this one's writes; at the end of the block that made an inplace reshape, the source is
  made current and the reshape leaves the group.

A program that only reads through an inplace reshape (the usual case) gets no copy at all.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from ..ops.registry import REGISTRY


@dataclass(eq=False)
class _Group:
    source: object  # the Value that was reshaped
    members: dict = field(default_factory=dict)  # value id -> (Value, block depth it was made at)
    current: set = field(default_factory=set)  # ids of the members holding the latest data


class InplaceAliases:
    """The groups of one trace; `Tracer` calls `before_op`, `block_end` and `add`."""

    def __init__(self, tracer):
        self.tracer = tracer
        self._group_of: dict = {}  # member value id -> _Group
        self._reads: list = [set()]  # per open block: (group, member id) read in it
        self._syncing = False

    @property
    def active(self) -> bool:
        return bool(self._group_of) and not self._syncing

    def add(self, alias, source, loc) -> None:
        """Record ``alias`` (an inplace reshape just emitted) as another name of ``source``'s memory."""
        group, _ = self.member_of(source)
        if group is None:
            group = _Group(source)
            group.members[source.id] = (source, -1)
            group.current.add(source.id)
            self._group_of[source.id] = group
        else:
            self._make_current(group, group.source.id, loc)
        group.members[alias.id] = (alias, len(self.tracer._blocks))
        group.current.add(alias.id)  # it was just copied from the source
        self._group_of[alias.id] = group

    def member_of(self, value):
        """(group, member id) of the memory ``value`` names, or (None, None)."""
        v = value
        while v is not None:
            group = self._group_of.get(v.id)
            if group is not None:
                return group, v.id
            v = v.base
        return None, None

    # ---- hooks ---------------------------------------------------------------------------------
    def before_op(self, kind, inputs, outputs, loc) -> None:
        """Refresh stale members the op reads or partly writes; mark what it writes."""
        spec = REGISTRY.get(kind)
        if kind == "view":
            return  # no data moves: the view's reads are accounted when it is used
        written = spec.writes_input if spec is not None else None
        writes = [inputs[written]] if written is not None else []
        writes += [v for v in outputs if self.member_of(v)[0] is not None and v not in writes]
        for i, v in enumerate(inputs):
            if i == written:
                continue
            group, member = self.member_of(v)
            if group is not None:
                self._make_current(group, member, loc)
                self._reads[-1].add((group, member))
        for v in writes:
            group, member = self.member_of(v)
            if group is not None:
                self._make_current(group, member, loc)  # a partial write keeps the rest
                group.current = {member}

    def block_start(self) -> None:
        self._reads.append(set())

    def block_end(self, loop_body: bool, loc=None) -> None:
        """Before a block is closed: see the module docstring."""
        reads = self._reads.pop()
        if self._reads:
            self._reads[-1] |= reads
        depth = len(self.tracer._blocks)
        if loop_body:
            for group, member in reads:
                if member in group.members:
                    self._make_current(group, member, loc)
        for group in {g for g in self._group_of.values()}:
            ending = [m for m, (_, d) in group.members.items() if d == depth]
            if not ending:
                continue
            self._make_current(group, group.source.id, loc)
            for m in ending:
                del group.members[m]
                group.current.discard(m)
                self._group_of.pop(m, None)
            if len(group.members) == 1:
                self._group_of.pop(group.source.id, None)

    # ---- copies --------------------------------------------------------------------------------
    def _make_current(self, group, member, loc) -> None:
        if member in group.current:
            return
        src_id = group.source.id
        if src_id not in group.current:
            holder = group.members[next(iter(group.current))][0]
            self._copy(holder, group.source, loc)
            group.current.add(src_id)
        if member != src_id:
            self._copy(group.source, group.members[member][0], loc)
            group.current.add(member)

    def _copy(self, src, dst, loc) -> None:
        """``dst[...] = reshape(src, dst.shape)`` as tensor ops."""
        t = self.tracer
        loc = loc or dst.loc or src.loc  # the line of the inplace reshape
        self._syncing = True
        try:
            flat = t.new_value(src.dtype, dst.shape, name=f"{dst.name}_sync", loc=loc)
            t.emit("reshape", [src], [flat], {"shape": tuple(dst.shape), "valid": None}, loc)
            t.emit("assemble", [flat, dst], [dst], {"offsets": (0,) * dst.rank, "parallel": False}, loc)
        finally:
            self._syncing = False
