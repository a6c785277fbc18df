"""``pypto.loop(..., unroll_list=[...])`` is traced as upstream's recorder traces it: per factor
f a path whose body is the loop body f times in a row (indices i, i + step, ...), so one root
function runs f iterations and the remainder takes the smaller factors (1 always among them).
``is_loop_begin`` holds only for a chunk's first copy, ``is_loop_end`` only for its last. The
numbers are those of the plain loop; the root instances (what stitching counts) are fewer."""

import pytest
import torch

import pypto
from tests.golden.helper import check_kernel, rand

FP32 = pypto.DT_FP32


def _running_sum(unroll):
    @pypto.frontend.jit
    def running_sum(x: pypto.Tensor([pypto.DYNAMIC, 8], FP32), out: pypto.Tensor([pypto.DYNAMIC, 8], FP32)):
        pypto.set_vec_tile_shapes(1, 8)
        acc = pypto.tensor([1, 8], FP32, "acc")
        for i in pypto.loop(x.shape[0], name="L", idx_name="i", unroll_list=unroll):
            row = pypto.view(x, [1, 8], [i, 0])
            if pypto.is_loop_begin(i):
                acc[:] = row
            else:
                acc[:] = acc + row
            pypto.assemble(acc, [i, 0], out)
            if pypto.is_loop_end(i):
                pypto.assemble(acc * 2.0, [i, 0], out)

    return running_sum


def _expected(x):
    ref = torch.cumsum(x, 0)
    ref[-1] *= 2.0
    return ref


@pytest.mark.parametrize("rows", [1, 3, 4, 7, 8, 11])
@pytest.mark.parametrize("unroll", [None, [4, 2], [8, 4, 2, 1]])
def test_unrolled_loops_keep_the_numbers(rows, unroll):
    x = rand((rows, 8), seed=rows)
    check_kernel(_running_sum(unroll), (x, torch.zeros(rows, 8)), _expected(x), out=1)


def test_one_root_instance_runs_a_chunk_of_iterations():
    roots = {}
    for unroll in (None, [4, 2]):
        kernel = _running_sum(unroll)
        kernel(rand((11, 8)), torch.zeros(11, 8))
        roots[str(unroll)] = len({e.root for e in kernel.last_run.timeline.events})
    assert roots == {"None": 11, "[4, 2]": 4}  # 11 = 4 + 4 + 2 + 1
