"""The lab's pure views on real kernels: every view returns HTML/SVG/figures with the expected
content, handles missing objects, and reads upstream swimlane traces."""

from __future__ import annotations

import ast
import base64
import json
import pathlib
import re
import shutil

import numpy as np
import pytest
import torch

import pypto
from pypto_lab import views as V
from pypto_lab.views import graph as graph_view

D = pypto.DYNAMIC
S = pypto.STATIC
FP32 = pypto.DT_FP32
HAVE_DOT = shutil.which("dot") is not None


@pypto.jit
def tiled_add(x: pypto.Tensor([D, S], FP32), y: pypto.Tensor([D, S], FP32), out: pypto.Tensor([D, S], FP32)):
    pypto.set_vec_tile_shapes(32, 64)
    for b in pypto.loop(pypto.ceildiv(x.shape[0], 32)):
        rows = slice(b * 32, (b + 1) * 32)
        out[rows, :] = x[rows, :] + y[rows, :]


@pypto.jit(runtime_options={"valid_shape_optimize": 1})
def row_softmax(x: pypto.Tensor([D, 64], FP32), out: pypto.Tensor([D, 64], FP32)):
    pypto.set_vec_tile_shapes(16, 64)
    for b in pypto.loop(pypto.ceildiv(x.shape[0], 16)):
        out[b * 16:(b + 1) * 16, :] = pypto.softmax(x[b * 16:(b + 1) * 16, :], dim=-1)


@pypto.jit
def small_matmul(a: pypto.Tensor([64, 64], FP32), b: pypto.Tensor([64, 64], FP32),
                 out: pypto.Tensor([64, 64], FP32)):
    pypto.set_cube_tile_shapes([32, 32], [64, 64], [32, 32])
    out[:] = pypto.matmul(a, b)


@pypto.jit
def never_called(x: pypto.Tensor([D, 64], FP32), out: pypto.Tensor([D, 64], FP32)):
    out[:] = x + 1.0


def _rand(*shape, seed):
    return torch.randn(*shape, generator=torch.Generator().manual_seed(seed))


@pytest.fixture(scope="module")
def add_kernel():
    """tiled_add called with two static widths (64 twice, then 128): two versions, one hit."""
    tiled_add.cache_clear()
    for cols in (64, 64, 128):
        x, y = _rand(100, cols, seed=1), _rand(100, cols, seed=2)
        out = torch.empty(100, cols)
        tiled_add(x, y, out)
        torch.testing.assert_close(out, x + y)
    return tiled_add, tiled_add.inspect(x, y, out)


@pytest.fixture(scope="module")
def softmax_kernel():
    row_softmax.cache_clear()
    x = _rand(40, 64, seed=3)
    out = torch.empty(40, 64)
    row_softmax(x, out)
    torch.testing.assert_close(out, torch.softmax(x, dim=-1))
    return row_softmax, row_softmax.inspect(x, out)


@pytest.fixture(scope="module")
def matmul_kernel():
    small_matmul.cache_clear()
    a, b = _rand(64, 64, seed=4), _rand(64, 64, seed=5)
    out = torch.empty(64, 64)
    small_matmul(a, b, out)
    torch.testing.assert_close(out, a @ b, rtol=1e-4, atol=1e-4)
    return small_matmul, small_matmul.inspect(a, b, out)


@pytest.fixture(scope="module", params=["add", "softmax", "matmul"])
def kernel(request, add_kernel, softmax_kernel, matmul_kernel):
    return {"add": add_kernel, "softmax": softmax_kernel, "matmul": matmul_kernel}[request.param]


# ---- graphs ------------------------------------------------------------------------------------------

def test_levels_in_pipeline_order(kernel):
    assert V.levels(kernel[1]) == ["tensor", "tile", "block", "execute"]


def test_graph_svg_for_every_level(kernel):
    compiled = kernel[1]
    for level in V.levels(compiled):
        dot = V.level_dot(compiled, level)
        assert dot.lstrip().startswith("digraph")
        out = V.graph_svg(compiled, level)
        if HAVE_DOT:
            assert out.startswith("<svg") and out.rstrip().endswith("</svg>")
        else:
            assert "<pre" in out


def test_level_dot_is_the_last_snapshot_of_the_level(add_kernel):
    compiled = add_kernel[1]
    tile = [p for p in compiled.passes if p.level == "tile"]
    assert V.level_dot(compiled, "tile") == tile[-1].to_dot()
    with pytest.raises(ValueError, match="tensor"):
        V.level_dot(compiled, "bogus")


def test_dot_to_svg_never_crashes(monkeypatch):
    broken = V.dot_to_svg("digraph { a -> <b")
    assert "<pre" in broken and "Graphviz" in broken and "&lt;b" in broken
    monkeypatch.setattr(graph_view.shutil, "which", lambda name: None)
    graph_view.dot_to_svg.cache_clear()
    out = V.dot_to_svg('digraph "g" { a -> b }')
    assert "not installed" in out and "<pre" in out and "a -&gt; b" in out
    graph_view.dot_to_svg.cache_clear()


# ---- passes ------------------------------------------------------------------------------------------

def test_pass_table_lists_every_pass_and_a_total(kernel):
    compiled = kernel[1]
    html = V.pass_table_html(compiled)
    for p in compiled.passes:
        assert f">{p.name}<" in html
    assert html.count("<tr>") == len(compiled.passes) + 2  # header, rows, total
    assert f"total ({len(compiled.passes)} passes)" in html and " ms<" in html


def _text_of(html: str) -> str:
    """The text an HTML fragment shows (tags dropped, entities decoded)."""
    import html as html_lib

    return html_lib.unescape(re.sub(r"<[^>]+>", "", html))


def test_pass_ir_is_coloured_escaped_text(add_kernel):
    compiled = add_kernel[1]
    html = V.pass_ir_html(compiled, 0)
    assert "<pre" in html and "overflow:auto" in html and "trace" in html
    assert "assemble(%add -&gt; %out" in _text_of(html).replace("->", "-&gt;")
    assert "-&gt;" in html and "->" not in html.replace("-->", "")  # the IR's "->" is escaped
    assert _text_of(html).endswith(compiled.passes[0].text.splitlines()[-1])
    # values, types and source comments have their own colours
    assert re.search(r'<span style="color:#005cc5">%x</span>', html)
    assert re.search(r'<span style="color:#6f42c1">fp32</span>', html)
    assert re.search(r'<span style="color:#6a737d;font-style:italic"># test_views.py:\d+</span>', html)


def test_pass_diff_is_side_by_side_with_changed_words(add_kernel):
    compiled = add_kernel[1]
    assert "no previous pass" in V.pass_diff_html(compiled, 0)
    html = V.pass_diff_html(compiled, 2)  # autocast -> expand: tensor text becomes tile text
    assert "#1 autocast" in html and "#2 expand" in html
    assert html.count("background:#ffebe9") >= 1 and html.count("background:#e6ffec") >= 1
    assert "overflow-x:auto" in html  # each side scrolls sideways: long lines are not cut off
    assert "no pass #99" in V.pass_diff_html(compiled, 99)


def test_pass_diff_marks_only_the_words_that_changed():
    from pypto_lab.views.passes import _side_by_side

    old = [f"%v{i}: fp32[8] = exp(%a)" for i in range(20)] + ["%out: fp32[8] = add(%x, %y)"]
    new = [f"%v{i}: fp32[8] = exp(%a)" for i in range(20)] + ["%out: fp16[8] = add(%x, %y)"]
    left, right, changed = _side_by_side(old, new, 3)
    assert changed == 1 and len(left) == len(right)
    # the 20 equal lines fold to one row before the 3 lines of context
    assert "20 unchanged" not in left[0] and "17 unchanged lines" in left[0] and len(left) == 5
    assert re.search(r'background:#ffc1c0">fp32<', left[-1]) and re.search(r'background:#abf2bc">fp16<', right[-1])
    assert "background:#abf2bc\">%out" not in right[-1]  # an unchanged word is not highlighted
    full_left, _, _ = _side_by_side(old, new, None)
    assert len(full_left) == 21 and not any("unchanged" in row for row in full_left)


# ---- code --------------------------------------------------------------------------------------------

def test_code_of_a_vector_leaf(add_kernel):
    compiled = add_kernel[1]
    assert V.leaf_names(compiled) == ["leaf0_add"]
    assert V.code_forms(compiled, "leaf0_add") == ["pto", "cpu"]
    pto = V.code_html(compiled, "leaf0_add")
    assert "TLOAD" in pto and "TADD" in pto and "TSTORE" in pto
    assert "style=" in pto and 'class="k"' not in pto  # inline styles, no stylesheet needed
    cpu = V.code_html(compiled, "leaf0_add", "cpu")
    assert "def" in cpu and "leaf0_add" in cpu
    assert "no tail form" in V.code_html(compiled, "leaf0_add", "tail")
    assert "no generated code" in V.code_html(compiled, "nope")


def test_code_variants_of_softmax(softmax_kernel):
    compiled = softmax_kernel[1]
    (leaf,) = V.leaf_names(compiled)
    assert V.code_forms(compiled, leaf) == ["pto", "cpu", "main", "tail"]
    main, tail = V.code_html(compiled, leaf, "main"), V.code_html(compiled, leaf, "tail")
    assert "TSOFTMAX" in main and "variant=main" in main and "variant=tail" in tail
    assert "valid[...]" in tail and "valid[...]" not in main


def test_code_of_a_cube_leaf(matmul_kernel):
    compiled = matmul_kernel[1]
    names = V.leaf_names(compiled)
    assert any("matmul" in n for n in names)
    html = V.code_html(compiled, names[0])
    assert "TMATMUL" in html and "TMOV.L0A" in html


# ---- cache -------------------------------------------------------------------------------------------

def test_cache_table_one_row_per_version(add_kernel):
    kernel, _ = add_kernel
    html = V.cache_table_html(kernel)
    assert "2 version(s), 1 hit(s), 2 miss(es)" in html
    body = html.split("<tbody>")[1]
    assert body.count("<tr>") == 2
    assert "fp32[x.shape[0], 64]" in body and "fp32[x.shape[0], 128]" in body
    assert V.cache_table_html(kernel.cache_info()) == html  # a CacheInfo works too


def test_call_log_names_the_changed_dim(add_kernel):
    html = V.call_log_html(add_kernel[0])
    body = html.split("<tbody>")[1]
    assert body.count("<tr>") == 3
    assert ">hit<" in body and ">compile<" in body
    first, changed = body.index("first call"), body.index("x.shape[1] 64 -&gt; 128 (static)")
    assert first < changed  # newest last


def test_views_of_a_kernel_never_called():
    never_called.cache_clear()
    assert "0 version(s)" in V.cache_table_html(never_called)
    assert "nothing compiled yet" in V.cache_table_html(never_called)
    assert "not called yet" in V.call_log_html(never_called)
    summary = V.kernel_summary_html(never_called)
    assert "never_called" in summary and "not called yet" in summary
    for view in (V.cache_table_html, V.call_log_html, V.kernel_summary_html, V.pass_table_html):
        assert "no " in view(None)
    assert V.levels(None) == [] and V.leaf_names(None) == [] and "no compiled" in V.graph_svg(None)
    assert V.stats_line(None) == "no timeline" and "no timeline" in V.timeline_html(None)
    assert V.swimlane_payload(None)[0]["n"] == 0 and "no timeline" in V.leaf_summary_html(None)


# ---- timelines ---------------------------------------------------------------------------------------

def _task_rows(tl):
    meta, buffer = V.swimlane_payload(tl, title="t")
    cols = V.decode_payload(meta, buffer)
    return meta, cols, cols["aicpu"] == 0


def test_swimlane_payload_one_bar_per_task(kernel):
    tl = kernel[0].last_run.timeline
    meta, cols, tasks = _task_rows(tl)
    assert meta["n"] == len(tl.events) + len(tl.aicpu) and int(tasks.sum()) == len(tl.events)
    names = [lane["name"] for lane in meta["lanes"]]
    assert names[0] == "control" and {e.core for e in tl.events} <= set(names)
    us = tl.machine.cycles_to_us
    by_task = {e.task: e for e in tl.events}
    for i in range(len(cols["start"])):
        if tasks[i]:
            e = by_task[int(cols["task"][i])]
            assert names[cols["lane"][i]] == e.core and meta["leaves"][cols["group"][i]] == e.leaf
            assert cols["start"][i] == pytest.approx(us(e.start)) and cols["dur"][i] == pytest.approx(us(e.duration))
            assert meta["costs"][cols["cost"][i]] == dict(e.pipes)
    # sorted by lane, then start (the renderer's binary search relies on it)
    key = list(zip(cols["lane"].tolist(), cols["start"].tolist()))
    assert key == sorted(key)
    # edges between bars are the timeline's dependency edges
    edges = {(int(cols["task"][a]), int(cols["task"][b])) for a, b in zip(cols["src"], cols["dst"])}
    assert edges == {(i, j) for i, j, _ in tl.deps}
    # the critical path is the chain of start reasons from the last task: each task waited for the
    # one before it (a dependency edge, the same core, or the previous device task), and its runs
    # and waits add up to the makespan
    chain = [int(cols["task"][i]) for i in sorted(np.nonzero(cols["critical"])[0], key=lambda i: cols["start"][i])]
    assert chain[-1] == max(by_task, key=lambda t: by_task[t].end)
    for a, b in zip(chain, chain[1:]):
        reason = tl.explain(b)
        assert reason.cause == a
        assert (a, b) in edges or by_task[a].core == by_task[b].core or reason.kind == "device task"
    assert sum(s.cycles for s in tl.critical_chain()) == tl.stats["makespan_cycles"]
    # every task bar carries its start reason and its cause as a bar index
    for i in np.nonzero(tasks)[0].tolist():
        reason = tl.explain(int(cols["task"][i]))
        assert meta["reasons"][cols["reason"][i]] == reason.kind
        cause = int(cols["cause"][i])
        assert (int(cols["task"][cause]) if cause >= 0 else None) == reason.cause


def test_lanes_and_leaves_sort_naturally():
    assert sorted(["leaf10_add", "leaf2_mul", "leaf1_x"], key=V.natural_key) == ["leaf1_x", "leaf2_mul", "leaf10_add"]
    from pypto_lab.views.swimlane import lane_order_key

    lanes = ["AIV10", "AIC3", "sched1", "AIV2", "control", "AIC12", "sched0"]
    assert sorted(lanes, key=lane_order_key) == ["control", "sched0", "sched1", "AIC3", "AIC12", "AIV2", "AIV10"]


@pypto.jit
def scaled_matmul(a: pypto.Tensor([64, 64], FP32), b: pypto.Tensor([64, 64], FP32),
                  out: pypto.Tensor([64, 64], FP32)):
    pypto.set_cube_tile_shapes([32, 32], [64, 64], [32, 32])
    out[:] = pypto.matmul(a, b) * 2.0


def test_matmul_timeline_has_cube_and_vector_lanes(matmul_kernel):
    # a bare matmul assembled into its output is made there by the cube (passes/aliasing.py): cube
    # lanes only; a vector epilogue adds vector tasks
    meta, _, _ = _task_rows(matmul_kernel[0].last_run.timeline)
    kinds = [lane["kind"] for lane in meta["lanes"]]
    assert "AIC" in kinds and "AIV" not in kinds
    a, b = _rand(64, 64, seed=4), _rand(64, 64, seed=5)
    out = torch.empty(64, 64)
    scaled_matmul(a, b, out)
    torch.testing.assert_close(out, (a @ b) * 2.0, rtol=1e-4, atol=1e-4)
    meta, _, _ = _task_rows(scaled_matmul.last_run.timeline)
    kinds = [lane["kind"] for lane in meta["lanes"]]
    assert "AIC" in kinds and "AIV" in kinds and kinds == sorted(kinds, key=["AICPU", "AIC", "AIV", "other"].index)


def test_timeline_views_are_deterministic(softmax_kernel):
    run = softmax_kernel[0].last_run
    a, b = run.timeline, run.simulate()
    assert V.swimlane_payload(a) == V.swimlane_payload(b)
    assert V.stats_line(a) == V.stats_line(b)
    _, cols, tasks = _task_rows(a)
    assert set(cols["variant"][tasks].tolist()) == {1, 2}  # main and tail tiles (valid_shape_optimize)


def test_leaf_summary_and_lane_busy(kernel):
    tl = kernel[0].last_run.timeline
    html = V.leaf_summary_html(tl)
    for leaf in {e.leaf for e in tl.events}:
        count = sum(1 for e in tl.events if e.leaf == leaf)
        total = sum(tl.machine.cycles_to_us(e.duration) for e in tl.events if e.leaf == leaf)
        assert f">{leaf}<" in html and f">{count:,}<" in html and f"{total:,.2f} µs" in html
    assert "share of makespan" in html and "%" in html
    busy = V.lane_busy_html(tl)
    core = tl.events[0].core
    share = sum(e.duration for e in tl.events if e.core == core) / tl.stats["makespan_cycles"]
    assert f">{core}<" in busy and f"{share:.1%}" in busy


def test_standalone_html_has_chart_and_fallback(kernel):
    tl = kernel[0].last_run.timeline
    html = tl._repr_html_()
    assert "<svg" in html and "PyptoSwimlane.mountStatic" in html and "per leaf" in html
    assert "data:application/json" not in html and "http" not in html.split("<script>")[1]  # nothing fetched


def test_timeline_repr_without_the_lab(kernel, monkeypatch):
    import sys

    monkeypatch.setitem(sys.modules, "pypto_lab.views.timeline", None)  # as if pypto_lab were absent
    html = kernel[0].last_run.timeline._repr_html_()
    assert "<svg" in html and "makespan" in html and "<script" not in html


def test_stats_line_and_compare(add_kernel):
    run = add_kernel[0].last_run
    tl, small = run.timeline, run.simulate(machine="small")
    line = V.stats_line(tl)
    for word in ("makespan", "cycles", "tasks", "device task", "utilization AIC", "AIV", "critical path", "bubbles"):
        assert word in line
    html = V.compare_html(tl, small, labels=("A2A3", "small"))
    assert ">A2A3<" in html and ">small<" in html
    assert f"{tl.stats['makespan_us']:,.2f} µs" in html and f"{small.stats['makespan_us']:,.2f} µs" in html
    assert "%" in html and "utilization AIV" in html


def test_trace_bytes_are_the_chrome_trace(add_kernel):
    tl = add_kernel[0].last_run.timeline
    assert json.loads(V.trace_json_bytes(tl)) == json.loads(json.dumps(tl.to_chrome_trace()))


def test_compare_shows_no_signed_zero(add_kernel):
    tl = add_kernel[0].last_run.timeline
    html = V.compare_html(tl, tl)
    assert "-0.0" not in html and "+0.0" not in html and "color:#cf222e" not in html


# ---- measured traces (upstream's merged_swimlane.json) -------------------------------------------------

def _upstream_trace():
    t0 = 1_700_000_000.0  # upstream timestamps are absolute
    ev = [
        {"args": {"name": "Machine View"}, "cat": "__metadata", "name": "process_name", "ph": "M", "pid": 1},
        {"args": {"name": "AIC_0"}, "cat": "__metadata", "name": "thread_name", "ph": "M", "pid": 1, "tid": 1000},
        {"args": {"name": "AIV_1"}, "cat": "__metadata", "name": "thread_name", "ph": "M", "pid": 1, "tid": 1003},
        {"name": "0-3-0-0-1(matmul)", "ph": "X", "pid": 1, "tid": 1000, "ts": t0, "dur": 4.0, "cat": "event",
         "id": 1, "args": {"event-hint": "Task:[0-3-0], rootHash:12, leafHash:34", "color": "good", "taskId": 1}},
        {"name": "1-4-0-0-2(exp)", "ph": "X", "pid": 1, "tid": 1003, "ts": t0 + 5.0, "dur": 2.0, "cat": "event",
         "id": 2, "args": {"event-hint": "Task:[1-4-0] <x>", "taskId": 2}},
        {"name": "2-4-0-1-2(exp)", "ph": "X", "pid": 1, "tid": 1003, "ts": t0 + 8.0, "dur": 2.0, "cat": "event",
         "id": 3, "args": {"taskId": 3}},
        {"cat": "machine-view-last-dep", "id": 7, "name": "machine-view-last-dep", "ph": "s", "pid": 1,
         "tid": 1000, "ts": t0 + 4.0},
        {"bp": "e", "cat": "machine-view-last-dep", "id": 7, "name": "machine-view-last-dep", "ph": "f", "pid": 1,
         "tid": 1003, "ts": t0 + 5.0},
        {"name": "ReadyCount_AIV", "pid": 1, "tid": 1, "ph": "C", "ts": t0, "args": {"size": 1}},
    ]
    return {"traceEvents": ev}


def test_load_upstream_trace(tmp_path):
    path = tmp_path / "merged_swimlane.json"
    path.write_text(json.dumps(_upstream_trace()))
    tt = V.load_trace(path)
    assert tt.source == "merged_swimlane.json" and tt.kind == "upstream"
    assert tt.lanes == ["AIC0", "AIV1"]
    assert [(e.lane, e.start_us, e.dur_us) for e in tt.events] == [("AIC0", 0.0, 4.0), ("AIV1", 5.0, 2.0),
                                                                   ("AIV1", 8.0, 2.0)]
    assert [e.label for e in tt.events] == ["matmul", "exp", "exp"]
    assert tt.events[0].args["taskId"] == 1
    (flow,) = tt.flows
    assert (flow.from_lane, flow.from_us, flow.to_lane, flow.to_us) == ("AIC0", 4.0, "AIV1", 5.0)
    s = tt.stats
    assert s["makespan_us"] == 10.0 and s["tasks"] == 3 and s["flows"] == 1
    assert s["utilization"] == {"AIC": pytest.approx(0.4), "AIV": pytest.approx(0.4)}
    assert s["bubbles"]["count"] == 1
    line = V.stats_line(tt)
    assert "makespan 10.00 µs" in line and "3 tasks" in line and "AIC 40.0%" in line

    meta, cols, tasks = _task_rows(tt)
    assert int(tasks.sum()) == 3 and meta["leaves"] == ["exp", "matmul"]
    assert [lane["name"] for lane in meta["lanes"]] == ["AIC0", "AIV1"]
    assert V.load_trace(_upstream_trace()).lanes == tt.lanes  # a dict works too


def test_measured_next_to_simulated(add_kernel):
    tl = add_kernel[0].last_run.timeline
    measured = V.load_trace(_upstream_trace())
    html = V.compare_html(tl, measured, labels=("simulated", "measured"))
    assert f"{tl.stats['makespan_us']:,.2f} µs" in html and "10.00 µs" in html
    back = V.load_trace(json.loads(json.dumps(measured.to_chrome_trace())))
    assert [(e.lane, e.start_us, e.dur_us) for e in back.events] == [(e.lane, e.start_us, e.dur_us)
                                                                      for e in measured.events]
    assert len(back.flows) == 1


def test_load_our_own_chrome_trace(kernel):
    tl = kernel[0].last_run.timeline
    tt = V.load_trace(tl.to_chrome_trace())
    assert tt.kind == "pypto-lab" and "control" in tt.lanes
    assert tt.stats["tasks"] == len(tl.events)
    assert tt.stats["makespan_us"] == pytest.approx(tl.stats["makespan_us"])
    assert tt.stats["device_tasks"] == tl.stats["device_tasks"]
    _, _, tasks = _task_rows(tt)
    assert int(tasks.sum()) == len(tl.events)


# ---- summary and purity --------------------------------------------------------------------------------

def test_kernel_summary(add_kernel):
    html = V.kernel_summary_html(add_kernel[0])
    assert "<b>tiled_add</b>" in html and "2 compiled version(s)" in html
    assert "last call: compiled in" in html and "x.shape[1] 64 -&gt; 128" in html
    assert "timeline: makespan" in html


def test_views_import_no_widgets_or_ipython():
    for path in pathlib.Path(V.__file__).parent.glob("*.py"):
        for node in ast.walk(ast.parse(path.read_text())):
            names = ([a.name for a in node.names] if isinstance(node, ast.Import)
                     else [node.module or ""] if isinstance(node, ast.ImportFrom) else [])
            for name in names:
                assert not name.split(".")[0] in ("IPython", "ipywidgets", "anywidget"), (path.name, name)


# ---- graph: pan/zoom frame, legend, tooltips, grid, edges across roots -------------------------------

@pytest.mark.skipif(not HAVE_DOT, reason="needs Graphviz dot")
def test_graph_html_frames_the_svg_with_pan_zoom_and_a_legend(add_kernel):
    compiled = add_kernel[1]
    html = V.graph_html(compiled, "tile")
    assert 'class="pypto-graph-frame"' in html and "onwheel=" in html and "onmousedown=" in html
    assert "overflow:auto" in html and "<script" not in html
    # fitted: shrunk to the frame's width and height, never blown up past Graphviz's own size
    assert '<svg style="max-width:100%;max-height:68vh;width:auto;height:auto;display:block"' in html
    assert "AIV (vector)" in html and "GM: a tensor written" in html
    assert '<svg style="max-width:none;display:block"' in V.graph_html(compiled, "tile", fit=False)
    # tooltips: a tile op shows its operands' shapes, memory levels and the kernel line
    assert re.search(r'xlink:title="copy_in on AIV, grid \[[^"]*in &#160;%x: fp32\[32, 64\] in GM', html)
    assert re.search(r'source: test_views\.py:\d+ &#160;out\[rows, :\] = x\[rows, :\] \+ y\[rows, :\]', html)


_STEPS = (lambda t: t * 2.0, pypto.exp, lambda t: t + t, lambda t: pypto.exp(t) * 0.5,
          lambda t: t * t, lambda t: pypto.exp(t + 1.0), lambda t: t - 3.0)


@pypto.jit
def chain_of_leaves(x: pypto.Tensor([64, 64], FP32), out: pypto.Tensor([64, 64], FP32)):
    pypto.set_vec_tile_shapes(64, 64)
    for b in pypto.loop(1):
        out[:] = x * 1.0
    for step in _STEPS:  # a Python loop unrolls: one root and one leaf per step, linked by GM
        for b in pypto.loop(1):
            out[:] = step(out[:])


def test_many_leaves_lay_out_in_a_grid_and_roots_are_linked():
    from pypto.ir.dot_lower import grid_columns

    assert [grid_columns(n) for n in (1, 4, 5, 16)] == [1, 4, 4, 5]
    x = _rand(64, 64, seed=3)
    compiled = chain_of_leaves.inspect(x, torch.empty(64, 64))
    block = V.level_dot(compiled, "block")
    leaves = block.count("subgraph cluster_l")
    assert leaves >= 5
    assert block.count("[style=invis]") == leaves - grid_columns(leaves)
    # the execute level is the graph of calls (not the code listing): each root reads what the one
    # before wrote to GM, drawn as dashed GM edges, and each call has a tooltip
    execute = V.level_dot(compiled, "execute")
    assert execute.startswith('digraph "execute"')
    assert execute.count('label="GM"') == len(_STEPS)
    assert "tooltip=\"call leaf" in execute
