"""Layout ops that move no data become no task (passes/aliasing.py), and the numbers stay right.

A reshape nothing writes through is the same memory under another shape; a whole, fully valid
result assembled into an output nothing else touches is made in that output. The first case is
upstream's block-diagonal skinny matmul (docs/zh/tutorials/debug/performance.md): A (M, 16)
seen as (M/4, 64) times a 4x block-diagonal (64, 64) right matrix built with concat.
"""

import torch

import pypto
from tests.golden.helper import check_kernel, rand

BF16, FP32, I32 = pypto.DT_BF16, pypto.DT_FP32, pypto.DT_INT32
D = pypto.DYNAMIC


def skinny_matmul(m):
    @pypto.frontend.jit
    def matmul_kernel(a: pypto.Tensor([m, 16], BF16), b: pypto.Tensor([16, 16], BF16),
                      out: pypto.Tensor([m, 16], BF16)):
        pypto.set_vec_tile_shapes(64, 64)
        d = pypto.full([16, 16], 0.0, pypto.DT_BF16)
        c1 = pypto.concat([b, d, d, d], 1)
        c2 = pypto.concat([d, b, d, d], 1)
        c3 = pypto.concat([d, d, b, d], 1)
        c4 = pypto.concat([d, d, d, b], 1)
        c = pypto.concat([c1, c2, c3, c4], 0)
        a4 = pypto.reshape(a, [m // 4, 64])
        pypto.set_cube_tile_shapes([512, 512], [64, 64], [64, 64], True)
        e = pypto.matmul(a4, c, pypto.DT_BF16)
        e = pypto.reshape(e, [m, 16])
        pypto.assemble(e, [0, 0], out)

    return matmul_kernel


def _skinny_args(m):
    a, b = rand((m, 16), torch.bfloat16, seed=3), rand((16, 16), torch.bfloat16, seed=4)
    return a, b, torch.full((m, 16), 5.0, dtype=torch.bfloat16)


def test_skinny_matmul_numbers():
    a, b, out = _skinny_args(8192)
    check_kernel(skinny_matmul(8192), (a, b, out), (a.float() @ b.float()).to(torch.bfloat16), out=2)


def test_skinny_matmul_moves_no_data_for_its_reshapes_and_its_final_assemble():
    counts = {}
    for m in (4096, 16384):
        kernel = skinny_matmul(m)
        kernel(*_skinny_args(m))
        events = kernel.last_run.timeline.events
        assert not [e for e in events if "reshape" in e.leaf]
        counts[m] = (sum(e.core_type == "AIV" for e in events), sum(e.core_type == "AIC" for e in events))
    # the vector tasks only build the (64, 64) right matrix: as many for any M; one cube task per
    # 512 rows of the (M/4, 64) left matrix
    assert counts[4096][0] == counts[16384][0]
    assert counts[4096][1] == 2 and counts[16384][1] == 8


@pypto.frontend.jit
def regrouped_product(a: pypto.Tensor([256, 32], FP32), b: pypto.Tensor([32, 16], FP32),
                      out: pypto.Tensor([64, 64], FP32)):
    pypto.set_vec_tile_shapes(16, 64)
    pypto.set_cube_tile_shapes([64, 64], [32, 32], [16, 16])
    e = pypto.matmul(a, b, FP32)
    r = pypto.reshape(e, [64, 64])  # the cube's rows regrouped: a reader of r reads e's memory
    out[:] = r + 1.0


def test_a_reader_of_a_reshape_alias_waits_for_the_writer_of_its_memory():
    a, b, out = rand((256, 32), seed=1), rand((32, 16), seed=2), torch.zeros(64, 64)
    check_kernel(regrouped_product, (a, b, out), (a @ b).reshape(64, 64) + 1.0, out=2)
    tl = regrouped_product.last_run.timeline
    leaf = {e.task: e.leaf for e in tl.events}
    raw = [(leaf[i], leaf[j]) for i, j, kind in tl.deps if kind == "RAW"]
    assert any("matmul" in i and "add" in j for i, j in raw), tl.deps
    assert not [e for e in tl.events if "reshape" in e.leaf]


@pypto.frontend.jit
def per_iteration_regroup(x: pypto.Tensor([D, 8], FP32), out: pypto.Tensor([D, 32], FP32)):
    pypto.set_vec_tile_shapes(4, 32)
    for i in pypto.loop(x.shape[0] // 16):
        y = pypto.view(x, [16, 8], [i * 16, 0]) * 2.0
        pypto.set_vec_tile_shapes(16, 8)
        t = pypto.exp(y)
        pypto.set_vec_tile_shapes(4, 32)
        out[i * 4:(i + 1) * 4, :] = pypto.reshape(t, [4, 32]) - 1.0


def test_a_reshape_alias_inside_a_loop_computes_each_iteration():
    x, out = rand((48, 8), seed=5), torch.full((12, 32), -3.0)
    check_kernel(per_iteration_regroup, (x, out), (torch.exp(x * 2.0) - 1.0).reshape(12, 32), out=1)


@pypto.frontend.jit
def uneven_regroup(x: pypto.Tensor([6, 8], FP32), out: pypto.Tensor([8, 6], FP32)):
    pypto.set_vec_tile_shapes(2, 8)
    y = x * 3.0
    pypto.set_vec_tile_shapes(3, 4)
    out[:] = pypto.reshape(y, [8, 6]) + pypto.reshape(x, [8, 6])  # tiles cross rows of y


def test_a_reshape_whose_tiles_cross_rows_keeps_the_numbers():
    x, out = rand((6, 8), seed=6), torch.zeros(8, 6)
    check_kernel(uneven_regroup, (x, out), (x * 4.0).reshape(8, 6), out=1)


@pypto.frontend.jit
def forwarded_and_read_again(a: pypto.Tensor([64, 32], FP32), b: pypto.Tensor([32, 32], FP32),
                             out: pypto.Tensor([64, 32], FP32), twice: pypto.Tensor([64, 32], FP32)):
    pypto.set_vec_tile_shapes(16, 32)
    pypto.set_cube_tile_shapes([32, 32], [32, 32], [32, 32])
    e = pypto.matmul(a, b, FP32)
    out[:] = e  # e is made in out's memory ...
    twice[:] = e * 2.0  # ... and read from there


def test_a_result_made_in_its_output_is_still_readable():
    a, b = rand((64, 32), seed=7), rand((32, 32), seed=8)
    out, twice = torch.full((64, 32), 9.0), torch.full((64, 32), 9.0)
    check_kernel(forwarded_and_read_again, (a, b, out, twice), ((a @ b), (a @ b) * 2.0), out=[2, 3])
    assert not [e for e in forwarded_and_read_again.last_run.timeline.events if e.leaf.endswith("_copy")]


@pypto.frontend.jit
def bounded_by_an_element(x: pypto.Tensor([64, 8], FP32), n: pypto.Tensor([1], I32),
                          out: pypto.Tensor([16, 32], FP32)):
    pypto.set_vec_tile_shapes(4, 32)
    flat = pypto.reshape(x, [16, 32])
    for i in pypto.loop(n[0]):  # control flow reads an element: the lazy memory path
        out[i * 4:(i + 1) * 4, :] = flat[i * 4:(i + 1) * 4, :] + 1.0


def test_a_reshape_alias_in_a_program_that_reads_elements():
    x, out = rand((64, 8), seed=9), torch.zeros(16, 32)
    want = torch.zeros(16, 32)
    want[:12] = x.reshape(16, 32)[:12] + 1.0
    check_kernel(bounded_by_an_element, (x, torch.tensor([3], dtype=torch.int32), out), want, out=2)


@pypto.frontend.jit
def written_after_reshape(x: pypto.Tensor([8, 8], FP32), out: pypto.Tensor([4, 16], FP32)):
    pypto.set_vec_tile_shapes(8, 8)
    y = x + 0.0
    flat = pypto.reshape(y, [4, 16])
    y[0:4, :] = x[0:4, :] * 10.0  # a write into y must not show through flat: a copy stays
    pypto.set_vec_tile_shapes(4, 16)
    out[:] = flat + y.reshape([4, 16]) * 0.0


def test_a_reshape_of_a_tensor_written_afterwards_stays_a_copy():
    x, out = rand((8, 8), seed=10), torch.zeros(4, 16)
    check_kernel(written_after_reshape, (x, out), x.reshape(4, 16), out=1)


def _loop_cache_update(rows, blocks):
    """DeepSeek's MLA prolog cache update in small: per 8-row tile of a loop, a result reshaped
    (a plain reshape), reshaped again in place, and scattered into a cache updated in place."""
    per = rows // blocks

    @pypto.jit
    def update(x: pypto.Tensor([rows, 4, 32], FP32), index: pypto.Tensor([rows, 1], pypto.DT_INT64),
               cache: pypto.Tensor([64, 1, 1, 128], FP32), cache_out: pypto.Tensor([64, 1, 1, 128], FP32)):
        for i in pypto.loop(blocks, name="LOOP_t", idx_name="i"):
            pypto.set_vec_tile_shapes(per, 4, 32)
            xs = pypto.mul(pypto.view(x, [per, 4, 32], [i * per, 0, 0]), 2.0)
            flat = pypto.reshape(xs, [per, 128])
            rows4 = pypto.reshape(flat, [per, 1, 1, 128], inplace=True)
            idx = pypto.view(index, [per, 1], [i * per, 0])
            pypto.set_vec_tile_shapes(per, 1, 1, 128)
            cache_out[:] = pypto.scatter_update(cache, -2, idx, rows4)

    return update


def test_a_reshape_in_a_loop_body_keeps_the_numbers():
    rows, blocks = 32, 4
    x = rand((rows, 4, 32), torch.float32, seed=5)
    index = torch.randperm(64)[:rows].reshape(rows, 1).to(torch.int64)
    cache = rand((64, 1, 1, 128), torch.float32, seed=6)
    expected = cache.clone()
    expected.view(64, 128)[index.reshape(-1)] = (x * 2.0).reshape(rows, 128)
    check_kernel(_loop_cache_update(rows, blocks), (x, index, cache, cache), expected, out=3)
