"""The traced tensor: what a kernel body manipulates at compile time.

A `Tensor` is a handle on a `Value` of the Tensor Graph. Its operators and methods record ops;
slicing records views and slice assignment records assembles. Outside a kernel,
``pypto.Tensor(shape, dtype)`` and ``pypto.Tensor[...]`` build signature annotations instead.
"""

from __future__ import annotations

import os

from ..errors import ArgumentTypeError, KernelSyntaxError, ShapeError, user_loc
from ..ir import expr as E
from ..ir.graph import Value
from .scalar import SymbolicScalar
from .signature import TensorAnnotation


def _ops():
    from .. import ops

    return ops


def _loc_outside_torch():
    """The innermost frame in neither pypto nor torch: the user's line that called torch."""
    import torch

    return user_loc(3, (os.path.dirname(torch.__file__),))


class Tensor:
    """A tensor inside a ``@pypto.jit`` kernel or a ``pypto.function`` (also ``pypto.tensor``).

    ``pypto.Tensor(shape, dtype, name)`` outside a kernel declares a tensor (see `host_tensor`):
    a signature annotation, or an argument of ``pypto.function``. Inside a kernel it declares a
    local tensor (zero-filled here; upstream leaves it uninitialised); ``pypto.tensor()`` with no
    arguments there is an empty handle that ``.move(x)`` makes refer to ``x``.
    """

    __slots__ = ("_value",)

    def __new__(cls, shape=None, dtype=None, name: str = "", format=None, **_ignored):
        from .builder import current

        if current() is None:
            from .host_tensor import declare

            return declare(shape, dtype, name, format)
        if shape is None and dtype is None:
            return object.__new__(cls)  # the empty handle: no value until .move()
        return _ops().tensor(shape, dtype, name)

    def __getattr__(self, attr):
        if attr == "_value":  # only reached when the slot is unset: the empty pypto.tensor()
            raise KernelSyntaxError("this tensor was made by pypto.tensor() without a shape and is still empty",
                                    expected="t.move(x) before using t", got="a use of the empty tensor",
                                    loc=user_loc(2))
        raise AttributeError(f"'{type(self).__name__}' object has no attribute '{attr}'")

    def __class_getitem__(cls, item):
        return TensorAnnotation.from_brackets(item)

    @classmethod
    def _wrap(cls, value: Value) -> "Tensor":
        obj = object.__new__(cls)
        obj._value = value
        return obj

    # ---- properties ----------------------------------------------------------------------------
    @property
    def shape(self) -> list:
        """Ints for static dims, SymbolicScalars for dynamic ones."""
        return [SymbolicScalar.wrap(d) if isinstance(d, E.Expr) else d for d in self._value.shape]

    @property
    def valid_shape(self) -> list:
        """One SymbolicScalar per dim (constant ones too, as upstream: ``.concrete()`` works)."""
        return [SymbolicScalar(d) for d in self._value.valid_shape]

    @property
    def dtype(self):
        return self._value.dtype

    @property
    def dim(self) -> int:
        return self._value.rank

    ndim = dim

    @property
    def name(self) -> str:
        return self._value.name

    def __repr__(self) -> str:
        v = self._value
        return f"Tensor(%{v.name}: {v.dtype.short}{E.render_dims(v.shape)})"

    def __len__(self) -> int:
        d = self._value.shape[0] if self._value.shape else 0
        if isinstance(d, E.Expr):
            raise KernelSyntaxError("len() of a tensor with a dynamic first dim", got=E.render(d),
                                    hint="use x.shape[0]", loc=user_loc(2))
        return d

    def __iter__(self):
        raise KernelSyntaxError("tensors are not iterable", hint="use pypto.loop(...) and slicing",
                                loc=user_loc(2))

    def __bool__(self):
        raise KernelSyntaxError("a tensor has no truth value at compile time",
                                expected="a Python bool or a symbolic scalar condition",
                                got=f"tensor %{self._value.name} in a condition",
                                hint="compare shapes or symbolic scalars, or use pypto.where",
                                loc=user_loc(2))

    __hash__ = object.__hash__

    @classmethod
    def __torch_function__(cls, func, types, args=(), kwargs=None):
        """A torch function given a kernel tensor: say which pypto op to call instead (torch
        itself would say "must be Tensor, not Tensor")."""
        name = getattr(func, "__name__", repr(func))
        if name.startswith("__"):  # torch_tensor + x: NotImplemented lets Python try x.__radd__
            return NotImplemented
        import pypto
        import torch

        where = "torch" if getattr(torch, name, None) is func else \
            getattr(func, "__module__", None) or "torch"
        equivalent = getattr(pypto, name, None)
        hint = (f"use pypto.{name}(...): kernel tensors are traced, and only pypto ops act on them"
                if callable(equivalent) else
                "only pypto ops act on kernel tensors (see the op catalogue in pypto.ops)")
        raise ArgumentTypeError(f"{where}.{name} was called on a pypto kernel tensor",
                                expected=f"pypto.{name}" if callable(equivalent) else "a pypto op",
                                got=f"{where}.{name}", hint=hint, loc=_loc_outside_torch())

    # ---- arithmetic ----------------------------------------------------------------------------
    def __add__(self, o): return _ops().add(self, o)
    def __radd__(self, o): return _ops().add(o, self)
    def __sub__(self, o): return _ops().sub(self, o)
    def __rsub__(self, o): return _ops().sub(o, self)
    def __mul__(self, o): return _ops().mul(self, o)
    def __rmul__(self, o): return _ops().mul(o, self)
    def __truediv__(self, o): return _ops().div(self, o)
    def __rtruediv__(self, o): return _ops().div(o, self)
    def __floordiv__(self, o): return _ops().floor_div(self, o)
    def __mod__(self, o): return _ops().remainder(self, o)
    def __rmod__(self, o): return _ops().remainder(o, self)
    def __pow__(self, o): return _ops().pow(self, o)
    def __neg__(self): return _ops().neg(self)
    def __pos__(self): return self
    def __matmul__(self, o): return _ops().matmul(self, o)
    def __eq__(self, o): return _ops().eq(self, o)  # type: ignore[override]
    def __ne__(self, o): return _ops().ne(self, o)  # type: ignore[override]
    def __lt__(self, o): return _ops().lt(self, o)
    def __le__(self, o): return _ops().le(self, o)
    def __gt__(self, o): return _ops().gt(self, o)
    def __ge__(self, o): return _ops().ge(self, o)

    # ---- methods mirroring the op functions ----------------------------------------------------
    def add(self, o): return _ops().add(self, o)
    def sub(self, o): return _ops().sub(self, o)
    def mul(self, o): return _ops().mul(self, o)
    def div(self, o, *a, **k): return _ops().div(self, o, *a, **k)
    def maximum(self, o): return _ops().maximum(self, o)
    def minimum(self, o): return _ops().minimum(self, o)
    def exp(self, *a, **k): return _ops().exp(self, *a, **k)
    def log(self, *a, **k): return _ops().log(self, *a, **k)
    def sqrt(self, *a, **k): return _ops().sqrt(self, *a, **k)
    def rsqrt(self, *a, **k): return _ops().rsqrt(self, *a, **k)
    def abs(self): return _ops().abs(self)
    def neg(self): return _ops().neg(self)
    def reciprocal(self, *a, **k): return _ops().reciprocal(self, *a, **k)
    def sigmoid(self): return _ops().sigmoid(self)
    def relu(self): return _ops().relu(self)
    def tanh(self): return _ops().tanh(self)
    def sin(self): return _ops().sin(self)
    def cos(self): return _ops().cos(self)
    def sinh(self): return _ops().sinh(self)
    def cosh(self): return _ops().cosh(self)
    def asinh(self): return _ops().asinh(self)
    def acosh(self): return _ops().acosh(self)
    def exp2(self): return _ops().exp2(self)
    def expm1(self): return _ops().expm1(self)
    def erfc(self): return _ops().erfc(self)
    def sign(self): return _ops().sign(self)
    def signbit(self): return _ops().signbit(self)
    def log1p(self): return _ops().log1p(self)
    def log10(self, *a): return _ops().log10(self, *a)
    def log2(self, *a): return _ops().log2(self, *a)
    def logical_not(self): return _ops().logical_not(self)
    def round(self, decimals=0): return _ops().round(self, decimals)
    def ceil(self): return _ops().ceil(self)
    def floor(self): return _ops().floor(self)
    def trunc(self): return _ops().trunc(self)
    def fmod(self, o, *a): return _ops().fmod(self, o, *a)
    def remainder(self, o, *a): return _ops().remainder(self, o, *a)
    def hypot(self, o): return _ops().hypot(self, o)
    def gcd(self, o): return _ops().gcd(self, o)
    def axpy_(self, x, alpha=1.0): return _ops().axpy_(self, x, alpha)
    def clip(self, min=None, max=None): return _ops().clip(self, min, max)
    def where(self, cond, other): return _ops().where(cond, self, other)
    def cast(self, dtype, *a, **k): return _ops().cast(self, dtype, *a, **k)
    def sum(self, dim=-1, keepdim=False): return _ops().sum(self, dim, keepdim)
    def amax(self, dim=-1, keepdim=False): return _ops().amax(self, dim, keepdim)
    def amin(self, dim=-1, keepdim=False): return _ops().amin(self, dim, keepdim)
    def softmax(self, dim=-1): return _ops().softmax(self, dim)
    def matmul(self, o, *a, **k): return _ops().matmul(self, o, *a, **k)
    def transpose(self, dim0=-2, dim1=-1): return _ops().transpose(self, dim0, dim1)
    def reshape(self, shape, **k): return _ops().reshape(self, shape, **k)
    def view(self, shape=None, offsets=None, **k): return _ops().view(self, shape, offsets, **k)
    def clone(self): return _ops().clone(self)
    def expand_clone(self, shape, **k): return _ops().expand_clone(self, shape, **k)
    def topk(self, k, dim=-1, largest=True): return _ops().topk(self, k, dim, largest)
    # activation.py / scan.py (upstream's Tensor methods; no prod/argsort methods upstream)
    def lrelu(self, negative_slope=0.01): return _ops().lrelu(self, negative_slope)
    def prelu(self, weight): return _ops().prelu(self, weight)
    def argmax(self, dim=-1, keepdim=False): return _ops().argmax(self, dim, keepdim)
    def argmin(self, dim=-1, keepdim=False): return _ops().argmin(self, dim, keepdim)
    def var(self, dim=None, *, correction=1, keepdim=False): return _ops().var(self, dim, correction, keepdim)
    def cumsum(self, dim): return _ops().cumsum(self, dim)
    def cumprod(self, dim): return _ops().cumprod(self, dim)
    def assemble(self, input, offsets):
        """Write ``input`` into this tensor at ``offsets`` (upstream's ``dst.assemble(src, offsets)``)."""
        _ops().assemble(input, offsets, self)
    # issue 9: upstream's remaining op methods
    def greater(self, o): return _ops().greater(self, o)
    def copysign(self, o): return _ops().copysign(self, o)
    def fillpad(self, mode="constant", value=0): return _ops().fillpad(self, mode, value)
    def gathermask(self, pattern_mode): return _ops().gathermask(self, pattern_mode)

    def fill_(self, value) -> "Tensor":
        """Make this tensor hold ``value`` everywhere (``move`` of a ``pypto.full``)."""
        return self.move(_ops().full(list(self._value.shape), value, self.dtype))

    def _holds_nothing(self) -> bool:
        """True for the empty ``pypto.tensor()`` handle (``HostTensor`` adds: declared, not bound)."""
        return _is_empty_handle(self)

    def is_empty(self) -> bool:
        """True for the empty ``pypto.tensor()`` handle (before a ``move`` gives it a value)."""
        return _is_empty_handle(self)

    # ---- cache policies (hints for the hardware's L2; recorded, no effect on numbers) -------------
    def set_cache_policy(self, policy, value) -> None:
        """Enable (``value=True``) or disable a ``pypto.CachePolicy`` on this tensor's memory (its
        views share it). PREFETCH and NONE_CACHEABLE exclude each other: the first one set stays."""
        self._cache_policies().set(policy, value)

    def get_cache_policy(self, policy) -> bool:
        """Whether ``policy`` (a ``pypto.CachePolicy``) is enabled on this tensor's memory."""
        return self._cache_policies().get(policy)

    def _cache_policies(self):
        from .builder import require
        from .cache_policy import CachePolicies

        tracer = require("Tensor.set_cache_policy")
        return tracer.cache_policies.setdefault(self._value.root.id, CachePolicies())

    @property
    def format(self):
        """The layout: ``TileOpFormat.TILEOP_ND`` (traced tensors are always ND here)."""
        from ..enums import TileOpFormat

        return TileOpFormat.TILEOP_ND
    # indexing.py / layout.py (upstream's Tensor methods)
    def gather(self, dim, index): return _ops().gather(self, dim, index)
    def index_add(self, dim, index, source, *, alpha=1): return _ops().index_add(self, dim, index, source, alpha=alpha)
    def index_add_(self, dim, index, source, *, alpha=1):
        return _ops().index_add_(self, dim, index, source, alpha=alpha)
    def scatter(self, dim, index, src, *, reduce=None): return _ops().scatter(self, dim, index, src, reduce=reduce)
    def scatter_(self, dim, index, src, *, reduce=None): return _ops().scatter_(self, dim, index, src, reduce=reduce)
    def scatter_update(self, dim, index, src): return _ops().scatter_update(self, dim, index, src)
    def unsqueeze(self, dim): return _ops().unsqueeze(self, dim)
    def permute(self, dims): return _ops().permute(self, dims)
    def pad(self, pad, mode="constant", value=0): return _ops().pad(self, pad, mode, value)
    def tril(self, diagonal=0): return _ops().tril(self, diagonal)
    def triu(self, diagonal=0): return _ops().triu(self, diagonal)
    def tril_(self, diagonal=0): return _ops().tril_(self, diagonal)
    def triu_(self, diagonal=0): return _ops().triu_(self, diagonal)

    def move(self, other: "Tensor") -> "Tensor":
        """Make this tensor hold ``other``, as upstream: a kernel argument (a parameter, or a
        ``pypto.function`` argument) gets ``other`` written over the whole of it (``t[:] = other``);
        any other tensor (a view, a local, an op result, the empty ``pypto.tensor()``) becomes a
        handle on ``other`` itself, so nothing is written into what it was a view of."""
        if not isinstance(other, Tensor):
            raise KernelSyntaxError("Tensor.move needs a tensor", expected="a pypto Tensor",
                                    got=type(other).__name__, loc=user_loc(2))
        if not _is_empty_handle(self) and self._value.kind == "param":
            if not _holds_storage_of(other, self):
                _ops().assemble(_moved_into(other, self), [0] * self.dim, self)
        else:
            _value_slot.__set__(self, other._value)
        return self

    # ---- indexing ------------------------------------------------------------------------------
    def _index(self, key):
        """(offsets, sizes, dropped dims, element?) for an indexing key."""
        shape = self._value.shape
        if not isinstance(key, tuple):
            key = (key,)
        if any(isinstance(k, Tensor) for k in key):
            raise KernelSyntaxError("a tensor index is only supported as t[dim:index] (gather / scatter)",
                                    hint="or call pypto.gather / pypto.index_select / pypto.scatter",
                                    loc=user_loc(3))
        if sum(k is Ellipsis for k in key) > 1:
            raise ShapeError("an index may hold at most one '...'", loc=user_loc(3))
        if Ellipsis in key:
            i = key.index(Ellipsis)
            key = key[:i] + (slice(None),) * (len(shape) - len(key) + 1) + key[i + 1:]
        if len(key) > len(shape):
            raise ShapeError(f"too many indices for a tensor of rank {len(shape)}",
                             expected=f"at most {len(shape)}", got=len(key), loc=user_loc(3))
        key = key + (slice(None),) * (len(shape) - len(key))
        offsets, sizes, drops = [], [], []
        for d, (k, dim) in enumerate(zip(key, shape)):
            if isinstance(k, slice):
                if k.step not in (None, 1):
                    raise ShapeError("slices with a step are not supported", expected="step 1",
                                     got=k.step, loc=user_loc(3))
                start = 0 if k.start is None else _index_expr(k.start, dim)
                stop = dim if k.stop is None else _index_expr(k.stop, dim)
                if isinstance(stop, int) and isinstance(dim, int):
                    stop = min(stop, dim)
                offsets.append(start)
                sizes.append(E.simplify_dim(E.sub(stop, start)))
            else:
                offsets.append(_index_expr(k, dim))
                sizes.append(1)
                drops.append(d)
        for d, s in enumerate(sizes):
            if isinstance(s, int) and s <= 0:
                raise ShapeError(f"empty slice in dim {d}", got=f"size {s}", loc=user_loc(3))
        return offsets, sizes, drops

    def __getitem__(self, key):
        if _is_gather_key(key):  # t[dim:index] is gather(t, dim, index), as upstream
            return _ops().gather(self, key.start, key.stop)
        offsets, sizes, drops = self._index(key)
        if len(drops) == self.dim and self.dim > 0:
            return _ops().read_element(self, offsets)
        view = _ops().view(self, sizes, offsets)
        if drops:
            keep = [s for d, s in enumerate(sizes) if d not in drops]
            return _ops().squeeze_dims(view, drops, keep)
        return view

    def __setitem__(self, key, src):
        if _is_gather_key(key):  # t[dim:index] = src is scatter_(t, dim, index, src), as upstream
            _ops().scatter_(self, key.start, key.stop, src)
            return
        if _is_full_key(key) and self._holds_nothing():  # upstream: t[:] = x is t.move(x)
            self.move(src)
            return
        if _is_full_key(key) and _takes_the_shape_of(self, src):
            # upstream's t[:] = x is t.move(x): a local given a value of another shape becomes that
            # value (ds_v32's `cos_2d[:] = pypto.view(cos_2d, [tile, d], [off, 0])`); with the same
            # shape it is written in place below, which is what loop-carried state needs
            self.move(src)
            return
        if isinstance(key, slice) and key == slice(None) and self.dim > 0:
            src = _fit_rank(src, self)
            if isinstance(src, Tensor) and src.dim == self.dim:
                _relate_assigned(src, self, [0] * self.dim, self._value.shape)
            _ops().assemble(src, [0] * self.dim, self)
            return
        offsets, sizes, drops = self._index(key)
        if not isinstance(src, Tensor):
            raise KernelSyntaxError("slice assignment needs a tensor on the right",
                                    got=type(src).__name__,
                                    hint="use pypto.full(shape, value, dtype) for a constant",
                                    loc=user_loc(2))
        if drops:
            src = _ops().unsqueeze_dims(src, drops, sizes)
        if src.dim == self.dim:
            _relate_assigned(src, self, offsets, sizes)
        _ops().assemble(src, offsets, self)


_value_slot = Tensor.__dict__["_value"]


def _relate_assigned(src: Tensor, dst: Tensor, offsets, sizes) -> None:
    """``dst[slices] = src``: in each dim ``src``'s valid extent must fit the slice's extent
    (clipped at ``dst``'s edge, as a view's valid extent) when either depends on a runtime size,
    else the assembled values would be cut (recorded as a size guard, `pypto.ir.guards`). A shorter
    source writes its valid part, as upstream's assemble does (an output with more rows than the
    input keeps its other rows)."""
    from .builder import current

    tracer = current()
    if tracer is None:
        return
    where = user_loc(3)
    v, t = src._value, dst._value
    for d, (off, size) in enumerate(zip(offsets, sizes)):
        if isinstance(v.shape[d], int) and v.shape[d] == 1 and not (isinstance(size, int) and size == 1):
            continue  # a size-1 source dim: the assembled row, as upstream
        extent = E.clamp_extent(t.valid_shape[d], off, size)
        have = v.valid_shape[d]
        if (isinstance(extent, E.Expr) or isinstance(have, E.Expr)) and extent != have:
            tracer.require_equal(have, extent, f"assignment to '{dst._value.root.name}': the value assigned "
                                               f"and the slice, in dim {d}", where, rel="le")


def _fit_rank(src, dst: Tensor):
    """``src`` reshaped to ``dst``'s rank when the two differ only in size-1 dims (a full reduction,
    rank 0, written into a [1] tensor, say): the same elements, as upstream accepts."""
    if isinstance(src, Tensor) and src.dim != dst.dim:
        a, b = _squeezed(src._value.shape), _squeezed(dst._value.shape)
        if a is not None and a == b:
            return _ops().reshape(src, list(dst._value.shape))
    return src


def _holds_storage_of(src: Tensor, param: Tensor) -> bool:
    """Whether ``src`` is ``param``'s whole storage already (the argument reshaped in place and
    updated in place, say): moving it back rebinds the handle and copies nothing."""
    from ..ops.common import dims_equal
    from .builder import current

    tracer = current()
    group, _ = tracer.aliases.member_of(src._value)
    if group is None or group is not tracer.aliases.member_of(param._value)[0]:
        return False
    return dims_equal(_element_count(src._value.shape), _element_count(param._value.shape))


def _moved_into(src: Tensor, dst: Tensor) -> Tensor:
    """``src`` in ``dst``'s shape for a move into a kernel argument. Upstream's move rebinds the
    argument to ``src``'s storage, so a source of another rank holding the same number of
    elements (the argument reshaped in place, updated, moved back) lands in row-major order."""
    from ..ops.common import dims_equal

    src = _fit_rank(src, dst)
    if src.dim != dst.dim:
        n_src, n_dst = _element_count(src._value.shape), _element_count(dst._value.shape)
        if dims_equal(n_src, n_dst):  # symbols of different arguments may agree at run time
            return _ops().reshape(src, list(dst._value.shape))
        raise ShapeError("Tensor.move: the moved tensor must hold as many elements as the kernel "
                         "argument it is moved into",
                         expected=f"{E.render_dims(dst._value.shape)} ({E.render(n_dst)} elements)",
                         got=f"{E.render_dims(src._value.shape)} ({E.render(n_src)} elements)",
                         loc=user_loc(3))
    return src


def _element_count(shape):
    n = 1
    for d in shape:
        n = E.simplify_dim(E.mul(n, d)) if isinstance(d, E.Expr) or isinstance(n, E.Expr) else n * d
    return n


def _squeezed(shape) -> tuple | None:
    """The static sizes other than 1 (None when a size is symbolic)."""
    if not all(isinstance(d, int) for d in shape):
        return None
    return tuple(d for d in shape if d != 1)


def _is_empty_handle(t: Tensor) -> bool:
    if type(t) is not Tensor:  # a declared tensor outside its function is not a handle to fill
        return False
    try:
        _value_slot.__get__(t, Tensor)
    except AttributeError:
        return True
    return False


def _takes_the_shape_of(t: Tensor, src) -> bool:
    """``t[:] = src`` rebinds ``t`` (upstream's move) rather than writing into it: ``t`` is no
    kernel argument and ``src`` a tensor of its rank but another shape."""
    if not isinstance(src, Tensor) or type(t) is not Tensor or t._value.kind == "param":
        return False
    a, b = t._value.shape, src._value.shape
    return len(a) == len(b) and any(x != y for x, y in zip(a, b))  # dims compare structurally


def _is_full_key(key) -> bool:
    """``t[:]``, ``t[:, :]`` ...: every entry a bare ``:``."""
    keys = key if isinstance(key, tuple) else (key,)
    return bool(keys) and all(isinstance(k, slice) and k == slice(None) for k in keys)


def _is_gather_key(key) -> bool:
    """``t[dim:index]``: a slice whose stop is an index tensor (and whose start is the dim)."""
    if not (isinstance(key, slice) and isinstance(key.stop, Tensor)):
        return False
    if isinstance(key.start, bool) or not isinstance(key.start, int) or key.step is not None:
        raise KernelSyntaxError("t[dim:index] needs an int dim before the index tensor and no step",
                                got=f"[{key.start!r}:{key.stop!r}:{key.step!r}]", loc=user_loc(3))
    return True


def _index_expr(k, dim):
    if isinstance(k, SymbolicScalar):
        return E.simplify_dim(k.expr)
    if isinstance(k, bool) or not isinstance(k, int):
        if hasattr(k, "__index__"):
            k = int(k.__index__())
        else:
            raise KernelSyntaxError("an index must be an int or a symbolic scalar",
                                    got=f"{type(k).__name__} {k!r}", loc=user_loc(4))
    if k < 0:
        if isinstance(dim, E.Expr):
            return E.simplify_dim(E.add(dim, k))
        k += dim
        if k < 0:
            raise ShapeError("index out of range", expected=f"-{dim} <= index < {dim}",
                             got=k - dim, loc=user_loc(4))
    return k
