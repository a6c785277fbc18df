"""Dumping a compile's pass snapshots to a folder, for reading and for tools.

``debug_options={"compile_debug_mode": 1}`` (or 2) dumps every pass;
``debug_options={"dump_pass_graph": ["expand", "execute_graph"]}`` only the named ones (matched
against the snapshot names; a part of a combined name such as ``allocate_buffers`` in
``dedup+allocate_buffers`` matches too). Each compile gets its own folder ``<base>/<kernel>_<n>``
(``n`` counts up, so compiles never overwrite each other) holding, per dumped pass ``NN`` (its
position in the pipeline, ``00`` being the trace):

* ``NN_<pass>.txt``: the snapshot's text;
* ``NN_<pass>.dot``: its Graphviz DOT (summarised when large);
* ``NN_<pass>.json``: ``{"version", "kernel", "pass", "index", "level", "seconds", "text", "graph"}``
  with ``graph`` a structured summary of the graph at that level (see `graph_summary`).

``<base>`` is the process's output folder (`pypto.artefacts.output_folder`: ``$PYPTO_DUMP_DIR``
if set, else ``output_<time>_<pid>_<host>`` under ``$TILE_FWK_OUTPUT_DIR``, ``$ASCEND_WORK_PATH/pypto``
or ``./output``). ``compile_debug_mode`` also adds the compiled version to ``program.json`` there
(`pypto.artefacts.program`).
"""

from __future__ import annotations

import difflib
import json
import os
import re
import warnings
from types import MappingProxyType

from ..errors import OptionError
from ..ir import expr as E
from ..ir.graph import Branch, Loop, Op, Program

DUMP_VERSION = 1
_PARAM = "debug_options['dump_pass_graph']"


# ---- which passes, where ------------------------------------------------------------------------

def _names(snapshot_name: str) -> set:
    return {snapshot_name, *snapshot_name.split("+")}


def selected(passes, options) -> list:
    """Indices of the snapshots to dump under ``options`` ([] for none). An unknown name in
    dump_pass_graph raises OptionError listing the valid ones."""
    debug = options.group("debug")
    if debug.get("compile_debug_mode", 0) >= 1:
        return list(range(len(passes)))
    wanted = tuple(debug.get("dump_pass_graph") or ())
    if not wanted:
        return []
    valid = list(dict.fromkeys(n for s in passes for n in sorted(_names(s.name), key=len, reverse=True)))
    for name in wanted:
        if name not in valid:
            close = difflib.get_close_matches(str(name), valid, n=1)
            raise OptionError(f"unknown pass {name!r} in {_PARAM}", expected="one of " + ", ".join(valid),
                              got=repr(name), param=_PARAM,
                              hint=f"did you mean {close[0]!r}?" if close else None)
    return [i for i, s in enumerate(passes) if _names(s.name) & set(wanted)]


def dump_base() -> str:
    """The folder that per-compile dump folders go into (absolute): the process's output folder."""
    from ..artefacts.folder import output_folder

    return output_folder()


def _safe(name: str) -> str:
    return re.sub(r"[^\w+.-]", "_", name) or "_"


def new_dump_dir(kernel: str, base: str | None = None) -> str:
    """Create and return ``<base>/<kernel>_<n>`` with the first ``n`` past the existing ones."""
    base = os.path.abspath(base) if base else dump_base()
    os.makedirs(base, exist_ok=True)
    stem = _safe(kernel)
    pattern = re.compile(re.escape(stem) + r"_(\d+)$")
    n = max((int(m.group(1)) for f in os.listdir(base) if (m := pattern.match(f))), default=-1) + 1
    while True:
        path = os.path.join(base, f"{stem}_{n}")
        try:
            os.mkdir(path)  # atomic: two compiles (or processes) never share a folder
            return path
        except FileExistsError:
            n += 1


def dump_compiled(compiled, options=None) -> str | None:
    """Write the selected snapshots of ``compiled``; the folder, or None when nothing is dumped."""
    options = options if options is not None else compiled.options
    chosen = selected(compiled.passes, options)
    if not chosen:
        return None
    path = None
    try:
        path = new_dump_dir(compiled.name)
        for i in chosen:
            write_snapshot(path, compiled.name, i, compiled.passes[i])
        if options.group("debug").get("compile_debug_mode", 0) >= 1:
            from ..artefacts.program import write_program

            write_program(compiled, os.path.dirname(path))
    except OSError as e:
        warnings.warn(f"pypto: could not write the pass dump of kernel {compiled.name!r}"
                      f"{' to ' + path if path else ''}: {e}", RuntimeWarning, stacklevel=2)
        return None
    return path


def write_snapshot(folder: str, kernel: str, index: int, snap) -> list:
    """Write ``NN_<pass>.txt``, ``.dot`` and ``.json`` of one snapshot; their paths."""
    stem = os.path.join(folder, f"{index:02d}_{_safe(snap.name)}")
    record = {"version": DUMP_VERSION, "kernel": kernel, "pass": snap.name, "index": index,
              "level": snap.level, "seconds": snap.seconds, "text": snap.text,
              "graph": graph_summary(snap.level, snap.graph)}
    files = [(stem + ".txt", snap.text if snap.text.endswith("\n") else snap.text + "\n"),
             (stem + ".dot", snap.to_dot() + "\n"),
             (stem + ".json", json.dumps(record, indent=1, ensure_ascii=False) + "\n")]
    for name, text in files:
        with open(name, "w", encoding="utf-8") as f:
            f.write(text)
    return [name for name, _ in files]


# ---- structured summaries -----------------------------------------------------------------------

def graph_summary(level: str, graph) -> dict:
    """A JSON-able summary of a snapshot's graph, by level:

    * tensor: ``params``, ``loops`` and ``ops`` (id, kind, inputs, outputs with dtype/shape, attrs
      as text, scope, loc ``file:line``);
    * tile: ``roots``, each with its tile ``ops`` (kind, grid, core, accesses with mem, value, shape,
      base, axis);
    * block, after partition: ``roots`` with their ``subgraphs`` (id, core, grid, ops);
    * block, leaf functions: ``leaves`` (name, core, hash, params, buffers, ops);
    * execute: ``roots`` (name, calls with leaf, grid, args; deps);
    * execute, generated code: ``leaves`` (name, variants, listing and CPU source).
    """
    if level == "tensor" and isinstance(graph, Program):
        return _tensor(graph)
    if level == "tile":
        return {"kind": "tile", "roots": [{"root": i, "ops": [_tile_op(op) for op in ops]}
                                          for i, ops in enumerate(graph)]}
    if level == "block" and isinstance(graph, dict):
        return {"kind": "leaves", "leaves": [_leaf(leaf) for leaf in graph.values()]}
    if level == "block":
        return {"kind": "partition", "roots": [
            {"root": i, "subgraphs": [{"id": sg.id, "core": sg.core, "grid": _dims(sg.grid),
                                       "ops": [_tile_op(op) for op in sg.ops]} for sg in sgs]}
            for i, sgs in enumerate(graph)]}
    if level == "execute" and isinstance(graph, dict):
        return {"kind": "codegen", "leaves": [
            {"name": name, "variants": list(getattr(src, "variants", None) or {}),
             "listing_lines": str(src).count("\n"), "cpu": getattr(src, "cpu", None)}
            for name, src in graph.items()]}
    if level == "execute":
        return {"kind": "execute", "roots": [_root(r) for r in graph]}
    return {"kind": "unknown", "type": type(graph).__name__}


def _dim(d):
    return d if isinstance(d, int) and not isinstance(d, bool) else E.render(d)


def _dims(dims) -> list:
    return [_dim(d) for d in dims]


def _text(v) -> str:
    if isinstance(v, (tuple, list)):
        return "[" + ", ".join(_text(x) for x in v) + "]"
    if hasattr(v, "short"):
        return v.short
    if isinstance(v, (MappingProxyType, dict)):
        return "{" + ", ".join(f"{k}: {_text(x)}" for k, x in v.items()) + "}"
    if isinstance(v, E.Expr):
        return E.render(v)
    return repr(v) if isinstance(v, str) else str(v)


def _attrs(attrs) -> dict:
    return {str(k): _text(v) for k, v in attrs.items()}


def _loc(loc):
    return f"{loc.file}:{loc.line}" if loc is not None else None


def _value(v) -> dict:
    out = {"name": v.name, "id": v.id, "dtype": v.dtype.short, "shape": _dims(v.shape)}
    if tuple(v.valid_shape) != tuple(v.shape):
        out["valid_shape"] = _dims(v.valid_shape)
    return out


def _tensor(program) -> dict:
    ops, loops = [], []

    def walk(region, scope):
        if isinstance(region, Branch):
            walk(region.then, scope + [f"if {E.render(region.cond)}"])
            walk(region.orelse, scope + [f"else of {E.render(region.cond)}"])
            return
        for item in region.items:
            if isinstance(item, Loop):
                loops.append({"id": item.id, "name": item.name, "index": item.index, "start": _dim(item.start),
                              "stop": _dim(item.stop), "step": _dim(item.step), "factors": list(item.factors),
                              "parallel": item.parallel, "scope": "/".join(scope), "loc": _loc(item.loc)})
                for factor, body in zip(item.factors, item.bodies):
                    tag = f"loop {item.index}" + (f" unroll {factor}" if len(item.factors) > 1 else "")
                    walk(body, scope + [tag])
            elif isinstance(item, Op):
                ops.append({"id": item.id, "kind": item.kind, "inputs": [_value(v) for v in item.inputs],
                            "outputs": [_value(v) for v in item.outputs], "attrs": _attrs(item.attrs),
                            "tile": list(item.tiles.vec) if item.tiles.vec is not None else None,
                            "scope": "/".join(scope), "loc": _loc(item.loc)})

    walk(program.body, [])
    return {"kind": "tensor", "name": program.name,
            "params": [{"name": p.name, "index": p.index, **_value(p.value)} for p in program.params],
            "constants": {str(k): _text(v) for k, v in program.constants},
            "symbols": list(program.symbols), "loops": loops, "ops": ops}


def _access(a) -> dict:
    return {"mem": a.mem, "value": a.value.name, "value_id": a.value.id, "dtype": a.value.dtype.short,
            "shape": _dims(a.shape), "base": _dims(a.base), "axis": list(a.axis), "extent": _dims(a.extent)}


def _tile_op(op) -> dict:
    return {"id": op.id, "kind": op.kind, "grid": _dims(op.grid), "core": op.core, "src": op.src,
            "inputs": [_access(a) for a in op.inputs], "outputs": [_access(a) for a in op.outputs],
            "attrs": _attrs(op.attrs), "loc": _loc(op.loc)}


def _leaf(leaf) -> dict:
    from .buffers import buffer_of

    names = {k: b.name for k, b in buffer_of(leaf).items()}
    ops = []
    for i, op in enumerate(leaf.ops):
        def operand(role, k, a, i=i):
            out = {"mem": a.mem, "value": a.value.name, "dtype": a.value.dtype.short, "shape": _dims(a.shape)}
            p = leaf.param_of.get((i, role, k))
            if p is not None:
                out["param"] = p
            else:
                out["buffer"] = names.get(a.local_key)
            return out
        ops.append({"index": i, "kind": op.kind,
                    "inputs": [operand("in", k, a) for k, a in enumerate(op.inputs)],
                    "outputs": [operand("out", k, a) for k, a in enumerate(op.outputs)],
                    "attrs": _attrs(op.attrs), "loc": _loc(op.loc)})
    return {"name": leaf.name, "core": leaf.core, "hash": leaf.hash, "grid_rank": leaf.grid_rank,
            "params": [{"index": p, "role": role, "dtype": dtype.short, "shape": _dims(shape)}
                       for p, (role, dtype, shape) in enumerate(leaf.params)],
            "buffers": [{"name": b.name, "mem": b.mem, "offset": b.offset, "nbytes": b.nbytes,
                         "first": b.first, "last": b.last} for b in leaf.buffers],
            "ops": ops}


def _root(r) -> dict:
    calls = []
    for k, c in enumerate(r.calls):
        calls.append({"index": k, "id": c.id, "leaf": c.leaf.name, "core": c.leaf.core, "grid": _dims(c.grid),
                      "subgraph": c.subgraph, "loc": _loc(c.loc),
                      "args": [{**_access(a), "write": i in c.writes} for i, a in enumerate(c.args)]})
    return {"name": r.name, "calls": calls, "deps": [list(d) for d in r.deps]}
