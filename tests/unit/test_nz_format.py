"""NZ-format arguments: the shape a kernel sees (upstream's from_torch aligns it to NZ blocks)."""

import torch

from pypto.frontend.nz_format import nz_aligned_shape, nz_padded


class _Nz(torch.Tensor):
    pass


def nz(t):
    out = t.as_subclass(_Nz)
    out._pypto_npu_format = 29
    return out


def test_aligned_shape_rounds_rows_to_16_and_the_last_dim_to_32_bytes():
    assert nz_aligned_shape((17, 32), 4) == (32, 32)
    assert nz_aligned_shape((383, 192), 1) == (384, 192)
    assert nz_aligned_shape((129, 192), 1) == (144, 192)
    assert nz_aligned_shape((16, 8), 2) == (16, 16)  # fp16: 16 elements make 32 bytes
    assert nz_aligned_shape((3, 5, 7), 4) == (3, 16, 8)  # leading dims stay
    assert nz_aligned_shape((7,), 4) == (7,)  # rank 1 has no fractal layout


def test_padded_copy_holds_the_values_and_zeros():
    t = torch.arange(17 * 5, dtype=torch.float32).reshape(17, 5)
    p = nz_padded(nz(t), nz_aligned_shape(t.shape, t.element_size()))
    assert type(p) is torch.Tensor and p.shape == (32, 8)
    assert torch.equal(p[:17, :5], t) and p[17:].abs().sum() == 0 and p[:, 5:].abs().sum() == 0
    assert nz_aligned_shape((16, 8), 4) == (16, 8)  # aligned: the call runs on the tensor itself
