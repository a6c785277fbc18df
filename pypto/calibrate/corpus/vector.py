"""Vector-unit points: the pto-isa TopK (on-board task durations, the cleanest vector points),
device copies and broadcast multiplies (HBM bandwidth), a fused Sinkhorn, a quantize plateau, a
row norm, and host-timed launch floors (a tiny add, a GELU, a small broadcast multiply).

Each kernel is written as a PyPTO user would write the source's computation: a `pypto.loop`
over row blocks and vector tiles that fit UB (192 KB) with room for a second buffer. The kernel
factories take the sizes, so the tests run the same kernels small against torch. A bandwidth
figure is turned into kernel microseconds as bytes moved / bandwidth (1 GB/s = 1e3 bytes/us).

Families: ``vector_compute`` (TopK, Sinkhorn: the vector pipe bounds them), ``vector_bandwidth``
(copies, broadcast multiply, quantize, row norm: bytes over HBM bandwidth bound them) and
``launch_floor`` (host-timed figures of tiny kernels: launch and synchronisation, not the
kernel, make the figure). Leaving one of them out asks a different question of the model.
"""

from __future__ import annotations

import math

import torch

import pypto

from ..cases import case
from ..replay import timing_only

DYN = pypto.DYNAMIC
PTO_TOPK = "hw-native-sys/pto-isa@3186c381bd49e1164092e67ff1b3564302754e76 kernels/manual/a2a3/topk/README.md"
PLOTS = "Mocchibird/pto-kernels-plots@4f52462d4ef32692ebe07657e3b24061608a72fa"
MHC = "yuanfang-chen/ops-transformer@c1367c0504a20db11799072b82d9a768dbaa70e3 experimental/mhc/mhc_post/docs/performance.md"

_TORCH = {pypto.DT_FP32: torch.float32, pypto.DT_FP16: torch.float16, pypto.DT_BF16: torch.bfloat16,
          pypto.DT_INT8: torch.int8, pypto.DT_INT32: torch.int32}


def _empty(shape, dtype):
    return torch.empty(*shape, dtype=_TORCH[dtype])


def _us_at(nbytes: float, gb_per_s: float) -> float:
    """Microseconds to move ``nbytes`` at ``gb_per_s`` (1 GB/s = 1e3 bytes per microsecond)."""
    return nbytes / (gb_per_s * 1e3)


# ---- kernels ----------------------------------------------------------------------------------

def topk_kernel(cols: int, valid_cols: int, k: int, dtype, rows_per_block: int, tile_rows: int):
    """Per-row top-k of the first ``valid_cols`` of a ``[rows, cols]`` matrix (row stride
    ``cols``, as the pto-isa kernel's input): one loop iteration per core's block of rows, each
    sorted ``tile_rows`` rows at a time. Values and int32 indices go to the outputs passed."""
    R = rows_per_block

    @pypto.jit
    def topk(x: pypto.Tensor([DYN, cols], dtype), values: pypto.Tensor([DYN, k], dtype),
             indices: pypto.Tensor([DYN, k], pypto.DT_INT32)):
        pypto.set_vec_tile_shapes(tile_rows, valid_cols)
        for b in pypto.loop(pypto.ceildiv(x.shape[0], R)):
            v, i = pypto.topk(x[b * R:(b + 1) * R, 0:valid_cols], k, -1)
            values[b * R:(b + 1) * R] = v
            indices[b * R:(b + 1) * R] = i

    return topk


def copy_kernel(cols: int, dtype, block_rows: int, tile_rows: int):
    """``y = x`` through UB (GM -> UB -> GM): a loop over blocks of ``block_rows`` rows (one per
    core), each copied ``tile_rows`` rows at a time."""
    R = block_rows

    @pypto.jit
    def copy(x: pypto.Tensor([DYN, cols], dtype), y: pypto.Tensor([DYN, cols], dtype)):
        pypto.set_vec_tile_shapes(tile_rows, cols)
        for b in pypto.loop(pypto.ceildiv(x.shape[0], R)):
            y[b * R:(b + 1) * R] = pypto.clone(x[b * R:(b + 1) * R])

    return copy


def mhc_post_read_once(seq: int, dim: int, streams: int, dtype, rows_per_tile: int):
    """mhc_post, the source's strategy B: ``out[b, n] = x[b] * h[n]`` with each tile of ``x[b]``
    read once and written ``N`` times: one broadcast multiply of ``x`` ``[B, 1, S, D]`` by ``h``
    ``[1, N, 1, 1]`` into ``out`` ``[B, N, S, D]``, a loop over batches, a tile holding
    ``rows_per_tile`` rows of one batch for all N streams."""

    @pypto.jit
    def mhc_post(x: pypto.Tensor([DYN, 1, seq, dim], dtype), h: pypto.Tensor([1, streams, 1, 1], dtype),
                 out: pypto.Tensor([DYN, streams, seq, dim], dtype)):
        pypto.set_vec_tile_shapes(1, streams, rows_per_tile, dim)
        for b in pypto.loop(x.shape[0]):
            out[b:b + 1] = x[b:b + 1] * h

    return mhc_post


def mhc_post_per_stream(seq: int, dim: int, streams: int, dtype, rows_per_tile: int):
    """mhc_post, the source's strategy A (small shapes): one loop iteration per (batch, stream)
    pair, each reading all of ``x[b]`` tile by tile and writing ``out[b*N+n]``."""
    T = rows_per_tile

    @pypto.jit
    def mhc_post(x: pypto.Tensor([DYN, seq, dim], dtype), h: pypto.Tensor([1, streams], dtype),
                 out: pypto.Tensor([DYN, seq, dim], dtype)):
        pypto.set_vec_tile_shapes(1, T, dim)
        for b in pypto.loop(x.shape[0]):
            for n in pypto.loop(streams):
                o = b * streams + n
                out[o:o + 1] = x[b:b + 1] * h[:, n:n + 1]

    return mhc_post


def sinkhorn_kernel(n: int, repeats: int, eps: float, dtype):
    """Doubly-stochastic Sinkhorn of ``[B*n, n]`` (B matrices of n x n): a row softmax, then
    ``repeats`` rounds of row-sum and column-sum normalisation, one matrix per loop iteration
    (one per vector core), computed in fp32 and stored in ``dtype``."""

    @pypto.jit
    def sinkhorn(x: pypto.Tensor([DYN, n], dtype), y: pypto.Tensor([DYN, n], dtype)):
        pypto.set_vec_tile_shapes(n, n)
        for b in pypto.loop(x.shape[0] // n):
            m = pypto.softmax(pypto.cast(x[b * n:(b + 1) * n], pypto.DT_FP32), -1)
            for _ in range(repeats):
                m = m / (m.sum(-1, keepdim=True) + eps)
                m = m / (m.sum(0, keepdim=True) + eps)
            y[b * n:(b + 1) * n] = pypto.cast(m, dtype)

    return sinkhorn


def int8_quant_kernel(cols: int, block_rows: int, tile_rows: int):
    """Dynamic per-row symmetric quantisation fp16 -> int8: ``scale = amax|x| / 127`` per row,
    ``q = round(x / scale)``; q and the fp32 scales go to the outputs passed. A loop over blocks
    of ``block_rows`` rows (one per core), ``tile_rows`` whole rows per tile."""
    R = block_rows

    @pypto.jit
    def quant(x: pypto.Tensor([DYN, cols], pypto.DT_FP16), q: pypto.Tensor([DYN, cols], pypto.DT_INT8),
              scale: pypto.Tensor([DYN, 1], pypto.DT_FP32)):
        pypto.set_vec_tile_shapes(tile_rows, cols)
        for b in pypto.loop(pypto.ceildiv(x.shape[0], R)):
            xf = pypto.cast(x[b * R:(b + 1) * R], pypto.DT_FP32)
            s = pypto.amax(pypto.abs(xf), -1, True) / 127.0
            q[b * R:(b + 1) * R] = pypto.cast(xf / s, pypto.DT_INT8, pypto.CastMode.CAST_RINT)
            scale[b * R:(b + 1) * R] = s

    return quant


def poly_norm_kernel(hidden: int, eps: float, dtype, block_rows: int, tile_rows: int):
    """Liger's PolyNorm forward: ``w0*norm(x^3) + w1*norm(x^2) + w2*norm(x) + bias`` with
    ``norm(u) = u / sqrt(mean(u^2) + eps)`` along each row (fp32 math, ``dtype`` in and out); a
    loop over blocks of ``block_rows`` rows (one per core), ``tile_rows`` whole rows per tile."""
    R = block_rows

    def norm(u):
        return u * pypto.rsqrt((u * u).sum(-1, keepdim=True) / hidden + eps)

    @pypto.jit
    def poly_norm(x: pypto.Tensor([DYN, hidden], dtype), w: pypto.Tensor([1, 3], pypto.DT_FP32),
                  bias: pypto.Tensor([1, 1], pypto.DT_FP32), y: pypto.Tensor([DYN, hidden], dtype)):
        pypto.set_vec_tile_shapes(tile_rows, hidden)
        for b in pypto.loop(pypto.ceildiv(x.shape[0], R)):
            x1 = pypto.cast(x[b * R:(b + 1) * R], pypto.DT_FP32)
            x2 = x1 * x1
            out = norm(x2 * x1) * w[:, 0:1] + norm(x2) * w[:, 1:2] + norm(x1) * w[:, 2:3] + bias
            y[b * R:(b + 1) * R] = pypto.cast(out, dtype)

    return poly_norm


def add_kernel(dtype, block: int):
    """1-D ``z = x + y``, a loop over blocks of ``block`` elements."""

    @pypto.jit
    def add(x: pypto.Tensor([DYN], dtype), y: pypto.Tensor([DYN], dtype), z: pypto.Tensor([DYN], dtype)):
        pypto.set_vec_tile_shapes(block)
        for b in pypto.loop(pypto.ceildiv(x.shape[0], block)):
            z[b * block:(b + 1) * block] = x[b * block:(b + 1) * block] + y[b * block:(b + 1) * block]

    return add


GELU_C = math.sqrt(2.0 / math.pi)


def gelu_kernel(dtype, block: int):
    """1-D tanh-form GELU ``0.5 x (1 + tanh(sqrt(2/pi) (x + 0.044715 x^3)))`` in fp32, a loop
    over blocks of ``block`` elements (one per AI core block of the source)."""

    @pypto.jit
    def gelu(x: pypto.Tensor([DYN], dtype), y: pypto.Tensor([DYN], dtype)):
        pypto.set_vec_tile_shapes(block)
        for b in pypto.loop(pypto.ceildiv(x.shape[0], block)):
            v = pypto.cast(x[b * block:(b + 1) * block], pypto.DT_FP32)
            inner = (v + v * v * v * 0.044715) * GELU_C
            y[b * block:(b + 1) * block] = pypto.cast(v * (pypto.tanh(inner) + 1.0) * 0.5, dtype)

    return gelu


# ---- cases ------------------------------------------------------------------------------------

def _build(make, *args):
    """A case's build: the kernel made by ``make()`` on empty tensors of ``args`` ((shape, dtype)
    pairs), timing only (no kernel here reads tensor elements in its control flow)."""
    def build():
        return timing_only(make(), *[_empty(shape, dt) for shape, dt in args])

    return build


FP32, FP16, BF16, INT8, INT32 = pypto.DT_FP32, pypto.DT_FP16, pypto.DT_BF16, pypto.DT_INT8, pypto.DT_INT32

# TopK: [rows, 1024] of a row stride of 1280, 48 cores of rows/48 rows each, 2 rows per sort
# (the source's singleLoopRow = 2, two tiles in flight); msprof task durations on an A3 die.
for _id, _rows, _dt, _k, _us in (("topk_a3_f32_4800", 4800, FP32, 1000, 324.106),
                                 ("topk_a3_f32_2304", 2304, FP32, 1000, 161.375),
                                 ("topk_a3_f16_4800", 4800, FP16, 1008, 326.886)):
    case(id=_id, family="vector_compute", kind="vector", published_us=_us, source=PTO_TOPK,
         build=_build(lambda r=_rows, d=_dt, k=_k: topk_kernel(1280, 1024, k, d, r // 48, 2),
                      ((_rows, 1280), _dt), ((_rows, _k), _dt), ((_rows, _k), INT32)),
         how=f"pypto.topk(x[rows, 0:1024], {_k}) per row; a pypto.loop over 48 blocks of {_rows // 48} rows "
             "(one per vector core, as the source splits them), vector tile [2, 1024] (the source sorts 2 rows "
             "per loop); int32 indices stand in for the source's uint32; published_us is the task_duration")

_CLONE_BYTES = 2 * 4096 * 4096 * 2  # 32 MiB read + 32 MiB written
case(id="torch_clone_4096x4096_fp16", family="vector_bandwidth", kind="vector", published_us=48.7,
     source=f"{PLOTS} fast_hadamard/standard/copy_vs_hadamard_duration_us_bd24.png",
     build=_build(lambda: copy_kernel(4096, FP16, -(-4096 // 48), 8), ((4096, 4096), FP16), ((4096, 4096), FP16)),
     weight=0.5,
     how="CANN's built-in copy is not PyPTO source: the natural PyPTO copy, y[rows] = clone(x[rows]), a pypto.loop "
         "over 48 blocks of 86 rows (one per vector core), tile [8, 4096] fp16 (64 KB in + 64 KB out). published_us: the bar read off the chart "
         f"(+-2 us, host-event timed over a repeat loop), {_CLONE_BYTES / 1e6:.1f} MB / 48.7 us = 1.38 TB/s")

_UB_COPY_BYTES = 2 * 256 * 16384 * 2  # 8 MiB read + 8 MiB written
case(id="ub_copy_gm_ub_gm_256x16384_fp16", family="launch_floor", kind="vector",
     published_us=_us_at(_UB_COPY_BYTES, 345.0), measures="end_to_end", weight=0.3,
     source=f"{PLOTS} fast_hadamard/int4_quant/README.md + copy_vs_hadamard_bw.png",
     build=_build(lambda: copy_kernel(16384, FP16, -(-256 // 24), 1), ((256, 16384), FP16), ((256, 16384), FP16)),
     how="the PTO-ISA GM->UB->GM copy as PyPTO: y[rows] = clone(x[rows]), a pypto.loop over 24 blocks of 11 rows "
         "(the source's BLOCK_DIM=24), one row (32 KB fp16) per tile. "
         f"published_us = {_UB_COPY_BYTES / 1e6:.2f} MB (read + write) / 345 GB/s read off the bar chart "
         "= 48.6 us, which is the ~48 us latency the README gives for every size up to this one: a launch-bound "
         "figure, so compared with the makespan from the launch")

_MHC_ARGS = {"B": lambda b, s, d: (((b, 1, s, d), FP32), ((1, 4, 1, 1), FP32), ((b, 4, s, d), FP32)),
             "A": lambda b, s, d: (((b, s, d), FP32), ((1, 4), FP32), ((b * 4, s, d), FP32))}
# performance.md gives milliseconds; strategy as the source's host code picks it (B: read >= 4 MB, B >= 16)
for _id, (_b, _s, _d), _ms, _strategy in (("mhc_post_910b2_32x2048x1024_ns4", (32, 2048, 1024), 1.047, "B"),
                                          ("mhc_post_910b2_16x1024x1024_ns4", (16, 1024, 1024), 0.26, "B"),
                                          ("mhc_post_910b2_4x512x256_ns4", (4, 512, 256), 0.021, "A")):
    _us = _ms * 1000.0
    _bytes = _b * _s * _d * 4 * (1 + 4)  # fp32: x read once, 4 streams written
    if _strategy == "B":
        _make = (lambda s=_s, d=_d: mhc_post_read_once(s, d, 4, FP32, 8))
        _how = ("strategy B (read once, write 4): a pypto.loop over batches, out[b] = x[b] * h as one broadcast "
                f"multiply ([1,1,S,D] x [1,4,1,1]) in tiles of 8 rows x {_d} fp32 x 4 streams (the input tile read "
                "once, 32 KB + 128 KB of products; the source's tile is 12288 elements, 48 KB). "
                f"{_bytes / 1e6:.0f} MB moved, {_bytes / (_us * 1e3):.0f} GB/s at the published time")
        _family, _measures, _weight = "vector_bandwidth", "kernel", 0.7
    else:
        _make = (lambda s=_s, d=_d: mhc_post_per_stream(s, d, 4, FP32, 48))
        _how = ("strategy A (per stream): a pypto.loop over (batch, stream) pairs, out[b*4+n] = x[b] * h[:, n] in "
                "tiles of 48 rows x 256 fp32 (the source's 12288-element tile). The ~21 us is a small-shape floor "
                "(launch and overhead; timing method not stated, likely host-side), compared from the launch")
        _family, _measures, _weight = "launch_floor", "end_to_end", 0.5
    case(id=_id, family=_family, kind="vector", published_us=_us,
         measures=_measures, weight=_weight, source=MHC,
         build=_build(_make, *_MHC_ARGS[_strategy](_b, _s, _d)),
         how=_how + "; published in ms, x 1000")

_SINK_BYTES = 2 * 64 * 128 * 128 * 2  # fp16 read + write
case(id="sinkhorn_pto_b64_n128", family="vector_compute", kind="vector",
     published_us=_us_at(_SINK_BYTES, 35.0), weight=0.5, source=f"{PLOTS} sinkhorn/README.md",
     build=_build(lambda: sinkhorn_kernel(128, 10, 1e-6, FP16), ((64 * 128, 128), FP16), ((64 * 128, 128), FP16)),
     how="a pypto.loop over the 64 matrices, each one [128, 128] tile (one matrix per vector core, as the source): "
         "row softmax in fp32, then 10 x (divide by row sums + eps, divide by column sums + eps), cast to fp16. "
         f"published_us = {_SINK_BYTES / 1e6:.2f} MB (read + write) / ~35 GB/s (README text, approximate)")

_QUANT_ROWS, _QUANT_COLS = 1024, 16384
_QUANT_BYTES = _QUANT_ROWS * _QUANT_COLS * (2 + 1) + _QUANT_ROWS * 4  # fp16 in, int8 out, fp32 scales
case(id="int8_quant_pto_plateau", family="vector_bandwidth", kind="vector",
     published_us=_us_at(_QUANT_BYTES, 1000.0), weight=0.5,
     source=f"{PLOTS} fast_hadamard/int8_quant/README.md",
     build=_build(lambda: int8_quant_kernel(_QUANT_COLS, -(-_QUANT_ROWS // 48), 1),
                  ((_QUANT_ROWS, _QUANT_COLS), FP16), ((_QUANT_ROWS, _QUANT_COLS), INT8), ((_QUANT_ROWS, 1), FP32)),
     how="the quantize kernel's source is not published with the plots: a natural PyPTO dynamic per-row int8 "
         "quantize (amax|x|/127, x/scale rounded to int8), a pypto.loop over 48 blocks of 22 rows, row tiles "
         "[1, 16384], at batch 1024 x N 16384 (the "
         f"plateau's end). published_us = {_QUANT_BYTES / 1e6:.1f} MB (fp16 in, int8 + scales out) / ~1000 GB/s")

# Liger's sweep: H=256/512/1024 all ~0.237 ms (framework floor); H=2048 0.2897, H=4096 0.33854. The
# excess over the floor doubles with H (53 -> 102 us), so the floor adds: kernel = figure - floor.
_POLY_FLOOR_US = (236.38 + 234.88 + 239.06) / 3
case(id="poly_norm_liger_910b4_2048x4096", family="vector_bandwidth", kind="vector",
     published_us=338.54 - _POLY_FLOOR_US, weight=0.5,
     source="https://github.com/linkedin/Liger-Kernel/pull/1114 (comment 2026-03-02, benchmark JSON)",
     build=_build(lambda: poly_norm_kernel(4096, 1e-6, BF16, -(-2048 // 48), 1), ((2048, 4096), BF16), ((1, 3), FP32),
                  ((1, 1), FP32), ((2048, 4096), BF16)),
     how="the triton-ascend kernel as PyPTO: a pypto.loop over 48 blocks of 43 rows, one row per tile ([1, 4096], fp32 math), three RMS norms of x, x^2, "
         "x^3 weighted and biased, cast to bf16. published_us = 338.54 us (median) minus the 236.8 us floor of "
         "the same sweep at H<=1024 (the excess doubles from H=2048 to 4096, so the floor adds) = 101.8 us")

case(id="torch_add_910b4_16384_fp32", family="launch_floor", kind="vector", published_us=6.053,
     measures="end_to_end", weight=0.5, source="https://github.com/Ascend/triton-ascend/issues/8 (2026-03-16)",
     build=_build(lambda: add_kernel(FP32, 2048), ((16384,), FP32), ((16384,), FP32), ((16384,), FP32)),
     how="aclnn Add is not PyPTO source: z = x + y over blocks of 2048 fp32 (8 tiles). do_bench of a tiny add: "
         "the launch floor, compared with the makespan from the launch")

case(id="ascend_rs_gelu_910b3_16384", family="launch_floor", kind="vector", published_us=24.0,
     measures="end_to_end", weight=0.5,
     source="https://ascend-rs.org/en/appendix/appendix-f-benchmarks.html (Appendix F static summary)",
     build=_build(lambda: gelu_kernel(FP16, 2048), ((16384,), FP16), ((16384,), FP16)),
     how="the AscendC reference kernel's formula is not restated: tanh-form GELU in fp32 over 8 blocks of 2048 f16 "
         "(the source's 8 AI core blocks). clock_gettime around launch + synchronize: a launch floor, compared "
         "with the makespan from the launch")
