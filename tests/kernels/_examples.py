"""Fresh copies of the repository's ``examples/`` modules for the kernel tests.

Each call executes the file again under its own module name, so a test gets kernels with empty
caches (plans, replays, workspaces) whatever other tests ran before it."""

from __future__ import annotations

import importlib.util
import pathlib

EXAMPLES = pathlib.Path(__file__).resolve().parents[2] / "examples"


def load_example(name: str, module_name: str | None = None):
    """``examples/<name>.py`` as a new module (named ``module_name``, default ``example_<name>``)."""
    spec = importlib.util.spec_from_file_location(module_name or f"example_{name}", EXAMPLES / f"{name}.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module
