"""Helpers for the offline HTML report (`pypto_lab.save_html`) in a real browser: open it with the
network refused, and keep screenshots where ``$PYPTO_SCREENSHOTS`` says."""

from __future__ import annotations

import os
import shutil
import time
from pathlib import Path


def keep_screenshot(shot: Path) -> None:
    """Copy ``shot`` into ``$PYPTO_SCREENSHOTS`` when it is set (for the closing note's views)."""
    folder = os.environ.get("PYPTO_SCREENSHOTS")
    if folder:
        Path(folder).mkdir(parents=True, exist_ok=True)
        shutil.copy(shot, Path(folder) / shot.name)
        print(f"screenshot: {Path(folder) / shot.name}")


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
