"""The explicit ``pypto.function`` style and upstream's device entry points on the simulator:
declared tensors, ``pypto.from_torch``, ``pypto.runtime._device_*``, ``Tensor.move``, path
replay with ``for _ in f:``, and the errors of each."""

from __future__ import annotations

import math

import pytest
import torch

import pypto
from pypto.error import FeError, PyptoRtError

I32, F32 = pypto.DT_INT32, pypto.DT_FP32


@pytest.fixture(autouse=True)
def device():
    from pypto.frontend import control

    tiles = dict(control._global_tiles)  # the runner pattern sets tile shapes outside any kernel
    pypto.runtime._device_init()
    yield
    pypto.runtime._device_fini()
    pypto._controller.reset()
    control._global_tiles.update(tiles)


def run(*torch_tensors):
    pypto.runtime._device_run_once_data_from_host(*[pypto.from_torch(t, f"T{i}") for i, t in enumerate(torch_tensors)])


def tiled_add_scalar(shape, view, scalar):
    """Upstream's st pattern: two nested loops of views with clipped valid shapes, op, assemble."""
    a = pypto.tensor(shape, I32, "a")
    out = pypto.tensor(shape, I32, "out")
    with pypto.function("MAIN", a, out):
        for bi in pypto.loop(math.ceil(shape[0] / view[0]), name="b0", idx_name="bidx"):
            for si in pypto.loop(math.ceil(shape[1] / view[1]), name="s0", idx_name="sidx"):
                v = pypto.view(a, view, [bi * view[0], si * view[1]],
                               valid_shape=[pypto.min(pypto.symbolic_scalar(shape[0]) - bi * view[0],
                                                      pypto.symbolic_scalar(view[0])),
                                            pypto.min(pypto.symbolic_scalar(shape[1]) - si * view[1],
                                                      pypto.symbolic_scalar(view[1]))])
                pypto.set_vec_tile_shapes(*view)
                v.move(pypto.add(v, scalar))  # a view: move makes v the sum (nothing is written into a)
                pypto.assemble(v, [bi * view[0], si * view[1]], out)
    return a, out


# ---- declared tensors ---------------------------------------------------------------------------------

def test_declared_tensor_properties():
    a = pypto.tensor([32, 1], pypto.DT_FP16, "a")
    assert isinstance(a, pypto.tensor) and isinstance(a, pypto.Tensor)
    assert (a.name, a.dtype, a.shape, a.dim, a.format) == ("a", pypto.DT_FP16, [32, 1], 2, pypto.TileOpFormat.TILEOP_ND)
    b = pypto.tensor([-1, 32], F32, "b", pypto.TileOpFormat.TILEOP_NZ)
    assert b.format == pypto.TileOpFormat.TILEOP_NZ and b.shape[1] == 32
    assert isinstance(b.shape[0], pypto.SymbolicScalar) and b.shape[0].is_symbol()
    with pytest.raises(ValueError):  # a runtime size cannot be compared outside a kernel
        assert b.shape == [-1, 32]
    assert pypto.tensor([4, 4], F32).name == ""
    twin = pypto.tensor([-1, 32], F32, "b")  # same name, its own runtime size
    assert str(twin.shape[0]) != str(b.shape[0])


def test_a_declared_tensor_is_still_a_signature_annotation():
    @pypto.jit
    def k(x: pypto.Tensor([pypto.DYNAMIC, 8], F32), y: pypto.Tensor([pypto.DYNAMIC, 8], F32)):
        pypto.set_vec_tile_shapes(4, 8)
        y[:] = x * 2

    x, y = torch.randn(6, 8), torch.zeros(6, 8)
    k(x, y)
    assert torch.equal(y, x * 2)


# ---- recording and running -----------------------------------------------------------------------------

def test_function_runs_on_the_simulator_and_writes_back():
    tiled_add_scalar((72, 71), (32, 32), 5)
    a = torch.randint(-100, 100, (72, 71), dtype=torch.int32)
    out = torch.zeros(72, 71, dtype=torch.int32)
    run(a, out)
    assert torch.equal(out, a + 5)  # tails of 8 rows and 7 columns included
    fn = pypto.runtime.last_function()
    assert fn.name == "MAIN" and [t.name for t in fn.tensors] == ["a", "out"]
    assert fn.last_run is not None and "add" in fn.compiled.text()
    assert fn.last_run.timeline.stats["tasks"] >= 1  # the run is simulated like a jit call
    run(a, out)  # a second run reuses the compiled function
    assert fn.last_run.cache_hit


def test_flat_buffers_bind_to_the_declared_shape():
    # upstream's test-case runner passes flat numpy buffers for the outputs
    tiled_add_scalar((16, 24), (8, 8), -1)
    a = torch.arange(16 * 24, dtype=torch.int32)
    out = torch.zeros(16 * 24, dtype=torch.int32)
    run(a, out)
    assert torch.equal(out, a - 1)


@pytest.mark.parametrize("rows", ["-1", "named"])
def test_runtime_sizes_bind_per_run(rows):
    n = -1 if rows == "-1" else pypto.symbolic_scalar("n")  # a named size is shared by both tensors
    x = pypto.tensor((n, 16), F32, "x")
    y = pypto.tensor((n, 16), F32, "y")
    with pypto.function("DYN", x, y):
        pypto.set_vec_tile_shapes(8, 16)
        for i in pypto.loop(pypto.ceildiv(x.shape[0], 8)):
            y[i * 8:(i + 1) * 8, :] = x[i * 8:(i + 1) * 8, :] * 3
    for size in (5, 21):
        a, b = torch.randn(size, 16), torch.zeros(size, 16)
        run(a, b)
        assert torch.allclose(b, a * 3)
    if rows == "named":
        with pytest.raises(pypto.ArgumentValueError, match="runtime size n differs"):
            run(torch.randn(4, 16), torch.zeros(5, 16))


def test_exec_built_function_like_upstreams_runner():
    a = pypto.tensor((4, 8), F32, "A")
    out = pypto.tensor((4, 8), F32, "C")
    code = ("with pypto.function('Exp', *inputs, *outputs):\n"
            "    for index_0 in pypto.loop(2):\n"
            "        v = pypto.view(inputs[0], [2, 8], [index_0 * 2, 0])\n"
            "        res = pypto.tensor()\n"
            "        res.move(pypto.exp(v))\n"
            "        pypto.assemble(res, [index_0 * 2, 0], outputs[0])\n")
    pypto.set_vec_tile_shapes(2, 8)
    exec(code, {"pypto": pypto, "inputs": [a], "outputs": [out]})  # noqa: S102 - the runner's own pattern
    x, y = torch.randn(4, 8), torch.zeros(4, 8)
    run(x, y)
    assert torch.allclose(y, x.exp())


def test_move_into_an_argument_writes_it():
    a = pypto.tensor((8, 8), F32, "a")
    b = pypto.tensor((8, 8), F32, "b")
    with pypto.function("MOVE", a, b):
        pypto.set_vec_tile_shapes(8, 8)
        b.move(pypto.add(a, a))
    x, y = torch.randn(8, 8), torch.zeros(8, 8)
    run(x, y)
    assert torch.allclose(y, x + x)


def test_move_of_a_full_reduction_into_a_one_element_argument():
    a = pypto.tensor((8,), F32, "a")
    s = pypto.tensor((1,), F32, "s")
    with pypto.function("SUM", a, s):
        pypto.set_vec_tile_shapes(8)
        s.move(pypto.sum(a, -1))  # rank 0
    x, y = torch.randn(8), torch.zeros(1)
    run(x, y)
    assert torch.allclose(y, x.sum().reshape(1), atol=1e-5)


def test_move_back_of_an_argument_updated_in_place_through_a_reshape():
    # A paged cache [blocks, block_size, 1, d] is reshaped in place to rows, updated with
    # scatter_update (in place) and moved back: the argument holds the update, nothing else moves.
    @pypto.frontend.jit
    def update(cache: pypto.Tensor([pypto.DYNAMIC, 4, 1, 8], F32), index: pypto.Tensor([2, 2], I32),
               rows: pypto.Tensor([4, 8], F32)):
        pypto.set_vec_tile_shapes(4, 8)
        flat = pypto.reshape(cache, [cache.shape[0] * 4, 8], inplace=True)
        cache.move(pypto.scatter_update(flat, -2, index, rows))

    cache, rows = torch.randn(3, 4, 1, 8), torch.randn(4, 8)
    index = torch.tensor([[5, 0], [11, 6]], dtype=torch.int32)
    want = cache.clone().reshape(12, 8)
    want[index.reshape(-1).long()] = rows
    update(cache, index, rows)
    assert torch.equal(cache.reshape(12, 8), want)
    prog = update.inspect(cache, index, rows).program
    # scatter_update's own assemble, and the one copy that keeps the reshaped name and the argument
    # coherent (frontend/aliases.py); the move itself copies nothing
    assert [op.kind for op in prog.ops() if op.kind == "assemble"] == ["assemble", "assemble"]


def test_move_of_another_rank_with_as_many_elements_lands_row_major():
    @pypto.frontend.jit
    def fill(x: pypto.Tensor([4, 8], F32), out: pypto.Tensor([2, 2, 8], F32)):
        pypto.set_vec_tile_shapes(4, 8)
        out.move(x * 2.0)

    x, out = torch.randn(4, 8), torch.zeros(2, 2, 8)
    fill(x, out)
    assert torch.equal(out, (x * 2.0).reshape(2, 2, 8))


def test_move_of_a_different_element_count_is_rejected():
    @pypto.frontend.jit
    def bad(x: pypto.Tensor([4, 8], F32), out: pypto.Tensor([2, 3, 8], F32)):
        pypto.set_vec_tile_shapes(4, 8)
        out.move(x * 2.0)

    with pytest.raises(pypto.ShapeError, match="as many elements") as e:
        bad(torch.randn(4, 8), torch.zeros(2, 3, 8))
    assert "48 elements" in str(e.value) and "32 elements" in str(e.value)


def test_move_into_a_non_argument_declares_a_handle():
    a = pypto.tensor((8, 8), F32, "a")
    b = pypto.tensor((8, 8), F32, "b")
    c = pypto.tensor((8, 8), F32, "c")  # not an argument
    with pypto.function("HANDLE", a, b):
        pypto.set_vec_tile_shapes(8, 8)
        c.move(a + 1)
        b[:] = c * 2
    assert c.shape == [8, 8]  # outside the function it is the declaration again
    x, y = torch.randn(8, 8), torch.zeros(8, 8)
    run(x, y)
    assert torch.allclose(y, (x + 1) * 2)


def test_full_slice_assignment_fills_an_empty_handle():
    a = pypto.tensor((8, 8), F32, "a")
    b = pypto.tensor((8, 8), F32, "b")
    c = pypto.tensor((8, 8), F32, "c")  # not an argument
    with pypto.function("FILL", a, b):
        pypto.set_vec_tile_shapes(8, 8)
        t = pypto.tensor()
        t[:] = a * 3  # upstream: t[:] = x on an empty handle is t.move(x)
        c[:, :] = t + 1
        b[:] = c
    x, y = torch.randn(8, 8), torch.zeros(8, 8)
    run(x, y)
    assert torch.allclose(y, x * 3 + 1)


def test_empty_tensor_handle_must_be_filled_first():
    a = pypto.tensor((8, 8), F32, "a")
    with pytest.raises(pypto.KernelSyntaxError, match="still empty"):
        with pypto.function("EMPTY", a):
            t = pypto.tensor()
            assert t.is_empty()
            _ = t + 1


def test_runtime_condition_needs_path_replay():
    a = pypto.tensor((8, 8), F32, "a")
    b = pypto.tensor((8, 8), F32, "b")
    n = pypto.tensor((-1,), F32, "n")
    with pytest.raises(pypto.KernelSyntaxError, match="for _ in f"):
        with pypto.function("BRANCH", a, b, n):
            pypto.set_vec_tile_shapes(8, 8)
            if pypto.cond(n.shape[0] > 2):
                b[:] = a + 1
            else:
                b[:] = a - 1
    with pypto.function("BRANCH", a, b, n) as f:
        for _ in f:
            pypto.set_vec_tile_shapes(8, 8)
            if pypto.cond(n.shape[0] > 2):
                b[:] = a + 1
            else:
                b[:] = a - 1
    x, y = torch.randn(8, 8), torch.zeros(8, 8)
    run(x, y, torch.zeros(3))
    assert torch.allclose(y, x + 1)
    run(x, y, torch.zeros(1))
    assert torch.allclose(y, x - 1)


def test_loop_conditions_inside_the_body_need_no_replay():
    a = pypto.tensor((32, 8), F32, "a")
    b = pypto.tensor((32, 8), F32, "b")
    with pypto.function("FIRST", a, b):
        pypto.set_vec_tile_shapes(8, 8)
        for i in pypto.loop(4):
            t = a[i * 8:(i + 1) * 8, :]
            if pypto.cond(pypto.is_loop_begin(i)):
                b[i * 8:(i + 1) * 8, :] = t * 10
            else:
                b[i * 8:(i + 1) * 8, :] = t
    x, y = torch.randn(32, 8), torch.zeros(32, 8)
    run(x, y)
    want = x.clone()
    want[:8] *= 10
    assert torch.allclose(y, want)


def test_list_arguments_and_controller_state():
    a = pypto.tensor((4, 8), F32, "a")
    b = pypto.tensor((4, 8), F32, "b")
    assert not pypto._controller.Controller.in_function
    with pypto.function("LIST", [a, b]):
        assert pypto._controller.Controller.in_function
        pypto.set_vec_tile_shapes(4, 8)
        b[:] = a + 2
    assert not pypto._controller.Controller.in_function
    assert "LIST" in pypto._controller.dump() and "add" in pypto._controller.dump()
    x, y = torch.randn(4, 8), torch.zeros(4, 8)
    run(x, y)
    assert torch.allclose(y, x + 2)


# ---- errors --------------------------------------------------------------------------------------------

def test_user_errors_in_the_body_are_wrapped_and_leave_no_state():
    a = pypto.tensor((8, 8), F32, "a")
    b = pypto.tensor((8, 8), F32, "b")
    with pytest.raises(FeError, match="boom") as info:
        with pypto.function("MAIN", a, b):
            raise ValueError("boom")
    assert isinstance(info.value.__cause__, ValueError)
    assert not pypto._controller.Controller.in_function
    assert a.shape == [8, 8]  # unbound again
    with pypto.function("MAIN2", a, b):  # a new recording works
        pypto.set_vec_tile_shapes(8, 8)
        b.move(pypto.add(a, a))


def test_function_argument_errors():
    a = pypto.tensor((8, 8), F32, "a")
    with pytest.raises(pypto.ArgumentTypeError, match="not a declared tensor"):
        pypto.function("F", a, 3)
    with pytest.raises(pypto.ArgumentTypeError, match="passed twice"):
        pypto.function("F", a, a)
    with pytest.raises(pypto.ArgumentTypeError, match="'name' must be a str"):
        pypto.function(1, a)
    with pytest.raises(pypto.ArgumentValueError, match="cannot be a function argument"):
        with pypto.function("F", pypto.tensor([pypto.STATIC, 4], F32, "s")):
            pass
    inner = pypto.tensor((2,), F32, "i")
    with pytest.raises(pypto.KernelSyntaxError, match="recorded inside another kernel or function"):
        with pypto.function("OUTER", a):
            with pypto.function("INNER", inner):
                pass
    c = pypto.tensor((8, 8), F32, "c")
    with pytest.raises(pypto.KernelSyntaxError, match="'c' is used in the body of 'F'.*not one of its arguments"):
        with pypto.function("F", a):
            _ = a + c


def test_run_errors():
    with pytest.raises(PyptoRtError, match="no function to run"):
        run(torch.zeros(2))
    tiled_add_scalar((8, 8), (8, 8), 1)
    a, out = torch.zeros(8, 8, dtype=torch.int32), torch.zeros(8, 8, dtype=torch.int32)
    with pytest.raises(pypto.ArgumentValueError, match="has 2 argument"):
        run(a)
    with pytest.raises(pypto.ArgumentTypeError, match="wrong dtype"):
        run(a.float(), out)
    with pytest.raises(pypto.ArgumentValueError, match="size 9 in dim 0"):
        run(torch.zeros(9, 8, dtype=torch.int32), out)
    with pytest.raises(pypto.ArgumentValueError, match="does not fit"):
        run(torch.zeros(63, dtype=torch.int32), out)
    with pytest.raises(pypto.ArgumentTypeError, match="carries no data"):
        pypto.runtime._device_run_once_data_from_host(a, out)
    pypto.runtime._device_fini()
    with pytest.raises(PyptoRtError, match="not initialised"):
        run(a, out)
    assert torch.equal(out, torch.zeros(8, 8, dtype=torch.int32))  # nothing ran


def test_device_synchronize_returns_at_once():
    assert pypto.runtime._device_synchronize() is None


# ---- from_torch --------------------------------------------------------------------------------------

def test_from_torch():
    t = torch.ones(32, 32, dtype=torch.int32)
    p = pypto.from_torch(t, "p")
    assert (p.name, p.dtype, p.shape, p.ori_shape, p.data_ptr) == ("p", I32, [32, 32], [32, 32], t.data_ptr())
    assert p.format == pypto.TileOpFormat.TILEOP_ND and p.device == t.device and p.data is t
    assert pypto.from_torch(t, dtype=pypto.DT_INT16).dtype == pypto.DT_INT16  # recorded as given
    assert pypto.from_torch(t).name.startswith("TENSOR_")
    d = pypto.from_torch(torch.zeros(5, 3), "d", dynamic_axis=[0])
    assert isinstance(d.shape[0], pypto.SymbolicScalar) and d.shape[1] == 3
    assert pypto.from_torch(torch.tensor(2.0)).shape == [1]
    nz = pypto.from_torch(torch.zeros(4, 4), tensor_format=pypto.TileOpFormat.TILEOP_NZ)
    assert nz.format == pypto.TileOpFormat.TILEOP_NZ
    with pytest.raises(pypto.ArgumentTypeError, match="must be a torch.Tensor"):
        pypto.from_torch([1, 2])
    with pytest.raises(pypto.ArgumentValueError, match="not contiguous"):
        pypto.from_torch(torch.zeros(4, 6).t())
    with pytest.raises(pypto.ArgumentValueError, match="dynamic_axis"):
        pypto.from_torch(torch.zeros(4), dynamic_axis=[1])


def test_from_torch_dtype_reinterprets_the_bytes_at_run_time():
    a = pypto.tensor((4,), F32, "a")
    b = pypto.tensor((4,), F32, "b")
    with pypto.function("BITS", a, b):
        pypto.set_vec_tile_shapes(4)
        b[:] = a + 0.0
    bits = torch.tensor([1.0, -2.0, 0.5, 8.0]).view(torch.int32)
    out = torch.zeros(4)
    pypto.runtime._device_run_once_data_from_host(pypto.from_torch(bits, dtype=F32), pypto.from_torch(out))
    assert torch.equal(out, torch.tensor([1.0, -2.0, 0.5, 8.0]))
    with pytest.raises(pypto.ArgumentTypeError, match="cannot reinterpret"):
        pypto.runtime._device_run_once_data_from_host(pypto.from_torch(torch.zeros(4, dtype=torch.int16), dtype=F32),
                                                      pypto.from_torch(out))


def test_jit_kernels_take_from_torch_tensors():
    @pypto.jit
    def k(x: pypto.Tensor([pypto.DYNAMIC, 8], F32), y: pypto.Tensor([pypto.DYNAMIC, 8], F32)):
        pypto.set_vec_tile_shapes(4, 8)
        y.move(x + 1)  # a parameter: written in place

    x, y = torch.randn(6, 8), torch.zeros(6, 8)
    k(pypto.from_torch(x), pypto.from_torch(y))
    assert torch.allclose(y, x + 1)


# ---- pass verify against the user's goldens -----------------------------------------------------------

def test_goldens_are_checked_by_pass_verify():
    @pypto.jit(verify_options={"enable_pass_verify": True})
    def k(x: pypto.Tensor([4, 8], F32), y: pypto.Tensor([4, 8], F32)):
        pypto.set_vec_tile_shapes(4, 8)
        y[:] = x * 2

    x, y = torch.randn(4, 8), torch.zeros(4, 8)
    pypto.set_verify_golden_data(goldens=[None, x * 2])
    k(x, y)
    assert [r.stage for r in k.last_run.verify][-1] == "golden" and k.last_run.verify[-1].ok
    k(x, y)  # goldens belong to one call
    assert [r.stage for r in k.last_run.verify][-1] != "golden"
    pypto.set_verify_golden_data(goldens=[None, x * 3])
    with pytest.raises(pypto.KernelRuntimeError, match="goldens of set_verify_golden_data.*argument 'y'"):
        k(x, y)
    pypto.set_verify_golden_data(goldens=[None])
    with pytest.raises(pypto.ArgumentValueError, match="one golden per kernel argument"):
        k(x, y)
    with pytest.raises(pypto.ArgumentTypeError, match="goldens\\[0\\] is not a tensor"):
        pypto.set_verify_golden_data(goldens=[[1.0]])
