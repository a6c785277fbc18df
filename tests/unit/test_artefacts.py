"""Files a kernel call leaves in the output folder (pypto.artefacts), only when asked for."""

import csv
import json
import os
import re
import shutil
import socket

import pytest
import torch

import pypto
from pypto.artefacts import machine_trace

F32 = pypto.DT_FP32
FOLDER = re.compile(r"^output_\d{8}_\d{6}_\d{6}_(\d+)_(.+)$")


def chunks(x: pypto.Tensor([pypto.STATIC], F32), w: pypto.Tensor([64, 64], F32),
           out: pypto.Tensor([pypto.STATIC], F32), m: pypto.Tensor([64, 64], F32)):
    pypto.set_vec_tile_shapes(64)
    for i in pypto.loop(x.shape[0] // 64, name="chunk", idx_name="i"):
        pypto.assemble(pypto.add(pypto.view(x, [64], [i * 64]), 1.0), [i * 64], out)
    pypto.set_cube_tile_shapes([32, 32], [32, 32], [32, 32])
    m[:] = pypto.matmul(w, w)


def args(n=512):
    torch.manual_seed(0)
    return torch.randn(n), torch.randn(64, 64), torch.zeros(n), torch.zeros(64, 64)


def check_numbers(x, w, out, m):
    torch.testing.assert_close(out, x + 1.0)
    torch.testing.assert_close(m, w @ w, rtol=1e-4, atol=1e-4)


@pytest.fixture
def base(tmp_path, monkeypatch):
    for var in ("PYPTO_DUMP_DIR", "TILE_FWK_OUTPUT_DIR", "ASCEND_WORK_PATH", "DUMP_DEVICE_PERF"):
        monkeypatch.delenv(var, raising=False)
    monkeypatch.setenv("TILE_FWK_OUTPUT_DIR", str(tmp_path / "out"))
    return tmp_path / "out"


def test_output_folder_is_one_per_process_named_like_upstream(tmp_path, monkeypatch, base):
    folder = pypto.artefacts.output_folder()
    name = os.path.basename(folder)
    m = FOLDER.match(name)
    assert os.path.dirname(folder) == str(base) and m, name
    assert (int(m.group(1)), m.group(2)) == (os.getpid(), socket.gethostname())
    assert pypto.artefacts.output_folder() == folder
    shutil.rmtree(base)
    assert pypto.artefacts.output_folder() == folder and os.path.isdir(folder)  # made again
    monkeypatch.delenv("TILE_FWK_OUTPUT_DIR")
    monkeypatch.setenv("ASCEND_WORK_PATH", str(tmp_path / "work"))
    assert os.path.dirname(pypto.artefacts.output_folder(create=False)) == str(tmp_path / "work" / "pypto")
    monkeypatch.setenv("PYPTO_DUMP_DIR", str(tmp_path / "fixed"))
    assert pypto.artefacts.output_folder() == str(tmp_path / "fixed")
    monkeypatch.delenv("PYPTO_DUMP_DIR")
    monkeypatch.delenv("ASCEND_WORK_PATH")
    monkeypatch.chdir(tmp_path)
    assert os.path.dirname(pypto.artefacts.output_folder(create=False)) == str(tmp_path / "output")


def test_nothing_is_written_unless_asked(base):
    kernel = pypto.jit(chunks)
    a = args()
    kernel(*a)
    check_numbers(*a)
    assert kernel.last_run.timeline is not None and not base.exists()
    kernel = pypto.jit(runtime_options={"run_mode": pypto.RunMode.SIM})(chunks)  # SIM writes only when emulating
    kernel(*args())
    assert not base.exists()


def read_topology(path):
    with open(path, newline="") as f:
        rows = list(csv.reader(f))
    assert rows[0][:12] == ["seqNo", "taskId", "rootIndex", "rootHash", "opmagic", "leafIndex", "leafHash",
                            "coreType", "psgId", "wrapId", "staticSuccCount", "successors"]
    return [[int(v) for v in row] for row in rows[1:]]


def test_runtime_debug_mode_writes_the_swimlane_files(base):
    kernel = pypto.jit(debug_options={"runtime_debug_mode": 1})(chunks)
    a = args()
    kernel(*a)
    check_numbers(*a)
    folder = pypto.artefacts.output_folder(create=False)
    assert sorted(os.listdir(folder)) == ["dyn_topo.txt", "merged_swimlane.json", "program.json",
                                          "tilefwk_L1_prof_data.json"]
    timeline = kernel.last_run.timeline
    events = {e.task: e for e in timeline.events}
    with open(os.path.join(folder, "merged_swimlane.json")) as f:
        swim = json.load(f)
    assert swim["traceEvents"] == json.loads(json.dumps(timeline.to_chrome_trace()))["traceEvents"]
    assert swim["otherData"]["kernel"] == "chunks"

    with open(os.path.join(folder, "program.json")) as f:
        program = json.load(f)
    (record,) = program["kernels"]
    leaves = {leaf["name"]: leaf["index"] for leaf in record["leaves"]}
    assert list(leaves) == list(kernel.last_run.compiled.source) and sorted(leaves.values()) == list(range(len(leaves)))
    assert record["roots"] and all("calls" in r for r in record["roots"])

    topo = read_topology(os.path.join(folder, "dyn_topo.txt"))
    assert len(topo) == len(events)
    succ = {}
    for src, dst, _ in timeline.deps:
        succ.setdefault(src, set()).add(dst)
    for row in topo:
        e = events[row[1]]
        assert (row[0], row[2], row[5], row[7]) == (e.device_task, e.root, leaves[e.leaf], {"AIV": 0, "AIC": 1}[e.core_type])
        assert row[10] == len(row) - 11 and set(row[11:]) == succ.get(e.task, set())
    with open(os.path.join(folder, "tilefwk_L1_prof_data.json")) as f:
        cores = json.load(f)
    tasks = [(core, t) for core in cores for t in core["tasks"]]
    assert len(tasks) == len(events) and {c["coreType"] for c in cores} == {"AIC", "AIV"}
    for core, t in tasks:
        e = events[t["taskId"]]
        assert (t["seqNo"], t["leafIndex"], t["execStart"], t["execEnd"], core["coreType"]) == \
            (e.device_task, leaves[e.leaf], e.start, e.end, e.core_type)
        block = int(e.core[3:]) + (timeline.machine.aic_cores if e.core_type == "AIV" else 0)
        assert core["blockIdx"] == block

    kernel(*args())  # a second call appends its tasks, numbered after the first call's device tasks
    again = read_topology(os.path.join(folder, "dyn_topo.txt"))
    assert len(again) == 2 * len(events)
    assert min(r[0] for r in again[len(topo):]) == timeline.device_tasks


def test_device_perf_data_has_one_round_per_call(base, monkeypatch):
    monkeypatch.setenv("DUMP_DEVICE_PERF", "true")
    kernel = pypto.jit(chunks)
    timelines = []
    for _ in range(3):
        a = args()
        kernel(*a)
        check_numbers(*a)
        timelines.append(kernel.last_run.timeline)
    folder = pypto.artefacts.output_folder(create=False)
    assert sorted(os.listdir(folder)) == [machine_trace.PERFETTO_FILE, machine_trace.TRACE_FILE]
    with open(os.path.join(folder, machine_trace.TRACE_FILE)) as f:
        cores = json.load(f)
    machine = timelines[0].machine
    kinds = [c["coreType"] for c in cores]
    assert kinds.count("AICPU-CTRL") == 1 and kinds.count("SCHED-AIC") == machine.aic_cores
    assert kinds.count("SCHED-AIV") == machine.aiv_cores and kinds.count("AICPU-SCHED") >= 1
    name = re.compile(r"^([A-Z_]+?)_(\d+)(?:\((\d+)\))?$")
    last_end = -1
    for r, timeline in enumerate(timelines):
        first = min(t["end"] for c in cores for t in c["tasks"] if name.match(t["name"]).group(2) == str(r))
        assert first > last_end  # rounds follow one another
        spans = {}
        for e in timeline.events:
            block = int(e.core[3:]) + (machine.aic_cores if e.core_type == "AIV" else 0)
            lo, hi = spans.get((block, e.device_task), (e.start, e.end))
            spans[block, e.device_task] = (min(lo, e.start), max(hi, e.end))
        for core in cores:
            mine = [(name.match(t["name"]), t["end"] - first) for t in core["tasks"]]
            mine = [(m.group(1), m.group(3), end) for m, end in mine if m.group(2) == str(r)]
            phases = [p for p, _, _ in mine]
            assert phases[0] == "BEGIN" and phases[-1] == "EXIT" and phases.count("BEGIN") == 1
            assert [end for _, _, end in mine] == sorted(end for _, _, end in mine), core["coreType"]
            if core["coreType"] == "AICPU-CTRL":
                assert phases.count("DEV_TASK_BUILD") == timeline.device_tasks
            if core["coreType"].startswith("SCHED-"):
                got = {(int(i), p): end for p, i, end in mine if i is not None}
                want = {}
                for (block, dt), (lo, hi) in spans.items():
                    if block == core["blockIdx"]:
                        want[dt, "DEV_TASK_WAIT_RCV_FIRST_LEAF_TASK"] = lo
                        want[dt, "DEV_TASK_ALL_LEAF_TASK_EXEC"] = hi
                assert got == want
        last_end = max(t["end"] for c in cores for t in c["tasks"] if name.match(t["name"]).group(2) == str(r))
    with open(os.path.join(folder, machine_trace.PERFETTO_FILE)) as f:
        lanes = json.load(f)["traceEvents"]
    assert sum(e["ph"] == "X" for e in lanes) == sum(len(c["tasks"]) for c in cores)


def test_device_perf_keeps_the_first_rounds_only(base, monkeypatch):
    monkeypatch.setenv("DUMP_DEVICE_PERF", "1")
    monkeypatch.setattr(machine_trace, "MAX_ROUNDS", 2)
    kernel = pypto.jit(chunks)
    for _ in range(3):
        kernel(*args(128))
    with open(os.path.join(pypto.artefacts.output_folder(create=False), machine_trace.TRACE_FILE)) as f:
        ctrl = next(c for c in json.load(f) if c["coreType"] == "AICPU-CTRL")
    assert [t["name"] for t in ctrl["tasks"] if t["name"].startswith("BEGIN")] == ["BEGIN_0", "BEGIN_1"]


def test_an_unwritable_folder_is_a_warning_not_a_failed_call(tmp_path, monkeypatch):
    blocker = tmp_path / "file"
    blocker.write_text("not a folder")
    monkeypatch.setenv("PYPTO_DUMP_DIR", str(blocker / "sub"))
    kernel = pypto.jit(debug_options={"runtime_debug_mode": 1})(chunks)
    a = args()
    with pytest.warns(RuntimeWarning, match="could not write the output files of kernel 'chunks'"):
        kernel(*a)
    check_numbers(*a)


def test_each_call_replaces_the_json_files_whole_and_moves_the_folder_time(base, monkeypatch):
    # upstream's tests find "the folder of the last run" by its modification time (after a mark
    # taken before the call): a rewrite in place would leave it at the first call's time
    monkeypatch.setenv("DUMP_DEVICE_PERF", "true")
    kernel = pypto.jit(debug_options={"runtime_debug_mode": 1})(chunks)
    kernel(*args())
    folder = pypto.artefacts.output_folder(create=False)
    names = sorted(os.listdir(folder))
    files = [n for n in names if n.endswith(".json")]
    assert len(files) == 5, names
    before = {n: os.stat(os.path.join(folder, n)).st_ino for n in files}
    mark = os.stat(folder).st_mtime_ns
    os.utime(folder, ns=(mark - 10**9, mark - 10**9))  # as if the first call were a second ago
    a = args()
    kernel(*a)
    check_numbers(*a)
    assert os.stat(folder).st_mtime_ns >= mark
    assert sorted(os.listdir(folder)) == names  # no temporary file left behind
    after = {n: os.stat(os.path.join(folder, n)).st_ino for n in files}
    # new files renamed into place (program.json is rewritten only when a kernel version is new)
    assert [n for n in files if after[n] == before[n]] == ["program.json"], (before, after)
    with open(os.path.join(folder, "tilefwk_L1_prof_data.json")) as f:
        assert {t["taskId"] for core in json.load(f) for t in core["tasks"]} == \
            {e.task for e in kernel.last_run.timeline.events}
    mode = os.stat(os.path.join(folder, "program.json")).st_mode & 0o777
    umask = os.umask(0)
    os.umask(umask)
    assert mode == 0o666 & ~umask  # what a plain open() gives
