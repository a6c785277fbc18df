"""One registration per operator: its kind, accepted dtypes and reference semantics.

The user-facing builder function of an op (``pypto.add`` ...) sits next to its registration and
holds the shape and dtype rule; ``compute`` is the reference semantics on torch tensors holding
the *valid* part of each operand. Later levels (tile expansion, cost class) hang off the same
`OpDef`.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Callable, Optional

from ..dtypes import DType


@dataclass(frozen=True)
class OpDef:
    """Everything pypto knows about one operator.

    ``compute(ins, attrs, ev)`` gets torch tensors (the valid region of each input), the op's
    attrs and ``ev`` (evaluates symbolic attrs for the current iteration); it returns a tensor or
    a tuple of tensors, which the executor casts to the declared output dtypes. With
    ``fp32_math`` fp16/bf16 inputs are computed in fp32 and cast back, as upstream does.
    """

    name: str
    kind: str  # "vector", "cube", "move", "create", "scalar"
    compute: Callable
    fp32_math: bool = False
    dtypes: Optional[tuple] = None  # dtypes of the first tensor operand; None: any supported
    doc: str = ""
    aliases_input: bool = False  # output shares storage with input 0 (view, reshape)
    writes_input: Optional[int] = None  # index of an input written in place (assemble's dst)
    extra: dict = field(default_factory=dict)
    # the same op computed into ins[0] (a buffer the leaf no longer needs): generated code uses it
    # to save a tile's memory when the first operand dies here; None when there is no such form
    inplace: Optional[Callable] = None
    # the same op computed into a given destination ``into(ins, attrs, ev, dst)`` (a view of the GM
    # tensor the result goes to, of the result's shape and dtype): generated code uses it so that
    # a leaf's result is written where it belongs instead of into a fresh tile copied there
    into: Optional[Callable] = None


REGISTRY: dict[str, OpDef] = {}


def register(name: str, *, kind: str, fp32_math: bool = False, dtypes: tuple[DType, ...] | None = None,
             aliases_input: bool = False, writes_input: int | None = None, inplace: Callable | None = None,
             into: Callable | None = None):
    """Decorator registering ``compute`` as the reference semantics of op ``name``."""

    def deco(compute: Callable) -> Callable:
        if name in REGISTRY:
            raise RuntimeError(f"op {name!r} registered twice")
        REGISTRY[name] = OpDef(name, kind, compute, fp32_math, dtypes, (compute.__doc__ or "").strip(),
                               aliases_input, writes_input, inplace=inplace, into=into)
        return compute

    return deco


def get(name: str) -> OpDef:
    return REGISTRY[name]
