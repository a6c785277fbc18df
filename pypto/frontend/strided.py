"""Strided (non-contiguous) tensor arguments: the call runs on dense copies, written ones go back.

The runtime addresses every GM tensor as a dense row-major array. A transposed, sliced or
expanded torch view (or a numpy array with negative strides) is therefore replaced by a dense
copy for the call: reads see the argument's logical values, and after the run the copies of the
parameters the kernel writes are copied into the caller's tensors. An expanded view (stride 0 in
a dim of size > 1) cannot be written: several of its elements are one element in memory.

Contiguous arguments never reach this module: the call path only tests ``is_contiguous()``.
"""

from __future__ import annotations

import warnings

from ..errors import ArgumentTypeError, ArgumentValueError
from .._lazy import LazyModule

_torch = LazyModule("torch")
_np = LazyModule("numpy")


def dense_numpy(array, param: str, loc):
    """A torch tensor over ``array``. One torch cannot view (negative strides as in ``a[::-1]``,
    a non-native byte order) becomes a native, dense copy. Returns (tensor, copied?)."""
    if not isinstance(array, _np.ndarray):  # np.float32(1.0): a scalar has no memory to write
        raise ArgumentTypeError(f"tensor argument '{param}' is a numpy scalar ({type(array).__name__})",
                                expected="a CPU torch.Tensor or numpy array",
                                got=f"{type(array).__name__} {array!r}", param=param, loc=loc,
                                hint=f"pass np.asarray({param}) for a rank-0 array, or a torch tensor")
    try:
        if array.flags.writeable:
            return _torch.from_numpy(array), False
        with warnings.catch_warnings():  # read-only: refused later if the kernel writes it (outputs.py)
            warnings.simplefilter("ignore", UserWarning)
            return _torch.from_numpy(array), False
    except ValueError:
        pass
    except TypeError as e:
        raise _unsupported(array, param, loc, e) from None
    copy = _np.ascontiguousarray(array)
    if not copy.dtype.isnative:
        copy = copy.astype(copy.dtype.newbyteorder("="))
    try:
        return _torch.from_numpy(copy), True
    except (TypeError, ValueError) as e:
        raise _unsupported(array, param, loc, e) from None


def _unsupported(array, param, loc, cause) -> ArgumentTypeError:
    return ArgumentTypeError(f"tensor argument '{param}' is a numpy array torch cannot hold",
                             expected="a numpy array of a bool, int or float dtype",
                             got=f"dtype {array.dtype} ({cause})", param=param, loc=loc)


def expanded_dim(t) -> int | None:
    """The first dim in which ``t`` (a tensor or numpy array) repeats one element (stride 0,
    size > 1), else None."""
    strides = _strides(t)
    for d, (size, stride) in enumerate(zip(t.shape, strides)):
        if stride == 0 and size > 1:
            return d
    return None


def check_written(strided: list, compiled, specs, loc) -> None:
    """Refuse, before anything runs, an expanded view that the kernel writes."""
    written = compiled.lowered.written_params
    params = compiled.program.params
    for i, original in strided:
        if params[i].value.id not in written:
            continue
        d = expanded_dim(original)
        if d is not None:
            name = specs[i].param
            raise ArgumentValueError(
                f"tensor argument '{name}' is written by the kernel but is an expanded view",
                expected=f"an output whose elements have their own memory (pass {name}.contiguous() or "
                         f"a new tensor)",
                got=f"shape {list(original.shape)} with strides {list(_strides(original))} (dim {d} repeats "
                    f"one element)", param=name, loc=loc)


def _strides(t) -> tuple:
    """Strides in elements, of a tensor or a numpy array."""
    return tuple(t.stride()) if isinstance(t, _torch.Tensor) else tuple(s // t.itemsize for s in t.strides)


def write_back(strided: list, compiled, tensors: list) -> None:
    """Copy the dense copies of written parameters into the caller's strided tensors."""
    written = compiled.lowered.written_params
    params = compiled.program.params
    for i, original in strided:
        if params[i].value.id not in written:
            continue
        copy = tensors[i]
        if tuple(copy.shape) != tuple(original.shape):  # an NZ argument's aligned copy (nz_format.py)
            copy = copy[tuple(slice(0, s) for s in original.shape)]
        if isinstance(original, _torch.Tensor):
            original.copy_(copy)
        else:  # a numpy array torch could not view, or a strided one
            _np.copyto(original, copy.numpy())
