"""Real-browser test of the pypto_lab dashboards in JupyterLab.

README
------
What it does: starts JupyterLab (bound to 127.0.0.1, a random token, a free port) on a temporary
copy of ``notebooks/`` (stored outputs stripped, so all that is checked comes from this run),
drives Debian's chromium headless through playwright, opens ``00_quickstart.ipynb`` and
``03_runtime_options.ipynb``, runs all their cells (failing at once on a traceback) and checks the
pypto_lab dashboards (``pypto_lab.show(...)`` / ``%%pypto``) of each, using for each check the
first dashboard that has that tab:

* Graph tab: an ``<svg>`` is visible inside ``.pypto-graph``;
* Timeline tab: the swimlane canvas (``.pypto-timeline-canvas``) inside ``.pypto-timeline``,
  painted (its ``.pypto-swimlane`` carries ``data-paint-ms``) with its bars (``data-bars`` > 0);
* Tune tab: changing the ``.pypto-tune-device_sched_mode`` control changes the text of
  ``.pypto-makespan`` (the call is re-simulated in the kernel).

A screenshot is saved as ``lab.png`` in the test's ``tmp_path`` (also when the test fails; its
path is printed); the JupyterLab server log is in the ``jupyterlab*`` folder of the same pytest
base temp dir.

Run it::

    .venv/bin/python -m pytest tests/browser -q -m browser

Requirements: the ``playwright`` python package (in the ``test`` extra) and Debian's chromium at
``/usr/bin/chromium`` (``PYPTO_SETUP_CHROMIUM=1 bash scripts/setup.sh`` installs it; another binary
can be given with ``$PYPTO_CHROMIUM``). NEVER run ``playwright install``: no browser is downloaded.
Without chromium the test is skipped locally but fails in CI (``PYPTO_SETUP_CHROMIUM=1`` or ``CI``
set), where it must run. ``$PYPTO_BROWSER_NOTEBOOKS`` points the test at another notebooks folder.

Nothing in the repository is modified: the server's root, HOME, Jupyter dirs, JupyterLab
settings/workspaces are all temporary; the settings silence JupyterLab's news/update pop-ups.
Flakiness handling: a fresh kernel sometimes ignores the first "Run All Cells", so the command is
re-issued while no cell has started and the kernel is idle; tabs are waited on until current;
plot waits allow PLOT_TIMEOUT_MS; the makespan is polled, trying each other sched mode (last one first) until it
changes. Nothing is retried to hide a real failure: a blank timeline fails the test.
"""

from __future__ import annotations

import importlib.util

import pytest

if importlib.util.find_spec("playwright") is not None:
    try:
        from tests.browser import _lab_page as L
    except ImportError:
        import _lab_page as L
else:  # the `browser` fixture skips (or, in CI, fails) with the reason
    L = None

pytestmark = pytest.mark.browser

NOTEBOOKS = ["00_quickstart.ipynb", "03_runtime_options.ipynb"]
SCHED_MODE_CONTROL = ".pypto-tune-device_sched_mode"


@pytest.fixture
def page(browser, tmp_path):
    """A fresh browser context and page. If the test ends without having saved its screenshot
    (tmp_path/lab.png), e.g. because it failed, the page is saved there on the way out."""
    with L.fresh_page(browser, screenshot=tmp_path / "lab.png") as page:
        yield page


@pytest.mark.parametrize("notebook", NOTEBOOKS)
def test_notebook_dashboards(browser, notebooks_dir, lab_server, page, tmp_path, notebook):
    if not (notebooks_dir / notebook).is_file():
        pytest.fail(f"{notebook} not found in {notebooks_dir}", pytrace=False)
    expect, re = L.expect, L.re

    nb = L.NotebookPage(page, lab_server, notebook)
    nb.open()
    nb.run_all()
    expect(nb.dashboards().first).to_be_attached()

    # Graph: the graphviz SVG (the first dashboard that has a Graph tab)
    dash = nb.dashboard_with_tab("Graph")
    L.select_tab(dash, "Graph")
    expect(dash.locator(".pypto-graph:visible svg").first).to_be_visible()

    # Timeline: the swimlane canvas, painted, with its bars
    dash = nb.dashboard_with_tab("Timeline")
    L.select_tab(dash, "Timeline")
    timeline = dash.locator(".pypto-timeline:visible").first
    expect(timeline.locator("canvas.pypto-timeline-canvas").first).to_be_visible(timeout=L.PLOT_TIMEOUT_MS)
    expect(timeline.locator(".pypto-swimlane[data-paint-ms]").first).to_be_attached()
    expect(timeline.locator(".pypto-swimlane").first).not_to_have_attribute("data-bars", "0")

    # Tune: another device_sched_mode re-simulates the call and changes the makespan shown
    dash = nb.dashboard_with_tab("Tune")
    L.select_tab(dash, "Tune")
    makespan = dash.locator(".pypto-makespan:visible").first
    expect(makespan).to_have_text(re.compile(r"\d"), timeout=L.PLOT_TIMEOUT_MS)  # tab has a plot
    control = dash.locator(f"{SCHED_MODE_CONTROL}:visible").first
    expect(control).to_be_enabled()
    before, action, after = L.change_until_text_changes(control, makespan)
    print(f"{notebook}: makespan {before!r} -> {after!r} after {action}")
    makespan.scroll_into_view_if_needed()

    nb.wait_kernel_idle()  # the re-simulation's figures are sent: a calmer screenshot
    page.screenshot(path=str(tmp_path / "lab.png"), full_page=True)
    assert (tmp_path / "lab.png").stat().st_size > 0
