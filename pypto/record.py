"""Inspection objects: what a compile and a call leave behind for users, tests and the lab."""

from __future__ import annotations

from dataclasses import dataclass, field
from functools import cached_property
from typing import Any, Callable, Optional, Union


@dataclass(frozen=True, eq=False)
class PassSnapshot:
    """The program after one compile stage: ``name``, graph ``level``, ``text`` and ``seconds``.

    ``render`` is the text itself or a function of ``graph`` that renders it: a compile keeps every
    stage's graph, and the text of a big kernel is rendered on first access to ``text``, not on
    every compile (``seconds`` is the pass's own time, without rendering).
    """

    name: str
    level: str  # "tensor", "tile", "block" or "execute"
    render: Union[str, Callable[[Any], str]] = field(repr=False)
    seconds: float
    graph: Any = field(default=None, repr=False)
    dot_fn: Any = field(default=None, repr=False)
    fused_groups: Any = field(default=None, repr=False)  # assign_memory: per root {op id: group id}

    @cached_property
    def text(self) -> str:
        """This stage's program as text (rendered once, on first access)."""
        return self.render if isinstance(self.render, str) else self.render(self.graph)

    def to_dot(self) -> str:
        """Graphviz DOT text of this stage's graph."""
        return self.dot_fn(self.graph) if self.dot_fn else ""


@dataclass(eq=False)
class CompiledKernel:
    """One compiled version of a kernel: the traced program, every stage and the generated code."""

    name: str
    key: tuple
    key_text: str
    program: Any
    passes: list
    options: Any
    compile_seconds: float
    source: dict = field(default_factory=dict)
    returns: Optional[str] = None
    executor: Any = field(default=None, repr=False)
    lowered: Any = field(default=None, repr=False)
    dump_dir: Optional[str] = None  # the folder the passes were dumped to (debug_options), else None
    verify_lowered: Any = field(default=None, repr=False)
    # the last pass bisection of this version (`pypto.bisect_passes`, or pass verify's on a mismatch)
    bisection: Any = field(default=None, repr=False)

    @property
    def tensor_graph(self):
        """The Tensor Graph (the traced program)."""
        return self.program

    def text(self) -> str:
        """The Tensor Graph as text."""
        return self.passes[0].text

    def to_dot(self) -> str:
        """The Tensor Graph as Graphviz DOT."""
        return self.passes[0].to_dot()

    def _repr_html_(self) -> str:
        from .display import compiled_html

        return compiled_html(self)

    def __repr__(self) -> str:
        return (f"<CompiledKernel {self.name} [{self.key_text}] {len(self.passes)} stage(s), "
                f"compiled in {self.compile_seconds * 1e3:.1f} ms>")


@dataclass(frozen=True)
class ServedShape:
    """The calls one compiled version served with one set of concrete shapes: ``shapes`` reads
    like ``x: fp32[100, 64], out: fp32[100, 64]``; ``calls`` counts them, ``hits`` the ones that
    did not compile (the compiling call is a miss)."""

    shapes: str
    calls: int
    hits: int


@dataclass(eq=False)
class CacheEntry:
    """One compiled version in a kernel's cache.

    ``served`` counts the calls per set of dynamic sizes (a tuple of ints in the order of
    ``layout``'s symbols; kept as is on the call path, named only when read via
    :meth:`served_shapes`). ``layout`` is ``(symbols, ((param, dtype, dims), ...))`` with a dim an
    int or a dynamic symbol's name; ``compiled_for`` the sizes of the call that compiled it."""

    key: str
    hits: int
    compile_seconds: float
    compiled: CompiledKernel = field(repr=False)
    layout: tuple = field(default=((), ()), repr=False)
    served: dict = field(default_factory=dict, repr=False)
    compiled_for: Optional[tuple] = field(default=None, repr=False)

    def served_shapes(self) -> list:
        """One :class:`ServedShape` per set of concrete shapes this version served, most calls first."""
        symbols, tensors = self.layout
        out = []
        for sizes, calls in self.served.items():
            size_of = dict(zip(symbols, sizes))
            text = ", ".join(f"{param}: {dtype}[{', '.join(str(size_of.get(d, d)) for d in dims)}]"
                             for param, dtype, dims in tensors)
            out.append(ServedShape(text, calls, calls - (sizes == self.compiled_for)))
        out.sort(key=lambda s: -s.calls)
        return out


@dataclass(frozen=True)
class CallLogEntry:
    """One call: whether it hit the cache, which version it used and, on a compile, why."""

    hit: bool
    key: str
    reason: Optional[str]
    seconds: float


def call_log_entry(hit: bool, key: str, reason, seconds: float) -> CallLogEntry:
    """A `CallLogEntry`, made without the frozen dataclass's per-field ``object.__setattr__`` (the
    cached call makes one per call)."""
    entry = _new(CallLogEntry)
    entry.__dict__.update(hit=hit, key=key, reason=reason, seconds=seconds)
    return entry


_new = object.__new__


@dataclass(frozen=True)
class CacheInfo:
    """Like ``functools.lru_cache``'s cache_info, plus one entry per compiled version.

    ``hits`` / ``misses`` count calls (a miss compiled a version); ``entries`` the cached versions
    in compile order (``versions`` / ``currsize``: how many); ``calls`` the recent call log;
    ``maxsize`` the kernel's bound (None: unbounded) and ``evictions`` the versions dropped to keep
    within it since the last ``cache_clear()``; ``workspace_bytes`` the bytes of workspaces and
    leaf temporaries the cached plans keep for their next call, within ``workspace_limit``.
    """

    hits: int
    misses: int
    entries: tuple
    calls: tuple = ()
    maxsize: Optional[int] = None
    evictions: int = 0
    workspace_bytes: int = 0
    workspace_limit: Optional[int] = None

    @property
    def currsize(self) -> int:
        return len(self.entries)

    @property
    def versions(self) -> int:
        """How many compiled versions the cache holds (the ``versions=`` of the printed form)."""
        return len(self.entries)

    def _repr_html_(self) -> str:
        from .display import cache_info_html

        return cache_info_html(self)

    def __str__(self) -> str:
        evicted = f", evictions={self.evictions}" if self.evictions else ""
        lines = [f"CacheInfo(hits={self.hits}, misses={self.misses}, versions={len(self.entries)}{evicted})"]
        for e in self.entries:
            lines.append(f"  [{e.hits} hit(s), compiled in {e.compile_seconds * 1e3:.1f} ms] {e.key}")
            for served in e.served_shapes():
                lines.append(f"      {served.shapes}: {served.calls} call(s), {served.hits} hit(s)")
        if self.workspace_limit is not None:
            lines.append(f"  workspaces kept for the next call: {self.workspace_bytes / 2 ** 20:.1f} MiB "
                         f"of {self.workspace_limit / 2 ** 20:.0f} MiB")
        return "\n".join(lines)


@dataclass
class RunRecord:
    """What one call did: cache hit, compile and run seconds, the timeline (simulated on first
    access, so a call that never looks at it does not pay for it) and the pass-verify report;
    ``error`` says what stopped a call that did not finish."""

    cache_hit: bool
    compile_seconds: float
    run_seconds: float
    key: str
    compiled: CompiledKernel = field(repr=False)
    verify: Any = None  # with verify_options enable_pass_verify: one StageResult per stage
    simulator: Any = field(default=None, repr=False)  # callable(runtime_overrides, machine) -> Timeline
    _timeline: Any = field(default=None, repr=False)
    # a call that did not finish (an error or KeyboardInterrupt mid-run): what stopped it; its
    # outputs may be partly written, it is not counted as a hit and it has no timeline
    error: Optional[str] = None

    @property
    def timeline(self):
        """The simulated schedule of this call under the runtime options it ran with."""
        if self._timeline is None and self.simulator is not None:
            self._timeline = self.simulator(None, None)
        return self._timeline

    def simulate(self, runtime_options: dict | None = None, machine=None):
        """The schedule of this same call under other runtime options or another machine model
        (``"A2A3"``, ``"small"`` or a MachineModel); the numbers are not recomputed."""
        if self.simulator is None:
            return None
        return self.simulator(runtime_options, machine)
