"""The control executor's record of one kernel call, for the timing simulator to replay.

Each root instance is kept as a few integers: its root function, its symbol values (in a fixed
order per set of names, so no dict per instance), whether control flow read tensor elements
before it (``loads``) and whether it sits inside ``pypto.loop(parallel=True)``. Flush markers
(``submit_before_loop``) sit between them. Iterating gives the tuple form the simulator reads:
``("root", index, env, loads, parallel, read)`` or ``("flush",)``.
"""

from __future__ import annotations

from array import array


class RootStream:
    """Root instances and flush markers in program order."""

    def __init__(self):
        self._index = array("i")  # root function per instance
        self._layout = array("i")  # symbol names (index into _names) per instance
        self._values = array("q")  # symbol values, instance after instance
        self._start = array("q", [0])  # where each instance's values start in _values
        self._loads = array("i")  # index into _loadsets
        self._parallel = array("b")
        self._flush_before = array("q")  # instance count at each flush marker
        self._names: list = []
        self._name_ids: dict = {}
        self._loadsets: list = [frozenset()]
        self._loadset_ids: dict = {frozenset(): 0}
        self._reads: dict = {}  # instance -> {(param, indices): value} read for its addresses
        self._odd: dict = {}  # instance -> env holding a value that is not an int

    def append_root(self, index: int, env: dict, loads, parallel: bool, read: dict | None = None) -> None:
        """Record a root instance: root function ``index`` with symbol values ``env``; ``loads``
        are the parameters whose elements control flow read since the previous root."""
        n = len(self._index)
        names = tuple(env)
        layout = self._name_ids.get(names)
        if layout is None:
            layout = self._name_ids[names] = len(self._names)
            self._names.append(names)
        self._index.append(index)
        self._layout.append(layout)
        try:
            values = array("q", env.values())
        except (TypeError, OverflowError):  # a value that is not an int: kept as given
            self._odd[n] = dict(env)
        else:
            self._values.extend(values)
        self._start.append(len(self._values))
        loads = frozenset(loads)
        lid = self._loadset_ids.get(loads)
        if lid is None:
            lid = self._loadset_ids[loads] = len(self._loadsets)
            self._loadsets.append(loads)
        self._loads.append(lid)
        self._parallel.append(bool(parallel))
        if read:
            self._reads[n] = dict(read)

    def flush_marker(self) -> None:
        """Record a program-imposed device-task boundary (``submit_before_loop``)."""
        self._flush_before.append(len(self._index))

    # ---- reading -----------------------------------------------------------------------------
    @property
    def roots(self) -> int:
        """Number of root instances."""
        return len(self._index)

    def index(self, n: int) -> int:
        return self._index[n]

    def env(self, n: int) -> dict:
        """Symbol values of root instance ``n``."""
        odd = self._odd.get(n)
        if odd is not None:
            return dict(odd)
        return dict(zip(self._names[self._layout[n]], self._values[self._start[n]:self._start[n + 1]]))

    def loads(self, n: int) -> frozenset:
        return self._loadsets[self._loads[n]]

    def parallel(self, n: int) -> bool:
        return bool(self._parallel[n])

    def read(self, n: int) -> dict | None:
        return self._reads.get(n)

    def __len__(self) -> int:
        return len(self._index) + len(self._flush_before)

    def __iter__(self):
        flushes = iter(self._flush_before)
        nxt = next(flushes, None)
        for n in range(len(self._index)):
            while nxt is not None and nxt <= n:
                yield ("flush",)
                nxt = next(flushes, None)
            yield ("root", self._index[n], self.env(n), self.loads(n), self.parallel(n), self.read(n))
        while nxt is not None:
            yield ("flush",)
            nxt = next(flushes, None)
