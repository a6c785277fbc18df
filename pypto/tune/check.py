"""Checking a compiled version's numbers against the baseline's.

Where the baseline runs, a version's outputs are compared with its outputs at once (`same`). A
Dask worker does not run the baseline: it runs each version it compiles on the sweep's seeded
inputs and sends back what that run wrote (`Outputs`); the sweep's driver, which runs the
baseline once for all workers, compares them (`compare`). The check moves; it is never skipped.
"""

from __future__ import annotations

import hashlib
from dataclasses import dataclass, field

# [rtol, atol] per dtype family when comparing with the reference configuration: another tile
# shape may sum in another order, which moves the last bits, never more
_TOLERANCE = {"fp32": (1e-4, 1e-4), "half": (2e-2, 2e-2)}


@dataclass
class Outputs:
    """What one run of a compiled version wrote, for another process to check: the arguments it
    changed (index -> value), the tensors it returned, and a digest of the seeded inputs it ran
    on (the checking process compares that first: other inputs, other numbers). ``worker``,
    ``part`` and ``call`` say which version on which process this is."""

    worker: str
    part: str
    call: int
    inputs: str
    changed: dict = field(default_factory=dict)
    returned: list = field(default_factory=list)

    @classmethod
    def of_run(cls, worker: str, part: str, call: int, args: list, pristine: list, inputs: str,
               result) -> "Outputs":
        """The outputs of a run on ``args`` (clones of ``pristine``, the seeded inputs, whose
        `digest` is ``inputs``) that returned ``result``."""
        import torch

        changed = {i: a for i, (a, p) in enumerate(zip(args, pristine)) if not torch.equal(a, p)}
        return cls(worker, part, call, inputs, changed, returned(result, args))


def compare(outputs: Outputs, reference: tuple, pristine: list, inputs: str) -> tuple[bool | None, str]:
    """(whether ``outputs`` hold the baseline's numbers, why not if they could not be compared):
    ``reference`` is `Evaluator.reference`'s (written indices, their values, returned tensors) on
    the same call shape, ``pristine`` the seeded inputs there and ``inputs`` their `digest`."""
    if outputs.inputs != inputs:
        return None, ("the worker's seeded inputs differ from the driver's (another torch version or "
                      "machine?): its numbers cannot be compared with the baseline's")
    written, want, want_returned = reference
    got = [outputs.changed.get(i, pristine[i]) for i in written]
    return same(got + list(outputs.returned), want + want_returned), ""


def digest(tensors: list) -> str:
    """A hash of the tensors' shapes, dtypes and bytes."""
    import torch

    h = hashlib.blake2b(digest_size=16)
    for t in tensors:
        h.update(f"{tuple(t.shape)}:{t.dtype};".encode())
        h.update(t.detach().contiguous().reshape(-1).view(torch.uint8).numpy().tobytes())
    return h.hexdigest()


def returned(result, args) -> list:
    """The tensors ``result`` holds, less the arguments themselves (``out.copy_(...)`` returns
    ``out``: already compared as a written argument)."""
    import torch

    items = [result] if isinstance(result, torch.Tensor) else list(result) if isinstance(result, (list, tuple)) else []
    return [r for r in items if isinstance(r, torch.Tensor) and not any(r is a for a in args)]


def same(got: list, want: list) -> bool:
    """Exactly equal (the common case, and cheap), else within the dtype's tolerance."""
    import torch

    if len(got) != len(want):
        return False
    for g, w in zip(got, want):
        if g.shape != w.shape or g.dtype != w.dtype:
            return False
        if torch.equal(g, w):
            continue
        if g.dtype.is_floating_point:
            rtol, atol = _TOLERANCE["half" if g.dtype in (torch.float16, torch.bfloat16) else "fp32"]
            if not torch.allclose(g.float(), w.float(), rtol=rtol, atol=atol, equal_nan=True):
                return False
        elif not torch.equal(g, w):
            return False
    return True
