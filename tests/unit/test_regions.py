"""The dependency engine (pypto.runtime.regions) against a brute-force pairwise oracle: every
conflicting pair of accesses is ordered (directly or transitively) and no edge joins accesses that
do not conflict; plus the access patterns the engine exists for, edge by edge."""

from __future__ import annotations

import gc

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import pypto.runtime.cellblocks as CB
import pypto.runtime.regions as R
from pypto.runtime.regions import KINDS, RegionIndex



@pytest.fixture(scope="module", autouse=True)
def _drop_hypothesis_gc_callback():
    """Hypothesis times garbage collection with a gc callback that stays installed; at an xdist
    worker's shutdown it can be interrupted and print an unraisable-exception warning."""
    yield
    gc.callbacks[:] = [cb for cb in gc.callbacks if not getattr(cb, "__module__", "").startswith("hypothesis")]


# ---- random programs ---------------------------------------------------------------------------

RANK = st.integers(1, 3)


@st.composite
def programs(draw):
    """Calls in program order; call c has m tasks (ids first .. first+m-1) and a few operand
    accesses, each one box per task on a small buffer, so overlaps are frequent."""
    rank = draw(RANK)
    extent = draw(st.integers(2, 9))
    n_calls = draw(st.integers(1, 12))
    calls, first = [], 0
    for _ in range(n_calls):
        m = draw(st.integers(1, 6))
        ops = []
        for _ in range(draw(st.integers(1, 3))):
            buf = draw(st.sampled_from("abc"))
            write = draw(st.booleans())
            lo = np.array(draw(st.lists(st.lists(st.integers(0, extent - 1), min_size=rank, max_size=rank),
                                        min_size=m, max_size=m)), dtype=np.int64)
            size = np.array(draw(st.lists(st.lists(st.integers(0, extent), min_size=rank, max_size=rank),
                                          min_size=m, max_size=m)), dtype=np.int64)
            ops.append((buf, write, lo, lo + size))
        calls.append((first, m, ops))
        first += m
    cell = draw(st.one_of(st.none(), st.lists(st.integers(1, 4), min_size=rank, max_size=rank)))
    return calls, first, cell


def _run(calls, cell, single=False):
    deps = RegionIndex()
    for first, m, ops in calls:
        for buf, write, lo, hi in ops:
            if single:  # the numeric runtime's form: one box (two int sequences) per call
                for k in range(m):
                    deps.access(buf, first + k, lo[k].tolist(), hi[k].tolist(), write, cell=cell)
            else:
                deps.access(buf, first, lo, hi, write, cell=cell)
    return deps


def _accesses(calls, single):
    """Flattened accesses (order, buffer, id, lo, hi, write) with tuple boxes; boxes of one
    access share ``order``."""
    out, order = [], 0
    for first, m, ops in calls:
        for buf, write, lo, hi in ops:
            for k in range(m):
                out.append((order + (k if single else 0), buf, first + k, tuple(lo[k].tolist()),
                            tuple(hi[k].tolist()), write))
            order += m if single else 1
    return out


def _overlap(alo, ahi, blo, bhi):
    """Boxes share an element (an empty box shares none)."""
    return all(a < b for a, b in zip(alo, ahi)) and all(a < b for a, b in zip(blo, bhi)) and \
        all(a < d and c < b for a, b, c, d in zip(alo, ahi, blo, bhi))


def _closure(n, src, dst):
    reach = np.zeros((n, n), dtype=bool)
    reach[src, dst] = True
    for k in range(n):  # Warshall
        reach |= reach[:, k:k + 1] & reach[k:k + 1, :]
    return reach


def _check(calls, n, deps, single):
    src, dst, kind = deps.edges()
    assert len(set(zip(src.tolist(), dst.tolist()))) == len(src), "an ordered pair has two edges"
    assert not np.any(src == dst)
    assert deps.edge_list() == [(s, d, KINDS[k]) for s, d, k in zip(src.tolist(), dst.tolist(), kind.tolist())]
    acc = _accesses(calls, single)
    reach = _closure(n, src, dst)
    conflicts = set()
    for x, (oa, ba, ia, la, ha, wa) in enumerate(acc):
        for ob, bb, ib, lb, hb, wb in acc[x + 1:]:
            if ob == oa or ba != bb or ia == ib or not (wa or wb) or not _overlap(la, ha, lb, hb):
                continue
            assert reach[ia, ib], f"{'write' if wa else 'read'} by {ia} then {'write' if wb else 'read'} " \
                                  f"by {ib} of {ba} overlap, but {ib} is not ordered after {ia}"
            conflicts.add((ia, ib, "WAW" if wa and wb else ("RAW" if wa else "WAR")))
    for s, d, k in zip(src.tolist(), dst.tolist(), kind.tolist()):
        assert (s, d, KINDS[k]) in conflicts, f"edge {s}->{d} {KINDS[k]} joins accesses that do not conflict"


SETTINGS = settings(max_examples=60, deadline=None,
                    suppress_health_check=[HealthCheck.too_slow, HealthCheck.function_scoped_fixture])


@pytest.fixture(params=["python", "crowded", "numpy", "fine", "spill"])
def path(request, monkeypatch):
    """Run each property through the per-cell Python path (also with every cell of two entries
    indexed as crowded), the numpy block path (also with every cell of a block looked up on its
    finer grid), and with tiny limits that send boxes to the whole-box lists, spill cells into
    blocks mid-program and turn staged rows into blocks by size."""
    if request.param == "crowded":
        monkeypatch.setattr(R, "CROWDED_CELL", 1)
    elif request.param == "numpy":
        monkeypatch.setattr(R, "BULK", 1)
    elif request.param == "fine":
        monkeypatch.setattr(R, "BULK", 1)
        monkeypatch.setattr(CB, "CROWDED", 0)
    elif request.param == "spill":
        monkeypatch.setattr(R, "SMALL_CELLS", 2)
        monkeypatch.setattr(R, "DICT_CELLS", 3)
        monkeypatch.setattr(R, "BULK", 3)
        monkeypatch.setattr(R, "STAGE_ROWS", 4)
    return request.param


@SETTINGS
@given(programs())
def test_conflicting_pairs_are_ordered_and_edges_are_real(path, prog):
    calls, n, cell = prog
    _check(calls, n, _run(calls, cell), single=False)


@SETTINGS
@given(programs())
def test_one_box_per_call_form(path, prog):
    calls, n, cell = prog
    _check(calls, n, _run(calls, cell, single=True), single=True)


@SETTINGS
@given(programs())
def test_csr_matches_the_edges(prog):
    calls, n, cell = prog
    deps = _run(calls, cell)
    src, dst, _ = deps.edges()
    ptr, succ, npred = deps.csr(n)
    got = sorted((i, int(j)) for i in range(n) for j in succ[ptr[i]:ptr[i + 1]])
    assert got == sorted(zip(src.tolist(), dst.tolist()))
    assert npred.tolist() == np.bincount(dst, minlength=n).tolist()
    for i in range(n):  # successors keep the order they were found in
        mine = [d for s, d in zip(src.tolist(), dst.tolist()) if s == i]
        assert succ[ptr[i]:ptr[i + 1]].tolist() == mine


@SETTINGS
@given(programs(), st.booleans())
def test_finer_grid_finds_the_same_edges_in_the_same_order(prog, whole_cell):
    """Looking entries up on the finer grid inside cells changes the work, not the result: the
    same edges, kinds and discovery order as comparing each query with every entry of its cell
    (cells of the buffer's whole extent when ``whole_cell``: every box shares one cell)."""
    calls, n, cell = prog
    if whole_cell:
        cell = [16] * calls[0][2][0][2].shape[1]
    got = {}
    with pytest.MonkeyPatch.context() as mp:
        mp.setattr(R, "BULK", 1)
        for crowded in (0, 10 ** 9):
            mp.setattr(CB, "CROWDED", crowded)
            got[crowded] = [a.tolist() for a in _run(calls, cell).edges()]
    assert got[0] == got[10 ** 9]


@SETTINGS
@given(programs(), st.booleans())
def test_crowded_cells_find_the_same_edges_in_the_same_order(prog, whole_cell):
    """The per-cell Python path: indexing a crowded cell's entries gives the same edges, kinds
    and order as scanning them (one box per access, as the numeric runtime records)."""
    calls, n, cell = prog
    if whole_cell:
        cell = [16] * calls[0][2][0][2].shape[1]
    got = {}
    with pytest.MonkeyPatch.context() as mp:
        for limit in (1, 10 ** 9):
            mp.setattr(R, "CROWDED_CELL", limit)
            got[limit] = _run(calls, cell, single=True).edge_list()
    assert got[1] == got[10 ** 9]


@SETTINGS
@given(programs(), st.booleans(), st.sampled_from([1, 2, 10 ** 9]))
def test_few_cells_path_finds_the_same_edges_in_the_same_order(prog, whole_cell, crowded):
    """A one-box access over a few cells of a buffer with per-cell entries only takes a one-pass
    path (`RegionIndex._in_few_cells`): the same edges, kinds and discovery order as the general
    query-then-commit path, with crowded cells too (``crowded``: their entry limit)."""
    calls, n, cell = prog
    if whole_cell:
        cell = [16] * calls[0][2][0][2].shape[1]
    got = {}
    with pytest.MonkeyPatch.context() as mp:
        mp.setattr(R, "CROWDED_CELL", crowded)
        taken = []
        few_cells = RegionIndex._in_few_cells
        mp.setattr(RegionIndex, "_in_few_cells", lambda self, *a: taken.append(few_cells(self, *a)) or taken[-1])
        got["fast"] = _run(calls, cell, single=True).edge_list()
        mp.setattr(RegionIndex, "_in_few_cells", lambda self, *a: False)
        got["general"] = _run(calls, cell, single=True).edge_list()
    assert got["fast"] == got["general"]
    inside = any(((hi > lo).all(axis=1) & (hi <= 16).all(axis=1)).any() for _, _, ops in calls for _, _, lo, hi in ops)
    if whole_cell and inside:  # a non-empty box in the one cell of a fresh buffer: the path is taken
        assert any(taken)


def test_one_box_accesses_in_one_whole_buffer_cell_cost_work_linear_in_them(monkeypatch):
    """The same pattern one tile per access (a pypto.loop with one tile per iteration): the box
    comparisons stay within a few per access, where scanning the cell would take n * n."""
    import operator

    looked = [0]

    def lt(a, b):  # the engine's per-cell path compares box corners with operator.lt
        looked[0] += 1
        return operator.lt(a, b)

    monkeypatch.setattr(R, "lt", lt)
    n = 2000
    deps = RegionIndex()
    deps.access("cache", 0, [0, 0], [8 * n, 128], True)
    for i in range(n):
        deps.access("cache", 1 + i, [8 * i, 0], [8 * i + 8, 128], True)
    for i in range(n):
        deps.access("cache", 1 + n + i, [8 * i, 0], [8 * i + 8, 128], False)
    assert sorted(deps.edge_list()) == sorted([(0, 1 + i, "WAW") for i in range(n)] +
                                              [(w, 1 + n + i, "RAW") for i in range(n) for w in (0, 1 + i)])
    assert looked[0] <= 32 * n  # about ten per access; scanning: 14 million


class _PairCount:
    """Counts the (query, entry) pairs the blocks hand to the overlap test."""

    def __init__(self, monkeypatch):
        self.pairs = 0
        plain = CB.CellBlock.pairs

        def counted(blk, *args):
            for qi, bi in plain(blk, *args):
                self.pairs += len(qi)
                yield qi, bi

        monkeypatch.setattr(CB.CellBlock, "pairs", counted)


@pytest.mark.parametrize("n", [512, 4096])
def test_tiles_in_one_whole_buffer_cell_cost_work_linear_in_them(n, monkeypatch):
    """QuantIndexerProlog's cache: the first access spans the whole buffer (so does its cell),
    then one call writes it tile by tile and another reads it tile by tile. Each read meets
    its tile's writer (and the first write), and the work is linear in the tiles: the pairs examined stay
    within a few per tile, where comparing with every entry of the cell would take n * n."""
    count = _PairCount(monkeypatch)
    deps = RegionIndex()
    deps.access("cache", 0, [0, 0], [8 * n, 128], True)
    rows = np.arange(n)
    lo = np.stack([rows * 8, rows * 0], 1)
    hi = lo + np.array([8, 128])
    deps.access("cache", 1, lo, hi, True)
    deps.access("cache", 1 + n, lo, hi, False)
    # no single tile covers the first write, so each read also meets it
    assert sorted(deps.edge_list()) == sorted([(0, 1 + i, "WAW") for i in range(n)] +
                                              [(w, 1 + n + i, "RAW") for i in range(n) for w in (0, 1 + i)])
    assert count.pairs <= 4 * n


# ---- the patterns, edge by edge ----------------------------------------------------------------

def _boxes(rows):
    lo = np.array([r[0] for r in rows], dtype=np.int64)
    hi = np.array([r[1] for r in rows], dtype=np.int64)
    return lo, hi


@pytest.mark.parametrize("bulk", [False, True])
def test_independent_iterations_get_no_edges(bulk, monkeypatch):
    """Iteration i reads x[i] and writes out[i] (rows, then column blocks): no edges at all."""
    if bulk:
        monkeypatch.setattr(R, "BULK", 1)
    deps = RegionIndex()
    for i in range(50):
        deps.access("x", i, [i, 0], [i + 1, 16], False)
        deps.access("out", i, [i, 0], [i + 1, 16], True)
    for j in range(50):
        deps.access("y", 100 + j, [0, 16 * j], [64, 16 * j + 16], False)
        deps.access("z", 100 + j, [0, 16 * j], [64, 16 * j + 16], True)
    assert len(deps) == 0


def test_accumulator_rewritten_each_step_is_a_chain():
    """online softmax: acc read and written every KV step; K read by every step."""
    deps = RegionIndex()
    for i in range(6):
        deps.access("k", i, [0, 0], [128, 64], False)
        deps.access("acc", i, [0, 0], [16, 64], False)
        deps.access("acc", i, [0, 0], [16, 64], True)
    assert deps.edge_list() == [(i, i + 1, "RAW") for i in range(5)]


def test_many_readers_then_one_writer():
    deps = RegionIndex()
    deps.access("kv", 0, [0, 0], [64, 64], True)
    for i in range(1, 40):
        deps.access("kv", i, [0, 0], [64, 64], False)
    deps.access("kv", 40, [0, 0], [64, 64], True)
    edges = set(deps.edge_list())
    assert {(0, i, "RAW") for i in range(1, 40)} <= edges
    assert {(i, 40, "WAR") for i in range(1, 40)} <= edges
    # and the second write follows the first directly (readers never retire a writer: later
    # readers still need it)
    assert edges - {(0, i, "RAW") for i in range(1, 40)} - {(i, 40, "WAR") for i in range(1, 40)} == \
        {(0, 40, "WAW")}


def test_whole_tensor_read_after_small_writes():
    deps = RegionIndex()
    for i in range(100):
        deps.access("y", i, [i, 0], [i + 1, 16], True)
    deps.access("y", 100, [0, 0], [100, 16], False)
    assert sorted(deps.edge_list()) == [(i, 100, "RAW") for i in range(100)]


def test_covering_write_retires_what_it_covers():
    deps = RegionIndex()
    for i in range(8):
        deps.access("y", i, [2 * i, 0], [2 * i + 2, 8], True)
    deps.access("y", 8, [0, 0], [16, 8], True)  # covers all 8 writes
    deps.access("y", 9, [3, 0], [4, 8], False)  # meets only the covering write
    assert sorted(deps.edge_list()) == [(i, 8, "WAW") for i in range(8)] + [(8, 9, "RAW")]


def test_partial_write_keeps_the_rest_visible():
    deps = RegionIndex()
    deps.access("y", 0, [0, 0], [16, 16], True)
    deps.access("y", 1, [0, 0], [8, 16], True)  # covers only the top half of task 0's box
    deps.access("y", 2, [12, 0], [13, 16], False)
    assert sorted(deps.edge_list()) == [(0, 1, "WAW"), (0, 2, "RAW")]


def test_boxes_of_one_access_are_concurrent():
    """Tiles of one call writing the same tile get no edges among themselves; a later reader
    waits for all of them; an operand of the same tasks (same ids) never depends on itself."""
    deps = RegionIndex()
    lo, hi = _boxes([([0, 0], [4, 4])] * 3)
    deps.access("acc", 0, lo, hi, True)
    deps.access("acc", 3, [0, 0], [4, 4], False)
    assert sorted(deps.edge_list()) == [(0, 3, "RAW"), (1, 3, "RAW"), (2, 3, "RAW")]
    same = RegionIndex()
    same.access("x", 0, *_boxes([([0], [4]), ([4], [8])]), False)
    same.access("x", 0, *_boxes([([0], [4]), ([4], [8])]), True)  # in place, tile by tile
    assert len(same) == 0


def test_bulk_tiles_pair_up_with_their_producers(monkeypatch):
    """A call writing 400 tiles, then a call reading them with twice the tile height: each reader
    waits for exactly the two tiles it covers, through the numpy path and the per-cell one."""
    for bulk in (1, 10 ** 9):
        monkeypatch.setattr(R, "BULK", bulk)
        deps = RegionIndex()
        rows = np.arange(400)
        deps.access("y", 0, np.stack([rows, rows * 0], 1) * 4, np.stack([rows + 1, rows * 0 + 1], 1) * 4, True)
        half = np.arange(200)
        deps.access("y", 400, np.stack([half * 8, half * 0], 1), np.stack([half * 8 + 8, half * 0 + 4], 1), False)
        assert sorted(deps.edge_list()) == sorted([(2 * j + d, 400 + j, "RAW") for j in range(200) for d in (0, 1)])


def test_rank_mismatch_is_an_internal_error():
    from pypto.errors import KernelRuntimeError

    deps = RegionIndex()
    deps.access("x", 0, [0, 0], [1, 1], True)
    with pytest.raises(KernelRuntimeError, match="rank"):
        deps.access("x", 1, [0], [1], False)


@st.composite
def task_programs(draw):
    """Tasks in program order, each accessing a few operands with one box each, the boxes of a
    buffer drawn from a pool of two or three (so a buffer often sees one box many times, then
    another): the numeric runtime's `access_task` form. [(id, [(buffer, write, lo, hi)])], cell."""
    rank = draw(RANK)
    extent = draw(st.integers(2, 40))
    box = st.tuples(st.lists(st.integers(0, extent - 1), min_size=rank, max_size=rank),
                    st.lists(st.integers(0, extent), min_size=rank, max_size=rank))
    pools = {b: [(tuple(lo), tuple(x + s for x, s in zip(lo, size))) for lo, size in
                 draw(st.lists(box, min_size=1, max_size=3))] for b in "abcd"}
    tasks = []
    for i in range(draw(st.integers(1, 30))):
        ops = []
        for _ in range(draw(st.integers(1, 4))):
            b = draw(st.sampled_from("abcd"))
            lo, hi = draw(st.sampled_from(pools[b]))
            ops.append((b, draw(st.booleans()), lo, hi))
        tasks.append((i, ops))
    cell = draw(st.one_of(st.none(), st.lists(st.integers(1, 8), min_size=rank, max_size=rank)))
    return tasks, cell


@SETTINGS
@given(task_programs(), st.sampled_from([1, 2, 10 ** 9]), st.booleans())
def test_access_task_one_box_buffers_find_the_same_edges_in_the_same_order(prog, crowded, mixed):
    """`access_task` keeps a buffer seen with one box only as that box, its writer and readers:
    the same edges, kinds and discovery order as one `access` per operand (the general path),
    through the switch to cells at another box, with crowded cells, with boxes over many cells
    (a small ``SMALL_CELLS``), and with `access` calls on the same buffers in between
    (``mixed``: every other task's operands go through `access`)."""
    tasks, cell = prog
    got = {}
    with pytest.MonkeyPatch.context() as mp:
        mp.setattr(R, "CROWDED_CELL", crowded)
        mp.setattr(R, "SMALL_CELLS", 2 if crowded == 2 else 16)
        for form in ("task", "access"):
            deps = RegionIndex()
            for i, ops in tasks:
                cells = [cell if cell is not None else [h - l for l, h in zip(lo, hi)] for _, _, lo, hi in ops]
                if form == "task" and not (mixed and i % 2):
                    deps.access_task(i, [b for b, _, _, _ in ops], [lo for _, _, lo, _ in ops],
                                     [hi for _, _, _, hi in ops], {p for p, op in enumerate(ops) if op[1]}, cells)
                else:
                    for (b, write, lo, hi), c in zip(ops, cells):
                        deps.access(b, i, list(lo), list(hi), write, cell=c)
            got[form] = deps.edge_list()
    assert got["task"] == got["access"]
    calls = [(i, 1, [(b, w, np.array([lo]), np.array([hi])) for b, w, lo, hi in ops]) for i, ops in tasks]
    deps = RegionIndex()
    for i, ops in tasks:
        deps.access_task(i, [b for b, _, _, _ in ops], [lo for _, _, lo, _ in ops], [hi for _, _, _, hi in ops],
                         {p for p, op in enumerate(ops) if op[1]},
                         [cell if cell is not None else [h - l for l, h in zip(lo, hi)] for _, _, lo, hi in ops])
    _check(calls, len(tasks), deps, single=True)
