"""One upstream file, in its own process, under NPU emulation (the harness's child).

    python tools/compat/child.py --result OUT.json --root UPSTREAM --mode script|pytest FILE [-- ARGS...]

Installs ``pypto.emulate`` and the numeric-check counters, then runs FILE as a script (with
ARGS) or under pytest, from the current directory (the upstream root), and writes OUT.json.
"""

from __future__ import annotations

import argparse
import os
import shutil
import sys
import tempfile


def _load_harness():
    """Import this package by its own name, then take its directory off ``sys.path`` again so
    that upstream's own imports never see it."""
    tools = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
    here = os.path.dirname(os.path.abspath(__file__))
    sys.path[:] = [p for p in sys.path if os.path.abspath(p or ".") != here]
    sys.path.insert(0, tools)
    try:
        from compat import cases, checks, descendants, failures, pytest_plugin, recorder
    finally:
        sys.path.remove(tools)
    return cases, checks, descendants, failures, pytest_plugin, recorder


def main(argv: list[str]) -> int:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--result", required=True)
    parser.add_argument("--root", required=True, help="the upstream root (also the working directory)")
    parser.add_argument("--mode", choices=("script", "pytest"), required=True)
    parser.add_argument("file")
    parser.add_argument("args", nargs=argparse.REMAINDER)
    opts = parser.parse_args(argv)
    script_args = opts.args[1:] if opts.args[:1] == ["--"] else opts.args

    sys.dont_write_bytecode = True  # leave no __pycache__ behind in upstream's tree
    cases, checks, descendants, failures, pytest_plugin, recorder_mod = _load_harness()
    root = os.path.abspath(opts.root)
    rec = recorder_mod.Recorder(opts.result, opts.mode)
    rec.write()

    import pypto.emulate

    pypto.emulate.install()
    import pypto

    pypto_root = os.path.dirname(os.path.abspath(pypto.__file__))
    if pypto_root.startswith(os.path.join(root, "")):
        rec.set_error(failures.Failure("HarnessError", f"pypto resolved to upstream's copy: {pypto_root}"))
        rec.finish(pypto=pypto_root)
        return 1
    checks.install(root)
    started = tempfile.mkdtemp(prefix="pypto-compat-started-")
    descendants.share(root, started)  # checks in the Python processes the file starts count too
    path = os.path.abspath(opts.file)
    exit_code = 0
    try:
        if opts.mode == "script":
            cases.run_script(path, script_args, rec, root, pypto_root)
        else:
            sys.path.insert(0, root)  # as `python -m pytest` run from the upstream root does
            exit_code = pytest_plugin.run_pytest(path, rec, root, pypto_root)
    except SystemExit as e:
        if e.code not in (None, 0):
            rec.set_error(failures.from_exception(e, root, pypto_root))
            exit_code = e.code if isinstance(e.code, int) else 1
    except BaseException as e:  # the script's uncaught exception is the result being measured
        rec.set_error(failures.from_exception(e, root, pypto_root))
        exit_code = 1
    descendants.collect()
    shutil.rmtree(started, ignore_errors=True)
    rec.finish(pypto=pypto_root, exit_code=exit_code)
    return 0


if __name__ == "__main__":
    sys.stdout.flush()
    code = main(sys.argv[1:])
    sys.stdout.flush()
    sys.stderr.flush()
    os._exit(code)  # skip interpreter teardown: some upstream scripts leave threads or atexit work behind
