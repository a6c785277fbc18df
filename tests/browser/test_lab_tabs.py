"""Real-browser checks of the dashboard tabs and of failing ``%%pypto`` cells (JupyterLab +
headless chromium, see conftest.py; run with ``pytest -m browser tests/browser``).

* every tab of the flash-attention dashboard (notebooks/04_real_kernels.ipynb) renders within a
  generous budget; the measured times are printed (``-s`` shows them);
* the Graph tab pans and zooms (Ctrl + wheel widens the SVG) and its nodes carry tooltips;
* a failing ``%%pypto`` cell stops "Run All": the cells after it never run.

The dashboard's picture is saved as ``dashboard.png`` in the test's tmp_path.
"""

from __future__ import annotations

import importlib.util
import json
import time

import pytest

if importlib.util.find_spec("playwright") is not None:
    try:
        from tests.browser import _lab_page as L
    except ImportError:
        import _lab_page as L
else:  # the `browser` fixture skips (or, in CI, fails) with the reason
    L = None

pytestmark = pytest.mark.browser

# seconds from the click on a tab to its content on screen (a 2-core shared machine; generous)
BUDGET = {"Graph": 15.0, "Passes": 15.0, "Code": 15.0, "Cache": 15.0, "Timeline": 120.0, "Tune": 120.0}


def _content(dash, title: str):
    """The element whose appearance means tab ``title`` has rendered."""
    visible = {
        "Graph": ".pypto-graph:visible .pypto-graph-frame svg",
        "Passes": ".widget-html:visible:has-text('total (')",
        "Code": ".widget-html:visible:has-text('hash=')",
        "Cache": ".widget-html:visible:has-text('shapes served')",
        "Timeline": ".pypto-timeline:visible svg, .pypto-timeline:visible canvas",
        "Tune": ".pypto-makespan:visible",
    }[title]
    return dash.locator(visible).first


@pytest.fixture
def page(browser):
    with L.fresh_page(browser) as page:
        yield page


def _notebook(*sources: str) -> str:
    cells = [{"cell_type": "code", "metadata": {}, "outputs": [], "execution_count": None, "source": s}
             for s in sources]
    return json.dumps({"cells": cells, "nbformat": 4, "nbformat_minor": 5, "metadata": {
        "kernelspec": {"name": "python3", "display_name": "Python 3 (ipykernel)", "language": "python"}}})


def test_every_tab_renders_within_its_budget(lab_server, page, tmp_path):
    from tests.browser.conftest import REPO

    name = "flash_dashboard.ipynb"  # the flash attention of notebooks/04, on its own
    (lab_server.root / name).write_text(_notebook(
        f"import sys\nsys.path.insert(0, {str(REPO / 'examples')!r})\nimport pypto_lab, flash_attention",
        "assert flash_attention.check(2, 100) < 1e-4",
        "pypto_lab.show(flash_attention.flash_attention)"), encoding="utf-8")
    nb = L.NotebookPage(page, lab_server, name)
    nb.open()
    nb.run_all(timeout=300)
    dash = nb.dashboards().last  # flash attention: the biggest graph and timeline
    dash.scroll_into_view_if_needed()
    times = {}
    for title, budget in BUDGET.items():
        t0 = time.monotonic()
        L.select_tab(dash, title)
        L.expect(_content(dash, title)).to_be_visible(timeout=int(budget * 1000))
        if title == "Tune":
            L.expect(_content(dash, title)).to_have_text(L.re.compile(r"\d"), timeout=int(budget * 1000))
        times[title] = time.monotonic() - t0
    print("tab render seconds:", json.dumps({k: round(v, 2) for k, v in times.items()}))
    for title, seconds in times.items():
        assert seconds < BUDGET[title], f"{title} took {seconds:.1f} s (budget {BUDGET[title]} s)"

    # Graph: the block level of 16 leaves fits the width; Ctrl + wheel zooms in; nodes have tooltips
    L.select_tab(dash, "Graph")
    dash.locator(".pypto-graph-panel:visible select").first.select_option("block")
    frame = dash.locator(".pypto-graph:visible .pypto-graph-frame").first
    L.expect(frame.locator("a[*|title*='leaf']").first).to_be_attached()  # the block level is drawn
    svg = frame.locator("svg").first
    L.expect(svg).to_be_visible()
    dash.screenshot(path=str(tmp_path / "dashboard.png"))  # fitted to the width
    print(f"screenshot: {tmp_path / 'dashboard.png'}")
    fitted = svg.bounding_box()["width"]
    assert fitted <= frame.bounding_box()["width"] + 1
    frame.dispatch_event("wheel", {"deltaY": -120, "ctrlKey": True})
    frame.dispatch_event("wheel", {"deltaY": -120, "ctrlKey": True})
    assert svg.bounding_box()["width"] > fitted * 1.4
    assert svg.locator("a[*|title*='source:']").count() > 0


FAILING = _notebook(
    "%load_ext pypto_lab\nimport torch, pypto\nx, out = torch.randn(40, 64), torch.empty(40, 64)",
    "%%pypto --show cache\n@pypto.jit\n"
    "def bad(x: pypto.Tensor([pypto.DYNAMIC, 64], pypto.DT_FP32),\n"
    "        out: pypto.Tensor([pypto.DYNAMIC, 64], pypto.DT_FP32)):\n"
    "    out[:, :] = x[:, :32] + out[:, :]\nbad(x, out)",
    "print('the cell after the error ran')")


def test_a_failing_pypto_cell_stops_run_all(lab_server, page):
    name = "failing_cell.ipynb"
    (lab_server.root / name).write_text(FAILING, encoding="utf-8")
    nb = L.NotebookPage(page, lab_server, name)
    nb.open()
    nb._click_run_all()
    cells = page.locator(".jp-NotebookPanel:not(.lm-mod-hidden) .jp-CodeCell")
    error = cells.nth(1).locator(".jp-OutputArea-output[data-mime-type='application/vnd.jupyter.stderr']")
    L.expect(error.first).to_contain_text("ShapeError", timeout=120_000)
    L.expect(error.first).to_contain_text(L.re.compile(r"at Cell In\[\d+\], line 5 in bad"))
    nb.wait_kernel_idle()
    time.sleep(2.0)  # had Run All gone on, the last cell would have run by now
    prompt = cells.nth(2).locator(".jp-InputArea-prompt").inner_text().strip()
    assert not L.re.search(r"\d", prompt), f"the cell after the failing one ran: prompt {prompt!r}"
    assert cells.nth(2).locator(".jp-OutputArea-output").count() == 0
