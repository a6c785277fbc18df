"""The Tune tab: runtime-option controls that re-simulate the same call (``RunRecord.simulate``,
nothing recomputed) and show the new timeline against the previous one."""

from __future__ import annotations

import ipywidgets as W

from .. import views
from .timeline import TimelineView

# runtime option -> (label, control factory); each control gets class "pypto-tune-<option>"
_CONTROLS = {
    "device_sched_mode": ("sched mode", lambda: W.Dropdown(options=[
        ("0 FIFO", 0), ("1 L2 affinity", 1), ("2 fair threads", 2), ("3 affinity + fair", 3)])),
    "stitch_function_max_num": ("stitch max", lambda: W.BoundedIntText(min=1, max=1024)),
    "valid_shape_optimize": ("valid shape opt", lambda: W.Dropdown(options=[("0 off", 0), ("1 on", 1)])),
    "launch_sched_aicpu_num": ("aicpu num", lambda: W.IntSlider(min=1, max=7, continuous_update=False)),
}
_SHORT = {"device_sched_mode": "sched", "stitch_function_max_num": "stitch",
          "valid_shape_optimize": "vso", "launch_sched_aicpu_num": "aicpu"}


def _label(options: dict) -> str:
    return " ".join(f"{_SHORT[k]}={v}" for k, v in options.items())


def makespan_text(timeline) -> str:
    """What the ``pypto-makespan`` widget shows: ``makespan <cycles> cycles (<us> us)``."""
    s = timeline.stats
    return f"makespan {s['makespan_cycles']} cycles ({s['makespan_us']:.2f} us)"


class TunePanel(W.VBox):
    """One control per runtime option (``controls``); a change re-simulates ``run`` and shows
    ``makespan``, ``compare`` (new vs previous) and both timelines (``current``, ``previous``)."""

    def __init__(self, run):
        from pypto.options import OPTIONS

        self.run = run
        self.timeline = run.timeline
        ran_with = dict(getattr(self.timeline, "options", None) or {})
        self.controls = {}
        for name, (label, make) in _CONTROLS.items():
            control = make()
            control.description = label
            control.tooltip = OPTIONS["runtime", name].doc
            control.value = int(ran_with.get(name, OPTIONS["runtime", name].default))
            control.add_class(f"pypto-tune-{name}")
            control.observe(self._changed, "value")
            self.controls[name] = control
        self.options = self.values()
        self.status = W.Label()
        self.makespan = W.Label(makespan_text(self.timeline)).add_class("pypto-makespan")
        self.compare = W.HTML()
        self.current = TimelineView(self.timeline, title=f"now: {_label(self.options)}")
        self.previous = TimelineView(download=False)
        self.previous.layout.display = "none"
        super().__init__([W.HBox(list(self.controls.values()), layout=W.Layout(flex_flow="row wrap")),
                          W.HBox([self.makespan, self.status]), self.compare, self.current, self.previous])

    def values(self) -> dict:
        """The runtime options the controls are set to."""
        return {name: c.value for name, c in self.controls.items()}

    def _changed(self, _change) -> None:
        from pypto.errors import PyptoError

        options = self.values()
        if options == self.options:
            return
        self.status.value = "simulating…"
        for c in self.controls.values():
            c.disabled = True
        try:
            timeline = self.run.simulate(options)
        except PyptoError as e:  # a bad combination is shown, not raised into the widget callback
            self.status.value = f"simulation failed: {e}".splitlines()[0]
            return
        finally:
            for c in self.controls.values():
                c.disabled = False
        if timeline is None:
            self.status.value = "this call cannot be re-simulated"
            return
        before, before_options = self.timeline, self.options
        self.timeline, self.options = timeline, options
        labels = (f"before: {_label(before_options)}", f"now: {_label(options)}")
        self.makespan.value = makespan_text(timeline)
        self.compare.value = views.compare_html(before, timeline, labels)
        self.current.show(timeline, title=labels[1])
        self.previous.show(before, title=labels[0])
        self.previous.layout.display = None
        self.status.value = ""
