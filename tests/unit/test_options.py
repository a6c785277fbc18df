"""Tests of the option table, validation, setters, scopes and resolution (pypto/options.py)."""

from __future__ import annotations

import importlib
import pickle

import pytest

from pypto import scopes
from pypto.errors import OptionError, PyptoError

# ``pypto.options`` may be shadowed by the options() function once the package re-exports it.
O = importlib.import_module("pypto.options")

INT_SPECS = [s for s in O.OPTIONS.values() if s.kind == "int"]
ids = lambda s: s.key  # noqa: E731


@pytest.fixture(autouse=True)
def clean_state():
    O.reset_options()
    assert not O.active_scopes()
    yield
    scopes._current.set(scopes.Stack())  # a test that left a scope open
    O.reset_options()


# ---- the table ---------------------------------------------------------------------------------

def test_groups_and_keys():
    assert O.GROUPS == ("codegen", "host", "pass", "runtime", "verify", "debug", "operation")
    assert O.JIT_GROUPS == O.GROUPS[:-1]
    expected = {
        "runtime": {"run_mode", "device_sched_mode", "stitch_function_max_num", "max_workspace_kb",
                    "valid_shape_optimize", "ready_on_host_tensors", "device_sched_parallelism",
                    "launch_sched_aicpu_num", "launch_early_mode", "memory_budget_mb"},
        "host": {"compile_stage", "compile_monitor_enable", "compile_timeout", "compile_timeout_stage",
                 "compile_monitor_print_interval"},
        "pass": {"vec_nbuffer_setting", "cube_l1_reuse_setting", "cube_nbuffer_setting", "sg_set_scope",
                 "sg_set_ooo_scope", "ooo_sched_mode", "auto_mix_partition", "sg_set_tunevf_mode",
                 "enable_slice", "pg_parallel_lower_bound", "pg_lower_bound", "pg_partition_algorithm",
                 "mg_copyin_upper_bound", "mg_vec_parallel_lb", "copyout_resolve_coalescing",
                 "ooo_sort_mode_aic", "ooo_sort_mode_aiv"},
        "codegen": {"support_dynamic_aligned", "soc_version", "enable_pmu_trace", "vf_options"},
        "verify": {"enable_pass_verify", "pass_verify_save_tensor", "pass_verify_save_tensor_dir",
                   "pass_verify_pass_filter", "pass_verify_error_tol"},
        "debug": {"compile_debug_mode", "runtime_debug_mode", "dump_pass_graph", "serial_execution"},
        "operation": {"combine_axis"},
    }
    for group, names in expected.items():
        assert set(O.current(group)) == names
    assert len(O.OPTIONS) == sum(map(len, expected.values()))


def test_getters_list_what_the_setters_take():
    """As upstream: get_<group>_options() has exactly the setter's keyword parameters; internal
    tuning knobs are set through set_options only."""
    import inspect

    internal = {"pg_parallel_lower_bound", "pg_lower_bound", "pg_partition_algorithm", "mg_copyin_upper_bound",
                "mg_vec_parallel_lb", "copyout_resolve_coalescing", "ooo_sort_mode_aic", "ooo_sort_mode_aiv"}
    for group in O.GROUPS:
        setter, getter = getattr(O, f"set_{group}_options"), getattr(O, f"get_{group}_options")
        params = inspect.signature(setter).parameters
        assert set(params) == set(getter()) == set(O.current(group)) - internal
        assert all(p.kind is p.KEYWORD_ONLY and p.default is None for p in params.values())
    assert not internal & set(O.get_pass_options())
    O.set_options(pass_options={"pg_lower_bound": 64})
    assert O.current("pass")["pg_lower_bound"] == 64 and O.effective().get("pass", "pg_lower_bound") == 64
    with pytest.raises(OptionError, match="internal option") as info:
        O.set_pass_options(pg_lower_bound=3)
    assert isinstance(info.value, TypeError)
    with pytest.raises(TypeError, match="did you mean 'enable_slice'"):
        O.set_pass_options(enable_slices=True)


def test_getters_return_user_forms_and_none_leaves_a_value():
    O.set_debug_options(dump_pass_graph=["A", "B"])
    O.set_verify_options(pass_verify_error_tol=(1e-2, 1e-4))
    assert O.get_debug_options()["dump_pass_graph"] == ["A", "B"]
    assert O.get_verify_options()["pass_verify_error_tol"] == [1e-2, 1e-4]
    assert type(O.get_pass_options()["cube_nbuffer_setting"]) is dict
    O.set_debug_options(dump_pass_graph=None, runtime_debug_mode=2)
    assert O.get_debug_options()["dump_pass_graph"] == ["A", "B"]
    assert O.current("debug")["dump_pass_graph"] == ("A", "B")  # the normalised, hashable form


@pytest.mark.parametrize("s", list(O.OPTIONS.values()), ids=ids)
def test_default_validates_and_is_hashable(s):
    assert s.validate(s.default) == s.default
    hash(s.default)
    assert s.doc and s.group in O.GROUPS


def test_selected_defaults():
    assert O.get_runtime_options()["run_mode"] == O.RunMode.SIM == 1
    assert O.get_runtime_options()["launch_sched_aicpu_num"] == 7
    assert O.get_pass_options()["cube_nbuffer_setting"] == {-1: 1}
    assert O.get_pass_options()["sg_set_scope"] == (-1, False, False)
    assert O.get_pass_options()["enable_slice"] is False
    assert O.get_host_options()["compile_stage"] == O.CompStage.ALL_COMPLETE
    assert O.get_host_options()["compile_monitor_enable"] == 1
    assert O.get_operation_options() == {"combine_axis": True}


def test_affects_compile_flags():
    not_compile = {n for (g, n), s in O.OPTIONS.items() if not s.affects_compile}
    assert not_compile == {"run_mode", "device_sched_mode", "stitch_function_max_num",
                           "ready_on_host_tensors", "device_sched_parallelism", "launch_sched_aicpu_num",
                           "launch_early_mode", "max_workspace_kb", "serial_execution", "memory_budget_mb"}
    assert O.spec("runtime", "valid_shape_optimize").affects_compile


# ---- validation --------------------------------------------------------------------------------

@pytest.mark.parametrize("s", INT_SPECS, ids=ids)
def test_int_range_edges(s):
    for ok in (s.low, s.high, *s.special):
        assert s.validate(ok) == ok
    for bad in (s.low - 1, s.high + 1):
        if bad in s.special:
            continue
        with pytest.raises(OptionError, match=s.name) as info:
            s.validate(bad)
        assert isinstance(info.value, ValueError)
        assert info.value.param == f"{s.group}_options[{s.name!r}]"
        assert str(bad) in str(info.value)


@pytest.mark.parametrize("s", [s for s in INT_SPECS if not s.legacy_bool], ids=ids)
def test_bool_rejected_for_int(s):
    with pytest.raises(OptionError, match="bool"):
        s.validate(True)


@pytest.mark.parametrize("call", [
    lambda: O.set_pass_options(sg_set_scope="aa"),
    lambda: O.set_pass_options(cube_nbuffer_setting=[1, 2]),
    lambda: O.set_host_options(compile_monitor_enable="true"),
    lambda: O.set_host_options(compile_timeout="100"),
    lambda: O.set_codegen_options(support_dynamic_aligned="true"),
    lambda: O.set_verify_options(pass_verify_save_tensor_dir=123),
    lambda: O.set_debug_options(runtime_debug_mode="1"),
    lambda: O.set_debug_options(dump_pass_graph=1),
    lambda: O.set_debug_options(dump_pass_graph="RemoveRedundantReshape"),
    lambda: O.set_debug_options(dump_pass_graph=["RemoveRedundantReshape", 1]),
    lambda: O.set_options(runtime_options={"stitch_function_max_num": "aa"}),
    lambda: O.set_options(runtime_options={"ready_on_host_tensors": "tensor0"}),
    lambda: O.set_options(runtime_options={"ready_on_host_tensors": ["x", 1, "y"]}),
    lambda: O.set_options(verify_options={"pass_verify_pass_filter": False}),
    lambda: O.set_options(verify_options={"pass_verify_error_tol": "0.1,0.1"}),
])
def test_wrong_types_are_type_errors(call):
    """The cases upstream's option tests reject as a wrong type: a TypeError naming the option."""
    before = {g: O.current(g) for g in O.GROUPS}
    with pytest.raises(TypeError, match="has invalid (list element )?type") as info:
        call()
    assert isinstance(info.value, OptionError) and info.value.param.endswith("]")
    assert {g: O.current(g) for g in O.GROUPS} == before


@pytest.mark.parametrize("call", [
    lambda: O.set_pass_options(sg_set_scope=-2),
    lambda: O.set_pass_options(sg_set_scope=(2147483648, True, False)),
    lambda: O.set_pass_options(sg_set_ooo_scope=100001),
    lambda: O.set_pass_options(sg_set_ooo_scope=-2),
    lambda: O.set_pass_options(cube_l1_reuse_setting={-11: 2}),
    lambda: O.set_host_options(compile_timeout=-10),
    lambda: O.set_options(runtime_options={"not_exist": 1}),
])
def test_out_of_range_values_and_unknown_keys_are_value_errors(call):
    with pytest.raises(OptionError) as info:
        call()
    assert isinstance(info.value, ValueError) and not isinstance(info.value, TypeError)


def test_legacy_bool_int_option():
    O.set_host_options(compile_monitor_enable=True)
    assert O.get_host_options()["compile_monitor_enable"] == 1


@pytest.mark.parametrize("s", [s for s in O.OPTIONS.values() if s.kind == "bool"], ids=ids)
def test_int_rejected_for_bool(s):
    with pytest.raises(OptionError):
        s.validate(1)


def test_enum_values():
    s = O.spec("runtime", "run_mode")
    assert s.validate(O.RunMode.NPU) == 0 and type(s.validate(O.RunMode.NPU)) is int
    O.set_runtime_options(run_mode=O.RunMode.NPU)
    assert O.effective().run_mode is O.RunMode.NPU
    assert O.spec("host", "compile_stage").validate(O.CompStage.TILE_GRAPH) == 2
    assert O.spec("debug", "runtime_debug_mode").validate(3) == 3


def test_special_int_value():
    s = O.spec("pass", "sg_set_ooo_scope")
    assert s.validate(-1) == -1
    with pytest.raises(OptionError):
        s.validate(0)


def test_unknown_key_suggests():
    with pytest.raises(OptionError) as info:
        O.validate_group("runtime", {"devce_sched_mode": 1}, param="runtime_options")
    text = str(info.value)
    assert "unknown option 'devce_sched_mode' in runtime_options" in text
    assert "did you mean 'device_sched_mode'?" in text and "launch_early_mode" in text
    with pytest.raises(OptionError, match="stitch_function_inner_memory"):  # deprecated beta key
        O.set_runtime_options(stitch_function_inner_memory=10)
    with pytest.raises(OptionError, match="unknown option group"):
        O.validate_group("runtim", {})


def test_validate_group_normalises_only_given_keys():
    given = {"ready_on_host_tensors": ["a", "b"], "run_mode": O.RunMode.SIM}
    got = O.validate_group("runtime_options", given)
    assert got == {"ready_on_host_tensors": ("a", "b"), "run_mode": 1}
    assert O.validate_group("pass", None) == {}
    with pytest.raises(OptionError, match="must be a dict"):
        O.validate_group("pass", [("enable_slice", True)])


def test_str_list_pair_kinds():
    assert O.spec("pass", "ooo_sched_mode").validate("HLF") == "HLF"
    with pytest.raises(OptionError, match="GAPMIN"):
        O.spec("pass", "ooo_sched_mode").validate("hlf")
    dump = O.spec("debug", "dump_pass_graph")
    assert dump.validate(["ExpandFunction"]) == ("ExpandFunction",)
    for bad in ("ExpandFunction", 1, ["a", 1]):  # a bare str is a type error, as upstream
        with pytest.raises(OptionError, match="has invalid (list element )?type") as info:
            dump.validate(bad)
        assert isinstance(info.value, TypeError)
    tol = O.spec("verify", "pass_verify_error_tol")
    assert tol.validate([1e-2, 0]) == (0.01, 0.0)
    for bad, kind in (([1e-3], ValueError), ((1e-3, -1.0), ValueError), ((True, 1e-3), TypeError),
                      ("1e-3", TypeError), ("0.1,0.1", TypeError)):
        with pytest.raises(kind):
            tol.validate(bad)


def test_dict_options():
    vec = O.spec("pass", "vec_nbuffer_setting")
    got = vec.validate({"func8_0": 2, "DEFAULT": 4, "V1": 1})
    assert got == {"DEFAULT": 4, "V1": 1, "func8_0": 2} and hash(got) == hash(vec.validate(dict(got)))
    with pytest.raises(TypeError):
        got["x"] = 1
    assert pickle.loads(pickle.dumps(got)) == got
    assert vec.validate({-1: 2, 0: 4}) == {-1: 2, 0: 4}
    # keys: -2 is the least int key of vec_nbuffer_setting, -1 of the cube settings; other strs
    # (also 'func_0', 'func12') are semantic labels, which may sit next to int keys
    assert vec.validate({-2: 0}) == {-2: 0} and vec.validate({"DEFAULT": 0}) == {"DEFAULT": 0}
    assert vec.validate({"func_0": 1, "func12": 2, "conv": 3}) == {"func_0": 1, "func12": 2, "conv": 3}
    assert vec.validate({-1: 4, "conv": 2}) == {-1: 4, "conv": 2}
    for bad, kind in (({-1: 2, "DEFAULT": 1}, ValueError), ({-3: 1}, ValueError), ({"DEFAULT": -1}, ValueError),
                      ({1.5: 1}, TypeError), ([1], TypeError), ({0: "1"}, TypeError), ({"": 1}, ValueError)):
        with pytest.raises(kind) as info:
            vec.validate(bad)
        assert isinstance(info.value, OptionError)
    with pytest.raises(OptionError, match="cannot mix"):
        vec.validate({-1: 4, "func123_0": 2})
    nbuf = O.spec("pass", "cube_nbuffer_setting")
    for bad in ({-2: 1}, {0: 0}):
        with pytest.raises(OptionError):
            nbuf.validate(bad)
    l1 = O.spec("pass", "cube_l1_reuse_setting")
    assert l1.validate({0: [4, "left"], 1: (2, "RIGHT"), 2: (3, "auto"), 3: 0}) == \
        {0: (4, "left"), 1: (2, "right"), 2: 3, 3: 0}
    for bad, kind in (({0: (4, "up")}, ValueError), ({0: (0, "left")}, ValueError), ({0: (1, 2, 3)}, ValueError),
                      ({0: ("4", "left")}, TypeError), ({-11: 2}, ValueError), ({0: 1.0}, TypeError)):
        with pytest.raises(kind):
            l1.validate(bad)


def test_scope_option():
    s = O.spec("pass", "sg_set_scope")
    assert s.validate(3) == (3, False, False)
    assert s.validate([1, True, False]) == (1, True, False)
    for bad, kind in ((-2, ValueError), (2**31, ValueError), ((-1, True, False), ValueError),
                      ((1, True), ValueError), ((1, 1, 0), TypeError), ((1, "True", True), TypeError),
                      (True, TypeError), ("aa", TypeError)):
        with pytest.raises(kind) as info:
            s.validate(bad)
        assert isinstance(info.value, OptionError)


# ---- setters, scopes, resolution ---------------------------------------------------------------

def test_set_get_round_trip_and_reset():
    O.set_runtime_options(device_sched_mode=2, ready_on_host_tensors=["x"])
    O.set_pass_options(enable_slice=True)
    assert O.get_runtime_options()["device_sched_mode"] == 2
    assert O.current("runtime")["ready_on_host_tensors"] == ("x",)
    O.set_pass_options(**O.get_pass_options())  # get -> set is accepted as is
    assert O.get_pass_options()["enable_slice"] is True
    O.set_options(debug_options={"runtime_debug_mode": 3}, runtime_options={"launch_early_mode": 1})
    assert O.get_debug_options()["runtime_debug_mode"] == 3
    O.reset_options()
    assert O.get_runtime_options()["device_sched_mode"] == 0
    assert O.get_pass_options()["enable_slice"] is False


def test_failed_set_changes_nothing():
    O.set_runtime_options(device_sched_mode=1)
    version = O.state_version()
    before = {g: O.current(g) for g in O.GROUPS}
    with pytest.raises(OptionError):
        O.set_runtime_options(device_sched_mode=3, stitch_function_max_num=0)
    with pytest.raises(OptionError):
        O.set_options(runtime_options={"device_sched_mode": 2}, pass_options={"enable_slice": 1})
    assert {g: O.current(g) for g in O.GROUPS} == before
    assert O.state_version() == version


def test_nested_scopes():
    O.set_runtime_options(device_sched_mode=1)
    with O.options(runtime_options={"device_sched_mode": 2}, pass_options={"enable_slice": True}):
        assert O.current("runtime")["device_sched_mode"] == 2
        with O.options(runtime_options={"device_sched_mode": 3}):
            assert O.current("runtime")["device_sched_mode"] == 3
            assert O.current("pass")["enable_slice"] is True  # inherited
            O.set_pass_options(enable_slice=False)  # writes into the innermost scope
            assert O.current("pass")["enable_slice"] is False
        assert O.current("pass")["enable_slice"] is True
        assert O.current("runtime")["device_sched_mode"] == 2
    assert O.current("runtime")["device_sched_mode"] == 1
    assert O.current("pass")["enable_slice"] is False


def test_scope_is_exception_safe_and_validates_early():
    with pytest.raises(RuntimeError):
        with O.options(debug_options={"compile_debug_mode": 1}):
            raise RuntimeError("boom")
    assert O.current("debug")["compile_debug_mode"] == 0 and not O.active_scopes()
    with pytest.raises(OptionError, match="runtime.device_sched_mode"):
        O.options(runtime_options={"device_sched_mode": 9})
    with pytest.raises(OptionError, match="did you mean"):
        O.options(pass_options={"enable_slices": True})


def test_decorator():
    scope = O.options(pass_options={"enable_slice": True})

    @scope
    def probe(depth=0):
        """Doc."""
        inner = probe(depth + 1) if depth < 2 else None  # re-entrant (recursion)
        return O.current("pass")["enable_slice"], O.active_scopes(), inner

    assert probe.__name__ == "probe" and probe.__doc__ == "Doc." and probe.__pypto_options__ is scope
    assert probe() == (True, 1, (True, 2, (True, 3, None)))
    assert not O.active_scopes() and O.current("pass")["enable_slice"] is False


def test_state_version_and_effective_cache():
    v0 = O.state_version()
    e0 = O.effective()
    assert O.effective() is e0
    O.set_runtime_options(device_sched_mode=1)
    v1 = O.state_version()
    assert v1 > v0 and O.effective() is not e0
    with O.options():
        assert O.state_version() > v1


def test_effective_and_compile_key():
    base = O.effective()
    assert base.get("runtime", "run_mode") == 1 and base.run_mode is O.RunMode.SIM
    assert base.values == tuple(sorted(base.values))
    hash(base)
    sched = O.effective({"runtime": {"device_sched_mode": 3}})
    assert sched.get("runtime", "device_sched_mode") == 3 and sched != base
    assert sched.compile_key() == base.compile_key()
    assert sched.non_default() == {"runtime.device_sched_mode": 3}
    sliced = O.effective({"pass_options": {"enable_slice": True}})
    assert sliced.compile_key() != base.compile_key()
    assert O.effective({"runtime": {"valid_shape_optimize": 1}}).compile_key() != base.compile_key()
    with O.options(pass_options={"enable_slice": True}):
        assert O.effective().compile_key() == sliced.compile_key()
    assert base.group("runtime") == base.runtime() == O.current("runtime")
    assert base.with_overrides({"runtime": {"device_sched_mode": 3}}) == sched
    with pytest.raises(OptionError, match="did you mean"):
        base.get("runtime", "run_mod")
    with pytest.raises(OptionError):
        O.effective({"runtime": {"device_sched_mode": -1}})


def test_describe_lists_every_option():
    text = O.describe()
    for s in O.OPTIONS.values():
        assert f"`{s.key}`" in text
    assert "int in [1, 7]" in text


def test_errors_are_pypto_errors_and_no_torch_import():
    assert issubclass(OptionError, PyptoError)
    import subprocess
    import sys
    code = "import sys, pypto.options; assert 'torch' not in sys.modules and 'numpy' not in sys.modules"
    subprocess.run([sys.executable, "-c", code], check=True)


def test_root_options_survive_reset():
    try:
        O.set_root_options(pass_options={"enable_slice": True})
        O.set_pass_options(enable_slice=False)
        assert O.get_pass_options()["enable_slice"] is False
        O.reset_options()
        assert O.get_pass_options()["enable_slice"] is True
        with O.options(pass_options={"enable_slice": False}):
            assert O.get_pass_options()["enable_slice"] is False
        with pytest.raises(OptionError):
            O.set_root_options(pass_options={"enable_slice": 1})
    finally:
        O.reset_root_options()
    assert O.get_pass_options()["enable_slice"] is False


# ---- what an option error says (upstream's tests look for these facts) ------------------------------

@pytest.mark.parametrize("call,facts", [
    (lambda: O.set_host_options(compile_timeout="100"),
     ["ErrCode: F00001", "ExternalError::INVALID_TYPE", "Option 'host.compile_timeout' has invalid type",
      "Expected int64, but got string"]),
    (lambda: O.set_codegen_options(support_dynamic_aligned="true"), ["Expected bool, but got string"]),
    (lambda: O.set_verify_options(pass_verify_save_tensor_dir=123), ["Expected string, but got int64"]),
    (lambda: O.set_pass_options(cube_nbuffer_setting=[1, 2]), ["Expected dict[int64, int64], but got list[int64]"]),
    (lambda: O.set_debug_options(dump_pass_graph="x"), ["Expected list[string], but got string"]),
    (lambda: O.set_options(verify_options={"pass_verify_error_tol": "0.1"}), ["Expected list[double], but got string"]),
    (lambda: O.set_pass_options(sg_set_scope="aa"), ["Expected int64 or tuple, but got string"]),
    (lambda: O.set_options(runtime_options={"ready_on_host_tensors": ["x", 1]}),
     ["'runtime.ready_on_host_tensors' has invalid list element type at index 1", "Expected str, but got int"]),
    (lambda: O.set_pass_options(sg_set_scope=(1, "True", True)), ["entry 1 has invalid type", "Expected bool"]),
])
def test_type_error_messages(call, facts):
    with pytest.raises(OptionError) as info:
        call()
    assert isinstance(info.value, TypeError)
    for fact in facts:
        assert fact in str(info.value)


@pytest.mark.parametrize("call,facts", [
    (lambda: O.set_pass_options(sg_set_scope=-2), ["'pass.sg_set_scope' scope_id -2 is out of range",
                                                   "Expected -1~2147483647."]),
    (lambda: O.set_pass_options(sg_set_scope=(1, True)), ["Expected 3 entries, but got 2"]),
    (lambda: O.set_pass_options(sg_set_ooo_scope=100001),
     ["Invalid sg_set_ooo_scope: '100001'. Expected -1 or an integer in [1, 100000]."]),
    (lambda: O.set_host_options(compile_timeout=-10),
     ["Option 'host.compile_timeout' value doesn't within the value range", "an integer in [0, 2147483647]"]),
    (lambda: O.set_pass_options(cube_l1_reuse_setting={-11: 2}),
     ["'pass.cube_l1_reuse_setting' value doesn't within the value range", "int key -11"]),
    (lambda: O.set_options(runtime_options={"not_exist": 1}), ["key: runtime.not_exist does not exist"]),
])
def test_value_error_messages(call, facts):
    with pytest.raises(OptionError) as info:
        call()
    assert not isinstance(info.value, TypeError)
    for fact in facts:
        assert fact in str(info.value)
