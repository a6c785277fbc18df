"""The dashboard widgets, driven from Python (no browser): tabs, controls and what they show."""

import pathlib
import subprocess
import sys

import pytest
import torch

import pypto
import pypto_lab
from pypto_lab.widgets import Dashboard


@pypto.jit
def two_leaves(x: pypto.Tensor([pypto.DYNAMIC, 64], pypto.DT_FP32),
               y: pypto.Tensor([pypto.DYNAMIC, 64], pypto.DT_FP32),
               out: pypto.Tensor([pypto.DYNAMIC, 64], pypto.DT_FP32)):
    pypto.set_vec_tile_shapes(32, 64)
    for b in pypto.loop(pypto.ceildiv(x.shape[0], 32)):
        rows = slice(b * 32, (b + 1) * 32)
        out[rows, :] = x[rows, :] + y[rows, :]
    for b in pypto.loop(pypto.ceildiv(x.shape[0], 32)):
        rows = slice(b * 32, (b + 1) * 32)
        out[rows, :] = pypto.exp(out[rows, :]) * 2.0


@pytest.fixture(scope="module")
def kernel():
    x = torch.randn(100, 64)
    out = torch.empty(100, 64)
    with pypto.options(runtime_options={"valid_shape_optimize": 1}):  # main/tail code variants
        two_leaves(x, x, out)
    torch.testing.assert_close(out, torch.exp(2 * x) * 2, rtol=1e-4, atol=1e-4)
    return two_leaves


@pytest.fixture()
def board(kernel):
    return Dashboard(kernel)


def test_tabs_and_summary(board, kernel):
    assert board.titles == ("Graph", "Passes", "Code", "Cache", "Timeline", "Tune", "Sweep")
    assert tuple(board.tab.titles) == board.titles
    assert "two_leaves" in board.summary.value
    assert board.run is kernel.last_run


def test_tabs_are_built_when_selected(board):
    assert board.tab.children[0].children  # the first tab at once
    assert not board.tab.children[2].children
    board.tab.selected_index = 2
    assert board.tab.children[2].children == (board.panel("code"),)


def test_tab_subset_and_unknown_tab(kernel):
    board = pypto_lab.dashboard(kernel, tabs="tune, cache")
    assert board.titles == ("Cache", "Tune")  # display order, not the order asked
    with pytest.raises(KeyError, match="no 'graph' tab"):
        board.panel("graph")
    with pytest.raises(ValueError, match="unknown tab 'flames'"):
        Dashboard(kernel, tabs=["graph", "flames"])
    assert pypto_lab.parse_tabs(None) == pypto_lab.parse_tabs("all") == pypto_lab.TABS


def test_uncalled_kernel_and_non_kernel_are_clear_errors():
    @pypto.jit
    def never(x: pypto.Tensor([8], pypto.DT_FP32)):
        pass

    with pytest.raises(ValueError, match="never has not been called yet"):
        pypto_lab.dashboard(never)
    with pytest.raises(TypeError, match="needs a pypto.jit kernel"):
        pypto_lab.dashboard(len)


def test_graph_level_dropdown(board):
    graph = board.panel("graph")
    assert graph.level.options == ("tensor", "tile", "block", "execute")
    assert "pypto-graph" in graph.svg._dom_classes
    tensor = graph.svg.value
    graph.level.value = "execute"
    assert graph.svg.value != tensor
    assert graph.svg.value == pypto_lab.views.graph_html(board.compiled, "execute")
    graph.fit.value = False
    assert graph.svg.value == pypto_lab.views.graph_html(board.compiled, "execute", fit=False)


def test_pass_select_shows_ir_and_diff(board):
    passes = board.panel("passes")
    assert "trace" in passes.table.value
    assert len(passes.select.options) == len(board.compiled.passes)
    assert "first pass" in passes.diff.value
    first = passes.ir.value
    passes.select.value = 2
    assert passes.ir.value != first
    assert passes.ir.value == pypto_lab.views.pass_ir_html(board.compiled, 2)
    assert passes.diff.value == pypto_lab.views.pass_diff_html(board.compiled, 2)
    passes.folded.value = False
    assert passes.diff.value == pypto_lab.views.pass_diff_html(board.compiled, 2, context=None)
    assert passes.ir.layout.display == "none" and passes.diff.layout.display is None
    passes.mode.value = "text"
    assert passes.diff.layout.display == "none" and passes.ir.layout.display is None


def test_leaf_and_form_select(board):
    code = board.panel("code")
    assert code.leaf.options == ("leaf0_add", "leaf1_exp_mul")
    assert [v for _, v in code.form.options] == ["pto", "cpu", "main", "tail"]
    pto = code.code.value
    code.form.value = "cpu"
    assert code.code.value != pto
    assert code.code.value == (pypto_lab.views.leaf_hints_html(board.compiled, "leaf0_add")  # the leaf's hints first
                               + pypto_lab.views.code_html(board.compiled, "leaf0_add", "cpu"))
    code.leaf.value = "leaf1_exp_mul"
    assert code.form.value == "cpu"  # the form is kept when the new leaf has it
    assert code.code.value == (pypto_lab.views.leaf_hints_html(board.compiled, "leaf1_exp_mul")  # the leaf's hints first
                               + pypto_lab.views.code_html(board.compiled, "leaf1_exp_mul", "cpu"))
    code.form.value = "tail"
    assert code.code.value == (pypto_lab.views.leaf_hints_html(board.compiled, "leaf1_exp_mul")  # the leaf's hints first
                               + pypto_lab.views.code_html(board.compiled, "leaf1_exp_mul", "tail"))


def test_cache_tab(board, kernel):
    cache = board.panel("cache")
    assert kernel.last_run.key in cache.versions.value
    assert "first call" in cache.calls.value


def test_timeline_tab(board):
    import json

    from pypto_lab.widgets.timeline import SwimlaneChart

    panel = board.panel("timeline")
    view = panel.view
    chart = view.chart
    assert isinstance(chart, SwimlaneChart) and "pypto-timeline" in view.figure_box._dom_classes
    assert view.figure_box.children == (chart,)
    assert "makespan" in view.stats.value and "per leaf" in view.summary.value
    tl = board.run.timeline
    cols = pypto_lab.views.decode_payload(chart.meta, chart.data)
    assert int((cols["aicpu"] == 0).sum()) == len(tl.events) == chart.meta["n"] - len(tl.aicpu)
    assert "export default" in chart._esm and "data:application/json" not in view.summary.value
    assert chart.meta["details"] is True

    sent = []
    chart.send = lambda content, buffers=None: sent.append((content, buffers))
    task = int(cols["task"][cols["aicpu"] == 0][0])
    chart._message(chart, {"kind": "details", "task": task}, [])
    reply = sent[-1][0]
    assert reply["kind"] == "details" and reply["task"] == task
    leaf = tl.events[[e.task for e in tl.events].index(task)].leaf
    assert leaf in reply["html"] and "pipe breakdown" in reply["html"] and "tile offset" in reply["html"]
    assert "test_widgets.py:" in reply["html"]  # the kernel line the leaf came from
    chart._message(chart, {"kind": "trace"}, [])  # the Chrome trace is built on request only
    content, buffers = sent[-1]
    assert content["kind"] == "trace" and json.loads(bytes(buffers[0])) == json.loads(json.dumps(tl.to_chrome_trace()))
    bundle = chart._repr_mimebundle_()
    data = bundle[0] if isinstance(bundle, tuple) else bundle
    assert "<svg" in data["text/html"] and "application/vnd.jupyter.widget-view+json" in data


def test_timeline_tab_opens_a_trace(board, tmp_path):
    import json

    opener = board.panel("timeline").opener
    assert opener.view.layout.display == "none"
    assert not opener.load(str(tmp_path / "missing.json"))
    assert "could not open" in opener.message.value
    path = tmp_path / "trace.json"
    path.write_text(json.dumps(board.run.timeline.to_chrome_trace()))
    opener.path.value = str(path)
    opener.open_button.click()
    assert opener.view.layout.display is None
    assert opener.view.figure is not None and "makespan" in opener.view.stats.value


def test_tune_resimulates_and_compares(board):
    tune = board.panel("tune")
    for name, control in tune.controls.items():
        assert f"pypto-tune-{name}" in control._dom_classes
    assert "pypto-makespan" in tune.makespan._dom_classes
    assert tune.values()["valid_shape_optimize"] == 1  # what the call ran with
    before = tune.makespan.value
    assert before.startswith("makespan ") and before.endswith(" µs)")
    assert tune.compare.value == "" and tune.previous.layout.display == "none"
    assert tune.current.chart.meta["n"] > 0  # the call as it ran is drawn at once
    assert tune.controls["valid_shape_optimize"].description.endswith("⟳")  # changes the code
    assert not tune.controls["device_sched_mode"].description.endswith("⟳")

    tune.controls["stitch_function_max_num"].value = 1
    expected = board.run.simulate({**tune.values()}).stats["makespan_cycles"]
    assert tune.makespan.value != before
    assert tune.makespan.value.startswith(f"makespan {expected} cycles")
    assert "before: sched=0 stitch=128" in tune.compare.value and "now: sched=0 stitch=1" in tune.compare.value
    assert tune.previous.layout.display is None
    assert tune.current.timeline.options["stitch_function_max_num"] == 1
    assert tune.previous.timeline.options["stitch_function_max_num"] == 128
    assert tune.status.value == ""
    assert not any(c.disabled for c in tune.controls.values())

    assert tune.previous.chart.meta["x_max"] == tune.current.chart.meta["x_max"]  # one time axis
    assert tune.current.chart.meta["x_max"] == max(tune.previous.timeline.stats["makespan_us"],
                                                   tune.current.timeline.stats["makespan_us"])
    tune.controls["device_sched_mode"].value = 2
    assert "before: sched=0 stitch=1" in tune.compare.value and "now: sched=2 stitch=1" in tune.compare.value
    # the call itself is untouched
    assert board.run.timeline.options["stitch_function_max_num"] == 128


def test_tune_sweeps_every_sched_mode(board):
    tune = board.panel("tune")
    assert tune.sweep.value == "" and "pypto-tune-sweep" in tune.sweep_button._dom_classes
    tune.sweep_button.click()
    rows = tune.sweep.value.split("<tbody>")[1].count("<tr>")
    assert rows == 4 and "(current)" in tune.sweep.value
    for mode in range(4):
        cycles = board.run.simulate({**tune.values(), "device_sched_mode": mode}).stats["makespan_cycles"]
        assert f"{cycles:,}" in tune.sweep.value
    assert tune.status.value == ""


def test_show_displays_the_dashboard(kernel, monkeypatch):
    import IPython.display

    shown = []
    monkeypatch.setattr(IPython.display, "display", lambda *objs, **kw: shown.extend(objs))
    assert pypto_lab.show(kernel, tabs="cache") is None
    assert len(shown) == 1 and isinstance(shown[0], Dashboard) and shown[0].titles == ("Cache",)


def test_import_is_light():
    code = ("import sys, pypto_lab; heavy = [m for m in ('anywidget', 'ipywidgets', 'IPython', 'torch') "
            "if m in sys.modules]; print(heavy)")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "[]"


def test_stored_output_reads_well_without_widgets(board, kernel):
    bundle = board._repr_mimebundle_()
    assert "application/vnd.jupyter.widget-view+json" in bundle  # the live dashboard
    plain = bundle["text/plain"]
    assert plain.startswith("pypto dashboard of two_leaves: 1 compiled version(s)")
    assert "Dashboard(" not in plain and "HTML(" not in plain
    html = bundle["text/html"]
    assert "<b>two_leaves</b>" in html and "shapes served" in html and "fp32[100, 64]" in html
    assert "Graph, Passes, Code, Cache, Timeline, Tune" in html


def test_stored_notebooks_keep_no_widget_ids_and_the_kernels_name():
    sys.path.insert(0, str(pathlib.Path(__file__).resolve().parents[2] / "tools"))
    try:
        import make_notebooks
    finally:
        sys.path.pop(0)
    from jupyter_client.kernelspec import KernelSpecManager

    assert make_notebooks.kernelspec()["display_name"] == KernelSpecManager().get_kernel_spec("python3").display_name
    nb = make_notebooks.build("t", [("code", "1")])
    view = {"model_id": "5e14", "version_major": 2, "version_minor": 0}
    nb.cells[0].outputs = [{"output_type": "display_data", "metadata": {},
                            "data": {make_notebooks.WIDGET_VIEW: view, "text/plain": "pypto dashboard"}}]
    make_notebooks.drop_widget_views(nb)
    assert nb.cells[0].outputs[0]["data"] == {"text/plain": "pypto dashboard"}


def test_hints_sit_folded_under_the_summary(board, kernel):
    from pypto.hints import kernel_hints

    found = kernel_hints(kernel.last_run.compiled, kernel.last_run.timeline)
    assert found  # two loops through GM, on a few of the 48 vector cores
    html = board.hints.value
    assert html.startswith('<details class="pypto-hints"') and f"{len(found)} hint(s)" in html
    import html as _html

    for h in found:
        assert _html.escape(h.title) in html or h.title.replace(">", "&gt;") in html
    assert board.children[1] is board.hints
