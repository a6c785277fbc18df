"""The Tune tab: runtime-option controls that re-simulate the same call (``RunRecord.simulate``,
nothing recomputed) and show the new timeline against the previous one."""

from __future__ import annotations

import ipywidgets as W

from .. import views
from ..views._html import esc, table
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


SCHED_MODES = ((0, "FIFO"), (1, "L2 affinity"), (2, "fair threads"), (3, "affinity + fair"))
RECOMPILE_MARK = " ⟳"


def makespan_text(timeline) -> str:
    """What the ``pypto-makespan`` widget shows: ``makespan <cycles> cycles (<us> µs)``."""
    s = timeline.stats
    return f"makespan {s['makespan_cycles']} cycles ({s['makespan_us']:.2f} µs)"


def sweep_html(rows: list, current: int) -> str:
    """The sched-mode sweep as a table: one row per ``(mode, timeline)``, the best makespan in bold
    and each makespan's change against the mode the controls are set to, with the timing model's
    error for the best row's timeline under it."""
    base = next((tl for mode, tl in rows if mode == current), None)
    best = min(tl.stats["makespan_cycles"] for _, tl in rows)
    best_timeline = next(tl for _, tl in rows if tl.stats["makespan_cycles"] == best)
    out = []
    names = dict(SCHED_MODES)
    for mode, tl in rows:
        s = tl.stats
        cycles = f"{s['makespan_cycles']:,}"
        if s["makespan_cycles"] == best:
            cycles = f"<b>{cycles}</b>"
        util = " / ".join(f"{s['utilization'].get(k, 0.0):.1%}" for k in ("AIC", "AIV"))
        change = views.timeline.change_html(base.stats["makespan_cycles"], s["makespan_cycles"], True) if base else ""
        out.append((f"{mode} {esc(names.get(mode, ''))}" + (" (current)" if mode == current else ""),
                    cycles, f"{s['makespan_us']:,.2f} µs", change, util, f"{s['bubbles']['count']:,}"))
    return table(("device_sched_mode", "makespan (cycles)", "makespan", "vs current", "utilization AIC / AIV",
                  "bubbles"), out) + views.model_error_html(best_timeline)


class TunePanel(W.VBox):
    """One control per runtime option (``controls``; options that change the generated code, i.e.
    would recompile, are marked ⟳); a change re-simulates ``run`` and shows ``makespan``,
    ``compare`` (new vs previous) and both timelines on one time axis (``previous`` above,
    ``current`` below), the timing model's error beside the makespan (``model_error``) and under
    each table of simulated times. ``sweep_button`` simulates every ``device_sched_mode`` into ``sweep``."""

    def __init__(self, run):
        from pypto.options import OPTIONS

        self.run = run
        self.timeline = run.timeline
        compiled = getattr(run, "compiled", None)
        ran_with = dict(getattr(self.timeline, "options", None) or {})
        self.controls = {}
        for name, (label, make) in _CONTROLS.items():
            spec = OPTIONS["runtime", name]
            control = make()
            control.description = label + (RECOMPILE_MARK if spec.affects_compile else "")
            control.style = {"description_width": "initial"}  # the whole label, never cut off
            control.tooltip = spec.doc + (" (changes the generated code: a real call recompiles)"
                                          if spec.affects_compile else "")
            value = int(ran_with.get(name, spec.default))
            if name == "launch_sched_aicpu_num":  # the machine caps it: the slider shows what runs
                cap = int(getattr(getattr(self.timeline, "machine", None), "max_sched_aicpu", 0) or control.max)
                control.max = cap
                if value > cap:
                    control.tooltip += f" (asked {value}; this machine runs at most {cap} schedule threads)"
                value = min(value, cap)
            control.value = value
            control.add_class(f"pypto-tune-{name}")
            control.observe(self._changed, "value")
            self.controls[name] = control
        self.options = self.values()
        self.status = W.Label()
        self.makespan = W.Label(makespan_text(self.timeline)).add_class("pypto-makespan")
        self.model_error = W.HTML(views.model_error_html(self.timeline)).add_class("pypto-tune-model-error")
        self.compare = W.HTML()
        self.sweep_button = W.Button(description="sweep all sched modes", icon="table",
                                     tooltip="simulate device_sched_mode 0, 1, 2 and 3 with the other options as set",
                                     layout=W.Layout(width="auto")).add_class("pypto-tune-sweep")
        self.sweep = W.HTML().add_class("pypto-tune-sweep-table")
        self.sweep_button.on_click(lambda _b: self.run_sweep())
        legend = W.HTML(f"<span style='color:#666;font-size:12px'>{RECOMPILE_MARK.strip()} changes the generated "
                        "code (a real call recompiles; here the schedule is re-simulated)</span>")
        # the call as it ran is drawn at once; after a change it moves up as "before"
        self.previous = TimelineView(download=False, compiled=compiled, summary=False)
        self.previous.layout.display = "none"
        self.current = TimelineView(self.timeline, title=f"now: {_label(self.options)}", compiled=compiled,
                                    summary=False)
        super().__init__([W.HBox(list(self.controls.values()), layout=W.Layout(flex_flow="row wrap")),
                          legend, W.HBox([self.makespan, self.model_error, self.status, self.sweep_button],
                                         layout=W.Layout(align_items="center")),
                          self.sweep, self.compare, self.previous, self.current], layout=W.Layout(width="100%"))

    def values(self) -> dict:
        """The runtime options the controls are set to."""
        return {name: c.value for name, c in self.controls.items()}

    def run_sweep(self) -> list:
        """Simulate every device_sched_mode with the other options as set; fill ``sweep``."""
        from pypto.errors import PyptoError

        options = self.values()
        rows = []
        self.status.value = "sweeping sched modes…"
        try:
            for mode, _name in SCHED_MODES:
                tl = self.run.simulate({**options, "device_sched_mode": mode})
                if tl is None:
                    self.status.value = "this call cannot be re-simulated"
                    return []
                rows.append((mode, tl))
        except PyptoError as e:
            self.status.value = f"simulation failed: {e}".splitlines()[0]
            return []
        self.sweep.value = sweep_html(rows, options["device_sched_mode"])
        self.status.value = ""
        return rows

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
        self.model_error.value = views.model_error_html(timeline)
        self.compare.value = views.compare_html(before, timeline, labels) + views.model_error_html(timeline)
        x_max = max(before.stats["makespan_us"], timeline.stats["makespan_us"])  # one time axis for both
        self.previous.show(before, title=labels[0], x_max=x_max)
        self.current.show(timeline, title=labels[1], x_max=x_max)
        self.previous.layout.display = None
        self.status.value = ""
