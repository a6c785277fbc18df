"""Text form of the Tensor Graph: one line per op, indented loops and runtime branches."""

from __future__ import annotations

import os

from .expr import render, render_dims
from .graph import Branch, Loop, Op, Program


def _ty(v) -> str:
    text = f"{v.dtype.short}{render_dims(v.shape)}"
    if v.valid_shape != v.shape:
        text += f" valid{render_dims(v.valid_shape)}"
    return text


def _attr(v) -> str:
    if isinstance(v, tuple) and v and all(isinstance(x, tuple) for x in v):
        return "(" + ", ".join(_attr(x) for x in v) + ")"
    if isinstance(v, tuple):
        return render_dims(v)
    if hasattr(v, "short"):
        return v.short
    return render(v)


_SKIP_ATTRS = {"bcast"}


def format_op(op: Op) -> str:
    outs = ", ".join(f"%{v.name}: {_ty(v)}" for v in op.outputs)
    args = ", ".join(f"%{v.name}" for v in op.inputs)
    attrs = ", ".join(f"{k}={_attr(v)}" for k, v in op.attrs.items() if k not in _SKIP_ATTRS and v is not None and v is not False)
    text = f"{outs} = {op.kind}({args}{', ' if args and attrs else ''}{attrs})"
    if op.kind == "assemble":
        text = f"assemble(%{op.inputs[0].name} -> %{op.inputs[1].name}, {attrs})"
    if op.tiles.vec is not None and op.kind not in ("view", "assemble", "reshape"):
        text += f"  tile={list(op.tiles.vec)}"
    if op.loc is not None:
        text += f"  # {os.path.basename(op.loc.file)}:{op.loc.line}"
    return text


def _region(region, indent: int, out: list):
    pad = "  " * indent
    if isinstance(region, Branch):
        out.append(f"{pad}if {render(region.cond)}:")
        _region(region.then, indent + 1, out)
        out.append(f"{pad}else:")
        _region(region.orelse, indent + 1, out)
        return
    for item in region.items:
        if isinstance(item, Op):
            out.append(pad + format_op(item))
        else:
            _loop(item, indent, out)
    if region.returns:
        out.append(pad + "return " + ", ".join(f"%{v.name}" for v in region.returns))


def _loop(lp: Loop, indent: int, out: list):
    pad = "  " * indent
    step = f" step {render(lp.step)}" if lp.step != 1 else ""
    flags = "".join([" parallel" if lp.parallel else "", " submit_before_loop" if lp.submit_before_loop else ""])
    for factor, body in zip(lp.factors, lp.bodies):
        unroll = f" unroll {factor}" if len(lp.factors) > 1 else ""
        label = f"{lp.name}: " if lp.name else ""
        out.append(f"{pad}loop {label}{lp.index} in [{render(lp.start)}, {render(lp.stop)}){step}{unroll}{flags}")
        _region(body, indent + 1, out)


def format_program(program: Program) -> str:
    """The whole program as text."""
    params = ", ".join(f"%{p.value.name}: {_ty(p.value)}" for p in program.params)
    consts = "".join(f", {k}={v!r}" for k, v in program.constants)
    out = [f"kernel {program.name}({params}{consts})"]
    _region(program.body, 1, out)
    return "\n".join(out)
