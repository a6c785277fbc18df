"""What the README tells a newcomer works as written (issue 11, item 13)."""

from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path

import torch

import pypto
from pypto.ops.fixpipe import EXTEND_KEYS

ROOT = Path(__file__).resolve().parents[2]
README = (ROOT / "README.md").read_text()


def test_options_describe_as_the_readme_spells_it():
    assert "`pypto.options.describe()`" in README
    table = pypto.options.describe()  # pypto.options is the scope function; describe hangs off it
    assert table.splitlines()[0].startswith("| option |") and "`runtime.run_mode`" in table
    with pypto.options.forced(runtime_options={"device_sched_mode": 2}):
        assert pypto.get_runtime_options()["device_sched_mode"] == 2


def test_repo_scripts_are_run_with_the_venv_python():
    # a bare `python examples/...` fails unless .venv is active: the README gives the venv's python
    bare = re.findall(r"(?<![\w/.])python (?:examples|bench|tools)/\S+", README)
    assert not bare, bare


def test_hello_world_prints_what_the_readme_shows():
    block = README.split("examples/hello_world.py", 1)[1].split("```", 2)[1].splitlines()[1:4]
    done = subprocess.run([sys.executable, str(ROOT / "examples" / "hello_world.py")], capture_output=True,
                          text=True, timeout=120, cwd=ROOT / "examples")
    assert done.returncode == 0, done.stderr
    assert done.stdout.splitlines()[:3] == block


def test_cache_info_versions_is_an_attribute():
    @pypto.jit
    def twice(x: pypto.Tensor([pypto.STATIC], pypto.DT_FP32), out: pypto.Tensor([pypto.STATIC], pypto.DT_FP32)):
        out[:] = x * 2.0

    for n in (2, 3, 3):
        twice(torch.ones(n), torch.empty(n))
    info = twice.cache_info()
    assert info.versions == 2 == len(info.entries)
    assert f"versions={info.versions}" in str(info)


def test_matmul_epilogue_spelling_is_documented():
    assert "extend_params" in README
    for key in EXTEND_KEYS:
        assert f'"{key}"' in README, key
