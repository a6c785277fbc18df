"""Greedy shrinking of a failing `Program` for the fuzz script.

Hypothesis shrinks the failures of the pytest entry itself; the script sweeps many programs
without stopping at the first failure, so it shrinks each failure here: try simpler variants
(drop a step, an output, an input's broadcast, the views, the tiles, a loop; fp32; fixed small
sizes) and keep any that still fails the same way, until none does.
"""

from __future__ import annotations

from dataclasses import replace
from typing import Callable, Iterator

from .program import FLOAT, REDUCE, Dim, Program, result_meta, spec


def valid(prog: Program) -> bool:
    """The generator's invariants: operand dtypes, reduce axes outside the loop, full outputs."""
    looped = frozenset(range(len(prog.loop_tiles)))
    metas = [(prog.dtype, m) for m in prog.input_masks]
    if prog.input_masks and prog.input_masks[0]:
        return False
    for s in prog.steps:
        if any(a >= len(metas) for a in s.args):
            return False
        dts = [metas[a][0] for a in s.args]
        if s.op == "if":
            names = (s.param.then_op, s.param.else_op)
            if any(dts[0] not in spec(n).dtypes for n in names):
                return False
            if s.param.cond[0] != "size" and not looped:
                return False
        elif dts[0] not in spec(s.op).dtypes:
            return False
        if s.op in ("where",) and (dts[0] != dts[1] or dts[2] != dts[3]):
            return False
        if s.op not in ("where", "cast", "if") and len(set(dts)) > 1:
            return False
        if s.op == "cast" and s.param == dts[0]:
            return False
        if (s.op in REDUCE or s.op in ("softmax", "cumsum")) and s.param >= prog.rank:
            return False
        if s.op in ("tril", "triu") and prog.rank < 2:
            return False
        metas.append(result_meta(s, metas))
    if prog.carry and (not looped or prog.window is not None):
        return False
    if prog.true_div and (not looped or not prog.dims[0].runtime or any(s % prog.loop_tiles[0] for s in prog.dims[0].sizes)):
        return False
    if prog.step is not None and (prog.rank < 1 or prog.strided):
        return False
    if prog.retile is not None and prog.retile[0] >= len(prog.steps):
        return False
    if prog.window is not None and (prog.epilogue is not None or not looped or prog.window[0] in looped
                                    or prog.window[0] >= prog.rank
                                    or prog.window[2] > min(prog.dims[prog.window[0]].sizes)):
        return False
    ep = prog.epilogue
    n_values = len(metas) + (ep is not None)
    if ep is not None:
        if any(a >= len(metas) or metas[a][1] & looped for a in ep.args):
            return False
        if any(a < n for a, n in ((x, len(prog.loop_tiles)) for x in ep.axes)) or any(a >= prog.rank for a in ep.axes):
            return False
        if ep.op == "matmul" and (metas[ep.args[0]][0] != prog.dtype or metas[ep.args[0]][1]
                                  or prog.rank < 2 or len(prog.loop_tiles) >= prog.rank):
            return False
        if ep.op == "concat" and metas[ep.args[0]] != metas[ep.args[1]]:
            return False
        if ep.op == "reshape" and (prog.rank < 2 or len(prog.loop_tiles) > prog.rank - 2 or prog.carry):
            return False
        metas.append((metas[ep.args[0]][0], frozenset()))
    if any(o >= n_values or o < prog.n_inputs or metas[o][1] & looped for o in prog.outputs):
        return False
    return bool(prog.outputs) and len(set(prog.outputs)) == len(prog.outputs)


def _drop_step(prog: Program, k: int) -> Program:
    """Without step ``k``: its users read its first operand instead."""
    v = prog.n_inputs + k
    src = prog.steps[k].args[0]

    def remap(i: int) -> int:
        return src if i == v else (i - 1 if i > v else i)
    steps = tuple(replace(s, args=tuple(remap(a) for a in s.args))
                  for j, s in enumerate(prog.steps) if j != k)
    outs = tuple(dict.fromkeys(remap(o) for o in prog.outputs))
    ep = prog.epilogue
    if ep is not None:
        ep = replace(ep, args=tuple(remap(a) for a in ep.args))
    retile = prog.retile
    if retile is not None and k < retile[0]:
        retile = (retile[0] - 1, retile[1])
    return replace(prog, steps=steps, outputs=outs, epilogue=ep, retile=retile)


def _variants(prog: Program) -> Iterator[Program]:
    for k in range(len(prog.steps) - 1, -1, -1):
        yield _drop_step(prog, k)
    ep = prog.epilogue
    if ep is not None:  # its first operand becomes the output it fed
        v = prog.epilogue_value
        yield replace(prog, epilogue=None,
                      outputs=tuple(dict.fromkeys(ep.args[0] if o == v else o for o in prog.outputs)))
        if ep.cube_tile is not None:
            yield replace(prog, epilogue=replace(ep, cube_tile=None))
        if ep.b_trans or ep.out_dtype:
            yield replace(prog, epilogue=replace(ep, b_trans=False, out_dtype=None))
    last = prog.n_inputs + len(prog.steps) - 1
    if prog.epilogue is None and prog.steps and prog.outputs != (last,):
        yield replace(prog, outputs=(last,))  # so that the steps before it can go
    for j in range(len(prog.outputs)):
        if len(prog.outputs) > 1:
            yield replace(prog, outputs=prog.outputs[:j] + prog.outputs[j + 1:])
    for i in range(prog.n_inputs - 1, 0, -1):  # an input nobody reads goes
        if not any(i in s.args for s in prog.steps):
            def shift(a: int) -> int:
                return a - 1 if a > i else a
            ep = prog.epilogue
            if ep is not None:
                if i in ep.args:
                    continue
                ep = replace(ep, args=tuple(shift(a) for a in ep.args))
            yield replace(prog, input_masks=prog.input_masks[:i] + prog.input_masks[i + 1:],
                          steps=tuple(replace(s, args=tuple(shift(a) for a in s.args)) for s in prog.steps),
                          outputs=tuple(shift(o) for o in prog.outputs), epilogue=ep)
    for i, m in enumerate(prog.input_masks):
        if m:
            yield replace(prog, input_masks=prog.input_masks[:i] + (frozenset(),) + prog.input_masks[i + 1:])
    if prog.window is not None:
        yield replace(prog, window=None)
    if prog.carry:
        yield replace(prog, carry=False)
    if prog.strided:
        yield replace(prog, strided=False)
    if prog.true_div:
        yield replace(prog, true_div=False)
    if prog.step is not None:
        yield replace(prog, step=None)
    if prog.dynamic_in:
        yield replace(prog, dynamic_in=())
    if prog.retile is not None:
        yield replace(prog, retile=None)
    if prog.explicit_views:
        yield replace(prog, explicit_views=False)
    if prog.ellipsis_from is not None:
        yield replace(prog, ellipsis_from=None)
    if prog.loop_tiles:
        yield replace(prog, loop_tiles=prog.loop_tiles[:-1])
    if prog.vec_tile is not None:
        yield replace(prog, vec_tile=None)
        if len(prog.vec_tile) > prog.rank:
            yield replace(prog, vec_tile=prog.vec_tile[:prog.rank])
    if prog.dtype != "fp32" and all(s.op != "cast" for s in prog.steps):
        if prog.dtype in FLOAT:
            yield replace(prog, dtype="fp32")
    for a, d in enumerate(prog.dims):
        if d.kind != "int" and d.sizes[0] == d.sizes[1]:
            yield replace(prog, dims=prog.dims[:a] + (Dim("int", d.sizes),) + prog.dims[a + 1:])
        for smaller in sorted({1, 2, 3, 5, 8, max(1, d.sizes[0] // 2)}):
            if smaller < d.sizes[0]:
                second = d.sizes[1] if d.runtime else smaller
                if not (d.runtime and second == smaller):
                    yield replace(prog, dims=prog.dims[:a] + (Dim(d.kind, (smaller, second)),) + prog.dims[a + 1:])
    if prog.seed:
        yield replace(prog, seed=0)


def shrink(prog: Program, still_fails: Callable[[Program], bool], budget: int = 300) -> Program:
    """The smallest variant of ``prog`` found for which ``still_fails`` holds (within ``budget`` runs)."""
    tried = 0
    improved = True
    while improved and tried < budget:
        improved = False
        for cand in _variants(prog):
            if not valid(cand):
                continue
            tried += 1
            if still_fails(cand):
                prog, improved = cand, True
                break
            if tried >= budget:
                break
    return prog

