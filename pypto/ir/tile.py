"""The lower graph levels: Tile Graph, Block Graph (leaf functions) and Execute Graph (roots).

A `TileOp` is one operation applied to every point of a *grid* of tiles: expansion of an add over
a [256, 256] tensor with 32x32 tiles is one TileOp with grid (8, 8). Each operand is an `Access`:
which tensor (and memory level) a tile comes from and how its offset moves with the grid index.
Keeping the grid symbolic lets a DYNAMIC extent be tiled without recompiling; the runtime
enumerates the grid points (tile instances) of each call.
"""

from __future__ import annotations

from dataclasses import dataclass, field, replace
from functools import cached_property
from types import MappingProxyType
from typing import Optional

from ..errors import SourceLoc
from . import expr as E
from .graph import Value

MEMORY_LEVELS = ("GM", "UB", "L1", "L0A", "L0B", "L0C")


@dataclass(frozen=True)
class Access:
    """How one operand of a tile op is addressed at grid point ``g``.

    Per dim ``d``: offset = ``base[d] + g[axis[d]] * shape[d]`` (``axis[d]`` None: not tiled,
    offset ``base[d]``); valid extent = ``clamp(extent[d] - (offset - base[d]), 0, shape[d])``.
    ``shape`` entries are ints, or an Expr for a tile spanning a runtime extent.
    """

    value: Value
    mem: str
    shape: tuple
    base: tuple
    axis: tuple
    extent: tuple

    @property
    def dtype(self):
        return self.value.dtype

    @cached_property
    def local_key(self) -> tuple:
        """Identity of a local (on-chip) tile: two windows of one tensor are two buffers."""
        return (self.value.id, self.mem, self.base, self.shape, self.axis)

    def in_mem(self, mem: str) -> "Access":
        """The same window of the same tensor, in memory level ``mem``."""
        return Access(self.value, mem, self.shape, self.base, self.axis, self.extent)

    def valid_exprs(self, grid_syms) -> tuple:
        """Symbolic valid extent per dim, with grid indices named by ``grid_syms``."""
        out = []
        for d, (s, a, x) in enumerate(zip(self.shape, self.axis, self.extent)):
            rel = 0 if a is None else E.mul(E.Sym(grid_syms[a], nonneg=True), s)
            out.append(E.clamp_extent(x, rel, s))
        return tuple(out)

    def describe(self) -> str:
        def dim(d):
            if self.axis[d] is None:
                return E.render(self.base[d])
            rel = f"g{self.axis[d]}*{E.render(self.shape[d])}"
            b = self.base[d]
            return rel if (isinstance(b, int) and b == 0) else f"{E.render(b)} + {rel}"
        offs = ", ".join(dim(d) for d in range(len(self.shape)))
        return f"{self.mem}:%{self.value.name}[{offs}] tile{E.render_dims(self.shape)}"


@dataclass(frozen=True, eq=False)
class TileOp:
    """One op over a grid of tiles. ``kind`` is a tensor op kind or a data move
    ("copy_in" GM->UB/L1, "copy_out" UB/L0C->GM, "l1_to_l0a", "l1_to_l0b")."""

    id: int
    kind: str
    inputs: tuple
    outputs: tuple
    grid: tuple
    attrs: MappingProxyType
    src: int  # id of the tensor op it came from
    core: str  # "AIV" or "AIC"
    loc: Optional[SourceLoc] = None
    scope: Optional[tuple] = None  # the tensor op's subgraph scope (ir/graph.py Op.scope)

    def replace(self, **kw) -> "TileOp":
        return replace(self, **kw)

    def describe(self) -> str:
        grid = "x".join(E.render(g) for g in self.grid) or "1"
        ins = ", ".join(a.describe() for a in self.inputs)
        outs = ", ".join(a.describe() for a in self.outputs)
        attrs = ", ".join(f"{k}={E.render_attr(v)}" for k, v in self.attrs.items() if k not in ("bcast",))
        return f"{outs} = {self.kind}({ins}{', ' if attrs and ins else ''}{attrs})  grid[{grid}] {self.core}"


@dataclass(frozen=True, eq=False)
class TileGraph:
    """The tile ops of one root segment, in a valid execution order."""

    ops: tuple


@dataclass(frozen=True, eq=False)
class Subgraph:
    """Tile ops fused to run together on one core for each grid point."""

    id: int
    ops: tuple
    grid: tuple
    core: str


@dataclass(frozen=True)
class Buffer:
    """A local buffer of a leaf function: memory level, byte offset and size, lifetime."""

    name: str
    mem: str
    offset: int
    nbytes: int
    first: int
    last: int


@dataclass(frozen=True, eq=False)
class LeafFunction:
    """A Block Graph: the ops one core runs per call; shared by isomorphic subgraphs.

    ``params`` are its GM operands (in order); ``ops`` are in execution order, and each op's
    GM accesses refer to params by position (``param_of[(op index, 'in'|'out', k)]``).
    """

    name: str
    core: str
    ops: tuple
    params: tuple  # (role, dtype, shape) per GM operand
    param_of: MappingProxyType
    buffers: tuple
    hash: str
    grid_rank: int


@dataclass(frozen=True, eq=False)
class CallOp:
    """A call of a leaf function over a grid, with the GM accesses for this call site."""

    id: int
    leaf: LeafFunction
    grid: tuple
    args: tuple  # Access per leaf param
    writes: tuple  # indices of args written
    subgraph: int
    loc: Optional[SourceLoc] = None


@dataclass(frozen=True, eq=False)
class RootFunction:
    """The Execute Graph of one straight-line segment: leaf calls and their dependencies."""

    name: str
    calls: tuple
    deps: tuple  # (i, j): call j depends on call i
    tile_graph: TileGraph = field(repr=False, default=None)
    subgraphs: tuple = field(repr=False, default=())


def leaf_symbols(leaf) -> tuple:
    """Symbolic values a leaf's code evaluates (scalar attrs, runtime tile sizes): tasks are only
    batched together when these agree."""
    out = []
    for op in leaf.ops:
        for v in op.attrs.values():
            if isinstance(v, E.Expr):
                out.append(v)
        for a in op.inputs + op.outputs:
            out += [s for s in a.shape if isinstance(s, E.Expr)]
    return tuple(dict.fromkeys(out))
