"""The executable form of a leaf function: generated Python over torch.

A leaf runs for a whole batch of tile instances at once (they run in parallel on the simulated
cores anyway). Every GM operand arrives as one tensor ``[*B, *tile]``: ``B`` holds the batch dims
(loop iterations and grid points the runtime stacked, usually a strided view of the GM tensor, not
a copy) and the tile dims follow. When the runtime folds grid axes into the tile dims (a leaf whose
ops do not mix tiles along them), a "tile" is a whole region of the tensor.

The code is generated per number of batch dims (``nb``): op attrs that name dims are shifted past
the batch dims once, at generation time, and each op's compute function is bound then too, so a
call does no registry lookups. A local buffer is deleted after its last use (``del``), so a leaf
holds at most the tiles still needed; ``S[i]`` gives the runtime shape of the tile an op creates
(``full``, ``tensor``, ``expand_clone``).
"""

from __future__ import annotations


import math
from types import MappingProxyType

from ..errors import KernelRuntimeError
from ..ops.matmul import upcast_operand
from ..ops.registry import REGISTRY
from ..passes.expand import WHOLE
from .._lazy import torch
from .names import identifier_part

_HALF = ("fp16", "bf16")
MOVES = ("copy_in", "copy_out", "l1_to_l0a", "l1_to_l0b")
CREATES = ("full", "tensor", "expand_clone")
SHAPED = ("sum", "amax", "amin", "matmul")  # results of another shape than the first operand's


def shift_attrs(attrs, nb: int = 1) -> dict:
    """Op attrs for batched tiles: dims move past the ``nb`` leading batch dims."""
    out = dict(attrs)
    if "dim" in out and isinstance(out["dim"], int):
        out["dim"] = out["dim"] + nb if out["dim"] >= 0 else out["dim"]
    if "dims" in out:
        out["dims"] = tuple(d + nb if d >= 0 else d for d in out["dims"])
    if "bcast" in out:
        out["bcast"] = tuple((False,) * nb + tuple(f) for f in out["bcast"])
    return out


def _pad_rank(x, rank, nb):
    """Insert size-1 dims after the batch dims so a lower-rank operand broadcasts like numpy."""
    missing = rank + nb - x.dim()
    if missing <= 0:
        return x
    return x.reshape(tuple(x.shape[:nb]) + (1,) * missing + tuple(x.shape[nb:]))


def _full(B, shape, value, dtype):
    # one tile, broadcast over the batch: the batch shares the values and costs no memory
    t = torch.full(tuple(shape), value, dtype=dtype)
    return t.expand(*B, *t.shape)


def _expand(x, B, shape):
    nb = len(B)
    size = list(B) + [s if x.shape[nb + k] == 1 else x.shape[nb + k] for k, s in enumerate(shape)]
    return x.expand(size).clone()


def _gather(pieces, dim, rows):
    """The pieces of one operand side by side along ``dim`` (passes/gather.py). Only the operand's
    tail may be short: a piece that ends early with rows after it is a view past its tensor's end
    (the copies it replaces would have left those rows zero), refused rather than shifted."""
    short = False
    for x, n in zip(pieces, rows):
        got = x.shape[dim]
        if got and short:
            raise KernelRuntimeError("a gathered operand has a piece that ends early: a view reads past the "
                                     "end of its tensor", expected=f"{n} rows", got=f"{got} rows")
        short = short or got < n
    return torch.cat(pieces, dim)


def _whole(compute, ins, attrs, ev, out_dtypes, B):
    """A whole-tensor (GM->GM) op, one batch instance at a time, with its unshifted attrs."""
    nb = len(B)
    n = math.prod(B)
    flat = [x.reshape(n, *x.shape[nb:]) for x in ins]
    res = []
    for i in range(n):
        r = compute([x[i] for x in flat], attrs, ev)
        res.append(r if isinstance(r, tuple) else (r,))
    outs = []
    for k, dt in enumerate(out_dtypes):
        t = torch.stack([r[k] for r in res])
        t = t if t.dtype == dt else t.to(dt)
        outs.append(t.reshape(*B, *t.shape[1:]))
    return tuple(outs)


def _reshape_batch(compute, x, attrs, ev, out_dtypes, B):
    """A reshape of every batch instance: the same reshape for all, so one reshape of the batch."""
    nb = len(B)
    first = compute([x[(0,) * nb]], attrs, ev)
    # a view of its input, or (a partly valid inner dim laid into the whole shape) the compute's
    # own result for the whole batch
    r = x.reshape(*B, *first.shape) if first.numel() == x[(0,) * nb].numel() else compute([x], attrs, ev)
    return (r if r.dtype == out_dtypes[0] else r.to(out_dtypes[0]),)


def _fits(x, y, flags) -> bool:
    """Does ``y`` broadcast to ``x``'s shape the way the op broadcasts it? ``flags`` are the op's
    ``bcast`` flags of ``y`` (shifted past the batch dims): a size-1 dim of ``y`` stretches only
    where the op broadcasts it. Elsewhere it is a tail tile cropped to its valid extent, and the op
    (`elementwise.align_valid`) crops its result there too: computed into ``x``, torch would
    instead broadcast it over rows the program never writes."""
    xs, ys = x.shape, y.shape
    if xs == ys:
        return True
    if len(ys) != len(xs) or flags is None or len(flags) != len(xs):
        return False
    return all(b == a or (b == 1 and f) for a, b, f in zip(xs, ys, flags))


def _flags(attrs, k):
    """The op's ``bcast`` flags of operand ``k`` (None for an op without them)."""
    b = attrs.get("bcast")
    return b[k] if b is not None and k < len(b) else None


def _into(into, compute, ins, attrs, ev, dst, dt, M=None, i=0):
    """An op whose result is a leaf output: computed straight into ``dst`` (the output's view of its
    GM tensor) when the result has exactly its shape and dtype, else into a fresh tile as usual.
    The shapes and dtypes of a step's operands are the same at every call (the plan fixes its
    views), so the verdict is kept in the step's ``M`` ({op index: verdict}, `plan.Step.memo`): the
    cached call does not compare shapes again; only ``requires_grad`` is looked at each time."""
    if dst is not None:
        ok = M.get(i) if M is not None else None
        if ok is None:
            ok = dst.dtype is dt and ins[0].shape == dst.shape
            if ok:
                shape = dst.shape
                for k, x in enumerate(ins):
                    if x.shape != shape and not _fits(dst, x, _flags(attrs, k)):
                        ok = False
                        break
            if M is not None:
                M[i] = ok
        if ok:
            for x in ins:  # (torch refuses out= for an operand that requires grad)
                if x.requires_grad:
                    return compute(ins, attrs, ev)
            return into(ins, attrs, ev, dst)
    return compute(ins, attrs, ev)


def _into_shaped(into, compute, ins, attrs, ev, dst, dt, M=None, i=0):
    """`_into` for an op whose result has another shape than its first operand (a reduction, a
    matmul): its ``into`` checks the shape and answers None when it cannot write ``dst``. An
    ``into`` with a ``prepare`` form (the matmul's) works out its operand views once per step: the
    runner it gives is kept in the step's ``M`` and rebuilds them from ``ins`` at the next calls,
    one ``as_strided`` each instead of the chain of views that derived them."""
    if dst is not None and dst.dtype is dt:
        for x in ins:  # (torch refuses out= for an operand that requires grad)
            if x.requires_grad:
                return compute(ins, attrs, ev)
        if M is not None:
            prepare = getattr(into, "prepare", None)
            if prepare is not None:
                key = ("prepared", i)  # (the `_into` verdicts are keyed by the bare op index)
                run = M.get(key)
                if run is None:
                    run = M[key] = prepare(ins, attrs, ev, dst) or False
                if run is not False:
                    r = run(ins, dst)
                    if r is not None:
                        return r
        r = into(ins, attrs, ev, dst)
        if r is not None:
            return r
    return compute(ins, attrs, ev)


def _reuse(into, compute, ins, attrs, ev, W, i, dt):
    """A temporary of op ``i``: computed into the tile it made at the step's previous call (``W``,
    {op index: tile}, kept by the plan within its workspace budget) when that has the result's shape,
    else into a fresh tile, which ``W`` keeps for the next call."""
    if W is None:
        return compute(ins, attrs, ev)
    buf = W.get(i)
    if buf is not None and ins[0].shape == buf.shape:
        for k, x in enumerate(ins):
            if x.requires_grad or not _fits(buf, x, _flags(attrs, k)):
                break
        else:
            return into(ins, attrs, ev, buf)
    r = compute(ins, attrs, ev)
    if r.dtype is dt and r._base is None and r.is_contiguous() and not any(r is x for x in ins):
        W[i] = r
    return r


RUNTIME = {"_gather": _gather, "_pad_rank": _pad_rank, "_full": _full, "_expand": _expand, "_whole": _whole,
           "_reshape_batch": _reshape_batch, "_fits": _fits, "_into": _into, "_into_shaped": _into_shaped,
           "_reuse": _reuse, "_upcast": upcast_operand, "torch": torch}


def _local_names(leaf) -> dict:
    """Local buffer name per local key, in first-use order (readable, unique). The tensor's name is
    the user's text: only its word characters enter the source (`names.identifier_part`)."""
    names: dict = {}
    for i, op in enumerate(leaf.ops):
        for role, accs in (("in", op.inputs), ("out", op.outputs)):
            for k, a in enumerate(accs):
                if (i, role, k) in leaf.param_of or a.local_key in names:
                    continue
                names[a.local_key] = f"{a.mem.lower()}{len(names)}_{identifier_part(a.value.name)}"
    return names


def generate(leaf, variant: str = "", nb: int = 1) -> tuple[str, dict]:
    """(Python source, its constants) of the executable form of ``leaf`` for ``nb`` batch dims."""
    name = f"{leaf.name}{'_' + variant if variant else ''}"
    lines = [f"def {name}(P, ev, B, S, O=None, W=None, M=None):",
             f"    \"\"\"{leaf.core} leaf {leaf.name}{' (' + variant + ' variant)' if variant else ''}: "
             f"P[i] is GM param i as [*B, *tile] ({nb} batch dim{'s' if nb != 1 else ''}).\"\"\"",
             "    out = {}"]
    consts: dict = {}
    names = _local_names(leaf)

    def ref(i, role, k, a):
        p = leaf.param_of.get((i, role, k))
        if p is None:
            return names[a.local_key]
        return f"P[{p}]" if role == "in" else f"out[{p}]"

    # last op reading each local buffer: it is deleted right after (the leaf's own lifetimes)
    last_use: dict = {}
    aliased = set()  # buffers a data move passes on by reference: never overwritten in place
    for i, op in enumerate(leaf.ops):
        for k, a in enumerate(op.inputs):
            if (i, "in", k) not in leaf.param_of:
                last_use[names[a.local_key]] = i
                if op.kind in MOVES:
                    aliased.add(names[a.local_key])
    owned = set()  # buffers holding a tensor the leaf created itself
    # buffer -> (line, op index) of the op that made its storage, when that op can compute into a
    # given tensor: into its output's view when the buffer ends up there, else into a tile kept
    # from the step's previous call (see _storage_line)
    roots: dict = {}
    claimed: dict = {}  # root -> the output param whose view it computes into
    for i, op in enumerate(leaf.ops):
        ins = [ref(i, "in", k, a) for k, a in enumerate(op.inputs)]
        outs = [ref(i, "out", k, a) for k, a in enumerate(op.outputs)]
        kind = op.kind
        if kind == "gather_in":  # pieces of one operand, loaded side by side (passes/gather.py)
            rows = [int(a.shape[op.attrs["dim"]]) for a in op.inputs]  # static piece sizes
            lines.append(f"    {outs[0]} = _gather([{', '.join(ins)}], {nb + op.attrs['dim']}, {rows!r})"
                         f"  # gather_in: GM -> L1")
            owned.add(outs[0])
        elif kind in MOVES:
            lines.append(f"    {outs[0]} = {ins[0]}  # {kind}: {op.inputs[0].mem} -> {op.outputs[0].mem}")
            root = roots.get(ins[0])
            if outs[0].startswith("out[") and root is not None and root not in claimed:
                claimed[root] = leaf.param_of[(i, "out", 0)]
        elif _in_place(op, ins, outs, i, last_use, owned, aliased):
            lines += _in_place_lines(i, op, ins, outs, consts, nb)
            owned.add(outs[0])
            if ins[0] in roots:  # the same storage, one more op on it
                roots[outs[0]] = roots[ins[0]]
        else:
            lines += _op_lines(i, op, ins, outs, consts, nb)
            if REGISTRY[kind].inplace is not None and len(outs) == 1:
                owned.add(outs[0])  # ops with an in-place form return fresh tensors
            if _can_write_direct(op, outs, nb):
                roots[outs[0]] = (len(lines) - 1, i)
        dead = [x for x in dict.fromkeys(ins) if last_use.get(x) == i]
        if dead:
            lines.append(f"    del {', '.join(dead)}")
    for root in set(roots.values()):
        line, i = root
        kind = leaf.ops[i].kind
        if kind in SHAPED and claimed.get(root) is None:  # a temporary: no tile kept for it
            continue
        lines[line] = _storage_line(lines[line], i, claimed.get(root), consts, REGISTRY[kind].into, kind in SHAPED)
    lines.append("    return out")
    return "\n".join(lines) + "\n", consts


_MIXED_INTO = ("matmul", "cast")  # ops whose ``into`` takes fp32/fp16/bf16 operands of another dtype
_FLOAT_SHORTS = ("fp32",) + _HALF


def _can_write_direct(op, outs, nb) -> bool:
    """Can op ``op`` compute into a caller-given output view? It needs an ``into`` form, one local
    result, and operands and result of one dtype (no fp32 detour of a half type) -- except a
    matmul or a cast between fp32/fp16/bf16: the matmul's ``into`` multiplies in fp32 and the copy
    into the view rounds once, as `.to` would."""
    d = REGISTRY[op.kind]
    if d.into is None or len(outs) != 1 or outs[0].startswith("out[") or op.kind in WHOLE:
        return False
    dt = op.outputs[0].value.dtype
    if op.kind in _MIXED_INTO and dt.short in _FLOAT_SHORTS:
        same = all(a.value.dtype.short in _FLOAT_SHORTS for a in op.inputs)
    else:
        same = all(a.value.dtype is dt for a in op.inputs) and not (d.fp32_math and dt.short in _HALF)
    return same and all(len(a.shape) == len(op.outputs[0].shape) for a in op.inputs)


def _storage_line(line, i, p, consts, into, shaped=False) -> str:
    """The line of op ``i`` (``X = F{i}([...], A{i}, ev)``) rewritten to compute into output ``p``'s
    view when the runtime passes one (``O``), or (``p`` None: a temporary) into the tile the op
    made at the step's previous call, kept in ``W``."""
    target, call = line.split(" = ", 1)
    prefix = f"F{i}(["
    assert call.startswith(prefix) and call.endswith(f"], A{i}, ev)"), line
    args = call[len(prefix):-len(f"], A{i}, ev)")]
    consts[f"T{i}"] = into
    if p is None:
        return f"{target} = _reuse(T{i}, F{i}, [{args}], A{i}, ev, W, {i}, D{i}[0])"
    helper = "_into_shaped" if shaped else "_into"
    tail = f", M, {i})"
    return f"{target} = {helper}(T{i}, F{i}, [{args}], A{i}, ev, O[{p}] if O is not None else None, D{i}[0]{tail}"


def _in_place(op, ins, outs, i, last_use, owned, aliased) -> bool:
    """Can op ``i`` compute into its first operand? Its buffer must be the leaf's own tensor, die
    here, never be passed on by a data move, and have the result's dtype (fp32) and tile."""
    d = REGISTRY[op.kind]
    if d.inplace is None or len(outs) != 1 or outs[0].startswith("out["):
        return False
    x, a, o = ins[0], op.inputs[0], op.outputs[0]
    return (x in owned and last_use.get(x) == i and x not in aliased and x not in ins[1:]
            and a.value.dtype.short == "fp32" and o.value.dtype.short == "fp32"
            and tuple(a.shape) == tuple(o.shape) and tuple(a.axis) == tuple(o.axis))


def _in_place_lines(i, op, ins, outs, consts, nb) -> list:
    """The op written into its first operand; a second operand that would grow it (a tail cropped
    differently) takes the out-of-place form."""
    lines = _op_lines(i, op, ins, outs, consts, nb)
    consts[f"I{i}"] = REGISTRY[op.kind].inplace
    call = f"I{i}([{', '.join(ins)}], A{i}, ev)"
    if len(ins) == 1:
        return [f"    {outs[0]} = {call}  # in place"]
    return [f"    if _fits({ins[0]}, {ins[1]}, A{i}['bcast'][1]): {outs[0]} = {call}  # in place",
            f"    else: {lines[0].strip()}"]


def _op_lines(i, op, ins, outs, consts, nb) -> list:
    kind = op.kind
    d = REGISTRY[kind]
    dts = tuple(a.value.dtype.torch() for a in op.outputs)
    consts[f"D{i}"] = dts
    consts[f"A{i}"] = MappingProxyType(dict(op.attrs) if kind in WHOLE else shift_attrs(op.attrs, nb))
    rank = len(op.outputs[0].shape)
    target = ", ".join(outs) + ("," if len(outs) == 1 else "")
    if kind in ("full", "tensor"):
        value = f"ev(A{i}['value'])" if kind == "full" else "0"
        return [f"    {outs[0]} = _full(B, S[{i}], {value}, D{i}[0])"]
    if kind == "expand_clone":
        return [f"    {outs[0]} = _expand(_pad_rank({ins[0]}, {rank}, {nb}), B, S[{i}]).to(D{i}[0])"]
    consts[f"F{i}"] = _declared(d.compute, dts) if kind not in WHOLE else d.compute
    if kind == "reshape":
        return [f"    {target} = _reshape_batch(F{i}, {ins[0]}, A{i}, ev, D{i}, B)"]
    if kind in WHOLE:  # gather, scatter ...: per instance on the whole (valid) tensors
        return [f"    {target} = _whole(F{i}, [{', '.join(ins)}], A{i}, ev, D{i}, B)"]
    args = []
    for x, a in zip(ins, op.inputs):
        if len(a.shape) < rank:
            x = f"_pad_rank({x}, {rank}, {nb})"
        if d.fp32_math and a.value.dtype.short in _HALF:  # upstream computes half types in fp32
            x = f"{x}.float()"
        if kind == "matmul" and len(args) < 2 and a.value.dtype.short in _HALF:  # fp32 product: the
            # operand upcast into a tile kept between calls (a fresh one per call costs its pages)
            x = f"_upcast({x}, A{i}, W, {(i, len(args))!r})"
        args.append(x)
    return [f"    {outs[0] if len(outs) == 1 else target} = F{i}([{', '.join(args)}], A{i}, ev)"]


def _declared(compute, dtypes):
    """``compute`` returning its results in the declared dtypes (one check, no copy when equal):
    a tensor for one result (a compute may return a 1-tuple), a tuple for several."""
    if len(dtypes) == 1:
        dt = dtypes[0]

        def one(ins, attrs, ev):
            r = compute(ins, attrs, ev)
            if r.__class__ is tuple:
                r = r[0]
            return r if r.dtype is dt else r.to(dt)
        return one

    def several(ins, attrs, ev):
        return tuple(r if r.dtype is dt else r.to(dt) for r, dt in zip(compute(ins, attrs, ev), dtypes))
    return several


class LeafExecutable:
    """The executable form of one leaf (one variant), generated per number of batch dims.

    ``executable(P, ev, B, S)`` runs it: ``P`` the GM operands as ``[*B, *tile]`` tensors (None for
    outputs), ``ev`` evaluates symbolic attrs, ``B`` the batch shape, ``S`` {op index: the shape of a
    tile the op creates}. It returns {param index: result tensor ``[*B, *tile]``}.
    """

    def __init__(self, leaf, variant: str = ""):
        self.leaf = leaf
        self.variant = variant
        self.name = f"{leaf.name}{'_' + variant if variant else ''}"
        self.source, self._fns = self._build(1)
        self._by_nb = {1: self._fns}

    def _build(self, nb):
        source, consts = generate(self.leaf, self.variant, nb)
        namespace = dict(RUNTIME)
        namespace.update(consts)
        code = compile(source, f"<pypto leaf {self.name}{'' if nb == 1 else f' nb={nb}'}>", "exec")
        exec(code, namespace)  # noqa: S102 - our own generated code
        return source, namespace[self.name]

    def for_batch(self, nb: int):
        """The generated function for ``nb`` leading batch dims."""
        fn = self._by_nb.get(nb)
        if fn is None:
            fn = self._by_nb[nb] = self._build(nb)[1]
        return fn

    def __call__(self, P, ev, B, S=None):
        return self.for_batch(len(B))(P, ev, tuple(B), S or {})


def compile_leaf(leaf, variant: str = ""):
    """(source, executable) of the executable form (source shown for one batch dim)."""
    ex = LeafExecutable(leaf, variant)
    return ex.source, ex


def nbytes(shape, dtype) -> int:
    return math.prod(shape) * dtype.itemsize
