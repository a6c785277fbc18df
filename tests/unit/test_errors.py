"""The error contract: every bad input gets a clear error.

Each error is a ``pypto.PyptoError`` *and* the matching builtin, names the parameter or option,
says what was expected and what came, and points at the user's kernel line (this file, the exact
line). A failed call changes none of the tensors passed, and the next good call works.

Expected lines are found through ``# @L:<name>`` marker comments, never hard-coded.
"""

import os
import re

import pytest
import torch

import pypto
from pypto.errors import (AnnotationError, ArgumentTypeError, ArgumentValueError, BackendUnavailableError,
                          DTypeError, KernelSyntaxError, OptionError, PyptoError, ShapeError,
                          UnsupportedDTypeError)
from pypto.frontend import builder

HERE = os.path.abspath(__file__)
with open(HERE, encoding="utf-8") as _f:
    _LINES = _f.read().splitlines()


def line_of(name: str) -> int:
    """The 1-based line of this file carrying the marker ``# @L:<name>`` (exactly one)."""
    tag = re.compile(r"#\s*@L:" + re.escape(name) + r"\b")
    found = [i + 1 for i, text in enumerate(_LINES) if tag.search(text)]
    assert len(found) == 1, f"marker {name!r} found on lines {found}"
    return found[0]


def check_error(e: BaseException, cls, builtin, names, line: int) -> str:
    """Type, builtin, wording (names, expected, got) and location (this file, exact line)."""
    assert isinstance(e, cls), f"{type(e).__name__} is not {cls.__name__}: {e}"
    assert isinstance(e, PyptoError)
    assert isinstance(e, builtin), f"{type(e).__name__} is not a {builtin.__name__}"
    msg = str(e)
    for word in names:
        assert word in msg, f"{word!r} not in message:\n{msg}"
    assert "expected" in msg, msg
    assert "got" in msg, msg
    assert e.loc is not None, msg
    assert os.path.abspath(e.loc.file) == HERE and e.loc.line == line, (e.loc, line)
    base = os.path.basename(HERE)
    assert re.search(re.escape(base) + r":" + str(line) + r"\b", msg), f"{base}:{line} not in message:\n{msg}"
    return msg


def snapshot(*tensors):
    return [t.clone() for t in tensors]


def assert_unchanged(tensors, snaps):
    for t, s in zip(tensors, snaps):
        assert t.dtype == s.dtype and t.shape == s.shape
        assert torch.equal(t, s), "a failed call changed a tensor the caller passed"


def fails(kernel, args, kwargs, cls, builtin, names, line) -> PyptoError:
    """Call ``kernel``, expect the error, check it and that no tensor argument changed."""
    tensors = [a for a in list(args) + list(kwargs.values()) if isinstance(a, torch.Tensor)]
    snaps = snapshot(*tensors)
    with pytest.raises(cls) as ei:
        kernel(*args, **kwargs)  # @L:call
    check_error(ei.value, cls, builtin, names, line)
    assert_unchanged(tensors, snaps)
    assert builder.current() is None, "a failed compile left a tracer active"
    return ei.value


def fails_at_call(kernel, args, kwargs, cls, builtin, names, def_line) -> PyptoError:
    """A bad argument: the error points at the call that passed it and names the kernel's def."""
    e = fails(kernel, args, kwargs, cls, builtin, names, line_of("call"))
    base = os.path.basename(HERE)
    assert f"is defined at {base}:{def_line}" in str(e), str(e)
    return e


@pytest.fixture(autouse=True)
def clean_state():
    pypto.reset_options()
    saved = pypto.frontend.control._global_tiles.copy()
    yield
    pypto.frontend.control._global_tiles.update(saved)
    pypto.reset_options()


F32 = pypto.DT_FP32
ROWS = pypto.Tensor([pypto.DYNAMIC, 32], F32)


def rnd(*shape, dtype=torch.float32):
    return torch.randn(*shape).to(dtype)


# ---- kernels ---------------------------------------------------------------------------------------

@pypto.jit
def add_one(x: pypto.Tensor([pypto.DYNAMIC, 32], pypto.DT_FP32), out: pypto.Tensor([pypto.DYNAMIC, 32], pypto.DT_FP32), scale=1.0):  # @L:add_one
    pypto.set_vec_tile_shapes(8, 32)
    out[:] = x * scale + 1.0


def check_add_one(x, out, scale=1.0):
    add_one(x, out, scale)
    torch.testing.assert_close(out, x * scale + 1.0)


@pypto.jit(debug_options={"runtime_debug_mode": 3})
def add_one_dbg(x: pypto.Tensor([pypto.DYNAMIC, 32], pypto.DT_FP32), out: pypto.Tensor([pypto.DYNAMIC, 32], pypto.DT_FP32)):  # @L:add_one_dbg
    out[:] = x + 1.0


@pypto.jit
def shared_n(x: pypto.Tensor([pypto.frontend.dynamic("N"), 32], F32), y: pypto.Tensor([pypto.frontend.dynamic("N"), 32], F32)):  # @L:shared_n
    y[:] = x + 1.0


@pypto.jit
def needs_n(x: pypto.Tensor([pypto.DYNAMIC, 32], F32), out: pypto.Tensor([pypto.DYNAMIC, 32], F32), n):  # @L:needs_n
    out[:] = x + n


@pypto.jit
def fp8_param(x: pypto.Tensor([pypto.DYNAMIC, 32], pypto.DT_FP8)):  # @L:fp8_param
    pass


@pypto.jit
def const_first(n, x: pypto.Tensor([pypto.DYNAMIC, 32], F32)):  # @L:const_first
    pass


@pypto.jit
def ellipsis_first(x: pypto.Tensor([..., pypto.DYNAMIC], F32)):  # @L:ellipsis_first
    pass


@pypto.jit
def str_dim(x: pypto.Tensor([pypto.DYNAMIC, "32"], F32)):  # @L:str_dim
    pass


def plain_copy(x: pypto.Tensor([pypto.DYNAMIC, 32], F32), out: pypto.Tensor([pypto.DYNAMIC, 32], F32)):  # @L:plain_copy
    out[:] = x + 0.0


# ---- call-time argument errors -------------------------------------------------------------------

def test_wrong_dtype():
    x, out = rnd(8, 32), rnd(8, 32)
    e = fails_at_call(add_one, (x.to(torch.int32), out), {}, ArgumentTypeError, TypeError,
              ["'x'", "DT_FP32", "DT_INT32"], line_of("add_one"))
    assert e.param == "x"
    check_add_one(x, out)


def test_wrong_rank():
    x, out = rnd(8, 32), rnd(8, 32)
    e = fails_at_call(add_one, (x[0], out), {}, ArgumentValueError, ValueError,
              ["'x'", "rank 1", "rank 2", "[32]"], line_of("add_one"))
    assert e.param == "x"
    # a marker annotation takes higher ranks too (as upstream), but its listed dims still bind
    e = fails_at_call(add_one, (x[None], out), {}, ArgumentValueError, ValueError,
              ["'x'", "dim 1", "== 32", "[1, 8, 32]"], line_of("add_one"))
    assert e.param == "x"
    check_add_one(x, out)


def test_fixed_dim_mismatch():
    x, out = rnd(8, 32), rnd(8, 32)
    e = fails_at_call(add_one, (x, rnd(8, 16)), {}, ArgumentValueError, ValueError,
              ["'out'", "dim 1", "== 32", "[8, 16]"], line_of("add_one"))
    assert e.param == "out"
    check_add_one(x, out)


def test_fixed_dim_mismatch_with_runtime_debug_mode_3():
    x, out = rnd(8, 32), rnd(8, 32)
    assert add_one_dbg.jit_options == {"debug": {"runtime_debug_mode": 3}}
    fails_at_call(add_one_dbg, (rnd(8, 16), out), {}, ArgumentValueError, ValueError,
          ["'x'", "dim 1", "== 32", "[8, 16]"], line_of("add_one_dbg"))
    add_one_dbg(x, out)
    torch.testing.assert_close(out, x + 1.0)


def test_named_dynamic_dims_disagree():
    x, y = rnd(8, 32), rnd(4, 32)
    e = fails_at_call(shared_n, (x, y), {}, ArgumentValueError, ValueError,
              ["'N'", "x.shape[0]", "y.shape[0]", "8 and 4"], line_of("shared_n"))
    assert e.param == "y"
    y = rnd(8, 32)
    shared_n(x, y)
    torch.testing.assert_close(y, x + 1.0)


def test_non_tensor_for_tensor_param():
    x, out = rnd(8, 32), rnd(8, 32)
    e = fails_at_call(add_one, (x.tolist(), out), {}, ArgumentTypeError, TypeError,
              ["'x'", "torch.Tensor", "list"], line_of("add_one"))
    assert e.param == "x"
    check_add_one(x, out)


@pytest.mark.parametrize("by_keyword", [False, True])
def test_tensor_for_constant_param(by_keyword):
    x, out = rnd(8, 32), rnd(8, 32)
    args, kwargs = ((x, out), {"scale": rnd(8, 32)}) if by_keyword else ((x, out, rnd(8, 32)), {})
    e = fails_at_call(add_one, args, kwargs, ArgumentTypeError, TypeError,
              ["'scale'", "compile-time constant", "(8, 32)"], line_of("add_one"))
    assert e.param == "scale"
    check_add_one(x, out, 2.0)


def test_missing_tensor_arg():
    x, out = rnd(8, 32), rnd(8, 32)
    e = fails_at_call(add_one, (x,), {}, ArgumentValueError, ValueError, ["'out'", "2 tensor argument"],
              line_of("add_one"))
    assert e.param == "out"
    add_one(x, out=out)  # by keyword works
    torch.testing.assert_close(out, x + 1.0)


def test_missing_constant():
    x, out = rnd(8, 32), rnd(8, 32)
    e = fails_at_call(needs_n, (x, out), {}, ArgumentValueError, ValueError, ["'n'", "nothing"], line_of("needs_n"))
    assert e.param == "n"
    needs_n(x, out, 3)
    torch.testing.assert_close(out, x + 3)


def test_unknown_keyword():
    x, out = rnd(8, 32), rnd(8, 32)
    e = fails_at_call(add_one, (x, out), {"scal": 2.0}, ArgumentValueError, ValueError,
              ["'scal'", "one of x, out, scale", "did you mean 'scale'"], line_of("add_one"))
    assert e.param == "scal"
    check_add_one(x, out, 2.0)


def test_too_many_positional_args():
    x, out = rnd(8, 32), rnd(8, 32)
    fails_at_call(add_one, (x, out, 2.0, 3.0), {}, ArgumentValueError, ValueError,
          ["too many positional", "at most 3", "x, out, scale", "got:      4"], line_of("add_one"))
    check_add_one(x, out, 2.0)


def test_tensor_given_twice():
    x, out = rnd(8, 32), rnd(8, 32)
    fails_at_call(add_one, (x, out), {"out": out}, ArgumentValueError, ValueError, ["'out'", "twice"],
          line_of("add_one"))
    check_add_one(x, out)


def test_expanded_output_tensor():
    """A strided output is accepted (tests/kernels/test_strided_args.py), but an expanded one
    repeats one element in memory: writing it is refused before anything runs."""
    x, out = rnd(8, 32), rnd(8, 32)
    expanded = rnd(1, 32).expand(8, 32)
    e = fails(add_one, (x, expanded), {}, ArgumentValueError, ValueError,
              ["'out'", "expanded", "strides [0, 1]", "dim 0"], line_of("add_one"))
    assert e.param == "out"
    check_add_one(rnd(1, 32).expand(8, 32), out)  # an expanded input is fine


def test_unsupported_torch_dtype_float64():
    x, out = rnd(8, 32), rnd(8, 32)
    e = fails_at_call(add_one, (x.double(), out), {}, UnsupportedDTypeError, TypeError,
              ["torch.float64", "for x", "torch.float32"], line_of("add_one"))
    assert isinstance(e, DTypeError) and e.param == "x"
    check_add_one(x, out)


def test_unsupported_pypto_dtype_in_annotation():
    x = rnd(8, 32)
    e = fails(fp8_param, (x,), {}, UnsupportedDTypeError, TypeError, ["DT_FP8", "x", "DT_FP32"],
              line_of("fp8_param"))
    assert e.param == "x" and e.got == "DT_FP8"
    check_add_one(x, rnd(8, 32))  # other kernels are unaffected


# ---- annotation errors ---------------------------------------------------------------------------

def test_tensor_param_after_constant():
    e = fails(const_first, (1, rnd(8, 32)), {}, AnnotationError, TypeError,
              ["'x'", "'n'", "tensor parameters first"], line_of("const_first"))
    assert e.param == "x"


def test_ellipsis_not_last():
    e = fails(ellipsis_first, (rnd(8, 32),), {}, AnnotationError, TypeError, ["'...'", "'x'", "last"],
              line_of("ellipsis_first"))
    assert e.param == "x"


def test_bad_dim_value():
    e = fails(str_dim, (rnd(8, 32),), {}, AnnotationError, TypeError,
              ["dim 1", "'x'", "'32'", "pypto.DYNAMIC"], line_of("str_dim"))
    assert e.param == "x"


def test_annotation_error_is_raised_again_on_the_next_call():
    for _ in range(2):
        fails(str_dim, (rnd(8, 32),), {}, AnnotationError, TypeError, ["'32'"], line_of("str_dim"))


@pytest.mark.parametrize("ann", [
    pypto.Tensor([pypto.DYNAMIC, 32], F32),
    pypto.Tensor((pypto.DYNAMIC, 32), F32),
    pypto.Tensor[[pypto.DYNAMIC, 32], F32],
    pypto.Tensor[(pypto.DYNAMIC, 32), F32],
], ids=["call-list", "call-tuple", "bracket-list", "bracket-tuple"])
def test_tuple_and_list_forms_are_both_accepted(ann):
    def body(x, out):
        out[:] = x + 1.0

    body.__annotations__ = {"x": ann, "out": ann}
    kernel = pypto.jit(body)
    x = rnd(8, 32)
    for rows in (8, 5):
        x, out = rnd(rows, 32), rnd(rows, 32)
        kernel(x, out)
        torch.testing.assert_close(out, x + 1.0)
    assert kernel.cache_info().misses == 1  # the DYNAMIC dim did not recompile
    with pytest.raises(ArgumentValueError):
        kernel(rnd(8, 16), rnd(8, 16))  # 32 is fixed in every spelling


# ---- options -------------------------------------------------------------------------------------

def test_unknown_jit_option_group_at_decoration():
    with pytest.raises(OptionError) as ei:
        @pypto.jit(runtme_options={"device_sched_mode": 1})  # @L:bad_group
        def k(x: ROWS):
            pass
    msg = check_error(ei.value, OptionError, ValueError, ["'runtme_options'", "runtime_options"],
                      line_of("bad_group"))
    assert "did you mean 'runtime_options'" in msg
    assert ei.value.param == "runtme_options"


def test_unknown_jit_option_group_direct_form():
    with pytest.raises(OptionError) as ei:
        pypto.jit(plain_copy, runtme_options={})
    msg = check_error(ei.value, OptionError, ValueError, ["'runtme_options'"], line_of("plain_copy"))
    assert "did you mean 'runtime_options'" in msg


def test_unknown_option_key_suggests_close_name():
    with pytest.raises(OptionError) as ei:
        pypto.jit(plain_copy, runtime_options={"device_sched_mde": 1})
    msg = check_error(ei.value, OptionError, ValueError, ["'device_sched_mde'", "runtime_options"],
                      line_of("plain_copy"))
    assert "did you mean 'device_sched_mode'" in msg


@pytest.mark.parametrize("name, value, allowed", [
    ("device_sched_mode", 7, "[0, 3]"),
    ("stitch_function_max_num", 0, "[1, 1024]"),
    ("stitch_function_max_num", 2000, "[1, 1024]"),
])
def test_option_value_out_of_range(name, value, allowed):
    with pytest.raises(OptionError) as ei:
        pypto.jit(plain_copy, runtime_options={name: value})
    check_error(ei.value, OptionError, ValueError, [name, allowed, f"{value} (int)"], line_of("plain_copy"))
    assert ei.value.param == f"runtime_options['{name}']"


def test_option_value_out_of_range_in_decorator_form():
    with pytest.raises(OptionError) as ei:
        @pypto.jit(runtime_options={"device_sched_mode": 7})
        def k(x: ROWS):  # @L:range_deco
            pass
    check_error(ei.value, OptionError, ValueError, ["device_sched_mode", "[0, 3]", "7"], line_of("range_deco"))


def test_option_wrong_type_bool_for_int():
    with pytest.raises(OptionError) as ei:
        pypto.jit(plain_copy, runtime_options={"stitch_function_max_num": True})
    check_error(ei.value, OptionError, ValueError, ["stitch_function_max_num", "bool", "True"],
                line_of("plain_copy"))


def test_run_mode_npu_has_no_backend_and_sim_works_afterwards():
    npu = pypto.jit(plain_copy, runtime_options={"run_mode": pypto.RunMode.NPU})
    x, out = rnd(8, 32), rnd(8, 32)
    e = fails(npu, (x, out), {}, BackendUnavailableError, RuntimeError,
              ["run_mode", "NPU", "no NPU backend", "SIM"], line_of("plain_copy"))
    assert e.param == "runtime_options['run_mode']"
    sim = pypto.jit(plain_copy, runtime_options={"run_mode": pypto.RunMode.SIM})
    sim(x, out)
    torch.testing.assert_close(out, x)
    with pypto.options(runtime_options={"run_mode": pypto.RunMode.NPU}):
        with pytest.raises(BackendUnavailableError):
            add_one(x, out)
    check_add_one(x, out)  # the scope ended: SIM again


def test_set_runtime_options_out_of_range_leaves_options_unchanged():
    pypto.set_runtime_options(device_sched_mode=2)
    before = pypto.get_runtime_options()
    with pytest.raises(OptionError) as ei:
        pypto.set_runtime_options(device_sched_mode=9)
    assert isinstance(ei.value, ValueError)
    msg = str(ei.value)
    assert "device_sched_mode" in msg and "[0, 3]" in msg and "expected" in msg and "got" in msg and "9" in msg
    assert pypto.get_runtime_options() == before
    # a partly valid call applies nothing either
    with pytest.raises(OptionError):
        pypto.set_runtime_options(stitch_function_max_num=64, device_sched_mode=9)
    assert pypto.get_runtime_options() == before
    assert before["device_sched_mode"] == 2 and before["stitch_function_max_num"] == 128
    check_add_one(rnd(8, 32), rnd(8, 32))


# ---- kernel-body errors point at the kernel line -------------------------------------------------

@pypto.jit
def loop_break(x: ROWS, out: ROWS):
    for i in pypto.loop(2):
        out[:] = x + 1.0
        break  # @L:break


@pypto.jit
def loop_continue(x: ROWS, out: ROWS):
    for i in pypto.loop(2):
        continue  # @L:continue


@pypto.jit
def loop_return(x: ROWS, out: ROWS):
    for i in pypto.loop(2):
        out[:] = x + 1.0
        return out  # @L:return


@pytest.mark.parametrize("kernel, word", [(loop_break, "break"), (loop_continue, "continue"),
                                          (loop_return, "return")])
def test_jump_inside_pypto_loop(kernel, word):
    x, out = rnd(8, 32), rnd(8, 32)
    for _ in range(2):  # the same error again: nothing half-done was cached
        fails(kernel, (x, out), {}, KernelSyntaxError, ValueError, [f"'{word}'", "pypto.loop"], line_of(word))
    assert kernel.cache_info().entries == ()
    check_add_one(x, out)


def test_python_loop_break_inside_pypto_loop_is_fine():
    @pypto.jit
    def k(x: ROWS, out: ROWS):
        for i in pypto.loop(1):
            for j in range(3):
                if j == 1:
                    break
            out[:] = x + float(j)

    x, out = rnd(8, 32), rnd(8, 32)
    k(x, out)
    torch.testing.assert_close(out, x + 1.0)


@pypto.jit
def add_static(a: pypto.Tensor([pypto.STATIC, pypto.STATIC], F32), b: pypto.Tensor([pypto.STATIC, pypto.STATIC], F32), out: pypto.Tensor([pypto.STATIC, pypto.STATIC], F32)):
    out[:] = a + b  # @L:add_static


def test_elementwise_shape_mismatch():
    a, b, out = rnd(8, 32), rnd(8, 16), rnd(8, 32)
    fails(add_static, (a, b, out), {}, ShapeError, ValueError,
          ["pypto.add", "'input'", "'other'", "[8, 32]", "[8, 16]"], line_of("add_static"))
    b = rnd(8, 32)
    add_static(a, b, out)
    torch.testing.assert_close(out, a + b)


@pypto.jit
def add_any(a: pypto.Tensor(), b: pypto.Tensor(), out: pypto.Tensor()):
    out[:] = a + b  # @L:add_any


def test_elementwise_dtype_mismatch():
    a, b, out = rnd(8, 32), rnd(8, 32, dtype=torch.float16), rnd(8, 32)
    fails(add_any, (a, b, out), {}, DTypeError, TypeError, ["pypto.add", "'other'", "DT_FP32", "DT_FP16"],
          line_of("add_any"))
    b = rnd(8, 32)
    add_any(a, b, out)
    torch.testing.assert_close(out, a + b)


@pypto.jit
def mul_scalar(x: pypto.Tensor([pypto.DYNAMIC, 32]), out: pypto.Tensor([pypto.DYNAMIC, 32]), s=1):
    out[:] = x * s  # @L:mul_scalar


def test_float_scalar_with_int_tensor():
    x = torch.randint(-9, 9, (8, 32), dtype=torch.int32)
    out = torch.randint(-9, 9, (8, 32), dtype=torch.int32)
    fails(mul_scalar, (x, out), {"s": 1.5}, DTypeError, TypeError, ["'other'", "1.5", "DT_INT32", "float"],
          line_of("mul_scalar"))
    mul_scalar(x, out, s=3)
    assert torch.equal(out, x * 3)


@pypto.jit
def tiled(x: ROWS, out: ROWS, tiles=(8, 32)):
    pypto.set_vec_tile_shapes(*tiles)  # @L:tiled_set
    out[:] = x + 1.0  # @L:tiled_op


@pytest.mark.parametrize("bad", [(0, 32), (8, -4)])
def test_vec_tile_shape_not_positive(bad):
    x, out = rnd(8, 32), rnd(8, 32)
    dim = 0 if bad[0] <= 0 else 1
    fails(tiled, (x, out), {"tiles": bad}, ShapeError, ValueError,
          ["set_vec_tile_shapes", f"dim {dim}", "> 0", repr(bad[dim])], line_of("tiled_set"))
    tiled(x, out)
    torch.testing.assert_close(out, x + 1.0)


def test_vec_tile_rank_differs_from_op():
    x, out = rnd(8, 32), rnd(8, 32)
    fails(tiled, (x, out), {"tiles": (32,)}, ShapeError, ValueError,
          ["pypto.add", "vec_tile_shapes", "1 size(s)", "rank 2", "at least 2 sizes", "(32,)"], line_of("tiled_op"))
    assert pypto.get_vec_tile_shapes() == []  # the kernel's setting did not leak out
    tiled(x, out, tiles=(4, 32))
    torch.testing.assert_close(out, x + 1.0)


@pypto.jit
def mm(a: pypto.Tensor([pypto.STATIC, pypto.STATIC], F32), b: pypto.Tensor([pypto.STATIC, pypto.STATIC], F32), out: pypto.Tensor([pypto.STATIC, pypto.STATIC], F32), m_tiles=(16, 16)):
    pypto.set_cube_tile_shapes(list(m_tiles), [32, 32], [16, 16])  # @L:mm_cube
    out[:] = pypto.matmul(a, b)  # @L:mm_op


def test_cube_tile_l1_not_multiple_of_l0():
    a, b, out = rnd(16, 32), rnd(32, 16), rnd(16, 16)
    fails(mm, (a, b, out), {"m_tiles": (16, 40)}, ShapeError, ValueError,
          ["set_cube_tile_shapes", "'m'", "multiple", "[16, 40]", "16"], line_of("mm_cube"))
    mm(a, b, out, m_tiles=(16, 32))
    torch.testing.assert_close(out, a @ b, rtol=1e-4, atol=1e-4)


def test_matmul_inner_dim_mismatch():
    a, b, out = rnd(16, 32), rnd(16, 32), rnd(16, 32)
    fails(mm, (a, b, out), {}, ShapeError, ValueError,
          ["pypto.matmul", "inner dims", "mat2", "[16, 32] @ [16, 32]", "32"], line_of("mm_op"))
    b, out = rnd(32, 16), rnd(16, 16)
    mm(a, b, out)
    torch.testing.assert_close(out, a @ b, rtol=1e-4, atol=1e-4)


@pypto.jit
def reshaped(x: pypto.Tensor([pypto.STATIC, pypto.STATIC], F32), out: pypto.Tensor([pypto.STATIC, pypto.STATIC], F32)):
    out[:] = pypto.reshape(x, out.shape)  # @L:reshape


def test_reshape_changes_numel():
    x, out = rnd(16, 32), rnd(16, 16)
    fails(reshaped, (x, out), {}, ShapeError, ValueError,
          ["pypto.reshape", "'shape'", "512 elements", "256 elements"], line_of("reshape"))
    out = rnd(32, 16)
    reshaped(x, out)
    assert torch.equal(out, x.reshape(32, 16))


@pypto.jit
def python_range(x: ROWS, out: ROWS, trips=None):
    acc = x + 0.0
    for _ in range(x.shape[0] if trips is None else trips):  # @L:range
        acc = acc + 1.0
    out[:] = acc


def test_range_over_dynamic_dim():
    x, out = rnd(8, 32), rnd(8, 32)
    msg = fails(python_range, (x, out), {}, KernelSyntaxError, ValueError,
                ["x.shape[0]", "pypto.loop", "range"], line_of("range")).args[0]
    assert "plain int" in msg
    python_range(x, out, trips=2)
    torch.testing.assert_close(out, x + 2.0)


@pypto.jit
def tensor_condition(x: ROWS, out: ROWS, on_tensor=False):
    cond = x if on_tensor else True
    if cond:  # @L:tensor_if
        out[:] = x + 1.0


def test_tensor_in_if():
    x, out = rnd(8, 32), rnd(8, 32)
    fails(tensor_condition, (x, out), {"on_tensor": True}, KernelSyntaxError, ValueError,
          ["truth value", "tensor %x", "pypto.where"], line_of("tensor_if"))
    tensor_condition(x, out)
    torch.testing.assert_close(out, x + 1.0)


def test_pypto_loop_outside_a_kernel():
    with pytest.raises(KernelSyntaxError) as ei:
        for _ in pypto.loop(4):  # @L:loop_outside
            pass
    check_error(ei.value, KernelSyntaxError, ValueError, ["pypto.loop", "@pypto.jit"], line_of("loop_outside"))
    check_add_one(rnd(8, 32), rnd(8, 32))


@pypto.jit
def nested(x: ROWS, out: ROWS, inner="j"):
    for i in pypto.loop(2, idx_name="i"):
        for j in pypto.loop(2, idx_name=inner):  # @L:nested_inner
            out[:] = x + 1.0


def test_nested_loops_reuse_idx_name():
    x, out = rnd(8, 32), rnd(8, 32)
    fails(nested, (x, out), {"inner": "i"}, KernelSyntaxError, ValueError, ["'i'", "idx_name"],
          line_of("nested_inner"))
    nested(x, out)
    torch.testing.assert_close(out, x + 1.0)


@pypto.jit
def viewed(x: ROWS, out: pypto.Tensor([4, 32], F32), offsets=(0, 0)):
    v = pypto.view(x, [4, 32], list(offsets))  # @L:view
    out[:] = v + 0.0


def test_view_offsets_rank_mismatch():
    x, out = rnd(8, 32), rnd(4, 32)
    fails(viewed, (x, out), {"offsets": (2,)}, ShapeError, ValueError,
          ["pypto.view", "'offsets'", "2 entries", "offsets 1"], line_of("view"))
    viewed(x, out, offsets=(2, 0))
    assert torch.equal(out, x[2:6])


@pypto.jit
def assembled(x: pypto.Tensor(), out: pypto.Tensor()):
    pypto.assemble(x, [0, 0], out)  # @L:assemble


def test_assemble_dtype_mismatch():
    x, out = rnd(8, 32), rnd(8, 32, dtype=torch.float16)
    fails(assembled, (x, out), {}, DTypeError, TypeError,
          ["pypto.assemble", "'src'", "'dst'", "DT_FP16", "DT_FP32"], line_of("assemble"))
    out = rnd(8, 32)
    assembled(x, out)
    assert torch.equal(out, x)


@pypto.jit
def filled(x: ROWS, out: ROWS, dtype=pypto.DT_FP32):
    z = pypto.full([8, 32], 2.0, dtype)  # @L:full
    out[:] = x + z


def test_full_with_unsupported_dtype():
    x, out = rnd(8, 32), rnd(8, 32)
    e = fails(filled, (x, out), {"dtype": pypto.DT_FP8}, UnsupportedDTypeError, TypeError,
              ["DT_FP8", "dtype", "DT_FP32"], line_of("full"))
    assert e.param == "dtype"
    filled(x, out)
    torch.testing.assert_close(out, x + 2.0)


# ---- the tracer and the cache stay clean after a failure -----------------------------------------

@pypto.jit
def fails_deep(x: ROWS, out: ROWS, bad=True):
    pypto.set_vec_tile_shapes(8, 32)
    for i in pypto.loop(2):
        pypto.set_vec_tile_shapes(4, 32)
        if i == 0:
            y = x + (rnd_shape_mismatch(x) if bad else 1.0)  # @L:deep
            out[:] = y


def rnd_shape_mismatch(x):
    return pypto.full([4, 16], 1.0, pypto.DT_FP32)


@pypto.jit
def other_kernel(x: ROWS, out: ROWS):
    for i in pypto.loop(1):
        out[:] = x * 2.0


def test_failed_compile_then_another_kernel_works():
    other_kernel.cache_clear()
    x, out = rnd(8, 32), rnd(8, 32)
    fails(fails_deep, (x, out), {}, ShapeError, ValueError, ["pypto.add", "[x.shape[0], 32]", "[4, 16]"],
          line_of("deep"))
    assert builder.current() is None
    assert pypto.get_vec_tile_shapes() == [] and pypto.get_cube_tile_shapes() is None
    other_kernel(x, out)
    torch.testing.assert_close(out, x * 2.0)
    assert other_kernel.cache_info().misses == 1
    # its printed program is that of other_kernel only (nothing left over from the failed trace)
    text = other_kernel.inspect(x, out).passes[0].text
    assert "full" not in text and "add" not in text and "mul" in text


def test_failing_kernel_raises_the_same_error_twice():
    fails_deep.cache_clear()
    x, out = rnd(8, 32), rnd(8, 32)
    first = fails(fails_deep, (x, out), {}, ShapeError, ValueError, ["[4, 16]"], line_of("deep"))
    second = fails(fails_deep, (x, out), {}, ShapeError, ValueError, ["[4, 16]"], line_of("deep"))
    assert str(first) == str(second)
    info = fails_deep.cache_info()
    assert info.entries == () and info.misses == 0 and info.hits == 0
    fails_deep(x, out, bad=False)  # the good version compiles and runs
    assert fails_deep.cache_info().misses == 1
    torch.testing.assert_close(out, x + 1.0)


def test_errors_pickle_round_trip():
    import pickle

    x, out = rnd(8, 32), rnd(8, 32)
    e = fails_at_call(add_one, (x.to(torch.int32), out), {}, ArgumentTypeError, TypeError, ["'x'"], line_of("add_one"))
    back = pickle.loads(pickle.dumps(e))
    assert type(back) is type(e) and str(back) == str(e) and back.loc == e.loc


@pytest.mark.parametrize("star,phrase", [("*args", "Variable-length arguments"),
                                         ("**kwargs", "Keyword argument packing")])
def test_packed_parameters_are_not_implemented(star, phrase):
    """*args / **kwargs in a kernel signature: a NotImplementedError (code F00005) naming the form."""
    scope = {"pypto": pypto}
    exec(f"@pypto.frontend.jit\ndef k(x: pypto.Tensor([], pypto.DT_FP32), {star}):\n    pass\n", scope)
    with pytest.raises(pypto.errors.UnsupportedSignatureError) as info:
        scope["k"](rnd(2, 2))
    err = info.value
    assert isinstance(err, NotImplementedError) and isinstance(err, pypto.error.ParserError)
    assert err.code == 0xF00005 and "ErrCode: F00005" in str(err) and phrase in str(err)
    assert pypto.errors.error_code(NotImplementedError) == 0xF00005  # before RuntimeError, its base
    assert pypto.errors.error_code(RuntimeError) == 0xF00003
