"""``pypto.Element``: a scalar with a dtype, and the rules a scalar must meet for a dtype.

An op that combines a tensor with a plain Python scalar takes the scalar in the tensor's dtype;
an ``Element`` states its dtype, so ``pypto.where(cond, x, pypto.Element(pypto.DT_FP16, 1.0))``
says which dtype the 1.0 is, and a mismatch with the tensor is an error instead of a silent
conversion. ``pypto.element`` is the same class under upstream's other spelling.
"""

from __future__ import annotations

from .dtypes import DType
from .errors import ArgumentTypeError, ArgumentValueError, DTypeError, user_loc


def int_range(dtype: DType) -> tuple[int, int] | None:
    """The values an integer dtype holds (None for float and bool dtypes)."""
    if dtype.kind == "uint":
        return 0, 2 ** dtype.bits - 1
    if dtype.kind == "int":
        return -2 ** (dtype.bits - 1), 2 ** (dtype.bits - 1) - 1
    return None


def check_scalar_value(value, dtype: DType, what: str, param: str, loc=None) -> None:
    """A scalar ``value`` must be representable in ``dtype``: no negative value for an unsigned
    dtype, no integer outside the dtype's range (``what`` names the op or constructor)."""
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        return
    if dtype.kind == "uint" and value < 0:
        raise ArgumentValueError(f"{what}: '{param}' is negative ({value!r}) but {dtype.name} is unsigned",
                                 expected=f"a value >= 0 for {dtype.name}", got=repr(value), param=param, loc=loc)
    bounds = int_range(dtype)
    if bounds is not None and isinstance(value, int) and not bounds[0] <= value <= bounds[1]:
        raise ArgumentValueError(f"{what}: '{param}' does not fit {dtype.name}",
                                 expected=f"an int in [{bounds[0]}, {bounds[1]}]", got=repr(value), param=param,
                                 loc=loc)


class Element:
    """A scalar value with a dtype: ``pypto.Element(pypto.DT_FP16, 1.0)``.

    ``dtype`` and ``value`` are read-only. An int value suits every numeric dtype (within its
    range: no negative value for an unsigned dtype), a float value a float dtype; the value is
    kept as a float for a float dtype, a bool for DT_BOOL and an int otherwise.
    """

    __slots__ = ("_dtype", "_value")

    def __init__(self, dtype: DType, value):
        loc = user_loc(2)
        if not isinstance(dtype, DType):
            raise ArgumentTypeError("pypto.Element: 'dtype' must be a pypto dtype", expected="e.g. pypto.DT_FP32",
                                    got=repr(dtype), param="dtype", loc=loc)
        if isinstance(value, bool):
            value = int(value)
        if not isinstance(value, (int, float)):
            raise ArgumentTypeError("pypto.Element: 'value' must be an int or a float", expected="int or float",
                                    got=f"{type(value).__name__} {value!r}"[:80], param="value", loc=loc)
        if isinstance(value, float) and not dtype.is_float and value != int(value):
            raise DTypeError(f"pypto.Element: a fractional value for the integer dtype {dtype.name}",
                             expected="an integral value", got=repr(value), param="value", loc=loc)
        check_scalar_value(value, dtype, "pypto.Element", "value", loc)
        # the value in its dtype's Python type, so equal constants compare and hash equal
        value = float(value) if dtype.is_float else bool(value) if dtype.is_bool else int(value)
        self._dtype = dtype
        self._value = value

    @property
    def dtype(self) -> DType:
        """The dtype of the value."""
        return self._dtype

    @property
    def value(self) -> int | float:
        """The value: a float for a float dtype, a bool for DT_BOOL, an int otherwise."""
        return self._value

    def __eq__(self, other) -> bool:
        return isinstance(other, Element) and (self._dtype, self._value) == (other._dtype, other._value)

    def __hash__(self) -> int:
        return hash((self._dtype, self._value))

    def __repr__(self) -> str:
        return f"pypto.Element({self._dtype!r}, {self._value!r})"


element = Element

__all__ = ["Element", "element", "check_scalar_value", "int_range"]
