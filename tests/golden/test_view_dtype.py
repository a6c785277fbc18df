"""Golden tests of ``pypto.view(x, dtype=...)``: the same bytes read as another dtype, as
upstream's dtype view (its DeepSeek sparse attention reads fp32 scales stored in an int8 cache).
The last dim and its valid extent scale by the ratio of the element sizes."""

from __future__ import annotations

import pytest
import torch

import pypto

try:
    from tests.golden.helper import check_kernel, check_op, check_raises, rand
except ImportError:  # run without the repo root on sys.path: pytest puts this dir there
    from helper import check_kernel, check_op, check_raises, rand

PT = {torch.float32: pypto.DT_FP32, torch.int8: pypto.DT_INT8, torch.int32: pypto.DT_INT32,
      torch.int16: pypto.DT_INT16, torch.uint8: pypto.DT_UINT8}


@pytest.mark.parametrize("src,dst", [(torch.int8, torch.float32), (torch.float32, torch.int8),
                                     (torch.int32, torch.float32), (torch.float32, torch.int16),
                                     (torch.int16, torch.int32), (torch.uint8, torch.int32)], ids=str)
def test_view_as_another_dtype(src, dst):
    # bytes of finite fp32 values, so a float result compares by value
    x = rand((6, 16), torch.float32, seed=3).view(src).clone()
    check_op(lambda t: pypto.view(t, dtype=PT[dst]), [x], lambda t: t.view(dst), out_dtype=dst)
    check_op(lambda t: t.view(dtype=PT[dst]), [x], lambda t: t.view(dst), out_dtype=dst)


def test_view_as_another_dtype_tiled_rows_with_tail():
    x = rand((37, 8), torch.float32, seed=4).view(torch.int8).clone()
    check_op(lambda t: pypto.view(t, dtype=pypto.DT_FP32), [x], lambda t: t.view(torch.float32), mode="tiled", out_dtype=torch.float32,
             tile=8)


def test_a_window_with_a_valid_extent_keeps_its_bytes():
    """Upstream's pattern: an int8 window of 32 bytes, 16 of them valid, read as 4 valid fp32."""
    @pypto.jit
    def kernel(x: pypto.Tensor([8, 64], pypto.DT_INT8), y: pypto.Tensor([8, 8], pypto.DT_FP32)):
        pypto.set_vec_tile_shapes(8, 64)
        w = pypto.view(x, [8, 32], [0, 16], valid_shape=[8, 16])
        y[:] = pypto.add(pypto.view(input=w, dtype=pypto.DT_FP32), 1.0)

    scales = rand((8, 16), torch.float32, seed=5)
    x = scales.view(torch.int8).clone()
    y = torch.full((8, 8), -7.0)
    want = y.clone()
    want[:, :4] = scales[:, 4:8] + 1.0  # bytes 16..31 of each row: fp32 elements 4..7
    check_kernel(kernel, [x, y], want, out=1)


def test_refusals():
    x = torch.zeros(4, 6, dtype=torch.int8)
    err = check_raises(pypto.ShapeError, lambda t: pypto.view(t, dtype=pypto.DT_FP32), [x])
    assert "multiple of 4" in str(err)  # 6 bytes are not a whole number of fp32
    err = check_raises(pypto.ArgumentTypeError, lambda t: pypto.view(t, [4, 4], dtype=pypto.DT_FP32),
                       [torch.zeros(4, 16, dtype=torch.int8)])
    assert err.param == "dtype"
    err = check_raises(pypto.ArgumentTypeError, lambda t: pypto.view(t), [x])
    assert err.param == "shape"
