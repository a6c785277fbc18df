"""The Passes tab after pass verify found a mismatch: the first pass whose program gives other
numbers is marked in the table, picked in the pass list, and its values are shown side by side."""

from __future__ import annotations

import re
from types import MappingProxyType

import pytest
import torch

import pypto
import pypto_lab
from pypto.passes import pipeline
from pypto.runtime.verify import PassVerifyError
from pypto_lab import views as V
from pypto_lab.widgets import Dashboard
from tests.golden.helper import assert_matches

D = pypto.DYNAMIC
FP32 = pypto.DT_FP32


def _kernel():
    @pypto.jit(verify_options={"enable_pass_verify": True})
    def shifted(x: pypto.Tensor([D, 64], FP32), out: pypto.Tensor([D, 64], FP32)):
        pypto.set_vec_tile_shapes(16, 64)
        for b in pypto.loop(pypto.ceildiv(x.shape[0], 16)):
            out[b * 16:(b + 1) * 16, :] = x[b * 16:(b + 1) * 16, :] + 1.0
    return shifted


@pytest.fixture()
def broken(monkeypatch):
    """A kernel whose last call failed pass verify: assign_memory was made to add 3 instead of 1."""
    real = pipeline.assign_memory

    def broken_assign_memory(ops, *a, **kw):
        out, groups = real(ops, *a, **kw)
        return [op.replace(attrs=MappingProxyType({**op.attrs, "scalar": 3.0})) if op.kind == "add" else op
                for op in out], groups

    monkeypatch.setattr(pipeline, "assign_memory", broken_assign_memory)
    kernel = _kernel()
    x, out = torch.randn(40, 64), torch.zeros(40, 64)
    with pytest.raises(PassVerifyError):
        kernel(x, out)
    return kernel, x


def test_the_view_names_the_pass_and_shows_values_side_by_side(broken):
    kernel, x = broken
    compiled = kernel.last_run.compiled
    html = V.pass_bisection_html(compiled)
    assert 'data-culprit="assign_memory"' in html and "add" in html and "%out" in html
    cells = re.findall(r'<tr><td style="padding:0 6px;color:#57606a">\[(\d+), (\d+)\]</td>'
                       r'<td style="padding:0 6px">([-\d.e+]+)</td><td style="padding:0 6px;background:#ffebe9">'
                       r'([-\d.e+]+)</td></tr>', html.split('class="pypto-values"')[1])  # the first op's values
    assert cells, html
    # expected: torch's x + 1; got: the broken program's x + 3 (the add of the last loop iteration,
    # rows 32..39, named inside its fused leaf)
    assert compiled.bisection.first_bad_value.where.startswith("op add -> %add")
    for i, j, want, got in cells:
        assert_matches(torch.tensor(float(want)), x[32 + int(i), int(j)] + 1.0, loose=True)
        assert_matches(torch.tensor(float(got)), x[32 + int(i), int(j)] + 3.0, loose=True)
    table = V.pass_table_html(compiled)
    assert table.count("same numbers") == 3 and 'class="pypto-culprit"' in table
    assert re.search(r"pypto-culprit[^>]*>\u2716 assign_memory", table)


def test_the_passes_tab_picks_the_culprit(broken):
    kernel, _ = broken
    board = Dashboard(kernel, tabs="passes")
    panel = board.panel("passes")
    bad = kernel.last_run.compiled.bisection.first_bad
    assert panel.select.value == bad.index and "pass bisection" in panel.bisection.value
    assert "assign_memory" in panel.diff.value  # the diff shown is the culprit's against the pass before


def test_the_report_carries_the_bisection(broken, tmp_path):
    kernel, _ = broken
    pypto_lab.save_html(kernel, tmp_path / "r.html")
    text = (tmp_path / "r.html").read_text(encoding="utf-8")
    assert "pass bisection" in text and "assign_memory" in text


def test_without_a_bisection_the_table_is_as_before():
    kernel = _kernel()
    x, out = torch.randn(20, 64), torch.zeros(20, 64)
    kernel(x, out)
    assert_matches(out, x + 1.0)
    compiled = kernel.last_run.compiled
    assert V.pass_bisection_html(compiled) == "" and "numbers" not in V.pass_table_html(compiled)
    pypto.bisect_passes(kernel, x, out)
    assert "every pass keeps the reference's numbers" in V.pass_bisection_html(compiled)


def test_a_pass_that_cannot_run_says_why_in_the_table():
    """A pass whose program cannot be put together to run shows the reason beside "not run"."""
    from pypto.runtime.pass_bisect import PassBisection, PassCheck

    kernel = _kernel()
    x, out = torch.randn(40, 64), torch.zeros(40, 64)
    compiled = kernel.inspect(x, out)
    checks = tuple(PassCheck(i, p.name, p.level, "ran", True) for i, p in enumerate(compiled.passes))
    checks = tuple(PassCheck(c.index, c.name, c.level, "not run: this version was compiled only up to a stage", None)
                   if c.name == "partition" else c for c in checks)
    compiled.bisection = PassBisection(compiled.name, checks, 1e-3, 1e-3)
    table = V.pass_table_html(compiled)
    row = next(r for r in table.split("<tr") if ">partition<" in r)
    assert "not run" in row and 'class="pypto-not-run"' in row and "compiled only up to a stage" in row
    assert table.count('class="pypto-not-run"') == 1


def test_elements_not_compared_are_counted_beside_the_verdict():
    """An op result with elements computed from unwritten memory (``ValueCheck.unspecified``) shows
    how many were not compared, beside its pass's verdict."""
    from pypto.runtime.pass_bisect import PassBisection, PassCheck, ValueCheck

    kernel = _kernel()
    x, out = torch.randn(40, 64), torch.zeros(40, 64)
    compiled = kernel.inspect(x, out)
    past_tail = ValueCheck("add", "t", None, True, 0.0, (40, 64), unspecified=1234)
    checks = tuple(PassCheck(i, p.name, p.level, "ran", True, values=(past_tail,) if p.name == "expand" else ())
                   for i, p in enumerate(compiled.passes))
    compiled.bisection = PassBisection(compiled.name, checks, 1e-3, 1e-3)
    table = V.pass_table_html(compiled)
    row = next(r for r in table.split("<tr") if ">expand<" in r)
    assert 'class="pypto-unspecified"' in row and "1,234 elements from unwritten memory not compared" in row
    assert table.count('class="pypto-unspecified"') == 1


def test_flash_attention_with_a_tail_runs_every_pass_and_compares_every_element():
    """seq 100 (a partial last query block): every pass has a verdict, none is "not run", and no
    op result past the tail is computed from unwritten memory (issue 20: an elementwise result
    is valid only where every operand is), so nothing is left out of the comparison."""
    import pathlib
    import sys

    sys.path.insert(0, str(pathlib.Path(__file__).resolve().parents[2] / "examples"))
    import flash_attention as fa

    g = torch.Generator().manual_seed(3)
    q, k, v = (torch.randn(2, 100, fa.D, generator=g) for _ in range(3))
    args = (q, k, v, torch.zeros(2, 100, fa.D))
    b = pypto.bisect_passes(fa.flash_attention, *args)
    compiled = fa.flash_attention.inspect(*args)
    table = V.pass_table_html(compiled)
    assert b.ok and "not run" not in table and 'class="pypto-culprit"' not in table
    assert table.count("same numbers") == len(compiled.passes)
    assert 'class="pypto-unspecified"' not in table and "not compared" not in table
    assert "every pass keeps the reference's numbers" in V.pass_bisection_html(compiled)
