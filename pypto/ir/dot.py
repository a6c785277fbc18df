"""Graphviz DOT export of the Tensor Graph: ops as boxes, tensors as ellipses, loops and runtime
branches as clusters. Large graphs are summarised (runs of identical ops collapse with a count)."""

from __future__ import annotations

from .expr import render, render_dims
from .graph import Branch, Loop, Op, Program

MAX_NODES = 400


def _q(text: str) -> str:
    return '"' + str(text).replace("\\", "\\\\").replace('"', '\\"').replace("\n", "\\n") + '"'


class _Dot:
    def __init__(self):
        self.lines: list[str] = []
        self.values: dict = {}
        self.cluster = 0
        self.nodes = 0

    def value(self, v, pad: str) -> str:
        if v.id not in self.values:
            name = f"v{v.id}"
            self.values[v.id] = name
            label = f"%{v.name}\n{v.dtype.short}{render_dims(v.shape)}"
            shape = "ellipse" if v.kind != "param" else "oval"
            style = ', style="filled", fillcolor="#e8f0fe"' if v.kind == "param" else ""
            self.lines.append(f"{pad}{name} [label={_q(label)}, shape={shape}{style}];")
            self.nodes += 1
        return self.values[v.id]

    def op(self, op: Op, pad: str, count: int = 1):
        name = f"op{op.id}"
        label = op.kind + (f" ×{count}" if count > 1 else "")
        outs = [f"out %{v.name}: {v.dtype.short}{render_dims(v.shape)}" for v in op.outputs]
        where = f"source: {op.loc}  {op.loc.source_line()}" if op.loc is not None else ""
        tip = "\n".join([op.kind] + outs + ([where] if where else []))[:600]
        self.lines.append(f"{pad}{name} [label={_q(label)}, shape=box, style=\"rounded,filled\", "
                          f"fillcolor=\"#fff4d6\", tooltip={_q(tip)}];")
        self.nodes += 1
        for v in op.inputs:
            self.lines.append(f"{pad}{self.value(v, pad)} -> {name};")
        for v in op.outputs:
            if op.kind == "assemble":
                self.lines.append(f"{pad}{name} -> {self.value(v, pad)} [style=dashed];")
            else:
                self.lines.append(f"{pad}{name} -> {self.value(v, pad)};")

    def region(self, region, pad: str):
        if isinstance(region, Branch):
            for label, sub in ((f"if {render(region.cond)}", region.then), ("else", region.orelse)):
                self.open(label, pad, "#f3e8fd")
                self.region(sub, pad + "  ")
                self.lines.append(pad + "}")
            return
        items = list(region.items)
        i = 0
        while i < len(items):
            item = items[i]
            if isinstance(item, Loop):
                for factor, body in zip(item.factors, item.bodies):
                    extra = f" unroll {factor}" if len(item.factors) > 1 else ""
                    self.open(f"loop {item.index} in [{render(item.start)}, {render(item.stop)}){extra}",
                              pad, "#eef7ee")
                    self.region(body, pad + "  ")
                    self.lines.append(pad + "}")
                i += 1
                continue
            j = i + 1
            if self.nodes > MAX_NODES:  # summarise: collapse a run of same-kind ops into one node
                while j < len(items) and isinstance(items[j], Op) and items[j].kind == item.kind:
                    j += 1
            self.op(item, pad, j - i)
            i = j

    def open(self, label, pad, color):
        self.cluster += 1
        self.lines.append(f"{pad}subgraph cluster_{self.cluster} {{")
        self.lines.append(f"{pad}  label={_q(label)}; style=\"rounded,filled\"; fillcolor={_q(color)};")


def program_to_dot(program: Program) -> str:
    """DOT text of ``program``'s Tensor Graph."""
    d = _Dot()
    d.lines += [f"digraph {_q(program.name)} {{", "  rankdir=TB;", '  node [fontname="Helvetica", fontsize=10];',
                '  edge [fontname="Helvetica", fontsize=9];']
    for p in program.params:
        d.value(p.value, "  ")
    d.region(program.body, "  ")
    d.lines.append("}")
    return "\n".join(d.lines)
