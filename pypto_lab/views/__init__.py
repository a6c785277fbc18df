"""Pure views of pypto's inspection objects: each takes a kernel, a CompiledKernel or a timeline
and returns SVG/HTML text or a plotly figure. No widgets and no IPython here, so every view can
be tested without a browser; `pypto_lab.widgets` arranges them."""

from .cache import cache_table_html, call_log_html
from .code import PtoLexer, code_forms, code_html, leaf_names
from .graph import LEVELS, dot_to_svg, graph_html, graph_svg, legend_html, level_dot, levels
from .hints import hints_html
from .passes import CONTEXT_LINES, pass_diff_html, pass_ir_html, pass_table_html
from .summary import dashboard_fallback_html, dashboard_text, kernel_summary_html
from .timeline import compare_html, stats_line, timeline_figure, trace_download_html
from .trace import TraceEvent, TraceFlow, TraceTimeline, lane_kind, load_trace

__all__ = [
    "LEVELS", "levels", "level_dot", "dot_to_svg", "graph_svg", "graph_html", "legend_html",
    "pass_table_html", "pass_ir_html", "pass_diff_html", "CONTEXT_LINES",
    "PtoLexer", "leaf_names", "code_forms", "code_html",
    "cache_table_html", "call_log_html",
    "timeline_figure", "stats_line", "compare_html", "trace_download_html",
    "load_trace", "TraceTimeline", "TraceEvent", "TraceFlow", "lane_kind",
    "kernel_summary_html", "dashboard_fallback_html", "dashboard_text", "hints_html",
]
