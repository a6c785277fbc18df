"""The Sweep tab: run a `pypto.tune` sweep of a kernel from the lab and look at it: a progress bar
and live count, a sortable results table, makespan against each parameter, a Pareto view, and
the best trial's timeline opened beside the current one.

Trials run in this process by default (``runner="inprocess"``: a kernel defined in the notebook
can be swept and the best trial's timeline re-simulated from the kept compiled version), or on
Dask (an embedded cluster or a scheduler's address). ``run sweep`` starts it in the background:
the notebook stays usable, ``cancel`` stops it after the trials in flight, and a ``store`` file
keeps every trial so the same sweep started again resumes where it stopped.
"""

from __future__ import annotations

import ipywidgets as W

from ..views import sweep as sv

_DEFAULT_OPTIONS = "device_sched_mode=0,1,2,3; stitch_function_max_num=1,16,128; launch_sched_aicpu_num=1,3,5"


def call_shapes(run) -> dict:
    """Tensor parameter -> shape of the call ``run`` recorded (the sweep's default call shape).

    Read from the call's own record (its parameters' dims, the dynamic sizes bound in its first
    root instance), not from the executor's last call: that one is per thread (a widget callback
    may run on another) and changes with the kernel's next call."""
    import inspect

    compiled = run.compiled
    stream = None
    if run.simulator is not None:
        stream = inspect.getclosurevars(run.simulator).nonlocals.get("stream")
    env = {}
    if stream is not None:
        try:
            env = stream.env(0)
        except IndexError:  # a call with no root instance
            pass
    shapes = {}
    for p in compiled.program.params:
        dims = getattr(p.value, "shape", None)
        if dims is None:
            continue
        sizes = []
        for d in dims:
            size = d if isinstance(d, int) else env.get(getattr(d, "name", None))
            if size is None:
                break
            sizes.append(int(size))
        else:
            shapes[p.value.name] = tuple(sizes)
    if len(shapes) < sum(1 for p in compiled.program.params if getattr(p.value, "shape", None) is not None):
        memory = getattr(compiled.executor, "last_memory", None)  # e.g. a call with no root instance
        if memory is not None:
            shapes.update({p.value.name: tuple(memory.tensors[i].shape)
                           for i, p in enumerate(compiled.program.params) if i < len(memory.tensors)})
    return shapes


def default_space_text(kernel) -> str:
    """Candidates for a first sweep: each int parameter with a default at half, same and double,
    and the main runtime options."""
    import inspect

    fn = getattr(kernel, "fn", kernel)
    parts = []
    for p in inspect.signature(fn).parameters.values():
        d = p.default
        if isinstance(d, int) and not isinstance(d, bool) and d > 1:
            parts.append(f"{p.name}={d // 2},{d},{d * 2}")
    return "; ".join(parts + [_DEFAULT_OPTIONS])


def parse_space_text(text: str) -> tuple[dict, dict]:
    """``"TILE=16,32; device_sched_mode=0,1"`` -> (kernel parameters, options) candidates."""
    from pypto.options import OPTIONS
    from pypto.tune.cli import _values

    params, options = {}, {}
    for part in text.replace("\n", ";").split(";"):
        if not part.strip():
            continue
        name, sep, values = part.partition("=")
        name = name.strip()
        if not sep or not name or not values.strip():
            raise ValueError(f"sweep space: expected name=v1,v2,... separated by ';', got {part.strip()!r}")
        target = options if name.startswith("pass.") or ("runtime", name) in OPTIONS else params
        target[name] = _values(values)
    return params, options


class SweepPanel(W.VBox):
    """Sweep ``kernel`` (a called ``pypto.jit`` kernel) over the candidates in ``space_text``
    (``name=v1,v2; ...``), on the shapes of its last call ``run`` unless ``shapes`` are given.
    ``run_button`` starts it; ``progress``/``count`` follow it; ``table``, ``scatters`` and
    ``pareto`` show the results with the timing model's error (for the best trial's timeline);
    ``best_button`` opens the best trial's timeline in ``compare``."""

    def __init__(self, kernel, run=None, shapes=None, space_text: str | None = None):
        self.kernel, self.run = kernel, run if run is not None else kernel.last_run
        self.shapes = shapes or (call_shapes(self.run) if self.run is not None else {})
        self.results = None
        self.best_timeline = None  # the best trial's timeline, simulated once the sweep ends
        self.space_text = W.Textarea(value=space_text or default_space_text(kernel), description="space",
                                     layout=W.Layout(width="70%", height="48px")).add_class("pypto-sweep-space")
        self.strategy = W.Dropdown(options=["grid", "tpe", "random"], value="grid", description="search",
                                   layout=W.Layout(width="170px"))
        self.budget = W.BoundedIntText(value=200, min=1, max=100000, description="budget",
                                       layout=W.Layout(width="160px"))
        self.runner = W.Dropdown(options=[("in this process", "inprocess"), ("Dask (local cluster)", "dask"),
                                          ("Dask scheduler", "scheduler")], value="inprocess",
                                 description="runner", layout=W.Layout(width="260px"))
        self.scheduler = W.Text(value="", placeholder="tcp://127.0.0.1:8786", description="scheduler",
                                layout=W.Layout(width="260px"))
        self.store = W.Text(value="", placeholder="sweep.jsonl (optional: keep and resume)", description="store",
                            layout=W.Layout(width="320px")).add_class("pypto-sweep-store")
        self.run_button = W.Button(description="run sweep", button_style="primary").add_class("pypto-sweep-run")
        self.cancel_button = W.Button(description="cancel", disabled=True).add_class("pypto-sweep-cancel")
        self.cancel_button.on_click(lambda _b: self.cancel())
        self.thread = None  # the background sweep, while it runs
        self._stop = None
        self.progress = W.IntProgress(value=0, min=0, max=1, description="trials").add_class("pypto-sweep-progress")
        self.count = W.Label("").add_class("pypto-sweep-count")
        self.sort_by = W.Dropdown(options=["makespan_cycles"], value="makespan_cycles", description="sort by")
        self.descending = W.Checkbox(value=False, description="descending", indent=False)
        self.table = W.HTML().add_class("pypto-sweep-table")
        self.scatters = W.HTML().add_class("pypto-sweep-scatter")
        self.pareto_axis = W.Dropdown(options=[(v, k) for k, v in sv.PARETO_AXES.items()],
                                      value="compile_seconds", description="pareto x")
        self.pareto = W.HTML().add_class("pypto-sweep-pareto")
        self.best_button = W.Button(description="open best timeline", disabled=True).add_class("pypto-sweep-best")
        self.message = W.HTML()
        self.compare = W.HBox(layout=W.Layout(width="100%"))
        self.run_button.on_click(lambda _b: self.start())
        self.best_button.on_click(lambda _b: self.open_best())
        for control in (self.sort_by, self.descending):
            control.observe(lambda _c: self._refresh_table(), "value")
        self.pareto_axis.observe(lambda _c: self._refresh_charts(), "value")
        super().__init__([
            W.HBox([self.space_text, W.VBox([self.strategy, self.budget])]),
            W.HBox([self.runner, self.scheduler, self.store]),
            W.HBox([self.run_button, self.cancel_button, self.progress, self.count]), self.message,
            W.HBox([self.sort_by, self.descending]), self.table, self.scatters,
            W.HBox([self.pareto_axis, self.best_button]), self.pareto, self.compare])

    # ---- running -------------------------------------------------------------------------------
    def start(self, background: bool = False):
        """Run the sweep: here (blocking; returns the results), or with ``background`` in a thread
        (returns the thread; `wait` joins it). The progress widgets update as each trial ends."""
        import threading

        import pypto.tune as tune
        from pypto.errors import PyptoError

        if self.thread is not None and self.thread.is_alive():
            self.message.value = sv.note("a sweep is running: cancel it first")
            return None
        try:
            params, options = parse_space_text(self.space_text.value)
            if not self.shapes:
                raise ValueError("the shapes of the kernel's call are unknown: give shapes= to SweepPanel")
            space = tune.space(self.shapes, params=params, options=options)
        except (ValueError, TypeError) as e:
            self.message.value = sv.note(f"cannot sweep: {str(e).splitlines()[0]}")
            return None
        total = min(space.size, self.budget.value)
        self.progress.max, self.progress.value = total, 0
        self.count.value = f"0 / {total} trials"
        self.message.value = ""
        self.run_button.disabled = self.best_button.disabled = True
        self.cancel_button.disabled = False
        self.compare.children = ()
        self.best_timeline = None
        self._stop = threading.Event()
        runner = {"runner": "inprocess"} if self.runner.value == "inprocess" else \
            {"runner": "dask", "scheduler_address": self.scheduler.value.strip() or None}
        kwargs = dict(strategy=self.strategy.value, budget=self.budget.value, on_trial=self._trial_done,
                      store=self.store.value.strip() or None, stop=self._stop, **runner)

        def work():
            try:
                results = tune.sweep(self.kernel, space, **kwargs)
            except (PyptoError, ValueError, ImportError, OSError) as e:  # shown, not raised into a callback
                self.message.value = sv.note(f"cannot sweep: {str(e).splitlines()[0]}")
                results = None
            except KeyboardInterrupt as e:
                results = getattr(e, "results", None)
                self.message.value = sv.note(str(e))
            finally:
                self.run_button.disabled = False
                self.cancel_button.disabled = True
            if results is not None:
                self._finished(results)
            return results

        if background:
            self.thread = threading.Thread(target=work, name="pypto-sweep", daemon=True)
            self.thread.start()
            return self.thread
        return work()

    def wait(self, timeout: float | None = None):
        """Wait for a background sweep; its results."""
        if self.thread is not None:
            self.thread.join(timeout)
        return self.results

    def cancel(self) -> None:
        """Stop the running sweep after the trials in flight (kept in the store, if any)."""
        if self._stop is not None:
            self._stop.set()

    def _finished(self, results) -> None:
        self.results = results
        # trials never run (pruned, or of a compiled version known to fail) leave the bar short
        self.progress.max = self.progress.value = len(results)
        failed = len(results.failed)
        self.count.value = f"{len(results)} / {len(results)} trials" + (f", {failed} not ok" if failed else "")
        names = results.names
        self.sort_by.options = ["makespan_cycles", *names, *[f for f in sv.FIGURE_LABELS if f != "makespan_cycles"],
                                "number"]
        if results.best is not None and results.evaluator is not None:
            self.best_timeline = results.evaluator.timeline(results.best.config)
        self._refresh_table()
        self._refresh_charts()
        self.best_button.disabled = results.best is None or results.evaluator is None
        if results.best is None:
            self.message.value = sv.note("no configuration ran successfully")
        elif results.interrupted:
            self.message.value = sv.note(f"cancelled after {len(results)} trial(s)" +
                                         (f"; {self.store.value} keeps them" if self.store.value.strip() else ""))

    def _trial_done(self, record, results) -> None:
        self.progress.value = len(results)
        failed = len(results.failed)
        self.count.value = f"{len(results)} / {self.progress.max} trials" + (f", {failed} not ok" if failed else "")
        self.results = results
        if len(results) % 25 == 0:  # a live table without re-rendering it for every trial
            self._refresh_table()

    # ---- views ---------------------------------------------------------------------------------
    def _error_timeline(self):
        """The timeline whose model error the tables and charts show: the best trial's once the
        sweep is over, the kernel's call while it runs (the same kernel, so the same class)."""
        return self.best_timeline if self.best_timeline is not None else getattr(self.run, "timeline", None)

    def _refresh_table(self) -> None:
        if self.results is not None:
            self.table.value = sv.results_table_html(self.results, self.sort_by.value, self.descending.value,
                                                     timeline=self._error_timeline())

    def _refresh_charts(self) -> None:
        if self.results is None:
            return
        error = sv.model_error_html(self._error_timeline())
        self.scatters.value = "".join(sv.scatter_svg(self.results, name) for name in self.results.names) + error
        self.pareto.value = sv.pareto_svg(self.results, self.pareto_axis.value) + error

    def open_best(self):
        """Show the best trial's timeline (re-simulated from its compiled version) beside the
        timeline of the kernel's call; returns the best timeline."""
        from .timeline import TimelineView

        best = self.results.best if self.results is not None else None
        if best is None:
            return None
        timeline = self.best_timeline
        if timeline is None:
            timeline = self.best_timeline = self.results.evaluator.timeline(best.config)
        config = ", ".join(f"{k}={v}" for k, v in best.config.items())
        views = [TimelineView(timeline, title=f"best #{best.number}: {config}")]
        if self.run is not None:
            views.insert(0, TimelineView(self.run.timeline, title="current call"))
        for v in views:
            v.layout.width = f"{100 // len(views)}%"
        self.compare.children = tuple(views)
        return timeline
