"""Steps whose results only the lab's memory view reads: run when the view is read, not in the call.

After `copy_forward.py` a reshape's copy into a workspace is read by no later step (its readers
read the source), yet it still runs so that the memory view and pass verify see what the program
wrote there. Flash attention copies its key and value blocks once per query block that way: at
S=4096 two workspaces of 128 MiB written at every call (and, above the kernel's workspace budget,
freshly allocated ones, so every page of them faults in first).

The cached call's replay (replay.py) leaves such a step out and the executor runs it when the
last call's memory is first read (`LoweredExecutor.last_memory`), in program order among
themselves, on the same tensors. A step qualifies when:

* its leaf only moves data (``moves_only``: a reshape), so it cannot fail or compute anything;
* it writes workspaces only (never a caller's tensor: the caller sees those at once);
* no step after it that still runs in the call reads or writes a storage it writes (nobody
  waits for its result, and nobody writes there before it would have), or writes a storage it
  reads (its operands hold at the end of the call what they held at its turn).

What it reads at the view's read is what the call left there; a caller's tensor it reads (the
key blocks are the caller's ``k``) is read as it is then, as the memory view shows that tensor
itself. The tasks, the plan's steps and so the simulated times are unchanged.
"""

from __future__ import annotations


def view_only_steps(steps, n_params: int, moves_only) -> frozenset:
    """Positions in ``steps`` of the steps that may run when the memory view is read (see the
    module docstring); ``moves_only(step)`` tells whether a step's leaf only moves data."""
    later_reads: set = set()  # storages read / written by the kept steps after the current one
    later_writes: set = set()
    out = set()
    for n in range(len(steps) - 1, -1, -1):
        s = steps[n]
        reads = {v[1] for v in s.ins}
        writes = {v[1] for v in s.outs}
        if writes and min(writes) >= n_params and moves_only(s) and not (writes & later_reads) \
                and not (writes & later_writes) and not (reads & later_writes):
            out.add(n)
            continue
        later_reads |= reads
        later_writes |= writes
    return frozenset(out)


__all__ = ["view_only_steps"]
