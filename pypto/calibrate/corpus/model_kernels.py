"""Model-kernel points: upstream's own model files, run unmodified from an upstream tree.

* GLM-4.5 attention (``models/glm_v4_5/glm_attention.py``, IFA over a paged KV cache) at three
  ``stitch_function_max_num`` values, from the stitch tuning section of upstream's performance
  guide: family ``stitch``.
* QuantIndexerProlog (``models/deepseek_v32_exp/deepseekv32_lightning_indexer_prolog_quant.py``)
  at the three optimisation steps of upstream's case study: family ``model_kernel``. The file is
  the final state; the two earlier states are the same kernel with the tiles and options the
  case study says it changed, applied from outside the file.

The upstream tree is located by the environment variable ``PYPTO_UPSTREAM`` (its root, holding
``models/``); a case's build raises `UpstreamTreeError` when it is unset or wrong. Upstream's
model files import ``torch_npu``, so building a case switches NPU emulation on
(`pypto.emulate.install`) for the process.
"""

from __future__ import annotations

import functools
import importlib
import os
import sys

from ...errors import PyptoError
from ..cases import case
from ..replay import Simulation

ENV = "PYPTO_UPSTREAM"
GUIDE = "hicann+pypto@883e7dfb0:docs/zh/tutorials/debug/performance.md (Stitch调优)"
CASE_STUDY = "hicann+pypto@883e7dfb0:docs/zh/tutorials/debug/performance_case_quantindexerprolog.md"


class UpstreamTreeError(PyptoError):
    """The upstream PyPTO tree a model-kernel case imports from is not available."""


def _upstream_module(folder: str, name: str):
    """Import upstream's ``models/<folder>/<name>.py`` (its folder and ``models/`` go on
    ``sys.path``, as running the file from upstream's root would put them)."""
    root = os.environ.get(ENV)
    if not root:
        raise UpstreamTreeError(f"the model-kernel cases import upstream's model files: set {ENV}",
                                expected=f"{ENV}=<root of an upstream PyPTO tree, holding models/>",
                                got=f"{ENV} unset", param=ENV)
    where = os.path.join(root, "models", folder)
    if not os.path.isfile(os.path.join(where, name + ".py")):
        raise UpstreamTreeError(f"{ENV} does not hold upstream's model file", param=ENV,
                                expected=f"models/{folder}/{name}.py under {ENV}", got=root)
    import pypto.emulate

    pypto.emulate.install()
    models = os.path.realpath(os.path.join(root, "models"))
    # model folders reuse top-level names (each has its own ``utils``, a regular package in one
    # and a namespace package in another): take the other folders off sys.path, forget the
    # modules imported from them, and put this folder first
    mine = os.path.realpath(where) + os.sep

    def other_folder(path: str) -> bool:
        path = os.path.realpath(path or "/")
        return path.startswith(models + os.sep) and not (path + os.sep).startswith(mine)

    sys.path[:] = [p for p in sys.path if not other_folder(p)]
    for key, mod in list(sys.modules.items()):
        if other_folder(getattr(mod, "__file__", None) or "/"):
            del sys.modules[key]
    for path in (os.path.join(root, "models"), where):
        if path in sys.path:
            sys.path.remove(path)
        sys.path.insert(0, path)
    return importlib.import_module(name)


def reading_inputs(kernel, *args, **kwargs) -> Simulation:
    """The Simulation of ``kernel(*args, **kwargs)`` when its control flow reads elements of
    input tensors the kernel never writes (a block table, sequence lengths): the control
    program is walked reading those elements from the arguments, and no leaf runs. Any other
    element read runs the call in full (`replay.timing_only`)."""
    from ...runtime.control import Stitcher, walk
    from ..replay import replayer, timing_only

    entry, tensors, env, *_ = kernel._lookup(args, kwargs, count=False)
    compiled = entry.compiled
    lowered = compiled.lowered
    executor = compiled.executor
    written = {c.args[k].value.id for r in lowered.roots for c in r.calls for k in c.writes}
    inputs = {p.value.name: t for p, t in zip(lowered.program.params, tensors) if p.value.id not in written}
    runtime = compiled.options.runtime()
    stitcher = Stitcher(lowered, int(runtime.get("stitch_function_max_num", 128)))

    class _Written(Exception):
        pass

    def load(param, indices):
        t = inputs.get(param)
        if t is None:
            raise _Written
        stitcher.loads.add(param)  # the simulator makes such control flow wait for the device
        return int(t[tuple(indices)])

    try:
        walk(lowered.control, {**executor.symbol_defaults, **env}, stitcher, load)
    except _Written:
        return timing_only(kernel, *args, **kwargs)
    stitcher.flush(marker=False)
    return Simulation(replayer(lowered, stitcher.stream, tensors), runtime)


# ---- GLM-4.5 attention: the stitch tuning points ------------------------------------------------

GLM_CASE = "ifa_b8_s1_1_s2_16k"  # the first case of the file's test_ifa


@functools.lru_cache(maxsize=1)  # the three stitch points share one build
def _glm_attention():
    """The Simulation of upstream's ``ifa_func_kernel`` on the file's first test case: its own
    block table and sequence lengths, empty q/k/v (the numbers do not change the timing), under
    the file's own options (the kernel's jit options; ``enable_slice`` off, as its test)."""
    import torch

    import pypto

    glm = _upstream_module("glm_v4_5", "glm_attention")
    atten, tiles = glm.build_ifa_config(glm.get_case_config(GLM_CASE))
    q = torch.empty([atten.b * atten.s1, atten.nq, atten.qd], dtype=torch.bfloat16)
    k = torch.empty([atten.kv_num_blocks, atten.block_size, atten.nkv, atten.qd], dtype=torch.bfloat16)
    torch.manual_seed(0)  # as the file's ifa(): the block table is a random permutation
    table = glm.gen_block_table(atten.actual_seq, atten.block_size,
                                [atten.block_table_batch, atten.max_num_blocks_per_query])
    with pypto.options(pass_options={"enable_slice": False}):
        return reading_inputs(glm.ifa_func_kernel, q, k, torch.empty_like(k), table.to(torch.int32),
                              atten.actual_seq.to(torch.int32), torch.empty_like(q), atten.softmax_scale, tiles)


_GLM_HOW = ("upstream's models/glm_v4_5/glm_attention.py imported unmodified from $PYPTO_UPSTREAM; ifa_func_kernel "
            f"on its first test case {GLM_CASE} (b=8, s1=1, s2=16k, nq=12, nkv=1, d=128, block 128), the file's "
            "block table (torch.manual_seed(0)) and sequence lengths, empty q/k/v/out; its jit pass options and "
            "enable_slice=False as its test; control flow reads the block table and lengths from the arguments "
            "and no leaf runs; stitch_function_max_num={n} overrides the kernel's 1024")

for _n, _us in ((1, 1230.0), (128, 180.0), (512, 150.0)):
    case(id=f"pypto_glm_attn_stitch{_n}", family="stitch", kind="mixed", published_us=_us, source=GUIDE,
         build=_glm_attention, how=_GLM_HOW.format(n=_n), runtime={"stitch_function_max_num": _n})


# ---- QuantIndexerProlog: the case study's three steps -------------------------------------------

QIP_FILE = "deepseekv32_lightning_indexer_prolog_quant"
QIP_CASE = "b4_s1_2_s2_64k"  # the file's main case: B=4, MTP1 (s1=2), 64k KV cache
FINAL_TILES = {"q_linear": [16, 16, 512, 512, 128, 128], "k_linear": [16, 16, 512, 512, 64, 64],
               "w_linear": [16, 16, 1024, 1024, 32, 32]}  # the file's test_b4_s1_2_s2_64k (the 56/49 us states)
SQUARE_TILES = {k: [128] * 6 for k in FINAL_TILES}  # the case study's initial cube tiles: [128,128] x 3


def _quant_indexer_prolog(cube_tiles: dict, l1_reuse: bool):
    """A build of upstream's ``lightning_indexer_prolog_quant`` on the file's main case: inputs from
    the file's own generator, the file's configs with ``cube_tiles`` in place of the three linear
    layers' cube tiles, and the kernel's own jit options without ``cube_l1_reuse_setting`` unless
    ``l1_reuse``."""

    def build():
        import torch

        import pypto

        from ...tune.render import jit_keywords

        test = _upstream_module("deepseek_v32_exp", QIP_FILE)
        impl = sys.modules[test.lightning_indexer_prolog_quant.__module__]
        kernel = test.lightning_indexer_prolog_quant
        if not l1_reuse:
            options = jit_keywords(kernel)
            options["pass_options"] = {k: v for k, v in options.get("pass_options", {}).items()
                                       if k != "cube_l1_reuse_setting"}
            kernel = pypto.jit(kernel.fn, **options)
        torch.manual_seed(7)  # as the file's gen_data
        dims = test.gen_dims({"b": 4, "s1": 2, "s2": 64 * 1024})
        data = test.gen_inputs(dims, torch.bfloat16)
        t, n, d, rope = dims["t"], dims["idx_n_heads"], dims["idx_head_dim"], dims["rope_head_dim"]
        configs = impl.IndexerPrologQuantConfigs(
            q_hd=[32, 32, 128, 128, 128, 128], unroll_list=[32, 16, 8, 4, 2, 1], cube_l1_reuse_setting={1: 4},
            block_size=128, t_sub_tile=1, chunk_size=2, vec_nbuffer_setting={-1: 1}, **cube_tiles)
        attrs = impl.IndexerPrologQuantAttr(eps=1e-6, layerout_query="TND", layerout_key="PA_BSND")
        k_cache, k_scale = data["idx_k_cache"], data["idx_k_scale_cache"]
        args = [data["token_x"].reshape(t, -1), data["q_norm"].reshape(t, -1), data["q_norm_scale"].reshape(t, 1),
                data["w_idx_qb"], data["w_idx_qb_scale"], data["w_idx_k"], data["w_idx_proj"],
                data["layer_norm_gamma"], data["layer_norm_beta"], data["cos_idx_rope"].reshape(t, rope),
                data["sin_idx_rope"].reshape(t, rope), data["hadamard_q"], data["hadamard_k"], k_cache, k_scale,
                data["idx_k_cache_index"].reshape(t),
                torch.zeros(t, n, d, dtype=torch.int8), torch.zeros(t, n, 1, dtype=torch.float16),
                k_cache, k_scale,  # the caches are updated in place, as the file passes them
                torch.zeros(t, n, dtype=torch.float16)]
        with pypto.options(pass_options={"enable_slice": False}):  # the test's own scope
            return reading_inputs(kernel, *args, configs, attrs)

    return build


_QIP_HOW = (f"upstream's models/deepseek_v32_exp/{QIP_FILE}.py and its _impl imported unmodified from "
            f"$PYPTO_UPSTREAM; lightning_indexer_prolog_quant on the file's {QIP_CASE} inputs (its gen_inputs, "
            "seed 7) and configs, caches updated in place as the file does, enable_slice=False as its test; ")

case(id="pypto_quant_indexer_prolog_76us", family="model_kernel", kind="mixed", published_us=76.0, source=CASE_STUDY,
     build=_quant_indexer_prolog(SQUARE_TILES, l1_reuse=False),
     how=_QIP_HOW + "the case study's first step (vector tiles fixed): cube tiles [128,128],[128,128],[128,128] for "
                    "the q, k and weight linear layers in the configs, and no cube_l1_reuse_setting (a pypto.jit copy "
                    "of the kernel with its other jit options)")
case(id="pypto_quant_indexer_prolog_56us", family="model_kernel", kind="mixed", published_us=56.0, source=CASE_STUDY,
     build=_quant_indexer_prolog(FINAL_TILES, l1_reuse=False),
     how=_QIP_HOW + "the second step (cube tiles tuned, as the file's configs): no cube_l1_reuse_setting (a pypto.jit "
                    "copy of the kernel with its other jit options)")
case(id="pypto_quant_indexer_prolog_49us", family="model_kernel", kind="mixed", published_us=49.0, source=CASE_STUDY,
     build=_quant_indexer_prolog(FINAL_TILES, l1_reuse=True),
     how=_QIP_HOW + "the final step: the file as it is (L1 reuse {'Query-Linear': 4} in the kernel's pass options)")
