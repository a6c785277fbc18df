"""The memory a kernel keeps between calls: its plans' workspaces and temporaries, bounded in bytes.

A cached call reuses the GM workspaces and the leaf temporaries of the previous call with the same
sizes instead of allocating them again (fresh pages cost more than computing into old ones, and
at large sizes they are most of the call). What is kept is bounded per kernel, in bytes: when a
plan hands its tensors back and the kernel would hold more than its budget, the tensors of the
plans used least recently are dropped first (their next call allocates again); tensors larger
than the whole budget are never kept.
"""

from __future__ import annotations

import threading
import weakref
from collections import OrderedDict

DEFAULT_BYTES = 256 << 20  # per kernel


def check_budget(value, loc=None) -> int:
    """``value`` as a workspace budget in bytes (an int >= 0), or a clear error."""
    from ..errors import ArgumentTypeError, ArgumentValueError

    if isinstance(value, bool) or not isinstance(value, int):
        raise ArgumentTypeError("pypto.jit: 'workspace_bytes' must be an int (bytes kept between calls)",
                                expected="int >= 0", got=repr(value), param="workspace_bytes", loc=loc)
    if value < 0:
        raise ArgumentValueError("pypto.jit: 'workspace_bytes' must not be negative",
                                 expected="int >= 0", got=repr(value), param="workspace_bytes", loc=loc)
    return value


class WorkspaceBudget:
    """What the plans of one kernel keep between calls, least recently used first out."""

    def __init__(self, limit: int = DEFAULT_BYTES):
        self.limit = limit
        self._lock = threading.Lock()
        self._held: OrderedDict = OrderedDict()  # id(plan) -> (weakref to the plan, bytes)

    @property
    def held(self) -> int:
        """Bytes kept now."""
        with self._lock:
            return sum(n for _, n in self._held.values())

    def resize(self, limit: int) -> None:
        """A new limit; what no longer fits is dropped now."""
        with self._lock:
            self.limit = limit
            self._shrink(0, None)

    def keep(self, plan, sizes: list) -> None:
        """Let ``plan`` keep what fits of its items (``sizes``: bytes of each, kept whole or not at
        all, largest first): ``plan.store(grant)`` gets one boolean per item, under the budget's
        lock; the tensors of the plans used least recently are dropped to make room."""
        key = id(plan)
        with self._lock:
            self._held.pop(key, None)
            grant, total = [False] * len(sizes), 0
            for k in sorted(range(len(sizes)), key=lambda k: -sizes[k]):
                if sizes[k] and total + sizes[k] <= self.limit:
                    grant[k] = True
                    total += sizes[k]
            self._shrink(total, key)
            plan.store(grant)
            if total:
                self._held[key] = (weakref.ref(plan, self._gone(key)), total)

    def forget(self, plan) -> None:
        with self._lock:
            self._held.pop(id(plan), None)

    def _gone(self, key):
        def callback(_ref):
            with self._lock:
                entry = self._held.get(key)
                if entry is not None and entry[0]() is None:
                    del self._held[key]
        return callback

    def _shrink(self, incoming: int, keeper) -> None:
        """Drop the least recently kept plans' tensors until ``incoming`` more bytes fit."""
        total = sum(n for _, n in self._held.values()) + incoming
        while total > self.limit and self._held:
            key, (ref, n) = self._held.popitem(last=False)
            total -= n
            plan = ref()
            if plan is not None and key != keeper:
                plan.release()
