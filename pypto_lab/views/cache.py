"""A kernel's compile cache: one row per compiled version with the concrete shapes it served, and
the log of calls (hit or compile, and why it compiled, against the nearest cached version)."""

from __future__ import annotations

from ._html import esc, ms, note, table


def _info(kernel):
    """The CacheInfo of a jit kernel (or ``kernel`` itself when it already is one)."""
    if kernel is None:
        return None
    return kernel.cache_info() if hasattr(kernel, "cache_info") else kernel


def _served_html(entry) -> str:
    """The concrete shapes and dtypes a version served, one line each with its calls and hits."""
    served = entry.served_shapes() if hasattr(entry, "served_shapes") else []
    if not served:
        return '<span style="color:#777">no call yet</span>'
    lines = []
    for s in served:
        hits = f"{s.hits} hit{'s' if s.hits != 1 else ''}"
        compiled = "" if s.hits == s.calls else ' <span style="color:#9a6700">(compiled here)</span>'
        lines.append(f'<div style="white-space:nowrap">{esc(s.shapes)} &middot; '
                     f'<b>{hits}</b>{compiled}</div>')
    return "".join(lines)


def cache_table_html(kernel) -> str:
    """One row per compiled version: its key, the concrete shapes and dtypes it served with the
    hits per shape, its total hits and its compile time (under a hits/misses header)."""
    info = _info(kernel)
    if info is None:
        return note("no kernel")
    head = (f'<div style="font-family:sans-serif;margin:2px 0">{len(info.entries)} version(s), '
            f'{info.hits} hit(s), {info.misses} miss(es)</div>')
    if not info.entries:
        return head + note("nothing compiled yet")
    rows = [(str(i), esc(e.key), _served_html(e), str(e.hits), ms(e.compile_seconds))
            for i, e in enumerate(info.entries)]
    return head + table(("#", "version (key)", "shapes served: hits per shape", "hits",
                         "compile (trace + passes + codegen)"), rows)


def timeline_timed(run):
    """``run.timeline``, timing the simulation the first time it is asked for (the timeline is
    simulated lazily, outside the call's time): the seconds are kept on the record for
    `first_call_html`."""
    if run is None:
        return None
    if getattr(run, "_timeline", True) is None and getattr(run, "simulator", None) is not None:
        import time

        t0 = time.perf_counter()
        tl = run.timeline
        run._lab_simulate_seconds = time.perf_counter() - t0
        return tl
    return run.timeline


def first_call_parts(kernel) -> list:
    """``(stage, seconds)`` of the last compiling call, which add up to that call's time in the
    call log: trace, the passes, codegen, the rest of the compile (executor set-up), the run
    (planning for these sizes and execution) and the rest (binding, the cache key, first-use
    imports). Empty when the last call hit the cache or nothing ran."""
    run = getattr(kernel, "last_run", None)
    calls = list(getattr(kernel, "call_log", ()) or ())
    if run is None or run.cache_hit or not calls or calls[-1].hit:
        return []
    compiled = run.compiled
    snaps = list(getattr(compiled, "passes", ()) or ())
    trace = sum(p.seconds for p in snaps if p.name == "trace")
    codegen = sum(p.seconds for p in snaps if p.name == "codegen")
    passes = sum(p.seconds for p in snaps) - trace - codegen
    compile_s = run.compile_seconds
    total = calls[-1].seconds
    parts = [("trace", trace), ("passes", passes), ("codegen", codegen),
             ("compile set-up (executor, snapshots)", max(compile_s - trace - passes - codegen, 0.0)),
             ("run (plan for these sizes + execute)", run.run_seconds)]
    parts.append(("call overhead (bind, cache key, first-use imports)", max(total - sum(c for _, c in parts), 0.0)))
    return parts


def first_call_html(kernel) -> str:
    """The last compiling call's time broken down (`first_call_parts`), with the simulation of
    its timeline beside it (done when the timeline is first looked at, not inside the call)."""
    parts = first_call_parts(kernel)
    if not parts:
        return ""
    calls = list(kernel.call_log)
    rows = [(esc(stage), ms(sec), f"{sec / calls[-1].seconds:.0%}" if calls[-1].seconds else "–") for stage, sec in parts]
    rows.append(("<b>the call, as in the call log</b>", f"<b>{ms(calls[-1].seconds)}</b>", "100%"))
    sim = getattr(kernel.last_run, "_lab_simulate_seconds", None)
    if sim is not None:
        rows.append(("simulate the timeline (on first look, outside the call)", ms(sim), ""))
    return table(("stage", "time", "of the call"), rows,
                 caption="the last compiling call, stage by stage (compile = trace + passes + codegen + set-up)")


def call_log_html(kernel) -> str:
    """Each call, oldest first: hit or compile, the version's key, why it compiled, and its time."""
    if kernel is None:
        return note("no kernel")
    calls = list(getattr(kernel, "call_log", None) or getattr(_info(kernel), "calls", ()) or ())
    if not calls:
        return note("not called yet")
    rows = []
    for i, c in enumerate(calls):
        outcome = ('<span style="color:#116329">hit</span>' if c.hit
                   else '<span style="color:#9a6700;font-weight:bold">compile</span>')
        rows.append((str(i), outcome, esc(c.key), esc(c.reason or ""), ms(c.seconds)))
    return table(("#", "call", "key", "reason", "time"), rows,
                 caption="time: the whole call; a compiling call's includes its compile, its run and the call's own "
                         "overhead (broken down below for the last one)")


__all__ = ["cache_table_html", "call_log_html", "first_call_html", "first_call_parts", "timeline_timed"]
