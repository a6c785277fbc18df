"""The Tensor Graph: values, operations, loops, runtime branches and the program that holds them.

A program is a tree of regions. A `Block` is a straight line of `Op`s and `Loop`s traced along one
control-flow path; a `Branch` chooses between two regions with a symbolic condition evaluated at
run time. Loop bodies are regions too, so a condition inside ``pypto.loop`` becomes one traced
body per path, as upstream compiles one function per loop-body path.

Nodes are immutable once tracing has finished.
"""

from __future__ import annotations

from dataclasses import dataclass, field, replace
from types import MappingProxyType
from typing import Iterator, Optional, Union

from ..dtypes import DType
from ..errors import SourceLoc
from .expr import Dim, Expr, free_symbols


@dataclass(frozen=True, eq=False)
class Value:
    """A logical tensor: dtype, (possibly symbolic) shape and valid shape.

    ``kind`` is "param" (a kernel argument), "local" (``pypto.tensor``) or "op" (an op result).
    ``base`` is the value this one aliases (views and reshapes write through to it).
    """

    id: int
    name: str
    dtype: DType
    shape: tuple
    valid_shape: tuple
    kind: str = "op"
    base: Optional["Value"] = None
    loc: Optional[SourceLoc] = None

    @property
    def rank(self) -> int:
        return len(self.shape)

    @property
    def root(self) -> "Value":
        v = self
        while v.base is not None:
            v = v.base
        return v

    def __repr__(self) -> str:
        return f"%{self.name}"


@dataclass(frozen=True)
class TileShapes:
    """The tile shapes current when an op was created (``set_*_tile_shapes``)."""

    vec: Optional[tuple] = None  # one L0 size per dimension
    cube: Optional[tuple] = None  # ((mL0, mL1), (kL0, kL1), (nL0, nL1), enable_split_k)


@dataclass(frozen=True, eq=False)
class Op:
    """One operation of the Tensor Graph. ``attrs`` is read-only; use `replace` to change an op."""

    id: int
    kind: str
    inputs: tuple
    outputs: tuple
    attrs: MappingProxyType = field(default_factory=lambda: MappingProxyType({}))
    tiles: TileShapes = TileShapes()
    loc: Optional[SourceLoc] = None
    # the subgraph scope it was traced under (`set_pass_options(sg_set_scope=...)`): None, or
    # (scope id, allow_parallel_merge, allow_cross_scope_merge); passes/memory.py fuses by it
    scope: Optional[tuple] = None

    def replace(self, **kw) -> "Op":
        return replace(self, **kw)


@dataclass(frozen=True, eq=False)
class Block:
    """A straight line of ops and loops traced along one path; ``returns`` are its returned values."""

    items: tuple
    returns: Optional[tuple] = None


@dataclass(frozen=True, eq=False)
class Branch:
    """A runtime choice: ``then`` runs when ``cond`` is true, else ``orelse``."""

    cond: Expr
    then: "Region"
    orelse: "Region"
    loc: Optional[SourceLoc] = None


Region = Union[Block, Branch]


@dataclass(frozen=True, eq=False)
class Loop:
    """A runtime loop (``pypto.loop`` / ``pypto.loop_unroll``) with a symbolic trip count.

    For ``loop_unroll`` ``factors`` holds the unroll factors (descending, ending with 1) and
    ``bodies`` one traced region per factor; a plain loop has ``factors == (1,)``.
    """

    id: int
    name: str
    index: str
    start: Dim
    stop: Dim
    step: Dim
    factors: tuple
    bodies: tuple
    parallel: bool = False
    submit_before_loop: bool = False
    loc: Optional[SourceLoc] = None


@dataclass(frozen=True)
class TensorParam:
    """A tensor parameter of the kernel and the value that stands for it in the graph."""

    name: str
    index: int
    value: Value
    layout: str = "ND"  # "NZ": the cube's fractal layout (TileOpFormat.TILEOP_NZ), for the timing


@dataclass(frozen=True, eq=False)
class Program:
    """A traced kernel: its tensor parameters, constants and body region."""

    name: str
    params: tuple
    constants: tuple  # ((name, value), ...)
    body: Region
    symbols: tuple  # names of dynamic-dimension symbols, in signature order
    loc: Optional[SourceLoc] = None
    guards: tuple = ()  # SizeGuards: runtime sizes the program assumes equal (guards.py)

    def ops(self) -> Iterator[Op]:
        """Every op of the program, in trace order, across loops and branches."""
        yield from iter_ops(self.body)

    def loops(self) -> Iterator[Loop]:
        yield from (x for x in iter_items(self.body) if isinstance(x, Loop))


def iter_items(region) -> Iterator:
    """Every op and loop under ``region`` (depth first, trace order)."""
    if isinstance(region, Branch):
        yield from iter_items(region.then)
        yield from iter_items(region.orelse)
        return
    for item in region.items:
        yield item
        if isinstance(item, Loop):
            for body in item.bodies:
                yield from iter_items(body)


def iter_ops(region) -> Iterator[Op]:
    return (x for x in iter_items(region) if isinstance(x, Op))


def iter_blocks(region) -> Iterator[Block]:
    if isinstance(region, Branch):
        yield from iter_blocks(region.then)
        yield from iter_blocks(region.orelse)
        return
    yield region
    for item in region.items:
        if isinstance(item, Loop):
            for body in item.bodies:
                yield from iter_blocks(body)


def unbound_symbols(program: "Program") -> frozenset:
    """Names the program reads that nothing binds: neither a dynamic dim of a parameter nor a loop
    index (a user's own ``SymbolicScalar("name")``). They read 0 at run time, as the entries of the
    device's symbol table start at zero."""
    used: set = set()
    bound = set(program.symbols)

    def expr(x):
        if isinstance(x, Expr):
            used.update(free_symbols(x))
        elif isinstance(x, (tuple, list)):
            for y in x:
                expr(y)

    def region(r):
        if isinstance(r, Branch):
            expr(r.cond)
            region(r.then)
            region(r.orelse)
            return
        for item in r.items:
            if isinstance(item, Loop):
                bound.add(item.index)
                expr((item.start, item.stop, item.step))
                for body in item.bodies:
                    region(body)
            else:
                expr(tuple(item.attrs.values()))
                for v in item.inputs + item.outputs:
                    expr((v.shape, v.valid_shape))

    region(program.body)
    return frozenset(used - bound)
