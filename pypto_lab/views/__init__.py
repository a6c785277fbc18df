"""Pure views of pypto's inspection objects: each takes a kernel, a CompiledKernel or a timeline
and returns SVG/HTML text, or the swimlane chart's packed data. No widgets and no IPython here, so every view can
be tested without a browser; `pypto_lab.widgets` arranges them."""

from .buffers import buffer_flags_html, buffers_html, buffers_svg
from .cache import cache_table_html, call_log_html, first_call_html, first_call_parts, timeline_timed
from .code import PtoLexer, code_forms, code_html, leaf_names
from .graph import LEVELS, dot_to_svg, graph_html, graph_svg, legend_html, level_dot, levels
from .hints import hints_html, leaf_hints_html
from .model_error import model_error_html, model_error_text
from .pass_bisect import bisection_of, pass_bisection_html
from .passes import CONTEXT_LINES, pass_diff_html, pass_ir_html, pass_table_html
from .summary import dashboard_fallback_html, dashboard_text, kernel_summary_html
from .swimlane import decode_payload, natural_key, swimlane_html, swimlane_payload
from .task_details import task_details_html, tile_offsets
from .timeline import compare_html, lane_busy_html, leaf_summary_html, stats_line, timeline_html, trace_json_bytes
from .trace import TraceEvent, TraceFlow, TraceTimeline, lane_kind, load_trace

__all__ = [
    "LEVELS", "levels", "level_dot", "dot_to_svg", "graph_svg", "graph_html", "legend_html",
    "pass_table_html", "pass_ir_html", "pass_diff_html", "CONTEXT_LINES", "pass_bisection_html", "bisection_of",
    "PtoLexer", "leaf_names", "code_forms", "code_html",
    "buffers_html", "buffers_svg", "buffer_flags_html",
    "cache_table_html", "call_log_html", "first_call_html", "first_call_parts", "timeline_timed",
    "swimlane_payload", "decode_payload", "swimlane_html", "natural_key", "task_details_html", "tile_offsets",
    "stats_line", "compare_html", "leaf_summary_html", "lane_busy_html", "trace_json_bytes", "timeline_html",
    "load_trace", "TraceTimeline", "TraceEvent", "TraceFlow", "lane_kind",
    "kernel_summary_html", "dashboard_fallback_html", "dashboard_text", "hints_html", "leaf_hints_html",
    "model_error_html", "model_error_text",
]
