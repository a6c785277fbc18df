"""Options are read when a kernel is called, not when it is decorated (as upstream).

The ``runtime_options`` dict given to ``@pypto.jit`` is kept and re-read at every call (upstream's
hello_world sets its run_mode after decorating); global settings made before a call apply to it.
The other option groups are copied at decoration, as upstream does.
"""

import pytest
import torch

import pypto
from tests.golden.helper import check_kernel, rand


def body(x: pypto.Tensor([pypto.DYNAMIC, 32], pypto.DT_FP32), out: pypto.Tensor([pypto.DYNAMIC, 32], pypto.DT_FP32)):
    pypto.set_vec_tile_shapes(8, 32)
    for b in pypto.loop(pypto.ceildiv(x.shape[0], 8)):
        out[b * 8:(b + 1) * 8, :] = pypto.exp(x[b * 8:(b + 1) * 8, :]) + 1.0


def args(n=20, seed=0):
    x = rand((n, 32), seed=seed)
    return x, torch.zeros(n, 32), torch.exp(x) + 1.0


@pytest.fixture(autouse=True)
def clean_options():
    pypto.reset_options()
    yield
    pypto.reset_options()


def test_the_upstream_hello_world_pattern_sets_run_mode_after_decorating():
    runtime_options = {"run_mode": pypto.RunMode.NPU}
    kernel = pypto.jit(runtime_options=runtime_options)(body)
    runtime_options["run_mode"] = pypto.RunMode.SIM  # what hello_world.py does for `-m sim`
    x, out, want = args()
    check_kernel(kernel, [x, out], want, out=1, loose=True)
    assert kernel.last_run.timeline.options["run_mode"] == 1


def test_a_runtime_only_change_applies_to_the_next_call_without_a_recompile():
    runtime_options = {"device_sched_mode": 1}
    kernel = pypto.jit(body, runtime_options=runtime_options)
    x, out, want = args()
    kernel(x, out)
    assert kernel.last_run.timeline.options["device_sched_mode"] == 1
    runtime_options["device_sched_mode"] = 2
    runtime_options["ready_on_host_tensors"] = ["x"]
    check_kernel(kernel, [x, out], want, out=1, loose=True)
    assert kernel.last_run.cache_hit
    assert kernel.last_run.timeline.options["device_sched_mode"] == 2
    runtime_options["ready_on_host_tensors"].append("out")  # a change inside a nested list counts too
    kernel(x, out)
    assert tuple(kernel.last_run.timeline.options["ready_on_host_tensors"]) == ("x", "out")
    del runtime_options["device_sched_mode"]  # back to the default
    kernel(x, out)
    assert kernel.last_run.timeline.options["device_sched_mode"] == 0
    info = kernel.cache_info()
    assert (info.misses, info.hits) == (1, 3)


def test_a_compile_affecting_change_recompiles_with_its_reason():
    runtime_options = {}
    kernel = pypto.jit(body, runtime_options=runtime_options)
    x, out, want = args()
    kernel(x, out)
    runtime_options["valid_shape_optimize"] = 1
    check_kernel(kernel, [x, out], want, out=1, loose=True)
    last = kernel.cache_info().calls[-1]
    assert not last.hit and "runtime.valid_shape_optimize" in last.reason
    runtime_options["valid_shape_optimize"] = 0  # the first version comes back from the cache
    kernel(x, out)
    assert kernel.last_run.cache_hit and kernel.cache_info().misses == 2


def test_a_bad_value_put_in_after_decorating_fails_at_the_call_line_and_runs_nothing():
    runtime_options = {"device_sched_mode": 0}
    kernel = pypto.jit(body, runtime_options=runtime_options)
    x, out, want = args()
    kernel(x, out)
    runtime_options["device_sched_mode"] = 9
    runtime_options_line = None
    out2 = torch.full_like(out, 7.0)
    with pytest.raises(pypto.OptionError) as info:
        runtime_options_line = _line_of_next_statement(); kernel(x, out2)  # noqa: E702
    err = info.value
    assert err.param == "runtime_options['device_sched_mode']" and "9" in str(err)
    assert "changed after decoration" in str(err) and "body" in str(err)
    assert err.loc.line == runtime_options_line and err.loc.file == __file__
    assert torch.equal(out2, torch.full_like(out, 7.0))  # nothing ran
    with pytest.raises(pypto.OptionError):  # still bad: still refused
        kernel(x, out2)
    runtime_options["devce_sched_mode"] = runtime_options.pop("device_sched_mode")
    with pytest.raises(pypto.OptionError, match="did you mean 'device_sched_mode'"):
        kernel(x, out2)
    runtime_options.clear()
    check_kernel(kernel, [x, out2], want, out=1, loose=True)


def _line_of_next_statement():
    import sys

    return sys._getframe(1).f_lineno


def test_global_settings_made_before_the_first_call_apply():
    kernel = pypto.jit(body)
    pypto.set_runtime_options(device_sched_mode=3)
    x, out, want = args()
    check_kernel(kernel, [x, out], want, out=1, loose=True)
    assert kernel.last_run.timeline.options["device_sched_mode"] == 3
    pypto.set_pass_options(enable_slice=True)  # compile-affecting: a new version, with the reason
    kernel(x, out)
    assert "pass.enable_slice" in kernel.cache_info().calls[-1].reason


def test_the_other_groups_are_copied_at_decoration_as_upstream():
    pass_options = {"enable_slice": True}
    kernel = pypto.jit(body, pass_options=pass_options)
    pass_options["enable_slice"] = "not even a bool"
    x, out, want = args()
    check_kernel(kernel, [x, out], want, out=1, loose=True)
    assert kernel.inspect(x, out).options.get("pass", "enable_slice") is True
