"""A failure's cause: what was raised, where, and whether it needs something out of scope.

A :class:`Failure` is built in the child process from a live exception (`from_exception`) and
travels to the parent as a dict. The parent groups failures into blockers by `cause_key` and
sets aside the ones `out_of_scope` recognises.
"""

from __future__ import annotations

import linecache
import os
import re
import sys
import traceback
from dataclasses import asdict, dataclass

# Features the harness does not expect this package to provide yet (docs/COMPAT.md explains).
# A failure needs one when its message, the upstream source line it was raised from, or the
# exception being handled when it was raised, names it.
OUT_OF_SCOPE: dict[str, re.Pattern] = {
    "pypto.pil / pypto.ir internals (C++ IR bindings)": re.compile(
        r"\bpypto\.(pil|ir)\b|pypto_impl\.ir\b|pypto_impl import [^\n]*\bir\b"
        r"|from pypto import [^\n]*\b(ir|pil)\b|module 'pypto' has no attribute '(pil|ir)'"
        r"|cannot import name '(pil|ir)' from 'pypto'|\bpil_parser\b"),
    "pypto_pro frontend": re.compile(r"\bpypto_pro\b"),
    "pypto.distributed (shmem across NPUs)": re.compile(
        r"\bpypto\.distributed\b|module 'pypto' has no attribute 'distributed'|\bshmem_\w+"),
}

_MAX_MESSAGE = 300


@dataclass(frozen=True)
class Failure:
    """One failure: exception type, first message line, and where it was raised."""

    type: str  # exception class name, or Timeout / Crash
    message: str  # the first non-empty line of the message, trimmed
    where: str = ""  # innermost frame, "path:line" (upstream-relative, or pypto/...)
    upstream_where: str = ""  # innermost frame in upstream's own files
    source_line: str = ""  # upstream's source line at upstream_where
    origin: str = ""  # pypto | upstream | torch | numpy | python | other
    context: str = ""  # ``Type: message`` of the exception being handled when this one was raised

    def to_dict(self) -> dict:
        return asdict(self)

    @staticmethod
    def from_dict(d: dict | None) -> "Failure | None":
        return None if d is None else Failure(**d)

    def headline(self) -> str:
        """``Type: message`` as a person reads it."""
        return f"{self.type}: {self.message}" if self.message else self.type

    def location(self) -> str:
        """The upstream line, and our line when the error came from inside pypto."""
        if self.origin == "pypto" and self.where and self.where != self.upstream_where:
            return f"{self.upstream_where} -> {self.where}" if self.upstream_where else self.where
        return self.upstream_where or self.where


def first_line(text: str) -> str:
    for line in str(text).splitlines():
        line = line.strip()
        if line:
            return line[:_MAX_MESSAGE]
    return ""


# an address, or a number that is not part of a name (DT_FP8E4M3, w13 keep their digits)
_BLANKS = re.compile(r"0x[0-9a-fA-F]+|(?<![\w.])-?\d+(\.\d+)?(e-?\d+)?")


def cause_key(failure: Failure) -> str:
    """The blocker a failure belongs to: its headline with numbers and addresses blanked, so the
    same missing API or the same rule hit with other sizes groups together."""
    return _BLANKS.sub(lambda m: "0x…" if m.group(0).startswith("0x") else "N", failure.headline())[:200]


def out_of_scope(failure: Failure | None) -> str | None:
    """The out-of-scope feature this failure needs, or ``None``."""
    if failure is None:
        return None
    # a failure raised while handling one that needs an out-of-scope feature (pytest.raises
    # seeing another error than the one it expects) needs that feature too
    text = f"{failure.headline()}\n{failure.source_line}\n{failure.context}"
    for feature, pattern in OUT_OF_SCOPE.items():
        if pattern.search(text):
            return feature
    return None


# ---- building a Failure from a live exception (child side) ------------------------------------
def _origin(filename: str, upstream_root: str, pypto_root: str) -> str:
    if filename.startswith(pypto_root):
        return "pypto"
    if filename.startswith(upstream_root):
        return "upstream"
    for name in ("torch", "numpy"):
        if f"{os.sep}{name}{os.sep}" in filename:
            return name
    return "python" if "lib/python" in filename or filename.startswith("<") else "other"


def _rel(filename: str, upstream_root: str, pypto_root: str) -> str:
    if filename.startswith(upstream_root):
        return os.path.relpath(filename, upstream_root)
    if filename.startswith(pypto_root):
        return "pypto/" + os.path.relpath(filename, pypto_root)
    return clean_paths(filename, upstream_root, pypto_root)


def clean_paths(text: str, upstream_root: str, pypto_root: str) -> str:
    """Paths in a message made machine-independent (reports are committed)."""
    text = text.replace(upstream_root, "").replace(os.path.dirname(pypto_root.rstrip(os.sep)) + os.sep, "")
    for prefix, name in ((sys.prefix, "<venv>"), (sys.base_prefix, "<python>")):
        text = text.replace(os.path.join(prefix, ""), name + "/")
    return text


def from_exception(exc: BaseException, upstream_root: str, pypto_root: str) -> Failure:
    """Describe ``exc`` by its innermost frame and its innermost frame in upstream's files (for
    a pypto error: the upstream kernel line it points at)."""
    upstream_root = os.path.join(os.path.abspath(upstream_root), "")
    pypto_root = os.path.join(os.path.abspath(pypto_root), "")
    frames = traceback.extract_tb(exc.__traceback__)
    where = origin = upstream_where = source = ""
    if frames:
        last = frames[-1]
        where = f"{_rel(last.filename, upstream_root, pypto_root)}:{last.lineno}"
        origin = _origin(last.filename, upstream_root, pypto_root)
    for frame in reversed(frames):
        if frame.filename.startswith(upstream_root):
            upstream_where = f"{_rel(frame.filename, upstream_root, pypto_root)}:{frame.lineno}"
            source = (frame.line or linecache.getline(frame.filename, frame.lineno)).strip()
            break
    loc = getattr(exc, "loc", None)  # a pypto error names the kernel line it is about
    loc_file = os.path.abspath(str(getattr(loc, "file", "")))
    if loc is not None and loc_file.startswith(upstream_root):
        # pypto's kernel call re-raises its errors without pypto's frames: the kernel line is
        # both where upstream's code is and the best "where" there is
        upstream_where = where = f"{_rel(loc_file, upstream_root, pypto_root)}:{loc.line}"
        source = linecache.getline(loc_file, loc.line).strip()
    if isinstance(exc, SyntaxError) and exc.filename and not frames:
        where = f"{_rel(exc.filename, upstream_root, pypto_root)}:{exc.lineno}"
    message = first_line(str(exc)) if not isinstance(exc, SystemExit) else f"exit code {exc.code!r}"
    message = clean_paths(message, upstream_root, pypto_root)
    handled = exc.__cause__ or exc.__context__  # also under "from None" (pytest.raises uses it)
    context = "" if handled is None else clean_paths(f"{type(handled).__name__}: {first_line(str(handled))}",
                                                     upstream_root, pypto_root)
    return Failure(type(exc).__name__, message, where, upstream_where, source[:_MAX_MESSAGE], origin, context)
