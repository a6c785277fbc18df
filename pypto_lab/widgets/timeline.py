"""Timeline widgets: one timeline as interactive swimlanes (the canvas renderer of
``views/swimlane.js`` as an anywidget) with its stats line and per-leaf table, and an opener that
shows an upstream NPU trace file next to it."""

from __future__ import annotations

import json

import anywidget
import ipywidgets as W
import traitlets

from .. import views


class _StaticFallback:
    """Beside the live widget, the static picture of ``self.timeline``: what a stored notebook shows
    where no widget runs (on GitHub, or before it runs) instead of a model id."""

    def _repr_mimebundle_(self, **kwargs):
        bundle = super()._repr_mimebundle_(**kwargs)
        data = bundle[0] if isinstance(bundle, tuple) else bundle
        if isinstance(data, dict):
            data["text/html"] = static_html(self.timeline)
        return bundle


class SwimlaneChart(_StaticFallback, anywidget.AnyWidget):
    """The swimlane canvas (``pypto_lab/views/swimlane.js``) as an anywidget: ``meta`` is the
    payload's JSON header, ``data`` its typed columns (one binary frame). The browser asks for a
    task's details and for the Chrome trace with custom messages; both are built on request."""

    _esm = views.swimlane.widget_esm()
    meta = traitlets.Dict().tag(sync=True)
    data = traitlets.Bytes(b"").tag(sync=True)

    def __init__(self, timeline=None, compiled=None, title: str | None = None, x_max: float | None = None,
                 filename: str = "pypto_timeline.json", **kwargs):
        super().__init__(**kwargs)
        self.timeline, self.compiled, self.filename = None, compiled, filename
        self.on_msg(self._message)
        self.show(timeline, title=title, x_max=x_max)

    def show(self, timeline, title: str | None = None, x_max: float | None = None, **options) -> None:
        """Draw ``timeline`` (a simulated `Timeline` or a `TraceTimeline`); ``x_max`` (µs) fixes
        the end of the time axis, so two charts can share it. ``options`` go to the renderer
        (``height`` in px, ``no_download``)."""
        self.timeline = timeline
        meta, data = views.swimlane_payload(timeline, title=title, x_max=x_max)
        meta.update(details=self.compiled is not None, **options)
        with self.hold_sync():
            self.meta, self.data = meta, data

    def details_html(self, task: int) -> str:
        """What the details panel shows for ``task`` (its leaf's code, source lines, tile, pipes)."""
        if self.compiled is None or isinstance(self.timeline, views.TraceTimeline):
            return ""
        return views.task_details_html(self.timeline, self.compiled, task)

    def _message(self, _widget, content, _buffers) -> None:
        kind = (content or {}).get("kind")
        if kind == "details":
            task = int(content.get("task", -1))
            self.send({"kind": "details", "task": task, "html": self.details_html(task)})
        elif kind == "trace" and self.timeline is not None:
            self.send({"kind": "trace", "filename": self.filename}, [views.trace_json_bytes(self.timeline)])



def static_html(timeline) -> str:
    """The stats line and a small static picture of ``timeline``, for outputs read without a kernel."""
    if timeline is None:
        return "<i>no timeline</i>"
    return (f'<div style="font-family:sans-serif">{_esc(views.stats_line(timeline))}</div>'
            + views.model_error_html(timeline) + views.timeline.static_svg(timeline))


class TimelineView(_StaticFallback, W.VBox):
    """``timeline`` as a `SwimlaneChart` (``chart``, in a box of class ``pypto-timeline``) under
    its stats line and the timing model's error (``pypto-model-error``), with the per-leaf table
    (``summary``) below. `show` replaces the timeline."""

    def __init__(self, timeline=None, title: str | None = None, download: bool = True, height: int | None = None,
                 compiled=None, summary: bool = True):
        self.timeline = None
        self.stats = W.HTML()
        self.chart = SwimlaneChart(compiled=compiled, filename="pypto_timeline.json")
        self.chart.add_class("pypto-timeline-chart")
        self._download, self._height, self._summary = download, height, summary
        self.figure_box = W.VBox([self.chart], layout=W.Layout(width="100%")).add_class("pypto-timeline")
        self.summary = W.HTML()
        super().__init__([self.stats, self.figure_box, self.summary], layout=W.Layout(width="100%"))
        if timeline is not None:
            self.show(timeline, title)

    @property
    def figure(self):
        """The chart widget (kept under its old name for callers of the plotly version)."""
        return self.chart

    def show(self, timeline, title: str | None = None, x_max: float | None = None) -> None:
        self.timeline = timeline
        options = {"no_download": not self._download}
        if self._height:
            options["height"] = self._height
        self.chart.show(timeline, title=title, x_max=x_max, **options)
        self.stats.value = _esc(views.stats_line(timeline)) + views.model_error_html(timeline)
        # per-lane busy shares are in the chart's lane labels; the per-leaf table is folded below
        self.summary.value = (f"<details><summary>per leaf</summary>{views.leaf_summary_html(timeline)}</details>"
                              if self._summary and timeline is not None else "")



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

    def __init__(self, timeline, title: str | None = None, compiled=None):
        from pypto.runtime.buffers import busiest_cores
        from pypto.runtime.eventlog import TaskEvents

        self.view = TimelineView(timeline, title=title, compiled=compiled)
        self.opener = TraceOpener()
        # buffers over time: drawn when the fold is first opened (a core at a time)
        self.timeline = timeline
        ev = getattr(timeline, "events", None)
        used = sorted({ev.core_names[c] for c in set(ev.core.tolist())}, key=views.natural_key) \
            if isinstance(ev, TaskEvents) and len(ev) else []
        first = busiest_cores(timeline) if used else []
        self.buffer_core = W.SelectMultiple(options=used, value=tuple(first), rows=min(len(used), 6) or 1,
                                            description="cores").add_class("pypto-buffers-cores")
        self.buffers = W.HTML().add_class("pypto-buffers-tab")
        self.buffer_core.observe(lambda _c: self._draw_buffers(), "value")
        self.buffer_box = W.Accordion(children=[W.VBox([self.buffer_core, self.buffers])],
                                      titles=("Buffers over time (UB / L1 / L0A / L0B / L0C per core)",),
                                      selected_index=None)
        self.buffer_box.observe(lambda _c: self._draw_buffers(), "selected_index")
        super().__init__([self.view, self.buffer_box, W.HTML("<b>Upstream NPU trace</b>"), self.opener])

    def _draw_buffers(self) -> None:
        if self.buffer_box.selected_index is None:
            return
        self.buffers.value = views.buffers_html(self.timeline, self.buffer_core.value)
