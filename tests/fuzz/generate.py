"""Hypothesis strategies drawing valid random `Program`s.

Valid means torch accepts the same computation and every operand agrees in size (the run-time
size checks of DYNAMIC dims are another fix; see README.md here). Choices are ordered simplest
first, so hypothesis shrinks a failure toward fp32, low rank, few inputs and short chains.
"""

from __future__ import annotations

import math

from hypothesis import strategies as st

from .program import (BINARY, CASTS, COMPARE, FLOAT, HOSTILE_NAMES, REDUCE, SCALARS, SCAN, TRIANGLE, UNARY, Branch, Dim, Epilogue,
                      Program, Step, result_meta)

DTYPE_ORDER = ("fp32", "fp16", "bf16", "int32", "int16")
KINDS = ("int", "dyn", "static", "named")
# sizes by rank: primes and tails mixed with powers of two, small enough to run fast
SIZES = {1: (1, 2, 3, 5, 7, 8, 13, 16, 31, 33, 64, 97, 128, 257, 1000),
         2: (1, 2, 3, 5, 7, 8, 13, 16, 17, 31, 33, 64, 97),
         3: (1, 2, 3, 5, 7, 8, 11, 16, 17, 32),
         4: (1, 2, 3, 5, 7, 8, 11, 16)}
LOOP_TILES = (1, 2, 3, 4, 5, 7, 8, 16, 32, 64, 300)     # up to larger than any loop dim
VEC_TILES = (1, 2, 3, 4, 5, 8, 16, 32, 64, 128, 256)
MAX_ITERATIONS = 256
UB_ELEMENTS = 8192   # keep most drawn vec tiles inside UB; a few over it test the rejection


@st.composite
def dims(draw, rank: int) -> tuple[Dim, ...]:
    out = []
    for _ in range(rank):
        kind = draw(st.sampled_from(KINDS))
        first = draw(st.sampled_from(SIZES[rank]))
        second = draw(st.sampled_from([s for s in SIZES[rank] if s != first])) if kind in ("dyn", "named") else first
        out.append(Dim(kind, (first, second)))
    return tuple(out)


def _ops_for(dtype: str, table: dict) -> list[str]:
    return [name for name, o in table.items() if dtype in o.dtypes]


@st.composite
def steps(draw, dtype: str, rank: int, n_loop: int, masks: tuple, n_steps: int) -> tuple:
    metas = [(dtype, m) for m in masks]
    out: list[Step] = []
    # reductions and scans over a looped axis work within the tile's view, as the reference does
    reducible = list(range(rank))
    used_if = False
    for _ in range(n_steps):
        last = len(metas) - 1
        # mostly a chain on the latest value; sometimes an earlier one
        a = draw(st.integers(0, last)) if draw(st.integers(0, 3)) == 3 else last
        dt = metas[a][0]
        same = [i for i, (d, _) in enumerate(metas) if d == dt]
        kinds = ["unary", "binary", "scalar", "where", "cast"]
        if reducible:
            kinds.append("reduce")
            if dt in FLOAT:
                kinds += ["softmax", "scan"]
        if rank >= 2:
            kinds.append("triangle")
        if not used_if and (n_loop or rank):
            kinds.append("if")
        kind = draw(st.sampled_from(kinds))
        if kind == "unary":
            # clone of a half value too: AutoCast (as upstream's) lets an fp32 chain read the
            # unrounded value while clone reads the rounded copy (`x >= clone(x)` can be false);
            # the oracle tells that rule from a wrong number (oracle._matches_rounding_every_op)
            step = Step(draw(st.sampled_from([o for o in _ops_for(dt, UNARY) if not o.endswith("_s")])), (a,))
        elif kind == "scalar":
            op = draw(st.sampled_from(["mul_s", "add_s", "rsub_s"]))
            step = Step(op, (a,), draw(st.sampled_from(SCALARS["f" if dt in FLOAT else "i"])))
        elif kind == "binary":
            step = Step(draw(st.sampled_from(_ops_for(dt, BINARY))), (a, draw(st.sampled_from(same))))
        elif kind == "where":
            c = draw(st.integers(0, last))
            c_same = [i for i, (d, _) in enumerate(metas) if d == metas[c][0]]
            step = Step("where", (a, draw(st.sampled_from(same)), c, draw(st.sampled_from(c_same))),
                        draw(st.sampled_from(COMPARE)))
        elif kind == "cast":
            step = Step("cast", (a,), draw(st.sampled_from(CASTS[dt])))
        elif kind == "reduce":
            step = Step(draw(st.sampled_from(_ops_for(dt, REDUCE))), (a,), draw(st.sampled_from(reducible)))
        elif kind == "scan":
            step = Step(draw(st.sampled_from(_ops_for(dt, SCAN))), (a,), draw(st.sampled_from(reducible)))
        elif kind == "triangle":
            step = Step(draw(st.sampled_from(_ops_for(dt, TRIANGLE))), (a,), draw(st.sampled_from((0, -1, 1, 2))))
        elif kind == "softmax":
            step = Step("softmax", (a,), draw(st.sampled_from(reducible)))
        else:
            used_if = True
            if n_loop:
                cond = draw(st.sampled_from([("iter", 1), ("parity",), ("size", 5), ("iter", 3)]))
            else:
                cond = ("size", draw(st.sampled_from([2, 6, 20])))
            unary = _ops_for(dt, UNARY)
            step = Step("if", (a,), Branch(cond, draw(st.sampled_from(unary)), draw(st.sampled_from(unary))))
        out.append(step)
        metas.append(result_meta(step, metas))
    return tuple(out)


@st.composite
def programs(draw, max_steps: int = 8, dtypes: tuple[str, ...] = DTYPE_ORDER) -> Program:
    """A random valid kernel program over one of ``dtypes`` (see the module docstring).
    It includes vec tiles in rank-0 programs, and an axis annotated STATIC/int in one tensor and
    DYNAMIC in another (checked against each other before the run).
    """
    dtype = draw(st.sampled_from(dtypes))
    rank = draw(st.integers(0, 4))
    ds = draw(dims(rank))
    n_loop = draw(st.integers(0, min(2, rank)))
    loop_tiles = tuple(draw(st.sampled_from(LOOP_TILES)) for _ in range(n_loop))
    # bound the iterations (each is simulated): widen the tiles of a long loop nest
    while math.prod(-(-max(d.sizes) // t) for d, t in zip(ds, loop_tiles)) > MAX_ITERATIONS:
        loop_tiles = tuple(t * 4 for t in loop_tiles)
    # upstream's `x.shape[0] / t` loop count: axis 0's sizes become multiples of the tile (a
    # runtime axis: a static size is a Python int, and int / int a float no loop takes)
    true_div = bool(n_loop) and ds[0].runtime and draw(st.integers(0, 4)) == 0
    if true_div:
        t = loop_tiles[0]
        first, second = (-(-n // t) * t for n in ds[0].sizes)
        if ds[0].runtime and second == first:
            second = first + t
        ds = (Dim(ds[0].kind, (first, second)),) + ds[1:]
    n_inputs = draw(st.integers(1, 4))
    masks = [frozenset()]
    for _ in range(n_inputs - 1):
        if rank and draw(st.integers(0, 3)) == 0:
            masks.append(frozenset(draw(st.sets(st.integers(0, rank - 1), min_size=1, max_size=rank))))
        else:
            masks.append(frozenset())
    masks = tuple(masks)
    chain = list(draw(steps(dtype, rank, n_loop, masks, draw(st.integers(2, max_steps)))))

    def metas():
        ms = [(dtype, m) for m in masks]
        for s in chain:
            ms.append(result_meta(s, ms))
        return ms

    looped = frozenset(range(n_loop))
    ms = metas()
    if ms[-1][1] & looped:  # broadcast it back over the looped axes with a full value
        dt = ms[-1][0]
        full = [i for i, (d, m) in enumerate(ms) if d == dt and not m & looped]
        if not full:
            chain.append(Step("cast", (0,), dt))
            ms = metas()
            full = [len(ms) - 1]
        chain.append(Step("add", (len(ms) - 1, full[-1])))
        ms = metas()
    epilogue = draw(epilogues(rank, ds, n_loop, ms)) if draw(st.integers(0, 2)) == 0 else None
    outputs = [len(ms) if epilogue else len(ms) - 1]
    candidates = [i for i in range(n_inputs, len(ms) - (0 if epilogue else 1)) if not ms[i][1] & looped]
    if candidates and draw(st.booleans()):
        outputs.append(draw(st.sampled_from(candidates)))
    vec_tile = None
    if not rank and draw(st.booleans()):
        vec_tile = tuple(draw(st.sampled_from(VEC_TILES)) for _ in range(draw(st.integers(1, 2))))
    if rank and draw(st.integers(0, 4)):
        vec_tile = tuple(draw(st.sampled_from(VEC_TILES)) for _ in range(rank + draw(st.integers(0, 1))))
        if math.prod(vec_tile[:rank]) > UB_ELEMENTS and draw(st.integers(0, 7)):
            vec_tile = tuple(min(t, 8) for t in vec_tile)
    static_tail = rank
    while static_tail and not ds[static_tail - 1].runtime:
        static_tail -= 1
    ellipsis = static_tail if static_tail < rank and draw(st.integers(0, 3)) == 0 else None
    retile = None
    if rank and draw(st.integers(0, 3)) == 0:  # a second tile shape for the later ops
        retile = (draw(st.integers(0, len(chain) - 1)), tuple(draw(st.sampled_from(VEC_TILES[:8])) for _ in range(rank)))
    window = None
    if n_loop and epilogue is None and n_loop < rank and draw(st.integers(0, 3)) == 0:
        axis = draw(st.integers(n_loop, rank - 1))
        smallest = min(ds[axis].sizes)
        if smallest >= 2:
            start = draw(st.integers(0, smallest - 1))
            window = (axis, start, draw(st.integers(start + 1, smallest)))
    carry = bool(n_loop) and window is None and (epilogue is None or epilogue.op != "reshape") \
        and draw(st.integers(0, 3)) == 0
    dynamic_in = ()
    fixed = [a for a, d in enumerate(ds) if not d.runtime]
    if fixed and n_inputs + (epilogue is not None and epilogue.op == "matmul") > 1:
        n_tensors = n_inputs + (epilogue is not None and epilogue.op == "matmul")
        dynamic_in = ((draw(st.integers(1, n_tensors - 1)), draw(st.sampled_from(fixed))),)
    strided = rank >= 2 and draw(st.integers(0, 4)) == 0
    step = draw(st.sampled_from((2, 3))) if rank and not strided and draw(st.integers(0, 4)) == 0 else None
    explicit = bool(n_loop) and draw(st.integers(0, 3)) == 0
    shift = None  # an input read some rows further (its own, larger, DYNAMIC size): issue 20's view form
    shiftable = [i for i in range(1, n_inputs) if 0 not in masks[i] and all(j != i for j, _ in dynamic_in)]
    if n_loop and not explicit and ds[0].runtime and shiftable and draw(st.booleans()):
        shift = (draw(st.sampled_from(shiftable)), draw(st.sampled_from((1, 2, 5))))
    loop_name = draw(st.sampled_from(HOSTILE_NAMES)) if n_loop and draw(st.integers(0, 3)) == 0 else None
    return Program(true_div=true_div, step=step, loop_name=loop_name, strided=strided, carry=carry, dynamic_in=dynamic_in, retile=retile, window=window, dtype=dtype, dims=ds, input_masks=masks, steps=tuple(chain),
                   outputs=tuple(outputs), loop_tiles=loop_tiles, vec_tile=vec_tile,
                   ellipsis_from=ellipsis, explicit_views=explicit,
                   seed=draw(st.integers(0, 2 ** 16)), epilogue=epilogue, shift=shift)


CUBE_L0 = (16, 32, 64)


@st.composite
def epilogues(draw, rank: int, ds: tuple, n_loop: int, metas: list):
    """A shape-changing last op over the chain's values, or None when none fits."""
    looped = frozenset(range(n_loop))
    free = [i for i, (_, m) in enumerate(metas) if not m & looped]
    kinds = []
    if rank >= 2 and n_loop < rank - 1:
        kinds.append("transpose")
        # the weight input has the program's dtype
        mm = [i for i in free if metas[i][0] == metas[0][0] in FLOAT and not metas[i][1]]
        if mm:
            kinds += ["matmul"] * 3
    if rank >= 1 and n_loop < rank:
        kinds.append("concat")
    if rank >= 2 and n_loop <= rank - 2:
        kinds.append("reshape")
    if not kinds or not free:
        return None
    kind = draw(st.sampled_from(kinds))
    last = free[-1]
    if kind == "transpose":
        a1, a2 = sorted(draw(st.lists(st.integers(n_loop, rank - 1), min_size=2, max_size=2, unique=True)))
        return Epilogue("transpose", (draw(st.sampled_from([last] + free)),), (a1, a2))
    if kind == "reshape":
        return Epilogue("reshape", (draw(st.sampled_from([last] + free)),))
    if kind == "concat":
        a = draw(st.integers(0, len(free) - 1))
        first = free[-1] if draw(st.integers(0, 2)) else free[a]
        partners = [i for i in free if metas[i] == metas[first]]
        return Epilogue("concat", (first, draw(st.sampled_from(partners))), (draw(st.integers(n_loop, rank - 1)),))
    a = mm[-1] if draw(st.integers(0, 2)) else draw(st.sampled_from(mm))
    n_kind = draw(st.sampled_from(("int", "dyn", "static")))
    n0 = draw(st.sampled_from((1, 3, 8, 16, 17, 32, 64)))
    n1 = draw(st.sampled_from([x for x in (2, 5, 16, 40) if x != n0])) if n_kind == "dyn" else n0
    out_dtype = draw(st.sampled_from([None, "fp32"] if metas[a][0] != "fp32" else [None]))
    cube = None
    if draw(st.booleans()):
        cube = tuple([l0, l0 * draw(st.sampled_from((1, 2)))]
                     for l0 in (draw(st.sampled_from(CUBE_L0)) for _ in range(3)))
    return Epilogue("matmul", (a,), n=Dim(n_kind, (n0, n1)), b_trans=draw(st.booleans()),
                    out_dtype=out_dtype, cube_tile=cube)
