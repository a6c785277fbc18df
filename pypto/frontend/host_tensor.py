"""Tensors that live outside any kernel: declarations and host data.

``pypto.tensor(shape, dtype, name)`` called outside a kernel declares a tensor. Used as a
signature annotation it means what ``pypto.Tensor([dims], dtype)`` always meant; passed to
``pypto.function(name, *tensors)`` it becomes one of the function's arguments, and inside the
``with`` body it is that argument (ops, views, slicing and ``move`` work on it). A size of ``-1``
(or ``pypto.DYNAMIC``) is a runtime size: ``t.shape[d]`` is then a symbolic scalar.

``pypto.from_torch(t, name)`` wraps a CPU torch tensor as a host tensor that carries its data:
``pypto.runtime._device_run_once_data_from_host`` binds such tensors to a recorded function's
arguments, and ``@pypto.jit`` kernels accept them in place of torch tensors.
"""

from __future__ import annotations

import itertools
import weakref

from ..dtypes import ALL_DTYPES, DType
from ..enums import TileOpFormat
from ..errors import ArgumentTypeError, ArgumentValueError, KernelSyntaxError, user_loc
from ..ir import expr as E
from .scalar import SymbolicScalar
from .signature import STATIC, StatusType, TensorAnnotation
from .tensor import Tensor

_value_slot = Tensor.__dict__["_value"]  # the raw slot: reading it never falls back to __getattr__
_unnamed = itertools.count(1)
# live declared tensors by the prefix of their runtime-size symbols: two tensors that share a name
# must not share a runtime size by accident
_symbol_owners: "weakref.WeakValueDictionary[str, HostTensor]" = weakref.WeakValueDictionary()


def _dtype_named(torch_name: str):
    """The pypto dtype of a torch dtype name, supported by this build or not (None: unknown)."""
    from ..dtypes import _TORCH_ONLY

    for d in ALL_DTYPES:
        if d.torch_name == torch_name:
            return d
    return _TORCH_ONLY.get(torch_name)


def _is_runtime_size(d) -> bool:
    return d is StatusType.DYNAMIC or (isinstance(d, int) and not isinstance(d, bool) and d == -1)


class HostTensor(Tensor):
    """A tensor declared outside any kernel (``pypto.tensor(shape, dtype, name)``) or wrapping host
    data (``pypto.from_torch``). Inside ``pypto.function`` it stands for the function argument."""

    __slots__ = ("_dims", "_dtype", "_name", "_format", "_data", "_ori_shape", "_symbol_prefix", "_policies",
                 "__weakref__")

    def __new__(cls, *args, **kwargs):
        return object.__new__(cls)

    def __init__(self, *args, **kwargs):  # built by declare() / from_torch(), never directly
        pass

    @classmethod
    def declare(cls, shape, dtype, name: str = "", format=None, *, data=None, ori_shape=None) -> "HostTensor":
        t = object.__new__(cls)
        t._dims = None if shape is None else list(shape) if isinstance(shape, (list, tuple)) else shape
        t._dtype = dtype
        t._name = name or ""
        t._format = TileOpFormat.TILEOP_ND if format is None else format
        t._data = data
        t._ori_shape = ori_shape
        prefix = name if name and name.isidentifier() else "tensor"
        if prefix in _symbol_owners or prefix == "tensor":
            prefix = f"{prefix}_{next(_unnamed)}"
        t._symbol_prefix = prefix
        _symbol_owners[prefix] = t
        return t

    # ---- binding to a function being recorded ----------------------------------------------------
    def _bound_value(self):
        try:
            return _value_slot.__get__(self, Tensor)
        except AttributeError:
            return None

    def _bind(self, value) -> None:
        _value_slot.__set__(self, value)

    def _unbind(self) -> None:
        try:
            _value_slot.__delete__(self)
        except AttributeError:
            pass

    def __getattr__(self, attr):
        if attr == "_value":  # an op used this tensor while it is not an argument being recorded
            from .builder import current

            tracer = current()
            where = (f"the body of '{tracer.kernel_name}'" if tracer is not None else "no kernel or function")
            raise KernelSyntaxError(
                f"tensor '{self._name or '<unnamed>'}' is used in {where}, but it is not one of its "
                f"arguments", expected="a tensor passed to pypto.function(name, *tensors) (or a kernel parameter)",
                got=f"a tensor declared outside ({self._describe()})", loc=user_loc(2))
        raise AttributeError(f"'{type(self).__name__}' object has no attribute '{attr}'")

    def _holds_nothing(self) -> bool:
        return self._bound_value() is None

    def _cache_policies(self):
        """A declared tensor is its own memory: its policies live on it, inside a function or not."""
        try:
            return self._policies
        except AttributeError:
            from .cache_policy import CachePolicies

            self._policies = CachePolicies()
            return self._policies

    def move(self, other: Tensor) -> "HostTensor":
        """Inside a function whose argument this is: write ``other`` over it. A declared tensor that
        is not an argument becomes a handle on ``other`` until the recording ends (as upstream)."""
        if self._bound_value() is None:
            from .builder import require

            tracer = require("Tensor.move")
            if not isinstance(other, Tensor):
                raise KernelSyntaxError("Tensor.move needs a tensor", got=type(other).__name__, loc=user_loc(2))
            self._bind(other._value)
            tracer.host_bindings.append(self)
            return self
        return super().move(other)

    # ---- what it declares ------------------------------------------------------------------------
    def dynamic_symbol(self, dim: int) -> str:
        """The name of the runtime size of dim ``dim`` (a dim declared -1 or DYNAMIC)."""
        return f"{self._symbol_prefix}.shape[{dim}]"

    def declared_dims(self) -> list | None:
        """One entry per dim: an int size, or an Expr for a runtime size; None when rank is open.

        Raises when the declaration cannot be a function argument (STATIC, ``...``)."""
        if self._dims is None or (isinstance(self._dims, list) and not self._dims):
            return None
        if not isinstance(self._dims, list):
            raise ArgumentTypeError(f"the shape of tensor '{self._name}' must be a list of sizes",
                                    got=repr(self._dims), param="shape")
        dims = []
        for i, d in enumerate(self._dims):
            if isinstance(d, bool):
                raise ArgumentTypeError(f"size {i} of tensor '{self._name}' is a bool", got=repr(d), param="shape")
            if isinstance(d, int) and d >= 0:
                dims.append(d)
            elif _is_runtime_size(d):
                dims.append(E.Sym(self.dynamic_symbol(i), nonneg=True))
            elif isinstance(d, SymbolicScalar):
                dims.append(E.simplify_dim(d.expr))
            else:
                hint = "STATIC and ... only mean something in a @pypto.jit signature" \
                    if d is STATIC or d is Ellipsis else None
                raise ArgumentValueError(f"size {i} of tensor '{self._name}' cannot be a function argument's size",
                                         expected="an int >= 0, -1 or pypto.DYNAMIC (a runtime size)",
                                         got=repr(d), param="shape", hint=hint)
        return dims

    def annotation(self) -> TensorAnnotation:
        """This declaration as a signature annotation (``x: pypto.tensor([...], dtype)``)."""
        return TensorAnnotation(self._dims, self._dtype, self._name, self._format)

    def _describe(self) -> str:
        dt = self._dtype.short if isinstance(self._dtype, DType) else repr(self._dtype)
        return f"{dt}{list(self._dims) if isinstance(self._dims, list) else self._dims}"

    # ---- properties: the bound argument's inside a function, the declaration's outside -----------
    @property
    def shape(self) -> list:
        if self._bound_value() is not None:
            return Tensor.shape.fget(self)
        if not isinstance(self._dims, list):
            return []
        out = []
        for i, d in enumerate(self._dims):
            out.append(SymbolicScalar(E.Sym(self.dynamic_symbol(i), nonneg=True)) if _is_runtime_size(d) else d)
        return out

    @property
    def valid_shape(self) -> list:
        return Tensor.valid_shape.fget(self) if self._bound_value() is not None else self.shape

    @property
    def dtype(self):
        return self._dtype

    @property
    def name(self) -> str:
        return self._name

    @property
    def format(self):
        return self._format

    @property
    def dim(self) -> int:
        return len(self.shape)

    ndim = dim

    @property
    def ori_shape(self):
        """The shape of the wrapped torch tensor (``from_torch``), else None."""
        return self._ori_shape

    @property
    def data_ptr(self):
        return None if self._data is None else self._data.data_ptr()

    @property
    def device(self):
        return None if self._data is None else self._data.device

    @property
    def data(self):
        """The wrapped torch tensor (``from_torch``), else None."""
        return self._data

    def is_empty(self) -> bool:
        return self._dims is None or self._dims == []

    def __repr__(self) -> str:
        kind = "from_torch" if self._data is not None else "declared"
        return f"pypto.Tensor({self._name!r}: {self._describe()}, {kind})"


def declare(shape=None, dtype=None, name: str = "", format=None) -> HostTensor:
    """``pypto.tensor(shape, dtype, name, format)`` outside any kernel (see the module docstring)."""
    return HostTensor.declare(shape, dtype, name, format)


def from_torch(tensor, name: str = "", *, dynamic_axis=None, tensor_format=None, dtype=None) -> HostTensor:
    """Wrap a CPU torch tensor as a pypto tensor that carries its data.

    ``name`` defaults to ``TENSOR_<n>``. ``dynamic_axis`` marks dims as runtime sizes (``-1`` in
    ``.shape``). ``tensor_format`` is recorded (``TILEOP_ND`` by default; the NZ layout is not
    modelled: the data is read as laid out in torch). ``dtype`` reinterprets the bytes as another
    dtype of the same element size; without it the dtype follows the torch tensor's.
    """
    import torch

    loc = user_loc(2)
    if not isinstance(tensor, torch.Tensor):
        raise ArgumentTypeError("pypto.from_torch: 'tensor' must be a torch.Tensor",
                                expected="a torch.Tensor", got=type(tensor).__name__, param="tensor", loc=loc)
    if not tensor.is_contiguous():
        raise ArgumentValueError("pypto.from_torch: 'tensor' is not contiguous",
                                 expected="a contiguous tensor (call .contiguous())",
                                 got=f"strides {tuple(tensor.stride())}", param="tensor", loc=loc)
    if not isinstance(name, str):
        raise ArgumentTypeError("pypto.from_torch: 'name' must be a str", got=repr(name), param="name", loc=loc)
    if dtype is None:
        dtype = _dtype_named(str(tensor.dtype).replace("torch.", ""))
        if dtype is None:
            raise ArgumentTypeError(f"pypto.from_torch: torch dtype {tensor.dtype} has no pypto equivalent",
                                    expected="a float, int or bool torch dtype", got=str(tensor.dtype),
                                    param="tensor", loc=loc)
    elif not isinstance(dtype, DType):
        raise ArgumentTypeError("pypto.from_torch: 'dtype' must be a pypto dtype", expected="e.g. pypto.DT_FP32",
                                got=repr(dtype), param="dtype", loc=loc)
    if tensor_format is not None and not isinstance(tensor_format, TileOpFormat):
        raise ArgumentTypeError("pypto.from_torch: 'tensor_format' must be a pypto.TileOpFormat",
                                got=repr(tensor_format), param="tensor_format", loc=loc)
    shape = list(tensor.shape) if tensor.dim() else [1]
    if dynamic_axis is not None:
        for axis in dynamic_axis:
            if isinstance(axis, bool) or not isinstance(axis, int) or not -len(shape) <= axis < len(shape):
                raise ArgumentValueError("pypto.from_torch: 'dynamic_axis' names a dim the tensor does not have",
                                         expected=f"ints in [{-len(shape)}, {len(shape)})", got=repr(dynamic_axis),
                                         param="dynamic_axis", loc=loc)
            shape[axis] = -1
    return HostTensor.declare(shape, dtype, name or f"TENSOR_{next(_unnamed)}", tensor_format, data=tensor,
                              ori_shape=list(tensor.shape) if tensor.dim() else [1])


def host_data(t):
    """The torch tensor behind a ``from_torch`` tensor; other values come back unchanged."""
    if isinstance(t, HostTensor) and t._data is not None:
        return t._data
    return t
