"""One-page reports: a kernel's dashboard as one self-contained HTML file.

``save_html(kernel, path)`` writes the summary and hints, then Graph (every level's SVG), Passes
(the table, each pass's diff against the one before), Code (every leaf), Cache (versions, calls,
the last compiling call stage by stage) and the interactive Timeline (the canvas renderer and
its data inlined: zoom, pan, tooltips, the critical path, each task's start reason and its "why
is this late" chain work without a kernel). No CDN, no external file: someone without Python
opens it offline and sees what the notebook showed. The few lines of script that switch the
sections are inline too; without scripts every section is shown one after another.
"""

from __future__ import annotations

import html as _html
import os
import time

from . import views
from .views._html import esc, note

MAX_GRAPH_LEVELS = 6  # levels drawn (each an SVG)
MAX_LEAVES = 64  # leaves whose code is included (the rest are counted)

_STYLE = """
body{font-family:sans-serif;font-size:13px;margin:12px 18px;color:#222}
h1{font-size:18px;margin:4px 0}
nav.pypto-report-tabs{display:flex;gap:2px;border-bottom:1px solid #bbb;margin:8px 0 6px 0}
nav.pypto-report-tabs button{border:1px solid #bbb;border-bottom:none;background:#f3f3f3;padding:4px 12px;
 cursor:pointer;font-size:13px;border-radius:3px 3px 0 0}
nav.pypto-report-tabs button.on{background:#fff;font-weight:bold;position:relative;top:1px}
section.pypto-report-section{margin:6px 0 18px 0}
section.pypto-report-section>h2{font-size:15px;margin:8px 0 4px 0}
.pypto-report-js section.pypto-report-section{display:none}
.pypto-report-js section.pypto-report-section.on{display:block}
.pypto-report-js section.pypto-report-section>h2{display:none}
details{margin:3px 0}
summary{cursor:pointer}
"""

_SCRIPT = r"""
(function(){
  document.body.classList.add('pypto-report-js');
  var tabs=document.querySelectorAll('nav.pypto-report-tabs button');
  function wake(root){  // lazy content shown for the first time: parse it and run its scripts
    root.querySelectorAll('script.pypto-lazy').forEach(function(lazy){
      var d=lazy.parentElement.closest('details');
      if(d && !d.open && root.contains(d) && d!==root) return;  // inside a closed <details>: later
      var t=document.createElement('template');
      t.innerHTML=lazy.textContent.replace(/<\\\/script/g,'</script').replace(/<\\!--/g,'<!--');
      var frag=t.content;
      frag.querySelectorAll('script').forEach(function(old){  // parsed scripts do not run: recreate them
        var s=document.createElement('script'); s.textContent=old.textContent; old.replaceWith(s);});
      lazy.replaceWith(frag);
    });
  }
  document.addEventListener('toggle',function(e){ if(e.target.open) wake(e.target); },true);
  function pick(name){
    tabs.forEach(function(b){b.classList.toggle('on',b.dataset.tab===name);});
    document.querySelectorAll('section.pypto-report-section').forEach(function(s){
      if(s.dataset.tab===name) wake(s);
      s.classList.toggle('on',s.dataset.tab===name);});
    window.dispatchEvent(new Event('resize'));
  }
  tabs.forEach(function(b){b.onclick=function(){pick(b.dataset.tab);};});
  if(tabs.length) pick(tabs[0].dataset.tab);
})();
"""


def _lazy(html: str) -> str:
    """``html`` kept as the text of an inert script element, put in place by the page's script
    when its section is shown or its <details> opened (the browser does not parse it before).
    Never nested: the unescaping on wake would reach into an inner one."""
    text = html.replace("</script", "<\\/script").replace("<!--", "<\\!--")
    return f'<script type="text/x-pypto-lazy" class="pypto-lazy">{text}</script>'


def _graph_section(compiled) -> str:
    levels = views.levels(compiled)[:MAX_GRAPH_LEVELS]
    if not levels:
        return note("no graph")
    out = []
    for i, level in enumerate(levels):
        last = i == len(levels) - 1
        graph = views.graph_html(compiled, level)
        out.append(f"<details{' open' if last else ''}><summary><b>{esc(level)}</b> level"
                   f"</summary>{graph if last else _lazy(graph)}</details>")
    return "".join(out)


def _passes_section(compiled) -> str:
    passes = list(getattr(compiled, "passes", None) or ())
    out = [views.pass_bisection_html(compiled), views.pass_table_html(compiled)]
    bad = getattr(views.bisection_of(compiled), "first_bad", None)
    for i, snap in enumerate(passes):
        body = views.pass_diff_html(compiled, i) if i else views.pass_ir_html(compiled, i)
        what = "diff against the pass before" if i else "the traced program"
        culprit = bad is not None and bad.index == i  # the pass that changed the numbers: its diff open
        out.append(f"<details{' open' if culprit else ''}><summary><b>{esc(snap.name)}</b> ({esc(snap.level)}): "
                   f"{what}{' &mdash; the numbers first differ here' if culprit else ''}</summary>{body}</details>")
    return "".join(out)


def _code_section(compiled) -> str:
    names = views.leaf_names(compiled)
    out = []
    for name in names[:MAX_LEAVES]:
        forms = views.code_forms(compiled, name)
        body = views.leaf_hints_html(compiled, name) + "".join(
            f"<div style='margin:4px 0'><i>{esc(form)}</i></div>{views.code_html(compiled, name, form)}"
            for form in forms)
        out.append(f"<details><summary><b>{esc(name)}</b></summary>{body}</details>")
    if len(names) > MAX_LEAVES:
        out.append(note(f"{len(names) - MAX_LEAVES} more leaves not included"))
    return "".join(out) or note("no generated code")


def _cache_section(kernel) -> str:
    return (views.cache_table_html(kernel) + "<h3 style='font-size:13px'>Calls</h3>" + views.call_log_html(kernel)
            + views.first_call_html(kernel))


def _timeline_section(run) -> str:
    tl = views.timeline_timed(run)
    if tl is None:
        return note("no timeline")
    return (views.timeline_html(tl, title=f"{run.compiled.name}: simulated")
            + "<details><summary><b>buffers over time</b> (the busiest core of each type)</summary>"
            + views.buffers_html(tl) + "</details>")  # the section is lazy already: no nesting


def report_html(kernel) -> str:
    """The report of ``kernel``'s last call as one HTML document (see the module doc)."""
    from .widgets.dashboard import NotCalledError

    run = getattr(kernel, "last_run", None)
    if not hasattr(kernel, "cache_info"):
        raise TypeError(f"pypto_lab.save_html needs a pypto.jit kernel, got {type(kernel).__name__}")
    name = getattr(getattr(kernel, "fn", None), "__name__", None) or getattr(kernel, "__name__", "kernel")
    if run is None:
        raise NotCalledError.of(kernel, name, "save its report")
    compiled = run.compiled
    sections = [("graph", "Graph", lambda: _graph_section(compiled)),
                ("passes", "Passes", lambda: _passes_section(compiled)),
                ("code", "Code", lambda: _code_section(compiled)),
                ("cache", "Cache", lambda: _cache_section(kernel)),
                ("timeline", "Timeline", lambda: _timeline_section(run))]
    nav = "".join(f'<button data-tab="{key}">{title}</button>' for key, title, _build in sections)
    # the first section is in the page; the others wait as script text (not parsed as HTML
    # until their tab is first opened), so a big report opens as fast as a small one
    body = "".join(f'<section class="pypto-report-section" data-tab="{key}"><h2>{title}</h2>'
                   + (build() if i == 0 else _lazy(build())) + "</section>" for i, (key, title, build) in enumerate(sections))
    stamp = time.strftime("%Y-%m-%d %H:%M:%S %Z")
    return ("<!DOCTYPE html><html><head><meta charset='utf-8'>"
            f"<title>pypto report: {esc(name)}</title><style>{_STYLE}</style></head><body>"
            f"<h1>pypto report: {esc(name)}</h1>"
            f"<div style='color:#777;font-size:11px'>saved {esc(stamp)} by pypto_lab.save_html; "
            "self-contained, opens offline</div>"
            f"{views.kernel_summary_html(kernel)}{views.hints_html(run)}"
            f'<nav class="pypto-report-tabs">{nav}</nav>{body}'
            f"<script>{_SCRIPT}</script></body></html>")


def save_html(kernel, path) -> str:
    """Write the one-page report of ``kernel``'s last call to ``path`` (one self-contained HTML
    file: summary, graph, passes with diffs, code, cache and the interactive timeline) and
    return the path written."""
    path = os.fspath(path)
    if not path:
        raise ValueError("pypto_lab.save_html: 'path' is empty (expected a file name such as 'report.html')")
    text = report_html(kernel)
    with open(path, "w", encoding="utf-8") as f:
        f.write(text)
    return path


def report_link_html(path: str) -> str:
    """A link to a saved report (the dashboard's button shows it)."""
    name = os.path.basename(path)
    size = os.path.getsize(path)
    return (f'<span style="font-family:sans-serif;font-size:12px">saved <a href="{_html.escape(name)}" '
            f'target="_blank" download>{esc(name)}</a> ({size / 1e3:,.0f} KB)</span>')


__all__ = ["save_html", "report_html"]
