"""Layout ops that move no data: GM values that are another value's memory under a new shape.

On the device a reshape of contiguous data is metadata: the reshaped tensor is the same bytes
with other dims. Lowering it to a copy task (GM -> UB -> GM) makes work the hardware never does.
Two rewrites remove such copies, each only where the program cannot tell the difference:

* **reshape alias**: ``r = reshape(v)`` becomes no task; ``r``'s buffer is ``v``'s memory seen with
  ``r``'s shape. Safe when nothing ever writes ``r`` or ``v`` after ``v`` is made: a plain reshape
  is a copy, so a write through either name must not be seen through the other (those keep the
  copy; ``inplace=True`` reshapes keep their own mechanism, frontend/aliases.py).
* **result forwarding**: ``assemble(e, [0, ..], out)`` of a whole, fully valid result into a
  kernel output that nothing else reads or writes becomes no task: ``e``'s producer writes its
  result into ``out``'s memory directly (``e`` is ``out`` seen with ``e``'s shape).

Both record ``aliases[value id] = target value``: the value's GM buffer is the target's buffer,
reinterpreted row-major (runtime/memory.py places it; the dependency engine sees accesses of it
as accesses of the final target, runtime/reinterpret.py). Accesses of a value whose final target
no call writes need no dependency at all and keep their own region.
"""

from __future__ import annotations

from ..ir import expr as E
from ..ir.graph import Op, iter_blocks, iter_ops
from ..ops.registry import REGISTRY


def _numel(shape):
    n = 1
    for s in shape:
        n = E.mul(n, s)
    return E.simplify_dim(n)


def _same_dims(a, b) -> bool:
    return len(a) == len(b) and all(E.simplify_dim(E.sub(x, y)) == 0 for x, y in zip(a, b))


def _fully_valid(v) -> bool:
    return _same_dims(v.shape, v.valid_shape)


class LayoutAliases:
    """``aliases`` {value id: target Value}, ``dropped`` (the ops that become no task; ops, not ids:
    autocast numbers its ops apart from the tracer) and
    ``storage`` {value id: id of the final target} for the values whose memory is another's."""

    def __init__(self, program, views: dict):
        self.aliases: dict = {}
        self.sources: dict = {}  # value id -> the Value itself (for listings)
        self.dropped: set = set()
        written, reads = self._accesses(program)
        self._reshapes(program, views, written)
        self._forwards(program, views, written, reads)
        self.storage = {vid: self.final(vid).id for vid in self.aliases}

    def final(self, vid):
        """The value at the end of ``vid``'s alias chain (the memory it lives in)."""
        v = self.aliases[vid]
        while v.id in self.aliases:
            v = self.aliases[v.id]
        return v

    @staticmethod
    def _accesses(program):
        """({root id: number of ops writing into it}, {root id: number of ops reading it})."""
        written: dict = {}
        reads: dict = {}
        for op in iter_ops(program.body):
            w = REGISTRY[op.kind].writes_input if op.kind in REGISTRY else None
            if op.kind == "assemble":
                w = 1
            for k, v in enumerate(op.inputs):
                rid = v.root.id
                if k == w:
                    written[rid] = written.get(rid, 0) + 1
                else:
                    reads[rid] = reads.get(rid, 0) + 1
        for block in iter_blocks(program.body):
            for v in block.returns or ():
                reads[v.root.id] = reads.get(v.root.id, 0) + 1
        return written, reads

    def _reshapes(self, program, views, written):
        # values reshaped again (an in-place reshape, frontend/aliases.py, is a second name of
        # the memory, which this placement does not follow); a value only read through views
        # (GLM's paged K/V cache: reshape then a view per block) is still plain memory
        based = {op.inputs[0].id for op in iter_ops(program.body) if op.kind == "reshape"}
        # only the kernel's top-level block: inside a loop a value is a buffer per iteration, and
        # aliases there tied fused groups into a cycle (upstream's GLM MoE fusion) and gave a
        # wrong key cache (DeepSeek's MLA prolog: a reshape of a loop result then an in-place
        # reshape read by scatter_update); tests/kernels/test_layout_aliases.py keeps both forms
        top = [item for item in getattr(program.body, "items", ()) if isinstance(item, Op)]
        for op in top:
            if op.kind != "reshape":
                continue
            v, r = op.inputs[0], op.outputs[0]
            if v.id in views or v.kind not in ("param", "op") or r.dtype is not v.dtype:
                continue  # a window of a tensor is not contiguous memory
            if written.get(r.root.id) or written.get(v.root.id) or written.get(r.id):
                continue  # a write through one name must not show through the other: keep the copy
            if r.id in based:
                continue  # r is seen through another name (an in-place reshape of it): keep the copy
            if not (_fully_valid(v) and _fully_valid(r)):
                continue  # a partly valid tensor (a loop's tail tile) is not its full shape's row-major bytes
            self.aliases[r.id] = v
            self.sources[r.id] = r
            self.dropped.add(op)

    def _forwards(self, program, views, written, reads):
        body = program.body
        if not hasattr(body, "items"):
            return
        producer = {}  # value id -> its op, for the ops of the kernel's top-level block only
        for item in body.items:
            if not isinstance(item, Op):
                continue
            for v in item.outputs:
                producer[v.id] = item
            if item.kind != "assemble" or item in self.dropped:
                continue
            src, dst = item.inputs
            if any(not (isinstance(o, int) and o == 0) for o in item.attrs["offsets"]):
                continue
            if dst.kind != "param" or dst.id in views or dst.base is not None or written.get(dst.id) != 1 \
                    or reads.get(dst.id) or dst.dtype is not src.dtype:
                continue  # the output must be this assemble's alone
            t = src
            while t.id in self.aliases:
                t = self.aliases[t.id]
            if t.kind != "op" or t.id in views or t.id not in producer or producer[t.id].kind in ("tensor", "view") \
                    or written.get(t.id) or written.get(t.root.id):
                continue  # only a result made in this block by an op can be made in place
            if t.rank < dst.rank or not (_fully_valid(src) and _fully_valid(t)):
                continue
            if not (_same_dims(src.shape, dst.shape) or _same_dims((_numel(src.shape),), (_numel(dst.shape),))):
                continue
            self.aliases[t.id] = dst
            self.sources[t.id] = t
            self.dropped.add(item)
