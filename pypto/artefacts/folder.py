"""The output folder of a process: where pass dumps, program.json, swimlanes and perf data go.

As upstream (its "output/output_<time>" folder), a process writes into one folder, made on first
use: ``<base>/output_<YYYYmmdd_HHMMSS>_<microseconds>_<pid>_<host>``, where ``<base>`` is
``$TILE_FWK_OUTPUT_DIR``, else ``$ASCEND_WORK_PATH/pypto``, else ``./output``. This package adds
``$PYPTO_DUMP_DIR``: when set, it is the folder itself (a fixed path, for scripts and tests).

A forked child gets a folder of its own (the pid is part of the name); a folder removed while the
process runs is made again by the next write; changing one of the variables (or, for the default
``./output``, the working directory) moves later writes to a new folder.

A JSON file is written whole (`replace_json`): into a fresh temporary file beside it, then renamed
over the old one, so a reader never sees half a file, and every call that writes it also moves
the folder's modification time (upstream's tests find the folder of "the last run" that way).
"""

from __future__ import annotations

import datetime
import json
import os
import secrets
import socket
import threading

FIXED_VAR = "PYPTO_DUMP_DIR"
BASE_VAR = "TILE_FWK_OUTPUT_DIR"
WORK_VAR = "ASCEND_WORK_PATH"
DEFAULT_BASE = "output"

_lock = threading.Lock()
_made: dict = {}  # (pid, variables) -> the folder made for them


def _variables() -> tuple:
    return tuple(os.environ.get(v) or "" for v in (FIXED_VAR, BASE_VAR, WORK_VAR))


def output_base() -> str:
    """The folder that per-process output folders are made in (absolute; not created here)."""
    fixed, base, work = _variables()
    if fixed:
        return os.path.dirname(os.path.abspath(fixed))
    if base:
        return os.path.abspath(base)
    if work:
        return os.path.abspath(os.path.join(work, "pypto"))
    return os.path.abspath(DEFAULT_BASE)


def _new_name() -> str:
    now = datetime.datetime.now()
    return f"output_{now:%Y%m%d_%H%M%S}_{now.microsecond:06d}_{os.getpid()}_{socket.gethostname()}"


def output_folder(create: bool = True) -> str:
    """This process's output folder (absolute), made if ``create`` and it does not exist."""
    fixed = _variables()[0]
    key = (os.getpid(), os.path.abspath(fixed) if fixed else output_base())
    with _lock:
        path = _made.get(key)
        if path is None:
            path = key[1] if fixed else os.path.join(key[1], _new_name())
            _made[key] = path
        if create:
            os.makedirs(path, exist_ok=True)
    return path


def replace_json(path: str, data, *, trailing_newline: bool = False, **dump_options) -> str:
    """Write ``data`` as JSON to ``path`` whole: a new temporary file in the same folder (an
    unpredictable name, created exclusively, with the permissions ``open`` would give) renamed
    over ``path``; returns ``path``."""
    tmp = os.path.join(os.path.dirname(path), f".{os.path.basename(path)}.{secrets.token_hex(8)}.tmp")
    fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o666)
    try:
        with os.fdopen(fd, "w", encoding="utf-8") as f:
            json.dump(data, f, **dump_options)
            if trailing_newline:
                f.write("\n")
        os.replace(tmp, path)
    except BaseException:
        try:
            os.unlink(tmp)
        except OSError:
            pass
        raise
    return path
