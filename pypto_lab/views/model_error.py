"""The timing model's measured error as the views show it beside a simulated time.

``pypto.runtime.model_error`` says which class a timeline's kernel is in and what the
calibration measured for that class on its machine; this puts it in one short line, with the
details (how it was measured, on which corpus, which families) in a tooltip. A measured trace
(`TraceTimeline`) shows nothing: its times are not the model's.
"""

from __future__ import annotations

from pypto.runtime.model_error import ModelErrorDataError, error_text, load_table, model_error

from ._html import esc

_MEASURED, _NOT_MEASURED = "#555", "#9a6700"
LABEL = "model error"


def model_error_text(tl) -> str:
    """``"model error · <class>: median 7%, worst 18%, 9 published points"``, or the reason there
    are no figures; "" when ``tl`` has no model error (None, no tasks, a measured trace)."""
    text = error_text(tl) if tl is not None else None
    return f"{LABEL} · {text}" if text else ""


def model_error_html(tl) -> str:
    """`model_error_text` as a small line (class ``pypto-model-error``) whose tooltip says what
    the figures are; amber when the error is not measured for this kernel and machine."""
    if tl is None:
        return ""
    try:
        error = model_error(tl)
        if error is None:
            return ""
        line, tip = error.text, _tooltip(error, load_table())
    except ModelErrorDataError:
        error, line, tip = None, error_text(tl), "the calibration file cannot be read"
    colour = _MEASURED if error is not None and error.measured else _NOT_MEASURED
    return (f'<div class="pypto-model-error" style="font-family:sans-serif;font-size:12px;color:{colour};'
            f'margin:1px 0" title="{esc(tip)}">{esc(LABEL)} · {esc(line)}</div>')


def _tooltip(error, table) -> str:
    parts = ["The timing model's error on published timings of real A2/A3 kernels: "
             "|simulated / published - 1| over the published points of this kernel class "
             f"(fit of {table.get('date', '?')} on {table.get('corpus', '?')})."]
    if error.families:
        parts.append("Families: " + ", ".join(error.families) + ".")
    if error.loo_median is not None:
        parts.append("With its family left out: the fit without the family's points, as for a kernel it never saw.")
    if error.status in ("uncalibrated", "modified"):
        parts.append(f"The figures hold for machine {table['machine']} with its calibrated parameters.")
    if table.get("status") == "placeholder":
        parts.append("PLACEHOLDER figures: the fit has not written this file yet.")
    overall = table.get("overall")
    if overall and overall.get("points"):
        parts.append(f"All classes: median {overall['median']:.0%}, worst {overall['worst']:.0%}, "
                     f"{overall['points']} points.")
    return " ".join(parts)
