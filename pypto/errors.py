"""The exception hierarchy of pypto.

Every error a user can cause derives from :class:`PyptoError` and from the builtin that matches
its kind (``TypeError`` for a wrong type or dtype, ``ValueError`` for a wrong value or shape), so
``except ValueError`` keeps working for callers that do not know pypto.

A message says what was wrong (naming the parameter or option), what was expected, what came,
and where in the user's kernel it happened.
"""

from __future__ import annotations

import enum
import os
import sys
from dataclasses import dataclass

_PACKAGE_DIR = os.path.dirname(os.path.abspath(__file__))


def notebook_cell_name(file: str) -> str | None:
    """``"Cell In[4]"`` when ``file`` is the file name IPython gave a notebook cell's code (a
    ``/tmp/ipykernel_NNN/NNN.py`` path under ipykernel), else None: a location then reads as the
    notebook shows it. IPython is consulted only when it is already loaded; pypto never imports it."""
    ipython = sys.modules.get("IPython")
    get_shell = getattr(ipython, "get_ipython", None)
    shell = get_shell() if get_shell is not None else None
    name_of = getattr(getattr(shell, "compile", None), "format_code_name", None)
    if name_of is None:
        return None
    try:
        named = name_of(file)  # ("Cell", "In[4]") for a cell IPython compiled
    except Exception:  # noqa: BLE001 - naming is cosmetic: never hide the error being reported
        return None
    return " ".join(named) if named else None


@dataclass(frozen=True)
class SourceLoc:
    """A place in the user's source: file, line and the enclosing function."""

    file: str
    line: int
    function: str = ""

    def __str__(self) -> str:
        cell = notebook_cell_name(self.file)
        return f"{cell}, line {self.line}" if cell else f"{os.path.basename(self.file)}:{self.line}"

    def source_line(self) -> str:
        import linecache

        return linecache.getline(self.file, self.line).strip()

    def where(self) -> str:
        """``path:line``, or ``Cell In[N], line M`` for the code of a notebook cell."""
        cell = notebook_cell_name(self.file)
        return f"{cell}, line {self.line}" if cell else f"{self.file}:{self.line}"

    def describe(self) -> str:
        text = self.source_line()
        named = self.function and not self.function.startswith("<")  # not "<module>"
        where = self.where() + (f" in {self.function}" if named else "")
        return f"{where}\n    {text}" if text else where


def user_loc(depth: int = 1, also_skip: tuple = ()) -> SourceLoc | None:
    """The innermost frame outside the pypto package (and the folders ``also_skip``): the user's
    kernel line being traced."""
    skip = (_PACKAGE_DIR, "<frozen", *also_skip)
    frame = sys._getframe(depth)
    while frame is not None:
        filename = frame.f_code.co_filename
        if not filename.startswith(skip):
            return SourceLoc(filename, frame.f_lineno, frame.f_code.co_name)
        frame = frame.f_back
    return None


class ExternalError(enum.IntEnum):
    """Upstream's numbering of user-caused errors (the low bits of an error code ``0xF0xxxx``).

    ``UNKNOWN`` is another name of ``COMMON_EXTERNAL_ERROR``.
    """

    COMMON_EXTERNAL_ERROR = 0xFFFF
    INVALID_TYPE = 0x1
    INVALID_VAL = 0x2
    RUNTIME_ERROR = 0x3
    NAME_ERROR = 0x4
    NOT_IMPLEMENTED_ERROR = 0x5
    KEY_ERROR = 0x6
    INVALID_OPERATION = 0x7
    OUT_OF_RANGE = 0x8
    BAD_FD = 0x9
    DYNAMIC_SHAPE_COMPUTE_UNSUPPORTED = 0xA
    INVALID_SHAPE = 0xB
    INVALID_TILE = 0xC
    INVALID_FORMAT = 0xD
    UNKNOWN = 0xFFFF


# An error's code: 0xF00000 | the ExternalError of the builtin it corresponds to.
_FRONTEND_CODE = 0xF00000
# (NotImplementedError is a RuntimeError: it comes first)
_CODE_OF_BUILTIN = ((TypeError, ExternalError.INVALID_TYPE), (ValueError, ExternalError.INVALID_VAL),
                    (NotImplementedError, ExternalError.NOT_IMPLEMENTED_ERROR),
                    (RuntimeError, ExternalError.RUNTIME_ERROR), (NameError, ExternalError.NAME_ERROR),
                    (KeyError, ExternalError.KEY_ERROR), (IndexError, ExternalError.OUT_OF_RANGE))
_UNKNOWN_CODE = _FRONTEND_CODE | ExternalError.UNKNOWN
_NO_MESSAGE = object()


def error_code(kind: type) -> int:
    """Upstream's error code for an exception class (``0xF00002`` for ValueError, ...)."""
    for builtin, external in _CODE_OF_BUILTIN:
        if issubclass(kind, builtin):
            return _FRONTEND_CODE | external
    return _UNKNOWN_CODE


class PyptoError(Exception):
    """Base class of every error pypto raises on purpose.

    Attributes: ``what`` (the message head), ``expected``, ``got``, ``param`` (the parameter or
    option it concerns), ``loc`` (a :class:`SourceLoc` in the user's kernel, when known) and
    ``code`` (upstream's error number).

    Upstream's spellings work too: ``PyptoError(0xF00001, "message")`` and, for the subclasses
    in :mod:`pypto.error`, ``FeError(ValueError("message"))`` (which wraps that exception).
    """

    def __init__(self, what, msg=_NO_MESSAGE, *, expected=None, got=None, param: str | None = None,
                 loc: SourceLoc | None = None, hint: str | None = None):
        code = None
        if msg is not _NO_MESSAGE:  # upstream's PyptoError(err_code, msg)
            if isinstance(what, bool) or not isinstance(what, int):
                raise TypeError(f"PyptoError(err_code, msg) needs an int error code, got {what!r}")
            code, what = what, msg
        if isinstance(what, BaseException):  # upstream's FeError(ValueError("...")): wrap it
            code = code if code is not None else error_code(type(what))
            text = str(what)
            what = text if "ErrCode" in text else f"{type(what).__name__}: {text}"
        if code is not None and "ErrCode" not in str(what):
            what = f"ErrCode: {code:X}, {what}"
        self.code = code if code is not None else error_code(type(self))
        self.what = what
        self.expected = expected
        self.got = got
        self.param = param
        self.loc = loc
        self.hint = hint
        super().__init__(self._format())

    def _format(self) -> str:
        lines = [str(self.what)]
        if self.expected is not None:
            lines.append(f"  expected: {self.expected}")
        if self.got is not None:
            lines.append(f"  got:      {self.got}")
        if self.hint:
            lines.append(f"  hint: {self.hint}")
        if self.loc is not None:
            lines.append(f"  at {self.loc.describe()}")
        return "\n".join(lines)

    def with_loc(self, loc: SourceLoc | None) -> "PyptoError":
        """Attach a source location if the error has none yet (returns self)."""
        if self.loc is None and loc is not None:
            self.loc = loc
            self.args = (self._format(),)
        return self

    def __reduce__(self):  # keep pickling (multiprocessing, nbval) working
        return (_rebuild, (type(self), self.what, self.expected, self.got, self.param, self.loc, self.hint))


def _rebuild(cls, what, expected, got, param, loc, hint):
    return cls(what, expected=expected, got=got, param=param, loc=loc, hint=hint)


# ---- upstream's error families (``pypto.error``) ------------------------------------------------------

class PyptoGeneralError(PyptoError):
    """Upstream's general error; ``PyptoGeneralError(ValueError("..."))`` wraps an exception."""


class FeError(PyptoGeneralError):
    """An error of the frontend: the kernel's code, its arguments, annotations, shapes or dtypes."""


class PyptoRtError(PyptoGeneralError):
    """An error of the runtime (device calls, running a compiled function)."""


class PassError(PyptoGeneralError):
    """An error of the pass configuration or of a compile pass."""


class PassConfigError(PassError, TypeError):
    """A pass configuration call with an argument of the wrong type (``pypto.set_pass_config`` ...)."""


class VerifyError(PyptoGeneralError):
    """An error of pass verification (``verify_options``)."""


class VerifyDataError(VerifyError, ValueError):
    """Golden data for verification that cannot be compared with its tensor (dtype, shape)."""


class ParserError(PyptoError):
    """Upstream's parser error, ``ParserError(node, msg)``: ``node`` is the AST node concerned."""

    def __init__(self, node, msg=_NO_MESSAGE, **kw):
        if msg is _NO_MESSAGE:  # our own keyword form: ParserError("what", expected=...)
            node, msg = None, node
        super().__init__(msg, **kw)
        self.node = node


class RenderedParserError(ParserError):
    """A parser error whose message already shows the source."""


# ---- the errors pypto raises ---------------------------------------------------------------------------

class ArgumentTypeError(FeError, TypeError):
    """A kernel argument of the wrong kind or dtype (for example a list where a tensor belongs)."""


class ArgumentValueError(FeError, ValueError):
    """A kernel argument whose shape or value does not match its annotation or signature."""


class ArgumentBindingError(ArgumentValueError, TypeError):
    """A call whose arguments do not bind to the kernel's parameters (one missing, too many, an
    unknown keyword, one given twice): a TypeError as Python's own binding raises, and still the
    `ArgumentValueError` pypto raised before."""


class AnnotationError(FeError, ParserError, TypeError):
    """A kernel signature annotation that pypto cannot understand."""


class UnsupportedSignatureError(FeError, ParserError, NotImplementedError):
    """A kernel signature form the PyPTO language does not support (``*args``, ``**kwargs``)."""

    def __init__(self, what, msg=_NO_MESSAGE, **kw):
        super().__init__(what, msg, **kw)
        if msg is _NO_MESSAGE and "ErrCode" not in str(self.what):  # the code is part of the message
            self.what = f"ErrCode: {self.code:X}, {self.what}"
            self.args = (self._format(),)


class OptionError(FeError, ValueError):
    """An unknown option, or a value out of the option's type or range."""


class OptionTypeError(OptionError, TypeError):
    """An option value of the wrong type (a str where an int belongs ...); also a ValueError, so
    ``except ValueError`` written for :class:`OptionError` keeps catching it."""


class KernelSyntaxError(FeError, ParserError, ValueError):
    """Kernel code that the PyPTO language does not allow (for example ``break`` in pypto.loop)."""


class ShapeError(FeError, ValueError):
    """Operand shapes that an operation cannot accept (rank, broadcasting, sizes, tile shapes)."""


class DTypeError(FeError, TypeError):
    """Operand dtypes that an operation cannot accept."""


class UnsupportedDTypeError(DTypeError):
    """A dtype that upstream PyPTO names but this build does not support."""


class BackendUnavailableError(PyptoRtError, RuntimeError):
    """A run mode (the NPU) that this build has no backend for."""


class KernelRuntimeError(PyptoRtError, RuntimeError):
    """A failure while the compiled program runs (for example an element read out of range)."""


class MemoryBudgetError(PyptoRtError, MemoryError):
    """A call that would allocate more host memory than ``runtime_options['memory_budget_mb']``
    allows (a dense copy of a strided argument, the call's workspace), refused before allocating."""
