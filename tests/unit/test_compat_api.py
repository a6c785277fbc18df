"""Upstream's public names that are not operators (issue 9): ``pypto.error``, the enums and their
``str()``, global config, print options, semantic labels, matrix sizes, conv tile shapes,
``pypto.logging``, ``pypto.platform``, ``pypto.symbolic_scalar``, ``pypto._controller``,
dtype-annotated scalar parameters and the tensor-parameter reassignment check."""

from __future__ import annotations

import pickle

import pytest
import torch

import pypto
from pypto.error import (FeError, ParserError, PassError, PyptoError, PyptoGeneralError, PyptoRtError, VerifyError,
                         _catch_and_wrap_error)


@pytest.fixture(autouse=True)
def clean_config():
    yield
    pypto.reset_global_config()
    pypto.set_log_level(pypto.LogLevel.WARN)
    pypto.platform.npuarch = "DAV_2201"


# ---- errors ---------------------------------------------------------------------------------------------

def test_upstream_error_spellings():
    assert str(PyptoError(0xF00001, "test error")) == "ErrCode: F00001, test error"
    assert str(PyptoError(0xF00001, "ErrCode: F00003, original")).count("ErrCode") == 1
    e = FeError(ValueError("boom"))
    assert str(e) == "ErrCode: F00002, ValueError: boom" and e.code == 0xF00002
    assert PyptoGeneralError(KeyError("k")).code == 0xF00006
    assert issubclass(PyptoRtError, PyptoGeneralError) and issubclass(PassError, PyptoGeneralError)
    assert issubclass(VerifyError, PyptoGeneralError)
    p = ParserError(None, "bad node")
    assert p.node is None and "bad node" in str(p)
    with pytest.raises(TypeError):
        PyptoError("not a code", "msg")


def test_our_errors_sit_in_upstreams_families():
    assert issubclass(pypto.ShapeError, FeError) and issubclass(pypto.ShapeError, ValueError)
    assert issubclass(pypto.KernelSyntaxError, ParserError) and issubclass(pypto.AnnotationError, ParserError)
    assert issubclass(pypto.KernelRuntimeError, PyptoRtError) and issubclass(pypto.KernelRuntimeError, RuntimeError)
    e = pypto.ShapeError("bad shape", expected="[4]", got="[5]", param="x")
    assert e.code == 0xF00002
    back = pickle.loads(pickle.dumps(e))
    assert type(back) is pypto.ShapeError and str(back) == str(e)


def test_catch_and_wrap_error():
    @_catch_and_wrap_error("run")
    def fails():
        raise ValueError("inner")

    with pytest.raises(PyptoGeneralError, match="Failed to run 'fails'.\ninner") as info:
        fails()
    assert info.value.code == 0xF00002

    @_catch_and_wrap_error("run")
    def ours():
        raise pypto.ShapeError("ours")

    with pytest.raises(pypto.ShapeError):  # pypto errors pass through
        ours()
    assert _catch_and_wrap_error("x")(lambda v: v * 2)(4) == 8


# ---- enums ----------------------------------------------------------------------------------------------

def test_enums_print_and_number_as_upstream():
    assert str(pypto.CastMode.CAST_RINT) == "CastMode.CAST_RINT" and repr(pypto.OpType.GE) == "OpType.GE"
    assert str(pypto.DT_INT4) == "DataType.DT_INT4" and repr(pypto.DT_FP32) == "pypto.DT_FP32"
    assert str(pypto.TileOpFormat.TILEOP_NZ) == "TileOpFormat.TILEOP_NZ"
    assert str(pypto.CachePolicy.NONE_CACHEABLE) == "CachePolicy.NONE_CACHEABLE"
    assert str(pypto.ReduceMode.ATOMIC_ADD) == "ReduceMode.ATOMIC_ADD"
    assert [m.name for m in pypto.OutType] == ["BOOL", "BIT"]
    assert [m.name for m in pypto.TopKAlgo] == ["MERGE_SORT", "RADIX_SELECT"]
    assert (int(pypto.AtomicRMWMode.ADD), int(pypto.AtomicRMWMode.MAX), int(pypto.AtomicRMWMode.MIN)) == (0, 1, 2)
    assert (int(pypto.SaturationMode.ON), int(pypto.SaturationMode.OFF)) == (0, 1)
    assert [m.name for m in pypto.LogBaseType] == ["LOG_E", "LOG_2", "LOG_10"]
    assert [m.name for m in pypto.ReLuType] == ["NO_RELU", "RELU"] and pypto.TransMode.CAST_ROUND == 2
    assert [m.name for m in pypto.AtomicType] == ["SET", "ADD"]
    assert (pypto.ROUND_UP, pypto.ROUND_DOWN) == (pypto.DequantScaleRoundingMode.ROUND_UP, 1)


def test_bytes_of_counts_packed_types_as_one_byte():
    assert [pypto.bytes_of(d) for d in (pypto.DT_INT4, pypto.DT_HF4, pypto.DT_INT8, pypto.DT_FP16, pypto.DT_FP32,
                                        pypto.DT_INT64, pypto.DT_DOUBLE)] == [1, 1, 1, 2, 4, 8, 8]
    assert pypto.DT_INT4.itemsize == 0.5
    with pytest.raises(pypto.DTypeError):
        pypto.bytes_of("fp32")


# ---- global config, print options, labels, matrix size, conv tiles --------------------------------------------

def test_global_config_keys_defaults_and_validation():
    assert pypto.get_global_config("simulation.accuracy_level") == 1
    pypto.set_global_config("simulation.accuracy_level", 2)
    assert pypto.get_global_config("simulation.accuracy_level") == 2
    assert pypto.get_global_config("global.simulation.accuracy_level") == 2  # upstream's full key works too
    pypto.set_global_config("platform.enable_cost_model", True)
    pypto.set_global_config("codegen.parallel_compile", 10)
    pypto.set_global_config("simulation.args", ["a=1"])
    assert pypto.get_global_config("codegen.parallel_compile") == 10
    assert pypto.get_global_config("simulation.args") == ["a=1"]
    with pytest.raises(pypto.OptionError, match="did you mean 'simulation.accuracy_level'"):
        pypto.set_global_config("simulation.acuracy_level", 1)
    with pytest.raises(pypto.OptionError, match="int in \\[0, 2\\]"):
        pypto.set_global_config("simulation.accuracy_level", 3)
    with pytest.raises(pypto.OptionError):
        pypto.set_global_config("platform.enable_cost_model", 1)
    with pytest.raises(pypto.OptionError):
        pypto.get_global_config("no.such.key")
    with pytest.raises(pypto.OptionError, match="must be a str"):
        pypto.get_global_config(3)
    pypto.reset_global_config()
    assert pypto.get_global_config("simulation.accuracy_level") == 1
    assert "tensor_print.linewidth" in pypto.config.describe_global_config()


def test_print_options_are_the_tensor_print_keys():
    pypto.set_print_options(edgeitems=1, precision=2, threshold=3, linewidth=4)
    assert pypto.get_print_options() == {"edgeitems": 1, "precision": 2, "threshold": 3, "linewidth": 4}
    assert pypto.get_global_config("tensor_print.precision") == 2
    with pytest.raises(pypto.OptionError, match="'linewidth'"):
        pypto.set_print_options(linewidth=0)


def test_semantic_label_matrix_size_conv_tiles():
    pypto.set_semantic_label("Sa_V0")
    assert pypto.get_semantic_label() == "Sa_V0"
    with pytest.raises(pypto.ArgumentValueError, match="reserved"):
        pypto.set_semantic_label("func8_0")
    with pytest.raises(pypto.ArgumentTypeError):
        pypto.set_semantic_label(3)
    pypto.set_matrix_size([32, 64, 16])
    assert pypto.get_matrix_size() == [32, 64, 16]
    # upstream's convention: 0 is a size not given, a shorter list gives none
    pypto.set_matrix_size([32, 0, 16])
    assert pypto.get_matrix_size() == [32, 0, 16]
    pypto.set_matrix_size([32, 64])
    assert pypto.get_matrix_size() == [32, 64]
    for bad in ([32, 64, 16, 8], [32, -1, 16], 32):
        with pytest.raises(pypto.ArgumentValueError, match="\\[m, k, n\\]"):
            pypto.set_matrix_size(bad)
    l1 = pypto.TileL1Info(tileHin=4, tileHout=4, tileWin=8, tileWout=16, tileCinFmap=16, tileCinWeight=16,
                          tileN=16, tileBatch=1)
    pypto.set_conv_tile_shapes(l1)
    got_l1, got_l0, l0_set = pypto.get_conv_tile_shapes()
    assert got_l1 == l1 and got_l0 == pypto.TileL0Info() and not l0_set
    pypto.set_conv_tile_shapes(l1, pypto.TileL0Info(tileH=1, tileW=16, tileK=16, tileN=16))
    assert pypto.get_conv_tile_shapes()[2]
    with pytest.raises(pypto.ArgumentValueError, match="tileK"):
        pypto.set_conv_tile_shapes(l1, pypto.TileL0Info(tileK=0))


def test_semantic_label_inside_a_kernel_changes_no_number():
    @pypto.jit
    def k(x: pypto.Tensor([4, 8], pypto.DT_FP32), y: pypto.Tensor([4, 8], pypto.DT_FP32)):
        pypto.set_vec_tile_shapes(4, 8)
        pypto.set_semantic_label("scale")
        y[:] = x * 2

    x, y = torch.randn(4, 8), torch.zeros(4, 8)
    k(x, y)
    assert torch.equal(y, x * 2) and pypto.get_semantic_label() == "scale"


# ---- logging ------------------------------------------------------------------------------------------

def test_log_levels_and_stderr(capsys):
    assert pypto.get_log_level() == pypto.LogLevel.WARN
    pypto.set_log_level(pypto.LogLevel.INFO)
    assert pypto.get_log_level() == pypto.LogLevel.INFO
    for fn in (pypto.log_debug, pypto.log_info, pypto.log_warn, pypto.log_error, pypto.log_event, pypto.log_fatal):
        fn(f"{fn.__name__} message")
    err = capsys.readouterr().err
    assert "log_debug message" not in err
    for word in ("info", "warn", "error", "event", "fatal"):
        assert f"log_{word} message" in err
    assert "[pypto EVENT] log_event message" in err
    with pytest.raises(pypto.ArgumentValueError):
        pypto.set_log_level(17)


def test_check_internal_check_raise_error():
    pypto.check(True, "fine")
    with pytest.raises(ValueError, match="test check"):
        pypto.check(False, "test check")
    with pytest.raises(pypto.InternalError, match="internal"):
        pypto.internal_check(False, "internal")
    for name, kind in (("ValueError", ValueError), ("TypeError", TypeError), ("RuntimeError", RuntimeError),
                       ("NotImplementedError", NotImplementedError), ("IndexError", IndexError),
                       ("AssertionError", AssertionError), ("InternalError", pypto.InternalError),
                       ("Error", pypto.PyptoError)):
        with pytest.raises(kind, match="msg"):
            pypto.raise_error(name, "msg")
    with pytest.raises(pypto.ArgumentValueError, match="Unknown error type"):
        pypto.raise_error("UnknownType", "should fail")


# ---- platform -------------------------------------------------------------------------------------------

def test_platform_npuarch():
    assert pypto.platform.npuarch == "DAV_2201"  # A2/A3, the simulated machine
    pypto.platform.npuarch = "DAV_3510"
    assert pypto.platform.npuarch == "DAV_3510"
    with pytest.raises(pypto.ArgumentValueError, match="DAV_2201"):
        pypto.platform.npuarch = "DAV_9999"


# ---- symbolic scalars -----------------------------------------------------------------------------------

def test_symbolic_scalar_spellings():
    from pypto.symbolic_scalar import SymbolicScalar, SymInt

    assert SymbolicScalar is pypto.symbolic_scalar is pypto.SymbolicScalar and SymInt is pypto.SymInt
    s = pypto.symbolic_scalar("scalar", 10)
    assert s.is_concrete() and s.concrete() == 10
    assert pypto.symbolic_scalar(pypto.symbolic_scalar(123)).concrete() == 123
    ten, twenty = pypto.symbolic_scalar("10", 10), pypto.symbolic_scalar("20", 20)
    assert ten + twenty == pypto.symbolic_scalar("30", 30)
    assert pypto.symbolic_scalar("n").is_symbol()
    for bad in ((1.5,), ("",), ("n", 1.5), (3, 4)):
        with pytest.raises(pypto.KernelSyntaxError):
            pypto.symbolic_scalar(*bad)


# ---- pypto._controller ---------------------------------------------------------------------------------

def test_controller_loop_range_and_reset():
    loop = pypto._controller._loop_range(11, 22, 2)
    assert str(loop) == "LoopRange(11, 22, 2)"
    assert (loop.begin().concrete(), loop.end().concrete(), loop.step().concrete()) == (11, 22, 2)
    assert pypto._controller.LoopRange(5).begin().concrete() == 0
    pypto._controller.reset()
    assert pypto._controller.dump() == "" and pypto.runtime.last_function() is None
    assert pypto._controller.function is pypto.function


# ---- dtype-annotated scalar parameters -------------------------------------------------------------------

def make_scaled(dtype):
    @pypto.jit
    def scaled(x: pypto.Tensor([8], pypto.DT_FP32), out: pypto.Tensor([8], pypto.DT_FP32), alpha: dtype):
        pypto.set_vec_tile_shapes(8)
        out[:] = x * alpha

    return scaled


def test_dtype_annotated_scalars_are_checked_constants():
    k = make_scaled(pypto.DT_FP32)
    x, out = torch.randn(8), torch.zeros(8)
    k(x, out, 3)  # an int for a float scalar: the value 3.0
    assert torch.allclose(out, x * 3)
    k(x, out, 3.0)
    assert k.cache_info().hits == 1  # 3 and 3.0 are the same fp32 constant
    import numpy as np

    k(x, out, np.float32(0.5))
    assert torch.allclose(out, x * 0.5)
    for bad in ("2", True, None):
        with pytest.raises(pypto.ArgumentTypeError, match="'alpha' does not match its annotation DT_FP32"):
            k(x, out, bad)
    with pytest.raises(pypto.ArgumentTypeError, match="received a tensor"):
        k(x, out, torch.tensor(2.0))
    ki = make_scaled(pypto.DT_INT8)
    ki(x, out, -3)
    assert torch.allclose(out, x * -3)
    with pytest.raises(pypto.ArgumentTypeError, match="DT_INT8"):
        ki(x, out, 2.5)
    with pytest.raises(pypto.ArgumentValueError, match="out of range for DT_INT8"):
        ki(x, out, 200)
    with pytest.raises(pypto.ArgumentValueError, match="\\[0, 255\\]"):
        make_scaled(pypto.DT_UINT8)(x, out, -1)


# ---- reassigning a tensor parameter ----------------------------------------------------------------------

def test_reassigning_a_tensor_parameter_is_an_error():
    @pypto.jit
    def rebinds(a: pypto.Tensor([4, 4], pypto.DT_FP32), c: pypto.Tensor([4, 4], pypto.DT_FP32)):
        pypto.set_vec_tile_shapes(4, 4)
        c = a + 1  # noqa: F841 - writes nothing into c

    with pytest.raises(ParserError, match="Input tensor 'c' cannot be reassigned") as info:
        rebinds(torch.zeros(4, 4), torch.zeros(4, 4))
    assert "c[:] = ..." in str(info.value)

    @pypto.jit
    def augmented(a: pypto.Tensor([4, 4], pypto.DT_FP32), c: pypto.Tensor([4, 4], pypto.DT_FP32)):
        pypto.set_vec_tile_shapes(4, 4)
        c += a

    with pytest.raises(pypto.KernelSyntaxError, match="'c' cannot be reassigned"):
        augmented(torch.zeros(4, 4), torch.zeros(4, 4))

    mode = "move"

    @pypto.jit
    def dead_branch(a: pypto.Tensor([4, 4], pypto.DT_FP32), c: pypto.Tensor([4, 4], pypto.DT_FP32)):
        pypto.set_vec_tile_shapes(4, 4)
        if mode == "move":
            c.move(a + 1)
        else:
            c = a + 1  # noqa: F841 - never runs: upstream only rejects reassignments that run

    a, c = torch.randn(4, 4), torch.zeros(4, 4)
    dead_branch(a, c)
    assert torch.allclose(c, a + 1)


# ---- pypto.Element, SymbolicScalar.as_variable --------------------------------------------------------

def test_element_holds_a_typed_constant():
    a = pypto.element(pypto.DT_FP32, 1)
    assert pypto.element is pypto.Element and a.dtype is pypto.DT_FP32
    assert a.value == 1.0 and isinstance(a.value, float)
    b = pypto.Element(pypto.DT_INT32, 7)
    assert b.value == 7 and isinstance(b.value, int) and b == pypto.Element(pypto.DT_INT32, 7.0)
    assert pypto.Element(pypto.DT_BOOL, 1).value is True
    assert repr(b) == "pypto.Element(pypto.DT_INT32, 7)"
    with pytest.raises(AttributeError):
        b.value = 3  # read-only


def test_element_rejects_bad_arguments():
    with pytest.raises(pypto.ArgumentTypeError, match="dtype"):
        pypto.Element("fp32", 1.0)
    with pytest.raises(pypto.ArgumentTypeError, match="value"):
        pypto.Element(pypto.DT_FP32, "1.0")
    with pytest.raises(pypto.DTypeError, match="fractional value for the integer dtype DT_INT8"):
        pypto.Element(pypto.DT_INT8, 1.5)


def test_as_variable_changes_nothing():
    s = pypto.symbolic_scalar("x") + 1
    assert s.as_variable() is None and str(s) == "(x+1)"
