"""Issue 20 D7, "no code from data": a tensor's name is the user's text and never becomes code.

Before the fix a name was pasted into the generated leaf source: ``"a b"`` or a quote was a raw
SyntaxError, ``"P[0]"`` read the kernel's parameters, and a crafted name ran a command on every
call. Now any name is accepted, the numbers match torch, and the name reaches the source only
as word characters of a local variable's name."""

from __future__ import annotations

import ast
import re

import pytest
import torch
from hypothesis import HealthCheck, given, settings, strategies as st

import pypto
from pypto.codegen import cpu
from pypto.codegen.names import identifier_part
from tests.golden.helper import check_kernel, rand

D = pypto.DYNAMIC
FP32 = pypto.DT_FP32

HOSTILE = [
    "a b", "x'y", 'q"', "\"\"\"", "'''", "line\nbreak", "tab\there", "carriage\rreturn", "P[0]", "out",
    "ev", "B", "S", "torch", "class", "lambda", "None", "def", "1abc", "", ".", "x.y.z", "é名", "\u200b",
    "#comment", "\\", "a\\nb", ")", "(", "x = 1", "; import os", "__import__('os').system('exit 3')",
    "__import__", "__builtins__", "{P}", "%s", "a" * 300,
]


def _kernel(name):
    @pypto.jit
    def named(x: pypto.Tensor([D, 64], FP32), out: pypto.Tensor([D, 64], FP32)):
        pypto.set_vec_tile_shapes(8, 64)
        t = pypto.tensor([8, 64], FP32, name=name)
        t[:] = x + 1.0
        out[:] = t * 2.0
    return named


@pytest.fixture
def sources(monkeypatch):
    """The leaf sources generated while the test runs."""
    seen = []
    real = cpu.generate

    def capture(*args, **kwargs):
        src, consts = real(*args, **kwargs)
        seen.append((src, consts))
        return src, consts
    monkeypatch.setattr(cpu, "generate", capture)
    return seen


def _only_known_names(seen):
    """Every name the generated source reads is a parameter, a runtime helper, a constant of the
    leaf, or a local buffer (memory prefix + number + word characters): nothing from the text."""
    assert seen, "no leaf was generated"
    for src, consts in seen:
        tree = ast.parse(src)
        fn = tree.body[0]
        params = {a.arg for a in fn.args.args}
        for node in ast.walk(tree):
            if isinstance(node, ast.Name):
                n = node.id
                assert (n in params or n in cpu.RUNTIME or n in consts or n == "out"
                        or re.fullmatch(r"[a-z0-9]+[0-9]+_[A-Za-z0-9_]*", n)), f"unexpected name {n!r} in\n{src}"
            assert not isinstance(node, ast.Attribute) or node.attr not in ("system", "popen"), src


@pytest.mark.parametrize("name", HOSTILE, ids=[repr(n)[:30] for n in HOSTILE])
def test_a_hostile_tensor_name_is_only_a_name(name, sources):
    kernel = _kernel(name)
    x = rand((8, 64), seed=1)
    check_kernel(kernel, [x, torch.full((8, 64), -7.0)], (x + 1.0) * 2.0, out=1)
    _only_known_names(sources)


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(st.text(st.characters(codec="utf-8"), max_size=40))
def test_any_text_is_a_tensor_name(name):
    kernel = _kernel(name)
    x = rand((8, 64), seed=2)
    check_kernel(kernel, [x, torch.full((8, 64), -7.0)], (x + 1.0) * 2.0, out=1)


@given(st.text(max_size=60))
def test_an_identifier_part_is_ascii_word_characters(text):
    part = identifier_part(text)
    assert len(part) <= 24
    assert all(c.isascii() and (c.isalnum() or c == "_") for c in part)
    assert ("ub0_" + part).isidentifier()
