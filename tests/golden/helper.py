"""The golden helper: run a pypto op in a real ``@pypto.jit`` kernel and compare with torch.

Every golden test goes through `check_op` (a small kernel body built into a kernel here) or
`check_kernel` (a hand-written kernel); both end in `assert_matches`, which checks the shape, the
dtype and the values with the tolerance of the result dtype (`TOLERANCE`).

``check_op(body, inputs, expected_fn)``:

* ``inputs`` are torch tensors and Python scalars. Tensors become kernel parameters, scalars
  compile-time constants; ``body`` and ``expected_fn`` both get them in the given order.
* ``expected_fn`` is the torch reference. As pypto documents for fp16/bf16, it gets those tensors
  upcast to fp32 and its results are cast back: to ``out_dtype`` if given (one torch dtype, or one
  per result with None for "default"), else to the dtype of the first non-bool tensor input
  (bool results, and results of ops without such an input, keep their dtype).
* ``mode="direct"``: the kernel returns ``body(*inputs)`` computed on whole tensors.
  ``mode="tiled"``: the first dim is DYNAMIC; a ``pypto.loop`` over ``ceildiv(N, tile)`` row tiles
  applies ``body`` to views ``x[b*tile:(b+1)*tile]`` and assembles each result into output tensors
  passed in (pre-filled with a value different from the expected one, so an unwritten element
  fails). N need not be a multiple of ``tile`` (tails). A tensor is tiled when it has the output's
  rank and first dim N (override with ``tile_inputs``); others (broadcast operands) are passed whole.
"""

from __future__ import annotations

import inspect

import pytest
import torch

import pypto

# dtype -> (rtol, atol); ints and bool compare exactly.
TOLERANCE = {
    torch.float32: (1e-5, 1e-6),
    torch.float16: (1e-3, 1e-3),
    torch.bfloat16: (1e-2, 8e-3),
}
LOOSE_FP32 = (1e-4, 1e-5)  # transcendental ops in fp32
HALF = (torch.float16, torch.bfloat16)


def tolerance(dtype: torch.dtype, loose: bool = False) -> tuple:
    if dtype == torch.float32 and loose:
        return LOOSE_FP32
    return TOLERANCE.get(dtype, (0.0, 0.0))


def assert_matches(got, want, *, loose: bool = False, what: str = "result") -> None:
    """Assert ``got`` equals ``want`` in shape, dtype and values (per-dtype tolerance)."""
    if isinstance(want, (tuple, list)):
        assert isinstance(got, (tuple, list)) and len(got) == len(want), \
            f"{what}: expected {len(want)} results, got {got!r}"
        for i, (g, w) in enumerate(zip(got, want)):
            assert_matches(g, w, loose=loose, what=f"{what}[{i}]")
        return
    assert isinstance(got, torch.Tensor), f"{what}: expected a tensor, got {type(got).__name__}"
    assert got.dtype == want.dtype, f"{what}: dtype {got.dtype}, expected {want.dtype}"
    assert tuple(got.shape) == tuple(want.shape), f"{what}: shape {tuple(got.shape)}, expected {tuple(want.shape)}"
    rtol, atol = tolerance(want.dtype, loose)
    torch.testing.assert_close(got, want, rtol=rtol, atol=atol, msg=lambda m: f"{what}: {m}")


def reference(expected_fn, inputs, out_dtype=None):
    """``expected_fn`` on fp32-upcast fp16/bf16 inputs, results cast back (a tuple of tensors)."""
    tensors = [x for x in inputs if isinstance(x, torch.Tensor)]
    default = next((x.dtype for x in tensors if x.dtype != torch.bool), None)
    up = [x.float() if isinstance(x, torch.Tensor) and x.dtype in HALF else x for x in inputs]
    res = expected_fn(*up)
    res = tuple(res) if isinstance(res, (tuple, list)) else (res,)
    dts = out_dtype if isinstance(out_dtype, (tuple, list)) else (out_dtype,) * len(res)
    out = []
    for r, dt in zip(res, dts):
        if dt is None:
            dt = r.dtype if r.dtype == torch.bool or default is None else default
        out.append(r.to(dt))
    return tuple(out)


def _param(name, annotation=None):
    P = inspect.Parameter
    return P(name, P.POSITIONAL_OR_KEYWORD,
             **({"annotation": annotation} if annotation is not None else {}))


def _sentinel(t: torch.Tensor) -> torch.Tensor:
    """A buffer that differs from ``t`` everywhere."""
    t = t.contiguous()
    if t.dtype == torch.bool:
        return ~t
    if t.dtype.is_floating_point:
        return torch.full_like(t, float("nan"))
    return t + 1  # wraps for the max value, still different


def build_kernel(body, inputs, mode="direct", tile=16, n_out=1, tile_inputs=None):
    """A ``@pypto.jit`` kernel applying ``body`` to ``inputs`` (see the module docstring)."""
    is_t = [isinstance(x, torch.Tensor) for x in inputs]
    n_t = sum(is_t)

    def arrange(ts, consts):  # back to the caller's order of tensors and scalars
        it_t, it_c = iter(ts), iter(consts)
        return [next(it_t) if t else next(it_c) for t in is_t]

    consts = [_param(f"c{i}") for i in range(len(inputs) - n_t)]
    if mode == "direct":
        def kernel(*ts, **cs):
            return body(*arrange(ts, cs.values()))

        params = [_param(f"in{i}", pypto.Tensor()) for i in range(n_t)]
    else:
        tiled = list(tile_inputs)

        def kernel(*args, **cs):
            ts, outs = args[:n_t], args[n_t:]
            for b in pypto.loop(pypto.ceildiv(outs[0].shape[0], tile)):
                first = next((t for t, tl in zip(ts, tiled) if tl), ts[0])
                pypto.set_vec_tile_shapes(tile, *[min(s, 64) for s in first.shape[1:]])
                views = [t[b * tile:(b + 1) * tile] if tl else t for t, tl in zip(ts, tiled)]
                res = body(*arrange(views, cs.values()))
                res = res if isinstance(res, (tuple, list)) else (res,)
                for o, r in zip(outs, res):
                    o[b * tile:(b + 1) * tile] = r

        dyn = pypto.Tensor([pypto.DYNAMIC, ...])
        params = [_param(f"in{i}", dyn if tiled[i] else pypto.Tensor()) for i in range(n_t)]
        params += [_param(f"out{i}", dyn) for i in range(n_out)]
    kernel.__signature__ = inspect.Signature(params + consts)
    return kernel


def check_op(body, inputs, expected_fn, *, mode="direct", tile=16, out_dtype=None, loose=False,
             tile_inputs=None):
    """Run ``body`` in a kernel on ``inputs`` and assert it matches ``expected_fn`` (see module doc).

    Returns the kernel's results (a tuple).
    """
    want = reference(expected_fn, inputs, out_dtype)
    tensors = [x for x in inputs if isinstance(x, torch.Tensor)]
    consts = [x for x in inputs if not isinstance(x, torch.Tensor)]
    if mode == "direct":
        kernel = pypto.jit(build_kernel(body, inputs, "direct"))
        got = kernel(*tensors, *consts)
        got = tuple(got) if isinstance(got, (tuple, list)) else (got,)
    elif mode == "tiled":
        n, rank = want[0].shape[0], want[0].dim()
        if tile_inputs is None:
            tile_inputs = [t.dim() == rank and t.shape[0] == n for t in tensors]
        assert any(tile_inputs), "tiled mode needs at least one tiled input"
        outs = [_sentinel(w) for w in want]
        kernel = pypto.jit(build_kernel(body, inputs, "tiled", tile, len(want), tile_inputs))
        assert kernel(*tensors, *outs, *consts) is None
        got = tuple(outs)
    else:
        raise ValueError(f"unknown mode {mode!r}")
    assert_matches(got, want, loose=loose)
    return got


def check_raises(exc, body, inputs):
    """Assert that running ``body`` on ``inputs`` in a direct kernel raises ``exc``; return it."""
    tensors = [x for x in inputs if isinstance(x, torch.Tensor)]
    consts = [x for x in inputs if not isinstance(x, torch.Tensor)]
    kernel = pypto.jit(build_kernel(body, inputs, "direct"))
    with pytest.raises(exc) as info:
        kernel(*tensors, *consts)
    return info.value


def check_kernel(kernel, args, expected, *, out=None, loose=False):
    """Run a hand-written jit ``kernel`` on ``args``; compare its result with ``expected``.

    ``out`` (an index or a list of indices into ``args``) names in-place outputs to compare;
    without it the kernel's return value is compared. Returns what was compared.
    """
    ret = kernel(*args)
    if out is None:
        got = ret
    else:
        got = args[out] if isinstance(out, int) else tuple(args[i] for i in out)
    assert_matches(got, tuple(expected) if isinstance(expected, list) else expected, loose=loose)
    return got


def reference_run(kernel, args):
    """``kernel``'s Tensor Graph run by the reference executor (what pass verify compares every
    pass with) on copies of ``args``: (the copies after the run, the returned results).

    The reference is the language's definition, so it must match torch as the kernel itself does:
    check both with `assert_matches`."""
    from pypto.runtime.reference import ReferenceExecutor

    compiled = kernel.inspect(*args)
    _, tensors, env, *_ = kernel._lookup(args, {}, count=False)
    copies = [t.clone() for t in tensors]
    returns = ReferenceExecutor(compiled.program).run(copies, dict(env))
    return copies, returns


# ---- input makers ---------------------------------------------------------------------------------

def rand(shape, dtype=torch.float32, *, lo=-2.0, hi=2.0, seed=0) -> torch.Tensor:
    """Reproducible inputs: uniform floats in [lo, hi), or ints in [lo, hi) for integer dtypes."""
    g = torch.Generator().manual_seed(seed)
    if dtype == torch.bool:
        return torch.rand(shape, generator=g) > 0.5
    if dtype.is_floating_point:
        return (torch.rand(shape, generator=g, dtype=torch.float32) * (hi - lo) + lo).to(dtype)
    return torch.randint(int(lo), int(hi), shape, generator=g, dtype=torch.int64).to(dtype)

