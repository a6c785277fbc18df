"""Timeline widgets: one timeline as interactive swimlanes with its stats line and a Chrome-trace
download link, and an opener that shows an upstream NPU trace file next to it."""

from __future__ import annotations

import json

import ipywidgets as W

from .. import views


class TimelineView(W.VBox):
    """``timeline`` as a plotly FigureWidget (in a box of class ``pypto-timeline``), its stats
    line and, when ``download``, a link to its Chrome trace. `show` replaces the timeline."""

    def __init__(self, timeline=None, title: str | None = None, download: bool = True, height: int | None = None):
        self.timeline = None
        self.figure = None
        self._download, self._height = download, height
        self.stats = W.HTML()
        self.figure_box = W.VBox(layout=W.Layout(width="100%")).add_class("pypto-timeline")
        self.link = W.HTML()
        super().__init__([self.stats, self.figure_box, self.link])
        if timeline is not None:
            self.show(timeline, title)

    def show(self, timeline, title: str | None = None) -> None:
        import plotly.graph_objects as go

        self.timeline = timeline
        self.figure = go.FigureWidget(views.timeline_figure(timeline, title=title, height=self._height))
        self.figure_box.children = (self.figure,)
        self.stats.value = views.stats_line(timeline)
        self.link.value = views.trace_download_html(timeline) if self._download else ""


class TraceOpener(W.VBox):
    """Open an upstream trace (a path typed in ``path`` + ``open_button``, or ``upload``) with
    ``views.load_trace`` and show it in ``view`` below."""

    def __init__(self):
        self.path = W.Text(placeholder="path to an NPU trace file (.json)", description="trace",
                           layout=W.Layout(width="50%"))
        self.open_button = W.Button(description="open", tooltip="load the trace at this path")
        self.upload = W.FileUpload(accept=".json", multiple=False, description="upload trace")
        self.message = W.HTML()
        self.view = TimelineView(download=False)
        self.view.layout.display = "none"
        self.open_button.on_click(lambda _b: self.load(self.path.value.strip()))
        self.upload.observe(self._uploaded, "value")
        super().__init__([W.HBox([self.path, self.open_button, self.upload]), self.message, self.view])

    def load(self, source, name: str | None = None) -> bool:
        """Load ``source`` (a path or a parsed trace dict) and show it; False with a message on failure."""
        if not source:
            self.message.value = "<i>give a trace file path</i>"
            return False
        name = name or (str(source) if isinstance(source, str) else "uploaded trace")
        try:
            trace = views.load_trace(source)
        except (OSError, ValueError, KeyError, TypeError, AttributeError) as e:
            self.message.value = f"<span style='color:#b00'>could not open {_esc(name)}: {_esc(e)}</span>"
            return False
        self.message.value = f"<i>{_esc(name)}</i>"
        self.view.show(trace, title=f"upstream trace: {name}")
        self.view.layout.display = None
        return True

    def _uploaded(self, change) -> None:
        for item in change["new"] or ():
            try:
                data = json.loads(bytes(item["content"]).decode("utf-8"))
            except (ValueError, UnicodeDecodeError) as e:
                self.message.value = f"<span style='color:#b00'>{_esc(item.get('name'))} is not JSON: {_esc(e)}</span>"
                return
            self.load(data, name=item.get("name"))


def _esc(value) -> str:
    from html import escape

    return escape(str(value))


class TimelinePanel(W.VBox):
    """The Timeline tab: the call's timeline (``view``) and an upstream trace opener below it."""

    def __init__(self, timeline, title: str | None = None):
        self.view = TimelineView(timeline, title=title)
        self.opener = TraceOpener()
        super().__init__([self.view, W.HTML("<b>Upstream NPU trace</b>"), self.opener])
