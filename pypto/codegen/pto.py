"""The readable form of a leaf function: a PTO-style listing (TLOAD / TADD / TSTORE ...).

Each GM param is named P<i> with its dtype and tile shape; its offsets and valid extents are
runtime arguments of each call (``off``/``valid``). Local buffers show their memory level, byte
offset, size and lifetime.
"""

from __future__ import annotations

from ..ir import expr as E
from ..passes.buffers import buffer_of
from .names import listing_text

_MNEMONIC = {"copy_in": "TLOAD", "gather_in": "TLOAD.GATHER", "copy_out": "TSTORE", "l1_to_l0a": "TMOV.L0A", "l1_to_l0b": "TMOV.L0B",
             "matmul": "TMATMUL", "sum": "TROWSUM", "amax": "TROWMAX", "amin": "TROWMIN"}


def mnemonic(kind: str) -> str:
    return _MNEMONIC.get(kind, "T" + kind.upper().replace("_", ""))


def listing(leaf, variant: str = "") -> str:
    """The PTO-style text of ``leaf`` (``variant``: "main" static tiles, "tail" dynamic)."""
    bufs = buffer_of(leaf)
    head = [f"// {leaf.name}  core={leaf.core}  hash={leaf.hash}" + (f"  variant={variant}" if variant else ""),
            "// params (GM, per call: offset and valid extent per dim):"]
    for p, (role, dtype, shape) in enumerate(leaf.params):
        head.append(f"//   P{p:<2} {role:<3} {dtype.short}{E.render_dims(shape)}")
    if bufs:
        head.append("// local buffers:")
        for key, b in bufs.items():
            head.append(f"//   {b.name:<6} {b.mem:<3} @0x{b.offset:05x} {b.nbytes:>7} B  ops {b.first}..{b.last}")
    names = {k: b.name for k, b in bufs.items()}
    body = []
    valid = "" if variant == "main" else " valid[...]"
    for i, op in enumerate(leaf.ops):
        def operand(role, k, a):
            p = leaf.param_of.get((i, role, k))
            if p is not None:
                return f"P{p}[off]{valid}"
            return names.get(a.local_key, f"%{listing_text(a.value.name)}")
        outs = [operand("out", k, a) for k, a in enumerate(op.outputs)]
        ins = [operand("in", k, a) for k, a in enumerate(op.inputs)]
        attrs = ", ".join(f"{k}={E.render_attr(v)}" for k, v in op.attrs.items() if k not in ("bcast", "k_check", "bias_check"))
        line = f"{mnemonic(op.kind):<10} {', '.join(outs + ins)}"
        if op.kind == "matmul":
            body.append(f"for k in [0, K) step {op.attrs.get('k_tile', 64)}:  // stream K through L1 -> L0A/L0B")
            line = "  " + line + "  // accumulate in L0C"
        body.append(line + (f"   ; {attrs}" if attrs else ""))
    return "\n".join(head + body) + "\n"
