"""Layout operators: unsqueeze, permute, pad, tril/triu (and in-place tril_/triu_), interleave and
deinterleave.

* ``unsqueeze`` is a reshape (an alias of the input, like upstream's shared-storage result).
* ``permute`` tiles like transpose: each output tile reads the matching input window.
* ``pad`` is a ``full`` of the padded shape with the input assembled into it, so both halves tile.
  Upstream (A2/A3) pads only on the right / bottom of the last two dims with ``mode="constant"``;
  here any non-negative constant padding of any dim is accepted (a superset), other modes are not.
* ``tril`` / ``triu`` depend on an element's global row and column, so they lower as one
  whole-tensor instance (`Expander.whole`).
* ``interleave`` / ``deinterleave`` (upstream: Ascend 950 only; simulated here for every machine)
  tile over the leading dims with the last dim whole.
"""

from __future__ import annotations

from .._lazy import torch

from ..dtypes import (DT_BF16, DT_FP16, DT_FP32, DT_INT8, DT_INT16, DT_INT32, DT_UINT8, SUPPORTED_DTYPES)
from ..errors import DTypeError, ShapeError
from ..frontend.scalar import SymbolicScalar
from ..frontend.tensor import Tensor
from ..ir import expr as E
from .common import check_dtype, emit, loc, norm_dim, same_size, tensor_arg
from .registry import register

PAD_DTYPES = (DT_FP32, DT_FP16, DT_BF16, DT_INT8, DT_INT16, DT_INT32, DT_UINT8)
TRI_DTYPES = (DT_FP32, DT_FP16, DT_BF16, DT_INT8, DT_INT16, DT_INT32)
INTERLEAVE_DTYPES = (DT_INT8, DT_UINT8, DT_INT16, DT_INT32, DT_FP16, DT_FP32, DT_BF16)


# ---- unsqueeze -------------------------------------------------------------------------------------

def unsqueeze(input, dim):
    """``input`` with a new size-1 dim at ``dim`` (``-input.dim - 1 <= dim <= input.dim``); an alias."""
    from .shape import unsqueeze_dims

    tensor_arg(input, "unsqueeze", "input")
    rank = input.dim
    d = norm_dim(dim, rank + 1, "unsqueeze")
    sizes = list(input._value.shape)
    sizes.insert(d, 1)
    return unsqueeze_dims(input, (d,), sizes)


# ---- permute ---------------------------------------------------------------------------------------

def permute(input, dims):
    """Reorder the dims: result dim ``j`` is ``input`` dim ``dims[j]`` (a copy). The identity
    permutation (and any 1-D input) returns ``input`` itself, as upstream."""
    tensor_arg(input, "permute", "input")
    v = input._value
    if not isinstance(dims, (list, tuple)) or len(dims) != v.rank:
        raise ShapeError("pypto.permute: 'dims' must list every dim once", expected=f"{v.rank} dims",
                         got=repr(dims), param="dims", loc=loc())
    perm = tuple(norm_dim(d, v.rank, "permute", "dims") for d in dims)
    if sorted(perm) != list(range(v.rank)):
        raise ShapeError("pypto.permute: 'dims' is not a permutation", expected=f"each of 0..{v.rank - 1} once",
                         got=list(dims), param="dims", loc=loc())
    if perm == tuple(range(v.rank)):
        return input
    shape = tuple(v.shape[p] for p in perm)
    valid = tuple(v.valid_shape[p] for p in perm)
    return emit("permute", [input], [(input.dtype, shape, valid)], {"dims": perm})


@register("permute", kind="vector", dtypes=tuple(SUPPORTED_DTYPES))
def _permute(ins, attrs, ev):
    """torch.permute (a copy); leading batch dims stay in front."""
    x = ins[0]
    dims = attrs["dims"]
    lead = x.dim() - len(dims)
    return x.permute(*range(lead), *dims).contiguous()


# ---- pad -------------------------------------------------------------------------------------------

def pad(input, pad, mode="constant", value=0):
    """Pad with the constant ``value``; ``pad`` lists (before, after) pairs from the last dim
    backwards: ``(left, right, top, bottom, ...)``, as torch.nn.functional.pad.

    The padding follows the valid part of ``input``: its valid shape grows by the pad amounts.
    """
    from .creation import full
    from .shape import assemble

    tensor_arg(input, "pad", "input")
    check_dtype("pad", input, "input", PAD_DTYPES)
    v = input._value
    if mode != "constant":
        raise ShapeError("pypto.pad supports mode='constant' only", expected="'constant'", got=repr(mode),
                         param="mode", loc=loc())
    if not isinstance(pad, (list, tuple)) or any(isinstance(p, bool) or not isinstance(p, int) for p in pad):
        raise ShapeError("pypto.pad: 'pad' must be a list of ints", got=repr(pad), param="pad", loc=loc())
    if len(pad) % 2 or len(pad) // 2 > v.rank or not pad:
        raise ShapeError("pypto.pad: 'pad' needs (before, after) pairs for at most every dim",
                         expected=f"an even length of 2..{2 * v.rank}", got=len(pad), param="pad", loc=loc())
    if any(p < 0 for p in pad):
        raise ShapeError("pypto.pad: negative padding is not supported", got=list(pad), param="pad", loc=loc())
    if isinstance(value, Tensor) or isinstance(value, bool) or not isinstance(value, (int, float)):
        raise DTypeError("pypto.pad: 'value' must be an int or float", got=type(value).__name__, param="value",
                         loc=loc())
    if isinstance(value, float) and not input.dtype.is_float:
        raise DTypeError("pypto.pad: a float 'value' for an integer tensor", expected=f"an int for {input.dtype.name}",
                         got=repr(value), param="value", loc=loc())
    before, after = [0] * v.rank, [0] * v.rank
    for k in range(len(pad) // 2):
        before[v.rank - 1 - k], after[v.rank - 1 - k] = pad[2 * k], pad[2 * k + 1]
    shape = [E.simplify_dim(E.add(s, b + a)) for s, b, a in zip(v.shape, before, after)]
    valid = [E.simplify_dim(E.add(s, b + a)) for s, b, a in zip(v.valid_shape, before, after)]
    out = full(shape, value, input.dtype, valid_shape=valid)
    return assemble(input, before, out)


# ---- tril / triu -----------------------------------------------------------------------------------

def _diagonal(diagonal, op):
    if isinstance(diagonal, SymbolicScalar):
        return E.simplify_dim(diagonal.expr)
    if isinstance(diagonal, bool) or not isinstance(diagonal, int):
        raise ShapeError(f"pypto.{op}: 'diagonal' must be an int or a symbolic scalar", got=repr(diagonal),
                         param="diagonal", loc=loc())
    return diagonal


def _tri(op, input, diagonal):
    tensor_arg(input, op, "input")
    check_dtype(op, input, "input")
    v = input._value
    if v.rank < 2:
        raise ShapeError(f"pypto.{op} needs a tensor of rank 2 or more", expected="rank >= 2",
                         got=f"rank {v.rank}", param="input", loc=loc())
    return emit(op, [input], [(input.dtype, v.shape, v.valid_shape)], {"diagonal": _diagonal(diagonal, op)})


def tril(input, diagonal=0):
    """The lower triangle of the last two dims (``col - row <= diagonal`` kept, the rest 0)."""
    return _tri("tril", input, diagonal)


def triu(input, diagonal=0):
    """The upper triangle of the last two dims (``col - row >= diagonal`` kept, the rest 0)."""
    return _tri("triu", input, diagonal)


def tril_(input, diagonal=0):
    """In-place `tril`: written over ``input``, which is returned."""
    from .shape import assemble

    return assemble(_tri("tril", input, diagonal), [0] * input.dim, input)


def triu_(input, diagonal=0):
    """In-place `triu`: written over ``input``, which is returned."""
    from .shape import assemble

    return assemble(_tri("triu", input, diagonal), [0] * input.dim, input)


@register("tril", kind="vector", dtypes=TRI_DTYPES)
def _tril(ins, attrs, ev):
    """torch.tril of the whole (valid) tensor."""
    return torch.tril(ins[0], int(ev(attrs["diagonal"])))


@register("triu", kind="vector", dtypes=TRI_DTYPES)
def _triu(ins, attrs, ev):
    """torch.triu of the whole (valid) tensor."""
    return torch.triu(ins[0], int(ev(attrs["diagonal"])))


# ---- interleave / deinterleave ---------------------------------------------------------------------

def _even_last(op, t, param):
    last = t._value.shape[-1]
    if isinstance(last, int) and last % 2:
        raise ShapeError(f"pypto.{op}: the last dim of '{param}' must be even", expected="an even size",
                         got=last, param=param, loc=loc())


def _pair(op, input, other):
    tensor_arg(input, op, "input")
    check_dtype(op, input, "input")
    tensor_arg(other, op, "other")
    if other.dtype is not input.dtype:
        raise DTypeError(f"pypto.{op}: 'input' and 'other' have different dtypes", expected=input.dtype.name,
                         got=other.dtype.name, param="other", loc=loc())
    a, b = input._value, other._value
    if a.rank != b.rank or any(not same_size(x, y, f"pypto.{op}: 'input' and 'other'", loc())
                                for x, y in zip(a.shape, b.shape)):
        raise ShapeError(f"pypto.{op}: 'input' and 'other' must have the same shape",
                         expected=E.render_dims(a.shape), got=E.render_dims(b.shape), param="other", loc=loc())
    _even_last(op, input, "input")


def interleave(input, other):
    """Interleave two tensors along the last dim (``input[k]``, ``other[k]`` alternating) and split the
    stream at its midpoint: returns ``(first half, second half)``, each shaped like ``input``."""
    _pair("interleave", input, other)
    v = input._value
    spec = (input.dtype, v.shape, v.valid_shape)
    return emit("interleave", [input, other], [spec, spec])


def deinterleave(input, other=None):
    """The inverse of `interleave`: ``(even elements, odd elements)`` of the stream along the last dim.

    With ``other`` the stream is ``concat([input, other], -1)`` and the results are shaped like
    ``input``; alone, ``input`` is the whole stream and the results have half its last dim.
    """
    if other is not None:
        _pair("deinterleave", input, other)
        v = input._value
        spec = (input.dtype, v.shape, v.valid_shape)
        return emit("deinterleave", [input, other], [spec, spec])
    tensor_arg(input, "deinterleave", "input")
    check_dtype("deinterleave", input, "input")
    _even_last("deinterleave", input, "input")
    v = input._value
    half = lambda s: E.simplify_dim(E.floordiv(s, 2))  # noqa: E731
    spec = (input.dtype, (*v.shape[:-1], half(v.shape[-1])), (*v.valid_shape[:-1], half(v.valid_shape[-1])))
    return emit("deinterleave", [input], [spec, spec])


@register("interleave", kind="vector", dtypes=INTERLEAVE_DTYPES)
def _interleave(ins, attrs, ev):
    """Stack pairs along a new last dim, flatten, split in halves."""
    a, b = ins
    n = min(a.shape[-1], b.shape[-1])
    stream = torch.stack([a[..., :n], b[..., :n]], -1).flatten(-2)
    return stream[..., :n].contiguous(), stream[..., n:].contiguous()


@register("deinterleave", kind="vector", dtypes=INTERLEAVE_DTYPES)
def _deinterleave(ins, attrs, ev):
    """Even and odd elements of the (concatenated) stream."""
    stream = torch.cat(ins, -1) if len(ins) == 2 else ins[0]
    return stream[..., 0::2].contiguous(), stream[..., 1::2].contiguous()
