"""A call to a public op with arguments its signature cannot take: a PyptoError at the user's line.

Python's own ``TypeError`` ("matmul() got an unexpected keyword argument 'bias'") names neither
the accepted arguments nor the user's kernel line. Every public op is wrapped once, where the op
namespace is built (`public_op`); the wrapper costs nothing on a good call: only when the op
raises a ``TypeError`` that is not a pypto error does it ask whether the arguments bind to the
signature, and a call that does not bind never reached the op's body.
"""

from __future__ import annotations

import difflib
import functools
import inspect

from ..errors import ArgumentTypeError, PyptoError, user_loc

# spellings from other libraries, with where that argument goes in pypto
KEYWORD_HINTS = {
    "matmul": {"bias": "a bias is passed as extend_params={'bias_tensor': bias}",
               "scale": "a scale is passed as extend_params={'scale': s} or {'scale_tensor': t}",
               "transpose_a": "use a_trans=True", "transpose_b": "use b_trans=True"},
}
_KEEPDIM = "use keepdim=..."
for _reduction in ("sum", "amax", "amin", "prod"):
    KEYWORD_HINTS[_reduction] = {"keepdims": _KEEPDIM, "axis": "use dim=...", "axes": "use dim=..."}


def public_op(fn, namespace: str = "pypto"):
    """``fn`` with calls that do not fit its signature reported as a `pypto.ArgumentTypeError`
    (``namespace`` is where users find it: ``pypto.matmul``, ``pypto.experimental....``)."""

    @functools.wraps(fn)
    def op(*args, **kwargs):
        try:
            return fn(*args, **kwargs)
        except TypeError as e:
            if isinstance(e, PyptoError):
                raise
            problem = binding_error(fn, args, kwargs, namespace)
            if problem is None:
                raise
            raise problem from None

    op.__pypto_op__ = fn
    return op


def binding_error(fn, args: tuple, kwargs: dict, namespace: str = "pypto") -> ArgumentTypeError | None:
    """The error for a call of ``fn`` whose arguments do not bind to its signature, else None."""
    try:
        sig = inspect.signature(fn)
    except (TypeError, ValueError):
        return None
    try:
        sig.bind(*args, **kwargs)
        return None
    except TypeError as e:
        reason = str(e)
    name = fn.__name__
    public = f"{namespace}.{name}"
    params = [p for p in sig.parameters.values() if p.kind not in (p.VAR_POSITIONAL, p.VAR_KEYWORD)]
    keywords = [p.name for p in params if p.kind is not p.POSITIONAL_ONLY]
    accepts_any = any(p.kind is p.VAR_KEYWORD for p in sig.parameters.values())
    unknown = [k for k in kwargs if k not in keywords] if not accepts_any else []
    loc = user_loc()
    if unknown:
        key = unknown[0]
        hint = KEYWORD_HINTS.get(name, {}).get(key)
        if hint is None:
            close = difflib.get_close_matches(key, keywords, n=1)
            hint = f"did you mean '{close[0]}'?" if close else None
        return ArgumentTypeError(f"{public} got an unknown keyword argument '{key}'",
                                 expected="keywords " + ", ".join(keywords), got=key, param=key, hint=hint,
                                 loc=loc)
    return ArgumentTypeError(f"{public} was called with arguments that do not fit its signature: {reason}",
                             expected=f"{public}{sig}", got=_describe_call(args, kwargs), loc=loc)


def _describe_call(args, kwargs) -> str:
    parts = [type(a).__name__ for a in args] + [f"{k}=" for k in kwargs]
    return f"({', '.join(parts)})"
