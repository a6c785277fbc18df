"""The critical path of a timeline: the longest chain of task durations along the dependency
edges, whichever way `_critical_path` computes it (per level of a shallow graph, or a walk of a
deep one), checked against a plain recursion over random graphs."""
import functools
from types import SimpleNamespace

import numpy as np
import pytest

from pypto.runtime.timeline import _critical_path, _levels


def _graph(n, n_edges, seed, chain=False):
    rng = np.random.default_rng(seed)
    if chain:  # one long chain plus a few shortcuts: too many levels for the per-level arrays
        src = np.concatenate([np.arange(n - 1), rng.integers(0, n // 2, n_edges)])
        dst = np.concatenate([np.arange(1, n), rng.integers(n // 2, n, n_edges)])
    else:
        a, b = rng.integers(0, n, n_edges), rng.integers(0, n, n_edges)
        keep = a != b
        src, dst = np.minimum(a, b)[keep], np.maximum(a, b)[keep]
    dur = rng.integers(0, 1000, n)
    # start times in a topological order, as a schedule gives them (each task after its predecessors)
    end = np.zeros(n, dtype=np.int64)
    start = np.zeros(n, dtype=np.int64)
    preds = [[] for _ in range(n)]
    for s, d in zip(src.tolist(), dst.tolist()):
        preds[d].append(s)
    for k in range(n):
        start[k] = max((end[p] for p in preds[k]), default=int(rng.integers(0, 50)))
        end[k] = start[k] + dur[k]
    ev = SimpleNamespace(start=start, end=end)
    return ev, SimpleNamespace(src=src.astype(np.int32), dst=dst.astype(np.int32)), preds, dur


class _Edges:
    def __init__(self, src, dst):
        self.src, self.dst = src, dst

    def __len__(self):
        return len(self.src)


def _longest(preds, dur):
    @functools.lru_cache(maxsize=None)
    def upto(k):
        return int(dur[k]) + max((upto(p) for p in preds[k]), default=0)

    return max(upto(k) for k in range(len(dur)))


@pytest.mark.parametrize("seed", range(6))
@pytest.mark.parametrize("chain", [False, True])
def test_the_critical_path_is_the_longest_chain_of_durations(seed, chain):
    import sys

    sys.setrecursionlimit(10000)
    ev, d, preds, dur = _graph(600, 4000, seed, chain)
    deps = _Edges(d.src, d.dst)
    assert (_levels(ev, deps, 600) is None) == chain  # each way of computing it is exercised
    want = _longest(preds, dur)
    assert _critical_path(ev, deps) == want
    assert _critical_path(ev, deps) == want  # again, from the levels kept for this graph
    # other durations on the same graph (another schedule of the same task table)
    ev2 = SimpleNamespace(start=ev.start, end=ev.start + (dur[::-1].copy() if not chain else dur // 2))
    assert _critical_path(ev2, deps) == _longest(preds, ev2.end - ev2.start)


def test_a_new_graph_of_the_same_size_is_not_answered_from_another_ones_levels():
    ev, d, preds, dur = _graph(300, 700, 1)
    assert _critical_path(ev, _Edges(d.src, d.dst)) == _longest(preds, dur)
    ev2, d2, preds2, dur2 = _graph(300, 700, 2)
    assert _critical_path(ev2, _Edges(d2.src, d2.dst)) == _longest(preds2, dur2)
