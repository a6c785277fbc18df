"""What may be passed for a parameter the kernel writes (pypto/frontend/outputs.py), and numpy
arguments torch cannot view directly (issue 11, items 4 and 5).

A refused call raises a PyptoError naming the parameter before anything is written; a call that
is allowed computes the right numbers (checked against torch through the golden helper).
"""

import numpy as np
import pytest
import torch

import pypto
from tests.golden.helper import assert_matches, check_kernel, rand

ROWS = pypto.Tensor([pypto.DYNAMIC, 16], pypto.DT_FP32)


@pypto.jit
def doubled(x: ROWS, out: ROWS):
    pypto.set_vec_tile_shapes(4, 16)
    out[:] = x + x


def x_np(seed=1):
    return rand((6, 16), seed=seed).numpy()


def test_read_only_numpy_output_is_refused_and_left_unchanged():
    buf = bytes(6 * 16 * 4)  # immutable memory behind the array
    out = np.frombuffer(buf, np.float32).reshape(6, 16)
    with pytest.raises(pypto.ArgumentValueError, match=r"'out' is written by the kernel but is a read-only"):
        doubled(x_np(), out)
    assert buf == bytes(6 * 16 * 4)


def test_read_only_strided_numpy_output_is_refused():
    out = np.zeros((6, 32), np.float32)[:, ::2]
    out.flags.writeable = False
    with pytest.raises(pypto.ArgumentValueError, match="'out'.*read-only"):
        doubled(x_np(), out)


def test_read_only_memmap_output_is_refused(tmp_path):
    path = tmp_path / "out.bin"
    np.zeros((6, 16), np.float32).tofile(path)
    out = np.memmap(path, np.float32, mode="r", shape=(6, 16))
    with pytest.raises(pypto.ArgumentValueError, match="'out'.*read-only") as e:
        doubled(x_np(), out)
    assert "mode 'r+'" in str(e.value)
    assert not np.asarray(out).any()


def test_read_only_memmap_input_is_read(tmp_path):
    path = tmp_path / "x.bin"
    x = x_np(3)
    x.tofile(path)
    mm = np.memmap(path, np.float32, mode="r", shape=(6, 16))
    out = np.zeros((6, 16), np.float32)
    doubled(mm, out)
    assert_matches(torch.from_numpy(out), torch.from_numpy(x) * 2)


def test_writeable_memmap_output_is_written(tmp_path):
    path = tmp_path / "out.bin"
    np.zeros((6, 16), np.float32).tofile(path)
    out = np.memmap(path, np.float32, mode="r+", shape=(6, 16))
    x = x_np(4)
    doubled(x, out)
    assert_matches(torch.from_numpy(np.fromfile(path, np.float32).reshape(6, 16)), torch.from_numpy(x) * 2)


def test_negative_stride_numpy_output_and_input():
    x = x_np(5)
    out = np.zeros((6, 16), np.float32)
    doubled(x[::-1], out[::-1])
    assert_matches(torch.from_numpy(out[::-1].copy()), torch.from_numpy(x[::-1].copy()) * 2)


def test_non_native_byte_order_numpy_arguments():
    x = x_np(6).astype(">f4")
    out = np.zeros((6, 16), ">f4")
    doubled(x, out)
    assert_matches(torch.from_numpy(out.astype(np.float32)), torch.from_numpy(x.astype(np.float32)) * 2)


@pytest.mark.parametrize("scalar", [np.float32(1.5), np.int32(2), np.float64(0.5)])
def test_numpy_scalar_is_refused_with_the_parameter_named(scalar):
    with pytest.raises(pypto.ArgumentTypeError, match=r"'x' is a numpy scalar") as e:
        doubled(scalar, torch.zeros(6, 16))
    assert "np.asarray(x)" in str(e.value)


def test_numpy_array_of_an_unsupported_dtype_is_refused():
    with pytest.raises(pypto.ArgumentTypeError, match="'x' is a numpy array torch cannot hold"):
        doubled(np.zeros((6, 16), object), torch.zeros(6, 16))


def test_output_requiring_grad_is_refused_while_grad_mode_is_on():
    out = torch.zeros(6, 16, requires_grad=True)
    with pytest.raises(pypto.ArgumentValueError, match="'out'.*requires grad") as e:
        doubled(rand((6, 16)), out)
    assert "torch.no_grad()" in str(e.value)
    assert not out.detach().any()


def test_output_requiring_grad_is_written_under_no_grad():
    out = torch.zeros(6, 16, requires_grad=True)
    x = rand((6, 16), seed=7)
    with torch.no_grad():
        doubled(x, out)
    assert_matches(out.detach(), x * 2)


def test_output_requiring_grad_is_refused_on_the_cached_fast_path():
    x = rand((6, 16), seed=8)
    check_kernel(doubled, [x, torch.zeros(6, 16)], x * 2, out=1)  # the fast path now knows this version
    out = torch.zeros(6, 16, requires_grad=True)
    with pytest.raises(pypto.ArgumentValueError, match="'out'.*requires grad"):
        doubled(x, out)


def test_input_requiring_grad_is_read():
    x = rand((6, 16), seed=9).requires_grad_()
    check_kernel(doubled, [x, torch.zeros(6, 16)], x.detach() * 2, out=1)


def test_inference_output_is_refused_outside_inference_mode():
    with torch.inference_mode():
        out = torch.zeros(6, 16)
    x = rand((6, 16), seed=10)
    check_kernel(doubled, [x, torch.zeros(6, 16)], x * 2, out=1)
    with pytest.raises(pypto.ArgumentValueError, match="'out'.*inference tensor") as e:
        doubled(x, out)
    assert "out.clone()" in str(e.value)
    with torch.inference_mode():  # torch allows in-place updates of inference tensors there
        check_kernel(doubled, [x, out], x * 2, out=1)


def test_inference_input_is_read_outside_inference_mode():
    with torch.inference_mode():
        x = rand((6, 16), seed=11) + 0
    check_kernel(doubled, [x, torch.zeros(6, 16)], x.clone() * 2, out=1)
