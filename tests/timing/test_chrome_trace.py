"""The Chrome trace export: a Trace Event Format validator (no dependencies), applied to real
timelines, the save/load round trip, µs units, and the validator's own rejections."""

from __future__ import annotations

import copy
import json

import pytest

try:
    from tests.timing import _timing_checks as C
    from tests.timing import _timing_kernels as K
except ImportError:
    import _timing_checks as C
    import _timing_kernels as K


@pytest.fixture(scope="module")
def chains_tl():
    record = K.run_chains(blocks=8)
    return C.check_invariants(record.timeline, K.executed_tiles(record))


@pytest.mark.parametrize("runner", ["chains", "wide", "count_loop", "tails"])
def test_trace_of_real_timelines_is_valid(runner):
    record = {"chains": K.run_chains, "wide": K.run_wide, "count_loop": K.run_count_loop,
              "tails": K.run_tails}[runner]()
    for opts in ({}, {"device_sched_mode": 3, "valid_shape_optimize": 1}):
        tl = C.check_invariants(record.simulate(opts))
        procs, threads = C.validate_chrome_trace(tl.to_chrome_trace(), tl)
        assert sorted(procs.values()) == ["AIC", "AICPU", "AIV"]


def test_trace_processes_threads_and_flows(chains_tl):
    tr = chains_tl.to_chrome_trace()
    procs, threads = C.validate_chrome_trace(tr, chains_tl)
    pid = {v: k for k, v in procs.items()}
    lanes = lambda p: sorted(v for (q, _), v in threads.items() if q == pid[p])  # noqa: E731
    assert lanes("AIC") == sorted({e.core for e in chains_tl.events if e.core_type == "AIC"})
    assert lanes("AIV") == sorted({e.core for e in chains_tl.events if e.core_type == "AIV"})
    assert "control" in lanes("AICPU") and any(x.startswith("sched") for x in lanes("AICPU"))
    # one flow pair per dependency edge, named by its kind, from the producer's lane to the consumer's
    flows = [e for e in tr["traceEvents"] if e["ph"] in ("s", "f")]
    assert len(flows) == 2 * len(chains_tl.deps) > 0
    assert {e["name"] for e in flows} <= {"RAW", "WAR", "WAW"}
    assert {e["cat"] for e in flows} == {"dep"}


def test_trace_times_are_microseconds(chains_tl):
    tr = chains_tl.to_chrome_trace()
    mhz = chains_tl.machine.clock_ghz * 1000.0
    by_task = {e.task: e for e in chains_tl.events}
    tasks = [e for e in tr["traceEvents"] if e["ph"] == "X" and e.get("cat") in ("AIC", "AIV")]
    assert len(tasks) == len(chains_tl.events)
    for x in tasks:
        ev = by_task[x["args"]["task"]]
        assert x["args"]["cycles"] == ev.duration
        assert x["dur"] == pytest.approx(ev.duration / mhz, rel=1e-9)
        assert x["ts"] == pytest.approx(ev.start / mhz, rel=1e-9)
        assert x["name"] == ev.leaf and x["args"]["root"] == ev.root
    # the AICPU spans too
    spans = [e for e in tr["traceEvents"] if e["ph"] == "X" and e.get("cat") == "AICPU"]
    assert len(spans) == len(chains_tl.aicpu)
    ends = max(e["ts"] + e["dur"] for e in tr["traceEvents"] if e["ph"] == "X")
    assert ends == pytest.approx(chains_tl.stats["makespan_us"], rel=1e-3)
    assert chains_tl.stats["makespan_us"] == pytest.approx(chains_tl.stats["makespan_cycles"] / mhz)


def test_trace_json_round_trip(chains_tl, tmp_path):
    tr = chains_tl.to_chrome_trace()
    text = json.dumps(tr)
    assert json.loads(text) == tr
    path = tmp_path / "trace.json"
    assert chains_tl.save(path) == str(path)
    with open(path) as f:
        loaded = json.load(f)
    assert loaded == tr
    C.validate_chrome_trace(loaded, chains_tl)
    assert loaded["otherData"]["machine"] == chains_tl.machine.name
    assert loaded["otherData"]["options"]["device_sched_mode"] == chains_tl.options["device_sched_mode"]


def test_trace_of_options_with_lists_is_serialisable():
    record = K.run_count_loop()
    tl = record.simulate({"ready_on_host_tensors": ["lens"]})
    tr = json.loads(json.dumps(tl.to_chrome_trace()))
    assert tr["otherData"]["options"]["ready_on_host_tensors"] == ["lens"]


# ---- the validator rejects malformed traces ------------------------------------------------------------

def _mutate(tr, pred, change):
    tr = copy.deepcopy(tr)
    ev = next(e for e in tr["traceEvents"] if pred(e))
    change(tr, ev)
    return tr


BROKEN = {
    "no traceEvents": lambda tr: {"events": tr["traceEvents"]},
    "bad phase": lambda tr: _mutate(tr, lambda e: e["ph"] == "X", lambda t, e: e.update(ph="B")),
    "negative ts": lambda tr: _mutate(tr, lambda e: e["ph"] == "X", lambda t, e: e.update(ts=-1.0)),
    "negative dur": lambda tr: _mutate(tr, lambda e: e["ph"] == "X", lambda t, e: e.update(dur=-0.5)),
    "string ts": lambda tr: _mutate(tr, lambda e: e["ph"] == "X", lambda t, e: e.update(ts="1")),
    "missing pid": lambda tr: _mutate(tr, lambda e: e["ph"] == "X", lambda t, e: e.pop("pid")),
    "missing name": lambda tr: _mutate(tr, lambda e: e["ph"] == "X", lambda t, e: e.pop("name")),
    "metadata without args.name": lambda tr: _mutate(tr, lambda e: e["ph"] == "M", lambda t, e: e.pop("args")),
    "unknown metadata": lambda tr: _mutate(tr, lambda e: e["ph"] == "M",
                                           lambda t, e: e.update(name="process_labels")),
    "flow without end": lambda tr: _mutate(tr, lambda e: e["ph"] == "f",
                                           lambda t, e: t["traceEvents"].remove(e)),
    "flow end without bp": lambda tr: _mutate(tr, lambda e: e["ph"] == "f", lambda t, e: e.pop("bp")),
    "flow ids mismatch": lambda tr: _mutate(tr, lambda e: e["ph"] == "f", lambda t, e: e.update(id=10 ** 9)),
    "flow cat mismatch": lambda tr: _mutate(tr, lambda e: e["ph"] == "s", lambda t, e: e.update(cat="other")),
    "unnamed thread": lambda tr: _mutate(tr, lambda e: e["ph"] == "X", lambda t, e: e.update(tid=999)),
    "not serialisable": lambda tr: _mutate(tr, lambda e: e["ph"] == "X",
                                           lambda t, e: e["args"].update(x=object())),
    "process per core": lambda tr: _mutate(tr, lambda e: e["ph"] == "M" and e["args"]["name"] == "AIV",
                                           lambda t, e: e["args"].update(name="AIV0")),
}


@pytest.mark.parametrize("case", sorted(BROKEN))
def test_validator_rejects(chains_tl, case):
    tr = chains_tl.to_chrome_trace()
    C.validate_chrome_trace(tr, chains_tl)
    bad = BROKEN[case](tr)
    with pytest.raises((AssertionError, TypeError)):
        C.validate_chrome_trace(bad, chains_tl)
