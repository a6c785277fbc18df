"""Issue 20 ("Also"): a call whose arguments do not bind raises what Python's own binding raises
(`TypeError`, as ``inspect.Signature.bind`` does) and still the pypto error it raised before
(`ArgumentValueError`, a `PyptoError`), naming the parameter."""

from __future__ import annotations

import inspect

import pytest
import torch

import pypto
from pypto.errors import ArgumentValueError, PyptoError

D = pypto.DYNAMIC
FP32 = pypto.DT_FP32


def _scaled(x: pypto.Tensor([D, 8], FP32), out: pypto.Tensor([D, 8], FP32), scale: float = 2.0):
    pypto.set_vec_tile_shapes(8, 8)
    out[:] = x * scale


scaled = pypto.jit(_scaled)
X, OUT = torch.ones(4, 8), torch.zeros(4, 8)

CALLS = {
    "missing tensor": ((X,), {}, "out"),
    "too many positional": ((X, OUT, 1.0, 2.0), {}, None),
    "unknown keyword": ((X, OUT), {"scal": 1.0}, "scal"),
    "tensor given twice": ((X, OUT), {"x": X}, "x"),
    "constant given twice": ((X, OUT, 1.0), {"scale": 1.0}, "scale"),
}


@pytest.mark.parametrize("case", list(CALLS))
def test_a_call_that_does_not_bind_is_a_type_error_and_a_pypto_error(case):
    args, kwargs, param = CALLS[case]
    with pytest.raises(TypeError):  # what Python says for the same call of the plain function
        inspect.signature(_scaled).bind(*args, **kwargs)
    with pytest.raises(TypeError) as info:
        scaled(*args, **kwargs)
    assert isinstance(info.value, ArgumentValueError) and isinstance(info.value, PyptoError)
    if param is not None:
        assert info.value.param == param
    assert bool((OUT == 0).all())
    scaled(X, OUT)  # the next good call works
    assert bool((OUT == 2.0).all())
    OUT.zero_()
