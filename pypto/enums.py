"""Enumerations of the PyPTO language (upstream ``pypto.enum``).

Member names and values follow upstream's; ``str()`` and ``repr()`` print ``Class.MEMBER``
(``str(pypto.CastMode.CAST_RINT) == "CastMode.CAST_RINT"``), as upstream's do. Most of them are
arguments of operators; those that only matter on the hardware (cache policies, atomic types)
are accepted and recorded.
"""

import enum


class _Enum(enum.IntEnum):
    """An IntEnum that prints as upstream's: ``ClassName.MEMBER``."""

    def __str__(self) -> str:
        return f"{type(self).__name__}.{self.name}"

    __repr__ = __str__


class CastMode(_Enum):
    """Rounding of ``pypto.cast``. CAST_NONE truncates float->int and rounds to nearest even otherwise."""

    CAST_NONE = 0
    CAST_RINT = 1
    CAST_ROUND = 2
    CAST_FLOOR = 3
    CAST_CEIL = 4
    CAST_TRUNC = 5
    CAST_ODD = 6


class SaturationMode(_Enum):
    """Whether an integer narrowing cast clamps (ON) or wraps (OFF). Values as upstream (ON is 0)."""

    ON = 0
    OFF = 1


class TileOpFormat(_Enum):
    """Memory layout of a tensor: ND (row major) or NZ (the cube unit's fractal layout)."""

    TILEOP_ND = 0
    TILEOP_NZ = 1


class PrecisionType(_Enum):
    """Precision of some math ops (pow, fmod, remainder, log2 ...). A2/A3 only have INTRINSIC; the
    simulator computes every op the same way (fp32 for fp16/bf16), so the choice changes nothing here."""

    INTRINSIC = 0
    HIGH_PRECISION = 1


class CachePolicy(_Enum):
    """Cache policy of a tensor's GM accesses (``Tensor.set_cache_policy``): recorded only."""

    PREFETCH = 0
    NONE_CACHEABLE = 1


class ReduceMode(_Enum):
    """How partial results meet in GM: ATOMIC_ADD accumulates."""

    ATOMIC_ADD = 0


class OpType(_Enum):
    """The comparison of ``pypto.compare``-style ops."""

    EQ = 0
    NE = 1
    LT = 2
    LE = 3
    GT = 4
    GE = 5


class OutType(_Enum):
    """The result form of a comparison: BOOL elements or packed BITs."""

    BOOL = 0
    BIT = 1


class TopKAlgo(_Enum):
    """The algorithm of topk on the device; both give the same values here."""

    MERGE_SORT = 0
    RADIX_SELECT = 1


class ReLuType(_Enum):
    """The activation fused into a matmul result (``extend_params['relu_type']``)."""

    NO_RELU = 0
    RELU = 1


class ConvReLuType(_Enum):
    """The activation fused into a conv result (``pypto.conv(..., extend_params={'relu_type': ...})``):
    upstream gives conv an enum of its own, with the matmul's values."""

    NO_RELU = 0
    RELU = 1


class TransMode(_Enum):
    """How a matmul turns fp32 operands into TF32 (10 mantissa bits): not at all (CAST_NONE), or
    rounding to nearest with ties to even (CAST_RINT) or away from zero (CAST_ROUND)."""

    CAST_NONE = 0
    CAST_RINT = 1
    CAST_ROUND = 2


class ScatterMode(_Enum):
    """How scatter combines a source element with the one already there."""

    NONE = 0
    ADD = 1
    MULTIPLY = 2
    UNKNOWN = 3


class AtomicRMWMode(_Enum):
    """The read-modify-write of an atomic GM update."""

    ADD = 0
    MAX = 1
    MIN = 2


class AtomicType(_Enum):
    """Whether a GM write overwrites (SET) or accumulates (ADD)."""

    SET = 0
    ADD = 1


class DequantScaleRoundingMode(_Enum):
    """Rounding of a dequantisation scale (``pypto.ROUND_UP`` / ``pypto.ROUND_DOWN``)."""

    ROUND_UP = 0
    ROUND_DOWN = 1


class LogBaseType(_Enum):
    """The base of a logarithm: e, 2 or 10 (``pypto.log``, ``log2``, ``log10``)."""

    LOG_E = 0
    LOG_2 = 1
    LOG_10 = 2


ROUND_UP = DequantScaleRoundingMode.ROUND_UP
ROUND_DOWN = DequantScaleRoundingMode.ROUND_DOWN

__all__ = ["CastMode", "SaturationMode", "TileOpFormat", "PrecisionType", "CachePolicy", "ReduceMode", "OpType",
           "OutType", "TopKAlgo", "ReLuType", "ConvReLuType", "TransMode", "ScatterMode", "AtomicRMWMode", "AtomicType",
           "DequantScaleRoundingMode", "LogBaseType", "ROUND_UP", "ROUND_DOWN"]
