"""Helpers for the offline HTML report (`pypto_lab.save_html`) in a real browser: open it with the
network refused, and keep screenshots where ``$PYPTO_SCREENSHOTS`` says."""

from __future__ import annotations

import os
import shutil
import sys
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]


def screenshot(element, shot: Path, **kw) -> None:
    """A screenshot of ``element`` (a page or a locator) at ``shot``, copied into
    ``$PYPTO_SCREENSHOTS`` when it is set (for the closing note's views)."""
    element.screenshot(path=str(shot), **kw)
    folder = os.environ.get("PYPTO_SCREENSHOTS")
    if folder:
        Path(folder).mkdir(parents=True, exist_ok=True)
        shutil.copy(shot, Path(folder) / shot.name)
        print(f"screenshot: {Path(folder) / shot.name}")


def flash_attention_report(folder: Path):
    """(kernel, report path, save_html seconds) of our examples/flash_attention.py after two calls
    (batch 2 x seq 100, then 1 x 200): the ~2,000-task report the browser tests open."""
    sys.path.insert(0, str(REPO / "examples"))
    try:
        import flash_attention as fa
    finally:
        sys.path.pop(0)
    import pypto_lab

    for batch, seq in ((2, 100), (1, 200)):
        fa.check(batch, seq)
    path = folder / "flash_attention_report.html"
    t0 = time.perf_counter()
    pypto_lab.save_html(fa.flash_attention, path)
    return fa.flash_attention, path, time.perf_counter() - t0


def open_report(browser, path: Path, height: int = 1000, ready: str = "section[data-tab=graph]"):
    """(context, page, refused urls, page errors, seconds until ``ready`` showed) of the report at
    ``path``: every request but the file itself is refused (the report must be self-contained)."""
    context = browser.new_context(viewport={"width": 1500, "height": height})
    page = context.new_page()
    refused, errors = [], []

    def route(r):
        if r.request.url.startswith("file://"):
            return r.continue_()
        refused.append(r.request.url)
        return r.abort()

    page.route("**/*", route)
    page.on("pageerror", lambda e: errors.append(str(e)))
    t0 = time.perf_counter()
    page.goto(path.as_uri())
    page.wait_for_selector(ready, state="visible")
    return context, page, refused, errors, time.perf_counter() - t0
