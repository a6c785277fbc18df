"""Running one kernel two ways on the same inputs and comparing the numbers.

*Batched* is the default runtime: a call's tasks are levelled by their dependencies and each level
runs as one batched leaf call per call site. *Serial* (``debug_options={"serial_execution": True}``)
runs the tasks one at a time, tile by tile, in program order: the reference the batched path must
reproduce. `run_both` runs a kernel both ways on fresh copies of the same arguments and checks, from
the steps each call executed, that the serial call really ran one tile per step (so a test cannot
compare the batched path with itself).
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import torch

import pypto
from tests.golden.helper import assert_matches

SENTINEL = -777.0  # what outputs hold before a call: an element the kernel never writes keeps it


@dataclass
class ModeRun:
    """One call: every tensor argument after it, what the kernel returned, the steps it ran."""

    args: list
    returned: object
    steps: list


def _fresh(args):
    return [a.clone() if isinstance(a, torch.Tensor) else a for a in args]


def run(kernel, args, *, serial: bool) -> ModeRun:
    """Call ``kernel`` on copies of ``args``, serially or batched (a call-time debug option: both
    ways run the same compiled version)."""
    args = _fresh(args)
    with pypto.options(debug_options={"serial_execution": serial}):
        returned = kernel(*args)
    steps = list(kernel.last_run.compiled.executor.last[1].steps)
    return ModeRun(args, returned, steps)


def _tensors(run_: ModeRun) -> list:
    out = [a for a in run_.args if isinstance(a, torch.Tensor)]
    ret = run_.returned
    if ret is not None:
        out += list(ret) if isinstance(ret, (tuple, list)) else [ret]
    return out


def assert_same(batched: ModeRun, serial: ModeRun, tol=None) -> None:
    """Every tensor argument and result of the two calls equal: exactly, or within ``tol`` =
    (rtol, atol) where a test says why float rounding may differ."""
    rtol, atol = tol or (0.0, 0.0)
    got, want = _tensors(batched), _tensors(serial)
    assert len(got) == len(want)
    for k, (g, w) in enumerate(zip(got, want)):
        torch.testing.assert_close(g, w, rtol=rtol, atol=atol, equal_nan=True,
                                   msg=lambda m, k=k: f"batched != serial (tensor {k}): {m}")


def run_both(kernel, args, *, tol=None, batches: bool = True) -> ModeRun:
    """Run ``kernel`` batched and serially on the same ``args``; assert the serial call ran one
    tile per step, the batched one fewer steps (when ``batches``), and the same numbers. Returns
    the batched run."""
    serial = run(kernel, args, serial=True)
    batched = run(kernel, args, serial=False)
    assert all(math.prod(s.B) == 1 and s.tiles == 1 and len(s.tasks) == 1 for s in serial.steps), \
        "serial_execution ran a step of more than one tile"
    fewer = len(batched.steps) < len(serial.steps)
    assert fewer if batches else len(batched.steps) <= len(serial.steps), \
        f"{len(batched.steps)} batched steps vs {len(serial.steps)} serial (batching expected: {batches})"
    assert_same(batched, serial, tol)
    return batched


def check_both(kernel, args, want: dict, *, tol=None, loose: bool = False, batches: bool = True) -> ModeRun:
    """`run_both`, then the batched results against torch: ``want`` maps an argument index (or
    ``"ret"`` / ``("ret", k)`` for returned tensors) to the expected tensor."""
    b = run_both(kernel, args, tol=tol, batches=batches)
    for where, expected in want.items():
        if where == "ret":
            got = b.returned
        elif isinstance(where, tuple):
            got = b.returned[where[1]]
        else:
            got = b.args[where]
        assert_matches(got, expected, loose=loose, what=f"argument {where}")
    return b


def filled(*shape, dtype=torch.float32, value=SENTINEL) -> torch.Tensor:
    """An output buffer holding ``value`` everywhere."""
    return torch.full(shape, value, dtype=dtype)


def rand(*shape, seed=0, dtype=torch.float32, scale=1.0) -> torch.Tensor:
    g = torch.Generator().manual_seed(seed)
    return (torch.randn(*shape, generator=g, dtype=torch.float32) * scale).to(dtype)
