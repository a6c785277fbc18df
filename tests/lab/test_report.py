"""`pypto_lab.save_html`: one self-contained HTML file with every section of the dashboard, and
the dashboard's button that writes it."""

from __future__ import annotations

import re

import pytest
import torch

import pypto
import pypto_lab
from pypto_lab.widgets import Dashboard

D = pypto.DYNAMIC
FP32 = pypto.DT_FP32


@pypto.jit
def scaled_exp(x: pypto.Tensor([D, 64], FP32), out: pypto.Tensor([D, 64], FP32)):
    pypto.set_vec_tile_shapes(32, 64)
    for b in pypto.loop(pypto.ceildiv(x.shape[0], 32)):
        rows = slice(b * 32, (b + 1) * 32)
        out[rows, :] = pypto.exp(x[rows, :]) * 0.5


@pytest.fixture(scope="module")
def kernel():
    from tests.golden.helper import assert_matches

    x, out = torch.randn(150, 64), torch.empty(150, 64)
    scaled_exp(x, out)
    assert_matches(out, torch.exp(x) * 0.5)
    return scaled_exp


def test_report_has_every_section_and_nothing_external(kernel, tmp_path):
    path = pypto_lab.save_html(kernel, tmp_path / "r.html")
    text = (tmp_path / "r.html").read_text(encoding="utf-8")
    assert path == str(tmp_path / "r.html") and text.startswith("<!DOCTYPE html>")
    for tab in ("graph", "passes", "code", "cache", "timeline"):
        assert f'data-tab="{tab}"' in text
    assert "pypto report: scaled_exp" in text and "PyptoSwimlane" in text
    assert not re.search(r'(src|href)="(https?:)?//', text), "no external resource"
    for name in (s.name for s in kernel.last_run.compiled.passes):
        assert f"<b>{name}</b>" in text
    for leaf in kernel.last_run.compiled.lowered.leaves:
        assert leaf in text
    # lazy sections are inert script text that holds no raw end tag
    for lazy in re.findall(r'<script type="text/x-pypto-lazy" class="pypto-lazy">(.*?)</script>', text, re.S):
        assert "</script" not in lazy and "<!--" not in lazy
        assert "pypto-lazy" not in lazy, "lazy sections are never nested"


def test_report_refuses_bad_input(tmp_path):
    @pypto.jit
    def never(x: pypto.Tensor([D, 64], FP32), out: pypto.Tensor([D, 64], FP32)):
        out[:] = x

    with pytest.raises(ValueError, match="not been called"):
        pypto_lab.save_html(never, tmp_path / "n.html")
    with pytest.raises(TypeError, match="pypto.jit kernel"):
        pypto_lab.save_html(object(), tmp_path / "n.html")
    assert not (tmp_path / "n.html").exists()


def test_dashboard_button_saves_and_links(kernel, tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    board = Dashboard(kernel)
    board.save_button.click()
    assert (tmp_path / "scaled_exp_report.html").is_file()
    assert 'href="scaled_exp_report.html"' in board.saved.value and "KB" in board.saved.value
    board.save_html(str(tmp_path / "missing" / "x.html"))  # an unwritable path is shown, not raised
    assert "could not save" in board.saved.value
