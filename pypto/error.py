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
