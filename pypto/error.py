"""Upstream's ``pypto.error`` module: the error families under their upstream names.

Every error pypto raises derives from one of them (``pypto.errors`` holds the definitions):
frontend errors (arguments, annotations, shapes, dtypes, kernel code) are :class:`FeError`,
failures while a compiled program runs are :class:`PyptoRtError`. Each also derives from the
matching builtin (``ValueError``, ``TypeError`` ...), and carries upstream's error number in
``code`` (``0xF00002`` for a ValueError, ...).

``FeError(ValueError("message"))`` wraps an exception the way upstream does; the message then
reads ``ErrCode: F00002, ValueError: message``.
"""

from .errors import (FeError, ParserError, PassError, PyptoError, PyptoGeneralError, PyptoRtError,
                     RenderedParserError, VerifyError, error_code)

__all__ = ["PyptoError", "PyptoGeneralError", "FeError", "PyptoRtError", "PassError", "VerifyError",
           "ParserError", "RenderedParserError", "error_code"]


def _catch_and_wrap_error(operation_name: str):
    """Decorator: an exception that is not a PyptoError leaving the function becomes a
    :class:`PyptoGeneralError` saying ``Failed to <operation_name> '<function>'`` (upstream's helper;
    a PyptoError passes through unchanged, an existing ``ErrCode`` is kept)."""
    import functools

    def decorate(func):
        @functools.wraps(func)
        def wrapper(*args, **kwargs):
            try:
                return func(*args, **kwargs)
            except PyptoError:
                raise
            except Exception as e:  # noqa: BLE001 - every other error is wrapped, with its cause kept
                name = getattr(args[0], "__name__", func.__name__) if args else func.__name__
                text = f"Failed to {operation_name} '{name}'.\n{e}"
                wrapped = PyptoGeneralError(text if "ErrCode" in str(e) else type(e)(text))
                raise wrapped.with_traceback(e.__traceback__) from None

        return wrapper

    return decorate
