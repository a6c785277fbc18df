"""``pypto.pypto_impl``: upstream's binding-module names that upstream programs call, each on this
package's own implementation (error numbering, typed scalars, ScalarDivS, the compile monitor,
verify data by address, root configuration, the function recording)."""

from __future__ import annotations

from unittest import mock

import pytest
import torch

import pypto
from pypto import pypto_impl
from pypto.error import FeError, VerifyError

try:
    from tests.golden.helper import check_op, check_raises, rand
except ImportError:  # run without the repo root on sys.path
    import sys
    from pathlib import Path

    sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "golden"))
    from helper import check_op, check_raises, rand

F32 = pypto.DT_FP32


def test_external_error_numbers_and_alias():
    E = pypto_impl.ExternalError
    assert [int(E.INVALID_TYPE), int(E.INVALID_VAL), int(E.RUNTIME_ERROR), int(E.OUT_OF_RANGE)] == [1, 2, 3, 8]
    assert E.UNKNOWN is E.COMMON_EXTERNAL_ERROR and int(E.UNKNOWN) == 0xFFFF
    assert int(E.DYNAMIC_SHAPE_COMPUTE_UNSUPPORTED) == 0xA
    # the codes our errors carry are built from the same numbering
    assert pypto.OptionError("x").code == 0xF00000 | E.INVALID_VAL
    assert pypto.ArgumentTypeError("x").code == 0xF00000 | E.INVALID_TYPE


@pytest.mark.parametrize("dtype", [torch.float32, torch.float16, torch.bfloat16])
@pytest.mark.parametrize("reverse", [False, True])
def test_scalar_divs(dtype, reverse):
    pt = {torch.float32: pypto.DT_FP32, torch.float16: pypto.DT_FP16, torch.bfloat16: pypto.DT_BF16}[dtype]
    x = rand((6, 8), dtype, lo=0.5, hi=4.0, seed=1)
    check_op(lambda t: pypto_impl.ScalarDivS(t, pypto_impl.Element(pt, 127.0), reverse), [x],
             (lambda t: 127.0 / t) if reverse else (lambda t: t / 127.0))
    check_op(lambda t: pypto_impl.ScalarDivS(t, pypto_impl.Element(pt, 3.0), reverse), [x],
             (lambda t: 3.0 / t) if reverse else (lambda t: t / 3.0), mode="tiled")


def test_scalar_divs_rejects():
    x, i = rand((4, 4)), rand((4, 4), torch.int32)
    check_raises(pypto.DTypeError, lambda t: pypto_impl.ScalarDivS(t, pypto.Element(pypto.DT_INT32, 2)), [i])
    check_raises(pypto.DTypeError, lambda t: pypto_impl.ScalarDivS(t, pypto.Element(pypto.DT_FP16, 2.0)), [x])
    check_raises(pypto.ArgumentTypeError, lambda t: pypto_impl.ScalarDivS(t, 2.0), [x])


def test_compile_monitor_total_elapsed_is_the_last_compile():
    @pypto.jit
    def k(x: pypto.Tensor([4, 8], F32)):
        pypto.set_vec_tile_shapes(4, 8)
        return x + 1.0

    k(torch.zeros(4, 8))
    elapsed = pypto_impl.GetCompilerMonitorTotalElapsed()
    assert elapsed > 0 and elapsed == k.cache_info().entries[0].compile_seconds
    k(torch.zeros(4, 8))  # a cache hit compiles nothing
    assert pypto_impl.GetCompilerMonitorTotalElapsed() == elapsed


def test_device_tensor_data_reads_host_memory():
    t = torch.arange(12, dtype=torch.float32).reshape(3, 4)
    d = pypto_impl.DeviceTensorData(F32, t.data_ptr(), [3, 4])
    assert d.GetDataType() is F32 and d.GetShape() == [3, 4] and d.GetDataPtr() == t.data_ptr()
    copy = d.read()
    assert torch.equal(copy, t) and copy.data_ptr() != t.data_ptr()
    assert pypto_impl.DeviceTensorData(pypto.DT_FP16, 0, [0, 0]).read() is None
    with pytest.raises(pypto.ArgumentTypeError):
        pypto_impl.DeviceTensorData(F32, -1, [3])
    with pytest.raises(pypto.ArgumentValueError):
        pypto_impl.DeviceTensorData(F32, t.data_ptr(), [3, -4])


def _data(t, dtype=F32, shape=None):
    return pypto_impl.DeviceTensorData(dtype, t.data_ptr(), list(t.shape) if shape is None else shape)


def test_set_verify_data_refuses_goldens_of_another_dtype_or_shape():
    x, y, g = torch.zeros(2, 3), torch.zeros(2, 3), torch.zeros(2, 3)
    with pytest.raises(VerifyError, match="ErrCode: FB4003") as info:
        pypto_impl.SetVerifyData([_data(x)], [_data(y)], [_data(g), _data(g, pypto.DT_FP16)])
    assert isinstance(info.value, ValueError) and info.value.param == "goldens[1]"
    with pytest.raises(VerifyError, match="ErrCode: FB4002"):
        pypto_impl.SetVerifyData([_data(x)], [_data(y, shape=[2, 4])], [_data(g), _data(g)])


def test_set_verify_data_feeds_the_golden_check():
    @pypto.jit(verify_options={"enable_pass_verify": True})
    def k(x: pypto.Tensor([4, 8], F32), y: pypto.Tensor([4, 8], F32)):
        pypto.set_vec_tile_shapes(4, 8)
        y[:] = x * 2

    x, y = torch.randn(4, 8), torch.zeros(4, 8)
    none = pypto_impl.DeviceTensorData(pypto.DT_FP16, 0, [0, 0])
    good, bad = x * 2, x * 3
    pypto_impl.SetVerifyData([_data(x)], [_data(y)], [none, _data(good)])
    k(x, y)
    assert k.last_run.verify[-1].stage == "golden" and k.last_run.verify[-1].ok
    pypto_impl.SetVerifyData([_data(x)], [_data(y)], [none, _data(bad)])
    del bad  # the data was copied when it was set
    with pytest.raises(pypto.KernelRuntimeError, match="goldens of set_verify_golden_data"):
        k(x, y)


def test_set_global_config_routes_options_to_the_root_and_keys_to_the_global_config():
    from pypto.options import reset_root_options

    try:
        pypto_impl.SetGlobalConfig({"pass.enable_slice": True, "platform.enable_cost_model": True})
        pypto.reset_options()  # the root layer outlives it
        assert pypto.get_pass_options()["enable_slice"] is True
        assert pypto.get_global_config("platform.enable_cost_model") is True
        pypto.set_pass_options(enable_slice=False)  # settings still win over the root
        assert pypto.get_pass_options()["enable_slice"] is False
        with pytest.raises(pypto.OptionError, match="unknown key 'pass.no_such'"):
            pypto_impl.SetGlobalConfig({"pass.no_such": 1})
        with pytest.raises(pypto.OptionError, match="has invalid type"):
            pypto_impl.SetGlobalConfig({"pass.enable_slice": 1})
    finally:
        reset_root_options()
        pypto.reset_options()
        pypto.reset_global_config()
    assert pypto.get_pass_options()["enable_slice"] is False


def test_tile_infos_are_the_conv_tile_settings():
    assert pypto_impl.TileL1Info is pypto.TileL1Info and pypto_impl.TileL0Info is pypto.TileL0Info


# ---- the recording behind pypto.function ------------------------------------------------------------

@pytest.fixture
def declared():
    from pypto.frontend import control

    tiles = dict(control._global_tiles)
    pypto.runtime._device_init()
    yield pypto.tensor((8, 8), F32, "a"), pypto.tensor((8, 8), F32, "b")
    pypto.runtime._device_fini()
    pypto._controller.reset()
    control._global_tiles.update(tiles)


def test_finalize_ends_or_aborts():
    from pypto._controller import _finalize_function_recording

    assert _finalize_function_recording(None, None) is None
    func = mock.Mock()
    assert _finalize_function_recording(func, None) is None
    func.EndFunction.assert_called_once()
    func = mock.Mock()
    err = ValueError("body")
    func.AbortRecording.side_effect = RuntimeError("abort")
    assert _finalize_function_recording(func, err) is err  # the body's error wins
    func = mock.Mock()
    func.EndFunction.side_effect = RuntimeError("end")
    assert str(_finalize_function_recording(func, None)) == "end"


def test_function_gives_the_record_func_and_compiles_on_end(declared):
    a, b = declared
    with pypto.function("MAIN", a, b) as f:
        pypto.set_vec_tile_shapes(8, 8)
        b.move(a + 1.0)
    assert isinstance(f, pypto_impl.RecordFunc) and pypto._controller.Controller.in_function is False
    x, out = torch.randn(8, 8), torch.zeros(8, 8)
    pypto.runtime._device_run_once_data_from_host(pypto.from_torch(x), pypto.from_torch(out))
    assert torch.allclose(out, x + 1.0)


def test_record_func_construction_failure_is_a_frontend_error(declared):
    with mock.patch("pypto._controller.pypto_impl.RecordFunc", side_effect=RuntimeError("construct fail")):
        with pytest.raises(FeError, match="construct fail"):
            with pypto.function("MAIN"):
                pass
    assert pypto._controller.Controller.in_function is False


def test_failed_abort_keeps_the_body_error_and_leaves_no_recording(declared):
    a, b = declared
    with mock.patch.object(pypto_impl.RecordFunc, "AbortRecording", side_effect=RuntimeError("abort fail")):
        with pytest.raises(FeError, match="user"):
            with pypto.function("MAIN", a, b):
                raise ValueError("user")
    assert pypto._controller.Controller.in_function is False
    with pypto.function("MAIN2", a, b):  # the tracer was left although the abort failed
        pypto.set_vec_tile_shapes(8, 8)
        b.move(a * 2.0)


def test_log_functions_are_the_package_logger(capfd):
    for level in ("info", "warn", "error", "event", "fatal"):
        assert getattr(pypto_impl, f"log_{level}") is getattr(pypto.logging, f"log_{level}")
    pypto_impl.log_error("impl error message")
    assert "impl error message" in capfd.readouterr().err


def test_op_wrapper_records_ops_and_wraps_foreign_errors():
    from pypto.operation import op_wrapper

    @op_wrapper
    def scalar_div(t, other, reverse=False):
        """Divide by a scalar of the tensor's dtype."""
        return pypto_impl.ScalarDivS(t, pypto_impl.Element(t.dtype, other), reverse)

    assert scalar_div.__doc__ == "Divide by a scalar of the tensor's dtype."
    x = rand((4, 8), lo=1.0, hi=2.0, seed=5)
    check_op(lambda t: scalar_div(t, 4.0, True), [x], lambda t: 4.0 / t)

    @op_wrapper
    def broken(t):
        raise KeyError("no such thing")

    with pytest.raises(FeError, match="no such thing") as info:
        broken(None)
    assert isinstance(info.value.__cause__, KeyError)
