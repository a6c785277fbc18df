"""Upstream's ``pypto.logging``: leveled messages on stderr, checks and error raising.

``log_debug`` ... ``log_event`` write ``[pypto LEVEL] message`` to stderr when the level is at
least ``get_log_level()`` (WARN unless set). They go through the standard ``logging`` module
(logger ``"pypto"``, which does not propagate to the root logger), so handlers can be added there.
``check(cond, msg)`` raises :class:`CheckError` (a ValueError), ``internal_check`` raises
:class:`InternalError`, ``raise_error(type_name, msg)`` raises the named exception type.
"""

from __future__ import annotations

import enum
import logging as _std
import sys

from .errors import ArgumentTypeError, ArgumentValueError, PyptoError, user_loc


class LogLevel(enum.IntEnum):
    """Message levels, lowest first (upstream's values); NONE silences everything."""

    DEBUG = 0
    INFO = 1
    WARN = 2
    ERROR = 3
    FATAL = 4
    EVENT = 5
    NONE = 6

    def __str__(self) -> str:
        return f"LogLevel.{self.name}"


class InternalError(PyptoError, RuntimeError):
    """An internal consistency check failed (``internal_check``)."""


class CheckError(PyptoError, ValueError):
    """A ``pypto.check(condition, message)`` whose condition was false."""


_STD_LEVEL = {LogLevel.DEBUG: _std.DEBUG, LogLevel.INFO: _std.INFO, LogLevel.WARN: _std.WARNING,
              LogLevel.ERROR: _std.ERROR, LogLevel.FATAL: _std.CRITICAL, LogLevel.EVENT: _std.CRITICAL + 5,
              LogLevel.NONE: _std.CRITICAL + 10}
_std.addLevelName(_STD_LEVEL[LogLevel.EVENT], "EVENT")


class _StderrHandler(_std.Handler):
    """Writes to the current ``sys.stderr`` (looked up per message, so redirection is honoured)."""

    def emit(self, record) -> None:
        try:
            sys.stderr.write(self.format(record) + "\n")
        except Exception:  # noqa: BLE001 - a logging failure must not break the caller
            self.handleError(record)


logger = _std.getLogger("pypto")
logger.propagate = False
_handler = _StderrHandler()
_handler.setFormatter(_std.Formatter("[pypto %(levelname)s] %(message)s"))
logger.addHandler(_handler)
_level = {"value": LogLevel.WARN}
logger.setLevel(_STD_LEVEL[LogLevel.WARN])


def set_log_level(level: LogLevel) -> None:
    """Show messages of ``level`` and above."""
    if isinstance(level, bool) or not isinstance(level, int) or level not in LogLevel._value2member_map_:
        raise ArgumentValueError("pypto.set_log_level needs a pypto.LogLevel", expected="LogLevel.DEBUG ... NONE",
                                 got=repr(level), param="level", loc=user_loc(2))
    _level["value"] = LogLevel(level)
    logger.setLevel(_STD_LEVEL[LogLevel(level)])


def get_log_level() -> LogLevel:
    """The level set by ``set_log_level`` (WARN by default)."""
    return _level["value"]


def _log(level: LogLevel, message) -> None:
    logger.log(_STD_LEVEL[level], "%s", message)


def log_debug(message: str) -> None:
    """Log ``message`` at DEBUG level."""
    _log(LogLevel.DEBUG, message)


def log_info(message: str) -> None:
    """Log ``message`` at INFO level."""
    _log(LogLevel.INFO, message)


def log_warn(message: str) -> None:
    """Log ``message`` at WARN level."""
    _log(LogLevel.WARN, message)


def log_error(message: str) -> None:
    """Log ``message`` at ERROR level."""
    _log(LogLevel.ERROR, message)


def log_fatal(message: str) -> None:
    """Log ``message`` at FATAL level (it does not stop the program)."""
    _log(LogLevel.FATAL, message)


def log_event(message: str) -> None:
    """Log ``message`` at EVENT level (the highest)."""
    _log(LogLevel.EVENT, message)


def check(condition, message: str) -> None:
    """Raise :class:`CheckError` (a ValueError) with ``message`` when ``condition`` is false."""
    if not condition:
        raise CheckError(str(message), loc=user_loc(2))


def internal_check(condition, message: str) -> None:
    """Raise :class:`InternalError` with ``message`` when ``condition`` is false."""
    if not condition:
        raise InternalError(str(message), loc=user_loc(2))


_ERROR_TYPES = {"ValueError": ValueError, "TypeError": TypeError, "RuntimeError": RuntimeError,
                "NotImplementedError": NotImplementedError, "IndexError": IndexError, "KeyError": KeyError,
                "AssertionError": AssertionError, "InternalError": InternalError, "Error": PyptoError}


def raise_error(error_type: str, message: str):
    """Raise the exception named ``error_type`` (``"ValueError"``, ``"TypeError"``,
    ``"RuntimeError"``, ``"NotImplementedError"``, ``"IndexError"``, ``"KeyError"``,
    ``"AssertionError"``, ``"InternalError"`` or ``"Error"``, a PyptoError) with ``message``."""
    if not isinstance(error_type, str):
        raise ArgumentTypeError("pypto.raise_error: 'error_type' must be a str", got=repr(error_type),
                                param="error_type", loc=user_loc(2))
    kind = _ERROR_TYPES.get(error_type)
    if kind is None:
        raise ArgumentValueError(f"pypto.raise_error: Unknown error type {error_type!r}",
                                 expected=", ".join(_ERROR_TYPES), got=error_type, param="error_type",
                                 loc=user_loc(2))
    if issubclass(kind, PyptoError):
        raise kind(str(message), loc=user_loc(2))
    raise kind(message)


def value_error(message: str):
    """``raise_error("ValueError", message)``."""
    raise_error("ValueError", message)


def internal_error(message: str):
    """``raise_error("InternalError", message)``."""
    raise_error("InternalError", message)


__all__ = ["LogLevel", "InternalError", "CheckError", "set_log_level", "get_log_level", "log_debug", "log_info",
           "log_warn", "log_error", "log_fatal", "log_event", "check", "internal_check", "raise_error",
           "value_error", "internal_error"]
