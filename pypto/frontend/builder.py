"""The tracer: state of one compile while the kernel body runs on symbolic tensors.

The kernel body is ordinary Python executed once per control-flow path at compile time. Ops
append to the current block; ``pypto.loop`` opens a nested block; a condition on a symbolic value
asks the current `PathExplorer`, which answers True first and later replays the body with the
other answer, so each path is traced as a straight line (upstream compiles one function per
loop-body path the same way).
"""

from __future__ import annotations

import threading
from types import MappingProxyType
from typing import Optional

from .. import options as _options
from ..errors import KernelSyntaxError, PyptoError, SourceLoc, user_loc
from ..ir import expr as E
from ..ir.graph import Block, Branch, Op, TileShapes, Value
from ..ir.guards import LoopRange, SizeGuard, reduce_to_sizes, size_only
from .aliases import InplaceAliases

MAX_PATHS = 256  # per region; each path is compiled separately, so more is almost always a mistake

_state = threading.local()


def current() -> Optional["Tracer"]:
    """The tracer of the kernel being compiled on this thread, or None outside a kernel."""
    return getattr(_state, "tracer", None)


def require(what: str) -> "Tracer":
    t = current()
    if t is None:
        raise KernelSyntaxError(f"{what} can only be used inside a @pypto.jit kernel",
                                expected="a call in the body of a @pypto.jit kernel (while it is traced)",
                                got=f"{what} called outside any kernel", loc=user_loc(2))
    return t


class PathExplorer:
    """Enumerates the control-flow paths of one region by replaying it with different answers."""

    def __init__(self, loc: SourceLoc | None):
        self.loc = loc
        self.prefix: list = []  # (expr, answer) forced for the next replay
        self.decisions: list = []
        self.paths: list = []  # (decisions, block)

    def decide(self, cond: E.Expr, loc: SourceLoc | None) -> bool:
        pos = len(self.decisions)
        if pos >= MAX_PATHS:  # each decision is flipped once later, so this many means > MAX_PATHS paths
            raise KernelSyntaxError(
                f"more than {MAX_PATHS} runtime conditions on one control-flow path",
                got=f"condition {E.render(cond)}",
                hint="a Python while/for loop whose condition is symbolic never ends while tracing; "
                     "use pypto.loop(...) for runtime trip counts", loc=loc)
        if pos < len(self.prefix):
            expected, answer = self.prefix[pos]
            if expected != cond:
                raise KernelSyntaxError(
                    "the kernel took a different sequence of runtime conditions when replayed",
                    expected=f"condition {E.render(expected)}", got=f"condition {E.render(cond)}",
                    hint="conditions must depend only on symbolic values, not on Python state "
                         "changed while tracing", loc=loc)
        else:
            answer = True
        self.decisions.append((cond, answer, loc))
        return answer

    def finish(self, block: Block) -> bool:
        """Record the path just traced; True when another path remains to be traced."""
        self.paths.append((tuple(self.decisions), block))
        if len(self.paths) > MAX_PATHS:
            raise KernelSyntaxError(
                f"a region has more than {MAX_PATHS} control-flow paths",
                hint="each path compiles separately; use pypto.is_loop_begin/is_loop_end or "
                     "fewer conditions per loop body", loc=self.loc)
        answers = [(c, a) for c, a, _ in self.decisions]
        while answers and answers[-1][1] is False:
            answers.pop()
        self.decisions = []
        if not answers:
            self.prefix = []
            return False
        answers[-1] = (answers[-1][0], False)
        self.prefix = answers
        return True

    def region(self):
        return _build_tree([(list(d), b) for d, b in self.paths])


def _build_tree(paths):
    decisions, block = paths[0]
    if not decisions:
        return block
    cond, _, loc = decisions[0]
    then = [(d[1:], b) for d, b in paths if d[0][1]]
    orelse = [(d[1:], b) for d, b in paths if not d[0][1]]
    return Branch(cond, _build_tree(then), _build_tree(orelse), loc)


def _loaded_params(e) -> set:
    """Names of the tensors whose elements ``e`` reads."""
    out, stack = set(), [e]
    while stack:
        x = stack.pop()
        if isinstance(x, E.Load):
            out.add(x.param)
            stack += [i for i in x.indices if isinstance(i, E.Expr)]
        elif isinstance(x, E.Bin):
            stack += [x.a, x.b]
        elif isinstance(x, E.Not):
            stack.append(x.a)
    return out


def _written_params(items) -> set:
    """Names of the kernel parameters written by the ops in ``items`` (loops included)."""
    from ..ir.graph import Loop, iter_ops
    from ..ops.registry import REGISTRY

    out = set()
    for item in items:
        ops = [item] if isinstance(item, Op) else \
            [op for body in item.bodies for op in iter_ops(body)] if isinstance(item, Loop) else []
        for op in ops:
            w = REGISTRY[op.kind].writes_input if op.kind in REGISTRY else None
            if w is not None and op.inputs[w].root.kind == "param":
                out.add(op.inputs[w].root.name)
    return out


class Tracer:
    """Collects the Tensor Graph of one kernel compile."""

    def __init__(self, kernel_name: str, loop_names: dict | None = None):
        self.kernel_name = kernel_name
        self._next_id = 0
        self._blocks: list[list] = []
        self._explorers: list[PathExplorer] = []
        self.vec_tile: tuple | None = None
        self.cube_tile: tuple | None = None
        self._tiles: TileShapes | None = None
        self.loop_names = loop_names or {}  # (file, line) -> target variable name of a for loop
        self.active_indices: list[str] = []
        self.loop_info: dict = {}
        self.loop_factors: dict = {}  # loop index -> the loop's unroll factors (ir/guards.LoopRange)
        self._loop_count = 0
        self._names: dict[str, int] = {}
        self.host_bindings: list = []  # declared tensors made handles by .move() while tracing
        self.aliases = InplaceAliases(self)  # names of one memory made by reshape(..., inplace=True)
        self.cache_policies: dict = {}  # root value id -> CachePolicies (Tensor.set_cache_policy)
        self.size_guards: list = []  # SizeGuard: runtime sizes the program assumes equal (ir/guards.py)

    # ---- activation ----------------------------------------------------------------------------
    def __enter__(self):
        if current() is not None:
            raise KernelSyntaxError("a @pypto.jit kernel cannot be called while another is traced",
                                    loc=user_loc(2))
        _state.tracer = self
        return self

    def __exit__(self, *exc):
        _state.tracer = None
        for t in self.host_bindings:  # a declared tensor is a handle on a traced value only while tracing
            t._unbind()
        self.host_bindings.clear()
        return False

    # ---- ids and names -------------------------------------------------------------------------
    def new_id(self) -> int:
        self._next_id += 1
        return self._next_id

    def fresh_name(self, hint: str) -> str:
        n = self._names.get(hint, 0)
        self._names[hint] = n + 1
        return hint if n == 0 and not hint.isdigit() else f"{hint}_{n}"

    def new_value(self, dtype, shape, valid_shape=None, *, kind="op", base=None, name=None,
                  loc=None) -> Value:
        vid = self.new_id()
        shape = tuple(E.simplify_dim(d) for d in shape)
        valid = shape if valid_shape is None else tuple(E.simplify_dim(d) for d in valid_shape)
        return Value(vid, self.fresh_name(name or "t"), dtype, shape, valid, kind, base, loc)

    # ---- regions -------------------------------------------------------------------------------
    def push_block(self, explorer: PathExplorer | None = None):
        self._blocks.append([])
        self.aliases.block_start()
        if explorer is not None:
            self._explorers.append(explorer)

    def pop_block(self, explorer: PathExplorer | None = None, returns=None, loop_body: bool = False) -> Block:
        self.aliases.block_end(loop_body)
        items = self._blocks.pop()
        if explorer is not None:
            self._explorers.pop()
        return Block(tuple(items), returns)

    def append(self, item):
        if not self._blocks:
            raise PyptoError("internal: no open block while tracing")
        self._blocks[-1].append(item)

    def decide(self, cond: E.Expr) -> bool:
        """Answer a Python ``bool()`` on a symbolic condition for the path being traced."""
        if not self._explorers:
            raise KernelSyntaxError("internal: a runtime condition outside any region")
        loc = user_loc(3)
        clash = _loaded_params(cond) & _written_params(self._blocks[-1])
        if clash:
            # a region's conditions are decided when the region starts, before its ops run: the
            # condition would read the value from before the write (a silent wrong branch)
            name = sorted(clash)[0]
            raise KernelSyntaxError(
                f"a runtime condition reads tensor '{name}', which the kernel writes earlier in the same "
                f"region", got=f"condition {E.render(cond)}",
                hint="decide it in a region of its own that starts after the write, e.g. "
                     "`for _ in pypto.loop(1):` around the `if` (loops and pypto.loop bounds see "
                     "earlier writes)", loc=loc)
        return self._explorers[-1].decide(cond, loc)

    # ---- size relations ------------------------------------------------------------------------
    def require_equal(self, a, b, what: str, loc=None, rel: str = "eq") -> bool:
        """Record that sizes ``a`` and ``b`` must agree (``a <= b`` for ``rel`` "le") when the
        path being traced runs (checked before each call, `pypto.ir.guards`): reduced to the sizes
        it needs when both sides have the same form, else kept whole with the enclosing loops (a
        `LoopRange` each), to be checked for every iteration. False (nothing recorded) for a
        loop-dependent extent against a static one: the op computes the valid part."""
        a, b = E.simplify_dim(a), E.simplify_dim(b)
        if a == b:
            return True
        loops = set(self.loop_info)
        pairs = reduce_to_sizes(a, b, loops, rel)
        loc = loc or user_loc(3)
        if pairs is None:
            if not (isinstance(a, E.Expr) and isinstance(b, E.Expr)):
                # a view's tail tile with a tile of static size the kernel made (pypto.full): the
                # op computes the view's valid part, as upstream's valid shapes do
                return False
            # two extents of different forms through loop indices (a view shifted by a row): the
            # relation is checked for every iteration the enclosing loops run, before the run
            when = tuple((c, answer) for ex in self._explorers for c, answer, _ in ex.decisions)
            self.size_guards.append(SizeGuard(a, b, what, loc, when, rel, self._loop_nest()))
            return True
        when = self._size_conditions(loops)
        for x, y in pairs:
            self.size_guards.append(SizeGuard(x, y, what, loc, when, rel))
        return True

    def _loop_nest(self) -> tuple:
        """The `LoopRange` of each enclosing pypto.loop, outermost first."""
        out = []
        for index in self.active_indices:
            start, stop, step, factor = self.loop_info[index]
            out.append(LoopRange(index, start, stop, step, self.loop_factors.get(index, (1,)), factor))
        return tuple(out)

    def _size_conditions(self, loops) -> tuple:
        """The runtime conditions on sizes of the path being traced; conditions on loop indices or
        element values cannot be decided before the run and are left out (taken as true)."""
        return tuple((c, answer) for ex in self._explorers for c, answer, _ in ex.decisions
                     if size_only(c, loops))

    def require_exact(self, num, den, loc=None) -> None:
        """``num / den`` of runtime sizes: record that it must divide exactly (checked before each
        call); a division that mixes sizes with loop indices or element reads cannot be checked
        before the run and is refused here."""
        num, den = E.simplify_dim(num), E.simplify_dim(den)
        loc = loc or user_loc(3)
        loops = set(self.loop_info)
        syms = set().union(*(E.free_symbols(e) for e in (num, den) if isinstance(e, E.Expr)))
        if not syms or syms <= loops:
            return  # constants, loop indices or element values: `/` is upstream's integer division
        text = f"{E.render(num, 5)} / {E.render(den, 6)}"
        hint = f"write {E.render(num, 5)} // {E.render(den, 6)} to round down or " \
               f"pypto.ceildiv({E.render(num)}, {E.render(den)}) to round up"
        if not (size_only(num, loops) and size_only(den, loops)):
            raise KernelSyntaxError(f"true division mixing a runtime size with a loop index or element value: {text}",
                                    expected="// (floor) or pypto.ceildiv", got=text, hint=hint, loc=loc)
        rem = E.simplify_dim(E.mod(num, den))
        if isinstance(rem, int):
            if rem != 0:
                raise KernelSyntaxError(f"true division of a runtime size never divides exactly: {text}",
                                        expected="// (floor) or pypto.ceildiv", got=f"remainder {rem}",
                                        hint=hint, loc=loc)
            return
        self.size_guards.append(SizeGuard(num, den, "true division", loc, self._size_conditions(loops), "exact"))

    # ---- ops -----------------------------------------------------------------------------------
    def emit(self, kind: str, inputs, outputs, attrs=None, loc=None) -> Op:
        if self.aliases.active:
            self.aliases.before_op(kind, inputs, outputs, loc)
        tiles = self._tiles
        if tiles is None or tiles.vec != self.vec_tile or tiles.cube != self.cube_tile:
            tiles = self._tiles = TileShapes(self.vec_tile, self.cube_tile)  # shared by the ops after
        scope = _options.traced_scope()
        op = Op(self.new_id(), kind, tuple(inputs), tuple(outputs), MappingProxyType(dict(attrs or {})), tiles, loc,
                scope)
        self.append(op)
        return op
