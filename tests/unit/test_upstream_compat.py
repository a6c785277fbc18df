"""The pure parts of tools/upstream_compat.py: selection, classification, blockers, reports.

The harness itself needs an upstream checkout and runs for minutes; these tests feed it fake
child results instead.
"""

import ast
import json
import sys
from pathlib import Path

import pytest

import pypto

sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "tools"))

from compat import cases, checks, report, selection  # noqa: E402
from compat.failures import Failure, cause_key, out_of_scope  # noqa: E402
from compat.results import FileResult, classify, combine, totals  # noqa: E402
from compat.selection import Job  # noqa: E402

SCRIPT = Job("examples", "examples/a/demo.py", "script", ("--run_mode", "npu"))
TESTS = Job("ut", "python/tests/ut/kirin/test_add.py", "pytest")


def raw(*, cases_=(), error=None, calls=0, failures=0, finished=True):
    return {"finished": finished, "error": error.to_dict() if error else None,
            "checks": {"calls": calls, "failures": failures, "first_failure": "torch.allclose at x.py:3"},
            "cases": [{"name": n, "outcome": o, "checks": 1, "check_failures": 0,
                       "failure": f.to_dict() if f else None} for n, o, f in cases_]}


MISSING = Failure("AttributeError", "module 'pypto' has no attribute 'function'", "tests/t.py:9", "tests/t.py:9",
                  "@pypto.function", "upstream")
TILE = Failure("ShapeError", "pypto.abs: the vector tile shape has 2 dims but the op has 1",
               "pypto/frontend/control.py:40", "examples/a/demo.py:12", "out[:] = pypto.abs(x)", "pypto")
IR = Failure("ImportError", "cannot import name 'pil' from 'pypto' (pypto/__init__.py)", "t.py:3", "t.py:3",
             "from pypto import ir, pil", "upstream")


@pytest.mark.parametrize("kwargs, status", [
    (dict(raw=raw(calls=3)), "verified"),
    (dict(raw=raw()), "ran"),
    (dict(raw=raw(calls=2, failures=1)), "ran"),
    (dict(raw=raw(error=MISSING, calls=1)), "failed"),
    (dict(raw=raw(error=IR)), "out_of_scope"),
    (dict(raw=raw(finished=False), returncode=-11, log_tail="Segmentation fault"), "crashed"),
    (dict(raw=raw(finished=False), timed_out=True, timeout=5), "timeout"),
])
def test_script_status(kwargs, status):
    r = classify(SCRIPT, kwargs.pop("raw"), **kwargs)
    assert r.status == status
    assert r.ran == (status in ("ran", "verified"))
    if status in ("failed", "out_of_scope"):
        assert r.failure is not None and r.failure.type in ("AttributeError", "ImportError")
    if kwargs.get("timed_out"):
        assert r.failure.type == "Timeout" and "5 s" in r.failure.message
    if kwargs.get("returncode"):
        assert "-11" in r.failure.message and "Segmentation fault" in r.failure.message


def test_check_mismatch_is_shown_as_the_failure_of_a_file_that_ran():
    r = classify(SCRIPT, raw(calls=2, failures=1))
    assert r.failure.type == "CheckMismatch" and "1 of 2" in r.failure.message and "x.py:3" in r.failure.message


def test_test_file_outcomes_and_out_of_scope_cases():
    r = classify(TESTS, raw(calls=4, cases_=[("a", "passed", None), ("b", "failed", TILE), ("c", "error", MISSING),
                                             ("d", "skipped", None), ("e", "failed", IR)]))
    assert r.status == "failed" and r.failure == TILE  # the first failing case
    assert r.cases == {"passed": 1, "failed": 1, "error": 1, "skipped": 1, "out_of_scope": 1}
    assert dict(r.case_causes) == {TILE: 1, MISSING: 1, IR: 1}
    only_oos = classify(TESTS, raw(cases_=[("e", "failed", IR), ("d", "skipped", None)]))
    assert only_oos.status == "out_of_scope" and only_oos.out_of_scope.startswith("pypto.pil")
    assert classify(TESTS, raw(cases_=[("d", "skipped", None)])).status == "skipped"
    passed_and_oos = classify(TESTS, raw(calls=1, cases_=[("a", "passed", None), ("e", "failed", IR)]))
    assert passed_and_oos.status == "verified" and passed_and_oos.cases["out_of_scope"] == 1


@pytest.mark.parametrize("failure, feature", [
    (IR, "pypto.pil"),
    (Failure("AttributeError", "module 'pypto.ir' has no attribute 'Builder'"), "pypto.pil"),
    (Failure("ModuleNotFoundError", "No module named 'pypto.pypto_impl'", source_line="from pypto.pypto_impl import ir"),
     "pypto.pil"),
    (Failure("AttributeError", "module 'pypto' has no attribute 'distributed'"), "pypto.distributed"),
    (Failure("AssertionError", "Regex pattern did not match.",
             context="AttributeError: module 'pypto.ir' has no attribute 'IRBuilder'"), "pypto.pil"),
    (Failure("ModuleNotFoundError", "No module named 'pypto_pro'"), "pypto_pro"),
    (MISSING, None), (TILE, None), (None, None),
])
def test_out_of_scope_causes(failure, feature):
    found = out_of_scope(failure)
    assert (found is None) if feature is None else found.startswith(feature)


def test_cause_key_groups_sizes_but_keeps_names():
    a = Failure("ShapeError", "tile [32, 64] exceeds 48 KB at 0x7f00ab")
    b = Failure("ShapeError", "tile [16, 128] exceeds 96 KB at 0x7f11cd")
    assert cause_key(a) == cause_key(b) == "ShapeError: tile [N, N] exceeds N KB at 0x…"
    assert cause_key(Failure("AttributeError", "no attribute 'DT_FP8E4M3'")).endswith("'DT_FP8E4M3'")
    assert cause_key(Failure("ValueError", "invalid w13 format, gamma_fp32 rank 3, tol 1.5e-3")) == \
        "ValueError: invalid w13 format, gamma_fp32 rank N, tol N"


def _results():
    return [
        classify(SCRIPT, raw(calls=1)),
        classify(Job("examples", "examples/b.py", "script"), raw(error=TILE)),
        classify(Job("models", "models/m/test_x.py", "script"), raw(error=MISSING)),
        classify(Job("models", "models/m/test_y.py", "script"), raw(error=MISSING)),
        classify(TESTS, raw(calls=2, cases_=[("a", "passed", None), ("b", "failed", TILE), ("c", "failed", TILE)])),
        classify(Job("ut", "python/tests/ut/ir/test_ir.py", "pytest"), raw(error=IR)),
        classify(Job("st", "python/tests/st/test_t.py", "pytest"), raw(finished=False), timed_out=True, timeout=9),
    ]


def test_blockers_rank_by_files_then_cases():
    ranked = report.blockers(_results())
    assert [(b.cause.split(":")[0], len(b.files), b.cases) for b in ranked] == [
        ("ShapeError", 2, 2), ("AttributeError", 2, 0), ("Timeout", 1, 0)]  # a tie on files: cases decide
    assert ranked[0].files == ["examples/b.py", "python/tests/ut/kirin/test_add.py"]


def test_totals_and_pass_rates():
    groups = totals(_results(), lambda r: r.group)
    assert (groups["examples"].files, groups["examples"].ran, groups["examples"].verified) == (2, 1, 1)
    assert groups["ut"].statuses["out_of_scope"] == 1 and groups["st"].statuses["timeout"] == 1
    kirin = totals(_results(), lambda r: selection.suite_of(r.path))["ut/kirin"]
    assert kirin.cases["passed"] == 1 and kirin.pass_rate() == pytest.approx(1 / 3)


def test_reports_render_and_round_trip():
    results = _results()
    meta = {"date": "2026-01-02", "upstream_commit": "abc123", "timeout": 9}
    md = report.to_markdown(results, meta, notes="## Notes\n\nhello")
    assert "`abc123`" in md and "2026-01-02" in md
    assert "| examples/ | 2 | 1 | 1 | 1 | 0 | 0 | 0 | 0 | – | – |" in md
    assert "| python/tests/ut | 2 | 0 | 0 | 1 | 1 | 0 | 0 | 0 | 1 / 3 | 1 |" in md
    assert "| ut/kirin | 1 | 3 | 1 | 2 | 0 | 0 | 0 | 0 | 33.3% | 33.3% | 33.3% |" in md
    blockers = md[md.index("## Blockers"):md.index("## Per file")]
    assert blockers.index("| 1 | ShapeError") < blockers.index("| 2 | AttributeError: module 'pypto' has no")
    assert "| python/tests/ut/kirin/test_add.py | failed |" in md and "1/3 passed (1 verified), 2 failed" in md
    assert "pypto/frontend/control.py:40" in md and md.rstrip().endswith("hello")
    data = json.loads(json.dumps(report.to_json(results, meta)))
    assert data["totals"]["models"]["files"] == 2 and data["blockers"][0]["files"] == 2
    back = [FileResult.from_dict(d) for d in data["files"]]
    assert sorted((r.path, r.status, r.failure) for r in back) == sorted((r.path, r.status, r.failure) for r in results)


def test_selection_rules(tmp_path):
    files = {
        "examples/validate_examples.py": "", "examples/__init__.py": "",
        "examples/a/run.py": "p.add_argument('--run_mode')\n", "examples/b/plain.py": "print(1)\n",
        "models/m/test_x.py": "if __name__ == '__main__':\n    pass\n", "models/m/x_impl.py": "def f(): pass\n",
        "python/tests/st/test_a.py": "", "python/tests/st/pypto_pro/test_p.py": "", "python/tests/st/helper.py": "",
        "python/tests/ut/kirin/k/test_k.py": "",
    }
    for rel, text in files.items():
        (tmp_path / rel).parent.mkdir(parents=True, exist_ok=True)
        (tmp_path / rel).write_text(text)
    jobs = selection.select(tmp_path)
    assert [(j.group, j.path, j.mode, j.args) for j in jobs] == [
        ("examples", "examples/a/run.py", "script", ("--run_mode", "npu")),
        ("examples", "examples/b/plain.py", "script", ()),
        ("models", "models/m/test_x.py", "script", ()),
        ("st", "python/tests/st/test_a.py", "pytest", ()),
        ("ut", "python/tests/ut/kirin/k/test_k.py", "pytest", ()),
    ]
    assert [j.path for j in selection.select(tmp_path, ["st", "ut"], only="kirin")] == ["python/tests/ut/kirin/k/test_k.py"]
    assert [j.path for j in selection.select(tmp_path, only=["*/b/*", "test_a"])] == [
        "examples/b/plain.py", "python/tests/st/test_a.py"]
    with pytest.raises(ValueError, match="unknown group"):
        selection.select(tmp_path, ["nope"])


def test_script_segments_and_numeric_asserts():
    tree = ast.parse("import os\ndef test_a():\n    assert max_diff < 1e-3, 'x'\n    assert ok\n"
                     "if __name__ == '__main__':\n    test_a()\nx = 1\nif '__main__' == __name__:\n    pass\n")
    assert [(len(s), g) for s, g in cases.segments(tree)] == [(2, False), (1, True), (1, False), (1, True)]
    rewritten = ast.unparse(cases.NumericAsserts("demo.py").visit(tree))
    assert f"assert {cases.CHECK_NAME}(max_diff < 0.001, 3), 'x'" in rewritten and "assert ok" in rewritten


def test_checks_count_only_calls_from_upstream_files(monkeypatch):
    monkeypatch.setattr(checks, "tally", checks.CheckTally())
    monkeypatch.setattr(checks, "_root", [str(Path(__file__).parent) + "/"])
    allclose = checks._wrap(lambda a, b: a == b, "allclose", "bool")
    assert_close = checks._wrap(lambda a, b: (_ for _ in ()).throw(AssertionError("far")) if a != b else None,
                                "assert_close", "raise")
    allclose(1, 1)
    allclose(1, 2)
    assert_close(1, 1)
    with pytest.raises(AssertionError):
        assert_close(1, 2)
    t = checks.tally
    assert (t.calls, t.failures) == (4, 2) and t.first_failure.startswith("allclose at test_upstream_compat.py:")
    monkeypatch.setattr(checks, "_root", ["/nowhere/"])
    allclose(1, 2)  # a call from outside the upstream tree does not count
    assert t.calls == 4


def test_a_failure_remembers_the_error_it_was_raised_while_handling(tmp_path):
    from compat.failures import from_exception

    try:
        try:
            raise AttributeError("module 'pypto.ir' has no attribute 'IRBuilder'")
        except AttributeError:
            raise AssertionError("Regex pattern did not match.") from None
    except AssertionError as e:
        failure = from_exception(e, str(tmp_path), str(tmp_path / "pypto"))
    assert failure.context == "AttributeError: module 'pypto.ir' has no attribute 'IRBuilder'"
    assert out_of_scope(failure).startswith("pypto.pil")
    assert Failure.from_dict(failure.to_dict()) == failure


def test_files_that_collected_nothing_keep_their_tests_in_the_denominators(tmp_path):
    """Issue 20: 668 upstream tests in 25 files that never collected were in no rate."""
    from compat.uncollected import test_functions, uncollected

    src = ("import unittest\nclass PILTestCase(unittest.TestCase):\n    pass\n"
           "class AssignTest(PILTestCase):\n    def test_a(self):\n        def test_inner(): pass\n"
           "    def helper(self): pass\n"
           "class TestB:\n    def test_b(self): pass\n    def test_c(self): pass\n"
           "class Other:\n    def test_not(self): pass\n"
           "def test_d(): pass\ndef helper(): pass\n")
    assert test_functions(src) == 4 and test_functions("def broken(:") == 0
    (tmp_path / "python/tests/ut/ir").mkdir(parents=True)
    (tmp_path / "python/tests/ut/ir/test_x.py").write_text(src)
    dead = FileResult("ut", "python/tests/ut/ir/test_x.py", "pytest", "failed", 1.0)
    alive = FileResult("ut", "python/tests/ut/ir/test_y.py", "pytest", "verified", 1.0)
    alive.cases["passed"] = 3
    missing = uncollected([dead, alive], tmp_path)
    assert missing == {"python/tests/ut/ir/test_x.py": 4}
    text = report.to_markdown([dead, alive], {"uncollected": missing})
    row = next(line for line in text.splitlines() if line.startswith("| ut (all)"))
    assert "| 4 |" in row and row.endswith("| 42.9% |")  # 3 passed of 3 cases + 4 not collected


def test_tests_for_the_950_only_are_listed_with_the_features_they_name(tmp_path):
    """Issue 20: the report said nothing of the tests upstream's conftest deselects on a 910B."""
    from compat.soc_features import UNNAMED, features_of, soc_only_table

    src = ("import pytest\n@pytest.mark.soc('950')\ndef test_a():\n    x = 'DT_FP8E4M3'\n"
           "@pytest.mark.soc('950')\ndef test_b():\n    pypto.interleave(x)\n"
           "def test_c():\n    pass\n")
    assert features_of(src, "test_a") == ["FP8"] and features_of(src, "test_b") == ["interleave"]
    assert features_of(src, "test_c") == ["FP8", "interleave"]  # nothing of its own: the file's
    assert features_of("def test_d(): pass\n", "test_d") == [UNNAMED]
    (tmp_path / "python/tests/st").mkdir(parents=True)
    (tmp_path / "python/tests/st/test_x.py").write_text(src)
    r = classify(Job("st", "python/tests/st/test_x.py", "pytest"),
                 {**raw(), "soc_only": [{"name": "test_x.py::test_a", "socs": ["950"], "function": "test_a"},
                                        {"name": "test_x.py::test_b", "socs": ["950"], "function": "test_b"}]})
    assert FileResult.from_dict(r.to_dict()).soc_only == r.soc_only  # kept in the JSON
    rows = soc_only_table([r], tmp_path)
    assert rows == [{"path": "python/tests/st/test_x.py", "tests": 2, "socs": ["950"],
                     "features": {"FP8": 1, "interleave": 1}}]
    text = report.to_markdown([r], {"soc_only": rows})
    assert "## Ascend-950-only tests" in text and "| python/tests/st/test_x.py | 2 | 950 | FP8 (1), interleave (1) |" in text


def test_the_plugin_records_tests_marked_for_other_socs(tmp_path):
    import pytest as _pytest

    from compat.pytest_plugin import CompatPlugin
    from compat.recorder import Recorder

    (tmp_path / "test_m.py").write_text(
        "import pytest\n@pytest.mark.soc('950')\ndef test_950(): pass\n"
        "@pytest.mark.soc('950', '910')\ndef test_both(): pass\ndef test_plain(): pass\n")
    rec = Recorder(str(tmp_path / "out.json"), "pytest")
    plugin = CompatPlugin(rec, str(tmp_path), str(tmp_path))
    _pytest.main([str(tmp_path / "test_m.py"), "-q", "-p", "no:cacheprovider", "--collect-only",
                  "-W", "ignore::pytest.PytestUnknownMarkWarning"], plugins=[plugin])
    assert [(t["function"], t["socs"]) for t in rec.data["soc_only"]] == [("test_950", ["950"])]


def test_a_compare_helper_defined_in_the_script_itself_counts(tmp_path, monkeypatch):
    """Models such as kimi's test_block_attn_res.py define the compare helper that raises on a
    mismatch in the script they run as ``__main__`` (no import hook sees it): it is wrapped before
    the main block, so its calls count as checks and a raise as a failed check."""
    from compat.recorder import Recorder

    root = tmp_path / "up"
    script = root / "models" / "kimi" / "test_block_attn_res.py"
    script.parent.mkdir(parents=True)
    script.write_text("def compare(a, b, name=''):\n    if a != b:\n        raise Exception('fail precision check')\n"
                      "def test_x(a):\n    compare(a, 1)\n"
                      "if __name__ == '__main__':\n    test_x(1)\n    test_x(2)\n")
    monkeypatch.setattr(checks, "tally", checks.CheckTally())
    monkeypatch.setattr(cases, "tally", checks.tally)
    monkeypatch.setattr(checks, "_root", [str(root) + "/"])
    monkeypatch.setattr(sys, "argv", list(sys.argv))
    monkeypatch.setattr(sys, "path", list(sys.path))
    main = sys.modules.get("__main__")
    rec = Recorder(str(tmp_path / "out.json"), "script")
    try:
        with pytest.raises(Exception, match="fail precision check"):
            cases.run_script(str(script), [], rec, str(root), str(tmp_path / "pypto"))
    finally:
        sys.modules["__main__"] = main
    assert (checks.tally.calls, checks.tally.failures) == (2, 1)
    assert [(c["name"], c["outcome"], c["checks"]) for c in rec.data["cases"]] == [("test_x", "passed", 1),
                                                                                 ("test_x", "failed", 1)]


SOC_TESTS = [{"name": "t.py::test_a", "socs": ["950"], "function": "test_a"},
             {"name": "t.py::test_k", "socs": ["kirin"], "function": "test_k"}]


@pytest.mark.parametrize("first, second, status", [
    (dict(cases_=[("a", "skipped", None)]), dict(cases_=[("a", "passed", None)], calls=2), "verified"),
    (dict(cases_=[("b", "passed", None)]), dict(cases_=[("a", "passed", None)], calls=1), "verified"),
    (dict(cases_=[("b", "passed", None)], calls=1), dict(cases_=[("a", "failed", TILE)]), "failed"),
    (dict(cases_=[("b", "passed", None)], calls=1), dict(cases_=[("a", "passed", None)], calls=2, failures=1), "ran"),
    (dict(cases_=[("a", "skipped", None)]), dict(cases_=[("a", "skipped", None)]), "skipped"),
    (dict(cases_=[("b", "passed", None)], calls=1), dict(finished=False), "crashed"),
])
def test_a_file_with_950_only_tests_is_the_sum_of_its_two_passes(first, second, status):
    """Issue 20: the 950-only tests run in a second pass on the emulated 950 (A5); the file's
    result counts both passes' cases and checks, the worse failing pass decides, else the checks."""
    job = Job("st", "python/tests/st/t.py", "pytest")
    one = classify(job, {**raw(**first), "soc_only": SOC_TESTS})
    two = classify(job, raw(**second), returncode=-9)
    both = combine(one, two, "A5")
    assert both.status == status
    assert both.checks == one.checks + two.checks and sum(both.cases.values()) == sum(one.cases.values()) + sum(
        two.cases.values())
    assert both.machines == {"A5": {"status": two.status, "tests": 1,
                                    "failure": two.failure.headline() if two.failure else None}}
    assert both.soc_only == SOC_TESTS  # what the 910B pass deselected, for the features table
    assert FileResult.from_dict(both.to_dict()).machines == both.machines
    if status == "failed":
        assert both.failure == TILE
    text = report.to_markdown([both], {"soc_only": [{"path": job.path, "tests": 2, "socs": ["950", "kirin"],
                                                    "features": {"FP8": 1}}]})
    assert f"1 950-only on A5: {two.status}" in text and "run on the emulated 950" in text


def test_the_second_pass_runs_on_the_a5_with_its_tag(tmp_path, monkeypatch):
    """The child of the 950 pass has PYPTO_MACHINE=A5 (and no other pass inherits the caller's);
    there the plugin records what upstream's conftest deselects on a 950: tests without "950"."""
    import pytest as _pytest

    from compat.pytest_plugin import CompatPlugin
    from compat.recorder import Recorder
    from compat.runner import child_env

    monkeypatch.setenv("PYPTO_MACHINE", "A3")
    assert "PYPTO_MACHINE" not in child_env(None) and child_env(None, "A5")["PYPTO_MACHINE"] == "A5"
    (tmp_path / "test_m950.py").write_text(
        "import pytest\n@pytest.mark.soc('950')\ndef test_950(): pass\n"
        "@pytest.mark.soc('910')\ndef test_910(): pass\n")
    before = pypto.get_machine()
    pypto.set_machine("A5")
    try:
        rec = Recorder(str(tmp_path / "out.json"), "pytest")
        plugin = CompatPlugin(rec, str(tmp_path), str(tmp_path))
        _pytest.main([str(tmp_path / "test_m950.py"), "-q", "-p", "no:cacheprovider", "--collect-only",
                      "-W", "ignore::pytest.PytestUnknownMarkWarning"], plugins=[plugin])
    finally:
        pypto.set_machine(before)
    assert [t["function"] for t in rec.data["soc_only"]] == ["test_910"]


@pytest.mark.parametrize("source, numeric", [
    ("max_diff < 1e-3", True),
    ("(d_tensor == result_t).all().item()", True),
    ("(out == golden).all()", True),
    ("torch.all(out == golden)", True),
    ("bool(np.all(a == b))", True),
    ("b_list == [v * 11 for v in a_list]", True),
    ("[v * 11 for v in a_list] == b_list", True),
    ("d_list == [k + idx] * len(d_list)", True),
    # not numeric checks: metadata, constants, truthiness, reductions of other things
    ("res.shape == (32, 32)", False),
    ("out.shape == [b * s, h]", False),
    ("list(out.shape) == [b * s, h]", False),
    ("len(out) == [n * 2]", False),
    ("x.dtype == pypto.DT_FP32", False),
    ("'a' == a.name", False),
    ("b_list == [1, 2, 3]", False),
    ("b_list == [v for v in a_list]", False),
    ("(mask > 0).all()", False),
    ("ok", False),
    ("isinstance(b, pypto.tensor)", False),
    ("max_diff > 1e-3", False),
    ("not a valid expression (", False),
])
def test_which_hand_written_asserts_are_numeric_checks(source, numeric):
    from compat.asserts import is_numeric_assert_source

    assert is_numeric_assert_source(source) is numeric


def test_numeric_asserts_under_pytest_count_through_the_assertion_pass_hook(tmp_path, monkeypatch):
    """A test file's passing numeric ``assert`` counts as a check (pytest_assertion_pass); a
    shape assert does not; a failing one fails the test (so the file cannot verify)."""
    import pytest as _pytest

    from compat import pytest_plugin
    from compat.recorder import Recorder

    (tmp_path / "test_n.py").write_text(
        "def test_eq():\n    a = [1, 2]\n    assert a.__len__() == 2\n    assert [x * 1 for x in a] == a\n"
        "def test_all():\n    import torch\n    t = torch.ones(3)\n    assert (t == torch.ones(3)).all().item()\n"
        "def test_shape_only():\n    import torch\n    assert torch.ones(2).shape == (2,)\n"
        "def test_wrong():\n    a = [1, 2]\n    assert a == [x * 2 for x in a]\n")
    tally = checks.CheckTally()
    monkeypatch.setattr(checks, "tally", tally)
    monkeypatch.setattr(pytest_plugin, "tally", tally)
    rec = Recorder(str(tmp_path / "out.json"), "pytest")
    plugin = pytest_plugin.CompatPlugin(rec, str(tmp_path), str(tmp_path))
    _pytest.main([str(tmp_path / "test_n.py"), "-q", "-p", "no:cacheprovider", "-p", "no:xdist",
                  "-o", "enable_assertion_pass_hook=true", "--rootdir", str(tmp_path)], plugins=[plugin])
    got = {c["name"].split("::")[-1]: (c["outcome"], c["checks"]) for c in rec.data["cases"]}
    assert got == {"test_eq": ("passed", 1), "test_all": ("passed", 1), "test_shape_only": ("passed", 0),
                   "test_wrong": ("failed", 0)}


def test_a_test_file_that_collects_nothing_but_has_a_main_block_runs_as_a_script(tmp_path):
    main = "if __name__ == '__main__':\n    run()\n"
    files = {
        "python/tests/st/test_script.py": "def run(): pass\n" + main,
        "python/tests/st/test_factory.py": "test_x = make()\n" + main,  # pytest collects test_x
        "python/tests/st/test_imported.py": "from helpers import test_y\n" + main,
        "python/tests/st/test_def.py": "def test_z(): pass\n" + main,
        "python/tests/st/test_empty.py": "x = 1\n",  # no main block: stays a (skipped) pytest file
    }
    for rel, text in files.items():
        (tmp_path / rel).parent.mkdir(parents=True, exist_ok=True)
        (tmp_path / rel).write_text(text)
    modes = {Path(j.path).name: j.mode for j in selection.select(tmp_path, ["st"])}
    assert modes == {"test_script.py": "script", "test_factory.py": "pytest", "test_imported.py": "pytest",
                     "test_def.py": "pytest", "test_empty.py": "pytest"}


def test_checks_in_python_processes_a_test_starts_count_for_that_test(tmp_path):
    """A test that runs its kernel in a process of its own (a script it writes, `-c` text):
    the checks made there count for it, a failing one as failed; pypto's own calls do not."""
    import subprocess

    from compat.runner import CHILD, child_env

    script = ("import subprocess, sys, tempfile, textwrap\n"
              "def started(body):\n"
              "    with tempfile.NamedTemporaryFile('w', suffix='.py', delete=False) as f:\n"
              "        f.write(textwrap.dedent(body))\n"
              "    return subprocess.run([sys.executable, f.name], capture_output=True, text=True)\n"
              "def test_passing():\n"
              "    out = started('import torch\\nassert torch.allclose(torch.ones(3), torch.ones(3))\\n'\n"
              "                  'torch.testing.assert_close(torch.zeros(2), torch.zeros(2))\\n')\n"
              "    assert out.returncode == 0, out.stderr\n"
              "def test_mismatch_ignored():\n"
              "    code = 'import torch; print(torch.allclose(torch.ones(3), torch.zeros(3)))'\n"
              "    out = subprocess.run([sys.executable, '-c', code], capture_output=True, text=True)\n"
              "    assert out.stdout.strip() == 'False', out.stderr\n"
              "def test_no_check():\n"
              "    out = started('import torch\\nprint(torch.ones(2).sum())\\n')\n"
              "    assert out.returncode == 0, out.stderr\n")
    root = tmp_path / "upstream"
    (root / "python/tests/st").mkdir(parents=True)
    (root / "python/tests/st/test_started.py").write_text(script)
    result = tmp_path / "result.json"
    proc = subprocess.run([sys.executable, str(CHILD), "--result", str(result), "--root", str(root), "--mode", "pytest",
                           str(root / "python/tests/st/test_started.py")],
                          cwd=root, env=child_env(Path(pypto.__file__).parent.parent), capture_output=True, text=True,
                          timeout=600)
    data = json.loads(result.read_text())
    assert data["finished"], proc.stdout + proc.stderr
    got = {c["name"].split("::")[-1]: (c["outcome"], c["checks"], c["check_failures"]) for c in data["cases"]}
    assert got == {"test_passing": ("passed", 2, 0), "test_mismatch_ignored": ("passed", 1, 1),
                   "test_no_check": ("passed", 0, 0)}, proc.stdout + proc.stderr
    assert data["checks"]["calls"] == 3 and data["checks"]["failures"] == 1
    assert "the program the test started" in data["checks"]["first_failure"]
    assert classify(Job("python/tests/st/test_started.py", "python/tests/st", "pytest"), data).status == "ran"
