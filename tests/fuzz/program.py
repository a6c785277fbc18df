"""The fuzzer's program model: a random kernel as plain data, and the op catalogue it draws from.

A `Program` is the whole of one fuzzed kernel: its dtype, the dims of its tensors (how each is
annotated and the sizes of the two calls), its inputs, an optional tiling loop over the leading
dims, the vec tile shape, a chain of `Step`s over numbered values, and which values are written out.
`render.py` turns it into source text (the pypto kernel and the torch reference); `generate.py`
draws it with hypothesis.

Values are numbered: the inputs first, then one value per step. Every value is the program's full
shape except at its *reduced* axes (a keepdim reduction, or an input declared with size 1 there to
broadcast), where it has size 1; binary ops broadcast, so the result is reduced only where both
operands are.
"""

from __future__ import annotations

from dataclasses import dataclass

DTYPES = ("fp32", "fp16", "bf16", "int32", "int16")
FLOAT = ("fp32", "fp16", "bf16")
PYPTO_DTYPE = {"fp32": "pypto.DT_FP32", "fp16": "pypto.DT_FP16", "bf16": "pypto.DT_BF16",
               "int32": "pypto.DT_INT32", "int16": "pypto.DT_INT16", "bool": "pypto.DT_BOOL"}
TORCH_DTYPE = {"fp32": "torch.float32", "fp16": "torch.float16", "bf16": "torch.bfloat16",
               "int32": "torch.int32", "int16": "torch.int16", "bool": "torch.bool"}


@dataclass(frozen=True)
class Dim:
    """One axis: how it is annotated and its size at the first and the second call.

    kind: "dyn" (pypto.DYNAMIC), "named" (pypto.frontend.dynamic), "static" (pypto.STATIC) or
    "int" (a fixed size). Only runtime dims ("dyn", "named") change size between the calls, so
    the two calls share one compiled version.
    """
    kind: str
    sizes: tuple[int, int]

    @property
    def runtime(self) -> bool:
        return self.kind in ("dyn", "named")


@dataclass(frozen=True)
class Step:
    """One op of the chain: catalogue name, operand value numbers, and its parameter (an axis, a
    scalar, a dtype, a comparison or a branch spec, depending on the op)."""
    op: str
    args: tuple[int, ...]
    param: object = None


@dataclass(frozen=True)
class Branch:
    """A runtime ``if``: ``then_op`` or ``else_op`` (unary, shape-preserving) applied to a value.

    cond: ("iter", k) -> ``b0 < k`` on the first loop index (loop programs only);
          ("parity",) -> ``b0 % 2 == 0``; ("size", k) -> ``x0.shape[0] > k``.
    """
    cond: tuple
    then_op: str
    else_op: str


@dataclass(frozen=True)
class Epilogue:
    """A last op that changes the shape; its result is the first output.

    op "matmul": ``args[0] @ w0`` where the weight input ``w0`` has the batch dims of the program,
    then K (the program's last dim) and ``n`` (its own dim), swapped with ``b_trans``; ``axes``
    unused. op "transpose": swaps ``axes``. op "concat": joins ``args`` along ``axes[0]``.
    op "reshape": merges the last two axes into one (``pypto.reshape``; never a looped axis, so a
    tail tile keeps its meaning); the result has rank - 1.
    """
    op: str
    args: tuple[int, ...]
    axes: tuple[int, ...] = ()
    n: Dim | None = None
    b_trans: bool = False
    out_dtype: str | None = None
    cube_tile: tuple | None = None      # (m, k, n) lists for set_cube_tile_shapes


@dataclass(frozen=True)
class Program:
    dtype: str
    dims: tuple[Dim, ...]
    input_masks: tuple[frozenset, ...]      # per input: the axes it is declared with size 1
    steps: tuple[Step, ...]
    outputs: tuple[int, ...]                # value numbers written out
    loop_tiles: tuple[int, ...] = ()        # rows per iteration of a loop over axis 0, 1, ...
    vec_tile: tuple[int, ...] | None = None
    ellipsis_from: int | None = None        # annotate dims from here on as `...` (all static)
    explicit_views: bool = False            # pypto.view/pypto.assemble instead of slicing
    seed: int = 0                           # of the input values
    epilogue: Epilogue | None = None
    retile: tuple | None = None             # (step k, tile): set_vec_tile_shapes(*tile) before step k
    window: tuple[int, int, int] | None = None
    strided: bool = False  # the call passes inputs and outputs as non-contiguous tensors (rank >= 2)
    carry: bool = False   # a loop also adds its first output's tile into a one-tile accumulator `acc`
    # (input, axis) annotated DYNAMIC although the axis is STATIC/int elsewhere
    dynamic_in: tuple[tuple[int, int], ...] = ()  # (axis, start, stop): a loop reads and writes only there
    # (input, rows): that input has `rows` more rows on axis 0 and the loop reads it that much further
    # (x[b*t + rows:(b+1)*t + rows]); the driver also calls with it one row short, which is refused
    shift: tuple[int, int] | None = None
    # user text the kernel passes as names (issue 20: never code): pypto.loop(name=..., idx_name=...)
    loop_name: str | None = None
    # the loop over axis 0 counts `x0.shape[0] / t` (upstream's true division of a size: exact
    # multiples only); the driver also calls with a size that is no multiple, which is refused
    true_div: bool = False
    # every tensor argument is passed as a stepped view `base[1::step]` along axis 0 of a larger
    # tensor whose other rows hold the fill value (NaN / -7777): the rows between must stay so
    step: int | None = None

    def refuses_indivisible(self) -> bool:
        """Whether the driver's extra call with axis 0 one longer (no multiple of the tile) must be
        refused: a true-division loop over a runtime axis 0 with tiles of more than one row."""
        return self.true_div and self.dims[0].runtime and self.loop_tiles[0] > 1

    def refuses_short(self) -> bool:
        """Whether the shifted input one row short must be refused: a binary op combines its tile
        with another input's tile over the looped rows (torch refuses those shapes too; a runtime
        size of 1 never broadcasts in pypto)."""
        if self.shift is None:
            return False
        i = self.shift[0]
        looped = [j for j, m in enumerate(self.input_masks) if j != i and 0 not in m]
        return any(st.op in BINARY and i in st.args and any(j in st.args for j in looped) for st in self.steps)

    def mismatch(self):
        """(input, axis) for the call with disagreeing runtime sizes, or None: an input and another
        one, both full along a runtime axis, that a binary op combines; the first input grown by
        one there must be refused (torch refuses the shapes). Not on a looped axis: the kernel
        reads row tiles there, and rows past the loop's range are never read, as in torch with the
        same slices (sweep 2043 drew such calls); nor on a column window's axis, a fixed slice
        (sweeps 2051/2053 drew those). An input annotated DYNAMIC where the others have a static
        size counts too, unless that size is 1 (it broadcasts, in torch and here)."""
        shifted = self.shift[0] if self.shift is not None else None
        for a, d in enumerate(self.dims):
            if a < len(self.loop_tiles) or (self.window is not None and self.window[0] == a):
                continue  # a column window reads a fixed slice: a longer input there is torch's too
            for st in self.steps:
                if st.op not in BINARY:
                    continue
                full = [i for i in st.args if i < self.n_inputs and i != shifted and a not in self.input_masks[i]]
                for i in full:
                    if (d.runtime or ((i, a) in self.dynamic_in and d.sizes[0] != 1)) \
                            and any(j != i for j in full):
                        return (i, a)
        return None

    def alias_input(self, metas, in_dims, out_dims):
        """An input with out0's shape and dtype (not broadcast, not read shifted), or None; not with
        a column window (out0 is written only there, and its other elements would be the input's)."""
        if self.window is not None:
            return None
        shifted = self.shift[0] if self.shift is not None else None
        out_dtype = metas[self.outputs[0]][0] if self.epilogue is None or self.outputs[0] != self.epilogue_value \
            else None
        for i in range(self.n_inputs):
            if i != shifted and not self.input_masks[i] and out_dtype == self.dtype \
                    and [e for _, e in in_dims[i]] == [e for _, e in out_dims[0]]:
                return i
        return None

    def empty_call(self, metas) -> bool:
        """Whether an extra call may take runtime axis 0 of size 0: no value is reduced over it
        (a loop that runs no iteration writes no reduced row) and there is no accumulator."""
        if not self.dims or not self.dims[0].runtime or self.carry or self.window is not None:
            return False
        return not any(0 in m for m in [m for _, m in metas[self.n_inputs:]])

    @property
    def epilogue_value(self) -> int:
        """The value number of the epilogue's result."""
        return self.n_inputs + len(self.steps)

    @property
    def rank(self) -> int:
        return len(self.dims)

    @property
    def n_inputs(self) -> int:
        return len(self.input_masks)

    def metas(self) -> list[tuple[str, frozenset]]:
        """(dtype, reduced axes) of every value, inputs first."""
        metas = [(self.dtype, m) for m in self.input_masks]
        for s in self.steps:
            metas.append(result_meta(s, metas))
        return metas


# names with quotes, newlines, brackets, keywords, code and non-ASCII letters
HOSTILE_NAMES = ("a b", "x'y", 'q"\n', "P[0]", "class", "__import__('os').getcwd()", "é名", "env", "b0", "")

# ---- the op catalogue ---------------------------------------------------------------------------
# kernel: a format string over the operands a, b, c, d and p (the parameter);
# torch: the same over torch values (half operands upcast to fp32 by the reference, see render);
# {dt} is the op's dtype: a kernel op inside a composite (the `+ 1.0` before log, rsqrt, a divisor)
# is rounded to it as every kernel op is (a half `1 + 1e-4` is 1.0 before log reads it)

@dataclass(frozen=True)
class OpSpec:
    kernel: str
    torch: str
    arity: int
    dtypes: tuple[str, ...]     # operand dtypes the op accepts


UNARY = {
    "exp": OpSpec("pypto.exp({a})", "torch.exp({a})", 1, FLOAT),
    "tanh": OpSpec("pypto.tanh({a})", "torch.tanh({a})", 1, FLOAT),
    "sigmoid": OpSpec("pypto.sigmoid({a})", "torch.sigmoid({a})", 1, FLOAT),
    "sin": OpSpec("pypto.sin({a})", "torch.sin({a})", 1, ("fp32", "fp16")),  # no bf16 on A2/A3
    "relu": OpSpec("pypto.relu({a})", "torch.relu({a})", 1, DTYPES),
    "abs": OpSpec("pypto.abs({a})", "torch.abs({a})", 1, DTYPES),
    "neg": OpSpec("pypto.neg({a})", "torch.neg({a})", 1, DTYPES),
    "sqrt_abs": OpSpec("pypto.sqrt(pypto.abs({a}))", "torch.sqrt(torch.abs({a}))", 1, FLOAT),
    "log1_abs": OpSpec("pypto.log(pypto.abs({a}) + 1.0)", "torch.log(_up(_round(torch.abs({a}) + 1.0, {dt})))", 1, FLOAT),
    "rsqrt1_abs": OpSpec("pypto.rsqrt(pypto.abs({a}) + 1.0)", "torch.rsqrt(_up(_round(torch.abs({a}) + 1.0, {dt})))", 1,
                          FLOAT),
    "lrelu": OpSpec("pypto.lrelu({a}, 0.125)", "torch.nn.functional.leaky_relu({a}, 0.125)", 1, FLOAT),
    "floor": OpSpec("pypto.floor({a})", "torch.floor({a})", 1, FLOAT),
    "clip": OpSpec("pypto.clip({a}, -1, 2)", "torch.clamp({a}, -1, 2)", 1, DTYPES),
    "clone": OpSpec("pypto.clone({a})", "{a}.clone()", 1, DTYPES),
    "mul_s": OpSpec("{a} * {p}", "{a} * {p}", 1, DTYPES),
    "add_s": OpSpec("{a} + {p}", "{a} + {p}", 1, DTYPES),
    "rsub_s": OpSpec("{p} - {a}", "{p} - {a}", 1, DTYPES),
}
BINARY = {
    "add": OpSpec("{a} + {b}", "{a} + {b}", 2, DTYPES),
    "sub": OpSpec("{a} - {b}", "{a} - {b}", 2, DTYPES),
    "mul": OpSpec("{a} * {b}", "{a} * {b}", 2, DTYPES),
    "maximum": OpSpec("pypto.maximum({a}, {b})", "torch.maximum({a}, {b})", 2, DTYPES),
    "minimum": OpSpec("pypto.minimum({a}, {b})", "torch.minimum({a}, {b})", 2, DTYPES),
    "div_safe": OpSpec("{a} / (pypto.abs({b}) + 1.0)", "{a} / _up(_round(torch.abs({b}) + 1.0, {dt}))", 2, FLOAT),
}
COMPARE = ("<", "<=", ">", ">=", "==", "!=")
REDUCE = {
    "sum": OpSpec("pypto.sum({a}, {p}, keepdim=True)", "torch.sum({a}, {p}, keepdim=True)", 1, DTYPES),
    "amax": OpSpec("pypto.amax({a}, {p}, keepdim=True)", "torch.amax({a}, {p}, keepdim=True)", 1, DTYPES),
    "amin": OpSpec("pypto.amin({a}, {p}, keepdim=True)", "torch.amin({a}, {p}, keepdim=True)", 1, DTYPES),
}
# over an axis of the (viewed) value, result the same shape: param is the axis
SCAN = {"cumsum": OpSpec("pypto.cumsum({a}, {p})", "torch.cumsum({a}, {p})", 1, FLOAT)}
# over the last two axes (rank >= 2): param is the diagonal
TRIANGLE = {"tril": OpSpec("pypto.tril({a}, {p})", "torch.tril({a}, {p})", 1, DTYPES),
            "triu": OpSpec("pypto.triu({a}, {p})", "torch.triu({a}, {p})", 1, DTYPES)}
SOFTMAX = OpSpec("pypto.softmax({a}, {p})", "torch.softmax({a}, {p})", 1, FLOAT)
# where(a <cmp> b, c, d): param is the comparison
WHERE = OpSpec("pypto.where({a} {p} {b}, {c}, {d})", "torch.where({a} {p} {b}, {c}, {d})", 4, DTYPES)
# cast: param is the target dtype
CAST = OpSpec("pypto.cast({a}, {p})", "{a}.to({p})", 1, DTYPES)
CASTS = {"fp32": ("fp16", "bf16"), "fp16": ("fp32", "bf16"), "bf16": ("fp32", "fp16"), "int32": ("fp32",), "int16": ("fp32",)}
# scalar constants per dtype class
SCALARS = {"f": (0.5, 1.25, -2.0, 3.0), "i": (2, -3, 1)}


def spec(op: str) -> OpSpec:
    if op in UNARY:
        return UNARY[op]
    if op in BINARY:
        return BINARY[op]
    if op in REDUCE:
        return REDUCE[op]
    if op in SCAN:
        return SCAN[op]
    if op in TRIANGLE:
        return TRIANGLE[op]
    return {"softmax": SOFTMAX, "where": WHERE, "cast": CAST}[op]


def result_meta(step: Step, metas: list) -> tuple[str, frozenset]:
    """(dtype, reduced axes) of a step's result, from its operands' metas."""
    ops = [metas[i] for i in step.args]
    dtype = ops[0][0]
    mask = frozenset.intersection(*[m for _, m in ops])
    if step.op in REDUCE:
        mask = mask | {step.param}
    elif step.op == "cast":
        dtype = step.param
    elif step.op == "where":
        dtype = ops[2][0]
        mask = frozenset.intersection(*[m for _, m in ops])
    return dtype, mask
