"""The matmul's prepared form (`ops/matmul.py _prepare_matmul_into`): at a plan step's next calls it
rebuilds the product's operand views with one ``as_strided`` each; the numbers must be those of
`_matmul_into`, bit for bit, and a view of other strides must fall back."""
from __future__ import annotations

import importlib

import pytest
import torch

mm = importlib.import_module("pypto.ops.matmul")  # (the package re-exports the op under this name)

ATTRS = {"a_trans": False, "b_trans": False}


def _forms():
    g = torch.Generator().manual_seed(7)
    r = lambda *s: torch.randn(*s, generator=g)  # noqa: E731
    q, k = r(256, 64), r(256, 64)
    p = r(8, 4, 32, 64)
    return {
        # every query block against every key block (the outer product: one GEMM, placed)
        "outer": ((q.as_strided((8, 4, 32, 64), (2048, 0, 64, 1)), k.as_strided((8, 4, 64, 64), (0, 4096, 64, 1))),
                  {"a_trans": False, "b_trans": True}, (8, 4, 32, 64), None),
        # a strided batch against one shared matrix, into a strided view (copied after the product)
        "strided": ((p[:, 1], r(64, 64).expand(8, 64, 64)), ATTRS, (8, 32, 64), (8192, 64, 1)),
        # a contiguous batch against one matrix (folded into M, computed into the output)
        "fold": ((r(8, 32, 64), r(64, 64).expand(8, 64, 64)), ATTRS, (8, 32, 64), None),
        # equal batches, contiguous output
        "batched": ((r(4, 32, 64), r(4, 64, 16)), ATTRS, (4, 32, 16), None),
    }


def _dst(shape, stride):
    if stride is None:
        return torch.full(shape, float("nan"))
    base = torch.full((shape[0] * stride[0],), float("nan"))
    return base.as_strided(shape, stride)


@pytest.mark.parametrize("form", ["outer", "strided", "fold", "batched"])
def test_prepared_matmul_equals_matmul_into(form):
    ins, attrs, shape, stride = _forms()[form]
    want = _dst(shape, stride)
    assert mm._matmul_into(list(ins), attrs, None, want) is not None
    torch.testing.assert_close(want, torch.matmul(ins[0].narrow(-3, 0, 1) if form == "outer" else ins[0],
                                                  ins[1].transpose(-1, -2) if attrs["b_trans"] else ins[1])
                               .expand(shape), rtol=1e-5, atol=1e-5)
    run = mm._prepare_matmul_into(list(ins), attrs, None, _dst(shape, stride))
    assert run is not None
    for _ in range(2):  # the runner is kept: it must give the same numbers at every call
        got = _dst(shape, stride)
        assert run(list(ins), got) is got
        assert torch.equal(got, want)


def test_prepared_matmul_declines_views_of_other_strides():
    ins, attrs, shape, stride = _forms()["strided"]
    run = mm._prepare_matmul_into(list(ins), attrs, None, _dst(shape, stride))
    other = ins[0].contiguous()  # same shape, other strides: not the view the runner was made for
    assert run([other, ins[1]], _dst(shape, stride)) is None


def test_prepared_matmul_declines_half_operands_and_run_time_checks():
    a, b = torch.randn(2, 8, 8).bfloat16(), torch.randn(2, 8, 8).bfloat16()
    assert mm._prepare_matmul_into([a, b], ATTRS, None, torch.empty(2, 8, 8)) is None
    a, b = torch.randn(2, 8, 8), torch.randn(2, 8, 8)
    assert mm._prepare_matmul_into([a, b], dict(ATTRS, k_check=(8, 8)), None, torch.empty(2, 8, 8)) is None
