"""``pypto.Element`` / ``pypto.element``: a scalar constant with an explicit dtype.

A plain ``float`` operand is an fp32 scalar and an ``int`` one an integer scalar; an Element says
which dtype the constant has (``pypto.Element(pypto.DT_FP16, 1.0)``), and operators that take a
scalar (``pypto.full``, ``pypto.where`` ...) require it to match the tensor's dtype.
"""

from __future__ import annotations

from .dtypes import DType
from .errors import ArgumentTypeError, DTypeError, user_loc


class Element:
    """A scalar constant of a given dtype: ``pypto.Element(pypto.DT_FP32, 3)``.

    ``dtype`` and ``value`` are read-only; the value is a float for a floating dtype, an int for
    an integer one and a bool for DT_BOOL.
    """

    __slots__ = ("_dtype", "_value")

    def __init__(self, dtype, value):
        if not isinstance(dtype, DType):
            raise ArgumentTypeError("pypto.Element: 'dtype' must be a pypto data type", expected="pypto.DT_*",
                                    got=repr(dtype), param="dtype", loc=user_loc(2))
        if isinstance(value, bool) or not isinstance(value, (int, float)):
            raise ArgumentTypeError("pypto.Element: 'value' must be an int or a float",
                                    got=f"{type(value).__name__} {value!r}", param="value", loc=user_loc(2))
        if dtype.is_float:
            value = float(value)
        elif isinstance(value, float):
            if not value.is_integer():
                raise DTypeError(f"pypto.Element: {value!r} is not a value of the integer dtype {dtype.name}",
                                 expected="an integral value", got=repr(value), param="value", loc=user_loc(2))
            value = int(value)
        if dtype.is_bool:
            value = bool(value)
        self._dtype = dtype
        self._value = value

    @property
    def dtype(self) -> DType:
        """The element's data type."""
        return self._dtype

    @property
    def value(self):
        """The element's value."""
        return self._value

    def __eq__(self, other) -> bool:
        return isinstance(other, Element) and (self._dtype, self._value) == (other._dtype, other._value)

    def __hash__(self) -> int:
        return hash((self._dtype, self._value))

    def __repr__(self) -> str:
        return f"pypto.Element({self._dtype!r}, {self._value!r})"


element = Element  # upstream spells the constructor both ways
