"""What a kernel engineer would fix, read off a compiled kernel and its simulated schedule.

* a GM round trip: one leaf writes a tensor to GM that the next leaf, on the same kind of core,
  loads straight back into its buffers; fused into one leaf the value would stay on chip;
* idle pipes: a leaf whose busiest pipe works for a small part of the leaf's run time (fixed
  costs dominate: the tiles are too small, or the work is latency bound);
* idle cores: the tile grid makes fewer tasks than the machine has cores of that kind;
* redundant loads: a leaf copies the same GM tile into its buffers more than once.

Pure analysis over the inspection objects (no IPython, no widgets): :func:`kernel_hints` returns
:class:`Hint` records; the lab shows them.
"""

from __future__ import annotations

from dataclasses import dataclass

from .dtypes import bytes_of

PIPE_BUSY_BELOW = 0.30  # a leaf whose busiest pipe is busy less than this share of its run time
CORES_USED_BELOW = 0.50  # a core type of which fewer than this share ever ran a task
MAX_EVENTS = 200_000  # pipes are summed over at most this many tasks (a huge timeline: the first ones)


@dataclass(frozen=True)
class Hint:
    """One finding: ``kind`` ("gm_round_trip", "redundant_loads", "idle_pipes" or "idle_cores"), a one-line
    ``title``, the ``detail`` (the numbers behind it and what to try) and the ``leaves`` concerned."""

    kind: str
    title: str
    detail: str
    leaves: tuple = ()


def _execute_roots(compiled) -> list:
    for snap in reversed(list(getattr(compiled, "passes", None) or ())):
        if snap.name == "execute_graph":
            return list(snap.graph or ())
    return []


def _tile_bytes(access) -> int | None:
    count = 1
    for size in access.shape:
        if not isinstance(size, int):
            return None
        count *= size
    return count * bytes_of(access.value.dtype)


def gm_round_trips(compiled) -> list:
    """Values one leaf stores to GM and a later leaf on the same core type loads back into UB/L1."""
    found: dict = {}
    writer: dict = {}  # root value id -> (call, access) that last wrote it to GM
    for root in _execute_roots(compiled):
        for call in root.calls:
            for k, a in enumerate(call.args):
                if k in call.writes or a.mem != "GM":
                    continue
                w = writer.get(a.value.root.id)
                if w is None:
                    continue
                src, out = w
                if src.leaf is call.leaf or src.leaf.core != call.leaf.core:
                    continue
                key = (src.leaf.name, call.leaf.name, out.value.root.name)
                found.setdefault(key, (src, out, call))
            for k in call.writes:
                writer[call.args[k].value.root.id] = (call, call.args[k])
    hints = []
    for (a_name, b_name, value), (src, out, _) in found.items():
        size = _tile_bytes(out)
        per_tile = f" ({size:,} B per tile, stored and loaded again)" if size else ""
        param = out.value.root.kind == "param"
        why = ("it is also a kernel output, so the store stays, but the load back is avoidable"
               if param else "fused, the value would stay in the core's buffers: no store, no load")
        hints.append(Hint(
            "gm_round_trip",
            f"%{value} goes UB -> GM -> UB between {a_name} and {b_name} ({src.leaf.core})",
            f"{a_name} writes %{value} to GM and {b_name} reads it back{per_tile}; {why}. "
            f"Same tile shapes and one loop for both lets the compiler put them in one leaf.",
            (a_name, b_name)))
    return hints


def _events(timeline):
    events = timeline.events
    return events if len(events) <= MAX_EVENTS else [events[i] for i in range(MAX_EVENTS)]


def idle_pipes(timeline) -> list:
    """Leaves whose busiest pipe is busy for less than PIPE_BUSY_BELOW of their run time."""
    per_leaf: dict = {}
    for e in _events(timeline):
        total, pipes = per_leaf.setdefault(e.leaf, [0, {}])
        per_leaf[e.leaf][0] = total + e.duration
        for pipe, busy in e.pipes:
            pipes[pipe] = pipes.get(pipe, 0) + busy
    hints = []
    for leaf, (total, pipes) in sorted(per_leaf.items()):
        if not total or not pipes:
            continue
        pipe, busy = max(pipes.items(), key=lambda kv: kv[1])
        share = busy / total
        if share < PIPE_BUSY_BELOW:
            hints.append(Hint(
                "idle_pipes",
                f"{leaf}: its busiest pipe ({pipe}) works {share:.0%} of the leaf's time",
                f"the rest is fixed cost (task launch, synchronisation, latency); larger tiles or "
                f"fusing it with its neighbours gives each task more work for the same overhead.",
                (leaf,)))
    return hints


def idle_cores(timeline) -> list:
    """Core types of which fewer than CORES_USED_BELOW of the cores ever ran a task."""
    machine = timeline.machine
    counts = {"AIC": machine.aic_cores, "AIV": machine.aiv_cores}
    tasks: dict = {}
    cores: dict = {}
    for e in _events(timeline):
        tasks[e.core_type] = tasks.get(e.core_type, 0) + 1
        cores.setdefault(e.core_type, set()).add(e.core)
    hints = []
    for kind, used in sorted(cores.items()):
        total = counts.get(kind, 0)
        if total and len(used) < CORES_USED_BELOW * total:
            hints.append(Hint(
                "idle_cores",
                f"only {len(used)} of {total} {kind} cores ran a task",
                f"the tile grid gives {tasks[kind]} {kind} task(s) in all; smaller tiles (or a bigger "
                f"batch per call) spread the work over more cores.",
                ()))
    return hints


def redundant_loads(compiled) -> list:
    """Leaves that load one GM tile into their buffers more than once (the tile is used by
    several ops, each given its own copy-in): every load after the first is read traffic a
    single load, kept in its buffer, would save."""
    hints = []
    leaves = getattr(getattr(compiled, "lowered", None), "leaves", None) or {}
    for name, leaf in leaves.items():
        loads: dict = {}
        for i, op in enumerate(leaf.ops):
            if op.kind != "copy_in" or not op.inputs or op.inputs[0].mem != "GM":
                continue
            a = op.inputs[0]
            key = (a.value.name, repr(a.base), tuple(a.shape), repr(a.extent))
            loads.setdefault(key, []).append(i)
        for (tensor, _base, shape, _extent), ops in loads.items():
            if len(ops) < 2:
                continue
            nbytes = _tile_bytes(leaf.ops[ops[0]].inputs[0])
            traffic = f" ({nbytes * (len(ops) - 1):,} extra bytes read per task)" if nbytes else ""
            line = getattr(leaf.ops[ops[0]], "loc", None)
            at = f" (from {line})" if line is not None else ""
            hints.append(Hint(
                "redundant_loads", f"{name} loads one tile of %{tensor} {len(ops)} times",
                f"ops {', '.join(map(str, ops))} each copy the same {list(shape)} tile of %{tensor} from GM "
                f"into UB/L1{at}: {len(ops)}x the read traffic{traffic}. One load kept in its buffer would do; "
                "reuse the loaded value in the kernel (bind it to a name once) or keep it live across the ops.",
                (name,)))
    return hints


def kernel_hints(compiled, timeline=None) -> list:
    """Every hint for ``compiled`` (and for its simulated ``timeline``, when given)."""
    hints = gm_round_trips(compiled) + redundant_loads(compiled)
    if timeline is not None:
        hints += idle_pipes(timeline) + idle_cores(timeline)
    return hints


__all__ = ["Hint", "kernel_hints", "gm_round_trips", "redundant_loads", "idle_pipes", "idle_cores",
           "PIPE_BUSY_BELOW", "CORES_USED_BELOW"]
