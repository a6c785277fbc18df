"""Flash-attention points: the pto-isa hand kernel (``kernels/manual/a2a3/flash_atten``, "QK
preload 4") and the pto-isa torch-JIT kernel (``demos/torch_jit/flash_atten``), one head, fp16
Q/K/V, H = D = 128, fp32 softmax and output.

Both sources launch one block per 128 query rows (cores = S0/128); inside a block the cube core
computes ``S = Q K^T`` per 128-wide K tile, the vector cores run the online softmax on it (running
row max ``m`` and sum ``l``, ``P = exp(S - m)`` cast to fp16), the cube computes ``P V`` and the
vector cores fold it into the running output (``O = O * exp(m_old - m) + P V``), dividing by ``l``
after the last tile. Here the same structure is a `pypto.loop` over the query blocks whose body
processes every K/V tile of its block:

* variant (a), the registered cases: the K/V tiles unrolled (a Python ``for``), the running
  ``m``, ``l`` and ``O`` carried as values from one tile to the next, as the hand kernel keeps
  them in its on-chip buffers;
* variant (b), `build_loop_variant`: a `pypto.loop` over the K/V tiles, the running state in
  local tensors each iteration reads and rewrites (upstream's GLM attention style).

The hand kernel's software pipeline (QK of tile t+4 issued before PV of tile t) is a schedule,
not a different computation: here the dependency engine decides what overlaps, and a block's
tasks are not pinned to one cube core and its two vector cores (the scheduler places each task).
Both sources step the softmax over TILE_S1 = 256 columns (two 128-wide QK sub-tiles) by default;
the registered cases step over 128 as the points state CUBE_S1 = 128, and
``unrolled_kernel(..., tile_s1=256)`` is the 256-wide form.
"""

from __future__ import annotations

import math

import torch

import pypto

from ..cases import case
from ..replay import timing_only

HAND = "zouzias/pto-isa-mirror (mirror of gitcode cann/pto-isa):kernels/manual/a2a3/flash_atten/README.md"
JIT = "https://pto-isa.gitcode.com/demos/torch_jit/flash_atten"

HEAD = 128  # H = D of every published point
CUBE_S0 = 128  # query rows per block (one block per cube core)
CUBE_S1 = 128  # K/V rows per tile
VEC_ROWS = CUBE_S0 // 2  # the sources split a block's rows over the two vector cores of a cube


def _check_sizes(s0: int, s1: int, d: int, tile_s1: int = CUBE_S1) -> None:
    if tile_s1 not in (CUBE_S1, 2 * CUBE_S1):
        raise pypto.ShapeError("flash_attention: 'tile_s1' must be 128 or 256 (the sources' TILE_S1)",
                               expected="128 or 256", got=repr(tile_s1), param="tile_s1")
    for name, value, step in (("s0", s0, CUBE_S0), ("s1", s1, tile_s1)):
        if not isinstance(value, int) or value <= 0 or value % step:
            raise pypto.ShapeError(f"flash_attention: '{name}' must be a positive multiple of {step}",
                                   expected=f"a multiple of {step}", got=repr(value), param=name)
    if not isinstance(d, int) or d <= 0 or d % 16:
        raise pypto.ShapeError("flash_attention: 'd' must be a positive multiple of 16",
                               expected="a multiple of 16", got=repr(d), param="d")


def unrolled_kernel(s0: int, s1: int, d: int = HEAD, dtype=pypto.DT_FP16, tile_s1: int = CUBE_S1):
    """Variant (a): a jit kernel ``(q [s0,d], k [s1,d], v [s1,d], o [s0,d] fp32)``; a `pypto.loop`
    over the s0/128 query blocks, the s1/tile_s1 K/V tiles of a block unrolled inside it.

    ``tile_s1=256`` is the JIT source's TILE_S1: the softmax steps over 256 columns, the QK matmul
    of a step is two 128-wide cube tiles and its PV matmul one tile of two 128-deep K steps."""
    _check_sizes(s0, s1, d, tile_s1)
    blocks, tiles = s0 // CUBE_S0, s1 // tile_s1
    scale = 1.0 / math.sqrt(d)

    @pypto.jit
    def flash_attention(q: pypto.Tensor([s0, d], dtype), k: pypto.Tensor([s1, d], dtype),
                        v: pypto.Tensor([s1, d], dtype), o: pypto.Tensor([s0, d], pypto.DT_FP32)):
        pypto.set_cube_tile_shapes(*_cube_tiles(d, tile_s1))
        pypto.set_vec_tile_shapes(VEC_ROWS, tile_s1)
        for b in pypto.loop(blocks, name="LOOP_s0", idx_name="b"):
            qb = pypto.view(q, [CUBE_S0, d], [b * CUBE_S0, 0])
            m = l = acc = None
            for t in range(tiles):
                kt = pypto.view(k, [tile_s1, d], [t * tile_s1, 0])
                vt = pypto.view(v, [tile_s1, d], [t * tile_s1, 0])
                s = pypto.mul(pypto.matmul(qb, kt, pypto.DT_FP32, b_trans=True), scale)
                tile_max = pypto.amax(s, -1, keepdim=True)
                m_new = tile_max if m is None else pypto.maximum(m, tile_max)
                p = pypto.exp(pypto.sub(s, m_new))
                tile_sum = pypto.sum(p, -1, keepdim=True)
                pv = pypto.matmul(pypto.cast(p, dtype), vt, pypto.DT_FP32)
                if m is None:
                    l, acc = tile_sum, pv
                else:
                    alpha = pypto.exp(pypto.sub(m, m_new))
                    l = pypto.add(pypto.mul(l, alpha), tile_sum)
                    acc = pypto.add(pypto.mul(acc, alpha), pv)
                m = m_new
            pypto.assemble(pypto.div(acc, l), [b * CUBE_S0, 0], o)

    return flash_attention


def loop_kernel(s0: int, s1: int, d: int = HEAD, dtype=pypto.DT_FP16):
    """Variant (b): as `unrolled_kernel`, with a `pypto.loop` over the K/V tiles; the running max,
    sum and output live in local tensors written by each iteration."""
    _check_sizes(s0, s1, d)
    blocks, tiles = s0 // CUBE_S0, s1 // CUBE_S1
    scale = 1.0 / math.sqrt(d)

    @pypto.jit
    def flash_attention_loop(q: pypto.Tensor([s0, d], dtype), k: pypto.Tensor([s1, d], dtype),
                             v: pypto.Tensor([s1, d], dtype), o: pypto.Tensor([s0, d], pypto.DT_FP32)):
        pypto.set_cube_tile_shapes(*_cube_tiles(d))
        pypto.set_vec_tile_shapes(VEC_ROWS, CUBE_S1)
        for b in pypto.loop(blocks, name="LOOP_s0", idx_name="b"):
            qb = pypto.view(q, [CUBE_S0, d], [b * CUBE_S0, 0])
            m = pypto.tensor([CUBE_S0, 1], pypto.DT_FP32, "m")
            l = pypto.tensor([CUBE_S0, 1], pypto.DT_FP32, "l")
            acc = pypto.tensor([CUBE_S0, d], pypto.DT_FP32, "acc")
            for t in pypto.loop(tiles, name="LOOP_s1", idx_name="t"):
                kt = pypto.view(k, [CUBE_S1, d], [t * CUBE_S1, 0])
                vt = pypto.view(v, [CUBE_S1, d], [t * CUBE_S1, 0])
                s = pypto.mul(pypto.matmul(qb, kt, pypto.DT_FP32, b_trans=True), scale)
                tile_max = pypto.amax(s, -1, keepdim=True)
                if pypto.is_loop_begin(t):
                    p = pypto.exp(pypto.sub(s, tile_max))
                    l[:] = pypto.sum(p, -1, keepdim=True)
                    acc[:] = pypto.matmul(pypto.cast(p, dtype), vt, pypto.DT_FP32)
                    m[:] = tile_max
                else:
                    m_old = m[:, :]
                    m_new = pypto.maximum(m_old, tile_max)
                    p = pypto.exp(pypto.sub(s, m_new))
                    alpha = pypto.exp(pypto.sub(m_old, m_new))
                    l[:] = pypto.add(pypto.mul(l[:, :], alpha), pypto.sum(p, -1, keepdim=True))
                    pv = pypto.matmul(pypto.cast(p, dtype), vt, pypto.DT_FP32)
                    acc[:] = pypto.add(pypto.mul(acc[:, :], alpha), pv)
                    m[:] = m_new
            pypto.assemble(pypto.div(acc[:, :], l[:, :]), [b * CUBE_S0, 0], o)

    return flash_attention_loop


def _cube_tiles(d: int, tile_s1: int = CUBE_S1) -> tuple:
    # m = the query block; k = the head dim (QK) or the K/V step (PV), in 128-deep L0 steps kept in
    # one task (the sources accumulate sub-tiles in L0C); n = 128 columns of S (QK) or the head dim
    # (PV): one cube tile per 128x128 output, as the sources' pto_macro_matmul per CUBE_S1 sub-tile
    k_l0 = min(d, CUBE_S1)
    return [CUBE_S0, CUBE_S0], [k_l0, max(d, tile_s1)], [max(d, CUBE_S1), max(d, CUBE_S1)]


def _inputs(s0: int, s1: int, d: int):
    # timing only: the control flow reads no element, so the contents do not matter
    q = torch.empty(s0, d, dtype=torch.float16)
    k = torch.empty(s1, d, dtype=torch.float16)
    v = torch.empty(s1, d, dtype=torch.float16)
    o = torch.empty(s0, d, dtype=torch.float32)
    return q, k, v, o


def build_unrolled(s0: int, s1: int, d: int = HEAD, tile_s1: int = CUBE_S1):
    """The timing-only Simulation of variant (a) at these sizes."""
    return timing_only(unrolled_kernel(s0, s1, d, tile_s1=tile_s1), *_inputs(s0, s1, d))


def build_loop_variant(s0: int, s1: int, d: int = HEAD):
    """The timing-only Simulation of variant (b) at these sizes (not a registered case: the lead
    reports it next to variant (a))."""
    return timing_only(loop_kernel(s0, s1, d), *_inputs(s0, s1, d))


def _builder(s0: int, s1: int):
    return lambda: build_unrolled(s0, s1)


_HOW = ("variant (a): pypto.loop over S0/128 query blocks, the S1/128 K/V tiles unrolled inside "
        "(S = QK^T fp32, running max/sum, P = exp(S - m) cast to fp16, O = O*alpha + PV, O/l), "
        "vector tiles 64x128 (the two vector cores of a cube split the rows), one cube tile per "
        "matmul; {extra}")

_HAND_POINTS = {  # (S0, S1): published us, README 'Total task time (us)', onboard
    (128, 1024): 42.08, (128, 2048): 51.44, (128, 4096): 43.8, (128, 8192): 74.54,
    (512, 1024): 41.721, (512, 2048): 55.441, (512, 4096): 46.621, (512, 8192): 86.322,
}
_JIT_POINTS = {  # (S0, S1): published us, mean of 50 timed iterations (device time), 910B2
    (128, 1024): 19.2, (128, 2048): 23.42, (128, 4096): 38.317, (128, 8192): 68.778,
    (256, 1024): 18.604, (256, 2048): 23.939, (256, 4096): 39.838, (256, 8192): 71.212,
    (512, 1024): 18.603, (512, 2048): 24.787, (512, 4096): 41.475, (512, 8192): 74.903,
}

for (_s0, _s1), _us in _HAND_POINTS.items():
    case(id=f"ptoisa_fa_s0_{_s0}_s1_{_s1}", family="flash_attention", kind="mixed", published_us=_us,
         source=HAND, build=_builder(_s0, _s1),
         how=_HOW.format(extra="the source's QK preload of 4 tiles is left to the scheduler; the "
                               "README does not state TILE_S1 (its case generator defaults to 256)"))

for (_s0, _s1), _us in _JIT_POINTS.items():
    case(id=f"ptoisa_jitfa_s0_{_s0}_s1_{_s1}", family="flash_attention", kind="mixed", published_us=_us,
         source=JIT, build=_builder(_s0, _s1),
         how=_HOW.format(extra="the source's softmax runs on 256-wide tiles (TILE_S1=256, two "
                               "128-wide QK matmuls each); here every step is 128 wide"))
