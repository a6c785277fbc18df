"""``host_options["compile_stage"]`` (issue 11, item 8): anything but ALL_COMPLETE compiles up to
that stage and runs nothing (upstream's documented behaviour): outputs untouched, None returned,
``kernel.inspect`` shows the passes that ran. ALL_COMPLETE runs the kernel (golden-checked)."""

import pytest
import torch

import pypto
from tests.golden.helper import check_kernel, rand

ROWS = pypto.Tensor([pypto.DYNAMIC, 16], pypto.DT_FP32)
# the last pass of each stop point
LAST_PASS = {
    pypto.CompStage.TENSOR_GRAPH: "autocast",
    pypto.CompStage.TILE_GRAPH: "assign_memory",
    pypto.CompStage.EXECUTE_GRAPH: "execute_graph",
    pypto.CompStage.CODEGEN_INSTRUCTION: "codegen",
    pypto.CompStage.CODEGEN_BINARY: "codegen",
}


def make(**jit_options):
    @pypto.jit(**jit_options)
    def kernel(x: ROWS, out: ROWS):
        pypto.set_vec_tile_shapes(4, 16)
        out[:] = x * 2.0 + 1.0
        return x + x

    return kernel


@pytest.mark.parametrize("stage", list(LAST_PASS), ids=lambda s: s.name)
def test_a_compile_stage_compiles_without_running(stage):
    kernel = make(host_options={"compile_stage": stage})
    x, out = rand((6, 16)), torch.full((6, 16), 7.0)
    assert kernel(x, out) is None
    assert torch.equal(out, torch.full((6, 16), 7.0))
    assert kernel.cache_info().misses == 1 and kernel.last_run.cache_hit is False
    assert kernel.last_run.run_seconds == 0.0 and kernel.last_run.timeline is None
    passes = [p.name for p in kernel.inspect(x, out).passes]
    assert passes[0] == "trace" and passes[-1] == LAST_PASS[stage]
    assert kernel(x, out) is None and kernel.last_run.cache_hit  # compiled once
    assert torch.equal(out, torch.full((6, 16), 7.0))


def test_compile_stage_from_the_global_setter_and_back():
    kernel = make()
    x = rand((6, 16), seed=3)
    out = torch.full((6, 16), 7.0)
    pypto.set_host_options(compile_stage=pypto.CompStage.TILE_GRAPH)
    try:
        assert kernel(x, out) is None
    finally:
        pypto.set_host_options(compile_stage=pypto.CompStage.ALL_COMPLETE)
    assert torch.equal(out, torch.full((6, 16), 7.0))
    # ALL_COMPLETE is a separate version (the stage is part of the key): this one runs
    check_kernel(kernel, [x, out], x * 2.0 + 1.0, out=1)
    assert kernel.cache_info().misses == 2


def test_compile_stage_skips_the_output_checks_that_only_matter_to_a_run():
    kernel = make(host_options={"compile_stage": pypto.CompStage.EXECUTE_GRAPH})
    out = torch.zeros(6, 16, requires_grad=True)  # a run would refuse to write it
    assert kernel(rand((6, 16)), out) is None
    assert not out.detach().any()


def test_a_kernel_only_lowering_can_reach_compiles_to_the_tensor_graph():
    # a stage before tiling never sees the tile shapes: an oversized tile is no error there
    @pypto.jit(host_options={"compile_stage": pypto.CompStage.TENSOR_GRAPH})
    def kernel(x: pypto.Tensor([512, 512], pypto.DT_FP32), out: pypto.Tensor([512, 512], pypto.DT_FP32)):
        pypto.set_vec_tile_shapes(512, 512)  # 1 MiB per tile: more than UB holds
        out[:] = x + x

    out = torch.zeros(512, 512)
    assert kernel(torch.ones(512, 512), out) is None
    assert not out.any()
