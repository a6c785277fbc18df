"""Pass dumps (debug_options compile_debug_mode / dump_pass_graph) and the DOT of every snapshot."""

import json
import os
import random
import re
import shutil
import subprocess

import pytest
import torch

import pypto
from pypto.errors import OptionError
from pypto.ir.dot_lower import _reduce, collapse

F32 = pypto.DT_FP32
KEYS = {"version", "kernel", "pass", "index", "level", "seconds", "text", "graph"}
GRAPH_KIND = {"trace": "tensor", "autocast": "tensor", "expand": "tile", "assign_memory": "tile",
              "partition": "partition", "dedup+allocate_buffers": "leaves", "execute_graph": "execute",
              "codegen": "codegen"}
NODE = re.compile(r'^\s*("(?:[^"\\]|\\.)*"|\w+)\s*\[', re.M)


def mm_loop(a: pypto.Tensor([32, 32], F32), b: pypto.Tensor([32, 32], F32),
            x: pypto.Tensor([pypto.DYNAMIC, 32], F32), out: pypto.Tensor([32, 32], F32),
            y: pypto.Tensor([pypto.DYNAMIC, 32], F32)):
    pypto.set_cube_tile_shapes([16, 16], [16, 16], [16, 16])
    pypto.set_vec_tile_shapes(8, 32)
    out[:] = pypto.matmul(a, b) + 1.0  # @L:mm
    for i in pypto.loop(pypto.ceildiv(x.shape[0], 8)):
        y[i * 8:(i + 1) * 8, :] = pypto.exp(x[i * 8:(i + 1) * 8, :]) * 2.0


def args():
    torch.manual_seed(0)
    return torch.randn(32, 32), torch.randn(32, 32), torch.randn(20, 32), torch.zeros(32, 32), torch.zeros(20, 32)


def mm_line() -> int:
    with open(__file__) as f:
        return next(n for n, line in enumerate(f, 1) if line.rstrip().endswith("# @L:mm"))


def nodes(dot: str) -> int:
    return sum(1 for m in NODE.finditer(dot) if m.group(1) not in ("node", "edge", "graph"))


def looks_like_dot(dot: str):
    assert dot.startswith("digraph ") and dot.rstrip().endswith("}"), dot[:200]
    body = re.sub(r'"(?:[^"\\]|\\.)*"', '""', dot)  # braces inside labels do not count
    assert body.count("{") == body.count("}")
    if shutil.which("dot"):
        r = subprocess.run(["dot", "-Tcanon", "-o", os.devnull], input=dot, text=True, capture_output=True,
                           timeout=120)
        assert r.returncode == 0, r.stderr


@pytest.fixture
def dump_dir(tmp_path, monkeypatch):
    monkeypatch.setenv("PYPTO_DUMP_DIR", str(tmp_path))
    monkeypatch.delenv("TILE_FWK_OUTPUT_DIR", raising=False)
    return tmp_path


def test_compile_debug_mode_dumps_every_pass_in_order(dump_dir):
    kernel = pypto.jit(debug_options={"compile_debug_mode": 1})(mm_loop)
    a, b, x, out, y = args()
    kernel(a, b, x, out, y)  # dumping does not change what runs
    torch.testing.assert_close(out, a @ b + 1.0, rtol=1e-4, atol=1e-4)
    torch.testing.assert_close(y, torch.exp(x) * 2.0)
    compiled = kernel.last_run.compiled
    assert compiled.dump_dir == str(dump_dir / "mm_loop_0")
    names = [s.name for s in compiled.passes]
    assert names == list(GRAPH_KIND)
    expected = sorted(f"{i:02d}_{n}.{ext}" for i, n in enumerate(names) for ext in ("txt", "dot", "json"))
    assert sorted(os.listdir(compiled.dump_dir)) == expected
    for i, snap in enumerate(compiled.passes):
        stem = os.path.join(compiled.dump_dir, f"{i:02d}_{snap.name}")
        with open(stem + ".json", encoding="utf-8") as f:
            record = json.load(f)
        assert KEYS <= set(record)
        assert (record["version"], record["kernel"], record["pass"], record["index"], record["level"]) == \
            (1, "mm_loop", snap.name, i, snap.level)
        assert record["text"] == snap.text and record["seconds"] >= 0
        assert record["graph"]["kind"] == GRAPH_KIND[snap.name]
        with open(stem + ".txt", encoding="utf-8") as f:
            assert f.read().rstrip("\n") == snap.text.rstrip("\n")
        with open(stem + ".dot", encoding="utf-8") as f:
            assert f.read().startswith("digraph")


def test_json_graph_summaries_per_level(dump_dir):
    kernel = pypto.jit(debug_options={"compile_debug_mode": 1})(mm_loop)
    compiled = kernel.inspect(*args())

    def graph(name):
        i = [s.name for s in compiled.passes].index(name)
        with open(os.path.join(compiled.dump_dir, f"{i:02d}_{name}.json"), encoding="utf-8") as f:
            return json.load(f)["graph"]

    tensor = graph("trace")
    mm = next(op for op in tensor["ops"] if op["kind"] == "matmul")
    assert [v["shape"] for v in mm["inputs"]] == [[32, 32], [32, 32]] and mm["outputs"][0]["dtype"] == "fp32"
    assert mm["loc"] == f"{__file__}:{mm_line()}"
    exp = next(op for op in tensor["ops"] if op["kind"] == "exp")
    assert exp["scope"].startswith("loop") and tensor["loops"] and isinstance(exp["attrs"], dict)
    assert all(isinstance(v, str) for op in tensor["ops"] for v in op["attrs"].values())

    tile = graph("assign_memory")
    ops = [op for r in tile["roots"] for op in r["ops"]]
    access = next(op for op in ops if op["kind"] == "matmul")["inputs"][0]
    assert {"mem", "value", "shape", "base", "axis"} <= set(access) and access["mem"] == "L0A"
    assert {op["core"] for op in ops} == {"AIC", "AIV"} and all(isinstance(op["grid"], list) for op in ops)

    leaves = graph("dedup+allocate_buffers")["leaves"]
    cube = next(leaf for leaf in leaves if leaf["core"] == "AIC")
    assert {"name", "core", "params", "buffers", "ops"} <= set(cube)
    assert {b["mem"] for b in cube["buffers"]} >= {"L1", "L0A", "L0B", "L0C"}
    assert any("param" in o for op in cube["ops"] for o in op["inputs"])

    roots = graph("execute_graph")["roots"]
    calls = [c for r in roots for c in r["calls"]]
    assert {"leaf", "grid", "args"} <= set(calls[0]) and any(a["write"] for c in calls for a in c["args"])
    assert any(r["deps"] for r in roots)

    code = graph("codegen")["leaves"]
    assert {leaf["name"] for leaf in code} == {leaf["name"] for leaf in leaves}


def test_dump_pass_graph_selects_the_named_passes(dump_dir):
    kernel = pypto.jit(debug_options={"dump_pass_graph": ["expand", "execute_graph"]})(mm_loop)
    compiled = kernel.inspect(*args())
    names = [s.name for s in compiled.passes]
    picked = [(names.index("expand"), "expand"), (names.index("execute_graph"), "execute_graph")]
    assert sorted(os.listdir(compiled.dump_dir)) == sorted(
        f"{i:02d}_{n}.{ext}" for i, n in picked for ext in ("txt", "dot", "json"))


def test_dump_pass_graph_matches_a_part_of_a_combined_name(dump_dir):
    kernel = pypto.jit(debug_options={"dump_pass_graph": ["allocate_buffers"]})(mm_loop)
    compiled = kernel.inspect(*args())
    assert [f for f in os.listdir(compiled.dump_dir) if f.endswith(".json")] == ["05_dedup+allocate_buffers.json"]


def test_unknown_pass_name_is_an_option_error(dump_dir):
    kernel = pypto.jit(debug_options={"dump_pass_graph": ["expand", "exapnd_tiles"]})(mm_loop)
    with pytest.raises(OptionError) as ei:
        kernel.inspect(*args())
    text = str(ei.value)
    assert "exapnd_tiles" in text and "dump_pass_graph" in text
    for name in GRAPH_KIND:
        assert name in text  # the valid names are listed
    assert kernel.cache_info().currsize == 0 and os.listdir(dump_dir) == []


def test_two_compiles_get_two_folders(dump_dir):
    kernel = pypto.jit(debug_options={"compile_debug_mode": 1})(mm_loop)
    first = kernel.inspect(*args()).dump_dir
    kernel.cache_clear()
    second = kernel.inspect(*args()).dump_dir
    other = pypto.jit(debug_options={"compile_debug_mode": 2})(mm_loop).inspect(*args()).dump_dir
    assert len({first, second, other}) == 3
    assert sorted(os.listdir(dump_dir)) == ["mm_loop_0", "mm_loop_1", "mm_loop_2", "program.json"]
    assert all(len(os.listdir(dump_dir / d)) == 3 * len(GRAPH_KIND) for d in os.listdir(dump_dir) if d != "program.json")
    with open(dump_dir / "program.json", encoding="utf-8") as f:
        assert [k["name"] for k in json.load(f)["kernels"]] == ["mm_loop"] * 3  # compile_debug_mode adds each


def test_no_dump_when_the_options_are_off(dump_dir):
    compiled = pypto.jit(mm_loop).inspect(*args())
    assert compiled.dump_dir is None and os.listdir(dump_dir) == []


def test_dump_goes_into_the_process_output_folder(tmp_path, monkeypatch):
    monkeypatch.delenv("PYPTO_DUMP_DIR", raising=False)
    monkeypatch.setenv("TILE_FWK_OUTPUT_DIR", str(tmp_path / "fwk"))
    kernel = pypto.jit(debug_options={"dump_pass_graph": ["trace"]})(mm_loop)
    folder = pypto.artefacts.output_folder()
    assert os.path.dirname(folder) == str(tmp_path / "fwk")
    assert kernel.inspect(*args()).dump_dir == os.path.join(folder, "mm_loop_0")
    assert not os.path.exists(os.path.join(folder, "program.json"))  # only compile_debug_mode writes it
    monkeypatch.delenv("TILE_FWK_OUTPUT_DIR")
    monkeypatch.chdir(tmp_path)
    kernel.cache_clear()
    dump = kernel.inspect(*args()).dump_dir
    assert os.path.dirname(os.path.dirname(dump)) == str(tmp_path / "output")


# ---- DOT of every snapshot ----------------------------------------------------------------------

def test_every_snapshot_has_dot():
    compiled = pypto.jit(mm_loop).inspect(*args())
    for snap in compiled.passes:
        dot = snap.to_dot()
        looks_like_dot(dot)
        assert nodes(dot) > 0, snap.name
    by_name = {s.name: s.to_dot() for s in compiled.passes}
    assert "cluster" in by_name["dedup+allocate_buffers"] and "local buffers" in by_name["dedup+allocate_buffers"]
    assert "leaf0_matmul" in by_name["codegen"] and "sg0" in by_name["partition"]


@pypto.jit
def big_add(x: pypto.Tensor([256, 256], F32), z: pypto.Tensor([256, 256], F32), out: pypto.Tensor([256, 256], F32)):
    pypto.set_vec_tile_shapes(16, 16)
    out[:] = x + z


@pypto.jit
def unrolled(x: pypto.Tensor([200, 32], F32), out: pypto.Tensor([200, 32], F32)):
    pypto.set_vec_tile_shapes(2, 32)
    for i in range(100):  # a Python loop: 100 copies of the same four ops
        out[i * 2:(i + 1) * 2, :] = pypto.exp(x[i * 2:(i + 1) * 2, :]) * 2.0


_rng = random.Random(0)
STEPS = "".join(_rng.choice("ams") for _ in range(400))  # no pattern repeats for long


@pypto.jit
def irregular(x: pypto.Tensor([64, 32], F32), out: pypto.Tensor([64, 32], F32)):
    pypto.set_vec_tile_shapes(8, 32)
    y = x
    for step in STEPS:
        y = y + 1.0 if step == "a" else (y * 0.5 if step == "m" else y - x)
    out[:] = y


@pytest.mark.parametrize("kernel, shapes", [(big_add, [(256, 256)] * 3), (unrolled, [(200, 32)] * 2),
                                            (irregular, [(64, 32)] * 2)], ids=["tiles", "unrolled", "irregular"])
def test_large_graphs_are_summarised_under_500_nodes(kernel, shapes):
    compiled = kernel.inspect(*[torch.randn(*s) for s in shapes])
    for snap in compiled.passes:
        dot = snap.to_dot()
        looks_like_dot(dot)
        assert 0 < nodes(dot) <= 500, (snap.name, nodes(dot))
    if kernel is unrolled:  # summarised, not dropped: the repeated pattern is drawn once, counted
        for snap in compiled.passes[:2]:
            assert "×100" in snap.to_dot(), snap.name
    if kernel is irregular:  # what does not fit is counted in a summary node
        assert "more ops" in compiled.passes[0].to_dot()
        assert "summarised" in compiled.passes[3].to_dot()


def test_collapse_finds_repeating_patterns():
    assert collapse(list("abababc")) == [(0, 2, 3), (6, 1, 1)]
    assert collapse(list("aaaab")) == [(0, 1, 4), (4, 1, 1)]
    assert collapse(list("abc")) == [(0, 1, 1), (1, 1, 1), (2, 1, 1)]
    assert collapse([]) == []


def test_transitive_reduction_of_call_dependencies():
    deps = [(i, j) for i in range(5) for j in range(i + 1, 5)]
    assert sorted(_reduce(5, deps)) == [(0, 1), (1, 2), (2, 3), (3, 4)]
    assert sorted(_reduce(3, [(0, 2), (1, 2)])) == [(0, 2), (1, 2)]
