"""Compile work grows linearly with the number of ops in a kernel.

The measure does not depend on the machine or its load: the number of Python lines each pypto
function executes while a kernel compiles and its pass snapshots render their text and DOT
(``sys.settrace``, pypto's own frames only), for a kernel of ``N`` ops and the same kernel of
``4 * N`` ops. A function doing constant work per op
runs its lines about 4 times as often; one that rescans every earlier op, leaf or group (a
quadratic walk) about 16 times. Each function must stay within ``RATIO`` of its count at ``N``,
plus a small allowance for functions that run only a handful of lines.

The kernels are the shapes big kernels take: a straight chain in a ``pypto.loop`` body, leaves
separated by cross-tile reductions that each also read the input (fan-in), many assembles into
one output, many loops one after another, and a chain of matmuls (cube leaves).
"""

from __future__ import annotations

import collections
import os
import sys

import pytest
import torch

import pypto

try:
    from tests.golden.helper import assert_matches
except ImportError:  # run from inside tests/
    from golden.helper import assert_matches

FP32 = pypto.DT_FP32
D = pypto.DYNAMIC
N = 20  # ops in the small kernel; the large one has 4 * N (N divisible by 10 and by 4)
RATIO = 4.5
ALLOWANCE = 60  # lines: loops over a few items (dims, operands) may round up a little
PYPTO_DIR = os.path.dirname(pypto.__file__)


def _step(i, t, torch_side=False):
    """Op ``i`` of a chain: abs, *0.5, +1, sqrt in turn (values stay bounded)."""
    k = i % 4
    if k == 0:
        return t.abs() if torch_side else pypto.abs(t)
    if k == 1:
        return t * 0.5
    if k == 2:
        return t + 1.0
    return torch.sqrt(t) if torch_side else pypto.sqrt(t)


def loop_chain(n):
    """n elementwise ops on each 32-row block, in a pypto.loop body (one fused leaf)."""
    @pypto.jit
    def kernel(x: pypto.Tensor([D, 64], FP32), out: pypto.Tensor([D, 64], FP32)):
        pypto.set_vec_tile_shapes(32, 64)
        for b in pypto.loop(pypto.ceildiv(x.shape[0], 32)):
            t = x[b * 32:(b + 1) * 32, :]
            for i in range(n):
                t = _step(i, t)
            out[b * 32:(b + 1) * 32, :] = t

    def ref(x):
        t = x
        for i in range(n):
            t = _step(i, t, True)
        return t
    return kernel, ref


def reduction_leaves(n):
    """n/10 leaves, each ended by a row max spanning two tiles and each reading the input again."""
    @pypto.jit
    def kernel(x: pypto.Tensor([64, 64], FP32), out: pypto.Tensor([64, 64], FP32)):
        pypto.set_vec_tile_shapes(32, 32)
        t = x
        for j in range(n // 10):
            u = pypto.abs(x) * (1.0 + j / 64)  # a constant of its own: leaves do not dedup
            for i in range(6):
                u = _step(i + 1, u)
            t = t + u - pypto.amax(u, -1, keepdim=True)
        out[:] = t

    def ref(x):
        t = x
        for j in range(n // 10):
            u = x.abs() * (1.0 + j / 64)
            for i in range(6):
                u = _step(i + 1, u, True)
            t = t + u - u.amax(-1, keepdim=True)
        return t
    return kernel, ref


def assembles(n):
    """n/4 views of the input, each through 3 ops, assembled into one output."""
    @pypto.jit
    def kernel(x: pypto.Tensor([64, 64], FP32), out: pypto.Tensor([64, 64], FP32)):
        pypto.set_vec_tile_shapes(8, 8)
        for j in range(n // 4):
            r, c = j // 8 % 8 * 8, j % 8 * 8
            out[r:r + 8, c:c + 8] = pypto.sqrt(pypto.abs(x[r:r + 8, c:c + 8]) * (1.0 + j / 64) + 1.0)

    def ref(x):
        out = torch.zeros(64, 64)  # the kernel's output starts zeroed too; untouched blocks stay 0
        for j in range(n // 4):
            r, c = j // 8 % 8 * 8, j % 8 * 8
            out[r:r + 8, c:c + 8] = torch.sqrt(x[r:r + 8, c:c + 8].abs() * (1.0 + j / 64) + 1.0)
        return out
    return kernel, ref


def loops(n):
    """n/10 pypto.loops one after another, each 10 ops on a row block, chained through out."""
    @pypto.jit
    def kernel(x: pypto.Tensor([D, 64], FP32), out: pypto.Tensor([D, 64], FP32)):
        pypto.set_vec_tile_shapes(32, 64)
        src = x
        for j in range(n // 10):
            for b in pypto.loop(pypto.ceildiv(x.shape[0], 32)):
                t = src[b * 32:(b + 1) * 32, :]
                for i in range(9):
                    t = _step(i, t)
                out[b * 32:(b + 1) * 32, :] = t * (1.0 + j / 64)
            src = out

    def ref(x):
        t = x
        for j in range(n // 10):
            for i in range(9):
                t = _step(i, t, True)
            t = t * (1.0 + j / 64)
        return t
    return kernel, ref


def matmul_chain(n):
    """n/2 matmul + scale pairs (cube leaves through L1/L0, vector leaves between)."""
    @pypto.jit
    def kernel(x: pypto.Tensor([64, 64], FP32), w: pypto.Tensor([64, 64], FP32),
               out: pypto.Tensor([64, 64], FP32)):
        pypto.set_cube_tile_shapes([32, 32], [32, 32], [32, 32])
        pypto.set_vec_tile_shapes(32, 32)
        t = x
        for _ in range(n // 2):
            t = pypto.matmul(t, w, FP32) * 0.125
        out[:] = t

    def ref(x, w):
        t = x
        for _ in range(n // 2):
            t = (t @ w) * 0.125
        return t
    return kernel, ref


SHAPES = {"loop_chain": loop_chain, "reduction_leaves": reduction_leaves, "assembles": assembles,
          "loops": loops, "matmul_chain": matmul_chain}


def _inputs(name):
    g = torch.Generator().manual_seed(7)
    x = torch.randn(64, 64, generator=g)
    if name == "matmul_chain":
        return [x, torch.randn(64, 64, generator=g) / 8]
    return [x]


def _lines_per_function(kernel, args) -> collections.Counter:
    """Lines executed per pypto function while ``kernel`` compiles for ``args`` (nothing runs) and
    its pass snapshots render their text and DOT."""
    counts: collections.Counter = collections.Counter()

    def on_call(frame, event, arg):
        code = frame.f_code
        if not code.co_filename.startswith(PYPTO_DIR):
            return None  # torch, the standard library, the kernel body: not traced line by line
        key = f"{os.path.relpath(code.co_filename, PYPTO_DIR)}:{code.co_firstlineno} {code.co_name}"

        def on_line(frame, event, arg):
            if event == "line":
                counts[key] += 1
            return on_line
        return on_line

    previous = sys.gettrace()
    sys.settrace(on_call)
    try:
        compiled = kernel.inspect(*args)
        for snapshot in compiled.passes:  # what the lab shows: rendered on first access
            snapshot.text, snapshot.to_dot()
    finally:
        sys.settrace(previous)
    return counts


@pytest.mark.parametrize("name", list(SHAPES))
def test_compile_work_per_function_is_linear_in_ops(name):
    make = SHAPES[name]
    small = _lines_per_function(make(N)[0], _inputs(name) + [torch.zeros(64, 64)])
    kernel, ref = make(4 * N)
    args = _inputs(name) + [torch.zeros(64, 64)]
    large = _lines_per_function(kernel, args)
    over = sorted(((large[f] / max(small.get(f, 0), 1), f, small.get(f, 0), large[f]) for f in large
                   if large[f] > RATIO * small.get(f, 0) + ALLOWANCE), reverse=True)
    assert not over, f"{name}: compile work grows faster than the op count ({N} -> {4 * N} ops) in " + \
        "; ".join(f"{f} ({a} -> {b} lines, x{r:.1f})" for r, f, a, b in over[:5])
    # the grown kernel still computes the right numbers
    kernel(*args)
    assert_matches(args[-1], ref(*args[:-1]), loose=True)
