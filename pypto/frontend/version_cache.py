"""The compiled versions of one kernel: bounded (least recently used out first), one compile per key.

A kernel compiles a version per distinct static signature (STATIC sizes, dtypes, constants,
compile-affecting options). Without a bound, a STATIC dim fed many sizes keeps every version alive,
so the cache holds at most ``maxsize`` versions (`DEFAULT_MAXSIZE` unless the kernel says otherwise,
``None`` = unbounded) and evicts the least recently used one beyond that.

Calls that race to a key nobody has compiled yet compile it once: the first becomes the owner and
compiles, the others wait for its result. An error of the owner's compile reaches every waiter
(each gets its own copy) and is not cached, so the next call tries again; an owner interrupted
(KeyboardInterrupt, SystemExit) hands the compile to a waiter instead.
"""

from __future__ import annotations

import copy
import threading
from collections import OrderedDict
from typing import Callable

DEFAULT_MAXSIZE = 128  # compiled versions kept per kernel (a compiled version holds its graphs and plans)


def check_maxsize(value, param: str = "cache_maxsize", loc=None):
    """``value`` if it is a valid bound (an int >= 1, or None for unbounded), else an error."""
    from ..errors import OptionError, OptionTypeError

    if value is None:
        return None
    if isinstance(value, bool) or not isinstance(value, int):
        raise OptionTypeError(f"{param} must be an int or None", expected="an int >= 1, or None (unbounded)",
                              got=f"{value!r} ({type(value).__name__})", param=param, loc=loc)
    if value < 1:
        raise OptionError(f"{param} must be at least 1", expected="an int >= 1, or None (unbounded)",
                          got=repr(value), param=param, loc=loc)
    return value


class _Pending:
    """A compile in progress: its owner thread, then its entry or its error."""

    __slots__ = ("owner", "done", "entry", "error")

    def __init__(self):
        self.owner = threading.get_ident()
        self.done = threading.Event()
        self.entry = None
        self.error: BaseException | None = None


class VersionCache:
    """Compiled versions by key: `get` (marks the version recently used), `get_or_compile`,
    `entries` (compile order), `clear`, `resize`; ``evictions`` counts versions dropped for room."""

    def __init__(self, maxsize: int | None = DEFAULT_MAXSIZE, on_evict: Callable | None = None):
        self.maxsize = maxsize
        self.evictions = 0
        self._entries: OrderedDict = OrderedDict()  # least recently used first
        self._order: list = []  # keys in compile order
        self._pending: dict = {}
        self._lock = threading.Lock()
        self._on_evict = on_evict

    def __len__(self) -> int:
        return len(self._entries)

    def get(self, key):
        """The version for ``key`` or None; a found version becomes the most recently used."""
        entry = self._entries.get(key)
        if entry is not None:
            try:
                self._entries.move_to_end(key)
            except KeyError:  # evicted by another thread meanwhile: still usable for this call
                pass
        return entry

    def get_or_compile(self, key, compile: Callable):
        """``(entry, compiled_here)``: the cached version, or the one ``compile()`` makes. Only one
        caller compiles a key at a time; the others wait for it and share its result."""
        while True:
            with self._lock:
                entry = self._entries.get(key)
                if entry is not None:
                    self._entries.move_to_end(key)
                    return entry, False
                pending = self._pending.get(key)
                owner = pending is None or pending.owner == threading.get_ident()  # re-entrant: compile
                if pending is None:
                    pending = self._pending[key] = _Pending()
            if owner:
                return self._compile(key, pending, compile), True
            pending.done.wait()
            if pending.entry is not None:
                return pending.entry, False
            if isinstance(pending.error, Exception):
                raise _copy(pending.error)
            # the owner was interrupted (or exited): this caller tries again, maybe as the owner

    def _compile(self, key, pending: _Pending, compile: Callable):
        try:
            entry = compile()
        except BaseException as e:
            pending.error = e
            raise
        else:
            pending.entry = entry
            self._insert(key, entry)
            return entry
        finally:
            with self._lock:
                if self._pending.get(key) is pending:
                    del self._pending[key]
            pending.done.set()

    def _insert(self, key, entry) -> None:
        with self._lock:
            self._entries[key] = entry
            self._order.append(key)
            evicted = self._evict_over(self.maxsize, keep=key)
        for e in evicted:
            if self._on_evict is not None:
                self._on_evict(e)

    def _evict_over(self, bound, keep=None) -> list:
        evicted = []
        if bound is None:
            return evicted
        while len(self._entries) > bound:
            oldest = next(iter(self._entries))
            if oldest == keep:  # never the version just made (bound >= 1 keeps it anyway)
                break
            evicted.append(self._entries.pop(oldest))
            self._order.remove(oldest)
            self.evictions += 1
        return evicted

    def resize(self, maxsize: int | None) -> None:
        """A new bound; versions beyond it go at once (least recently used first)."""
        with self._lock:
            self.maxsize = maxsize
            evicted = self._evict_over(maxsize)
        for e in evicted:
            if self._on_evict is not None:
                self._on_evict(e)

    def keys(self) -> tuple:
        """The cached versions' keys in compile order."""
        with self._lock:
            return tuple(self._order)

    def entries(self) -> tuple:
        """The cached versions in compile order."""
        with self._lock:
            return tuple(self._entries[k] for k in self._order)

    def clear(self) -> None:
        """Drop every version and the eviction count (a compile in progress still finishes and
        is cached)."""
        with self._lock:
            self._entries.clear()
            self._order.clear()
            self.evictions = 0


def _copy(error: Exception) -> Exception:
    """A copy of ``error`` for one waiting caller (one exception object raised in several threads
    would collect all their tracebacks)."""
    try:
        dup = copy.copy(error)
    except Exception:  # noqa: BLE001 - an exception that cannot be copied: share it
        return error
    dup.__traceback__ = None
    return dup
