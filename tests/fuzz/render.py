"""Render a `Program` as one standalone Python script: the pypto kernel, the torch reference, and a
driver that calls the kernel three times (runtime sizes A, B, A) and compares with the reference.

The same text is what the fuzzer runs (imported from a temporary module file, so tracebacks and
kernel-line errors point into it) and what it saves for a failure: paste it, run it, read
expected-vs-got.
"""

from __future__ import annotations

from .program import PYPTO_DTYPE, TORCH_DTYPE, Branch, Program, spec

IND = "    "


def render(prog: Program) -> str:
    """The whole standalone script for ``prog``."""
    metas = prog.metas()
    parts = [_header(prog), _kernel(prog, metas), _reference(prog, metas), _driver(prog, metas)]
    return "\n\n".join(parts) + "\n"


def _header(prog: Program) -> str:
    lines = ['"""A pypto-lab differential fuzzer case (tests/fuzz): run it with python."""',
             "import torch", "", "import pypto", ""]
    for a, d in enumerate(prog.dims):
        if d.kind == "named":
            lines.append(f'N{a} = pypto.frontend.dynamic("N{a}")')
    return "\n".join(lines)


# ---- tensor dims: (annotation text, size expression over the call's sizes `s`) per axis --------

def _axis(prog: Program, a: int) -> tuple[str, str]:
    d = prog.dims[a]
    return ({"dyn": "pypto.DYNAMIC", "named": f"N{a}", "static": "pypto.STATIC",
             "int": str(d.sizes[0])}[d.kind], f"s[{a}]")


def _masked(prog: Program, mask: frozenset) -> list[tuple[str, str]]:
    return [("1", "1") if a in mask else _axis(prog, a) for a in range(prog.rank)]


def _n_axis(prog: Program) -> tuple[str, str]:
    n = prog.epilogue.n
    return ({"dyn": "pypto.DYNAMIC", "static": "pypto.STATIC", "int": str(n.sizes[0])}[n.kind],
            f"s[{prog.rank}]")


def input_dims(prog: Program) -> list[list[tuple[str, str]]]:
    """Per kernel input (x0.., then the matmul weight w0): its axes."""
    dims = [_masked(prog, m) for m in prog.input_masks]
    if prog.shift is not None:
        i, rows = prog.shift
        dims[i][0] = ("pypto.DYNAMIC", f"s[0] + {rows}")  # its own size (not a shared named dim)
    ep = prog.epilogue
    if ep is not None and ep.op == "matmul":
        k, n = _axis(prog, prog.rank - 1), _n_axis(prog)
        dims.append(_masked(prog, frozenset())[:-2] + ([n, k] if ep.b_trans else [k, n]))
    return dims


def output_dims(prog: Program, metas) -> list[list[tuple[str, str]]]:
    """Per output: its axes."""
    dims = []
    ep = prog.epilogue
    for v in prog.outputs:
        if ep is None or v != prog.epilogue_value:
            dims.append(_masked(prog, metas[v][1]))
            continue
        base = _masked(prog, metas[ep.args[0]][1])
        if ep.op == "matmul":
            dims.append(base[:-1] + [_n_axis(prog)])
        elif ep.op == "transpose":
            a1, a2 = ep.axes
            base[a1], base[a2] = base[a2], base[a1]
            dims.append(base)
        elif ep.op == "reshape":  # the last two axes as one
            (ann1, e1), (ann2, e2) = base[-2:]
            fixed = not any(prog.dims[a].runtime for a in range(prog.rank - 2, prog.rank))
            size = prog.dims[-2].sizes[0] ** (e1 != "1") * prog.dims[-1].sizes[0] ** (e2 != "1")
            dims.append(base[:-2] + [(str(size) if fixed else "pypto.DYNAMIC", f"{e1} * {e2}")])
        else:  # concat
            a = ep.axes[0]
            ann, expr = base[a]
            if expr == "1":
                base[a] = ("2", "2")
            else:
                runtime = prog.dims[a].runtime
                base[a] = ("pypto.DYNAMIC" if runtime else str(2 * prog.dims[a].sizes[0]), f"2 * {expr}")
            dims.append(base)
    return dims


def carry_dims(prog: Program, metas) -> list[tuple[str, str]]:
    """The accumulator's axes: one tile on the looped axes, the first output's elsewhere."""
    dims = output_dims(prog, metas)[0]
    return [(str(t), str(t)) for t in prog.loop_tiles] + dims[len(prog.loop_tiles):]


def _annotation(prog: Program, dims: list[tuple[str, str]], dtype: str) -> str:
    anns = [ann for ann, _ in dims]
    e = prog.ellipsis_from
    if e is not None and all(x == "pypto.STATIC" or x.isdigit() for x in anns[e:]):
        anns = anns[:e] + ["..."]
    return f"pypto.Tensor([{', '.join(anns)}], {PYPTO_DTYPE[dtype]})"


def _shape_fn(dims: list[tuple[str, str]]) -> str:
    return f"lambda s: [{', '.join(expr for _, expr in dims)}]"


def _out_dtype(prog: Program, metas, v: int) -> str:
    ep = prog.epilogue
    if ep is not None and v == prog.epilogue_value:
        if ep.op == "matmul" and ep.out_dtype:
            return ep.out_dtype
        return metas[ep.args[0]][0]
    return metas[v][0]


def _names(prog: Program):
    ins = [f"x{i}" for i in range(prog.n_inputs)]
    if prog.epilogue is not None and prog.epilogue.op == "matmul":
        ins.append("w0")
    outs = [f"out{j}" for j in range(len(prog.outputs))]
    return ins, outs


def _loop_slices(prog: Program, mask: frozenset, kernel: bool, looped_upto: int | None = None,
                 shift: int = 0) -> list[str]:
    """Index text per axis of an operand inside the tiling loop (only axes < looped_upto slice);
    ``shift`` rows further on axis 0."""
    idx = []
    upto = len(prog.loop_tiles) if looped_upto is None else min(looped_upto, len(prog.loop_tiles))
    for a in range(prog.rank):
        if a < upto and a not in mask:
            t = prog.loop_tiles[a]
            extra = f" + {shift}" if a == 0 and shift else ""
            idx.append(f"b{a} * {t}{extra}:(b{a} + 1) * {t}{extra}")
        elif prog.window and prog.window[0] == a and a not in mask:
            idx.append(f"{prog.window[1]}:{prog.window[2]}")
        else:
            idx.append(":")
    return idx


def _view(prog: Program, name: str, mask: frozenset, kernel: bool, shift: int = 0) -> str:
    if prog.explicit_views and kernel:
        shape, offs, valid = [], [], []
        for a in range(prog.rank):
            full = "1" if a in mask else f"{name}.shape[{a}]"
            if a < len(prog.loop_tiles) and a not in mask:
                t = prog.loop_tiles[a]
                shape.append(str(t))
                offs.append(f"b{a} * {t}")
                valid.append(f"pypto.min({full} - b{a} * {t}, {t})")
            elif prog.window and prog.window[0] == a and a not in mask:
                _, start, stop = prog.window
                shape.append(str(stop - start))
                offs.append(str(start))
                valid.append(str(stop - start))
            else:
                shape.append(full)
                offs.append("0")
                valid.append(full)
        return (f"pypto.view({name}, [{', '.join(shape)}], [{', '.join(offs)}], "
                f"valid_shape=[{', '.join(valid)}])")
    return f"{name}[{', '.join(_loop_slices(prog, mask, kernel, shift=shift))}]"


def _epilogue_expr(prog: Program, metas, kernel: bool) -> str:
    ep = prog.epilogue
    args = [f"t{a}" for a in ep.args]
    if ep.op == "matmul":
        a, w = args[0], "tw"
        if kernel:
            extra = (f", {PYPTO_DTYPE[ep.out_dtype]}" if ep.out_dtype else "") + (", b_trans=True" if ep.b_trans else "")
            return f"pypto.matmul({a}, {w}{extra})"
        wt = f"_up({w}).transpose(-2, -1)" if ep.b_trans else f"_up({w})"
        return f"_round(torch.matmul(_up({a}), {wt}), {TORCH_DTYPE[_out_dtype(prog, metas, prog.epilogue_value)]})"
    if ep.op == "transpose":
        a1, a2 = ep.axes
        return f"pypto.transpose({args[0]}, {a1}, {a2})" if kernel else f"{args[0]}.transpose({a1}, {a2})"
    if ep.op == "reshape":
        t, r = args[0], prog.rank
        if kernel:
            shape = [f"{t}.shape[{a}]" for a in range(r - 2)] + [f"{t}.shape[{r - 2}] * {t}.shape[{r - 1}]"]
            return f"pypto.reshape({t}, [{', '.join(shape)}])"
        return f"{t}.reshape(*{t}.shape[:-2], {t}.shape[-2] * {t}.shape[-1])"  # no -1: an empty dim
    return (f"pypto.concat([{', '.join(args)}], {ep.axes[0]})" if kernel
            else f"torch.cat([{', '.join(args)}], {ep.axes[0]})")


def _step_expr(step, metas, k: int, kernel: bool) -> str:
    names = [f"t{i}" for i in step.args]
    if not kernel:  # half operands computed in fp32, as pypto documents
        names = [f"_up({n})" for n in names]
    fmt = {c: n for c, n in zip("abcd", names)}
    p = step.param
    if step.op == "cast":
        p = PYPTO_DTYPE[p] if kernel else TORCH_DTYPE[p]
    if step.op in ("mul_s", "add_s", "rsub_s"):
        p = repr(p)
    o = spec(step.op)
    expr = (o.kernel if kernel else o.torch).format(p=p, dt=TORCH_DTYPE[metas[k][0]], **fmt)
    if not kernel:
        expr = f"_round({expr}, {TORCH_DTYPE[metas[k][0]]})"
    return expr


def _cond(cond: tuple) -> str:
    if cond[0] == "iter":
        return f"b0 < {cond[1]}"
    if cond[0] == "parity":
        return "b0 % 2 == 0"
    return f"x0.shape[0] > {cond[1]}"


def _body(prog: Program, metas, kernel: bool, depth: int) -> list[str]:
    pad = IND * depth
    ins, outs = _names(prog)
    loop = bool(prog.loop_tiles)
    lines = []
    for i, name in enumerate(ins[:prog.n_inputs]):
        rows = prog.shift[1] if prog.shift is not None and prog.shift[0] == i else 0
        src = _view(prog, name, prog.input_masks[i], kernel, rows) if loop else name
        lines.append(f"{pad}t{i} = {src}")
    for s, step in enumerate(prog.steps):
        k = prog.n_inputs + s
        if kernel and prog.retile is not None and prog.retile[0] == s:
            lines.append(f"{pad}pypto.set_vec_tile_shapes({', '.join(map(str, prog.retile[1]))})")
        if step.op == "if":
            br: Branch = step.param
            lines.append(f"{pad}if {_cond(br.cond)}:")
            for side, op in enumerate((br.then_op, br.else_op)):
                if side:
                    lines.append(f"{pad}else:")
                arm = type(step)(op, step.args, _scalar_for(op, metas[step.args[0]][0]))
                lines.append(f"{pad}{IND}t{k} = {_step_expr(arm, metas, k, kernel)}")
        else:
            lines.append(f"{pad}t{k} = {_step_expr(step, metas, k, kernel)}")
    ep = prog.epilogue
    if ep is not None:
        if ep.op == "matmul":
            w = f"w0[{', '.join(_loop_slices(prog, frozenset(), kernel, prog.rank - 2))}]" if loop else "w0"
            lines.append(f"{pad}tw = {w}")
        lines.append(f"{pad}t{prog.epilogue_value} = {_epilogue_expr(prog, metas, kernel)}")
    if loop:
        for j, v in enumerate(prog.outputs):
            # a reshaped result has one axis less (its last two merged, never looped ones)
            rank = prog.rank - (ep is not None and ep.op == "reshape" and v == prog.epilogue_value)
            if prog.explicit_views and kernel:
                mask = metas[v][1] if v < len(metas) else frozenset()
                offs = [f"b{a} * {prog.loop_tiles[a]}" if a < len(prog.loop_tiles) else
                        str(prog.window[1]) if prog.window and prog.window[0] == a and a not in mask else "0"
                        for a in range(prog.rank)]
                lines.append(f"{pad}pypto.assemble(t{v}, [{', '.join(offs[:rank])}], {outs[j]})")
            else:
                idx = _loop_slices(prog, metas[v][1] if v < len(metas) else frozenset(), kernel)
                lines.append(f"{pad}{outs[j]}[{', '.join(idx[:rank])}] = t{v}")
        if prog.carry:  # a loop-carried dependency through GM: every iteration reads and writes acc
            v = prog.outputs[0]
            if kernel:
                idx = ", ".join([f"0:{t}" for t in prog.loop_tiles] + [":"] * (prog.rank - len(prog.loop_tiles)))
                lines.append(f"{pad}acc[{idx}] = t{v} + acc[{idx}]")
            else:
                lines.append(f"{pad}tile = tuple(slice(0, n) for n in t{v}.shape)")
                lines.append(f"{pad}acc[tile] = _round(_up(t{v}) + _up(acc[tile]), acc.dtype)")
    return lines


def _scalar_for(op: str, dtype: str):
    """The constant of a scalar op used in a branch (fixed: branches carry op names only)."""
    if op in ("mul_s", "add_s", "rsub_s"):
        return 0.75 if dtype in ("fp32", "fp16", "bf16") else 2
    return None


def _loop_headers(prog: Program, kernel: bool) -> list[str]:
    lines = []
    for a, t in enumerate(prog.loop_tiles):
        named = ""
        if prog.loop_name is not None:  # user text as names: the loop's and its index's (one per level)
            named = f", name={prog.loop_name!r}, idx_name={(prog.loop_name + '#' * a)!r}" if prog.loop_name or a == 0 \
                else f", name={prog.loop_name!r}"
        # upstream's true division of a size (exact multiples only), else ceildiv (tails)
        trips = f"x0.shape[{a}] / {t}" if prog.true_div and a == 0 else f"pypto.ceildiv(x0.shape[{a}], {t})"
        count = f"pypto.loop({trips}{named})" if kernel else f"range(-(-x0.shape[{a}] // {t}))"
        lines.append(f"{IND * (a + 1)}for b{a} in {count}:")
    return lines


def _kernel(prog: Program, metas) -> str:
    ins, outs = _names(prog)
    dims = input_dims(prog)
    for i, a in prog.dynamic_in:
        if dims[i][a][1] != "1":
            dims[i][a] = ("pypto.DYNAMIC", dims[i][a][1])
    params = [f"{n}: {_annotation(prog, d, prog.dtype)}" for n, d in zip(ins, dims)]
    if prog.loop_tiles:
        params += [f"{n}: {_annotation(prog, d, _out_dtype(prog, metas, v))}"
                   for n, v, d in zip(outs, prog.outputs, output_dims(prog, metas))]
    if prog.carry:
        params.append(f"acc: {_annotation(prog, carry_dims(prog, metas), _out_dtype(prog, metas, prog.outputs[0]))}")
    lines = ["@pypto.jit", f"def kernel({', '.join(params)}):"]
    if prog.vec_tile is not None:
        lines.append(f"{IND}pypto.set_vec_tile_shapes({', '.join(map(str, prog.vec_tile))})")
    if prog.epilogue is not None and prog.epilogue.cube_tile is not None:
        lines.append(f"{IND}pypto.set_cube_tile_shapes({', '.join(map(str, prog.epilogue.cube_tile))})")
    lines += _loop_headers(prog, True)
    lines += _body(prog, metas, True, len(prog.loop_tiles) + 1)
    if not prog.loop_tiles:
        lines.append(f"{IND}return {', '.join(f't{v}' for v in prog.outputs)}")
    return "\n".join(lines)


def _reference(prog: Program, metas) -> str:
    ins, outs = _names(prog)
    lines = ["_MAGNITUDE = [1.0]  # the largest finite intermediate: half-precision error scales with it",
             "_UNROUNDED = [False]  # keep fp16/bf16 intermediates in fp32 (to measure rounding sensitivity)",
             "", "",
             "def _up(t):",
             f"{IND}return t.float() if t.dtype in (torch.float16, torch.bfloat16) else t",
             "", "",
             "def _round(t, dtype):",
             f"{IND}if _UNROUNDED[0] and dtype in (torch.float16, torch.bfloat16):",
             f"{IND}{IND}return t.float()",
             f"{IND}finite = t[torch.isfinite(t)] if t.dtype.is_floating_point else t",
             f"{IND}if finite.numel():",
             f"{IND}{IND}_MAGNITUDE[0] = max(_MAGNITUDE[0], float(finite.abs().max()))",
             f"{IND}return t.to(dtype)",
             "", "",
             f"def reference({', '.join(ins)}):",
             f'{IND}"""The kernel in torch: fp16/bf16 ops computed in fp32, rounded per op."""']
    if prog.loop_tiles:
        n_size = ""
        if prog.epilogue is not None and prog.epilogue.op == "matmul":
            n_size = f" + [w0.shape[{-2 if prog.epilogue.b_trans else -1}]]"
        lines.append(f"{IND}s = list(x0.shape){n_size}")
        for n, v, d in zip(outs, prog.outputs, output_dims(prog, metas)):
            dt = _out_dtype(prog, metas, v)
            fill = 'float("nan")' if dt in ("fp32", "fp16", "bf16") else "-7777"  # as the driver's unwritten outputs
            lines.append(f"{IND}{n} = torch.full(({_shape_fn(d)})(s), {fill}, dtype={TORCH_DTYPE[dt]})")
        if prog.carry:
            dt = TORCH_DTYPE[_out_dtype(prog, metas, prog.outputs[0])]
            lines.append(f"{IND}acc = torch.zeros(({_shape_fn(carry_dims(prog, metas))})(s), dtype={dt})")
    lines += _loop_headers(prog, False)
    lines += _body(prog, metas, False, len(prog.loop_tiles) + 1)
    if prog.loop_tiles:
        lines.append(f"{IND}return ({', '.join(outs + (['acc'] if prog.carry else []))},)")
    else:
        lines.append(f"{IND}return ({', '.join(f't{v}' for v in prog.outputs)},)")
    return "\n".join(lines)


_DRIVER = '''\
SIZES = {sizes}  # per call
INPUT_SHAPES = {in_shapes}  # per input: its shape from the call's sizes
OUTPUTS = {outputs}  # per output: (dtype, shape from the call's sizes)
STRIDED = {strided}  # pass non-contiguous tensors (same values, last two dims' strides swapped)
CARRY = {carry}  # the loop's accumulator, zeros at the call: (dtype, shape) or None
SHORT = {short}  # an input read rows further, passed one row short: refused before the run (or None)
# (input, axis): at an extra call that input is one longer there than the input a binary op
# combines it with: torch refuses the shapes, pypto must refuse the call before writing (or None)
MISMATCH = {mismatch}
ALIAS = {alias}  # an input of out0's shape and dtype, also passed as out0 at an extra call (or None)
EMPTY = {empty}  # an extra call with the runtime axis 0 of size 0 (no value reduced over it)
# the loop over axis 0 counts x0.shape[0] / tile: an extra call with axis 0 one longer (no
# multiple of the tile) must be refused before writing (or False)
INDIVISIBLE = {indivisible}
# every tensor is passed as base[1::STEP] along axis 0 of a larger tensor holding the fill value
# in its other rows, which the call must leave as they are (or None)
STEP = {step}
DTYPE = {dtype}
SEED = {seed}
LOOP = {loop}
# (rtol, atol) per dtype. A float output is held to the tolerance of the coarsest float dtype
# the program computes in. pypto keeps a chain of bf16 (and fp16 add/sub/mul) ops in fp32 and
# rounds once where this reference rounds per op: so atol scales with the largest intermediate,
# and each element may also differ by twice the spread between this reference and the same
# computation without rounding (large where the program amplifies rounding, e.g. exp of a sum);
# an fp32 output by twice the spread between this reference and the same computation in fp64.
PRECISION = {precision}
TOLERANCE = {{torch.float32: (1e-4, 1e-5), torch.float16: (4e-3, 4e-3), torch.bfloat16: (3e-2, 3e-2)}}
# fp32: pypto sums tile by tile, torch in its own order; the two may differ by a few ulps (2**-23
# each) of the largest intermediate, which a following op such as sin passes on unreduced
FP32_ORDER_ULPS = 8 * 2.0 ** -23


def _fill(dtype):
    return float("nan") if dtype.is_floating_point else -7777  # unwritten elements differ


def _layout(t):
    if STEP is not None and t.dim() >= 1:
        base = torch.full((t.shape[0] * STEP + 1, *t.shape[1:]), _fill(t.dtype), dtype=t.dtype)
        view = base[1::STEP]
        view.copy_(t)
        return view
    return t.transpose(-1, -2).contiguous().transpose(-1, -2) if STRIDED and t.dim() >= 2 else t


def _gaps_written(t):
    """Whether a call wrote a row of a stepped argument's base that is not one of its rows."""
    base = t._base if STEP is not None else None
    if base is None or base.dim() != t.dim():
        return False
    gap = torch.ones(base.shape[0], dtype=torch.bool)
    gap[1::STEP] = False
    rows = base[gap]
    return not bool(torch.isnan(rows).all() if rows.dtype.is_floating_point else (rows == -7777).all())


def make_inputs(call, short=None, grow=None, sizes=None):
    g = torch.Generator().manual_seed(SEED + call)
    ins = []
    for k, shape_of in enumerate(INPUT_SHAPES):
        shape = list(shape_of(SIZES[call] if sizes is None else sizes))
        if k == short:
            shape = [shape[0] - 1] + list(shape[1:])
        if grow is not None and k == grow[0]:
            shape[grow[1]] += 1
        if DTYPE.is_floating_point:
            ins.append((torch.rand(shape, generator=g) * 4 - 2).to(DTYPE))
        else:
            ins.append(torch.randint(-4, 5, shape, generator=g, dtype=torch.int64).to(DTYPE))
    return [_layout(t) for t in ins]


def make_outputs(call, sizes=None):
    outs = []
    for dtype, shape_of in OUTPUTS:
        shape = shape_of(SIZES[call] if sizes is None else sizes)
        fill = float("nan") if dtype.is_floating_point else -7777  # unwritten elements differ
        outs.append(torch.full(shape, fill, dtype=dtype))
    if CARRY:
        outs.append(torch.zeros(CARRY[1](SIZES[call] if sizes is None else sizes), dtype=CARRY[0]))
    return [_layout(t) for t in outs]


def rounding_spread(ins, want):
    """Per output: |reference - reference without per-op rounding|; for an fp32 program, the
    reference computed in fp64 (another summation order may differ by that much where the program
    amplifies rounding, e.g. the sine of a long sum)."""
    if PRECISION == torch.float32:
        zeros = tuple(torch.zeros(w.shape, dtype=torch.float64) for w in want)
        try:
            alt = reference(*[t.double() if t.dtype == torch.float32 else t.clone() for t in ins])
        except (RuntimeError, TypeError):  # an op of the reference with no fp64 form: no allowance
            return zeros
        return tuple((a.double() - w.double()).abs().nan_to_num(0.0) if a.shape == w.shape else z
                     for a, w, z in zip(alt, want, zeros))
    _UNROUNDED[0] = True
    try:
        alt = reference(*[t.clone() for t in ins])
    finally:
        _UNROUNDED[0] = False
    return tuple((a.double() - w.double()).abs().nan_to_num(0.0) for a, w in zip(alt, want))


def run(call, ins=None, sizes=None, alias=None):
    """(got, want, spread) of one call: tuples of tensors (see `rounding_spread`); ``alias``: an
    input also passed as out0 (the call must read it as it was when the call started)."""
    ins = make_inputs(call, sizes=sizes) if ins is None else ins
    _MAGNITUDE[0] = 1.0
    want = reference(*[t.clone() for t in ins])
    magnitude = _MAGNITUDE[0]  # of the rounded reference only: the spread's fp64/unrounded run must not raise it
    spread_of = rounding_spread(ins, want)
    _MAGNITUDE[0] = magnitude
    if LOOP:
        outs = make_outputs(call, sizes=sizes)
        if alias is not None:
            outs[0] = ins[alias]
        kernel(*ins, *outs)
        return tuple(outs), want, spread_of
    got = kernel(*ins)
    return (tuple(got) if isinstance(got, (tuple, list)) else (got,)), want, spread_of


def compare(got, want, spread):
    """A list of mismatch descriptions (empty when they match)."""
    bad = []
    for j, (g, w, d) in enumerate(zip(got, want, spread)):
        if isinstance(g, torch.Tensor) and _gaps_written(g):
            bad.append(f"out{{j}}: a row of its base tensor between the stepped view's rows was written")
        if not isinstance(g, torch.Tensor) or g.dtype != w.dtype or g.shape != w.shape:
            bad.append(f"out{{j}}: got {{getattr(g, 'dtype', type(g))}} {{tuple(getattr(g, 'shape', ()))}}, "
                       f"expected {{w.dtype}} {{tuple(w.shape)}}")
            continue
        if not w.dtype.is_floating_point:
            wrong = g != w
        else:
            g64, w64 = g.double(), w.double()
            big = torch.finfo(w.dtype).max / 16
            checked = torch.isfinite(w64) & (w64.abs() < big)
            rtol, atol = TOLERANCE[PRECISION]
            scale = _MAGNITUDE[0] if PRECISION != torch.float32 else 1.0
            if bool(checked.any()):
                scale = max(scale, float(w64[checked].abs().max()))
            err = (g64 - w64).abs()
            if PRECISION == torch.float32:  # another summation order: a few ulps of the largest intermediate
                atol = max(atol, FP32_ORDER_ULPS * _MAGNITUDE[0] / scale)
            wrong = checked & ~(err <= atol * scale + rtol * w64.abs() + 2 * d)
        if bool(wrong.any()):
            where = [tuple(i) for i in wrong.nonzero().tolist()[:3]]
            pairs = ", ".join(f"{{i}}: got {{g[i].item()!r}} expected {{w[i].item()!r}}" for i in where)
            bad.append(f"out{{j}}: {{int(wrong.sum())}} of {{w.numel()}} elements differ ({{pairs}})")
    return bad


def _refused(ins, what, sizes=None):
    """[] when the call is refused with a PyptoError before it writes an output, else the problem."""
    outs = make_outputs(0, sizes=sizes) if LOOP else []
    try:
        kernel(*ins, *outs)
    except pypto.errors.PyptoError:
        pass
    else:
        return [f"{{what}} was accepted (torch refuses these shapes: a silent partial result)"]
    for t in outs[:len(OUTPUTS)]:
        if _gaps_written(t) or not bool(torch.isnan(t).all() if t.dtype.is_floating_point else (t == -7777).all()):
            return [f"the refused call ({{what}}) wrote an output"]
    return []


def extra_calls():
    """The calls after the three compared ones: a list of problems (empty when all is right)."""
    bad = []
    if SHORT is not None:  # torch refuses these shapes: pypto must refuse them before writing
        bad += _refused(make_inputs(0, short=SHORT), f"input x{{SHORT}} one row short")
    if MISMATCH is not None:
        bad += _refused(make_inputs(0, grow=MISMATCH), f"input x{{MISMATCH[0]}} one longer in dim {{MISMATCH[1]}}")
    if INDIVISIBLE:
        sizes = [SIZES[0][0] + 1] + list(SIZES[0][1:])
        bad += _refused(make_inputs(0, sizes=sizes), f"axis 0 of {{sizes[0]}} rows, no multiple of the loop's tile",
                        sizes=sizes)
    if ALIAS is not None:  # torch's out= semantics: the inputs as they were when the call started
        got, want, spread = run(0, ins=make_inputs(0), alias=ALIAS)
        bad += [f"x{{ALIAS}} also passed as out0: {{m}}" for m in compare(got, want, spread)]
    if EMPTY:
        sizes = [0] + list(SIZES[0][1:])
        try:
            reference(*make_inputs(0, sizes=sizes))
        except RuntimeError:  # torch refuses the empty dim (an amax over it): so must pypto
            bad += _refused(make_inputs(0, sizes=sizes), "axis 0 of size 0")
        else:
            got, want, spread = run(0, sizes=sizes)
            bad += [f"axis 0 of size 0: {{m}}" for m in compare(got, want, spread)]
    return bad


def main():
    for call in range(len(SIZES)):
        got, want, spread = run(call)
        bad = compare(got, want, spread)
        print(f"call {{call}} sizes {{SIZES[call]}}:", "; ".join(bad) if bad else "matches torch")
    info = kernel.cache_info()
    print(info)
    assert not bad and info.misses == 1
    bad = extra_calls()
    assert not bad, "; ".join(bad)


if __name__ == "__main__":
    main()'''


def _driver(prog: Program, metas) -> str:
    # the third call repeats the first sizes with new values: plans cached per size must not go stale
    sizes = [[d.sizes[c] for d in prog.dims] for c in (0, 1, 0)]
    if prog.epilogue is not None and prog.epilogue.op == "matmul":
        for c, size in enumerate(sizes):
            size.append(prog.epilogue.n.sizes[c % 2])
    ins = ", ".join(_shape_fn(d) for d in input_dims(prog))
    outs = ", ".join(f"({TORCH_DTYPE[_out_dtype(prog, metas, v)]}, {_shape_fn(d)})"
                     for v, d in zip(prog.outputs, output_dims(prog, metas)))
    carry = "None"
    if prog.carry:
        carry = f"({TORCH_DTYPE[_out_dtype(prog, metas, prog.outputs[0])]}, {_shape_fn(carry_dims(prog, metas))})"
    short = prog.shift[0] if prog.refuses_short() else None
    alias = prog.alias_input(metas, input_dims(prog), output_dims(prog, metas)) if prog.loop_tiles else None
    return _DRIVER.format(indivisible=prog.refuses_indivisible(), step=prog.step, strided=prog.strided, carry=carry, short=short, mismatch=prog.mismatch(),
                          alias=alias, empty=prog.empty_call(metas), sizes=sizes, in_shapes=f"[{ins}]", outputs=f"[{outs}]",
                          dtype=TORCH_DTYPE[prog.dtype], seed=prog.seed,
                          loop=bool(prog.loop_tiles), precision=TORCH_DTYPE[_precision(metas)])


def _precision(metas) -> str:
    dts = {d for d, _ in metas}
    return next((d for d in ("bf16", "fp16") if d in dts), "fp32")

