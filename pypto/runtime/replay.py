"""A plan's steps as one generated function: the cached call's replay.

`plan.run_steps` interprets the steps of a plan: per step it loops over the operands, builds each
view from the tuple that describes it and decides, result by result, whether a copy is needed.
All of that depends only on the plan, so a plan replayed from the cache (a call with sizes seen
before) gets it written out once as straight-line code: one ``as_strided`` per operand with its
size, stride and offset as constants, the leaf call, and a copy only for a result the leaf did
not compute into its output view. The numbers are those of `plan.run_steps` with
``direct=True`` (no two arguments share memory; calls where some do run the interpreter).

Generating and compiling the code costs about as much as a few interpreted runs, so a plan gets
it at its second run (its first replay from the cache), and a plan of very many steps keeps the
interpreter (its per-step overhead is small beside the leaves' work).
"""

from __future__ import annotations

from ..errors import KernelRuntimeError, PyptoError

MAX_STEPS = 512  # beyond this the generated source costs more to compile than it saves


def _unalias(res):
    """Results that still view an operand the step overwrites, copied first."""
    return {p: r.clone() if r._base is not None else r for p, r in res.items()}


def _store(r, dst, size, nb):
    """``dst.copy_(r)`` for a result of another shape than its view: a cube result ``[m, n]`` for a
    ``[1, m, n]`` tile, or the valid part that the result and the destination both hold."""
    if r.shape != size:
        if r.dim() < dst.dim():
            r = r.reshape(tuple(r.shape[:nb]) + (1,) * (dst.dim() - r.dim()) + tuple(r.shape[nb:]))
        common = tuple(slice(0, min(a, b)) for a, b in zip(r.shape, size))
        r, dst = r[common], dst[common]
    dst.copy_(r)


def compile_replay(steps):
    """``replay(tensors, scratch)``: the ``steps`` run on the GM ``tensors`` (storage index ->
    tensor) with their temporaries in ``scratch`` (one dict per step), as ``run_steps(steps,
    tensors, scratch, direct=True)``; None when the plan has too many steps to be worth it."""
    if len(steps) > MAX_STEPS:
        return None
    glob = {"PyptoError": PyptoError, "KernelRuntimeError": KernelRuntimeError, "_unalias": _unalias, "_store": _store}
    used = sorted({v[1] for s in steps for v in (*s.ins, *s.outs)})
    lines = ["def replay(T, scratch):"]
    for sid in used:
        lines.append(f"    t{sid} = T[{sid}]; o{sid} = t{sid}.storage_offset()")

    def view(v, n, k):
        _, sid, size, stride, off = v
        glob[f"Z{n}_{k}"], glob[f"R{n}_{k}"] = size, stride
        return f"t{sid}.as_strided(Z{n}_{k}, R{n}_{k}, o{sid} + {off})"

    for n, step in enumerate(steps):
        glob[f"F{n}"], glob[f"E{n}"], glob[f"B{n}"], glob[f"S{n}"], glob[f"L{n}"] = \
            step.fn, step.ev, step.B, step.S, step.leaf
        P = ["None"] * step.nparams
        for k, v in enumerate(step.ins):
            P[v[0]] = view(v, n, f"i{k}")
        lines.append(f"    # step {n}: {step.leaf} ({step.variant}), batch {step.B}")
        lines.append(f"    P = [{', '.join(P)}]")
        direct = step.direct
        if direct:
            O = ["None"] * step.nparams
            for k, v in enumerate(step.outs):
                O[v[0]] = view(v, n, f"o{k}")
            lines.append(f"    O = [{', '.join(O)}]")
        lines.append("    try:")
        lines.append(f"        res = F{n}(P, E{n}, B{n}, S{n}, {'O' if direct else 'None'}, scratch[{n}])")
        lines.append("    except PyptoError:")
        lines.append("        raise")
        lines.append("    except Exception as e:")
        lines.append(f"        raise KernelRuntimeError(f'leaf {{L{n}}} failed: {{e}}') from e")
        if step.alias:
            lines.append("    res = _unalias(res)")
        nb = len(step.B)
        for k, v in enumerate(step.outs):
            p, size = v[0], v[2]
            if direct:
                lines.append(f"    r = res[{p}]; d = O[{p}]")
                lines.append(f"    if r is not d: _store(r, d, Z{n}_o{k}, {nb})")
            else:
                lines.append(f"    _store(res[{p}], {view(v, n, f'o{k}')}, Z{n}_o{k}, {nb})")
    lines.append("    return None")
    source = "\n".join(lines) + "\n"
    namespace = dict(glob)
    exec(compile(source, "<pypto replay>", "exec"), namespace)  # noqa: S102 - our own generated code
    fn = namespace["replay"]
    fn.source = source
    return fn
