"""The cached call's fast path: a binder generated for the last compiled version a kernel used.

A call that passes tensors of the same dtypes, ranks and static sizes as the previous call (and
the same constants, with no global setting changed since) needs no signature walk, no cache key
and no dictionary lookup: the generated binder checks exactly what the key would contain, in
straight-line code, and returns the tensors and the dynamic sizes. Anything it does not accept
(another dtype, a non-contiguous or non-CPU tensor, keywords, a new size of a STATIC dim, a
mismatch of two dims that share a symbol, a tensor that requires grad) returns None, and the call takes the full path, which
validates and reports errors.
"""

from __future__ import annotations

from .._lazy import torch


def make_binder(sig, tensor_key, consts: dict, written: frozenset = frozenset()):
    """A function ``bind(args) -> (tensors, env) | None`` for the version keyed ``tensor_key``
    (one ``(dtype, rank, dims)`` per tensor parameter, ``-1`` for a dynamic dim) called with the
    constants ``consts``. For the parameters at the indices ``written`` it also declines a tensor
    that requires grad or is an inference tensor: the full path decides (frontend/outputs.py)."""
    nt = len(sig.tensors)
    lines = ["def bind(args):"]
    glob = {"Tensor": torch.Tensor}
    names = [f"t{i}" for i in range(nt)]
    const_specs = sig.consts
    # constants: positional after the tensors, or left to their defaults
    n_pos = [k for k in range(len(const_specs) + 1)
             if all(consts[c.param] is c.default or _same(consts[c.param], c.default) for c in const_specs[k:])]
    counts = ", ".join(str(nt + k) for k in n_pos)
    lines.append(f"    n = len(args)")
    lines.append(f"    if n not in ({counts},): return None")
    lines.append(f"    {', '.join(names)}{',' if nt == 1 else ''} = args[:{nt}]" if nt else "    pass")
    for k, c in enumerate(const_specs):
        glob[f"C{k}"] = consts[c.param]
        glob[f"CT{k}"] = type(consts[c.param])
        lines.append(f"    if n > {nt + k} and (args[{nt + k}].__class__ is not CT{k} or "
                     f"not (args[{nt + k}] == C{k})): return None")
    env_of: dict = {}
    for i, (spec, (dt, rank, dims)) in enumerate(zip(sig.tensors, tensor_key)):
        t = names[i]
        glob[f"D{i}"] = dt.torch()
        lines.append(f"    if {t}.__class__ is not Tensor or {t}.dtype is not D{i} or not {t}.is_cpu "
                     f"or not {t}.is_contiguous(): return None")
        if i in written:
            lines.append(f"    if {t}.requires_grad or {t}.is_inference(): return None")
        else:  # the full path runs on a detached view (no autograd graph in the run)
            lines.append(f"    if {t}.requires_grad: return None")
        if all(size != -1 for size in dims):  # every size fixed: one comparison of the torch.Size
            glob[f"SH{i}"] = tuple(dims)
            lines.append(f"    if {t}.shape != SH{i}: return None")
            continue
        lines.append(f"    s{i} = {t}.shape")
        checks = [f"len(s{i}) != {rank}"]
        for d, size in enumerate(dims):
            if size == -1:
                sym = spec.dims[d].symbol
                if sym in env_of:
                    checks.append(f"s{i}[{d}] != {env_of[sym]}")
                else:
                    env_of[sym] = f"s{i}[{d}]"
            else:
                checks.append(f"s{i}[{d}] != {size}")
        lines.append(f"    if {' or '.join(checks)}: return None")
    env = ", ".join(f"{sym!r}: {src}" for sym, src in env_of.items())
    lines.append(f"    return [{', '.join(names)}], {{{env}}}")
    namespace = dict(glob)
    exec(compile("\n".join(lines) + "\n", "<pypto launcher>", "exec"), namespace)  # noqa: S102
    return namespace["bind"]


def _same(a, b) -> bool:
    try:
        return type(a) is type(b) and bool(a == b)
    except Exception:  # noqa: BLE001 - a value whose == is not a bool: not the same
        return False
