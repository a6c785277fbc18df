"""Playwright helpers driving one JupyterLab notebook and the pypto_lab dashboards in it.

The DOM contract with ``pypto_lab`` (``pypto_lab.show(kernel)`` and ``%%pypto --show ...``): a
dashboard holds an ipywidgets ``Tab`` whose tabs (titled "Graph", "Passes", "Code", "Cache",
"Timeline", "Tune"; ``--show``/``tabs=`` may keep only some) are built when first selected. Inside:
"Graph" has an SVG in an element of class ``pypto-graph``; "Timeline" the swimlane canvas
(``pypto-timeline-canvas``, an anywidget) in ``pypto-timeline``; "Tune" one control per runtime option of class ``pypto-tune-<option>`` (e.g.
``pypto-tune-device_sched_mode``, a Dropdown) and the makespan text in ``pypto-makespan``.
"""

from __future__ import annotations

import re
import time
from contextlib import contextmanager
from pathlib import Path

from playwright.sync_api import Error as PlaywrightError
from playwright.sync_api import Locator, Page, expect

RUN_ALL_TIMEOUT = 120.0  # seconds for all cells of one notebook
RUN_ALL_RETRY_AFTER = 15.0  # re-issue "Run All Cells" when nothing started within this time
UI_TIMEOUT_MS = 30_000
# generous: the kernel may still be busy with the cells before on a loaded 2-CPU machine
PLOT_TIMEOUT_MS = 120_000

_PROMPT_DONE = re.compile(r"^\[\d+\]:?$")
_PROMPT_BUSY = re.compile(r"^\[\*\]:?$")

# (prompts of the non-empty code cells, stderr/error output texts) of the visible notebook
_JS_CELL_STATE = """() => {
  const panel = document.querySelector('.jp-NotebookPanel:not(.lm-mod-hidden)');
  if (!panel) return null;
  const prompts = Array.from(panel.querySelectorAll('.jp-CodeCell'))
    .filter(c => (c.querySelector('.jp-InputArea-editor') || {}).textContent?.trim())
    .map(c => c.querySelector('.jp-InputArea-prompt').textContent.trim());
  const stderr = Array.from(panel.querySelectorAll(
      '.jp-OutputArea-output[data-mime-type="application/vnd.jupyter.stderr"]'))
    .map(e => e.innerText);
  return {prompts, stderr};
}"""


@contextmanager
def fresh_page(browser, height: int = 1000, screenshot: Path | None = None):
    """A page in a browser context of its own (1600 x ``height``), closed on the way out. With
    ``screenshot``, a test that ends without having saved it (e.g. because it failed) leaves the
    page's picture there."""
    context = browser.new_context(viewport={"width": 1600, "height": height})
    context.set_default_timeout(UI_TIMEOUT_MS)
    page = context.new_page()
    try:
        yield page
    finally:
        if screenshot is not None:
            if not screenshot.exists():
                try:
                    page.screenshot(path=str(screenshot), full_page=True)
                except Exception as exc:  # a failed screenshot must not hide the test's own error
                    print(f"screenshot failed: {exc}")
            print(f"screenshot: {screenshot}")
        context.close()


class NotebookPage:
    """One notebook opened in JupyterLab in a fresh workspace of its own."""

    def __init__(self, page: Page, server, name: str):
        self.page, self.server, self.name = page, server, name
        self.console_errors: list[str] = []
        page.on("console", lambda m: m.type == "error" and self.console_errors.append(m.text))
        page.on("pageerror", lambda e: self.console_errors.append(f"pageerror: {e}"))

    # -- opening -------------------------------------------------------------------------------
    def open(self) -> None:
        workspace = re.sub(r"\W", "-", self.name.rsplit(".", 1)[0])
        self.page.goto(self.server.lab_url(self.name, workspace), wait_until="domcontentloaded")
        expect(self.page.locator(".jp-NotebookPanel .jp-Cell").first).to_be_visible(timeout=60_000)
        self.wait_kernel_idle()

    def _session(self) -> dict | None:
        for s in self.server.api("/api/sessions"):
            if s.get("path") == self.name or s.get("notebook", {}).get("path") == self.name:
                return s
        return None

    def wait_kernel_idle(self, timeout: float = 60.0) -> None:
        """Until the notebook's kernel exists and is idle (asked of the server's REST API)."""
        deadline = time.monotonic() + timeout
        state = None
        while time.monotonic() < deadline:
            self._accept_dialogs()
            s = self._session()
            state = s and s.get("kernel", {}).get("execution_state")
            if state == "idle":
                return
            time.sleep(0.3)
        raise AssertionError(f"{self.name}: kernel not idle after {timeout:.0f}s (state: {state})\n"
                             f"server log:\n{self.server.log_tail()}")

    def _accept_dialogs(self) -> None:
        """Accept a modal (e.g. 'Select Kernel') if one blocks the notebook."""
        dialog = self.page.locator(".jp-Dialog")
        if dialog.count() and dialog.first.is_visible():
            button = dialog.locator(".jp-Dialog-button.jp-mod-accept")
            if button.count():
                button.first.click()

    # -- running -------------------------------------------------------------------------------
    def _click_run_all(self) -> None:
        self.page.locator(".jp-NotebookPanel .jp-Notebook").first.click(position={"x": 5, "y": 5})
        self.page.locator(".lm-MenuBar-itemLabel", has_text=re.compile(r"^Run$")).click()
        self.page.locator(".lm-Menu-itemLabel", has_text=re.compile(r"^Run All Cells$")).click()

    def cell_state(self) -> dict:
        return self.page.evaluate(_JS_CELL_STATE) or {"prompts": [], "stderr": []}

    def run_all(self, timeout: float = RUN_ALL_TIMEOUT) -> int:
        """Run all cells; wait until every non-empty code cell shows an execution number (the
        server's copies of the notebooks have none stored, see conftest.py).

        A fresh kernel sometimes ignores the first "Run All Cells": when no cell has started after
        RUN_ALL_RETRY_AFTER seconds and the kernel is idle, the command is issued again.
        Fails at once on a Python traceback in an output. Returns the number of "Run All" clicks.
        """
        clicks, last_click = 1, time.monotonic()
        self._click_run_all()
        deadline = last_click + timeout
        state = self.cell_state()
        while time.monotonic() < deadline:
            state = self.cell_state()
            prompts = state["prompts"]
            tracebacks = [t for t in state["stderr"] if "Traceback" in t or re.search(
                r"^\w*(Error|Exception)\b", t, re.M)]
            if tracebacks:
                raise AssertionError(f"{self.name}: a cell raised:\n" + "\n---\n".join(tracebacks))
            if prompts and all(_PROMPT_DONE.match(p) for p in prompts):
                self.wait_kernel_idle()
                return clicks
            started = any(_PROMPT_BUSY.match(p) or _PROMPT_DONE.match(p) for p in prompts)
            if (not started and time.monotonic() - last_click > RUN_ALL_RETRY_AFTER
                    and clicks < 4):
                s = self._session()
                if s and s.get("kernel", {}).get("execution_state") == "idle":
                    self._accept_dialogs()
                    self._click_run_all()
                    clicks, last_click = clicks + 1, time.monotonic()
            time.sleep(0.5)
        raise AssertionError(
            f"{self.name}: cells not all executed after {timeout:.0f}s ({clicks} Run All click(s)); "
            f"prompts: {state['prompts']}\nstderr outputs: {state['stderr']}\n"
            f"browser console errors: {self.console_errors[-10:]}\n"
            f"server log:\n{self.server.log_tail()}")

    # -- dashboards ----------------------------------------------------------------------------
    def dashboards(self) -> Locator:
        """The ipywidgets Tabs in the notebook's outputs (each pypto_lab dashboard has one)."""
        return self.page.locator(".jp-NotebookPanel .jp-OutputArea-output .widget-tab")

    def dashboard_with_tab(self, title: str) -> Locator:
        """The first dashboard (ipywidgets Tab) in the outputs that has a tab titled `title`."""
        return self.dashboards().filter(has=self.page.locator(
            ".lm-TabBar-tabLabel", has_text=re.compile(rf"^\s*{re.escape(title)}\s*$"))).first


def select_tab(dashboard: Locator, title: str) -> None:
    """Click the tab titled `title` of an ipywidgets Tab and wait until it is the current one."""
    tab = dashboard.locator(".lm-TabBar-tab").filter(
        has=dashboard.page.locator(".lm-TabBar-tabLabel", has_text=re.compile(rf"^\s*{title}\s*$"))
    ).first
    tab.scroll_into_view_if_needed()
    tab.click()
    expect(tab).to_have_class(re.compile(r"\blm-mod-current\b"), timeout=UI_TIMEOUT_MS)


def _control_choices(control: Locator) -> list[tuple[str, object]]:
    """Ways to set `control` (a Dropdown, ToggleButtons, RadioButtons or slider) to another value:
    a list of (description, action) with action a zero-argument callable."""
    choices: list[tuple[str, object]] = []
    select = control.locator("select")
    if select.count():
        sel = select.first
        current = sel.input_value()
        for value in sel.locator("option").evaluate_all("os => os.map(o => o.value)"):
            if value != current:
                choices.append((f"select option {value!r}",
                                lambda v=value: sel.select_option(value=v)))
        return choices
    buttons = control.locator("button")
    if buttons.count():
        for i in range(buttons.count()):
            b = buttons.nth(i)
            if "mod-active" not in (b.get_attribute("class") or ""):
                choices.append((f"click button {b.inner_text()!r}", b.click))
        return choices
    radios = control.locator("input[type=radio]")
    if radios.count():
        for i in range(radios.count()):
            r = radios.nth(i)
            if not r.is_checked():
                choices.append((f"check radio #{i}", r.check))
        return choices
    handle = control.locator(".noUi-handle, [role=slider]")
    if handle.count():
        h = handle.first
        for key in ("ArrowRight", "ArrowLeft"):
            choices.append((f"press {key} on slider",
                            lambda k=key: (h.focus(), h.press(k))))
        return choices
    checkbox = control.locator("input[type=checkbox]")
    if checkbox.count():
        choices.append(("toggle checkbox", checkbox.first.click))
    return choices


def change_until_text_changes(control: Locator, watched: Locator,
                              per_choice_ms: int = 60_000) -> tuple[str, str, str]:
    """Set `control` to each other value in turn until `watched`'s text changes.

    The other values are tried last one first (the setting most unlike the current one first),
    so a value that happens to give the same result costs as little waiting as possible.

    Returns (text before, action that changed it, text after)."""
    before = watched.inner_text().strip()
    choices = _control_choices(control)[::-1]
    if not choices:
        raise AssertionError(f"no way found to change the control:\n{control.inner_html()[:2000]}")
    tried = []
    for what, action in choices:
        action()
        try:
            expect(watched).not_to_have_text(re.compile(rf"^\s*{re.escape(before)}\s*$"),
                                             timeout=per_choice_ms)
        except (AssertionError, PlaywrightError):
            tried.append(what)
            continue
        return before, what, watched.inner_text().strip()
    raise AssertionError(f"the text {before!r} did not change after any of: {tried}")
