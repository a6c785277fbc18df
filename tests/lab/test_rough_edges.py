"""The rough edges a newcomer hit: an honest last-call line after a refused call, a first call
whose parts add up to its time in the call log, labelled sums, the aicpu slider showing what
runs, and the timeline details panel's start reason."""

from __future__ import annotations

import re

import pytest
import torch

import pypto
from pypto_lab import views as V
from pypto_lab.widgets import Dashboard

D = pypto.DYNAMIC
FP32 = pypto.DT_FP32


def _text(html: str) -> str:
    import html as H

    return H.unescape(re.sub(r"<[^>]+>", " ", html))


def _make():
    @pypto.jit(runtime_options={"launch_sched_aicpu_num": 7})
    def plus_one(x: pypto.Tensor([D, 64], FP32), out: pypto.Tensor([D, 64], FP32)):
        pypto.set_vec_tile_shapes(32, 64)
        for b in pypto.loop(pypto.ceildiv(x.shape[0], 32)):
            rows = slice(b * 32, (b + 1) * 32)
            out[rows, :] = pypto.exp(x[rows, :]) + 1.0

    return plus_one


def test_refused_call_is_named_and_the_next_good_call_clears_it():
    kernel = _make()
    x, out = torch.randn(70, 64), torch.empty(70, 64)
    kernel(x, out)
    assert kernel.refused_call is None
    before = kernel.last_run
    bad = torch.zeros(70, 32)
    with pytest.raises(pypto.PyptoError):
        kernel(bad, torch.zeros(70, 32))
    assert kernel.last_run is before and torch.count_nonzero(bad) == 0
    assert kernel.refused_call.startswith("ArgumentValueError") and "'x'" in kernel.refused_call
    summary = _text(V.kernel_summary_html(kernel))
    assert "last call: refused before running, ArgumentValueError" in summary
    assert "the call before: compiled in" in summary and "last call: cache hit" not in summary
    assert "last call refused" in V.dashboard_text(kernel)
    board = Dashboard(kernel)
    assert "refused" in board.summary.value
    kernel(x, out)  # a good call: the line is about it again
    assert kernel.refused_call is None
    assert "last call: cache hit" in _text(V.kernel_summary_html(kernel))


def test_refused_first_call_is_not_called_yet():
    kernel = _make()
    with pytest.raises(pypto.PyptoError):
        kernel(torch.zeros(4, 32), torch.zeros(4, 32))
    summary = _text(V.kernel_summary_html(kernel))
    assert "refused before running" in summary and "not called yet" not in summary
    import pypto_lab
    from pypto_lab.widgets import NotCalledError

    # nothing ran, so there is nothing to show or save: the error says the call was refused, and why
    for attempt in (lambda: Dashboard(kernel), lambda: pypto_lab.save_html(kernel, "unused.html")):
        with pytest.raises(NotCalledError) as e:
            attempt()
        assert "its call was refused before running (ArgumentValueError" in str(e.value)
        assert "'x'" in str(e.value) and "not been called yet" not in str(e.value)


def test_first_call_parts_add_up_to_the_call_log():
    kernel = _make()
    x, out = torch.randn(70, 64), torch.empty(70, 64)
    kernel(x, out)
    parts = dict(V.first_call_parts(kernel))
    assert list(parts)[:3] == ["trace", "passes", "codegen"]
    assert sum(parts.values()) == pytest.approx(kernel.call_log[-1].seconds, rel=1e-9)
    compile_parts = sum(v for k, v in parts.items() if not k.startswith(("run", "call overhead")))
    assert compile_parts == pytest.approx(kernel.last_run.compile_seconds, rel=1e-9)
    V.kernel_summary_html(kernel)  # the summary looks at the timeline first: its simulation is timed
    html = _text(V.first_call_html(kernel))
    assert "simulate the timeline" in html and "the call, as in the call log (#0)" in html
    kernel(x, out)  # a hit: the compiling call is still broken down, its run and overhead as one figure
    later = dict(V.first_call_parts(kernel))
    assert list(later)[:4] == list(parts)[:4] and "run + call overhead" in " ".join(later)
    assert sum(later.values()) == pytest.approx(kernel.call_log[0].seconds, rel=1e-9)
    assert "the call, as in the call log (#0)" in _text(V.first_call_html(kernel))


def test_sums_over_cores_are_labelled():
    kernel = _make()
    kernel(torch.randn(300, 64), torch.empty(300, 64))
    line = V.stats_line(kernel.last_run.timeline)
    assert "summed over cores" in line
    m = re.search(r"critical path (\d+) tasks: ([\d,]+) cycles running \+ ([\d,]+) waiting = ([\d,]+)", line)
    assert m, line
    running, waiting, total = (int(g.replace(",", "")) for g in m.groups()[1:])
    assert running + waiting == total == kernel.last_run.timeline.stats["makespan_cycles"]


def test_aicpu_slider_shows_the_threads_that_run():
    kernel = _make()
    kernel(torch.randn(70, 64), torch.empty(70, 64))
    tl = kernel.last_run.timeline
    cap = tl.machine.max_sched_aicpu
    assert tl.options["launch_sched_aicpu_num"] == 7 > cap
    tune = Dashboard(kernel).panel("tune")
    slider = tune.controls["launch_sched_aicpu_num"]
    assert slider.value == cap and slider.max == cap and f"at most {cap}" in slider.tooltip
    lanes = {lane["name"] for lane in V.swimlane_payload(tl)[0]["lanes"] if lane["name"].startswith("sched")}
    assert len(lanes) <= slider.value


def test_details_panel_says_why_the_task_started():
    kernel = _make()
    kernel(torch.randn(300, 64), torch.empty(300, 64))
    tl, compiled = kernel.last_run.timeline, kernel.last_run.compiled
    last = max(range(len(tl.events)), key=lambda k: int(tl.events.end[k]))
    html = V.task_details_html(tl, compiled, last)
    reason = tl.explain(last, compiled.lowered)
    assert 'class="pypto-start-reason"' in html and reason.text in _text(html)
    assert f"why it started at cycle {reason.start:,}: {reason.kind}" in _text(html)
    assert "why is this late" in html


@pypto.jit
def square_plus(x: pypto.Tensor([D, 64], FP32), out: pypto.Tensor([D, 64], FP32)):
    pypto.set_vec_tile_shapes(32, 64)
    for b in pypto.loop(pypto.ceildiv(x.shape[0], 32)):
        t = x[b * 32:(b + 1) * 32, :]
        out[b * 32:(b + 1) * 32, :] = t * t + t


def test_redundant_tile_loads_are_flagged_in_the_hints_and_the_code_tab():
    from pypto.hints import redundant_loads
    from tests.golden.helper import assert_matches

    x, out = torch.randn(64, 64), torch.empty(64, 64)
    square_plus(x, out)
    assert_matches(out, x * x + x)
    compiled = square_plus.last_run.compiled
    found = redundant_loads(compiled)
    assert len(found) == 1 and "loads one tile of %x 3 times" in found[0].title
    assert "16,384 extra bytes" in found[0].detail  # two 32x64 fp32 loads too many
    leaf = found[0].leaves[0]
    assert leaf in _text(V.hints_html(square_plus.last_run)) or "redundant loads" in V.hints_html(square_plus.last_run)
    assert 'class="pypto-leaf-hints"' in V.leaf_hints_html(compiled, leaf)
    code = Dashboard(square_plus).panel("code")
    code.leaf.value = leaf
    assert "3 times" in code.code.value
    # a leaf that loads each tile once gets no such hint
    plain = _make()
    plain(torch.randn(40, 64), torch.empty(40, 64))
    assert redundant_loads(plain.last_run.compiled) == []


def test_magic_help_lists_every_tab():
    import pypto_lab
    from pypto_lab.magics import USAGE, PyptoMagics

    for tab in pypto_lab.TABS:
        assert tab in USAGE and tab in PyptoMagics.pypto.__doc__


def test_readme_hello_world_output_matches_cache_info():
    import pathlib
    import subprocess
    import sys

    root = pathlib.Path(__file__).resolve().parents[2]
    readme = (root / "README.md").read_text()
    shown = readme.split("prints (", 1)[1].split("```\n", 2)[1].splitlines()
    got = subprocess.run([sys.executable, str(root / "examples" / "hello_world.py")], capture_output=True,
                         text=True, check=True, cwd=root).stdout.splitlines()
    times = re.compile(r"compiled in [\d.]+ ms")
    assert [times.sub("", line) for line in shown[:6]] == [times.sub("", line) for line in got[:6]]


def test_every_test_run_ends_with_the_skip_reasons(tmp_path):
    """`scripts/test.sh` with or without arguments (README: "It ends with the reason of every
    skipped test") runs pytest with the project's configuration: a skipped test's reason shows."""
    import pathlib
    import subprocess
    import sys

    root = pathlib.Path(__file__).resolve().parents[2]
    (tmp_path / "test_skipping.py").write_text(
        "import pytest\n\n\ndef test_needs_a_browser():\n    pytest.skip('no chromium here (a reason)')\n")
    run = subprocess.run([sys.executable, "-m", "pytest", "-c", str(root / "pyproject.toml"), "--rootdir",
                          str(tmp_path), "-p", "no:cacheprovider", str(tmp_path / "test_skipping.py")],
                         capture_output=True, text=True, cwd=tmp_path)
    assert "1 skipped" in run.stdout, run.stdout + run.stderr
    assert "SKIPPED" in run.stdout and "no chromium here (a reason)" in run.stdout, run.stdout
