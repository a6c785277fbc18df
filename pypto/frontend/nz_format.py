"""Tensor arguments in the NZ (FRACTAL_NZ) storage format: the call runs on the NZ-aligned shape.

On the NPU a tensor cast to NZ (``torch_npu.npu_format_cast(x, 29)``) is stored in 16-row by
32-byte fractal blocks, so its storage covers the shape rounded up to those blocks, the padding
being zeros. Upstream's kernels rely on it: a kernel may loop over an output of the aligned shape
and read the padding rows of an NZ operand as zeros (``test_scaled_mm_mxfp8``'s bias case reads
row 383 of a 383-row operand). This build keeps tensors dense, so an NZ argument whose shape is
not aligned runs on a zero-padded copy of the aligned shape; a written one is copied back (its
logical region only) after the run, like a strided argument (strided.py).

Only tensors that say they are NZ (the emulated ``torch_npu``'s formatted tensors) reach this
module: the call path tests ``t.__class__ is not torch.Tensor`` first.
"""

from __future__ import annotations

from .._lazy import LazyModule

_torch = LazyModule("torch")

FRACTAL_NZ = 29  # ACL's format id, as torch_npu.Format.FRACTAL_NZ
NZ_ROWS = 16  # rows of one fractal block
NZ_BYTES = 32  # bytes of one fractal block's row


def nz_aligned_shape(shape, element_size: int) -> tuple:
    """``shape`` with its last two dims rounded up to the NZ fractal block (16 rows, 32 bytes)."""
    if len(shape) < 2:
        return tuple(shape)
    cols = max(1, NZ_BYTES // element_size)
    *lead, rows, last = shape
    return (*lead, -(-rows // NZ_ROWS) * NZ_ROWS, -(-last // cols) * cols)


def is_nz(t) -> bool:
    """Whether ``t`` carries the NZ storage format (set by the emulated ``npu_format_cast``)."""
    return getattr(t, "_pypto_npu_format", None) == FRACTAL_NZ


def nz_padded(t, shape):
    """A zero-padded dense copy of NZ tensor ``t`` in ``shape`` (its ``nz_aligned_shape``)."""
    plain = t.as_subclass(_torch.Tensor)
    out = _torch.zeros(shape, dtype=plain.dtype)
    out[tuple(slice(0, s) for s in plain.shape)] = plain
    return out
