"""Fixtures for the real-browser tests: a throw-away JupyterLab server and a headless chromium.

See the module docstring of ``test_lab_notebooks.py`` for what is tested and how to run it.

* ``lab_server`` (module scope) copies ``notebooks/`` into a temporary folder, strips the
  copies' stored outputs/execution counts/widget state, and starts JupyterLab there, bound to
  127.0.0.1 on a free port with a random token. HOME, the Jupyter config/data/runtime dirs,
  IPython's dir and JupyterLab's user-settings and workspaces dirs all point into that temporary
  folder, so nothing in the repository or the venv is written to.
  The user settings silence the news/update pop-up and attach every notebook cell to the DOM
  (``windowingMode: none``), so the test can see all prompts and outputs.
* ``browser`` (module scope) is Debian's chromium (``/usr/bin/chromium``, or ``$PYPTO_CHROMIUM``)
  driven by playwright; no browser is ever downloaded.

Both are shut down by their fixture's teardown, also when a test fails or on Ctrl-C; if pytest
itself is killed, the server gets SIGTERM (PR_SET_PDEATHSIG) and chromium exits with playwright's
driver.
"""

from __future__ import annotations

import json
import os
import secrets
import shutil
import signal
import socket
import subprocess
import sys
import threading
import time
import urllib.error
import urllib.request
from dataclasses import dataclass
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]
DEFAULT_CHROMIUM = "/usr/bin/chromium"
CHROMIUM_ARGS = [
    "--headless",
    "--no-sandbox",
    "--disable-gpu",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
    "--no-first-run",
    "--disable-dev-shm-usage",
]
SERVER_START_TIMEOUT = 60.0

# JupyterLab user settings (one file per plugin, under JUPYTERLAB_SETTINGS_DIR).
LAB_USER_SETTINGS = {
    # no "get notified about Jupyter news?" toast, no update check, no toasts at all
    "@jupyterlab/apputils-extension/notification": {
        "fetchNews": "false",
        "checkForUpdates": False,
        "doNotDisturbMode": True,
    },
    # attach all cells to the DOM (the default lazily renders off-screen cells)
    "@jupyterlab/notebook-extension/tracker": {"windowingMode": "none"},
}


def _in_ci() -> bool:
    """True where the browser test must run (CI installs chromium via PYPTO_SETUP_CHROMIUM=1)."""
    return os.environ.get("PYPTO_SETUP_CHROMIUM") == "1" or bool(os.environ.get("CI"))


def _unavailable(reason: str):
    """Skip locally; fail in CI, where the environment promises chromium and playwright."""
    if _in_ci():
        pytest.fail(f"{reason} (this is CI: scripts/setup.sh with PYPTO_SETUP_CHROMIUM=1 "
                    "should have installed it)", pytrace=False)
    pytest.skip(reason)


def chromium_path() -> str | None:
    """$PYPTO_CHROMIUM, else /usr/bin/chromium, else `chromium` on PATH; None if none exists."""
    for candidate in (os.environ.get("PYPTO_CHROMIUM"), DEFAULT_CHROMIUM, shutil.which("chromium")):
        if candidate and os.path.isfile(candidate) and os.access(candidate, os.X_OK):
            return candidate
    return None


def _free_port() -> int:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def _die_with_parent() -> None:
    """In the child before exec (Linux): get SIGTERM when the process that started us dies, so a
    killed pytest cannot leave a JupyterLab behind (its kernels follow it: ipykernel polls its
    parent). PDEATHSIG fires when the forking *thread* ends, hence only used from the main thread."""
    try:
        import ctypes

        PR_SET_PDEATHSIG = 1
        ctypes.CDLL(None, use_errno=True).prctl(PR_SET_PDEATHSIG, signal.SIGTERM)
    except Exception:
        pass


def _write_user_settings(settings_dir: Path) -> None:
    for plugin, values in LAB_USER_SETTINGS.items():
        path = settings_dir / f"{plugin}.jupyterlab-settings"
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(json.dumps(values, indent=2), encoding="utf-8")


class PortTaken(RuntimeError):
    """The probed free port was taken before JupyterLab could bind it."""


@dataclass
class LabServer:
    url: str  # http://127.0.0.1:<port>
    token: str
    root: Path  # the server's root_dir: a copy of notebooks/
    log_path: Path
    proc: subprocess.Popen

    def lab_url(self, notebook: str, workspace: str) -> str:
        """URL opening `notebook` in a fresh, named workspace (nothing restored from before)."""
        return f"{self.url}/lab/workspaces/{workspace}/tree/{notebook}?reset&token={self.token}"

    def api(self, path: str, method: str = "GET") -> object:
        req = urllib.request.Request(f"{self.url}{path}", method=method,
                                     headers={"Authorization": f"token {self.token}"})
        with urllib.request.urlopen(req, timeout=10) as resp:
            body = resp.read()
        return json.loads(body) if body else None

    def log_tail(self, n: int = 60) -> str:
        try:
            lines = self.log_path.read_text(encoding="utf-8", errors="replace").splitlines()
        except OSError:
            return "(no server log)"
        return "\n".join(lines[-n:])


def _start_lab(base: Path, root: Path, attempt: int) -> LabServer:
    port, token = _free_port(), secrets.token_hex(24)
    home = base / "home"
    dirs = {
        "HOME": home,
        "JUPYTER_CONFIG_DIR": home / ".jupyter",
        "JUPYTER_DATA_DIR": home / ".local/share/jupyter",
        "JUPYTER_RUNTIME_DIR": base / "runtime",
        "IPYTHONDIR": home / ".ipython",
        "JUPYTERLAB_SETTINGS_DIR": base / "lab-user-settings",
        "JUPYTERLAB_WORKSPACES_DIR": base / "lab-workspaces",
        "MPLCONFIGDIR": home / ".config/matplotlib",
    }
    for d in dirs.values():
        d.mkdir(parents=True, exist_ok=True)
    _write_user_settings(dirs["JUPYTERLAB_SETTINGS_DIR"])

    env = dict(os.environ)
    env.update({k: str(v) for k, v in dirs.items()})
    env.update({
        "JUPYTER_PLATFORM_DIRS": "1",
        "PYTHONUNBUFFERED": "1",
        # the venv's bin first (kernel's `python`), then the system dirs (graphviz's `dot`)
        "PATH": os.pathsep.join([str(Path(sys.executable).parent), env.get("PATH", "/usr/bin:/bin")]),
    })
    env.pop("JUPYTER_TOKEN", None)
    env.pop("JUPYTER_PATH", None)

    log_path = base / f"jupyterlab-{attempt}.log"
    cmd = [
        sys.executable, "-m", "jupyterlab",
        "--no-browser",
        "--ServerApp.ip=127.0.0.1",
        f"--ServerApp.port={port}",
        "--ServerApp.port_retries=0",
        f"--IdentityProvider.token={token}",
        f"--ServerApp.root_dir={root}",
        "--ServerApp.terminals_enabled=False",
        "--LabApp.check_for_updates_class=jupyterlab.NeverCheckForUpdate",
        "--LabApp.news_url=None",
    ]
    if hasattr(os, "geteuid") and os.geteuid() == 0:  # containers / CI often run as root
        cmd.append("--allow-root")
    # The server stays in pytest's process group, so Ctrl-C or a job kill reaches it too.
    preexec = (_die_with_parent if sys.platform.startswith("linux")
               and threading.current_thread() is threading.main_thread() else None)
    log = open(log_path, "w", encoding="utf-8")
    try:
        proc = subprocess.Popen(cmd, cwd=root, env=env, stdout=log, stderr=subprocess.STDOUT,
                                stdin=subprocess.DEVNULL, preexec_fn=preexec)
    finally:
        log.close()  # the child holds its own copy of the descriptor
    server = LabServer(url=f"http://127.0.0.1:{port}", token=token, root=root,
                       log_path=log_path, proc=proc)

    deadline = time.monotonic() + SERVER_START_TIMEOUT
    while time.monotonic() < deadline:
        if proc.poll() is not None:
            tail = server.log_tail()
            error = PortTaken if "already in use" in tail else RuntimeError
            raise error(f"JupyterLab exited with code {proc.returncode}:\n{tail}")
        try:
            server.api("/api/status")
            urllib.request.urlopen(f"{server.url}/lab?token={token}", timeout=10).read()
            return server
        except (urllib.error.URLError, ConnectionError, OSError):
            time.sleep(0.25)
    _stop_lab(server)
    raise RuntimeError(f"JupyterLab did not answer within {SERVER_START_TIMEOUT:.0f}s:\n"
                       f"{server.log_tail()}")


def _stop_lab(server: LabServer) -> None:
    """Shut the server (and, through it, its kernels) down: REST, then SIGTERM, then SIGKILL."""
    proc = server.proc
    if proc.poll() is None:
        try:
            server.api("/api/shutdown", method="POST")
        except Exception:
            pass
        try:
            proc.wait(timeout=15)
        except subprocess.TimeoutExpired:
            pass
    for stop, wait in ((proc.terminate, 10), (proc.kill, 5)):  # SIGTERM: a clean shutdown
        if proc.poll() is not None:
            break
        stop()
        try:
            proc.wait(timeout=wait)
        except subprocess.TimeoutExpired:
            pass


def _strip_notebook(path: Path) -> None:
    """Drop the stored outputs, execution counts and saved widget state of a notebook copy, so
    everything the browser shows afterwards comes from this run (not from the file)."""
    nb = json.loads(path.read_text(encoding="utf-8"))
    for cell in nb.get("cells", []):
        if cell.get("cell_type") == "code":
            cell["outputs"], cell["execution_count"] = [], None
    nb.get("metadata", {}).pop("widgets", None)
    path.write_text(json.dumps(nb, indent=1), encoding="utf-8")


def notebooks_source() -> Path:
    """The folder whose notebooks the test runs: notebooks/ (or $PYPTO_BROWSER_NOTEBOOKS)."""
    return Path(os.environ.get("PYPTO_BROWSER_NOTEBOOKS") or REPO / "notebooks").resolve()


@pytest.fixture(scope="session")
def notebooks_dir() -> Path:
    return notebooks_source()


@pytest.fixture(scope="module")
def lab_server(tmp_path_factory):
    """A JupyterLab server on 127.0.0.1 serving a temporary copy of notebooks/."""
    base = tmp_path_factory.mktemp("jupyterlab")
    root = base / "notebooks"
    src = notebooks_source()
    shutil.copytree(src, root, ignore=shutil.ignore_patterns(".ipynb_checkpoints", "__pycache__"))
    for nb in root.rglob("*.ipynb"):
        _strip_notebook(nb)

    server, errors = None, []
    for attempt in range(3):  # a free port can be taken between probing and binding it
        try:
            server = _start_lab(base, root, attempt)
            break
        except PortTaken as exc:
            errors.append(str(exc))
        except RuntimeError as exc:
            errors.append(str(exc))
            break
    if server is None:
        pytest.fail("could not start JupyterLab:\n" + "\n\n".join(errors), pytrace=False)
    try:
        yield server
    finally:
        _stop_lab(server)


@pytest.fixture(scope="module")
def browser():
    """Debian's chromium, headless, driven by playwright (never downloads a browser)."""
    exe = chromium_path()
    if exe is None:
        _unavailable(f"chromium not found ({DEFAULT_CHROMIUM} absent, none on PATH, "
                     "$PYPTO_CHROMIUM unset); install it: apt-get install chromium")
    try:
        from playwright.sync_api import sync_playwright
    except ImportError:
        _unavailable("the playwright python package is not installed (pip install playwright)")

    pw = sync_playwright().start()
    try:
        browser = pw.chromium.launch(executable_path=exe, headless=True, args=CHROMIUM_ARGS)
        try:
            yield browser
        finally:
            browser.close()
    finally:
        pw.stop()
