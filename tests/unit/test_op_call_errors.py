"""Calls inside a kernel that cannot work get a PyptoError at the user's line (issue 11, item 5):
a torch function given a kernel tensor, and arguments a public op's signature does not take (for
every public op, through the wrapper the op namespace is built with: pypto/ops/arguments.py)."""

import inspect

import pytest
import torch

import pypto
from tests.golden.helper import check_op, rand

SQ = pypto.Tensor([16, 16], pypto.DT_FP32)


def _kernel(body):
    @pypto.jit
    def kernel(x: SQ, y: SQ):
        pypto.set_vec_tile_shapes(16, 16)
        pypto.set_cube_tile_shapes([16, 16], [16, 16], [16, 16])
        return body(x, y)

    return kernel


def _raises(exc, body, match):
    with pytest.raises(exc, match=match) as e:
        _kernel(body)(rand((16, 16)), rand((16, 16), seed=1))
    assert e.value.loc is not None and e.value.loc.file == __file__, e.value.loc
    return e.value


@pytest.mark.parametrize("call, name", [
    (lambda x, y: torch.exp(x), "exp"),
    (lambda x, y: torch.add(x, y), "add"),
    (lambda x, y: torch.nn.functional.softmax(x, 1), "softmax"),
])
def test_torch_function_on_a_kernel_tensor_points_at_the_pypto_op(call, name):
    err = _raises(pypto.ArgumentTypeError, call, rf"torch\S*\.{name} was called on a pypto kernel tensor")
    assert f"pypto.{name}(...)" in str(err)
    assert isinstance(err, TypeError)


def test_torch_function_without_a_pypto_equivalent():
    err = _raises(pypto.ArgumentTypeError, lambda x, y: torch.logsumexp(x, 1), "torch.logsumexp was called")
    assert "only pypto ops act on kernel tensors" in str(err)


def test_torch_tensor_in_a_kernel_expression_names_its_type():
    c = torch.ones(16, 16)
    err = _raises(pypto.DTypeError, lambda x, y: c + x, "must be a tensor or a scalar")
    assert "torch.Tensor" in str(err) and "kernel argument" in str(err)


def test_scalar_on_the_left_still_works():
    check_op(lambda x: 2.0 + x, [rand((16, 16))], lambda x: 2.0 + x)


@pytest.mark.parametrize("body, key, accepted, hint", [
    (lambda x, y: pypto.matmul(x, y, bias=y), "bias", "extend_params", "bias_tensor"),
    (lambda x, y: pypto.exp(x, foo=1), "foo", "precision_type", None),
    (lambda x, y: pypto.sum(x, 0, keepdims=True), "keepdims", "keepdim", "keepdim="),
    (lambda x, y: pypto.add(x, y, alhpa=2), "alhpa", "alpha", "did you mean 'alpha'?"),
    (lambda x, y: pypto.experimental.online_softmax(x, 1.0, bogus=1), "bogus", "scale", None),
])
def test_unknown_keyword_to_an_op_names_it_and_the_accepted_ones(body, key, accepted, hint):
    err = _raises(pypto.ArgumentTypeError, body, f"got an unknown keyword argument '{key}'")
    assert accepted in str(err) and err.param == key
    if hint is not None:
        assert hint in str(err)


def test_too_many_positional_arguments_to_an_op():
    err = _raises(pypto.ArgumentTypeError, lambda x, y: pypto.sum(x, 0, True, 5), "do not fit its signature")
    assert "pypto.sum(input, dim=-1, keepdim=False)" in str(err)


def test_every_public_op_is_wrapped():
    names = [n for n in pypto.ops.__all__ if inspect.isfunction(getattr(pypto.ops, n))]
    assert len(names) > 100
    for n in names:
        assert hasattr(getattr(pypto.ops, n), "__pypto_op__"), n
        if n != "tensor":  # pypto.tensor is the Tensor class, as upstream spells it
            assert getattr(pypto, n) is getattr(pypto.ops, n), n
        assert inspect.signature(getattr(pypto.ops, n)) == inspect.signature(getattr(pypto.ops, n).__pypto_op__)


def test_a_type_error_raised_inside_an_op_is_not_rewritten():
    # an argument that binds but has the wrong type keeps the op's own (pypto) error
    _raises(pypto.PyptoError, lambda x, y: pypto.matmul(x, "y"), "matmul")


def test_tensor_method_with_arguments_that_do_not_bind():
    err = _raises(pypto.ArgumentTypeError, lambda x, y: x.view([8, 16]), "Tensor.view was called with arguments")
    assert "offsets" in str(err)
    _raises(pypto.ArgumentTypeError, lambda x, y: x.sum(0, keepdims=True), "unknown keyword argument 'keepdims'")


def test_tensor_methods_still_compute():
    check_op(lambda x: x.exp().sum(1, keepdim=True), [rand((16, 16))], lambda x: x.exp().sum(1, keepdim=True))
