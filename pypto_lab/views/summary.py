"""A kernel at a glance: name, compiled versions, what its last call did and its schedule."""

from __future__ import annotations

from ._html import esc, ms, note
from .model_error import model_error_html, model_error_text
from .timeline import stats_line


def _name(kernel) -> str:
    fn = getattr(kernel, "fn", None)
    return getattr(fn, "__name__", None) or getattr(kernel, "__name__", None) or type(kernel).__name__


def kernel_summary_html(kernel) -> str:
    """Name, versions and hits/misses, and for the last call: cache hit or compile (with the reason),
    compile and run time, and the simulated timeline's stats line with the model's error."""
    if kernel is None:
        return note("no kernel")
    info = kernel.cache_info()
    lines = [f"<b>{esc(_name(kernel))}</b>: {len(info.entries)} compiled version(s), "
             f"{info.hits} hit(s), {info.misses} miss(es)"]
    run = getattr(kernel, "last_run", None)
    refused = getattr(kernel, "refused_call", None)
    if refused:
        lines.append(f'<span class="pypto-refused-call" style="color:#cf222e">last call: refused before running, '
                     f'{esc(refused)}</span>' + (' <span style="color:#777">(nothing ran; below: the call before it)'
                                                  '</span>' if run is not None else ""))
    if run is None:
        if not refused:
            lines.append('<span style="color:#777">not called yet</span>')
    else:
        calls = list(getattr(kernel, "call_log", ()) or ())
        reason = calls[-1].reason if calls and not calls[-1].hit else None
        how = "cache hit" if run.cache_hit else f"compiled in {ms(run.compile_seconds)}"
        if reason:
            how += f" ({esc(reason)})"
        label = "the call before" if refused else "last call"
        if run.error:
            lines.append(f'<span style="color:#cf222e">{label}: stopped mid-run by {esc(run.error)}</span>')
        lines.append(f"{label}: {how}, ran in {ms(run.run_seconds)} &middot; version {esc(run.key)}")
        from .cache import timeline_timed

        tl = timeline_timed(run)
        if tl is not None:
            lines.append(f"timeline: {esc(stats_line(tl))}{model_error_html(tl)}")
    body = "".join(f'<div style="margin:1px 0">{line}</div>' for line in lines)
    return f'<div style="font-family:sans-serif;font-size:13px">{body}</div>'


__all__ = ["dashboard_fallback_html", "dashboard_text", "kernel_summary_html"]


def dashboard_fallback_html(kernel, tabs=()) -> str:
    """What a stored notebook shows of a dashboard where no widget runs (GitHub, nbviewer, a
    notebook not run yet): the summary and the cache table, and which tabs come back live."""
    from .cache import cache_table_html

    live = ", ".join(t.capitalize() for t in tabs)
    hint = (f'<div style="color:#777;font-style:italic;font-family:sans-serif;margin:4px 0">'
            f'Run the cell for the interactive dashboard ({esc(live)}).</div>') if live else ""
    return (f'<div style="border:1px solid #ddd;padding:6px">{kernel_summary_html(kernel)}'
            f'{cache_table_html(kernel)}{hint}</div>')


def dashboard_text(kernel) -> str:
    """A dashboard as one line of plain text (its text/plain form)."""
    info = kernel.cache_info()
    text = (f"pypto dashboard of {_name(kernel)}: {len(info.entries)} compiled version(s), "
            f"{info.hits} hit(s), {info.misses} miss(es)")
    run = getattr(kernel, "last_run", None)
    refused = getattr(kernel, "refused_call", None)
    if refused:
        text += f"; last call refused: {refused}"
    if run is not None and run.timeline is not None:
        error = model_error_text(run.timeline)
        text += f"; timeline: {stats_line(run.timeline)}" + (f" ({error})" if error else "")
    return text
