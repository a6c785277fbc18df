"""Enumerations of the PyPTO language (upstream ``pypto.enum``)."""

import enum


class CastMode(enum.IntEnum):
    """Rounding of ``pypto.cast``. CAST_NONE truncates float->int and rounds to nearest even otherwise."""

    CAST_NONE = 0
    CAST_RINT = 1
    CAST_ROUND = 2
    CAST_FLOOR = 3
    CAST_CEIL = 4
    CAST_TRUNC = 5
    CAST_ODD = 6


class SaturationMode(enum.IntEnum):
    """Whether an integer narrowing cast clamps (ON) or wraps (OFF)."""

    OFF = 0
    ON = 1


class TileOpFormat(enum.IntEnum):
    TILEOP_ND = 0
    TILEOP_NZ = 1


class PrecisionType(enum.IntEnum):
    """Precision of some math ops (pow, fmod, remainder, log2 ...). A2/A3 only have INTRINSIC; the
    simulator computes every op the same way (fp32 for fp16/bf16), so the choice changes nothing here."""

    INTRINSIC = 0
    HIGH_PRECISION = 1
