"""``set_pass_options(sg_set_scope=...)`` inside a kernel: ops of one scope id form their own
subgraph, apart from other scopes and from unscoped ops (upstream's GraphPartition rule; GLM-4.5
attention scopes its online-softmax update this way). The numbers do not depend on it."""

import torch

import pypto
from tests.golden.helper import check_kernel, rand

FP32 = pypto.DT_FP32


def _kernel(first, second):
    @pypto.frontend.jit
    def chain(x: pypto.Tensor([64, 64], FP32), y: pypto.Tensor([64, 64], FP32), out: pypto.Tensor([64, 64], FP32)):
        pypto.set_vec_tile_shapes(32, 64)
        pypto.set_pass_options(sg_set_scope=first)
        a = pypto.exp(pypto.mul(x, 0.5))
        pypto.set_pass_options(sg_set_scope=second)
        b = pypto.add(pypto.mul(a, y), 1.0)
        pypto.set_pass_options(sg_set_scope=-1)
        out[:] = pypto.sub(b, x)

    return chain


def _leaves(kernel):
    x, y = rand((64, 64), seed=1), rand((64, 64), seed=2)
    out = torch.zeros(64, 64)
    check_kernel(kernel, (x, y, out), torch.exp(x * 0.5) * y + 1.0 - x, out=2)
    return sorted({e.leaf for e in kernel.last_run.timeline.events})


def test_unscoped_ops_fuse_into_one_subgraph():
    assert len(_leaves(_kernel(-1, -1))) == 1


def test_two_scopes_are_two_subgraphs_and_unscoped_ops_stay_out():
    leaves = _leaves(_kernel(1, 2))
    assert len(leaves) == 3, leaves  # scope 1, scope 2, and the unscoped subtraction


def test_one_scope_keeps_its_ops_together():
    leaves = _leaves(_kernel(7, 7))
    assert len(leaves) == 2, leaves  # the scope, and the unscoped subtraction apart


def test_cross_scope_merge_lets_unscoped_ops_join():
    leaves = _leaves(_kernel((3, False, True), (3, False, True)))
    assert len(leaves) == 1, leaves
