"""The valid extent of an elementwise result whose operands end at different static rows or
columns (issue 20, `valid_of`): the result is valid where every operand is, as the run computes it.

Before, the graph took the first operand's extent, so it claimed columns computed from the other
operand's undefined tail; the run computed only the common part, but an op that reads the graph's
extent as a count (`rms_norm` divides by the valid size of the last dim) divided the sum of three
columns by five: a silent wrong number.
"""

from __future__ import annotations

import pytest
import torch

import pypto

try:
    from tests.golden.helper import check_kernel, rand
except ImportError:  # run without the repo root on sys.path: pytest puts this dir there
    from helper import check_kernel, rand

LONG, SHORT = 5, 3  # valid columns of the two operands


def _kernel(combine):
    @pypto.jit
    def kernel(x: pypto.Tensor([8, 8], pypto.DT_FP32), y: pypto.Tensor([8, 8], pypto.DT_FP32),
               out: pypto.Tensor([8, 8], pypto.DT_FP32)):
        pypto.set_vec_tile_shapes(8, 8)
        a = pypto.view(x, [8, 8], [0, 0], valid_shape=[8, LONG])
        b = pypto.view(y, [8, 8], [0, 0], valid_shape=[8, SHORT])
        pypto.assemble(pypto.rms_norm(combine(a, b)), [0, 0], out)

    return kernel


def _rms_norm(s):
    return s / (s * s).mean(-1, keepdim=True).add(1e-6).sqrt()


@pytest.mark.parametrize("name, combine, torch_fn", [
    ("add", lambda a, b: a + b, torch.add),
    ("add, short operand first", lambda a, b: b + a, lambda a, b: b + a),
    ("maximum", pypto.maximum, torch.maximum),
    ("where", lambda a, b: pypto.where(a > b, a, b), lambda a, b: torch.where(a > b, a, b)),
])
def test_rms_norm_of_operands_with_different_valid_columns(name, combine, torch_fn):
    x, y = rand((8, 8), seed=1, lo=0.1, hi=2.0), rand((8, 8), seed=2, lo=0.1, hi=2.0)
    out = torch.full((8, 8), -1.0)
    want = out.clone()
    want[:, :SHORT] = _rms_norm(torch_fn(x[:, :SHORT], y[:, :SHORT]))  # the columns both define
    check_kernel(_kernel(combine), (x, y, out), want, out=2)


def test_the_result_reports_the_common_extent():
    seen = []

    @pypto.jit
    def kernel(x: pypto.Tensor([8, 8], pypto.DT_FP32), y: pypto.Tensor([8, 8], pypto.DT_FP32),
               out: pypto.Tensor([8, 8], pypto.DT_FP32)):
        pypto.set_vec_tile_shapes(8, 8)
        a = pypto.view(x, [8, 8], [0, 0], valid_shape=[LONG, 8])
        b = pypto.view(y, [8, 8], [0, 0], valid_shape=[SHORT, 8])
        c = a * b
        seen.append([int(d) for d in c.valid_shape])
        out[:] = c

    x, y = rand((8, 8), seed=3), rand((8, 8), seed=4)
    out = torch.full((8, 8), -1.0)
    want = out.clone()
    want[:SHORT] = x[:SHORT] * y[:SHORT]
    check_kernel(kernel, (x, y, out), want, out=2)
    assert seen == [[SHORT, 8]]
