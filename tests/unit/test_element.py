"""``pypto.Element`` (a scalar with a dtype) and the rules a scalar operand must meet: a typed
scalar must have the tensor's dtype, a value must fit the dtype (no negative value for an unsigned
dtype), and ``where`` reads a Python float as fp32 (as upstream documents)."""

from __future__ import annotations

import pytest
import torch

import pypto

try:
    from tests.golden.helper import check_op, check_raises, rand
except ImportError:  # run without the repo root on sys.path
    import sys
    from pathlib import Path

    sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "golden"))
    from helper import check_op, check_raises, rand


def test_element_holds_dtype_and_value():
    a = pypto.element(pypto.DT_FP32, 1.5)
    assert a.dtype is pypto.DT_FP32 and a.value == 1.5 and isinstance(a, pypto.Element)
    b = pypto.Element(pypto.DT_INT32, 7)
    assert (b.dtype, b.value) == (pypto.DT_INT32, 7) and b == pypto.Element(pypto.DT_INT32, 7)
    with pytest.raises(AttributeError):
        b.value = 3  # read only


@pytest.mark.parametrize("args,exc,match", [
    ((pypto.DT_UINT8, -100), pypto.ArgumentValueError, "negative"),
    ((pypto.DT_INT8, 200), pypto.ArgumentValueError, "does not fit DT_INT8"),
    ((pypto.DT_INT32, 1.5), pypto.DTypeError, "fractional value for the integer dtype DT_INT32"),
    ((pypto.DT_FP32, "1"), pypto.ArgumentTypeError, "int or a float"),
    (("fp32", 1.0), pypto.ArgumentTypeError, "pypto dtype"),
])
def test_element_rejects(args, exc, match):
    with pytest.raises(exc, match=match):
        pypto.Element(*args)


def test_where_with_elements_and_fp32_floats():
    c = rand((6, 8), torch.bool, seed=1)
    h = rand((6, 8), torch.float16, seed=2)
    f = rand((6, 8), torch.float32, seed=3)
    check_op(lambda k, t: pypto.where(k, t, pypto.Element(pypto.DT_FP16, 0.5)), [c, h],
             lambda k, t: torch.where(k, t, torch.tensor(0.5)))
    check_op(lambda k, t: pypto.where(k, pypto.Element(pypto.DT_FP16, -2.0), t), [c, h],
             lambda k, t: torch.where(k, torch.tensor(-2.0), t))
    check_op(lambda k, t: pypto.where(k, t, 0.25), [c, f], lambda k, t: torch.where(k, t, torch.tensor(0.25)))


def test_where_rejects_inconsistent_dtypes():
    c, h, f = rand((4, 4), torch.bool), rand((4, 4), torch.float16), rand((4, 4))
    for body, inputs in [
        (lambda k, t: pypto.where(k, t, 1.0), [c, h]),  # a float is fp32
        (lambda k, t: pypto.where(k, 1.0, t), [c, h]),
        (lambda k, t: pypto.where(k, t, pypto.Element(pypto.DT_FP32, 1.0)), [c, h]),
        (lambda k, t, u: pypto.where(k, t, u), [c, h, f]),
    ]:
        err = check_raises(pypto.DTypeError, body, inputs)
        assert "data type inconsistent" in str(err) and isinstance(err, TypeError)


def test_unsigned_scalars_must_not_be_negative():
    c, u = rand((4, 4), torch.bool), rand((4, 4), torch.uint8, lo=0, hi=9)
    err = check_raises(pypto.ArgumentValueError, lambda k, t: pypto.where(k, t, -100), [c, u])
    assert "'other' is negative" in str(err) and "DT_UINT8 is unsigned" in str(err)
    check_raises(pypto.ArgumentValueError, lambda: pypto.full([2, 2], -1, pypto.DT_UINT8), [])
    check_raises(pypto.ArgumentValueError, lambda t: t + 40000, [rand((4, 4), torch.int16)])  # out of int16 range


def test_full_with_an_element():
    @pypto.jit
    def k(x: pypto.Tensor([4, 4], pypto.DT_INT32)):
        pypto.set_vec_tile_shapes(4, 4)
        return x + pypto.full([4, 4], pypto.Element(pypto.DT_INT32, 7))

    x = torch.arange(16, dtype=torch.int32).reshape(4, 4)
    assert torch.equal(k(x), x + 7)
    err = check_raises(pypto.DTypeError, lambda: pypto.full([2, 2], pypto.Element(pypto.DT_INT32, 1), pypto.DT_FP32),
                       [])
    assert "data type inconsistent" in str(err)


def test_where_between_two_scalars_has_the_condition_shape():
    c = rand((5, 7), torch.bool, seed=4)
    check_op(lambda k: pypto.where(k, 1.0, 0.0), [c], lambda k: torch.where(k, 1.0, 0.0), out_dtype=torch.float32)
    check_op(lambda k: pypto.where(k, pypto.Element(pypto.DT_INT32, 3), -1), [c],
             lambda k: torch.where(k, 3, -1).to(torch.int32), out_dtype=torch.int32, mode="tiled")
    check_op(lambda k: pypto.where(k, 1, 0), [c], lambda k: torch.where(k, 1, 0).to(torch.int32),
             out_dtype=torch.int32)  # two plain ints: DT_INT32
    err = check_raises(pypto.DTypeError, lambda k: pypto.where(k, pypto.Element(pypto.DT_FP16, 1.0), 0.0), [c])
    assert "data type inconsistent" in str(err)
