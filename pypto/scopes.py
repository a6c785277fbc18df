"""Scopes: settings that hold for a block of code, in one thread or asyncio task only.

``with pypto.options(...)`` (and the lab's `pypto.options.forced`) pushes a *layer* onto a stack of
scopes; leaving the block pops it. A layer holds option values (``options.py`` resolves them) and
other scoped settings made inside the block: the tile shapes of `pypto.set_vec_tile_shapes` /
`set_cube_tile_shapes` called outside a kernel, and the machine of `pypto.set_machine`.

The stack lives in a `contextvars.ContextVar`, so each thread and each asyncio task sees its own:
a scope one thread enters never changes what another thread compiles or runs. A new thread starts
with no scopes; an asyncio task starts with the scopes active where it was created (a snapshot:
what it changes stays its own). Settings made outside any scope are process-wide, as before.

A stack is immutable: every change builds a new one with a fresh ``gen`` number, so a cache keyed
by ``(global version, stack.gen)`` (`pypto.options.state_version`) is exact and cheap to check.
"""

from __future__ import annotations

import contextvars
import itertools
from typing import Any

_generation = itertools.count(1)  # next() is atomic under the GIL: gens are unique across threads


class Layer:
    """One active scope: who pushed it, its option values (group -> {name: value}) and its other
    scoped settings (name -> value). Never changed in place (copy on write)."""

    __slots__ = ("owner", "options", "extras")

    def __init__(self, owner: object, options: dict, extras: dict | None = None):
        self.owner, self.options, self.extras = owner, options, extras or {}

    def with_options(self, validated: dict) -> "Layer":
        merged = {g: dict(v) for g, v in self.options.items()}
        for group, values in validated.items():
            merged.setdefault(group, {}).update(values)
        return Layer(self.owner, merged, self.extras)

    def with_extra(self, name: str, value: Any) -> "Layer":
        return Layer(self.owner, self.options, {**self.extras, name: value})


class Stack:
    """The scopes active in one context: ``scopes`` (innermost last), ``forced`` (innermost last),
    ``extras`` (the scoped settings they make, innermost winning) and a unique ``gen``."""

    __slots__ = ("scopes", "forced", "gen", "extras", "memo")

    def __init__(self, scopes: tuple = (), forced: tuple = ()):
        self.scopes, self.forced = scopes, forced
        self.gen = next(_generation)
        extras: dict = {}
        for layer in scopes:
            extras.update(layer.extras)
        self.extras = extras
        self.memo: dict = {}  # options.py's resolved values for this stack, per global version

    def replace(self, scopes: tuple | None = None, forced: tuple | None = None) -> "Stack":
        return Stack(self.scopes if scopes is None else scopes, self.forced if forced is None else forced)


_current: contextvars.ContextVar = contextvars.ContextVar("pypto_scopes", default=Stack())


def stack() -> Stack:
    """The scopes active in this thread / task."""
    return _current.get()


def _set(new: Stack) -> None:
    _current.set(new)


def push(owner: object, options: dict, *, forced: bool = False) -> None:
    """Enter a scope owned by ``owner`` (the object whose `pop` ends it)."""
    s = _current.get()
    layer = Layer(owner, {g: dict(v) for g, v in options.items()})
    _set(s.replace(forced=s.forced + (layer,)) if forced else s.replace(scopes=s.scopes + (layer,)))


def pop(owner: object, *, forced: bool = False) -> None:
    """Leave the innermost scope ``owner`` entered in this context, and any left open above it."""
    s = _current.get()
    layers = s.forced if forced else s.scopes
    for i in range(len(layers) - 1, -1, -1):
        if layers[i].owner is owner:
            _set(s.replace(forced=layers[:i]) if forced else s.replace(scopes=layers[:i]))
            return


def set_innermost(change) -> bool:
    """Replace the innermost scope with ``change(layer)``; False (nothing done) when no scope is
    active in this context, so the caller sets its process-wide value instead."""
    s = _current.get()
    if not s.scopes:
        return False
    _set(s.replace(scopes=s.scopes[:-1] + (change(s.scopes[-1]),)))
    return True


def map_scopes(change) -> None:
    """Replace every scope of this context with ``change(layer)`` (reset_options)."""
    s = _current.get()
    if s.scopes:
        _set(s.replace(scopes=tuple(change(layer) for layer in s.scopes)))


def extra(name: str, default: Any) -> Any:
    """The value a scope of this context gives the setting ``name``, else ``default``."""
    return _current.get().extras.get(name, default)


def set_extra(name: str, value: Any) -> bool:
    """Set ``name`` in the innermost scope of this context; False when no scope is active."""
    return set_innermost(lambda layer: layer.with_extra(name, value))
