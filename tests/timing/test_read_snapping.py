"""The L2 key of a read: its origin snapped down, per buffer and dimension, to the nearest origin
a write of that buffer has (runtime/tasks.py `_snap_reads_to_writes`), checked against the rule
written out row by row, on random tables and on a table with one buffer per task."""

from __future__ import annotations

import numpy as np
from hypothesis import given, settings
from hypothesis import strategies as st

from pypto.runtime.tasks import _snap_dim_by_buffer, _snap_reads_to_writes


def _by_rule(table, n_reads):
    out = table.copy()
    writes = table[n_reads:]
    for i in range(n_reads):
        same = writes[writes[:, 0] == table[i, 0]]
        for d in range(1, table.shape[1]):
            below = same[same[:, d] <= table[i, d], d]
            if len(below):
                out[i, d] = below.max()
    return out


@settings(max_examples=200, deadline=None)
@given(st.integers(1, 40), st.integers(1, 40), st.integers(1, 3), st.integers(1, 6), st.integers(0, 2**31))
def test_snapping_follows_the_rule(n_reads, n_writes, dims, buffers, seed):
    rng = np.random.default_rng(seed)
    table = np.concatenate([rng.integers(0, buffers, (n_reads + n_writes, 1)),
                            rng.integers(-5, 300, (n_reads + n_writes, dims))], axis=1).astype(np.int64)
    want = _by_rule(table, n_reads)
    got = table.copy()
    _snap_reads_to_writes(got, n_reads)
    assert np.array_equal(got, want)
    wide = table.copy()  # the buffer-by-buffer path (origins too wide to pack) agrees
    for d in range(1, table.shape[1]):
        _snap_dim_by_buffer(wide[:n_reads], wide[n_reads:], d)
    assert np.array_equal(wide, want)


def test_one_buffer_per_task_snaps_every_read():
    # 20,000 buffers, each written once at a tile origin and read twice inside it: the case that
    # was quadratic in the buffers
    n = 20_000
    writes = np.stack([np.arange(n), np.full(n, 64), np.zeros(n, dtype=np.int64)], axis=1)
    reads = np.concatenate([writes + [0, 3, 5], writes + [0, 40, 1]])
    table = np.concatenate([reads, writes]).astype(np.int64)
    _snap_reads_to_writes(table, len(reads))
    assert np.array_equal(table[:len(reads)], np.concatenate([writes, writes]))
