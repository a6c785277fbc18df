"""Upstream's ``pypto.operation`` module, for the name upstream programs import from it:
``op_wrapper``, the decorator of a function that builds ops from `pypto.pypto_impl` calls
(``ScalarDivS`` ...).

Upstream's wrapper converts its Tensor objects to the binding's and back; here the binding
names take this package's tensors as they are, so the wrapper only makes the function behave
like a pypto op: an error that is not a pypto error (a mistake in the wrapped helper) becomes
an :class:`pypto.error.FeError` that keeps the original as its cause.
"""

from __future__ import annotations

import functools

from .errors import FeError, PyptoError


def op_wrapper(func):
    """Decorate a helper that records ops (see the module docstring)."""
    @functools.wraps(func)
    def wrapper(*args, **kwargs):
        try:
            return func(*args, **kwargs)
        except PyptoError:
            raise
        except Exception as e:  # noqa: BLE001 - reported as a frontend error, the cause kept
            raise FeError(e) from e

    return wrapper


__all__ = ["op_wrapper"]
