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
    return head + table(("#", "version (key)", "shapes served: hits per shape", "hits", "compile"), rows)


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
    return table(("#", "call", "key", "reason", "time"), rows)


__all__ = ["cache_table_html", "call_log_html"]
