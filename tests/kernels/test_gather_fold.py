"""A local tensor assembled from views of a paged cache and read only by matmuls is loaded by the
cube itself (passes/gather.py): no copy tasks, the same numbers.

The kernel is written as upstream's GLM-4.5 paged attention writes its K/V tiles: per tile of
``S2`` keys, one ``kj[i*BS:(i+1)*BS] = view(cache, block i)`` per cache block, then
``q @ kj^T`` (tiled along N by the block size: one matmul per block) and ``p @ vj`` (K spans
the blocks: one gathered L1 load). A tail tile of the sequence reads only a prefix of ``vj``.
"""

import pytest
import torch

import pypto
from pypto.errors import KernelRuntimeError
from tests.golden.helper import check_kernel, rand

BF16, FP32, I32 = pypto.DT_BF16, pypto.DT_FP32, pypto.DT_INT32
D = pypto.DYNAMIC
BS, S2, DN, G = 32, 128, 64, 16  # block size, key tile (4 blocks), head dim, query rows


@pypto.frontend.jit
def paged_scores(q: pypto.Tensor([G, DN], BF16), k: pypto.Tensor([D, BS, DN], BF16),
                 v: pypto.Tensor([D, BS, DN], BF16), table: pypto.Tensor([D], I32),
                 seq: pypto.Tensor([1], I32), out: pypto.Tensor([D, DN], FP32)):
    k2 = pypto.reshape(k, [k.shape[0] * BS, DN], inplace=True)
    v2 = pypto.reshape(v, [v.shape[0] * BS, DN], inplace=True)
    tiles = (seq[0] + S2 - 1) // S2
    for t in pypto.loop(tiles, name="LOOP_s2", idx_name="t"):
        rows = (seq[0] - t * S2).min(S2)
        kj = pypto.tensor([S2, DN], BF16, "kj")
        for i in range(S2 // BS):
            blk = table[t * (S2 // BS) + i].max(0)
            kj[i * BS:(i + 1) * BS, 0:] = pypto.view(k2, [BS, DN], [blk * BS, 0])
        pypto.set_cube_tile_shapes([16, 16], [64, 64], [BS, BS])
        s = pypto.matmul(q, kj, FP32, b_trans=True)
        pypto.set_vec_tile_shapes(16, S2)
        p = pypto.cast(pypto.exp(pypto.mul(s, 0.125)), BF16)
        vj = pypto.tensor([S2, DN], BF16, "vj")
        for i in range(S2 // BS):
            blk = table[t * (S2 // BS) + i].max(0)
            vj[i * BS:(i + 1) * BS, 0:] = pypto.view(v2, [BS, DN], [blk * BS, 0])
        vj = pypto.view(vj, [S2, DN], [0, 0], valid_shape=[rows, DN])
        p = pypto.view(p, [G, S2], [0, 0], valid_shape=[G, rows])
        pypto.set_cube_tile_shapes([16, 16], [BS, BS], [64, 64])
        o = pypto.matmul(p, vj, FP32)
        pypto.assemble(o, [t * G, 0], out)


def _args(seq_len, blocks=12, table=None):
    q = rand((G, DN), torch.bfloat16, seed=1)
    k = rand((blocks, BS, DN), torch.bfloat16, seed=2)
    v = rand((blocks, BS, DN), torch.bfloat16, seed=3)
    n_tiles = (seq_len + S2 - 1) // S2
    if table is None:
        table = torch.randperm(blocks, generator=torch.Generator().manual_seed(4))[:n_tiles * (S2 // BS)]
    table = table.to(torch.int32)
    return q, k, v, table, torch.tensor([seq_len], dtype=torch.int32), torch.zeros(n_tiles * G, DN)


def _reference(q, k, v, table, seq, out):
    n = int(seq[0])
    rows = []
    for t in range(out.shape[0] // G):
        ids = table[t * (S2 // BS):(t + 1) * (S2 // BS)].clamp(min=0).long()
        kj, vj = k[ids].reshape(S2, DN).float(), v[ids].reshape(S2, DN).float()
        s = q.float() @ kj.T
        p = torch.exp(s * 0.125).to(torch.bfloat16).float()
        m = min(S2, n - t * S2)
        rows.append(p[:, :m] @ vj[:m])
    return torch.cat(rows)


@pytest.mark.parametrize("seq_len", [256, 200])  # whole key tiles, and a tail tile of 72 keys
def test_paged_gather_keeps_the_numbers(seq_len):
    args = _args(seq_len)
    check_kernel(paged_scores, args, _reference(*args), out=5)


def test_paged_gather_has_no_copy_tasks_and_loads_the_pieces_in_the_cube_task():
    args = _args(256)
    paged_scores(*args)
    run = paged_scores.last_run
    leaves = {e.leaf for e in run.timeline.events}
    assert not [n for n in leaves if "copy" in n], leaves
    assert any("gather_in" in n for n in leaves), leaves
    # q @ kj^T: one cube task per block of each key tile (2 tiles x 4 blocks); p @ vj: one per tile
    cube = [e for e in run.timeline.events if e.core_type == "AIC"]
    assert len(cube) == 2 * 4 + 2


def test_a_block_past_the_end_of_the_cache_is_refused_not_shifted():
    table = torch.tensor([0, 1, 2, 3, 4, 5, 6, 7], dtype=torch.int32)
    args = _args(256, blocks=8, table=table)
    paged_scores(*args)  # in range: runs
    bad = table.clone()
    bad[5] = 8  # one block past the cache's end, inside a key tile
    args = _args(256, blocks=8, table=bad)
    with pytest.raises(KernelRuntimeError, match="past the end"):
        paged_scores(*args)
    # (the block table is read while the call runs: key tiles before the bad one have run, as
    # with any element read that fails mid-run in a program whose control flow reads elements)
    good = _args(256, blocks=8, table=table)
    check_kernel(paged_scores, good, _reference(*good), out=5)  # and the next good call works


@pypto.frontend.jit
def computed_rows(x: pypto.Tensor([4, DN], FP32), w: pypto.Tensor([DN, 32], BF16), out: pypto.Tensor([4, 32], FP32)):
    # upstream's GLM attention pre-quant: the rows of a local tensor are computed, not views: they
    # stay in UB inside their fused group, so the matmul must read the assembled tensor
    pypto.set_vec_tile_shapes(1, DN)
    t = pypto.tensor([4, DN], BF16, "rows")
    for i in range(4):
        t[i:i + 1, 0:] = pypto.cast(pypto.mul(pypto.view(x, [1, DN], [i, 0]), 2.0), BF16)
    pypto.set_cube_tile_shapes([16, 16], [64, 64], [32, 32])
    out[:] = pypto.matmul(t, w, FP32)


def test_computed_rows_are_not_gathered():
    x, w = rand((4, DN), seed=5), rand((DN, 32), torch.bfloat16, seed=6)
    expected = (x * 2.0).to(torch.bfloat16).float() @ w.float()
    check_kernel(computed_rows, (x, w, torch.zeros(4, 32)), expected, out=2)
