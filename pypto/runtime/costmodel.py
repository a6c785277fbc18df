"""Cycle cost of one leaf-function instance (one task) on one core, pipe by pipe.

The pipes are the hardware's: MTE2 moves GM (or L2) into L1 / UB, MTE1 moves L1 into L0A / L0B,
M is the cube, FIXPIPE writes L0C out, V is the vector unit, MTE3 writes UB out, S is the scalar
unit's dynamic-shape bookkeeping. An op starts when its pipe is free and its inputs are ready, so
copies overlap compute as far as the dependencies allow.

A matmul is not one op on the cube: the compiler streams K through L1 in steps of ``k_l1`` and
through L0A / L0B in steps of ``k_tile``, each buffer double-buffered where two fit, so MTE2
loads step i+1 while MTE1 moves tile j+1 while the cube multiplies tile j (`_k_pipeline`). The
K tile therefore changes the time: a small one pays the per-instruction costs more often, a
large one fills the pipeline later.

Besides its duration a task reports when its last GM read completes (``read_end``) and when its
first compute starts (``lead``): the scheduler lets the loads of the next task on a core overlap
the tail of the running one (double buffering across tiles), and shares the chip-wide HBM
bandwidth between the tasks in flight. Formulas and parameters: runtime/machine.py.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

PIPES = ("MTE2", "MTE1", "M", "FIXPIPE", "V", "MTE3", "S")
_CUBE = ("matmul", "scaled_mm", "conv")


@dataclass(frozen=True)
class LeafCost:
    """The cost of one task: ``duration`` cycles, busy cycles per pipe, the cycle its last GM
    read completes (``read_end``) and the cycle its first non-load op starts (``lead``)."""

    duration: int
    busy: dict
    read_end: int
    lead: int


def pipe_of(op) -> str:
    kind = op.kind
    if kind in _LOADS:
        return "MTE2"
    if kind in ("l1_to_l0a", "l1_to_l0b"):
        return "MTE1"
    if kind in _CUBE:
        return "M"
    if kind == "copy_out":
        return "FIXPIPE" if op.inputs and op.inputs[0].mem == "L0C" else "MTE3"
    return "V"


# GM -> UB / L1 loads: a copy, or the pieces of one operand side by side (passes/gather.py)
_LOADS = ("copy_in", "gather_in")


def _load_bytes(op, nbytes) -> float:
    """Bytes a load moves: its one source, or every piece of a gather."""
    return sum(nbytes[:len(op.inputs)]) if op.kind == "gather_in" else nbytes[0]


def vector_cycles(machine, kind: str, nbytes: float, itemsize: float) -> int:
    """Upstream's compiler-side vector formula: latency + (repeats - 1) x cycles per 256-byte repeat."""
    latency, par = machine.vector_costs.get(kind, machine.vector_default)
    repeats = max(1, math.ceil(nbytes / 256))
    per_repeat = max(1.0, (256 / max(itemsize, 1)) / par)
    return int(latency + (repeats - 1) * per_repeat * machine.vector_scale)


def _read_cost(machine, nbytes: float, l2_hit: bool) -> tuple[float, float]:
    """(pipe busy cycles, cycles until the data is there) of a GM read into L1 / UB."""
    if l2_hit:
        busy = nbytes / machine.l2_read_bw
        return busy, machine.l2_read_latency + busy
    busy = nbytes / machine.gm_read_bw
    return busy, machine.gm_read_latency + busy


def _write_cycles(machine, nbytes: float) -> float:
    return machine.gm_write_latency + nbytes / machine.gm_write_bw


def op_cycles(machine, op, sizes, l2_hit: bool) -> int:
    """Cycles of tile op ``op`` whose operands hold ``sizes`` (elements per access, inputs then
    outputs), the op alone (a matmul over its whole K, unpipelined)."""
    kind = op.kind
    accs = op.inputs + op.outputs
    nbytes = [n * a.value.dtype.itemsize for n, a in zip(sizes, accs)]
    if kind in _LOADS and op.outputs[0].mem in ("UB", "L1"):
        return int(_read_cost(machine, _load_bytes(op, nbytes), l2_hit)[1])
    if kind == "copy_out":
        if op.inputs[0].mem == "L0C" and op.outputs[0].mem == "GM":
            return int(_write_cycles(machine, _nd_write_bytes(machine, op, nbytes[0], sizes[0])))
        return int(_write_cycles(machine, nbytes[0]))
    if kind == "l1_to_l0a":
        return int(machine.mte1_latency + nbytes[0] / machine.l1_to_l0a_bw)
    if kind == "l1_to_l0b":
        return int(machine.mte1_latency + nbytes[0] / machine.l1_to_l0b_bw)
    if kind in ("matmul", "scaled_mm"):  # scaled_mm: the block scales are applied on the fly
        rate = machine.cube_macs_per_cycle.get(int(op.inputs[0].value.dtype.itemsize), 1024)
        return int(machine.cube_latency + _matmul_macs(sizes) / rate)
    if kind == "conv":  # whole-tensor conv on the cube: out elements x (Cin / groups x kernel) MACs
        w = op.inputs[1]
        cout = w.value.shape[0] if isinstance(w.value.shape[0], int) else 1
        rate = machine.cube_macs_per_cycle.get(int(w.value.dtype.itemsize), 1024)
        return int(machine.cube_latency + sizes[len(op.inputs)] * max(sizes[1], 1) / max(cout, 1) / rate)
    if kind in ("reshape",) and _moves_nothing(op):
        return 0
    if kind in _SORTS:
        return _sort_cycles(machine, op, sizes[0])
    if op.attrs.get("in_place") and len(op.inputs) > 1:
        # an update written into its input's storage (passes/fold.py) moves the rows it changes:
        # its index and source, not the whole tensor
        nbytes = nbytes[1:len(op.inputs)]
    itemsize = accs[0].value.dtype.itemsize if accs else 4
    return vector_cycles(machine, kind, max(nbytes) if nbytes else 256, itemsize)


_SORTS = ("topk", "topk_partial", "topk_merge", "argsort")


def _sort_cycles(machine, op, elems: float) -> int:
    """A sort on the vector unit works element by element, not 256 bytes at a time: it sorts
    blocks of 32 (one pass), then merges up to four sorted lists per pass, so a row of n
    elements takes 1 + ceil(log4(n / 32)) passes of ``sort_cycles`` per element, whatever the
    dtype (the TopK points of the corpus: fp16 is not faster than fp32)."""
    x = op.inputs[0]
    d = op.attrs.get("dim", -1)
    n = x.shape[d] if isinstance(x.shape[d], int) else 1024
    n = max(1, n)
    passes = 1 + max(0, math.ceil(math.log(max(n / 32, 1), 4)))
    latency = machine.vector_costs.get(op.kind, machine.vector_default)[0]
    return int(latency + elems * passes * machine.sort_cycles)


def _moves_nothing(op) -> bool:
    # a reshape between local buffers of one memory is a new view of the same bytes
    return bool(op.inputs) and all(a.mem == op.inputs[0].mem for a in op.inputs + op.outputs)


def _matmul_macs(sizes):
    # sizes: A elems (m*k), B elems (k*n), [bias...], C elems (m*n): m*k*n = sqrt(A*B*C)
    a, b, c = sizes[0], sizes[1], sizes[-1]
    return math.sqrt(max(a, 1) * max(b, 1) * max(c, 1))


def leaf_schedule(machine, leaf, sizes_per_op, l2_hits, dynamic: bool, fractal=frozenset()) -> LeafCost:
    """The `LeafCost` of one instance of ``leaf``.

    ``sizes_per_op[i]`` gives the element count of each access of op i; ``l2_hits[i]`` whether
    op i's GM read hits L2; ``dynamic`` adds the scalar cost of dynamic-shape code per op;
    ``fractal`` holds the (op index, "in", operand) GM reads of tensors stored in the cube's NZ
    layout, whose K steps are contiguous fractal blocks.
    """
    ops = leaf.ops
    pipelined = _k_groups(leaf)
    pipe_free = dict.fromkeys(PIPES, 0)
    busy = dict.fromkeys(PIPES, 0)
    ready: dict = {}
    end_all = read_end = 0
    lead = None
    s_cost = machine.dynamic_op_overhead if dynamic else 0
    for i, op in enumerate(ops):
        group = pipelined.get(i)
        if group is not None:
            if group[-1] != i:  # the loads and moves of a K pipeline are costed with its matmul
                continue
            start = max(pipe_free["MTE2"], pipe_free["MTE1"], pipe_free["M"])
            inside = _group_keys(ops, group)
            for j in group:
                for a in ops[j].inputs:
                    if a.mem != "GM" and a.local_key not in inside:
                        start = max(start, ready.get(a.local_key, 0))
            if s_cost:
                start = _scalar(pipe_free, busy, start, s_cost * len(group))
            end, first, last_read, used = _k_pipeline(machine, ops, group, sizes_per_op, l2_hits, start, fractal)
            for p, c in used.items():
                busy[p] += c
                pipe_free[p] = max(pipe_free[p], start + c)
            pipe_free["M"] = end
            for a in op.outputs:
                ready[a.local_key] = end
            read_end = max(read_end, last_read)
            lead = first if lead is None else min(lead, first)
            end_all = max(end_all, end)
            continue
        pipe = pipe_of(op)
        start = pipe_free[pipe]
        for a in op.inputs:
            if a.mem != "GM":
                start = max(start, ready.get(a.local_key, 0))
        if s_cost:
            start = _scalar(pipe_free, busy, start, s_cost)
        dur = op_cycles(machine, op, sizes_per_op[i], l2_hits[i])
        end = start + dur
        if op.kind in _LOADS:
            read_end = max(read_end, end)
            # the DMA engine queues the next load once this one's bytes are on their way: the
            # latency of consecutive loads overlaps, only their transfer occupies the pipe
            nbytes = _load_bytes(op, [n * a.value.dtype.itemsize for n, a in zip(sizes_per_op[i], op.inputs)])
            pipe_free[pipe] = start + int(_read_cost(machine, nbytes, l2_hits[i])[0])
            busy[pipe] += pipe_free[pipe] - start
        else:
            if lead is None:
                lead = start
            pipe_free[pipe] = end
            busy[pipe] += dur
        for a in op.outputs:
            if a.mem != "GM":
                ready[a.local_key] = end
        end_all = max(end_all, end)
    end_all = max(1, int(end_all))
    return LeafCost(end_all, {p: int(c) for p, c in busy.items() if c}, int(read_end),
                    int(lead if lead is not None else end_all))


def _scalar(pipe_free, busy, start, cycles):
    # The scalar unit issues the ops in program order into the pipes' queues and runs ahead: it
    # does not wait for an op's inputs (the waits are flags inside the receiving pipe's queue),
    # so its cost delays an op only when the issue itself falls behind.
    pipe_free["S"] += cycles
    busy["S"] += cycles
    return max(start, pipe_free["S"])


def _group_keys(ops, group):
    return {a.local_key for j in group for a in ops[j].outputs if a.mem != "GM"}


def _k_groups(leaf) -> dict:
    """op index -> the ops of its K pipeline (copy-ins, L1->L0 moves, then the matmul), for every
    cube op the compiler streams along K. Cached on the leaf (its ops never change)."""
    got = getattr(leaf, "_k_groups", None)
    if got is not None:
        return got
    ops = leaf.ops
    producer = {}
    for i, op in enumerate(ops):
        for a in op.outputs:
            if a.mem != "GM":
                producer[a.local_key] = i
    got = {}
    for i, op in enumerate(ops):
        if op.kind not in ("matmul", "scaled_mm") or not op.attrs.get("k_tile"):
            continue
        group = []
        for a in op.inputs[:2]:
            mv = producer.get(a.local_key)
            if mv is None or ops[mv].kind not in ("l1_to_l0a", "l1_to_l0b"):
                group = None
                break
            load = producer.get(ops[mv].inputs[0].local_key)
            if load is None or ops[load].kind not in _LOADS or ops[load].inputs[0].mem != "GM":
                group = None
                break
            group += [load, mv]
        if group is None or any(j in got for j in group):
            continue
        group = sorted(group) + [i]
        for j in group:
            got[j] = group
    try:
        leaf._k_groups = got
    except AttributeError:  # a frozen leaf: recomputed each time (cheap)
        pass
    return got


def _strided_bytes(machine, rows, cols, itemsize, whole: bool, nd: bool = False) -> float:
    """Bytes a load of ``rows`` row segments of ``cols`` elements really moves: a segment
    shorter than an L2 line still moves whole lines (``whole``: the rows are contiguous, one
    segment). This is why a K step of a few dozen fp16 elements wastes MTE2 bandwidth and the
    matmul guide asks for kL1 > kL0 ("big packets").

    ``nd``: the rows are ND rows converted to the cube's fractal layout on the way, one DMA burst
    per row whether or not the rows are contiguous, and a burst shorter than
    ``machine.nd_burst_bytes`` costs that much. This is why upstream's performance guide asks for
    NZ-stored weights ("higher bandwidth into L1") and for large tail axes."""
    seg = cols * itemsize
    line = machine.l2_line_bytes
    burst = max(seg, machine.nd_burst_bytes) if nd else seg
    if whole or seg >= line or line <= 0:
        return rows * burst
    return rows * max(burst, line * math.ceil(seg / line))


def _nd_write_bytes(machine, op, nbytes: float, elems: float) -> float:
    """Bytes a FIXPIPE write of an L0C result into an ND tensor costs: the fractal result is
    written out row by row, one burst per row (``machine.nd_burst_bytes`` at least)."""
    cols = op.outputs[0].shape[-1] if op.outputs[0].shape else 1
    if not isinstance(cols, int) or cols <= 0 or elems <= 0:
        return nbytes
    row = nbytes / elems * cols
    return nbytes if row >= machine.nd_burst_bytes else elems / cols * machine.nd_burst_bytes


def _k_pipeline(machine, ops, group, sizes_per_op, l2_hits, t0, fractal=frozenset()):
    """Simulate one matmul streamed along K: MTE2 loads K steps of ``k_l1`` into L1, MTE1 moves
    K tiles of ``k_tile`` into L0A / L0B, the cube multiplies each tile into L0C. Each buffer
    holds two steps when two fit (double buffering), else one.

    Returns (end of the last multiply, start of the first multiply, end of the last load,
    busy cycles per pipe)."""
    mm = group[-1]
    op = ops[mm]
    loads = [j for j in group if ops[j].kind in _LOADS]
    moves = [j for j in group if ops[j].kind not in _LOADS and j != mm]
    a_elems, b_elems, c_elems = sizes_per_op[mm][0], sizes_per_op[mm][1], sizes_per_op[mm][-1]
    k = max(1.0, math.sqrt(max(a_elems, 1) * max(b_elems, 1) / max(c_elems, 1)))
    m, n = max(1.0, a_elems / k), max(1.0, b_elems / k)
    k_tile = max(1, int(op.attrs.get("k_tile") or k))
    k_l1 = max(k_tile, int(op.attrs.get("k_l1") or k_tile))
    a_item = op.inputs[0].value.dtype.itemsize
    b_item = op.inputs[1].value.dtype.itemsize
    rate = machine.cube_macs_per_cycle.get(int(a_item), 1024)
    hit = {j: l2_hits[j] for j in loads}
    # which load feeds A and which B: A's move is l1_to_l0a
    a_load = next((j for j in loads if any(ops[mv].kind == "l1_to_l0a" and
                                           ops[mv].inputs[0].local_key == ops[j].outputs[0].local_key
                                           for mv in moves)), loads[0])
    b_load = next(j for j in loads if j != a_load) if len(loads) > 1 else a_load
    n_l1 = max(1, math.ceil(k / k_l1))
    l1_step_bytes = (m * a_item + n * b_item) * k_l1
    l1_slots = 2 if 2 * l1_step_bytes <= machine.l1_bytes else 1
    l0_slots = 2 if 2 * m * k_tile * a_item <= machine.l0a_bytes and 2 * n * k_tile * b_item <= machine.l0b_bytes \
        else 1
    mte2_free = mte1_free = m_free = float(t0)
    l1_free = [float(t0)] * l1_slots  # when each L1 slot was last released (its last move done)
    l0_free = [float(t0)] * l0_slots
    busy = {"MTE2": 0.0, "MTE1": 0.0, "M": 0.0}
    first_mul = None
    last_read = float(t0)
    tile = 0
    a_k_last, b_k_last = [d == -1 for d in op.attrs.get("k_dims", (-1, -2))]
    # an NZ operand is stored in fractal blocks (16 rows of 32 bytes, 512 contiguous bytes): a K
    # step of it moves whole blocks whatever its row length
    a_nz, b_nz = (a_load, "in", 0) in fractal, (b_load, "in", 0) in fractal
    for step in range(n_l1):
        kk = min(k_l1, k - step * k_l1)
        issue = max(mte2_free, l1_free[step % l1_slots])
        # a K step of A is m rows of kk elements (K last) or kk rows of m; B likewise with n
        a_bytes = _strided_bytes(machine, m, kk, a_item, whole=kk >= k or a_nz, nd=not a_nz) if a_k_last else \
            _strided_bytes(machine, kk, m, a_item, whole=a_nz, nd=not a_nz)
        b_bytes = _strided_bytes(machine, n, kk, b_item, whole=kk >= k or b_nz, nd=not b_nz) if b_k_last else \
            _strided_bytes(machine, kk, n, b_item, whole=b_nz, nd=not b_nz)
        busy_a, wait_a = _read_cost(machine, a_bytes, hit[a_load])
        busy_b, wait_b = _read_cost(machine, b_bytes, hit[b_load])
        mte2_free = issue + busy_a + busy_b
        arrived = max(issue + wait_a, issue + busy_a + wait_b)
        busy["MTE2"] += busy_a + busy_b
        last_read = max(last_read, arrived)
        tiles = max(1, math.ceil(kk / k_tile))  # a K step not a multiple of the tile ends in a short tile
        for t in range(tiles):
            kt = min(k_tile, kk - t * k_tile)
            mv = 2 * machine.mte1_latency + m * kt * a_item / machine.l1_to_l0a_bw + \
                kt * n * b_item / machine.l1_to_l0b_bw
            s1 = max(mte1_free, arrived, l0_free[tile % l0_slots])
            mte1_free = s1 + mv
            busy["MTE1"] += mv
            mul = machine.cube_latency + m * kt * n / rate
            sm = max(m_free, mte1_free)
            m_free = sm + mul
            busy["M"] += mul
            if first_mul is None:
                first_mul = sm
            l0_free[tile % l0_slots] = m_free
            tile += 1
        l1_free[step % l1_slots] = mte1_free
    return m_free, (first_mul if first_mul is not None else t0), last_read, busy
