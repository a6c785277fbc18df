"""Memory semantics: in-place outputs and partial writes, program order of loop iterations that
read what earlier iterations wrote, exact reductions, a bf16 layernorm, and element reads of an
INT32 length tensor used as a loop bound and as a valid shape.
"""

import pytest
import torch

import pypto

D = pypto.DYNAMIC
FP32 = pypto.DT_FP32
SENTINEL = -12345.0


def _rand(*shape, seed=0, dtype=torch.float32):
    g = torch.Generator().manual_seed(seed)
    return torch.randn(*shape, generator=g, dtype=torch.float32).to(dtype)


def _exact(a, b):
    torch.testing.assert_close(a, b, rtol=0, atol=0)


# ---- in-place reshapes --------------------------------------------------------------------------------

def test_writes_through_an_inplace_reshape_land_in_the_argument():
    # reshape(inplace=True) shares the argument's storage: a write into a window of it (inside a
    # loop, a tail tile included) is a write into the argument, row-major
    @pypto.frontend.jit
    def rows_of(cache: pypto.Tensor([D, 4, 8], FP32), x: pypto.Tensor([D, 8], FP32)):
        flat = pypto.reshape(cache, [cache.shape[0] * 4, 8], inplace=True)
        for i in pypto.loop(pypto.ceildiv(x.shape[0], 4)):
            pypto.set_vec_tile_shapes(4, 8)
            flat[i * 4:(i + 1) * 4, :] = x[i * 4:(i + 1) * 4, :] * 3.0
        flat2 = pypto.reshape(flat, [cache.shape[0] * 32], inplace=True)  # an alias of an alias
        pypto.set_vec_tile_shapes(8)
        flat2[0:8] = flat2[0:8] + 1.0

    cache, x = torch.full((3, 4, 8), SENTINEL), _rand(10, 8)
    rows_of(cache, x)
    want = torch.full((12, 8), SENTINEL)
    want[:10] = x * 3.0
    want[0] += 1.0
    _exact(cache.reshape(12, 8), want)


def test_a_plain_reshape_is_a_copy():
    @pypto.frontend.jit
    def copy_only(cache: pypto.Tensor([2, 4, 8], FP32), out: pypto.Tensor([8, 8], FP32)):
        pypto.set_vec_tile_shapes(8, 8)
        flat = pypto.reshape(cache, [8, 8])
        flat[:] = flat * 2.0
        out[:] = flat

    cache, out = _rand(2, 4, 8), torch.zeros(8, 8)
    before = cache.clone()
    copy_only(cache, out)
    _exact(cache, before)
    _exact(out, before.reshape(8, 8) * 2.0)


# ---- in-place outputs, partial writes -------------------------------------------------------------

def test_partial_static_write_leaves_rest_untouched():
    @pypto.frontend.jit
    def corner(x: pypto.Tensor([8, 64], FP32), out: pypto.Tensor([8, 64], FP32)):
        out[2:6, 0:32] = x[2:6, 0:32] * 2.0

    x = _rand(8, 64)
    out = torch.full((8, 64), SENTINEL)
    storage = out.data_ptr()
    corner(x, out)
    assert out.data_ptr() == storage  # written in place, not rebound
    want = torch.full((8, 64), SENTINEL)
    want[2:6, 0:32] = x[2:6, 0:32] * 2.0
    _exact(out, want)


def test_partial_dynamic_write_every_other_tile():
    @pypto.frontend.jit
    def even_tiles(x: pypto.Tensor([D, 16], FP32), out: pypto.Tensor([D, 16], FP32)):
        for i in pypto.loop(0, pypto.ceildiv(x.shape[0], 3), 2):
            out[i * 3:(i + 1) * 3, 4:12] = x[i * 3:(i + 1) * 3, 4:12] + 1.0

    for n in (1, 4, 10, 13):
        x = _rand(n, 16, seed=n)
        out = torch.full((n, 16), SENTINEL)
        even_tiles(x, out)
        want = torch.full((n, 16), SENTINEL)
        for t in range(0, -(-n // 3), 2):
            want[t * 3:(t + 1) * 3, 4:12] = x[t * 3:(t + 1) * 3, 4:12] + 1.0
        _exact(out, want)
    assert even_tiles.cache_info().misses == 1


def test_inputs_are_not_modified_and_output_larger_than_input():
    @pypto.frontend.jit
    def copy_rows(x: pypto.Tensor([D, 8], FP32), out: pypto.Tensor([D, 8], FP32)):
        for i in pypto.loop(pypto.ceildiv(x.shape[0], 4)):
            out[i * 4:(i + 1) * 4, :] = x[i * 4:(i + 1) * 4, :] * 3.0

    x = _rand(6, 8)
    x_before = x.clone()
    out = torch.full((9, 8), SENTINEL)  # out has its own dynamic dim; only 6 rows are written
    copy_rows(x, out)
    _exact(x, x_before)
    want = torch.full((9, 8), SENTINEL)
    want[:6] = x * 3.0
    _exact(out, want)


# ---- program order: iterations reading earlier iterations' writes ---------------------------------

@pypto.frontend.jit
def running_prefix(x: pypto.Tensor([D, 4], FP32), out: pypto.Tensor([D, 4], FP32)):
    out[0:1, :] = x[0:1, :]
    for i in pypto.loop(1, x.shape[0]):
        prev = pypto.view(out, [1, 4], [i - 1, 0])
        pypto.assemble(prev + x[i:i + 1, :], [i, 0], out)


def _sequential_prefix(x):
    want = x.clone()
    for i in range(1, x.shape[0]):
        want[i] = want[i - 1] + x[i]
    return want


@pytest.mark.parametrize("n", [1, 2, 17, 64])
def test_running_prefix_keeps_program_order(n):
    x = _rand(n, 4, seed=n)
    out = torch.full((n, 4), SENTINEL)
    running_prefix(x, out)
    _exact(out, _sequential_prefix(x))


def test_running_prefix_int32_exact():
    @pypto.frontend.jit
    def prefix_int(x: pypto.Tensor([D, 3], pypto.DT_INT32), out: pypto.Tensor([D, 3], pypto.DT_INT32)):
        out[0:1, :] = x[0:1, :]
        for i in pypto.loop(1, x.shape[0]):
            out[i:i + 1, :] = out[i - 1:i, :] + x[i:i + 1, :]

    x = torch.arange(30, dtype=torch.int32).reshape(10, 3) * 7 - 50
    out = torch.zeros_like(x)
    prefix_int(x, out)
    _exact(out, torch.cumsum(x, dim=0, dtype=torch.int32))


def test_write_then_read_in_one_iteration_and_local_accumulator():
    @pypto.frontend.jit
    def accumulate(x: pypto.Tensor([D, 8], FP32), out: pypto.Tensor([1, 8], FP32)):
        acc = pypto.tensor([1, 8], FP32, "acc")
        acc[:] = pypto.full([1, 8], 0.0, FP32)
        for i in pypto.loop(x.shape[0]):
            acc[:] = acc + x[i:i + 1, :] * 2.0  # reads the value written by the previous iteration
        out[:] = acc

    for n in (1, 5, 12):
        x = torch.arange(n * 8, dtype=torch.float32).reshape(n, 8) / 4.0  # exact sums
        out = torch.full((1, 8), SENTINEL)
        accumulate(x, out)
        _exact(out, (x * 2.0).sum(0, keepdim=True))
    assert accumulate.cache_info().misses == 1


# ---- reductions with exact values -----------------------------------------------------------------

def test_int32_row_and_column_sums_exact():
    @pypto.frontend.jit
    def sums(x: pypto.Tensor([D, 16], pypto.DT_INT32), rows: pypto.Tensor([D], pypto.DT_INT32),
             cols: pypto.Tensor([1, 16], pypto.DT_INT32)):
        rows[:] = pypto.sum(x, -1)
        cols[:] = pypto.sum(x, 0, keepdim=True)

    for n in (1, 7, 40):
        x = torch.arange(n * 16, dtype=torch.int32).reshape(n, 16)
        rows = torch.zeros(n, dtype=torch.int32)
        cols = torch.zeros(1, 16, dtype=torch.int32)
        sums(x, rows, cols)
        # closed forms: row r sums 16*(16r) + 0..15; column c sums c + 16*k over k < n
        r = torch.arange(n, dtype=torch.int32)
        _exact(rows, 256 * r + 120)
        c = torch.arange(16, dtype=torch.int32)
        _exact(cols, (n * c + 16 * (n * (n - 1) // 2))[None, :].to(torch.int32))
        assert rows.dtype == torch.int32


def test_float_sum_amax_amin_exact_over_tail_tiles():
    @pypto.frontend.jit
    def stats(x: pypto.Tensor([D, 32], FP32), out: pypto.Tensor([D, 3], FP32)):
        for i in pypto.loop(pypto.ceildiv(x.shape[0], 8)):
            t = x[i * 8:(i + 1) * 8, :]
            s = pypto.sum(t, -1, keepdim=True)
            mx = pypto.amax(t, -1, keepdim=True)
            mn = pypto.amin(t, -1, keepdim=True)
            pypto.assemble(s, [i * 8, 0], out)
            pypto.assemble(mx, [i * 8, 1], out)
            pypto.assemble(mn, [i * 8, 2], out)

    for n in (3, 8, 21):
        # quarter-integers: every partial sum is exactly representable in fp32
        x = (torch.arange(n * 32, dtype=torch.float32).reshape(n, 32) - 100.0) * 0.25
        out = torch.full((n, 3), SENTINEL)
        stats(x, out)
        want = torch.stack([x.sum(-1), x.amax(-1), x.amin(-1)], dim=-1)
        _exact(out, want)
        # and against the closed form of the sum: sum_{c<32} (32r + c - 100) / 4
        r = torch.arange(n, dtype=torch.float32)
        _exact(out[:, 0], (32 * 32 * r + 496 - 3200) / 4)
    assert stats.cache_info().misses == 1


# ---- bf16 layernorm -------------------------------------------------------------------------------

H = 64
EPS = 1e-5


@pypto.frontend.jit
def layernorm_bf16(x: pypto.Tensor([D, H], pypto.DT_BF16), weight: pypto.Tensor([H], pypto.DT_BF16),
                   bias: pypto.Tensor([H], pypto.DT_BF16), out: pypto.Tensor([D, H], pypto.DT_BF16)):
    w = pypto.cast(weight, FP32)
    b = pypto.cast(bias, FP32)
    for i in pypto.loop(pypto.ceildiv(x.shape[0], 8)):
        xt = pypto.cast(x[i * 8:(i + 1) * 8, :], FP32)
        mean = pypto.sum(xt, -1, keepdim=True) / float(H)
        d = xt - mean
        var = pypto.sum(d * d, -1, keepdim=True) / float(H)
        y = d * pypto.rsqrt(var + EPS) * w + b
        out[i * 8:(i + 1) * 8, :] = pypto.cast(y, pypto.DT_BF16)


@pytest.mark.parametrize("n", [1, 8, 19])
def test_layernorm_bf16(n):
    x = _rand(n, H, seed=n, dtype=torch.bfloat16) * 3 + 1
    weight = _rand(H, seed=100, dtype=torch.bfloat16)
    bias = _rand(H, seed=101, dtype=torch.bfloat16)
    out = torch.zeros(n, H, dtype=torch.bfloat16)
    layernorm_bf16(x, weight, bias, out)
    want = torch.nn.functional.layer_norm(x.float(), (H,), weight.float(), bias.float(), EPS).to(torch.bfloat16)
    assert out.dtype == torch.bfloat16
    torch.testing.assert_close(out, want)  # bf16 default tolerances (rtol 1.6e-2, atol 1e-5)


def test_layernorm_bf16_wrong_dtype_rejected():
    x = _rand(4, H)
    # upstream's wording is part of the message (its test_function_kernel.py looks for it)
    with pytest.raises(pypto.ArgumentTypeError, match="wrong dtype.*does not match the dtype") as info:
        layernorm_bf16(x, x[0].bfloat16(), x[0].bfloat16(), x.bfloat16())
    assert info.value.param == "x"


# ---- element reads: per-batch lengths -------------------------------------------------------------

MAXS = 16
HD = 8


@pypto.frontend.jit
def masked_rows(x: pypto.Tensor([D, MAXS, HD], FP32), lens: pypto.Tensor([D], pypto.DT_INT32),
                out: pypto.Tensor([D, MAXS, HD], FP32), sums: pypto.Tensor([D, HD], FP32)):
    for b in pypto.loop(x.shape[0]):
        n = lens[b]
        # lens[b] as a loop bound: only the first n rows of batch b are written
        for s in pypto.loop(n):
            out[b:b + 1, s:s + 1, :] = x[b:b + 1, s:s + 1, :] * 2.0
        # lens[b] as a valid shape: the sum only sees the first n rows
        xb = pypto.view(x, [1, MAXS, HD], [b, 0, 0], valid_shape=[1, n, HD])
        sums[b:b + 1, :] = pypto.sum(xb, 1)


def test_int32_lengths_as_loop_bound_and_valid_shape():
    masked_rows.cache_clear()
    for lens_list in ([3, 0, 16, 7], [1, 5]):
        B = len(lens_list)
        x = _rand(B, MAXS, HD, seed=B)
        lens = torch.tensor(lens_list, dtype=torch.int32)
        out = torch.full((B, MAXS, HD), SENTINEL)
        sums = torch.full((B, HD), SENTINEL)
        masked_rows(x, lens, out, sums)
        want = torch.full((B, MAXS, HD), SENTINEL)
        want_sums = torch.zeros(B, HD)
        for b, L in enumerate(lens_list):
            want[b, :L] = x[b, :L] * 2.0
            want_sums[b] = x[b, :L].sum(0)
        _exact(out, want)
        torch.testing.assert_close(sums, want_sums)
    # the lengths are data, not part of the signature: one compile
    assert masked_rows.cache_info().misses == 1
    text = masked_rows.inspect(x, lens, out, sums).text()
    assert "lens[b]" in text


def test_element_read_of_float_tensor_rejected():
    @pypto.frontend.jit
    def bad(x: pypto.Tensor([D], FP32), out: pypto.Tensor([D], FP32)):
        for i in pypto.loop(x[0]):
            pass

    with pytest.raises(pypto.DTypeError):
        bad(torch.zeros(3), torch.zeros(3))


def test_an_argument_name_may_be_rebound_to_its_own_inplace_reshape():
    # x = pypto.reshape(x, ..., inplace=True) keeps the name on the argument's memory, so it is not
    # the refused "reassignment of an input tensor"; writes through it reach the caller's tensor
    @pypto.frontend.jit
    def bump(scale: pypto.Tensor([8, 1], pypto.DT_FP32), out: pypto.Tensor([1, 8], pypto.DT_FP32)):
        pypto.set_vec_tile_shapes(1, 8)
        scale = pypto.reshape(scale, [1, 8], inplace=True)
        out[:] = scale + 1.0
        scale[:] = scale * 2.0

    scale, out = torch.arange(8.0).reshape(8, 1), torch.zeros(1, 8)
    bump(scale, out)
    assert torch.equal(out, torch.arange(8.0).reshape(1, 8) + 1.0)
    assert torch.equal(scale, torch.arange(8.0).reshape(8, 1) * 2.0)

    @pypto.frontend.jit
    def rebind(scale: pypto.Tensor([8, 1], pypto.DT_FP32), out: pypto.Tensor([1, 8], pypto.DT_FP32)):
        pypto.set_vec_tile_shapes(1, 8)
        scale = pypto.reshape(scale, [1, 8])  # a copy: rebinding the name would write nothing back
        out[:] = scale

    with pytest.raises(pypto.KernelSyntaxError, match="cannot be reassigned"):
        rebind(scale, out)


def test_reshape_of_a_partly_valid_inner_dim_keeps_each_row_in_place():
    # a [T, 8] tile whose valid part is [T, 4] is reshaped to [T * 8, 1] as the device reshapes its
    # memory: row r's four values stay at r * 8 .. r * 8 + 3 (packing the valid values together
    # put row 1 at 4 .. 7, a wrong number in upstream's DeepSeek sparse attention dequant)
    @pypto.frontend.jit
    def spread(x: pypto.Tensor([16, 4], FP32), out: pypto.Tensor([16 * 8, 1], FP32)):
        for _ in pypto.loop(1):
            pypto.set_vec_tile_shapes(16, 8)
            wide = pypto.view(x, [16, 8], [0, 0], valid_shape=[16, 4])
            rows = pypto.clone(wide)
            pypto.set_vec_tile_shapes(128, 1)
            out[:] = pypto.reshape(rows, [16 * 8, 1])

    x = torch.randn(16, 4)
    out = torch.full((16 * 8, 1), float("nan"))
    spread(x, out)
    assert torch.equal(out.reshape(16, 8)[:, :4], x)


def test_reshape_of_a_partly_valid_inner_dim_in_a_batched_loop():
    # the same reshape in every iteration of a loop, which the runtime runs as one batched call
    @pypto.frontend.jit
    def spread_blocks(x: pypto.Tensor([64, 4], FP32), out: pypto.Tensor([64 * 8, 1], FP32)):
        for b in pypto.loop(4):
            pypto.set_vec_tile_shapes(16, 8)
            wide = pypto.view(x, [16, 8], [b * 16, 0], valid_shape=[16, 4])
            rows = pypto.clone(wide)
            pypto.set_vec_tile_shapes(128, 1)
            out[b * 128:(b + 1) * 128, :] = pypto.reshape(rows, [16 * 8, 1])

    x = torch.randn(64, 4)
    for serial in (False, True):
        out = torch.full((64 * 8, 1), float("nan"))
        with pypto.options(debug_options={"serial_execution": serial}):
            spread_blocks(x, out)
        assert torch.equal(out.reshape(64, 8)[:, :4], x)
