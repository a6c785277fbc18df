"""The Graph, Passes, Code and Cache tabs of the dashboard: a control or two wired to a view."""

from __future__ import annotations

import ipywidgets as W

from .. import views

_FORM_LABELS = {"pto": "PTO listing", "cpu": "executable form", "main": "main variant",
                "tail": "tail variant"}


class GraphPanel(W.VBox):
    """The program's graph (Graphviz SVG) at the level picked in ``level``, in a frame that pans and
    zooms; ``fit`` starts it fitted to the width or at full size. The controls stay above the frame."""

    def __init__(self, compiled):
        self.compiled = compiled
        found = views.levels(compiled)
        self.level = W.Dropdown(options=found, value=found[0] if found else None, description="level")
        self.fit = W.ToggleButtons(options=[("fit to frame", True), ("full size", False)], value=True,
                                   style={"button_width": "auto"})
        self.svg = W.HTML(layout=W.Layout(width="100%")).add_class("pypto-graph")
        self.level.observe(self._render, "value")
        self.fit.observe(self._render, "value")
        self._render()
        super().__init__([W.HBox([self.level, self.fit]), self.svg], layout=W.Layout(width="100%"))
        self.add_class("pypto-graph-panel")

    def _render(self, _change=None):
        level = self.level.value
        self.svg.value = views.graph_html(self.compiled, level, fit=self.fit.value) if level else "<i>no graph</i>"


class PassesPanel(W.VBox):
    """The pass bisection (when pass verify found a mismatch or `pypto.bisect_passes` ran: the
    first pass that changed the numbers is picked), the pass table; the pass picked in ``select``
    shows side by side with the pass before
    (``diff``, unchanged lines folded unless ``folded`` is off) or as its whole text (``ir``)."""

    def __init__(self, compiled):
        self.compiled = compiled
        snaps = list(compiled.passes)
        self.bisection = W.HTML(views.pass_bisection_html(compiled)).add_class("pypto-pass-bisection")
        self.table = W.HTML(views.pass_table_html(compiled))
        self.select = W.Select(options=[(f"#{i} {p.name} ({p.level})", i) for i, p in enumerate(snaps)],
                               rows=min(len(snaps), 10) or 1, description="pass",
                               layout=W.Layout(width="auto"))
        self.mode = W.ToggleButtons(options=[("diff with the pass before", "diff"), ("program text", "text")],
                                    value="diff", style={"button_width": "auto"})
        self.folded = W.Checkbox(value=True, description="fold unchanged lines", indent=False)
        self.ir = W.HTML(layout=W.Layout(width="100%"))
        self.diff = W.HTML(layout=W.Layout(width="100%"))
        self.select.observe(self._render, "value")
        self.folded.observe(self._render, "value")
        self.mode.observe(self._show_mode, "value")
        if snaps:  # the first pass that changed the numbers, when a bisection found one
            bad = getattr(views.bisection_of(compiled), "first_bad", None)
            self.select.value = bad.index if bad is not None and bad.index < len(snaps) else 0
        self._render()
        self._show_mode()
        super().__init__([self.bisection, self.table, self.select, W.HBox([self.mode, self.folded]), self.diff, self.ir],
                         layout=W.Layout(width="100%"))

    def _render(self, _change=None):
        i = self.select.value
        if i is None:
            return
        self.ir.value = views.pass_ir_html(self.compiled, i)
        context = views.CONTEXT_LINES if self.folded.value else None
        self.diff.value = views.pass_diff_html(self.compiled, i, context=context)

    def _show_mode(self, _change=None):
        diff = self.mode.value == "diff"
        self.diff.layout.display = None if diff else "none"
        self.ir.layout.display = "none" if diff else None
        self.folded.layout.display = None if diff else "none"


class CodePanel(W.VBox):
    """Leaf kernels in ``leaf``; the picked one's highlighted code in the form picked in ``form``."""

    def __init__(self, compiled):
        self.compiled = compiled
        names = views.leaf_names(compiled)
        self.leaf = W.Select(options=names, value=names[0] if names else None, description="leaf",
                             rows=min(len(names), 8) or 1)
        self.form = W.ToggleButtons(description="form", style={"button_width": "auto"})
        self.code = W.HTML()
        self._set_forms()
        self.leaf.observe(self._leaf_changed, "value")
        self.form.observe(self._render, "value")
        self._render()
        super().__init__([self.leaf, self.form, self.code])

    def _set_forms(self):
        forms = views.code_forms(self.compiled, self.leaf.value) if self.leaf.value else []
        keep = self.form.value if self.form.value in forms else (forms[0] if forms else None)
        self.form.options = [(_FORM_LABELS.get(f, f), f) for f in forms]
        self.form.value = keep

    def _leaf_changed(self, _change=None):
        self._set_forms()  # the forms a leaf has differ (main/tail only with valid_shape_optimize)
        self._render()

    def _render(self, _change=None):
        leaf, form = self.leaf.value, self.form.value
        self.code.value = (views.leaf_hints_html(self.compiled, leaf) + views.code_html(self.compiled, leaf, form)
                           if leaf and form else "<i>no generated code</i>")


class CachePanel(W.VBox):
    """The kernel's compiled versions and its call log (as they are when the tab is opened)."""

    def __init__(self, kernel):
        self.versions = W.HTML(views.cache_table_html(kernel))
        self.calls = W.HTML(views.call_log_html(kernel))
        self.first_call = W.HTML(views.first_call_html(kernel)).add_class("pypto-first-call")
        super().__init__([W.HTML("<b>Versions</b>"), self.versions, W.HTML("<b>Calls</b>"), self.calls,
                          self.first_call])
