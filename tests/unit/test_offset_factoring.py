"""The planner's two forms of factoring a group's operand offsets (pypto.runtime.plan): the plain
Python one used for small groups must give exactly the numpy one's answer (the same batch dims,
the same fallback runs), on offsets that are nested progressions and on ones that are broken."""

from __future__ import annotations

import gc

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from pypto.runtime.plan import factor, factor_rows, runs, runs_rows


@pytest.fixture(scope="module", autouse=True)
def _drop_hypothesis_gc_callback():
    """Hypothesis times garbage collection with a gc callback that stays installed; at an xdist
    worker's shutdown it can be interrupted and print an unraisable-exception warning."""
    yield
    gc.callbacks[:] = [cb for cb in gc.callbacks if not getattr(cb, "__module__", "").startswith("hypothesis")]


@st.composite
def offsets(draw):
    """Rows of per-operand offsets: a nested progression (sizes and strides drawn, strides may be
    zero or negative), then perhaps a few entries changed or rows dropped or repeated."""
    c = draw(st.integers(1, 4))
    sizes = draw(st.lists(st.integers(1, 4), min_size=0, max_size=3))
    strides = [draw(st.lists(st.integers(-3, 40), min_size=c, max_size=c)) for _ in sizes]
    start = draw(st.lists(st.integers(0, 100), min_size=c, max_size=c))
    rows = [list(start)]
    for n, s in zip(reversed(sizes), reversed(strides)):  # innermost dim first
        rows = [[x + k * y for x, y in zip(r, s)] for k in range(n) for r in rows]
    for _ in range(draw(st.integers(0, 2))):
        edit = draw(st.sampled_from(["set", "drop", "repeat", "none"]))
        if not rows or edit == "none":
            continue
        i = draw(st.integers(0, len(rows) - 1))
        if edit == "set":
            rows[i][draw(st.integers(0, c - 1))] = draw(st.integers(0, 120))
        elif edit == "drop" and len(rows) > 1:
            del rows[i]
        elif edit == "repeat":
            rows.insert(i, list(rows[i]))
    return rows


@settings(max_examples=600, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(offsets())
def test_plain_factoring_matches_numpy(rows):
    V = np.array(rows, dtype=np.int64)
    assert factor_rows([list(r) for r in rows]) == factor(V)
    assert runs_rows([list(r) for r in rows]) == runs(V)


def test_known_forms():
    # a 2 x 3 progression: outer stride 10, inner stride 1 (operand 0), 0 (operand 1)
    rows = [[10 * a + b, 5] for a in range(2) for b in range(3)]
    assert factor_rows(rows) == [(2, [10, 0]), (3, [1, 0])]
    # a step backwards: no factoring, runs of one where it breaks
    assert factor_rows([[0], [4], [2]]) is None
    assert runs_rows([[0], [4], [2]]) == [(0, 2, [4]), (2, 1, [0])]
    assert factor_rows([[7, 8]]) == []
