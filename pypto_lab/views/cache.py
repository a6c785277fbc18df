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
    """``(stage, seconds)`` of the kernel's latest compiling call, adding up to that call's time
    in the call log: trace, the passes, codegen, the rest of the compile (executor set-up), then
    the run (planning for these sizes and execution) and the call's own overhead (binding, the
    cache key, first-use imports); when later calls have replaced its record, the run and the
    overhead are one figure. Empty when no call compiled (or its version was evicted)."""
    calls = list(getattr(kernel, "call_log", ()) or ())
    index = next((i for i in range(len(calls) - 1, -1, -1) if not calls[i].hit), None)
    if index is None:
        return []
    call = calls[index]
    run = getattr(kernel, "last_run", None)
    latest = run is not None and index == len(calls) - 1 and not run.cache_hit and run.key == call.key
    if latest:
        compiled, compile_s = run.compiled, run.compile_seconds
    else:
        entry = next((e for e in kernel.cache_info().entries if e.key == call.key), None)
        if entry is None:
            return []
        compiled, compile_s = entry.compiled, entry.compile_seconds
    snaps = list(getattr(compiled, "passes", ()) or ())
    trace = sum(p.seconds for p in snaps if p.name == "trace")
    codegen = sum(p.seconds for p in snaps if p.name == "codegen")
    passes = sum(p.seconds for p in snaps) - trace - codegen
    parts = [("trace", trace), ("passes", passes), ("codegen", codegen),
             ("compile set-up (executor, snapshots)", max(compile_s - trace - passes - codegen, 0.0))]
    if latest:
        parts.append(("run (plan for these sizes + execute)", run.run_seconds))
        parts.append(("call overhead (bind, cache key, first-use imports)",
                      max(call.seconds - sum(c for _, c in parts), 0.0)))
    else:
        parts.append(("run + call overhead (bind, cache key, first-use imports)",
                      max(call.seconds - sum(c for _, c in parts), 0.0)))
    return parts


def first_call_html(kernel) -> str:
    """The latest compiling call's time broken down (`first_call_parts`), with the simulation of
    its timeline beside it (done when the timeline is first looked at, not inside the call)."""
    parts = first_call_parts(kernel)
    if not parts:
        return ""
    calls = list(kernel.call_log)
    index = max(i for i, c in enumerate(calls) if not c.hit)
    total = calls[index].seconds
    rows = [(esc(stage), ms(sec), f"{sec / total:.0%}" if total else "–") for stage, sec in parts]
    rows.append((f"<b>the call, as in the call log (#{index})</b>", f"<b>{ms(total)}</b>", "100%"))
    sim = getattr(kernel.last_run, "_lab_simulate_seconds", None) if index == len(calls) - 1 else None
    if sim is not None:
        rows.append(("simulate the timeline (on first look, outside the call)", ms(sim), ""))
    return table(("stage", "time", "of the call"), rows,
                 caption="the latest compiling call, stage by stage (compile = trace + passes + codegen + set-up)")


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
