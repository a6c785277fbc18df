"""Cycle cost of one leaf-function instance (one tile) on one core, pipe by pipe.

Each tile op runs on a pipe: copy_in on MTE-in, L1->L0 moves on MTE1, vector math on V, the
cube on M, copy_out on MTE-out, dynamic-shape bookkeeping on the scalar pipe S. An op starts when
its pipe is free and its inputs are ready, so copies overlap compute as far as the dependencies
allow. Formulas: see runtime/machine.py.
"""

from __future__ import annotations

import math

PIPES = ("MTE_IN", "MTE1", "V", "M", "MTE_OUT", "S")
_PIPE = {"copy_in": "MTE_IN", "l1_to_l0a": "MTE1", "l1_to_l0b": "MTE1", "copy_out": "MTE_OUT", "matmul": "M",
         "scaled_mm": "M", "conv": "M"}


def vector_cycles(machine, kind: str, nbytes: float, itemsize: float) -> int:
    latency, par = machine.vector_costs.get(kind, machine.vector_default)
    repeats = max(1, math.ceil(nbytes / 256))
    per_repeat = max(1.0, (256 / max(itemsize, 1)) / par)  # upstream's compiler-side formula
    return int(latency + (repeats - 1) * per_repeat)


def op_cycles(machine, op, sizes, l2_hit: bool) -> int:
    """Cycles of tile op ``op`` whose operands hold ``sizes`` (elements per access, inputs then outputs)."""
    kind = op.kind
    accs = op.inputs + op.outputs
    nbytes = [n * a.value.dtype.itemsize for n, a in zip(sizes, accs)]
    if kind == "copy_in":
        if op.outputs[0].mem in ("UB", "L1"):
            bw, lat = (machine.l2_read_bw, machine.l2_read_latency) if l2_hit else \
                (machine.gm_read_bw, machine.gm_read_latency)
            return int(lat + nbytes[0] / bw)
    if kind == "copy_out":
        return int(machine.gm_write_latency + nbytes[0] / machine.gm_write_bw)
    if kind == "l1_to_l0a":
        return int(8 + nbytes[0] / machine.l1_to_l0a_bw)
    if kind == "l1_to_l0b":
        return int(8 + nbytes[0] / machine.l1_to_l0b_bw)
    if kind in ("matmul", "scaled_mm"):  # scaled_mm: the block scales are applied on the fly
        a = op.inputs[0]
        macs = _matmul_macs(op, sizes)
        rate = machine.cube_macs_per_cycle.get(int(a.value.dtype.itemsize), 1024)
        return int(machine.cube_latency + macs / rate)
    if kind == "conv":  # whole-tensor conv on the cube: out elements x (Cin / groups x kernel) MACs
        w = op.inputs[1]
        cout = w.value.shape[0] if isinstance(w.value.shape[0], int) else 1
        rate = machine.cube_macs_per_cycle.get(int(w.value.dtype.itemsize), 1024)
        return int(machine.cube_latency + sizes[len(op.inputs)] * max(sizes[1], 1) / max(cout, 1) / rate)
    itemsize = accs[0].value.dtype.itemsize if accs else 4
    return vector_cycles(machine, kind, max(nbytes) if nbytes else 256, itemsize)


def _matmul_macs(op, sizes):
    # sizes: A elems (m*k), B elems (k*n), [bias], C elems (m*n): m*k*n = sqrt(A*B*C)
    a, b, c = sizes[0], sizes[1], sizes[-1]
    return math.sqrt(max(a, 1) * max(b, 1) * max(c, 1))


def leaf_schedule(machine, leaf, sizes_per_op, l2_hits, dynamic: bool):
    """(duration, {pipe: busy cycles}) of one instance of ``leaf``.

    ``sizes_per_op[i]`` gives the element count of each access of op i; ``l2_hits[i]`` whether
    op i's GM read hits L2; ``dynamic`` adds the scalar cost of dynamic-shape code per op.
    """
    pipe_free = dict.fromkeys(PIPES, 0)
    busy = dict.fromkeys(PIPES, 0)
    ready: dict = {}
    end_all = 0
    for i, op in enumerate(leaf.ops):
        pipe = _PIPE.get(op.kind, "V")
        start = pipe_free[pipe]
        for a in op.inputs:
            if a.mem != "GM":
                start = max(start, ready.get(a.local_key, 0))
        if dynamic:
            s0 = max(pipe_free["S"], start - machine.dynamic_op_overhead)
            pipe_free["S"] = s0 + machine.dynamic_op_overhead
            busy["S"] += machine.dynamic_op_overhead
            start = max(start, pipe_free["S"])
        dur = op_cycles(machine, op, sizes_per_op[i], l2_hits[i])
        end = start + dur
        pipe_free[pipe] = end
        busy[pipe] += dur
        for a in op.outputs:
            if a.mem != "GM":
                ready[a.local_key] = end
        end_all = max(end_all, end)
    return end_all, busy
