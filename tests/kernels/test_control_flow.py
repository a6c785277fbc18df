"""Control flow in kernels: pypto.loop (dynamic bounds, steps, nesting, names), runtime
conditions inside loops, is_loop_begin/end, cond, compile-time `if` and Python loops, inlined
helpers and loop_unroll. Every kernel is checked against torch and, where sizes vary, against
the compile count.
"""

import pytest
import torch

import pypto

D = pypto.DYNAMIC
FP32 = pypto.DT_FP32


def _rand(*shape, seed=0):
    g = torch.Generator().manual_seed(seed)
    return torch.randn(*shape, generator=g, dtype=torch.float32)


def _exact(a, b):
    torch.testing.assert_close(a, b, rtol=0, atol=0)


# ---- softmax over a dynamic batch, tiled ----------------------------------------------------------

ROWS = 4
COLS = 32


@pypto.frontend.jit
def tiled_softmax(x: pypto.Tensor([D, COLS], FP32), out: pypto.Tensor([D, COLS], FP32)):
    pypto.set_vec_tile_shapes(ROWS, COLS)
    for i in pypto.loop(pypto.ceildiv(x.shape[0], ROWS), name="rows", idx_name="r"):
        tile = pypto.view(x, [ROWS, COLS], [i * ROWS, 0])
        m = pypto.amax(tile, -1, keepdim=True)
        e = pypto.exp(tile - m)
        s = pypto.sum(e, -1, keepdim=True)
        pypto.assemble(e / s, [i * ROWS, 0], out)


@pytest.mark.parametrize("batch", [1, 4, 10, 13])
def test_tiled_softmax_tail(batch):
    x = _rand(batch, COLS, seed=batch) * 3
    out = torch.full_like(x, float("nan"))
    tiled_softmax(x, out)
    torch.testing.assert_close(out, torch.softmax(x, dim=-1))


def test_tiled_softmax_one_compile_and_loop_name():
    tiled_softmax.cache_clear()
    for batch in (3, 9, 17):
        x = _rand(batch, COLS, seed=batch)
        out = torch.empty_like(x)
        tiled_softmax(x, out)
        torch.testing.assert_close(out, torch.softmax(x, dim=-1))
    assert tiled_softmax.cache_info().misses == 1
    ck = tiled_softmax.inspect(x, out)
    text = ck.text()
    assert "loop rows: r in [0, (x.shape[0] + 3) // 4)" in text
    (lp,) = list(ck.program.loops())
    assert (lp.name, lp.index, lp.step) == ("rows", "r", 1)


# ---- loop(start, stop, step) ----------------------------------------------------------------------

def test_loop_start_stop_step():
    @pypto.frontend.jit
    def odd_rows(x: pypto.Tensor([D, 8], FP32), out: pypto.Tensor([D, 8], FP32)):
        for i in pypto.loop(1, x.shape[0], 2, name="odd", idx_name="k"):
            out[i:i + 1, :] = x[i:i + 1, :] * 10.0

    for n in (1, 2, 7, 8):
        x = _rand(n, 8, seed=n)
        out = torch.zeros(n, 8)
        odd_rows(x, out)
        want = torch.zeros(n, 8)
        want[1::2] = x[1::2] * 10.0
        _exact(out, want)
    assert odd_rows.cache_info().misses == 1
    (lp,) = list(odd_rows.inspect(x, out).program.loops())
    assert (lp.name, lp.index, lp.start, lp.step) == ("odd", "k", 1, 2)


def test_loop_symbolic_start():
    @pypto.frontend.jit
    def second_half(x: pypto.Tensor([D, 4], FP32), out: pypto.Tensor([D, 4], FP32)):
        n = x.shape[0]
        for i in pypto.loop(n // 2, n):
            out[i:i + 1, :] = x[i:i + 1, :] + 1.0

    for n in (1, 4, 9):
        x = _rand(n, 4, seed=n)
        out = torch.zeros(n, 4)
        second_half(x, out)
        want = torch.zeros(n, 4)
        want[n // 2:] = x[n // 2:] + 1.0
        _exact(out, want)


# ---- nested loops over two dynamic dims -----------------------------------------------------------

TM, TN = 4, 8


@pypto.frontend.jit
def blocked_scale(x: pypto.Tensor([D, D], FP32), out: pypto.Tensor([D, D], FP32)):
    m, n = x.shape[0], x.shape[1]
    for i in pypto.loop(pypto.ceildiv(m, TM)):
        for j in pypto.loop(pypto.ceildiv(n, TN)):
            blk = x[i * TM:(i + 1) * TM, j * TN:(j + 1) * TN]
            # every block also gets its block coordinates added: proves each (i, j) ran once
            val = blk * 2.0 + pypto.full([TM, TN], i * 100 + j, FP32)
            out[i * TM:(i + 1) * TM, j * TN:(j + 1) * TN] = val


def test_nested_dynamic_loops():
    blocked_scale.cache_clear()
    for m, n in ((4, 8), (10, 19), (1, 3), (13, 33)):
        x = _rand(m, n, seed=m * n)
        out = torch.full((m, n), float("nan"))
        blocked_scale(x, out)
        rows = torch.arange(m) // TM
        cols = torch.arange(n) // TN
        coord = (rows[:, None] * 100 + cols[None, :]).float()
        _exact(out, x * 2.0 + coord)
    info = blocked_scale.cache_info()
    assert (info.misses, info.hits) == (1, 3)
    text = blocked_scale.inspect(x, out).text()
    assert "loop i in" in text and "    loop j in" in text  # j nested inside i


def test_nested_loops_reusing_index_name_rejected():
    @pypto.frontend.jit
    def bad(x: pypto.Tensor([D, D], FP32)):
        for i in pypto.loop(x.shape[0], idx_name="t"):
            for j in pypto.loop(x.shape[1], idx_name="t"):
                pass

    with pytest.raises(pypto.KernelSyntaxError, match="reuses the index name"):
        bad(torch.zeros(2, 2))


# ---- runtime conditions inside a dynamic loop -----------------------------------------------------

@pypto.frontend.jit
def first_middle_last(x: pypto.Tensor([D, 8], FP32), out: pypto.Tensor([D, 8], FP32)):
    n = x.shape[0]
    for i in pypto.loop(n):
        row = x[i:i + 1, :]
        if i == 0:
            out[i:i + 1, :] = row * 2.0
        elif i == n - 1:
            out[i:i + 1, :] = row * 3.0
        else:
            out[i:i + 1, :] = row * 5.0


def _fml_ref(x):
    want = x * 5.0
    want[-1] = x[-1] * 3.0
    want[0] = x[0] * 2.0  # i == 0 is tested first: a single row takes the first branch
    return want


def test_runtime_if_elif_else_per_iteration():
    first_middle_last.cache_clear()
    for n in (1, 2, 3, 6):
        x = _rand(n, 8, seed=n)
        out = torch.full((n, 8), float("nan"))
        first_middle_last(x, out)
        _exact(out, _fml_ref(x))
    info = first_middle_last.cache_info()
    assert (info.misses, info.hits) == (1, 3)
    # three traced paths of the loop body: a branch nested in a branch
    text = first_middle_last.inspect(x, out).text()
    assert "if i == 0:" in text and "if i == x.shape[0] - 1:" in text
    assert text.count("else:") == 2


def test_is_loop_begin_and_end():
    @pypto.frontend.jit
    def ends(x: pypto.Tensor([D, 4], FP32), out: pypto.Tensor([D, 4], FP32)):
        for i in pypto.loop(2, x.shape[0], 3):
            row = x[i:i + 1, :]
            if pypto.is_loop_begin(i):
                row = row + 100.0
            if pypto.is_loop_end(i):
                row = row + 1000.0
            out[i:i + 1, :] = row

    for n in (3, 5, 6, 9, 12):
        x = _rand(n, 4, seed=n)
        out = torch.zeros(n, 4)
        ends(x, out)
        want = torch.zeros(n, 4)
        idx = list(range(2, n, 3))
        for i in idx:
            want[i] = x[i] + (100.0 if i == idx[0] else 0.0) + (1000.0 if i == idx[-1] else 0.0)
        _exact(out, want)
    assert ends.cache_info().misses == 1


def test_is_loop_begin_needs_loop_index():
    @pypto.frontend.jit
    def bad(x: pypto.Tensor([D, 4], FP32)):
        if pypto.is_loop_begin(x.shape[0]):
            pass

    with pytest.raises(pypto.KernelSyntaxError, match="needs the index of an enclosing pypto.loop"):
        bad(torch.zeros(2, 4))


def test_cond_parity():
    @pypto.frontend.jit
    def parity(x: pypto.Tensor([D, 4], FP32), out: pypto.Tensor([D, 4], FP32)):
        for i in pypto.loop(x.shape[0]):
            if pypto.cond(i % 2 == 0):
                out[i:i + 1, :] = x[i:i + 1, :] * -1.0
            else:
                out[i:i + 1, :] = x[i:i + 1, :] + 0.5

    for n in (1, 4, 7):
        x = _rand(n, 4, seed=n)
        out = torch.zeros(n, 4)
        parity(x, out)
        want = x + 0.5
        want[0::2] = x[0::2] * -1.0
        _exact(out, want)
    assert parity.cache_info().misses == 1


def test_runtime_condition_on_dynamic_dim_outside_loop():
    @pypto.frontend.jit
    def small_or_big(x: pypto.Tensor([D, 4], FP32), out: pypto.Tensor([D, 4], FP32)):
        if x.shape[0] > 3:
            out[:] = x * 2.0
        else:
            out[:] = x - 1.0

    for n, f in ((2, lambda t: t - 1.0), (3, lambda t: t - 1.0), (4, lambda t: t * 2.0), (9, lambda t: t * 2.0)):
        x = _rand(n, 4, seed=n)
        out = torch.zeros(n, 4)
        small_or_big(x, out)
        _exact(out, f(x))
    assert small_or_big.cache_info().misses == 1


def test_python_while_on_symbolic_bound_is_an_error_not_a_hang():
    @pypto.frontend.jit
    def runaway(x: pypto.Tensor([D, 4], FP32), out: pypto.Tensor([D, 4], FP32)):
        i = 0
        while i < x.shape[0]:  # symbolic condition: tracing can never decide to stop
            out[i:i + 1, :] = x[i:i + 1, :]
            i += 1

    with pytest.raises(pypto.KernelSyntaxError, match="runtime conditions on one control-flow path"):
        runaway(torch.zeros(3, 4), torch.zeros(3, 4))


# ---- compile-time `if` and Python loops -----------------------------------------------------------

@pypto.frontend.jit
def maybe_relu(x: pypto.Tensor([D, 16], FP32), out: pypto.Tensor([D, 16], FP32), flag=True):
    for i in pypto.loop(pypto.ceildiv(x.shape[0], 4)):
        t = x[i * 4:(i + 1) * 4, :]
        if flag:
            t = pypto.relu(t)
        else:
            t = t * -1.0
        out[i * 4:(i + 1) * 4, :] = t


def test_compile_time_if_on_constant():
    maybe_relu.cache_clear()
    x = _rand(6, 16, seed=1)
    out = torch.zeros(6, 16)
    maybe_relu(x, out, flag=True)
    _exact(out, torch.relu(x))
    maybe_relu(x, out, flag=False)
    _exact(out, -x)
    maybe_relu(_rand(11, 16), torch.zeros(11, 16))  # the default, flag=True: a hit
    info = maybe_relu.cache_info()
    assert (info.misses, info.hits, info.currsize) == (2, 1, 2)
    t_on = maybe_relu.inspect(x, out, flag=True).text()
    t_off = maybe_relu.inspect(x, out, flag=False).text()
    assert "= relu(" in t_on and "= relu(" not in t_off and "= mul(" in t_off
    assert "if " not in t_on and "if " not in t_off  # resolved while tracing, not a runtime branch


NBLK = 4
BW = 32


@pypto.frontend.jit
def per_block(x: pypto.Tensor([D, NBLK * BW], FP32), out: pypto.Tensor([D, NBLK * BW], FP32)):
    for i in pypto.loop(pypto.ceildiv(x.shape[0], 8)):
        for c in range(NBLK):  # a Python loop: unrolled while tracing
            blk = x[i * 8:(i + 1) * 8, c * BW:(c + 1) * BW]
            out[i * 8:(i + 1) * 8, c * BW:(c + 1) * BW] = blk * float(c + 1)


def test_python_for_unrolls_at_compile_time():
    per_block.cache_clear()
    for n in (5, 8, 20):
        x = _rand(n, NBLK * BW, seed=n)
        out = torch.zeros_like(x)
        per_block(x, out)
        scale = torch.arange(1, NBLK + 1, dtype=torch.float32).repeat_interleave(BW)
        _exact(out, x * scale)
    assert per_block.cache_info().misses == 1
    prog = per_block.inspect(x, out).program
    kinds = [op.kind for op in prog.ops()]
    assert kinds.count("view") == NBLK and kinds.count("assemble") == NBLK and kinds.count("mul") == NBLK
    assert len(list(prog.loops())) == 1  # only the pypto.loop is a runtime loop
    offsets = sorted(op.attrs["offsets"][1] for op in prog.ops() if op.kind == "view")
    assert offsets == [0, 32, 64, 96]


# ---- helper functions are inlined -----------------------------------------------------------------

def plain_helper(t, k):
    return t * k + 1.0


@pypto.frontend.function
def decorated_helper(t):
    m = pypto.amax(t, -1, keepdim=True)
    return t - m


def test_helpers_are_inlined():
    @pypto.frontend.jit
    def uses_helpers(x: pypto.Tensor([D, 16], FP32), out: pypto.Tensor([D, 16], FP32)):
        for i in pypto.loop(pypto.ceildiv(x.shape[0], 4)):
            t = x[i * 4:(i + 1) * 4, :]
            out[i * 4:(i + 1) * 4, :] = decorated_helper(plain_helper(t, 3.0))

    for n in (3, 9):
        x = _rand(n, 16, seed=n)
        out = torch.zeros_like(x)
        uses_helpers(x, out)
        y = x * 3.0 + 1.0
        torch.testing.assert_close(out, y - y.amax(-1, keepdim=True))
    prog = uses_helpers.inspect(x, out).program
    kinds = [op.kind for op in prog.ops()]
    assert kinds == ["view", "mul", "add", "amax", "sub", "assemble"]
    assert uses_helpers.cache_info().misses == 1


def test_helper_with_runtime_condition():
    def clamp_first(t, i):
        if i == 0:
            return t * 0.0
        return t

    @pypto.frontend.jit
    def zero_first(x: pypto.Tensor([D, 4], FP32), out: pypto.Tensor([D, 4], FP32)):
        for i in pypto.loop(x.shape[0]):
            out[i:i + 1, :] = clamp_first(x[i:i + 1, :], i)

    x = _rand(5, 4)
    out = torch.full_like(x, 7.0)
    zero_first(x, out)
    want = x.clone()
    want[0] = 0.0
    _exact(out, want)


# ---- loop_unroll ----------------------------------------------------------------------------------

UT = 2  # rows per tile


@pypto.frontend.jit
def unrolled_scale(x: pypto.Tensor([D, 8], FP32), out: pypto.Tensor([D, 8], FP32)):
    ntiles = pypto.ceildiv(x.shape[0], UT)
    for i, f in pypto.loop_unroll(ntiles, unroll_list=[4, 2]):
        for k in range(f):  # factor f: this body handles f tiles starting at tile i
            t = x[(i + k) * UT:(i + k + 1) * UT, :]
            # the factor is baked into the result so the test sees which body handled each tile
            out[(i + k) * UT:(i + k + 1) * UT, :] = t * 2.0 + float(f)


def _unroll_ref(x):
    n = x.shape[0]
    tiles = -(-n // UT)
    factor = []
    rem = tiles
    for f in (4, 2, 1):
        factor += [f] * (rem // f * f)
        rem %= f
    per_row = torch.tensor(factor, dtype=torch.float32).repeat_interleave(UT)[:n]
    return x * 2.0 + per_row[:, None]


@pytest.mark.parametrize("rows", [1, 5, 7, 11, 16, 21])  # 1, 3, 4, 6, 8, 11 tiles (with row tails)
def test_loop_unroll_factors(rows):
    x = _rand(rows, 8, seed=rows)
    out = torch.full_like(x, float("nan"))
    unrolled_scale(x, out)
    _exact(out, _unroll_ref(x))


def test_loop_unroll_one_compile_three_bodies():
    unrolled_scale.cache_clear()
    for rows in (1, 5, 7, 11):
        x = _rand(rows, 8, seed=rows)
        out = torch.zeros_like(x)
        unrolled_scale(x, out)
    assert unrolled_scale.cache_info().misses == 1
    (lp,) = list(unrolled_scale.inspect(x, out).program.loops())
    assert lp.factors == (4, 2, 1)
    views_per_body = [sum(1 for item in body.items if getattr(item, "kind", None) == "view") for body in lp.bodies]
    assert views_per_body == [4, 2, 1]


def test_loop_with_unroll_list_keyword_yields_the_index_alone():
    # upstream: the body handles one iteration and gets the index alone (loop_unroll is the form
    # with a body per factor); its recorder traces the body once per iteration of a chunk of 16
    # (a path per factor, tests/kernels/test_loop_unroll_list.py)
    @pypto.frontend.jit
    def via_loop(x: pypto.Tensor([D, 8], FP32), out: pypto.Tensor([D, 8], FP32)):
        for i in pypto.loop(0, x.shape[0], 2, unroll_list=[16, 1]):
            if pypto.is_loop_end(i):
                out[i:i + 2, :] = x[i:i + 2, :] * 3.0
            else:
                out[i:i + 2, :] = x[i:i + 2, :] + 1.0

    for rows in (7, 8, 1):
        x = _rand(rows, 8, seed=rows)
        out = torch.zeros_like(x)
        via_loop(x, out)
        want = x + 1.0
        last = (rows - 1) // 2 * 2
        want[last:] = x[last:] * 3.0
        _exact(out, want)
    (lp,) = list(via_loop.inspect(x, out).program.loops())
    assert lp.factors == (16, 1) and len(lp.bodies) == 2


def test_loop_unroll_list_must_hold_positive_ints():
    @pypto.frontend.jit
    def bad(x: pypto.Tensor([D, 8], FP32), out: pypto.Tensor([D, 8], FP32)):
        for i in pypto.loop(x.shape[0], unroll_list=[4, 0]):
            out[i:i + 1, :] = x[i:i + 1, :]

    x = _rand(4, 8)
    with pytest.raises(pypto.KernelSyntaxError, match="unroll_list"):
        bad(x, torch.zeros_like(x))


def test_unroll_list_hint_keeps_begin_and_end_per_iteration():
    """With the unroll_list hint, is_loop_begin/is_loop_end still mark the first and last rows."""
    @pypto.frontend.jit
    def mark(x: pypto.Tensor([D, 4], FP32), out: pypto.Tensor([D, 4], FP32)):
        for i in pypto.loop(x.shape[0], unroll_list=[1, 4]):
            row = x[i:i + 1, :]
            if pypto.cond(pypto.is_loop_begin(i)):
                row = row - 1000.0
            elif pypto.cond(pypto.is_loop_end(i)):
                row = row + 1000.0
            out[i:i + 1, :] = row

    for n in (1, 2, 4, 5, 9):
        x = _rand(n, 4, seed=n)
        out = torch.zeros_like(x)
        mark(x, out)
        want = x.clone()
        if n > 1:
            want[-1] += 1000.0
        want[0] -= 1000.0
        _exact(out, want)


def test_loop_with_unroll_list_is_a_hint_over_one_step_bodies():
    # pypto.loop's unroll_list only lets the device batch iterations: the index still advances by
    # one step per body (loop_unroll is the form whose body handles `factor` steps).
    @pypto.frontend.jit
    def via_loop(x: pypto.Tensor([D, 8], FP32), out: pypto.Tensor([D, 8], FP32)):
        for i in pypto.loop(x.shape[0], unroll_list=[4, 2]):
            out[i:i + 1, :] = x[i:i + 1, :] * 2.0 + i

    for rows in (1, 6, 7):
        x = _rand(rows, 8, seed=rows)
        out = torch.zeros_like(x)
        via_loop(x, out)
        _exact(out, x * 2.0 + torch.arange(rows, dtype=torch.float32)[:, None])


def test_loop_rejects_a_bad_unroll_list():
    with pytest.raises(pypto.PyptoError, match="unroll_list"):
        @pypto.frontend.jit
        def bad(x: pypto.Tensor([D, 8], FP32), out: pypto.Tensor([D, 8], FP32)):
            for i in pypto.loop(x.shape[0], unroll_list=[0]):
                out[i:i + 1, :] = x[i:i + 1, :]

        bad(_rand(2, 8), torch.zeros(2, 8))


def test_loop_unroll_with_is_loop_end():
    @pypto.frontend.jit
    def mark_last(x: pypto.Tensor([D, 4], FP32), out: pypto.Tensor([D, 4], FP32)):
        for i, f in pypto.loop_unroll(x.shape[0], unroll_list=[2]):
            for k in range(f):
                row = x[i + k:i + k + 1, :]
                if k == f - 1 and pypto.is_loop_end(i):  # the last row of the last iteration
                    row = row + 1000.0
                if k == 0 and pypto.is_loop_begin(i):
                    row = row - 1000.0
                out[i + k:i + k + 1, :] = row

    for n in (1, 2, 3, 6, 7):
        x = _rand(n, 4, seed=n)
        out = torch.zeros_like(x)
        mark_last(x, out)
        want = x.clone()
        want[-1] += 1000.0
        want[0] -= 1000.0
        _exact(out, want)
    assert mark_last.cache_info().misses == 1


def test_max_of_a_loop_index_that_starts_below_zero():
    # the index of a loop starting at -3 may be negative: max(i, 0) must not fold to i
    @pypto.frontend.jit
    def shifted(x: pypto.Tensor([8, 4], FP32), out: pypto.Tensor([8, 4], FP32)):
        for i in pypto.loop(-3, 5):
            r = pypto.max(i, 0)
            out[i + 3:i + 4, :] = x[r:r + 1, :]

    x = _rand(8, 4)
    out = torch.zeros_like(x)
    shifted(x, out)
    _exact(out, x[[max(j - 3, 0) for j in range(8)]])


def test_break_and_continue_in_compile_time_loops():
    # a Python loop runs while tracing, so break/continue/return in it are plain Python (upstream's
    # AST parser rejects them; inside pypto.loop they are errors here too)
    @pypto.frontend.jit
    def odd_rows_until(x: pypto.Tensor([6, 4], FP32), out: pypto.Tensor([6, 4], FP32), stop: int):
        for i in range(6):
            if i == stop:
                break
            if i % 2 == 0:
                continue
            out[i:i + 1, :] = x[i:i + 1, :] * 2.0
        for i in range(6):
            if i == 4:
                return out

    x = _rand(6, 4)
    for stop in (6, 4):
        out = torch.zeros_like(x)
        got = odd_rows_until(x, out, stop)
        want = torch.zeros_like(x)
        for i in range(1, stop, 2):
            want[i] = x[i] * 2.0
        _exact(out, want)
        _exact(got, want)


@pypto.jit
def flag_set_in_a_branch(x: pypto.Tensor([pypto.DYNAMIC, 8], pypto.DT_FP32), out: pypto.Tensor([pypto.DYNAMIC, 8],
                                                                                                pypto.DT_FP32)):
    pypto.set_vec_tile_shapes(1, 8)
    flag = pypto.SymbolicScalar(0)
    for i in pypto.loop(x.shape[0]):
        if i > 100:
            out[i:i + 1, :] = x[i:i + 1, :]
        else:
            flag = pypto.SymbolicScalar("flag") + 1  # a symbol nothing binds: it reads 0 on the device
            out[i:i + 1, :] = x[i:i + 1, :] * 2.0
    if flag > 0:
        out[0:1, :] = x[0:1, :] * 0.0


def test_a_symbol_nothing_binds_reads_zero():
    """As upstream's device symbol table starts zeroed: SymbolicScalar("flag") + 1 is 1 at run time."""
    x = torch.randn(4, 8)
    out = torch.zeros(4, 8)
    flag_set_in_a_branch(x, out)
    want = x * 2.0
    want[0] = 0.0
    torch.testing.assert_close(out, want)


# ---- keywords the loops do not know: ignored (as upstream), with a warning ------------------------

@pypto.frontend.jit
def unknown_loop_keywords(x: pypto.Tensor([D, COLS], FP32), out: pypto.Tensor([D, COLS], FP32)):
    pypto.set_vec_tile_shapes(ROWS, COLS)
    for i, f in pypto.loop_unroll(0, pypto.ceildiv(x.shape[0], ROWS), 1, name="rows", idx="i",
                                  unroll_list=[2]):
        for _ in pypto.loop(1, sched="fast"):
            rows = pypto.view(x, [ROWS * f, COLS], [i * ROWS, 0])
            pypto.assemble(rows * 2.0, [i * ROWS, 0], out)


def test_unknown_loop_keywords_are_ignored_with_a_warning():
    x, out = _rand(12, COLS, seed=3), torch.zeros(12, COLS)
    with pytest.warns(pypto.frontend.control.IgnoredLoopOptionWarning) as rec:
        unknown_loop_keywords(x, out)
    _exact(out, x * 2.0)
    messages = sorted(str(w.message) for w in rec)
    assert any("'idx'" in m and "did you mean 'idx_name'" in m for m in messages)
    assert any("'sched'" in m for m in messages)
    assert all(w.filename == __file__ for w in rec)  # at the kernel's line
