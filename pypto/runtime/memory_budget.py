"""The memory budget: a call's large host allocations are checked before they are made.

A call allocates host memory for dense copies of strided arguments (a stride-0 ``expand`` of one
row to 10^9 rows is 256 GB once dense) and for its workspace (``pypto.full([2**20, 2**20])`` is
4 TiB). Asking torch for such a block ends in its ``RuntimeError`` at best and, under memory
overcommit, can wake the OOM killer instead. `require_fits` refuses it first, with a
`MemoryBudgetError` naming what needed the memory and how many bytes.

The budget is ``runtime_options["memory_budget_mb"]`` (MiB) when set, else the memory the machine
has available at that moment (read only for blocks of at least `SMALL_BYTES`, so ordinary calls
never ask the system).
"""

from __future__ import annotations

import os

from ..errors import MemoryBudgetError

OPTION = "runtime_options['memory_budget_mb']"
SMALL_BYTES = 64 << 20  # below this, only an explicit budget is checked


def available_bytes() -> int | None:
    """The memory the machine can give now (Linux ``MemAvailable``, else the free pages), or None
    when the system does not say."""
    try:
        with open("/proc/meminfo", encoding="ascii") as f:  # Linux: includes reclaimable cache
            for line in f:
                if line.startswith("MemAvailable:"):
                    return int(line.split()[1]) * 1024
    except (OSError, ValueError):
        pass
    try:
        return os.sysconf("SC_AVPHYS_PAGES") * os.sysconf("SC_PAGE_SIZE")
    except (AttributeError, ValueError, OSError):
        return None


def budget_bytes(opts) -> tuple[int | None, str]:
    """(bytes allowed, where that number comes from) under the resolved options ``opts``."""
    mb = int(opts.get("runtime", "memory_budget_mb")) if opts is not None else 0
    if mb > 0:
        return mb << 20, f"{OPTION} = {mb}"
    return available_bytes(), f"the machine's available memory ({OPTION} = 0)"


def require_fits(nbytes: int, what: str, opts, *, param: str | None = None, loc=None) -> None:
    """Refuse an allocation of ``nbytes`` for ``what`` (``"a dense copy of tensor argument 'x'"``)
    that the budget does not allow; nothing has been allocated yet."""
    mb = int(opts.get("runtime", "memory_budget_mb")) if opts is not None else 0
    if nbytes < SMALL_BYTES and mb == 0:
        return
    limit, source = budget_bytes(opts)
    if limit is None or nbytes <= limit:
        return
    raise MemoryBudgetError(
        f"{what} needs {nbytes:,} bytes, more than the memory budget allows (refused before allocating)",
        expected=f"at most {limit:,} bytes ({source})", got=f"{nbytes:,} bytes",
        param=param or OPTION, loc=loc,
        hint=f"pass smaller or contiguous tensors, or raise {OPTION} (in MiB) if the machine has the memory")
