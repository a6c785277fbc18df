"""Strided (non-contiguous) tensor arguments: the call runs on dense copies, written ones go back.

The runtime addresses every GM tensor as a dense row-major array. A transposed, sliced or
expanded torch view (or a numpy array with negative strides) is therefore replaced by a dense
copy for the call: reads see the argument's logical values, and after the run the copies of the
parameters the kernel writes are copied into the caller's tensors. An expanded view (stride 0 in
a dim of size > 1) cannot be written: several of its elements are one element in memory.

Contiguous arguments never reach this module: the call path only tests ``is_contiguous()``.
"""

from __future__ import annotations

from ..errors import ArgumentValueError
from .._lazy import LazyModule

_torch = LazyModule("torch")
_np = LazyModule("numpy")


def dense_numpy(array):
    """A torch tensor over ``array``; one with negative strides (``a[::-1]``), which torch cannot
    view, becomes a copy. Returns (tensor, copied?)."""
    try:
        return _torch.from_numpy(array), False
    except ValueError:
        return _torch.from_numpy(_np.ascontiguousarray(array)), True


def expanded_dim(t) -> int | None:
    """The first dim in which ``t`` repeats one element (stride 0, size > 1), else None."""
    for d, (size, stride) in enumerate(zip(t.shape, t.stride())):
        if stride == 0 and size > 1:
            return d
    return None


def check_written(strided: list, compiled, specs, loc) -> None:
    """Refuse, before anything runs, an expanded view that the kernel writes."""
    written = compiled.lowered.written_params
    params = compiled.program.params
    for i, original in strided:
        if params[i].value.id not in written or not isinstance(original, _torch.Tensor):
            continue
        d = expanded_dim(original)
        if d is not None:
            name = specs[i].param
            raise ArgumentValueError(
                f"tensor argument '{name}' is written by the kernel but is an expanded view",
                expected=f"an output whose elements have their own memory (pass {name}.contiguous() or "
                         f"a new tensor)",
                got=f"shape {list(original.shape)} with strides {list(original.stride())} (dim {d} repeats "
                    f"one element)", param=name, loc=loc)


def write_back(strided: list, compiled, tensors: list) -> None:
    """Copy the dense copies of written parameters into the caller's strided tensors."""
    written = compiled.lowered.written_params
    params = compiled.program.params
    for i, original in strided:
        if params[i].value.id not in written:
            continue
        if isinstance(original, _torch.Tensor):
            original.copy_(tensors[i])
        else:  # a numpy array with negative strides
            _np.copyto(original, tensors[i].numpy())
