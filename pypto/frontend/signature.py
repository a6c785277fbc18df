"""The annotation grammar of kernel signatures, parsed once into frozen specs.

``pypto.Tensor([dims], dtype)`` or ``pypto.Tensor[[dims], dtype]``; a dim is ``pypto.DYNAMIC`` /
``pypto.DYN`` (runtime size, never recompiles), ``pypto.STATIC`` (size taken from the call, a new
size compiles a new version), an int (only that size), ``pypto.frontend.dynamic("N")`` (a named
dynamic dim: every dim named N must agree at a call) or ``...`` in last place (the remaining dims
are static). As upstream, a list of markers and sizes with at least one STATIC / DYNAMIC marker
also accepts a tensor of higher rank (as if it ended in ``...``); sizes alone fix the rank.
``pypto.Tensor()`` / ``pypto.Tensor[...]`` take every dim (static) and the dtype from the call.
"""

from __future__ import annotations

import enum
import inspect
from dataclasses import dataclass
from typing import Optional

from ..dtypes import DType, require_supported
from ..errors import (AnnotationError, ArgumentBindingError, ArgumentTypeError, ArgumentValueError, SourceLoc,
                      UnsupportedSignatureError)


class StatusType(enum.Enum):
    """Dimension markers of upstream ``pypto.StatusType``."""

    DYNAMIC = "DYNAMIC"
    STATIC = "STATIC"
    DYN = "DYNAMIC"  # alias: pypto.DYN is pypto.DYNAMIC

    def __repr__(self) -> str:
        return f"pypto.{self.name}"


DYNAMIC = StatusType.DYNAMIC
DYN = StatusType.DYNAMIC
STATIC = StatusType.STATIC


@dataclass(frozen=True)
class DynamicDim:
    """A named dynamic dimension, ``pypto.frontend.dynamic("N")``."""

    name: str

    def __repr__(self) -> str:
        return f"dynamic({self.name!r})"


def dynamic(name: str) -> DynamicDim:
    """A named dynamic dimension: every annotation dim with this name must agree at a call."""
    if not isinstance(name, str) or not name.isidentifier():
        raise AnnotationError("pypto.frontend.dynamic() needs an identifier as its name",
                              expected="a name such as 'N'", got=repr(name), param="name")
    return DynamicDim(name)


class TensorAnnotation:
    """What ``pypto.Tensor(...)`` / ``pypto.Tensor[...]`` means in a signature (unparsed form)."""

    __slots__ = ("dims", "dtype", "name", "format")

    def __init__(self, shape=None, dtype=None, name: str = "", format=None):
        self.dims = shape
        self.dtype = dtype
        self.name = name
        self.format = format

    @classmethod
    def from_brackets(cls, item) -> "TensorAnnotation":
        if item is Ellipsis:
            return cls(None, None)
        if isinstance(item, tuple) and len(item) >= 1 and isinstance(item[0], (list, tuple)) \
                or isinstance(item, tuple) and item and item[0] is Ellipsis:
            dims, *rest = item
            return cls(None if dims is Ellipsis else dims, rest[0] if rest else None,
                       *(rest[1:2] if len(rest) > 2 else []))
        if isinstance(item, list):
            return cls(item, None)
        raise AnnotationError("pypto.Tensor[...] expects [dims] or [[dims], dtype]",
                              expected="pypto.Tensor[[pypto.DYNAMIC, 128], pypto.DT_FP32]",
                              got=f"pypto.Tensor[{item!r}]")

    def __repr__(self) -> str:
        return f"pypto.Tensor({self.dims!r}, {self.dtype!r})"


@dataclass(frozen=True)
class DimSpec:
    kind: str  # "dynamic", "static", "fixed"
    size: Optional[int] = None
    symbol: Optional[str] = None  # runtime symbol name of a dynamic dim

    def describe(self) -> str:
        if self.kind == "fixed":
            return str(self.size)
        if self.kind == "dynamic":
            return self.symbol or "DYNAMIC"
        return "STATIC"


@dataclass(frozen=True)
class TensorSpec:
    """A parsed tensor parameter: dims (None: any rank, all static), rest static, dtype."""

    param: str
    index: int
    dims: Optional[tuple]
    rest_static: bool
    dtype: Optional[DType]
    layout: str = "ND"  # "NZ": stored in the cube's fractal layout (format=TILEOP_NZ); timing only

    def describe(self) -> str:
        dt = self.dtype.short if self.dtype else "<dtype of call>"
        if self.dims is None:
            return f"{dt}[...]"
        parts = [d.describe() for d in self.dims] + (["..."] if self.rest_static else [])
        return f"{dt}[{', '.join(parts)}]"


@dataclass(frozen=True)
class ConstSpec:
    """A non-tensor parameter: a compile-time constant. Annotated with a pypto dtype
    (``alpha: pypto.DT_FP32``) it must be a Python number of that dtype, as upstream's kernels
    declare scalar operands; it stays a compile-time constant (upstream hashes its value into the
    compile cache key the same way)."""

    param: str
    index: int
    default: object  # inspect.Parameter.empty when required
    dtype: Optional[DType] = None

    def check_scalar(self, value):
        """``value`` as a Python scalar of ``self.dtype`` (float for float dtypes, int for integer
        ones, bool for DT_BOOL); anything else is an ArgumentTypeError / ArgumentValueError."""
        dt = self.dtype
        if type(value).__module__ == "numpy" and getattr(value, "ndim", None) == 0:
            value = value.item()  # a numpy scalar (np.float32(2.0), ...)
        kind = dt.kind
        expected = {"float": "an int or float", "int": "an int", "uint": "an int >= 0", "bool": "a bool"}[kind]
        if kind == "bool" and isinstance(value, bool):
            return value
        ok = isinstance(value, int) and not isinstance(value, bool) if kind in ("int", "uint") else \
            isinstance(value, (int, float)) and not isinstance(value, bool) if kind == "float" else False
        if not ok:
            raise ArgumentTypeError(f"scalar argument '{self.param}' does not match its annotation {dt.name}",
                                    expected=f"{expected} (a compile-time constant of {dt.name})",
                                    got=f"{type(value).__name__} {value!r}"[:80], param=self.param)
        if kind == "float":
            return float(value)
        lo, hi = _int_range(dt)
        if not lo <= value <= hi:
            raise ArgumentValueError(f"scalar argument '{self.param}' is out of range for {dt.name}",
                                     expected=f"an int in [{lo}, {hi}]", got=value, param=self.param)
        return int(value)


def _int_range(dt: DType) -> tuple:
    bits = dt.bits
    return (0, 2 ** bits - 1) if dt.kind == "uint" else (-2 ** (bits - 1), 2 ** (bits - 1) - 1)


def as_annotation(obj) -> TensorAnnotation | None:
    """``obj`` as a tensor annotation: ``pypto.Tensor[...]`` is one; ``pypto.Tensor(shape, dtype)``
    made outside a kernel is a declared tensor that also serves as one; anything else is None."""
    if isinstance(obj, TensorAnnotation):
        return obj
    from .host_tensor import HostTensor

    return obj.annotation() if isinstance(obj, HostTensor) else None


def parse_annotation(ann, param: str, index: int, loc: SourceLoc | None) -> TensorSpec:
    ann = as_annotation(ann)
    dtype = ann.dtype
    if dtype is not None:
        if not isinstance(dtype, DType):
            raise AnnotationError(f"the dtype in the annotation of '{param}' is not a pypto dtype",
                                  expected="pypto.DT_FP32, pypto.DT_FP16, ...", got=repr(dtype),
                                  param=param, loc=loc)
        require_supported(dtype, param=param, loc=loc)
    raw = ann.dims
    if raw is None or (isinstance(raw, (list, tuple)) and len(raw) == 0):
        return TensorSpec(param, index, None, True, dtype, _layout(ann))
    if not isinstance(raw, (list, tuple)):
        raise AnnotationError(f"the shape in the annotation of '{param}' must be a list",
                              expected="[pypto.DYNAMIC, 128, ...]", got=repr(raw), param=param, loc=loc)
    dims, rest = [], False
    for i, d in enumerate(raw):
        if d is Ellipsis:
            if i != len(raw) - 1:
                raise AnnotationError(f"'...' must be the last dim in the annotation of '{param}'",
                                      expected="'...' only in last place, e.g. [pypto.DYNAMIC, ...]",
                                      got=repr(list(raw)), param=param, loc=loc)
            rest = True
        elif isinstance(d, StatusType):
            dims.append(DimSpec("static") if d is STATIC else DimSpec("dynamic", symbol=f"{param}.shape[{i}]"))
        elif isinstance(d, DynamicDim):
            dims.append(DimSpec("dynamic", symbol=d.name))
        elif isinstance(d, int) and not isinstance(d, bool):
            if d < 0:
                raise AnnotationError(f"dim {i} in the annotation of '{param}' is negative",
                                      expected="a size >= 0, DYNAMIC, STATIC or ...", got=d,
                                      param=param, loc=loc)
            dims.append(DimSpec("fixed", d))
        elif type(d).__name__ == "SymbolicScalar" and d.is_symbol():
            dims.append(DimSpec("dynamic", symbol=d.expr.name))
        else:
            raise AnnotationError(f"dim {i} in the annotation of '{param}' is not understood",
                                  expected="an int, pypto.DYNAMIC, pypto.DYN, pypto.STATIC, "
                                           "pypto.frontend.dynamic('N') or ... (last)",
                                  got=repr(d), param=param, loc=loc)
    if not rest and _marker_form(raw):
        rest = True
    return TensorSpec(param, index, tuple(dims), rest, dtype, _layout(ann))


def _layout(ann) -> str:
    # the annotation's format (pypto.TileOpFormat): the data are the same, the timing of the
    # cube's loads is not (an NZ tensor's fractal blocks are contiguous)
    return "NZ" if getattr(ann.format, "name", None) == "TILEOP_NZ" else "ND"


def _marker_form(raw) -> bool:
    """Upstream's marker form: STATIC / DYNAMIC markers and sizes only, at least one marker. It
    constrains the leading dims and, as if it ended in ``...``, accepts a tensor of higher rank
    whose further dims are static. A list of sizes alone (or one naming a dynamic dim) fixes the
    rank exactly."""
    return any(isinstance(d, StatusType) for d in raw) and all(
        isinstance(d, StatusType) or (isinstance(d, int) and not isinstance(d, bool)) for d in raw)


def _signature(fn, scope_locals: dict):
    """The signature with string annotations (``from __future__ import annotations``) evaluated
    in the kernel's globals, its closure and the locals of the scope that decorated it."""
    sig = inspect.signature(fn)
    if not any(isinstance(p.annotation, str) for p in sig.parameters.values()):
        return sig
    namespace = dict(fn.__globals__)
    namespace.update(scope_locals)
    for name, cell in zip(fn.__code__.co_freevars, fn.__closure__ or ()):
        try:
            namespace[name] = cell.cell_contents
        except ValueError:
            pass
    params = []
    for p in sig.parameters.values():
        ann = p.annotation
        if isinstance(ann, str):
            try:
                ann = eval(ann, namespace)  # noqa: S307 - the user's own annotation text
            except Exception as e:
                raise AnnotationError(f"the annotation of '{p.name}' cannot be evaluated",
                                      expected="an expression naming pypto.Tensor(...)",
                                      got=f"{ann!r} ({type(e).__name__}: {e})", param=p.name) from None
        params.append(p.replace(annotation=ann))
    return sig.replace(parameters=params)


class Signature:
    """Tensor parameters first, then constants; binds call arguments to them."""

    def __init__(self, fn, loc: SourceLoc | None, scope_locals: dict | None = None):
        sig = _signature(fn, scope_locals or {})
        self.tensors: list[TensorSpec] = []
        self.consts: list[ConstSpec] = []
        for i, (name, p) in enumerate(sig.parameters.items()):
            if p.kind in (p.VAR_POSITIONAL, p.VAR_KEYWORD):
                form = ("Variable-length arguments (*args)" if p.kind is p.VAR_POSITIONAL
                        else "Keyword argument packing (**kwargs)")
                raise UnsupportedSignatureError(f"kernel parameter '{name}': {form} are not supported in a kernel "
                                                "signature", expected="named parameters", got=str(p), param=name,
                                                loc=loc)
            ann = as_annotation(p.annotation)
            if ann is not None:
                if self.consts:
                    raise AnnotationError(
                        f"tensor parameter '{name}' comes after non-tensor parameter "
                        f"'{self.consts[-1].param}'",
                        expected="all tensor parameters first, then compile-time constants",
                        got=", ".join(sig.parameters), param=name, loc=loc)
                self.tensors.append(parse_annotation(ann, name, i, loc))
            else:
                dtype = p.annotation if isinstance(p.annotation, DType) else None
                self.consts.append(ConstSpec(name, i, p.default, dtype))
        self.names = list(sig.parameters)
        self._const_by_name = {c.param: c for c in self.consts}
        self._tensor_by_name = {t.param: t for t in self.tensors}

    def bind(self, args: tuple, kwargs: dict):
        """Split a call into (tensor args in order, constants dict); raises on a bad call."""
        nt = len(self.tensors)
        tensors = list(args[:nt])
        extra = args[nt:]
        if len(tensors) < nt:
            for spec in self.tensors[len(tensors):]:
                if spec.param in kwargs:
                    tensors.append(kwargs[spec.param])
                else:
                    raise ArgumentBindingError(
                        f"missing tensor argument '{spec.param}'",
                        expected=f"{nt} tensor argument(s): " + ", ".join(t.param for t in self.tensors),
                        got=f"{len(tensors)}", param=spec.param)
        if len(extra) > len(self.consts):
            raise ArgumentBindingError("too many positional arguments",
                                     expected=f"at most {nt + len(self.consts)} "
                                              f"({', '.join(self.names)})",
                                     got=f"{len(args)}")
        consts = {}
        for spec, value in zip(self.consts, extra):
            consts[spec.param] = value
        for key, value in kwargs.items():
            if key in self._tensor_by_name:
                if self._tensor_by_name[key].index < len(args):
                    raise ArgumentBindingError(f"tensor argument '{key}' given twice",
                                             expected=f"'{key}' either by position or by keyword",
                                             got="both", param=key)
                continue
            if key not in self._const_by_name:
                import difflib

                close = difflib.get_close_matches(key, self.names, n=1)
                raise ArgumentBindingError(f"unknown keyword argument '{key}'",
                                         expected="one of " + ", ".join(self.names), got=key, param=key,
                                         hint=f"did you mean '{close[0]}'?" if close else None)
            if key in consts:
                raise ArgumentBindingError(f"argument '{key}' given twice",
                                         expected=f"'{key}' either by position or by keyword",
                                         got="both", param=key)
            consts[key] = value
        for spec in self.consts:
            if spec.param not in consts:
                if spec.default is inspect.Parameter.empty:
                    raise ArgumentBindingError(f"missing compile-time argument '{spec.param}'",
                                             expected=f"a value for '{spec.param}'", got="nothing",
                                             param=spec.param)
                consts[spec.param] = spec.default
            v = consts[spec.param]
            if spec.dtype is not None and (not _is_array(v) or type(v).__module__ == "numpy" and v.ndim == 0):
                v = consts[spec.param] = spec.check_scalar(v)
            if _is_array(v):
                raise ArgumentTypeError(
                    f"non-tensor parameter '{spec.param}' received a tensor",
                    expected=f"a compile-time constant, or annotate '{spec.param}' with pypto.Tensor(...)",
                    got=f"{type(v).__name__} of shape {tuple(v.shape)}", param=spec.param)
        # signature order, whatever the keyword order: the dict is part of the cache key
        return tensors, {spec.param: consts[spec.param] for spec in self.consts}


def _is_array(v) -> bool:
    return hasattr(v, "shape") and hasattr(v, "dtype") and not isinstance(v, (int, float))
