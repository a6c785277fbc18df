"""``python -m pypto.emulate script.py args...`` / ``python -m pypto.emulate -m module args...``.

Runs a script (or a module, like ``python -m``) as ``__main__`` with NPU emulation installed,
exactly as ``python script.py args...`` would run it otherwise: ``sys.argv`` is the script and
its arguments and ``sys.path[0]`` is the script's directory (the current directory for ``-m``).
"""

from __future__ import annotations

import os
import runpy
import sys

USAGE = "usage: python -m pypto.emulate script.py [args...]\n       python -m pypto.emulate -m module [args...]"


def main(argv: list[str]) -> None:
    if not argv or argv[0] in ("-h", "--help"):
        print(USAGE, file=sys.stderr if not argv else sys.stdout)
        raise SystemExit(0 if argv else 2)
    from . import install

    install()
    if argv[0] == "-m":
        if len(argv) < 2:
            print(USAGE, file=sys.stderr)
            raise SystemExit(2)
        sys.argv = [argv[1], *argv[2:]]  # run_module puts the module's file name in argv[0]
        runpy.run_module(argv[1], run_name="__main__", alter_sys=True)
        return
    script = argv[0]
    if not os.path.isfile(script):
        print(f"python -m pypto.emulate: can't open file {script!r}: no such file", file=sys.stderr)
        raise SystemExit(2)
    sys.argv = list(argv)
    sys.path[0] = os.path.dirname(os.path.abspath(script))
    runpy.run_path(script, run_name="__main__")


if __name__ == "__main__":
    main(sys.argv[1:])
