"""The on-disk store of a sweep: an append-only journal of JSON lines. The first line names the
sweep's key (`key.sweep_key`), every other line is one finished trial. Saving a trial appends one
line with a single ``write`` on a file opened for appending: O(1) per trial, nothing rewritten, no
temporary file; a sweep interrupted mid-write leaves at most a torn last line, which reading skips.

A store written for another key (another kernel or version of it, other shapes, another space,
machine or baseline) is refused with what differs: its trials were measured on something else.
"""

from __future__ import annotations

import json
import os

from ..errors import OptionError
from .key import key_difference

FORMAT = "pypto.tune journal"
VERSION = 2


class Journal:
    """An open store at ``path`` for a sweep of key ``key``; `append` adds a trial record."""

    def __init__(self, path: str, key: dict):
        self.path, self.key = path, key
        self._fd = None

    @classmethod
    def open(cls, path: str, key: dict) -> tuple["Journal", list]:
        """The store at ``path`` (created with ``key`` if missing) and its trial records (dicts).
        Raises `OptionError` if the file is not a journal or holds another key."""
        journal = cls(path, key)
        if not os.path.exists(path) or os.path.getsize(path) == 0:
            journal._write_line({"format": FORMAT, "version": VERSION, "key": key})
            return journal, []
        header, records = read(path)
        _drop_torn_tail(path)
        if header.get("key") != _plain(key):
            stored = header.get("key") or {}
            raise OptionError(f"store {path} holds another sweep: {key_difference(stored, _plain(key))}",
                              param="store", expected="a store written by a sweep of this kernel, shapes, "
                              "space, machine and baseline",
                              got=f"a store of {stored.get('kernel', {}).get('name')}",
                              hint="give another store= file for this sweep (its trials are not this sweep's)")
        return journal, records

    def append(self, record: dict) -> None:
        """Add one trial (one line, one ``os.write``)."""
        self._write_line(record)

    def _write_line(self, obj: dict) -> None:
        data = (json.dumps(obj, default=str, separators=(",", ":")) + "\n").encode()
        if self._fd is None:
            self._fd = os.open(self.path, os.O_WRONLY | os.O_CREAT | os.O_APPEND, 0o644)
        os.write(self._fd, data)

    def close(self) -> None:
        if self._fd is not None:
            os.close(self._fd)
            self._fd = None

    def __del__(self):
        self.close()


def read(path: str) -> tuple[dict, list]:
    """(header, trial records as dicts) of the journal at ``path``; a torn last line is skipped."""
    with open(path, "rb") as f:
        lines = f.read().split(b"\n")
    try:
        header = json.loads(lines[0])
    except ValueError:
        header = None
    if not isinstance(header, dict) or header.get("format") != FORMAT:
        version = header.get("version") if isinstance(header, dict) else None
        raise OptionError(f"{path} is not a pypto.tune store of this version", param="store",
                          expected=f"a {FORMAT} (version {VERSION}), one JSON line per trial",
                          got=f"version {version!r}" if version is not None else "another file",
                          hint="results saved by an older pypto.tune have no sweep key: start a new store")
    if header.get("version") != VERSION:
        raise OptionError(f"{path} is not a pypto.tune store of this version", param="store",
                          expected=f"version {VERSION}", got=repr(header.get("version")))
    body = [(i, line) for i, line in enumerate(lines[1:], start=2) if line.strip()]
    records = []
    for n, (i, line) in enumerate(body):
        try:
            records.append(json.loads(line))
        except ValueError:
            if n == len(body) - 1:  # the last line may be torn (a write interrupted): skipped
                break
            raise OptionError(f"{path}: line {i} is not a trial record", param="store",
                              expected="one JSON object per line", got=line[:60].decode(errors="replace"))
    return header, records


def _drop_torn_tail(path: str) -> None:
    """Cut a torn last line (a write interrupted) so the next record starts on its own line."""
    with open(path, "rb+") as f:
        data = f.read()
        if data and not data.endswith(b"\n"):
            f.truncate(data.rfind(b"\n") + 1)


def _plain(key: dict) -> dict:
    """``key`` as it reads back from JSON (tuples become lists)."""
    return json.loads(json.dumps(key, default=str))
