"""The benchmark kernels, written the way the seeds and upstream write them: a ``pypto.loop`` over
a batch or over row blocks, views inside, results assembled into the output.

Each ``make_*`` returns ``(kernel, args, torch_fn)``: the pypto kernel, its arguments (the last
ones are outputs written in place) and the torch eager computation of the same result, so the
benchmark can time both side by side and check that they agree.
"""
from __future__ import annotations

import importlib.util
import pathlib

import torch

import pypto

FP32 = pypto.DT_FP32
ROOT = pathlib.Path(__file__).resolve().parent.parent


def _example(name):
    spec = importlib.util.spec_from_file_location(f"bench_example_{name}", ROOT / "examples" / f"{name}.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def softmax_batch_loop(shape=(32, 32, 1, 256), tile=(1, 4, 1, 64)):
    """Softmax over the last dim, one ``pypto.loop`` iteration per batch row ``x[i:i+1, ...]``."""
    b, h, s, d = shape

    @pypto.jit
    def softmax(x: pypto.Tensor([pypto.DYNAMIC, h, s, d], FP32), out: pypto.Tensor([pypto.DYNAMIC, h, s, d], FP32)):
        pypto.set_vec_tile_shapes(*tile)
        for i in pypto.loop(x.shape[0]):
            out[i:i + 1, :, :, :] = pypto.softmax(x[i:i + 1, :, :, :], -1)

    x = torch.randn(shape, generator=torch.Generator().manual_seed(0))
    out = torch.empty(shape)
    return softmax, (x, out), lambda: torch.softmax(x, -1)


def row_block_loop(op: str, rows=512, cols=1024, block=32, tile=8):
    """``op`` (softmax, add_mul or rms_norm) over [rows, cols], one loop iteration per row block."""
    g = torch.Generator().manual_seed(1)
    x, y, gamma = torch.randn(rows, cols, generator=g), torch.randn(rows, cols, generator=g), \
        torch.rand(cols, generator=g) + 0.5
    out = torch.empty(rows, cols)
    T = pypto.Tensor([pypto.DYNAMIC, cols], FP32)
    eps = 1e-6

    if op == "softmax":
        @pypto.jit
        def kernel(x: T, out: T):
            pypto.set_vec_tile_shapes(tile, cols)
            for b in pypto.loop(pypto.ceildiv(x.shape[0], block)):
                r = slice(b * block, (b + 1) * block)
                out[r, :] = pypto.softmax(x[r, :], -1)
        ref = torch.empty(rows, cols)
        return kernel, (x, out), lambda: torch.softmax(x, -1, out=ref)
    if op == "add_mul":
        @pypto.jit
        def kernel(x: T, y: T, out: T):
            pypto.set_vec_tile_shapes(tile, cols)
            for b in pypto.loop(pypto.ceildiv(x.shape[0], block)):
                r = slice(b * block, (b + 1) * block)
                out[r, :] = (x[r, :] + y[r, :]) * y[r, :]
        tmp, ref = torch.empty(rows, cols), torch.empty(rows, cols)
        return kernel, (x, y, out), lambda: torch.mul(torch.add(x, y, out=tmp), y, out=ref)
    if op == "rms_norm":
        @pypto.jit
        def kernel(x: T, gamma: pypto.Tensor([1, cols], FP32), out: T):
            pypto.set_vec_tile_shapes(tile, cols)
            for b in pypto.loop(pypto.ceildiv(x.shape[0], block)):
                r = slice(b * block, (b + 1) * block)
                xb = x[r, :]
                ms = pypto.sum(xb * xb, -1, keepdim=True) * (1.0 / cols)
                out[r, :] = xb * pypto.rsqrt(ms + eps) * gamma
        g2 = gamma.reshape(1, cols)
        sq, ms, ref = torch.empty(rows, cols), torch.empty(rows, 1), torch.empty(rows, cols)

        def rms_ref():  # the same ops, each into a buffer allocated once
            torch.sum(torch.mul(x, x, out=sq), -1, keepdim=True, out=ms)
            torch.rsqrt(ms.mul_(1.0 / cols).add_(eps), out=ms)
            return torch.mul(torch.mul(x, ms, out=ref), g2, out=ref)
        return kernel, (x, g2, out), rms_ref
    raise ValueError(op)


def flash_attention(batch=1, seq=1024):
    """The ``examples/flash_attention.py`` kernel (D=64, query blocks of 32, KV blocks of 64)."""
    ex = _example("flash_attention")
    g = torch.Generator().manual_seed(1)
    q, k, v = (torch.randn(batch, seq, ex.D, generator=g) for _ in range(3))
    out = torch.zeros(batch, seq, ex.D)
    return ex.flash_attention, (q, k, v, out), lambda: ex.reference(q, k, v)


def moe_routing(tokens=4096):
    """The ``examples/moe_routing.py`` kernel: gate matmul, softmax, top-k, renormalise."""
    ex = _example("moe_routing")
    g = torch.Generator().manual_seed(3)
    x, w = torch.randn(tokens, ex.H, generator=g), torch.randn(ex.H, ex.E, generator=g)
    weights, experts = torch.zeros(tokens, ex.K), torch.zeros(tokens, ex.K, dtype=torch.int32)

    def ref():
        top, idx = torch.topk(torch.softmax(x @ w, -1), ex.K, -1)
        return top / top.sum(-1, keepdim=True), idx.int()
    return ex.route, (x, w, weights, experts), ref


def matmul(m=1024, k=1024, n=1024):
    """``out = a @ b`` with cube tiles m (128, 128), k (64, 256), n (128, 128)."""
    g = torch.Generator().manual_seed(2)
    a, b = torch.randn(m, k, generator=g), torch.randn(k, n, generator=g)
    out = torch.empty(m, n)

    @pypto.jit
    def kernel(a: pypto.Tensor([m, k], FP32), b: pypto.Tensor([k, n], FP32), out: pypto.Tensor([m, n], FP32)):
        pypto.set_cube_tile_shapes([128, 128], [64, 256], [128, 128])
        out[:] = pypto.matmul(a, b, FP32)
    return kernel, (a, b, out), lambda: a @ b


def matmul_loop(dtype=torch.bfloat16, m=1024, k=1024, n=1024, block=128):
    """``out = a @ b`` in ``dtype`` as users write it: a ``pypto.loop`` over ``block``-row blocks, each
    a cube matmul accumulating in fp32 and rounding once. Reference: torch's fp32 matmul of the same
    sizes into a preallocated ``out`` (torch's own bf16 CPU matmul is several times slower)."""
    pdt = {torch.bfloat16: pypto.DT_BF16, torch.float16: pypto.DT_FP16}[dtype]
    g = torch.Generator().manual_seed(2)
    a, b = (torch.randn(m, k, generator=g) / 8).to(dtype), (torch.randn(k, n, generator=g) / 8).to(dtype)
    out = torch.empty(m, n, dtype=dtype)
    af, bf, ref = a.float(), b.float(), torch.empty(m, n)

    @pypto.jit
    def kernel(a: pypto.Tensor([pypto.DYNAMIC, k], pdt), b: pypto.Tensor([k, n], pdt),
               out: pypto.Tensor([pypto.DYNAMIC, n], pdt)):
        pypto.set_cube_tile_shapes([128, 128], [64, 256], [128, 128])
        for i in pypto.loop(pypto.ceildiv(a.shape[0], block)):
            r = slice(i * block, (i + 1) * block)
            out[r, :] = pypto.matmul(a[r, :], b, pdt)
    return kernel, (a, b, out), lambda: torch.matmul(af, bf, out=ref)


def ffn_bf16(batch=4096):
    """The ``examples/ffn.py`` kernel (bf16 matmul -> SiLU -> bf16 matmul) on ``batch`` rows.
    Reference: the same computation in fp32 torch (upcast once, fp32 matmuls)."""
    ex = _example("ffn")
    g = torch.Generator().manual_seed(0)
    x = torch.randn(batch, ex.H, generator=g).bfloat16()
    w1 = (torch.randn(ex.H, ex.F, generator=g) / ex.H ** 0.5).bfloat16()
    w2 = (torch.randn(ex.F, ex.H, generator=g) / ex.F ** 0.5).bfloat16()
    out = torch.zeros(batch, ex.H, dtype=torch.bfloat16)
    xf, w1f, w2f = x.float(), w1.float(), w2.float()
    h, act, y = torch.empty(batch, ex.F), torch.empty(batch, ex.F), torch.empty(batch, ex.H)

    def ref():
        torch.matmul(xf, w1f, out=h)
        torch.mul(h, torch.sigmoid(h, out=act), out=act)
        return torch.matmul(act, w2f, out=y)
    return ex.ffn, (x, w1, w2, out), ref


def one_tile():
    """``out = x + y`` on one [32, 32] tile: the fixed cost of a cached call."""
    g = torch.Generator().manual_seed(4)
    x, y, out = torch.randn(32, 32, generator=g), torch.randn(32, 32, generator=g), torch.empty(32, 32)

    @pypto.jit
    def kernel(x: pypto.Tensor([32, 32], FP32), y: pypto.Tensor([32, 32], FP32),
               out: pypto.Tensor([32, 32], FP32)):
        pypto.set_vec_tile_shapes(32, 32)
        out[:] = x + y
    ref = torch.empty(32, 32)
    return kernel, (x, y, out), lambda: torch.add(x, y, out=ref)


STEPS = (pypto.abs, lambda t: t * 0.5, lambda t: t + 1.0, pypto.sqrt)  # bounded values, one op each


def chain(n_ops: int, rows=64, cols=64):
    """A fresh kernel of ``n_ops`` elementwise ops (for compile time): x -> op -> op -> ... -> out."""
    @pypto.jit
    def kernel(x: pypto.Tensor([rows, cols], FP32), out: pypto.Tensor([rows, cols], FP32)):
        pypto.set_vec_tile_shapes(32, cols)
        t = x
        for i in range(n_ops):  # a Python loop: unrolled at trace time into n_ops ops
            t = STEPS[i % len(STEPS)](t)
        out[:] = t
    x = torch.randn(rows, cols)
    return kernel, (x, torch.empty(rows, cols))


def chain_in_loop(n_ops: int, rows=64, cols=64, block=32):
    """``chain`` as the body of a ``pypto.loop`` over row blocks (for compile time)."""
    @pypto.jit
    def kernel(x: pypto.Tensor([pypto.DYNAMIC, cols], FP32), out: pypto.Tensor([pypto.DYNAMIC, cols], FP32)):
        pypto.set_vec_tile_shapes(block, cols)
        for b in pypto.loop(pypto.ceildiv(x.shape[0], block)):
            t = x[b * block:(b + 1) * block, :]
            for i in range(n_ops):
                t = STEPS[i % len(STEPS)](t)
            out[b * block:(b + 1) * block, :] = t
    return kernel, (torch.randn(rows, cols), torch.empty(rows, cols))


def reduction_leaves(n_ops: int, rows=64, cols=64):
    """``n_ops`` ops in ``n_ops // 10`` leaves (for compile time): each leaf ends in a row max that
    spans two tiles (so the next ops cannot fuse with it) and scales by a constant of its own (so
    leaves do not dedup)."""
    @pypto.jit
    def kernel(x: pypto.Tensor([rows, cols], FP32), out: pypto.Tensor([rows, cols], FP32)):
        pypto.set_vec_tile_shapes(32, cols // 2)
        t = x
        for j in range(n_ops // 10):
            for i in range(8):
                t = STEPS[i % len(STEPS)](t)
            t = t * (1.0 + j / 64)
            t = t - pypto.amax(t, -1, keepdim=True)
        out[:] = t
    return kernel, (torch.randn(rows, cols), torch.empty(rows, cols))


def softmax_whole(rows, cols, tile_rows=16):
    """Straight-line softmax over [rows, cols] (for peak memory)."""
    @pypto.jit
    def kernel(x: pypto.Tensor([pypto.DYNAMIC, cols], FP32), out: pypto.Tensor([pypto.DYNAMIC, cols], FP32)):
        pypto.set_vec_tile_shapes(tile_rows, cols)
        out[:] = pypto.softmax(x, -1)
    return kernel


def softmax_composed(rows, cols, tile_rows=16):
    """Straight-line softmax spelled out: amax, sub, exp, sum, div (for peak memory)."""
    @pypto.jit
    def kernel(x: pypto.Tensor([pypto.DYNAMIC, cols], FP32), out: pypto.Tensor([pypto.DYNAMIC, cols], FP32)):
        pypto.set_vec_tile_shapes(tile_rows, cols)
        e = pypto.exp(x - pypto.amax(x, -1, keepdim=True))
        out[:] = e / pypto.sum(e, -1, keepdim=True)
    return kernel
