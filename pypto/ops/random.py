"""Creation from a formula or a counter-based generator: arange, uniform, normal.

**The generator** (`philox_uniform`): Philox4x32 with 10 rounds, the counter-based generator
upstream names (``alg`` 1, or 3 = auto-select). The 64-bit ``key[0]`` is the Philox key (low word,
high word); Philox block ``b`` (elements ``4b .. 4b+3`` of the flattened output) uses the 128-bit
counter ``[b + counter[0] (64 bit), counter[1] (64 bit)]`` where, as upstream documents, ``counter[0]``
is taken as 0. A 32-bit output ``x`` becomes the float ``1.m - 1`` whose 23 mantissa bits are the
low bits of ``x``: a value in ``[0, 1)``; an fp16 (bf16) output is ``1.m - 1`` with the 10 (7)
low bits of ``x`` as its mantissa, made in that format (not an fp32 value rounded). This reproduces upstream's documented example bit for bit
(key ``[1234]``, counter ``[0, 1]``). ``normal`` is Box-Muller over consecutive pairs
``(u1, u2)`` of that stream, as upstream: ``sqrt(-2 ln max(u1, 1e-7)) * (sin, cos)(2 pi u2)``.
Values are computed in fp32 and cast to ``dtype``. The same key and counter always give the same
numbers, whatever the tiling; a different ``counter[1]`` (it may be a symbolic scalar, e.g. a loop
index) gives an independent stream.

Upstream lists uniform/normal for the Ascend 950 only; the simulator provides them on every
machine model. All three lower as one whole-tensor instance (values depend on the global element
position).
"""

from __future__ import annotations

import math

from .._lazy import LazyModule, torch

from ..dtypes import DT_BF16, DT_FP16, DT_FP32, DT_INT16, DT_INT32
from ..errors import DTypeError, ShapeError
from ..frontend.scalar import SymbolicScalar
from ..ir import expr as E
from .common import dtype_arg, emit, loc
from .registry import register

np = LazyModule("numpy")

ARANGE_DTYPES = (DT_FP32, DT_FP16, DT_BF16, DT_INT16, DT_INT32)
RANDOM_DTYPES = (DT_FP32, DT_FP16, DT_BF16)
_INT32 = (-(2 ** 31), 2 ** 31 - 1)


# ---- arange ----------------------------------------------------------------------------------------

def arange(*args, dtype=None):
    """``arange(end)``, ``arange(start, end)`` or ``arange(start, end, step)``: the 1-D sequence
    ``start + i * step`` below ``end`` (``ceil((end - start) / step)`` elements).

    The dtype is DT_FP32 if any argument is a float, else DT_INT32, as upstream; ``dtype=`` (an
    addition) picks another of DT_FP32, DT_FP16, DT_BF16, DT_INT16, DT_INT32.
    """
    if not 1 <= len(args) <= 3:
        raise ShapeError("pypto.arange takes 1 to 3 numbers: (end), (start, end) or (start, end, step)",
                         got=f"{len(args)} arguments", loc=loc())
    for a in args:
        if isinstance(a, bool) or not isinstance(a, (int, float)):
            raise DTypeError("pypto.arange: start, end and step must be Python ints or floats",
                             got=f"{type(a).__name__} {a!r}"[:60], loc=loc())
    start, end, step = (0, args[0], 1) if len(args) == 1 else (args[0], args[1], args[2] if len(args) == 3 else 1)
    any_float = any(isinstance(a, float) for a in (start, end, step))
    if step == 0 or (isinstance(step, float) and abs(step) <= 1e-8):
        raise ShapeError("pypto.arange: 'step' must not be 0", expected="abs(step) > 1e-8", got=step,
                         param="step", loc=loc())
    n = math.ceil((end - start) / step)
    if n <= 0:
        raise ShapeError("pypto.arange: the range is empty", expected="(end - start) / step > 0",
                         got=f"start={start}, end={end}, step={step}", loc=loc())
    if not any_float and not all(_INT32[0] <= a <= _INT32[1] for a in (start, end, step)):
        raise ShapeError("pypto.arange: integer arguments must fit in int32", got=(start, end, step), loc=loc())
    dt = DT_FP32 if any_float else DT_INT32
    if dtype is not None:
        dt = dtype_arg(dtype, "arange")
        if dt not in ARANGE_DTYPES:
            raise DTypeError("pypto.arange does not produce this dtype",
                             expected=", ".join(d.name for d in ARANGE_DTYPES), got=dt.name, param="dtype",
                             loc=loc())
        if any_float and not dt.is_float:
            raise DTypeError("pypto.arange: float arguments for an integer dtype", expected="a float dtype",
                             got=dt.name, param="dtype", loc=loc())
    return emit("arange", [], [(dt, (n,), (n,))], {"start": start, "step": step, "n": n, "dtype": dt})


@register("arange", kind="create", dtypes=ARANGE_DTYPES)
def _arange(ins, attrs, ev):
    """start + i * step, in float64 (floats) or int64 (ints), cast to the dtype."""
    i = torch.arange(attrs["n"], dtype=torch.int64)
    start, step = attrs["start"], attrs["step"]
    if attrs["dtype"].is_float:
        return (start + step * i.to(torch.float64)).to(attrs["dtype"].torch())
    return (start + step * i).to(attrs["dtype"].torch())


# ---- the generator ---------------------------------------------------------------------------------

_M0, _M1, _W0, _W1 = 0xD2511F53, 0xCD9E8D57, 0x9E3779B9, 0xBB67AE85
_MASK = 0xFFFFFFFF


def philox4x32(counter, key, rounds: int = 10):
    """Philox4x32-``rounds`` of counter words ``counter`` (4 uint64 arrays holding 32-bit values)
    under ``key`` (2 ints): the 4 output words as uint64 arrays."""
    c0, c1, c2, c3 = (np.asarray(c, dtype=np.uint64) for c in counter)
    k0, k1 = np.uint64(key[0] & _MASK), np.uint64(key[1] & _MASK)
    m0, m1, mask, s32 = np.uint64(_M0), np.uint64(_M1), np.uint64(_MASK), np.uint64(32)
    for _ in range(rounds):
        p0, p1 = m0 * c0, m1 * c2  # < 2**64: exact in uint64
        c0, c1, c2, c3 = ((p1 >> s32) ^ c1 ^ k0) & mask, p1 & mask, ((p0 >> s32) ^ c3 ^ k1) & mask, p0 & mask
        k0, k1 = (k0 + np.uint64(_W0)) & mask, (k1 + np.uint64(_W1)) & mask
    return c0, c1, c2, c3


def philox_words(n: int, key: int, counter1: int):
    """The first ``n`` 32-bit Philox outputs (uint64 numpy array) of ``key`` and ``counter1``."""
    blocks = -(-n // 4)
    b = np.arange(blocks, dtype=np.uint64)
    hi = np.uint64((counter1 >> 32) & _MASK)
    ctr = (b & np.uint64(_MASK), b >> np.uint64(32), np.full(blocks, counter1 & _MASK, dtype=np.uint64),
           np.full(blocks, hi, dtype=np.uint64))
    return np.stack(philox4x32(ctr, (key & _MASK, (key >> 32) & _MASK)), axis=1).reshape(-1)[:n]


def philox_uniform(n: int, key: int, counter1: int):
    """``n`` fp32 values in [0, 1) (a numpy array): see the module docstring."""
    words = philox_words(n, key, counter1)
    bits = ((words & np.uint64(0x7FFFFF)) | np.uint64(0x3F800000)).astype(np.uint32)
    return bits.view(np.float32) - np.float32(1.0)


def philox_uniform_half(n: int, key: int, counter1: int, dtype):
    """``n`` values in [0, 1) of a 16-bit float ``dtype`` (a torch tensor), each made directly from
    the low bits of one Philox output as upstream's generator does: ``1.m - 1`` in that format with
    its 10 (fp16) or 7 (bf16) mantissa bits, not an fp32 value rounded."""
    words = philox_words(n, key, counter1)
    if dtype is DT_FP16:
        bits = ((words & np.uint64(0x3FF)) | np.uint64(0x3C00)).astype(np.uint16)
        return torch.from_numpy(bits.view(np.float16) - np.float16(1.0))
    bits = (((words & np.uint64(0x7F)) | np.uint64(0x3F80)) << np.uint64(16)).astype(np.uint32)
    return torch.from_numpy(bits.view(np.float32) - np.float32(1.0)).to(torch.bfloat16)  # exact in bf16


def box_muller(u):
    """Normal values from consecutive uniform pairs (fp32 numpy; ``len(u)`` even)."""
    u1 = np.maximum(u[0::2], np.float32(1e-7))
    v1 = u[1::2] * np.float32(2.0 * math.pi)
    v2 = np.sqrt(np.log(u1) * np.float32(-2.0))
    out = np.empty_like(u)
    out[0::2] = np.sin(v1) * v2
    out[1::2] = np.cos(v1) * v2
    return out


# ---- uniform / normal ------------------------------------------------------------------------------

def _random_args(op, shape, key, counter, alg, dtype):
    if not isinstance(shape, (list, tuple)) or not 1 <= len(shape) <= 4 or \
            any(isinstance(s, bool) or not isinstance(s, int) or s <= 0 for s in shape):
        raise ShapeError(f"pypto.{op}: 'shape' must be 1 to 4 positive ints", got=repr(shape), param="shape",
                         loc=loc())
    key = list(key) if isinstance(key, (list, tuple)) else [key]
    if len(key) != 1 or isinstance(key[0], bool) or not isinstance(key[0], int) or not 0 <= key[0] < 2 ** 64:
        raise ShapeError(f"pypto.{op}: 'key' must be one uint64 int", expected="[seed]", got=repr(key),
                         param="key", loc=loc())
    if not isinstance(counter, (list, tuple)) or len(counter) != 2:
        raise ShapeError(f"pypto.{op}: 'counter' must hold 2 entries", expected="[counter0, counter1]",
                         got=repr(counter), param="counter", loc=loc())
    c1 = counter[1]
    if isinstance(c1, SymbolicScalar):
        c1 = E.simplify_dim(c1.expr)
    elif isinstance(c1, bool) or not isinstance(c1, int) or not 0 <= c1 < 2 ** 64:
        raise ShapeError(f"pypto.{op}: 'counter[1]' must be a uint64 int or a symbolic scalar", got=repr(c1),
                         param="counter", loc=loc())
    alg = list(alg) if isinstance(alg, (list, tuple)) else [alg]
    if alg not in ([1], [3]):
        raise ShapeError(f"pypto.{op}: 'alg' must be [1] (Philox) or [3] (auto: Philox)", got=repr(alg),
                         param="alg", loc=loc())
    dt = dtype_arg(dtype, op)
    if dt not in RANDOM_DTYPES:
        raise DTypeError(f"pypto.{op} does not produce this dtype",
                         expected=", ".join(d.name for d in RANDOM_DTYPES), got=dt.name, param="dtype", loc=loc())
    shp = tuple(shape)
    return emit(op, [], [(dt, shp, shp)], {"shape": shp, "key": key[0], "counter": c1, "dtype": dt})


def uniform(shape, key, counter, alg=(1,), dtype=DT_FP32):
    """Uniform random values in [0, 1) from Philox (``key=[seed]``, ``counter=[c0, c1]``; ``c0`` is
    ignored, as upstream). Deterministic: see the module docstring for the exact generator."""
    return _random_args("uniform", shape, key, counter, alg, dtype)


def normal(shape, key, counter, alg=(1,), dtype=DT_FP32):
    """Standard normal values: Box-Muller over the `uniform` stream of the same key and counter."""
    return _random_args("normal", shape, key, counter, alg, dtype)


@register("uniform", kind="create", dtypes=RANDOM_DTYPES)
def _uniform(ins, attrs, ev):
    """Philox4x32-10 uniform floats, reshaped and cast."""
    n = math.prod(attrs["shape"])
    if attrs["dtype"] in (DT_FP16, DT_BF16):
        return philox_uniform_half(n, attrs["key"], int(ev(attrs["counter"])), attrs["dtype"]).reshape(attrs["shape"])
    u = philox_uniform(n, attrs["key"], int(ev(attrs["counter"])))
    return torch.from_numpy(u).reshape(attrs["shape"]).to(attrs["dtype"].torch())


@register("normal", kind="create", dtypes=RANDOM_DTYPES)
def _normal(ins, attrs, ev):
    """Box-Muller over an even-length Philox stream, cut to size, reshaped and cast."""
    n = math.prod(attrs["shape"])
    u = philox_uniform(n + n % 2, attrs["key"], int(ev(attrs["counter"])))
    return torch.from_numpy(box_muller(u)[:n].copy()).reshape(attrs["shape"]).to(attrs["dtype"].torch())
