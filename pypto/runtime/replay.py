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
from .view_only_steps import view_only_steps

MAX_STEPS = 512  # beyond this the generated source costs more to compile than it saves


def _unalias(res, O):
    """Results that still view an operand the step overwrites, copied first (not those the leaf
    computed into their own output views, ``O``)."""
    return {p: r.clone() if r._base is not None and (O is None or r is not O[p]) else r for p, r in res.items()}


def _store(r, dst, size, nb):
    """``dst.copy_(r)`` for a result of another shape than its view: a cube result ``[m, n]`` for a
    ``[1, m, n]`` tile, or the valid part that the result and the destination both hold."""
    if r.shape != size:
        if r.dim() < dst.dim():
            r = r.reshape(tuple(r.shape[:nb]) + (1,) * (dst.dim() - r.dim()) + tuple(r.shape[nb:]))
        common = tuple(slice(0, min(a, b)) for a, b in zip(r.shape, size))
        r, dst = r[common], dst[common]
    dst.copy_(r)


def compile_replay(steps, n_params: int, shares=None, moves_only=None):
    """``replay(tensors, views, scratch)``: the ``steps`` run on the GM ``tensors`` (storage index
    -> tensor: the ``n_params`` caller's tensors, then the workspaces) with their temporaries in
    ``scratch`` (one dict per step), as ``run_steps(steps, tensors, scratch, direct=True)``;
    ``views`` is what ``replay.views(tensors, check)`` returned. None when the plan has too many
    steps to be worth it.

    ``replay.views`` makes the views of the caller's tensors, and keeps them from one call to the
    next while the call passes the very same tensor objects at the same data pointers (a view
    holds its memory, so no other tensor can be there meanwhile). With ``check`` it first answers
    None when ``shares(tensors)`` (a written argument shares a storage with another one: the
    call is not for this path), unless the views kept are for these very tensors (they were
    made for a call that ran directly on them). ``replay.forget()`` drops the views (the
    executor does when it runs another plan, so a kernel holds the views of its last call only,
    as it holds that call's memory). The workspaces' views are made once per set of workspaces
    and kept while the next call passes the very same workspace tensors (the plan's kept ones);
    ``replay.forget_work()`` drops them (the plan does when its budget drops its workspaces, whose
    memory the views would otherwise hold).

    With ``moves_only`` (step -> does its leaf only move data), the steps whose results only the
    memory view reads (view_only_steps.py) are left out: ``replay.deferred`` lists them, in
    order, for the executor to run when that view is read."""
    if len(steps) > MAX_STEPS:
        return None
    later = view_only_steps(steps, n_params, moves_only) if moves_only is not None else frozenset()
    glob = {"PyptoError": PyptoError, "KernelRuntimeError": KernelRuntimeError, "_unalias": _unalias,
            "_store": _store, "KEPT": [None], "HELD": [None], "SHARES": shares}
    used = sorted({v[1] for s in steps for v in (*s.ins, *s.outs)})
    params = [sid for sid in used if sid < n_params]
    kept: dict = {}  # view of a caller's tensor -> its name (made once, before the steps)
    held: dict = {}  # view of a workspace -> its name (made once per set of workspaces)

    def view(v, n, k):
        _, sid, size, stride, off = v
        if sid < n_params:
            name = kept.get(v[1:])
            if name is None:
                name = kept[v[1:]] = f"v{len(kept)}"
                glob[f"Z{name}"], glob[f"R{name}"] = size, stride
            return name
        name = held.get(v[1:])
        if name is None:
            name = held[v[1:]] = f"u{len(held)}"
            glob[f"Z{name}"], glob[f"R{name}"] = size, stride
        return name

    body = []
    for n, step in enumerate(steps):
        if n in later:
            continue
        glob[f"F{n}"], glob[f"E{n}"], glob[f"B{n}"], glob[f"S{n}"], glob[f"L{n}"], glob[f"M{n}"] = \
            step.fn, step.ev, step.B, step.S, step.leaf, step.memo
        P = ["None"] * step.nparams
        for k, v in enumerate(step.ins):
            P[v[0]] = view(v, n, f"i{k}")
        body.append(f"    # step {n}: {step.leaf} ({step.variant}), batch {step.B}")
        body.append(f"    P = [{', '.join(P)}]")
        direct = step.direct_outs
        outs = {}
        if direct:
            O = ["None"] * step.nparams
            for k, v in enumerate(step.outs):
                if v[0] not in direct:
                    continue
                O[v[0]] = outs[k] = view(v, n, f"o{k}")
            body.append(f"    O = [{', '.join(O)}]")
        body.append("    try:")
        body.append(f"        res = F{n}(P, E{n}, B{n}, S{n}, {'O' if direct else 'None'}, scratch[{n}], M{n})")
        body.append("    except PyptoError:")
        body.append("        raise")
        body.append("    except Exception as e:")
        body.append(f"        raise KernelRuntimeError(f'leaf {{L{n}}} failed: {{e}}') from e")
        if step.alias:
            body.append(f"    res = _unalias(res, {'O' if direct else 'None'})")
        nb = len(step.B)
        for k, v in enumerate(step.outs):
            p = v[0]
            if p in direct:
                body.append(f"    r = res[{p}]")
                body.append(f"    if r is not {outs[k]}: _store(r, {outs[k]}, {outs[k]}.shape, {nb})")
            else:
                d = view(v, n, f"o{k}")
                body.append(f"    _store(res[{p}], {d}, {d}.shape, {nb})")
    names = ", ".join(f"t{sid}" for sid in params)
    made = ", ".join(kept.values())
    lines = ["def views(T, check):"]
    lines += [f"    t{sid} = T[{sid}]" for sid in params]
    lines.append(f"    key = ({''.join(f't{sid}.data_ptr(), ' for sid in params)})")
    lines.append("    c = KEPT[0]")
    same = "".join(f" and c[{k}] is t{sid}" for k, sid in enumerate(params))
    lines.append(f"    if c is not None{same} and c[-2] == key:")
    lines.append("        return c[-1]")
    lines.append("    if check and SHARES is not None and SHARES(T):")
    lines.append("        return None")
    lines += [f"    o{sid} = t{sid}.storage_offset()" for sid in params]
    for (sid, size, stride, off), name in kept.items():
        lines.append(f"    {name} = t{sid}.as_strided(Z{name}, R{name}, o{sid} + {off})")
    lines.append(f"    V = ({''.join(n + ', ' for n in kept.values())})")
    lines.append(f"    KEPT[0] = ({''.join(n + ', ' for n in names.split(', ') if n)}key, V)")
    lines.append("    return V")
    lines.append("")
    work = [sid for sid in used if sid >= n_params]
    lines.append("def work_views(T):")
    for sid in work:
        lines.append(f"    t{sid} = T[{sid}]; o{sid} = t{sid}.storage_offset()")
    for (sid, size, stride, off), name in held.items():
        lines.append(f"    {name} = t{sid}.as_strided(Z{name}, R{name}, o{sid} + {off})")
    lines.append(f"    U = ({''.join(n + ', ' for n in held.values())})")
    lines.append(f"    HELD[0] = ({''.join(f'T[{sid}], ' for sid in work)}U)")
    lines.append("    return U")
    lines.append("")
    lines.append("def replay(T, V, scratch):")
    if kept:
        lines.append(f"    {made}, = V")
    if held:
        same = "".join(f" and c[{k}] is T[{sid}]" for k, sid in enumerate(work))
        lines.append("    c = HELD[0]")
        lines.append(f"    {', '.join(held.values())}, = c[-1] if c is not None{same} else work_views(T)")
    source = "\n".join(lines + body + ["    return None"]) + "\n"
    namespace = dict(glob)
    exec(compile(source, "<pypto replay>", "exec"), namespace)  # noqa: S102 - our own generated code
    fn = namespace["replay"]
    fn.source = source
    fn.deferred = tuple(steps[n] for n in sorted(later))
    fn.views = namespace["views"]
    fn.forget = lambda: namespace["KEPT"].__setitem__(0, None)
    fn.forget_work = lambda: namespace["HELD"].__setitem__(0, None)
    return fn
