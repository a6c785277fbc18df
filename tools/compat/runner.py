"""Running the jobs: one child process per upstream file, in parallel, each with a time limit.

The children run in a scratch copy of upstream's tree (the parts that run: ``examples``,
``models``, ``python/tests``, the root ``pytest.ini`` / ``conftest.py``, and the Python files
under ``framework/`` and ``tools/``), never in the
checkout itself: upstream's tests write files (dumps, ``output/``) into their working
directory, and the copy has no ``python/pypto``, so ``import pypto`` can only find ours.
"""

from __future__ import annotations

import json
import os
import shutil
import signal
import subprocess
import sys
import tempfile
import time
from concurrent.futures import ThreadPoolExecutor, as_completed
from dataclasses import replace
from pathlib import Path
from typing import Callable

from .results import SOC_950, FileResult, classify, combine
from .selection import Job

COPIED = ("examples", "models", "python/tests", "pytest.ini", "conftest.py")
# upstream's tests import helpers from framework/ (test_case_desc ...) and load analysis scripts
# from tools/scripts (machine_perf_trace.py)
PYTHON_ONLY = ("framework", "tools")
CHILD = Path(__file__).with_name("child.py")
SECOND_MACHINE = "A5"  # pypto's Ascend 950PR (SoC 260)


def copy_upstream(upstream: Path, dest: Path) -> Path:
    """Copy the parts of ``upstream`` that run into ``dest`` (created); of ``framework/`` only
    the Python files, which upstream's tests import as helpers."""
    ignore = shutil.ignore_patterns("__pycache__", ".pytest_cache", "output", "*.pyc")

    def python_only(directory, names):
        return [n for n in ignore(directory, names) or ()] + [
            n for n in names if not n.endswith(".py") and not os.path.isdir(os.path.join(directory, n))]

    for part in PYTHON_ONLY:
        if (upstream / part).is_dir():
            shutil.copytree(upstream / part, dest / part, ignore=python_only, symlinks=True)
    # two st files (flash_attention_mha, its _grad) climb from their folder until they find a
    # `src/` (pypto_gym's sources) and loop forever at "/" when there is none, as at 883e7df:
    # an empty one lets them import; their kernels sit next to them and need nothing from it
    (dest / "src").mkdir(parents=True, exist_ok=True)
    for part in COPIED:
        src = upstream / part
        if src.is_dir():
            shutil.copytree(src, dest / part, ignore=ignore, symlinks=True)
        elif src.is_file():
            (dest / part).parent.mkdir(parents=True, exist_ok=True)
            shutil.copy2(src, dest / part)
    return dest


def child_env(package_root: Path | None = None, machine: str = "") -> dict:
    """The child's environment: nothing of the caller's PYTHONPATH; with ``package_root`` (a
    checkout holding ``pypto/``) that checkout's package is the one imported, not the installed one;
    ``machine`` the simulated machine (``PYPTO_MACHINE``; "" the default 910B)."""
    env = {k: v for k, v in os.environ.items() if k not in ("PYTHONPATH", "PYTHONSTARTUP", "PYPTO_MACHINE")}
    if package_root is not None:
        env["PYTHONPATH"] = str(package_root)
    if machine:
        env["PYPTO_MACHINE"] = machine
    # no entry-point pytest plugins (nbval, playwright ... are ours, and slow to import)
    env.update(TILE_FWK_DEVICE_ID="0", PYTHONDONTWRITEBYTECODE="1", PYTHONUNBUFFERED="1",
               PYTEST_DISABLE_PLUGIN_AUTOLOAD="1",
               OMP_NUM_THREADS=env.get("OMP_NUM_THREADS", "1"))
    return env


def _tail(path: Path, lines: int = 1) -> str:
    try:
        text = path.read_text(errors="replace").strip().splitlines()
    except OSError:
        return ""
    return " / ".join(line.strip() for line in text[-lines:])[:300]


def run_one(job: Job, root: Path, work: Path, timeout: float, package_root: Path | None = None) -> FileResult:
    """Run one job in ``root`` (the scratch copy); logs and the result JSON go to ``work``. A test
    file with tests marked for the Ascend 950 runs again on the emulated 950 (``A5``), where
    upstream's conftest selects those instead, and the two passes make the file's result."""
    result = _run_pass(job, root, work, timeout, package_root)
    if job.mode == "pytest" and not job.machine and any(SOC_950 in t["socs"] for t in result.soc_only):
        second = _run_pass(replace(job, machine=SECOND_MACHINE), root, work, timeout, package_root)
        result = combine(result, second, SECOND_MACHINE)
    return result


def _run_pass(job: Job, root: Path, work: Path, timeout: float, package_root: Path | None) -> FileResult:
    stem = job.path.replace("/", "__") + (f"@{job.machine}" if job.machine else "")
    result_path, log_path = work / f"{stem}.json", work / f"{stem}.log"
    cmd = [sys.executable, str(CHILD), "--result", str(result_path), "--root", str(root), "--mode", job.mode,
           str(root / job.path), "--", *job.args]
    t0 = time.perf_counter()
    timed_out = False
    with open(log_path, "wb") as log:
        proc = subprocess.Popen(cmd, cwd=root, env=child_env(package_root, job.machine), stdout=log, stderr=subprocess.STDOUT,
                                stdin=subprocess.DEVNULL, start_new_session=True)
        try:
            returncode = proc.wait(timeout=timeout)
        except subprocess.TimeoutExpired:
            timed_out = True
            os.killpg(proc.pid, signal.SIGKILL)  # the child's own session: it and whatever it started
            returncode = proc.wait()
    seconds = time.perf_counter() - t0
    try:
        raw = json.loads(result_path.read_text())
    except (OSError, ValueError):
        raw = None
    return classify(job, raw, seconds=seconds, timed_out=timed_out, timeout=timeout, returncode=returncode,
                    log_tail=_tail(log_path).replace(os.path.join(str(root), ""), ""))


def run_all(jobs: list[Job], upstream: Path, *, workers: int, timeout: float, logs: Path | None = None,
            progress: Callable[[int, int, FileResult], None] | None = None,
            package_root: Path | None = None) -> list[FileResult]:
    """Run every job (``workers`` at a time) in a scratch copy of ``upstream``, importing the
    ``pypto`` of ``package_root`` (or the installed one when it is None)."""
    scratch = Path(tempfile.mkdtemp(prefix="pypto-compat-"))
    try:
        root = copy_upstream(upstream, scratch / "upstream")
        work = logs or scratch / "work"
        work.mkdir(parents=True, exist_ok=True)
        results: list[FileResult] = []
        with ThreadPoolExecutor(max_workers=max(1, workers)) as pool:
            futures = [pool.submit(run_one, job, root, work, timeout, package_root) for job in jobs]
            for future in as_completed(futures):
                results.append(future.result())
                if progress:
                    progress(len(results), len(jobs), results[-1])
        return results
    finally:
        shutil.rmtree(scratch, ignore_errors=True)
