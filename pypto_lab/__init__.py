"""pypto_lab: the notebook lab for pypto (the ``%%pypto`` magic and the kernel dashboard).

``%load_ext pypto_lab`` registers ``%%pypto``; ``pypto_lab.show(kernel)`` shows the dashboard of
any kernel that has been called. Importing this package is cheap: ipywidgets, anywidget and the
views are imported on first use.
"""

from __future__ import annotations

__all__ = ["TABS", "dashboard", "parse_tabs", "load_ipython_extension", "save_html", "show",
           "unload_ipython_extension"]

# The dashboard's tabs, in display order (also the names ``--show`` and ``tabs=`` accept).
TABS = ("graph", "passes", "code", "cache", "timeline", "tune", "sweep")


def parse_tabs(tabs=None) -> tuple:
    """``None``/``"all"`` -> every tab; else the named tabs (a comma separated string or a list),
    in display order. Raises ``ValueError`` naming an unknown tab."""
    if tabs is None:
        return TABS
    names = tabs.split(",") if isinstance(tabs, str) else list(tabs)
    names = {str(n).strip().lower() for n in names} - {""}
    if not names or "all" in names:
        return TABS
    unknown = sorted(names - set(TABS))
    if unknown:
        raise ValueError(f"unknown tab {', '.join(map(repr, unknown))}: expected any of {', '.join(TABS)} or all")
    return tuple(t for t in TABS if t in names)


def load_ipython_extension(ip) -> None:
    """``%load_ext pypto_lab``: register the ``%%pypto`` cell magic."""
    from .magics import PyptoMagics

    ip.register_magics(PyptoMagics)


def unload_ipython_extension(ip) -> None:
    """``%unload_ext pypto_lab``: remove the ``%%pypto`` cell magic again."""
    manager = ip.magics_manager
    manager.magics["cell"].pop("pypto", None)
    manager.registry.pop("PyptoMagics", None)


def dashboard(kernel, tabs=None):
    """The dashboard widget (an ipywidgets VBox) of a kernel's last call.

    ``tabs``: a subset of ``TABS`` (names or a comma separated string); default all of them.
    Raises ``NotCalledError`` (a ``ValueError``, shown by IPython as one line) when the kernel
    has not been called yet.
    """
    from .widgets.dashboard import Dashboard

    return Dashboard(kernel, tabs=tabs)


def show(kernel, tabs=None) -> None:
    """Display the dashboard of ``kernel`` (a ``pypto.jit`` kernel called at least once)."""
    from IPython.display import display

    display(dashboard(kernel, tabs=tabs))


def save_html(kernel, path) -> str:
    """Write a one-page, self-contained HTML report of ``kernel``'s last call to ``path``: the
    summary, graph, passes with diffs, code, cache and the interactive timeline, readable
    offline without Python (`pypto_lab.report`). Returns the path written."""
    from .report import save_html as save

    return save(kernel, path)
