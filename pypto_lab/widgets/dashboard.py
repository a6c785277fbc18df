"""The dashboard of one kernel's last call: a summary line and the hints (folded) over a Tab of
Graph, Passes, Code, Cache, Timeline and Tune. A tab's content is built the first time it is selected (or asked for
with `Dashboard.panel`), so opening the dashboard renders one graph, not everything."""

from __future__ import annotations

import ipywidgets as W

from .. import parse_tabs, views
from .panels import CachePanel, CodePanel, GraphPanel, PassesPanel
from .timeline import TimelinePanel
from .sweep import SweepPanel
from .tune import TunePanel


class NotCalledError(ValueError):
    """The kernel has no call to show yet; IPython shows this as its one-line message."""

    def _render_traceback_(self) -> list:
        return [f"{type(self).__name__}: {self}"]

    @classmethod
    def of(cls, kernel, name: str, then: str) -> "NotCalledError":
        """The error for ``kernel`` with no call to show; when its calls so far were all refused,
        it says so (with the refusal) rather than "not called yet"."""
        refused = getattr(kernel, "refused_call", None)
        if refused:
            return cls(f"{name} has not run yet: its call was refused before running ({refused}); "
                       f"fix the call, then {then}")
        return cls(f"{name} has not been called yet: call it once, then {then}")


_BUILDERS = {
    "graph": lambda d: GraphPanel(d.compiled),
    "passes": lambda d: PassesPanel(d.compiled),
    "code": lambda d: CodePanel(d.compiled),
    "cache": lambda d: CachePanel(d.kernel),
    "timeline": lambda d: TimelinePanel(d.run.timeline, title=f"{d.compiled.name}: simulated", compiled=d.compiled),
    "tune": lambda d: TunePanel(d.run),
    "sweep": lambda d: SweepPanel(d.kernel, d.run),
}


class Dashboard(W.VBox):
    """The dashboard of ``kernel`` (a ``pypto.jit`` kernel) for its last call.

    ``tabs`` restricts the tabs (names or a comma separated string, see ``pypto_lab.TABS``).
    ``tab`` is the ipywidgets Tab; ``panel(name)`` returns a tab's content, building it if needed.
    """

    def __init__(self, kernel, tabs=None):
        run = getattr(kernel, "last_run", None)
        if not hasattr(kernel, "cache_info"):
            raise TypeError(f"pypto_lab needs a pypto.jit kernel, got {type(kernel).__name__}")
        if run is None:
            name = getattr(kernel, "__name__", "kernel")
            raise NotCalledError.of(kernel, name, "show it (the dashboard shows its last call)")
        self.kernel, self.run, self.compiled = kernel, run, run.compiled
        self.names = parse_tabs(tabs)
        self._panels: dict = {}
        self.tab = W.Tab(children=[W.VBox() for _ in self.names],
                         titles=[n.capitalize() for n in self.names])
        self.tab.observe(self._selected, "selected_index")
        self.summary = W.HTML(views.kernel_summary_html(kernel))
        self.hints = W.HTML(views.hints_html(run))  # what a kernel engineer would fix, folded
        self.save_button = W.Button(description="save HTML report", icon="download", layout=W.Layout(width="auto"),
                                    tooltip="write one self-contained HTML file of this dashboard (opens offline, "
                                            "no Python needed) next to the notebook").add_class("pypto-save-html")
        self.saved = W.HTML().add_class("pypto-saved-html")
        self.save_button.on_click(lambda _b: self.save_html())
        super().__init__([W.HBox([self.summary, self.save_button, self.saved],
                                 layout=W.Layout(align_items="flex-start", flex_flow="row wrap")),
                          self.hints, self.tab])
        self.panel(self.names[0])

    def _repr_mimebundle_(self, **kwargs):
        # beside the live widget: a static view for wherever no widget runs (a stored notebook on
        # GitHub, or before it runs) and a readable text/plain instead of the widget's repr
        bundle = super()._repr_mimebundle_(**kwargs)
        bundle["text/plain"] = views.dashboard_text(self.kernel)
        bundle["text/html"] = views.dashboard_fallback_html(self.kernel, self.names)
        return bundle

    def save_html(self, path=None) -> str:
        """Write the report of this dashboard's kernel (`pypto_lab.save_html`) to ``path``
        (default ``<kernel>_report.html`` in the working folder) and show a link to it."""
        from ..report import report_link_html, save_html

        name = getattr(getattr(self.kernel, "fn", None), "__name__", None) or "kernel"
        path = path or f"{name}_report.html"
        try:
            save_html(self.kernel, path)
        except OSError as e:
            self.saved.value = f'<span style="color:#cf222e">could not save {views._html.esc(path)}: {views._html.esc(e)}</span>'
            return ""
        self.saved.value = report_link_html(path)
        return path

    @property
    def titles(self) -> tuple:
        return tuple(self.tab.titles)

    def panel(self, name: str):
        """The content of tab ``name`` ("graph", "passes", ...), built on first use."""
        if name not in self._panels:
            if name not in self.names:
                raise KeyError(f"this dashboard has no {name!r} tab (it has {', '.join(self.names)})")
            built = _BUILDERS[name](self)
            self._panels[name] = built
            self.tab.children[self.names.index(name)].children = (built,)
        return self._panels[name]

    def _selected(self, change) -> None:
        if change["new"] is not None:
            self.panel(self.names[change["new"]])
