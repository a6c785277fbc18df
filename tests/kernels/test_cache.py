"""The compile cache of ``pypto.frontend.jit``: what recompiles (STATIC dims, dtypes, constants,
compile options, captured values) and what does not (DYNAMIC dims, runtime-only options), argument
errors, the call log, ``cache_clear``, ``inspect`` and ``last_run``.
"""

import pytest
import torch

import pypto

D = pypto.DYNAMIC
FP32 = pypto.DT_FP32


@pytest.fixture(autouse=True)
def _clean_options():
    pypto.reset_options()
    yield
    pypto.reset_options()


def _rand(*shape, seed=0):
    g = torch.Generator().manual_seed(seed)
    return torch.randn(*shape, generator=g, dtype=torch.float32)


def _exact(a, b):
    torch.testing.assert_close(a, b, rtol=0, atol=0)


def make_scale_rows():
    @pypto.frontend.jit
    def scale_rows(x: pypto.Tensor([D, pypto.STATIC], FP32), out: pypto.Tensor([D, ...], FP32)):
        for i in pypto.loop(pypto.ceildiv(x.shape[0], 4)):
            out[i * 4:(i + 1) * 4, :] = x[i * 4:(i + 1) * 4, :] * 2.0

    return scale_rows


def _run(kernel, *shape, seed=0, **kw):
    x = _rand(*shape, seed=seed)
    out = torch.zeros(*shape)
    kernel(x, out, **kw)
    return x, out


# ---- dynamic and static dims ----------------------------------------------------------------------

def test_dynamic_dim_never_recompiles():
    k = make_scale_rows()
    for n in (1, 3, 4, 5, 64, 2, 17):
        x, out = _run(k, n, 32, seed=n)
        _exact(out, x * 2.0)
    info = k.cache_info()
    assert (info.misses, info.hits, info.currsize) == (1, 6, 1)
    assert info.entries[0].hits == 6


def test_static_dim_change_compiles_new_version_and_keeps_old():
    k = make_scale_rows()
    x, out = _run(k, 5, 32)  # A
    assert k.last_run.cache_hit is False
    x, out = _run(k, 5, 64)  # B: the STATIC dim changed
    _exact(out, x * 2.0)
    assert k.last_run.cache_hit is False
    x, out = _run(k, 9, 32)  # A again (other dynamic size): still cached
    _exact(out, x * 2.0)
    assert k.last_run.cache_hit is True
    x, out = _run(k, 2, 64)  # B again
    assert k.last_run.cache_hit is True
    info = k.cache_info()
    assert (info.misses, info.hits, info.currsize) == (2, 2, 2)
    assert [e.hits for e in info.entries] == [1, 1]
    assert [c.hit for c in info.calls] == [False, False, True, True]


def test_call_log_names_the_changed_static_dim():
    k = make_scale_rows()
    _run(k, 5, 32)
    _run(k, 6, 32)
    _run(k, 6, 48)
    calls = k.cache_info().calls
    assert calls[0].reason == "first call"
    assert calls[1].hit and calls[1].reason is None
    assert not calls[2].hit
    assert "x.shape[1]" in calls[2].reason and "32 -> 48" in calls[2].reason
    assert "static" in calls[2].reason
    assert "x.shape[0]" not in calls[2].reason  # the dynamic dim changed too, but is not a reason


def test_fixed_dim_mismatch_raises():
    @pypto.frontend.jit
    def fixed(x: pypto.Tensor([D, 16], FP32), out: pypto.Tensor([D, 16], FP32)):
        out[:] = x + 1.0

    x, out = _run(fixed, 3, 16)
    _exact(out, x + 1.0)
    with pytest.raises(pypto.ArgumentValueError, match="fixed"):
        fixed(torch.zeros(3, 17), torch.zeros(3, 16))
    with pytest.raises(pypto.ArgumentValueError):
        fixed(torch.zeros(3, 16), torch.zeros(3, 8))
    with pytest.raises(pypto.ArgumentValueError, match="rank"):
        fixed(torch.zeros(16), torch.zeros(3, 16))  # a marker list takes higher ranks, not lower
    info = fixed.cache_info()
    assert (info.misses, info.currsize) == (1, 1)  # failed calls compile nothing


def test_errors_are_pypto_errors_and_valueerrors():
    k = make_scale_rows()
    with pytest.raises(ValueError):  # the pypto error classes keep the builtin family
        k(torch.zeros(3, 4))  # missing the out tensor
    with pytest.raises(pypto.PyptoError):
        k(torch.zeros(3, 4), torch.zeros(3, 4), 1.0)  # an extra positional argument


# ---- dtypes ---------------------------------------------------------------------------------------

def test_dtype_change_recompiles_with_unconstrained_annotation():
    @pypto.frontend.jit
    def double(x: pypto.Tensor(), out: pypto.Tensor()):
        out[:] = x + x

    for dt in (torch.float32, torch.float16, torch.float32, torch.int32):
        x = (torch.arange(12).reshape(3, 4) - 5).to(dt)
        out = torch.zeros(3, 4, dtype=dt)
        double(x, out)
        _exact(out, x + x)
    info = double.cache_info()
    assert (info.misses, info.hits, info.currsize) == (3, 1, 3)
    reasons = [c.reason for c in info.calls]
    assert reasons[1] is not None and "x.dtype" in reasons[1] and "fp16" in reasons[1]


def test_annotated_dtype_mismatch_raises():
    k = make_scale_rows()
    with pytest.raises(pypto.ArgumentTypeError, match="dtype"):
        k(torch.zeros(3, 4, dtype=torch.float16), torch.zeros(3, 4, dtype=torch.float16))
    assert k.cache_info().misses == 0


# ---- compile-time constants -----------------------------------------------------------------------

def make_affine():
    @pypto.frontend.jit
    def affine(x: pypto.Tensor([D, 8], FP32), out: pypto.Tensor([D, 8], FP32), scale, shift=1.0):
        out[:] = x * scale + shift

    return affine


def test_constants_positional_keyword_default():
    k = make_affine()
    x = _rand(3, 8)
    out = torch.zeros(3, 8)
    k(x, out, 2.0)  # positional, default shift
    _exact(out, x * 2.0 + 1.0)
    k(x, out, scale=2.0)  # same values by keyword: the same entry
    _exact(out, x * 2.0 + 1.0)
    k(_rand(5, 8), torch.zeros(5, 8), 2.0, shift=1.0)  # the default given explicitly: same entry
    assert k.cache_info().currsize == 1 and k.cache_info().hits == 2
    k(x, out, 3.0)
    _exact(out, x * 3.0 + 1.0)
    k(x, out, 3.0, -4.0)
    _exact(out, x * 3.0 - 4.0)
    k(x, out, shift=-4.0, scale=3.0)
    _exact(out, x * 3.0 - 4.0)
    info = k.cache_info()
    assert (info.misses, info.hits, info.currsize) == (3, 3, 3)
    assert "constant scale 2.0 -> 3.0" in info.calls[3].reason
    assert "constant shift 1.0 -> -4.0" in info.calls[4].reason


def test_constant_errors():
    k = make_affine()
    x, out = _rand(2, 8), torch.zeros(2, 8)
    with pytest.raises(pypto.ArgumentValueError, match="missing"):
        k(x, out)
    with pytest.raises(pypto.ArgumentValueError, match="unknown keyword"):
        k(x, out, 1.0, bogus=2)
    with pytest.raises(pypto.ArgumentValueError, match="given twice"):
        k(x, out, 1.0, scale=2.0)
    with pytest.raises(pypto.ArgumentTypeError):
        k(x, out, torch.ones(2))  # a tensor for a constant
    assert k.cache_info().misses == 0


def test_captured_value_change_recompiles():
    def factory():
        factor = 2.0

        @pypto.frontend.jit
        def times(x: pypto.Tensor([D, 4], FP32), out: pypto.Tensor([D, 4], FP32)):
            out[:] = x * factor

        def set_factor(v):
            nonlocal factor
            factor = v

        return times, set_factor

    times, set_factor = factory()
    x, out = _rand(3, 4), torch.zeros(3, 4)
    times(x, out)
    _exact(out, x * 2.0)
    set_factor(5.0)
    times(x, out)
    _exact(out, x * 5.0)  # a stale compile would still multiply by 2
    assert times.cache_info().misses == 2


# ---- options --------------------------------------------------------------------------------------

def _plain_kernel(x: pypto.Tensor([D, 8], FP32), out: pypto.Tensor([D, 8], FP32)):
    out[:] = x - 1.0


def test_jit_pass_options_change_the_key_runtime_options_do_not():
    plain = pypto.frontend.jit(_plain_kernel)
    with_pass = pypto.frontend.jit(pass_options={"enable_slice": True})(_plain_kernel)
    with_sched = pypto.frontend.jit(runtime_options={"device_sched_mode": 1})(_plain_kernel)
    x, out = _rand(4, 8), torch.zeros(4, 8)
    k_plain = plain.inspect(x, out).key
    assert with_pass.inspect(x, out).key != k_plain
    assert with_sched.inspect(x, out).key == k_plain
    for k in (plain, with_pass, with_sched):
        out.zero_()
        k(x, out)
        _exact(out, x - 1.0)


def test_options_scope_changes_key_but_runtime_only_option_does_not():
    k = pypto.frontend.jit(_plain_kernel)
    x, out = _rand(4, 8), torch.zeros(4, 8)
    k(x, out)
    assert k.cache_info().misses == 1
    with pypto.options(runtime_options={"device_sched_mode": 3}):
        k(x, out)
    assert k.last_run.cache_hit and k.cache_info().misses == 1
    with pypto.options(pass_options={"enable_slice": True}):
        k(x, out)
        assert not k.last_run.cache_hit
        assert "enable_slice" in k.cache_info().calls[-1].reason
        k(x, out)
        assert k.last_run.cache_hit
    k(x, out)  # back outside the scope: the first version again
    assert k.last_run.cache_hit
    info = k.cache_info()
    assert (info.misses, info.hits, info.currsize) == (2, 3, 2)
    _exact(out, x - 1.0)


def test_global_setter_compile_option_changes_key():
    k = pypto.frontend.jit(_plain_kernel)
    x, out = _rand(4, 8), torch.zeros(4, 8)
    k(x, out)
    pypto.set_pass_options(enable_slice=True)
    k(x, out)
    assert not k.last_run.cache_hit
    pypto.reset_options()
    k(x, out)
    assert k.last_run.cache_hit
    assert k.cache_info().misses == 2


# ---- named dynamic dims ---------------------------------------------------------------------------

N = pypto.frontend.dynamic("N")


@pypto.frontend.jit
def named_add(a: pypto.Tensor([N, 8], FP32), b: pypto.Tensor([N, 8], FP32), out: pypto.Tensor([N, 8], FP32)):
    out[:] = a + b


def test_named_dims_agree_across_tensors():
    named_add.cache_clear()
    for n in (2, 7):
        a, b = _rand(n, 8, seed=1), _rand(n, 8, seed=2)
        out = torch.zeros(n, 8)
        named_add(a, b, out)
        _exact(out, a + b)
    assert named_add.cache_info().misses == 1
    with pytest.raises(pypto.ArgumentValueError, match="'N'"):
        named_add(_rand(3, 8), _rand(4, 8), torch.zeros(3, 8))
    with pytest.raises(pypto.ArgumentValueError, match="'N'"):
        named_add(_rand(3, 8), _rand(3, 8), torch.zeros(5, 8))
    assert "N, 8]" in named_add.inspect(a, b, out).text()


# ---- cache_clear, inspect, last_run ---------------------------------------------------------------

def test_cache_clear():
    k = make_scale_rows()
    _run(k, 3, 8)
    _run(k, 4, 8)
    k.cache_clear()
    info = k.cache_info()
    assert (info.hits, info.misses, info.currsize, len(info.calls)) == (0, 0, 0, 0)
    assert k.last_run is None
    x, out = _run(k, 5, 8)
    _exact(out, x * 2.0)
    assert k.last_run.cache_hit is False
    assert k.cache_info().misses == 1


def test_inspect_returns_compiled_kernel_without_running():
    k = make_scale_rows()
    x = _rand(6, 16)
    out = torch.full((6, 16), 7.0)
    ck = k.inspect(x, out)
    assert isinstance(ck, pypto.CompiledKernel)
    _exact(out, torch.full((6, 16), 7.0))  # nothing ran
    text = ck.text()
    for word in ("kernel scale_rows", "loop", "view", "mul", "assemble"):
        assert word in text
    assert ck.to_dot().startswith("digraph")
    assert ck.passes and ck.passes[0].text == text
    assert [op.kind for op in ck.program.ops()] == ["view", "mul", "assemble"]
    assert k.last_run is None
    # the same arguments give the same compiled version, also when later called
    assert k.inspect(_rand(9, 16), torch.zeros(9, 16)) is ck
    k(x, out)
    assert k.last_run.compiled is ck
    _exact(out, x * 2.0)


def test_last_run_flips():
    k = make_scale_rows()
    flags = []
    for shape in ((3, 8), (5, 8), (5, 16), (1, 16), (2, 8)):
        _run(k, *shape)
        flags.append(k.last_run.cache_hit)
        assert k.last_run.run_seconds >= 0
    assert flags == [False, True, False, True, True]


def test_each_version_counts_its_calls_per_concrete_shape_and_reasons_name_the_nearest():
    @pypto.jit
    def scale_rows(x: pypto.Tensor([pypto.DYNAMIC, pypto.STATIC], pypto.DT_FP32),
                   out: pypto.Tensor([pypto.DYNAMIC, pypto.STATIC], pypto.DT_FP32), factor=2.0):
        pypto.set_vec_tile_shapes(8, 16)
        for b in pypto.loop(pypto.ceildiv(x.shape[0], 8)):
            out[b * 8:(b + 1) * 8, :] = x[b * 8:(b + 1) * 8, :] * factor

    def call(rows, cols, **kw):
        x = torch.randn(rows, cols)
        out = torch.empty(rows, cols)
        scale_rows(x, out, **kw)
        torch.testing.assert_close(out, x * kw.get("factor", 2.0))

    for rows, cols in ((5, 16), (40, 16), (5, 16), (3, 32), (9, 16), (5, 16)):
        call(rows, cols)
    call(9, 16, factor=3.0)
    info = scale_rows.cache_info()
    first, wide, tripled = info.entries
    served = {s.shapes: (s.calls, s.hits) for s in first.served_shapes()}
    assert served == {"x: fp32[5, 16], out: fp32[5, 16]": (3, 2),  # the first call compiled it
                      "x: fp32[40, 16], out: fp32[40, 16]": (1, 1),
                      "x: fp32[9, 16], out: fp32[9, 16]": (1, 1)}
    assert first.hits == sum(hits for _, hits in served.values())
    assert [s.shapes for s in first.served_shapes()][0] == "x: fp32[5, 16], out: fp32[5, 16]"  # most calls
    assert {s.shapes: (s.calls, s.hits) for s in wide.served_shapes()} == {"x: fp32[3, 32], out: fp32[3, 32]": (1, 0)}
    assert "x: fp32[9, 16], out: fp32[9, 16]: 1 call(s), 0 hit(s)" in str(info)
    # the last compile differs from version #0 by the constant only, not from the previous call's
    # version #1 (whose width differs too)
    assert info.calls[-1].reason == "constant factor 2.0 -> 3.0 (against version #0)"
    assert tripled.compiled_for == (9, 9)  # the sizes of its two dynamic dims
