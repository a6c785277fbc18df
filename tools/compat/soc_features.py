"""What an Ascend-950-only upstream test needs: features named in its source.

Upstream's conftest runs a test marked ``@pytest.mark.soc(...)`` only on the SoCs it names; the
harness emulates a 910B (A2/A3), so the tests marked for the 950 alone are deselected, as on a
910B card. The report lists them with the 950 features their source names (a dtype, a data
format, an instruction), read from the test function and, when it names none, from its file.
"""

from __future__ import annotations

import ast
import re
from pathlib import Path

# feature -> pattern over source text (case-insensitive)
FEATURES = (
    ("FP8", r"fp8|float8|e4m3|e5m2"),
    ("FP4", r"fp4|float4|e2m1|e1m2"),
    ("HiF8", r"hif8|\bhf8\b|DT_HF8"),
    ("MX block scaling", r"\bmx_?fp|quant_mx|scaled_mm|scaled_bmm|e8m0"),
    ("NZ format", r"\bnz\b|nz_format|format_cast|TileOpFormat|_NZ\b"),
    ("interleave", r"interleave"),
    ("conv", r"\bconv[123]?d?\b|pypto\.conv|conv_tile"),
    ("dual destination", r"dual_?dst"),
    ("random numbers", r"pypto\.(uniform|normal)\b|test_(uniform|normal)"),
    ("L0C->UB / UB->L1 paths", r"l0c2ub|ub2l1"),
    ("PMU / swimlane tracing", r"pmu|swimlane"),
    ("vector function groups", r"tile_group|_vf\b"),
)
UNNAMED = "none named (marked for the 950 only)"


def _function_source(tree, text: str, name: str) -> str:
    for node in ast.walk(tree):
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)) and node.name == name:
            return ast.get_source_segment(text, node) or ""
    return ""


def features_of(text: str, function: str, tree=None) -> list[str]:
    """The features named by test ``function`` of a file's source ``text`` (else by the file)."""
    if tree is None:
        try:
            tree = ast.parse(text)
        except SyntaxError:
            tree = None
    own = _function_source(tree, text, function) if tree is not None else ""
    for source in (own, text):
        found = [name for name, pattern in FEATURES if re.search(pattern, source, re.IGNORECASE)]
        if found:
            return found
    return [UNNAMED]


def soc_only_table(results, upstream: Path) -> list[dict]:
    """One row per file with 950-only tests: path, tests, SoCs and features (sorted by path)."""
    rows = []
    for r in sorted(results, key=lambda r: r.path):
        if not r.soc_only:
            continue
        f = upstream / r.path
        text = f.read_text(errors="replace") if f.is_file() else ""
        try:
            tree = ast.parse(text)
        except SyntaxError:
            tree = None
        features, socs = {}, set()
        for t in r.soc_only:
            socs.update(t["socs"])
            for name in features_of(text, t["function"], tree):
                features[name] = features.get(name, 0) + 1
        rows.append({"path": r.path, "tests": len(r.soc_only), "socs": sorted(socs), "features": features})
    return rows
