"""GM storage of one kernel call and the identity of every GM buffer.

A buffer is named by a *region key*:

* a kernel parameter, or a value the whole kernel shares: its value id;
* a value created inside ``pypto.loop`` bodies and used by several root functions (``m``/``l``/
  ``acc`` of flash attention): ``(value id, loop index values)``, one buffer per iteration of the
  loops around its definition, as the program says (each iteration runs the definition again), so
  independent iterations never share an accumulator and can run together;
* a root function's own intermediate: ``(value id, root instance seq)``.

Storage is planned once per distinct set of sizes: every instance of one value with one shape
lives in one *slab* ``[instances, *shape]`` (instance k at offset k * numel), so the tiles of many
iterations are one strided view of one tensor. Element reads by control flow run the program
device task by device task instead, and allocate buffers as they are first touched.
"""

from __future__ import annotations

import math
from contextlib import contextmanager
from contextvars import ContextVar

from .._lazy import torch
from ..errors import KernelRuntimeError
from ..ir import expr as E
from ..ir.graph import Branch, Loop, Op
from .memory_budget import require_fits


def definition_scopes(program, global_ids) -> dict:
    """{value id: loop index names around its definition} for kernel-wide (escaping) values."""
    scopes: dict = {}

    def visit(region, loops):
        if isinstance(region, Branch):
            visit(region.then, loops)
            visit(region.orelse, loops)
            return
        for item in region.items:
            if isinstance(item, Op):
                for v in item.outputs:
                    while v is not None:
                        if v.id in global_ids and v.id not in scopes:
                            scopes[v.id] = loops
                        v = v.base
            elif isinstance(item, Loop):
                for body in item.bodies:
                    visit(body, loops + (item.index,))

    visit(program.body, ())
    return {k: v for k, v in scopes.items() if v}


def contiguous_strides(shape) -> tuple:
    out, acc = [], 1
    for s in reversed(shape):
        out.append(acc)
        acc *= max(int(s), 1)
    return tuple(reversed(out))


class Buffer:
    """Where one region key lives: storage index, element offset, shape and strides."""

    __slots__ = ("storage", "offset", "shape", "strides")

    def __init__(self, storage, offset, shape, strides):
        self.storage, self.offset, self.shape, self.strides = storage, offset, shape, strides


class Layout:
    """The storage plan of a call: parameters first, then one tensor per slab."""

    def __init__(self, lowered, param_shapes):
        self.lowered = lowered
        self.n_params = len(param_shapes)
        self.buffers: dict = {}  # region key -> Buffer
        self.slabs: list = []  # (shape, torch dtype) per allocated storage
        for i, (p, shape) in enumerate(zip(lowered.program.params, param_shapes)):
            self.buffers[p.value.id] = Buffer(i, 0, tuple(shape), contiguous_strides(shape))
        self._pending: dict = {}  # value id -> {instance key: (shape, dtype)} in first-use order
        self._written: dict = {}  # instance key -> elements written by the call's tasks
        self._local: set = set()  # value ids of pypto.tensor locals (they start at zero)
        self._static: dict = {}  # value id -> (shape, torch dtype) of a value of fixed sizes (`note`)
        self.zeroed: list = []  # per slab: must it start at zero?
        # region key -> (key of the buffer whose memory it is, that value, env, own shape): values
        # living in another's memory (passes/aliasing.py) get no storage of their own
        self.alias: dict = {}

    def note_aliases(self, task) -> None:
        """Record the operands of ``task`` that live in another value's memory."""
        if task.alias is None:
            return
        env = task.root.env
        for key, a, entry in zip(task.keys, task.call.args, task.alias):
            if entry is not None and key not in self.alias:
                self.alias[key] = (entry[0], entry[1], env, tuple(int(E.evaluate(s, env)) for s in a.value.shape))

    def note(self, key, value, env, written: int = 0) -> None:
        """Record that region ``key`` (a workspace instance of ``value``) is used under ``env``, and
        ``written`` elements of it written by one access."""
        if key in self.buffers:
            return
        inst = self._pending.get(value.id)
        if inst is None:
            inst = self._pending[value.id] = {}
        if key not in inst:
            made = self._static.get(value.id)
            if made is None:
                made = (tuple(int(E.evaluate(s, env)) for s in value.shape), value.dtype.torch())
                if all(type(s) is int for s in value.shape):  # the same for every instance
                    self._static[value.id] = made
            inst[key] = made
            if value.kind == "local":
                self._local.add(value.id)
        self._written[key] = self._written.get(key, 0) + written

    def finish(self) -> None:
        """Allocate slabs for every noted workspace (one per value and shape), then place the
        buffers that live in another's memory."""
        self._allocate_pending()
        for key in self.alias:
            self.place(key)

    def place(self, key) -> Buffer:
        """The Buffer of an aliased region key: its target's memory seen with its own shape."""
        buf = self.buffers.get(key)
        if buf is not None:
            return buf
        target, value, env, shape = self.alias[key]
        tb = self.place(target) if target in self.alias else self.buffers.get(target)
        if tb is None:  # a memory only reached through its aliases: a workspace of its own
            self.note(target, value, env)
            self._allocate_pending()
            tb = self.buffers[target]
        if tuple(tb.strides) != contiguous_strides(tb.shape):
            raise KernelRuntimeError(f"internal: the memory of %{value.name} is not contiguous: it cannot be "
                                     "seen under another shape")
        buf = self.buffers[key] = Buffer(tb.storage, tb.offset, shape, contiguous_strides(shape))
        return buf

    def _allocate_pending(self) -> None:
        for vid, inst in self._pending.items():
            by_shape: dict = {}
            for key, (shape, dtype) in inst.items():
                by_shape.setdefault((shape, dtype), []).append(key)
            for (shape, dtype), keys in by_shape.items():
                sid = self.n_params + len(self.slabs)
                self.slabs.append(((len(keys), *shape), dtype))
                numel = math.prod(shape)
                # a workspace the call writes whole before reading needs no zero fill; a local
                # tensor, or one written only in part, starts at zero as the program says
                self.zeroed.append(vid in self._local or any(self._written.get(k, 0) < numel for k in keys))
                strides = contiguous_strides(shape)
                for k, key in enumerate(keys):
                    self.buffers[key] = Buffer(sid, k * numel, shape, strides)
        self._pending.clear()
        self._written.clear()

    @property
    def nbytes(self) -> int:
        return sum(math.prod(shape) * dtype.itemsize for shape, dtype in self.slabs)

    def refill(self, slabs: list) -> list:
        """The slabs of a previous call made ready for another: zeroed where they must start at 0."""
        for t, z in zip(slabs, self.zeroed):
            if z:
                t.zero_()
        return slabs

    def allocate(self) -> list:
        """Fresh slabs for one call: zeroed where the program may read what it did not write (the
        others filled with `unwritten_fill`'s value when one is set)."""
        fill = _UNWRITTEN_FILL.get()
        if fill is not None:
            return [torch.zeros(shape, dtype=dtype) if z else torch.full(shape, fill, dtype=dtype)
                    for (shape, dtype), z in zip(self.slabs, self.zeroed)]
        return [(torch.zeros if z else torch.empty)(shape, dtype=dtype) for (shape, dtype), z in
                zip(self.slabs, self.zeroed)]


_UNWRITTEN_FILL: ContextVar = ContextVar("unwritten_fill", default=None)


@contextmanager
def unwritten_fill(value):
    """Workspaces allocated meanwhile (`Layout.allocate`) start at ``value`` where the program is
    planned to write before reading (normally left uninitialized): two runs with two values show
    which results depend on memory the program never wrote (pass bisection, `pass_bisect.py`)."""
    token = _UNWRITTEN_FILL.set(value)
    try:
        yield
    finally:
        _UNWRITTEN_FILL.reset(token)


class Memory:
    """The GM tensors of one call: ``tensors[storage]`` and the layout that places buffers in them.

    With ``lazy`` (element-reading programs) a buffer gets its own tensor when first touched.
    """

    def __init__(self, layout: Layout, tensors: list, lazy: bool = False):
        self.layout = layout
        self.tensors = tensors
        self.lazy = lazy
        self.values: dict = {}  # value id -> the tensor of its last instance (pass verify reads them)

    def buffer(self, key, value, env) -> Buffer:
        buf = self.layout.buffers.get(key)
        if buf is None:
            if key in self.layout.alias:
                target, tvalue, tenv, shape = self.layout.alias[key]
                tb = self.buffer(target, tvalue, tenv)
                buf = self.layout.buffers[key] = Buffer(tb.storage, tb.offset, shape, contiguous_strides(shape))
                return buf
            if not self.lazy:
                raise KeyError(key)
            shape = tuple(int(E.evaluate(s, env)) for s in value.shape)
            require_fits(int(math.prod(shape) * value.dtype.itemsize), f"the workspace of %{value.name}", None)
            self.tensors.append(torch.zeros(shape, dtype=value.dtype.torch()))
            buf = self.layout.buffers[key] = Buffer(len(self.tensors) - 1, 0, shape, contiguous_strides(shape))
        return buf

    def instance(self, key, value, env):
        """The tensor of one buffer instance (a view into its slab)."""
        buf = self.buffer(key, value, env)
        t = self.tensors[buf.storage]
        if buf.storage < self.layout.n_params and tuple(t.shape) == tuple(buf.shape):
            return t
        return t.reshape(-1)[buf.offset:buf.offset + math.prod(buf.shape)].view(buf.shape)

    def last_instance(self, value):
        """The tensor of the last instance of ``value`` (None if the call never made one)."""
        key = None
        for k in self.layout.buffers:
            if k == value.id or (isinstance(k, tuple) and k[0] == value.id):
                key = k
        return None if key is None else self.instance(key, value, {})
