"""The annotation grammar of kernel signatures (pypto/frontend/signature.py) and how a call binds.

DYNAMIC/DYN (size changes never recompile), STATIC (a new size compiles a new version), int (only
that size), ``...`` last (the remaining dims are static; rank >= the number of listed dims),
``pypto.Tensor()`` / ``pypto.Tensor[...]`` (any rank, dtype from the call), the bracket form and
``pypto.frontend.dynamic("N")`` shared between tensors; ``x.shape`` inside a kernel.
"""

import pytest
import torch

import pypto
from pypto.errors import AnnotationError, ArgumentTypeError, ArgumentValueError
from pypto.frontend.signature import DimSpec, Signature, TensorAnnotation, parse_annotation
from pypto.frontend.scalar import SymbolicScalar

F32, F16 = pypto.DT_FP32, pypto.DT_FP16


class Seen:
    """Collects values during tracing. Not a list: a captured list is part of the cache key (its
    contents are compile-time values), so appending to one would force a recompile per call."""

    def __init__(self):
        self.items = []

    def append(self, item):
        self.items.append(item)

    def __len__(self):
        return len(self.items)

    def __getitem__(self, i):
        return self.items[i]


def spec_of(ann, name="x"):
    return parse_annotation(ann, name, 0, None)


def make_kernel(ann, seen=None, out_ann=None):
    """A kernel ``out[:] = x + 1`` with annotations ``ann`` (and ``out_ann``, default ``ann``)."""

    def body(x, out):
        if seen is not None:
            seen.append((list(x.shape), list(out.shape)))
        out[:] = x + 1

    body.__annotations__ = {"x": ann, "out": out_ann if out_ann is not None else ann}
    return pypto.jit(body)


def run(kernel, *shape, dtype=torch.float32):
    x = torch.randn(*shape).to(dtype)
    out = torch.zeros(*shape, dtype=dtype)
    kernel(x, out)
    torch.testing.assert_close(out, x + 1)
    return kernel.last_run.cache_hit


# ---- markers -----------------------------------------------------------------------------------

def test_dyn_is_dynamic():
    assert pypto.DYN is pypto.DYNAMIC
    assert pypto.DYNAMIC is not pypto.STATIC
    a = spec_of(pypto.Tensor([pypto.DYN, 32], F32))
    b = spec_of(pypto.Tensor([pypto.DYNAMIC, 32], F32))
    assert a == b
    assert a.dims == (DimSpec("dynamic", symbol="x.shape[0]"), DimSpec("fixed", 32))


@pytest.mark.parametrize("marker", [pypto.DYNAMIC, pypto.DYN], ids=["DYNAMIC", "DYN"])
def test_dynamic_dim_never_recompiles(marker):
    k = make_kernel(pypto.Tensor([marker, 32], F32))
    assert run(k, 8, 32) is False
    assert run(k, 5, 32) is True
    assert run(k, 64, 32) is True
    info = k.cache_info()
    assert (info.misses, info.hits, len(info.entries)) == (1, 2, 1)


def test_static_dim_compiles_per_size_and_keeps_versions():
    k = make_kernel(pypto.Tensor([pypto.STATIC, 32], F32))
    assert spec_of(pypto.Tensor([pypto.STATIC, 32], F32)).dims[0] == DimSpec("static")
    assert run(k, 8, 32) is False
    assert run(k, 8, 32) is True
    assert run(k, 16, 32) is False  # a new size: a new version
    assert run(k, 8, 32) is True  # A -> B -> A reuses A
    info = k.cache_info()
    assert (info.misses, info.hits, len(info.entries)) == (2, 2, 2)


def test_int_dim_accepts_only_that_size():
    k = make_kernel(pypto.Tensor([8, 32], F32))
    assert spec_of(pypto.Tensor([8, 32], F32)).dims == (DimSpec("fixed", 8), DimSpec("fixed", 32))
    run(k, 8, 32)
    for bad in [(9, 32), (8, 31)]:
        with pytest.raises(ArgumentValueError, match="fixed"):
            run(k, *bad)
    with pytest.raises(ArgumentValueError, match="rank"):
        run(k, 8, 32, 1)  # without '...' the rank is exact


def test_negative_int_dim_is_an_annotation_error():
    with pytest.raises(AnnotationError, match="negative"):
        spec_of(pypto.Tensor([-1, 32], F32))


def test_ellipsis_last_rest_static_and_min_rank():
    ann = pypto.Tensor([pypto.DYNAMIC, ...], F32)
    s = spec_of(ann)
    assert s.rest_static and s.dims == (DimSpec("dynamic", symbol="x.shape[0]"),)
    seen = Seen()
    k = make_kernel(ann, seen)
    assert run(k, 4, 32) is False
    assert run(k, 7, 32) is True  # dim 0 is dynamic
    assert run(k, 7, 16) is False  # dim 1 is static (from '...'): a new version
    assert run(k, 7, 16, 2) is False  # rank 3 also matches
    assert run(k, 3) is False  # '...' may match no dim at all
    assert isinstance(seen[-2][0][0], SymbolicScalar) and seen[-2][0][1:] == [16, 2]
    with pytest.raises(ArgumentValueError, match="rank 2 or more") as ei:
        run(make_kernel(pypto.Tensor([pypto.DYNAMIC, 32, ...], F32)), 8)
    assert "got" in str(ei.value) and "[8]" in str(ei.value)


def test_marker_list_takes_higher_ranks_as_upstream():
    # STATIC / DYNAMIC markers (with or without sizes) constrain the leading dims; further dims
    # are static, as if the list ended in '...' (upstream's kernels pass a [1, 1, D] gamma to a
    # [STATIC, STATIC] parameter)
    for ann in (pypto.Tensor([pypto.STATIC, pypto.STATIC], F32), pypto.Tensor([pypto.DYNAMIC, 32], F32)):
        assert spec_of(ann).rest_static
    seen = Seen()
    k = make_kernel(pypto.Tensor([pypto.DYNAMIC, pypto.STATIC], F32), seen)
    assert run(k, 4, 8) is False
    assert run(k, 6, 8, 3) is False  # rank 3: a version of its own
    assert run(k, 9, 8, 3) is True  # dim 0 is still dynamic
    assert run(k, 9, 8, 5) is False  # the extra dim is static
    assert seen[-1][0][1:] == [8, 5] and isinstance(seen[-1][0][0], SymbolicScalar)
    with pytest.raises(ArgumentValueError, match="rank 2 or more"):
        run(k, 8)


@pytest.mark.parametrize("ann", [pypto.Tensor([8, 32], F32), pypto.Tensor([pypto.frontend.dynamic("N"), 32], F32)],
                         ids=["sizes", "named-dynamic"])
def test_sizes_or_named_dims_fix_the_rank(ann):
    assert not spec_of(ann).rest_static
    with pytest.raises(ArgumentValueError, match="rank 3"):
        run(make_kernel(ann), 8, 32, 1)


def test_ellipsis_must_be_last():
    with pytest.raises(AnnotationError, match="last"):
        spec_of(pypto.Tensor([..., 32], F32))


@pytest.mark.parametrize("ann", [pypto.Tensor(), pypto.Tensor[...], pypto.Tensor([]), pypto.Tensor(None)],
                         ids=["Tensor()", "Tensor[...]", "Tensor([])", "Tensor(None)"])
def test_unconstrained_any_rank_dtype_from_call(ann):
    s = spec_of(ann)
    assert s.dims is None and s.dtype is None
    seen = Seen()
    k = make_kernel(ann, seen)
    assert run(k, 8, 32) is False
    assert run(k, 4, 2, 16, dtype=torch.float16) is False
    assert run(k, 5, dtype=torch.int32) is False
    assert run(k, 8, 32) is True
    assert seen[0] == ([8, 32], [8, 32]) and seen[1][0] == [4, 2, 16]  # all dims static (ints)
    dtypes = [e.compiled.program.params[0].value.dtype for e in k.cache_info().entries]
    assert dtypes == [F32, F16, pypto.DT_INT32]


def test_bracket_form_with_dims_and_dtype():
    ann = pypto.Tensor[[pypto.DYNAMIC, 32], pypto.DT_FP16]
    assert isinstance(ann, TensorAnnotation)
    s = spec_of(ann)
    assert s.dtype is F16 and s.dims[0].kind == "dynamic" and s.dims[1] == DimSpec("fixed", 32)
    assert s == spec_of(pypto.Tensor([pypto.DYNAMIC, 32], pypto.DT_FP16))
    k = make_kernel(ann)
    assert run(k, 8, 32, dtype=torch.float16) is False
    assert run(k, 3, 32, dtype=torch.float16) is True
    with pytest.raises(ArgumentTypeError, match="DT_FP16"):
        run(k, 8, 32)  # fp32 does not match the annotated fp16


def test_bracket_form_dims_only_takes_dtype_from_call():
    s = spec_of(pypto.Tensor[[pypto.DYNAMIC, 32]])
    assert s.dtype is None and len(s.dims) == 2
    k = make_kernel(pypto.Tensor[[pypto.DYNAMIC, 32]])
    run(k, 8, 32)
    run(k, 8, 32, dtype=torch.float16)


def test_bracket_form_rejects_garbage():
    with pytest.raises(AnnotationError, match=r"pypto.Tensor\[") as ei:
        pypto.Tensor["x"]
    assert "expected" in str(ei.value) and "got" in str(ei.value)


def test_non_dtype_in_annotation():
    with pytest.raises(AnnotationError, match="not a pypto dtype") as ei:
        spec_of(pypto.Tensor([8], torch.float32))
    assert ei.value.param == "x" and "torch.float32" in str(ei.value)


# ---- named dynamic dims ------------------------------------------------------------------------

def test_named_dynamic_dim_shared_by_two_tensors():
    n = pypto.frontend.dynamic("N")
    assert n == pypto.frontend.dynamic("N")
    ann = pypto.Tensor([n, 32], F32)
    assert spec_of(ann).dims[0] == DimSpec("dynamic", symbol="N")
    seen = Seen()
    k = make_kernel(ann, seen)
    assert run(k, 8, 32) is False
    assert run(k, 12, 32) is True  # dynamic: no recompile
    xs, outs = seen[0]
    assert isinstance(xs[0], SymbolicScalar) and str(xs[0]) == "N"
    assert xs[0].expr == outs[0].expr  # one symbol for both tensors
    with pytest.raises(ArgumentValueError, match="'N'"):
        k(torch.randn(8, 32), torch.randn(9, 32))


def test_named_dynamic_dim_needs_an_identifier():
    for bad in ["1N", "", 3]:
        with pytest.raises(AnnotationError):
            pypto.frontend.dynamic(bad)


def test_symbolic_scalar_as_a_dim_is_dynamic():
    s = spec_of(pypto.Tensor([SymbolicScalar("M"), 4], F32))
    assert s.dims == (DimSpec("dynamic", symbol="M"), DimSpec("fixed", 4))


# ---- x.shape inside a kernel -------------------------------------------------------------------

def test_shape_gives_ints_for_static_and_symbols_for_dynamic():
    seen = Seen()

    @pypto.jit
    def k(x: pypto.Tensor([pypto.DYNAMIC, pypto.STATIC, 4], F32), y: pypto.Tensor([pypto.frontend.dynamic("B"), ...], F32)):
        seen.append((list(x.shape), list(y.shape), x.dim, y.dim))

    k(torch.randn(3, 5, 4), torch.randn(6, 7, 2))
    (xs, ys, xd, yd), = seen
    assert isinstance(xs[0], SymbolicScalar) and str(xs[0]) == "RUNTIME_GetInputShapeDim(ARG_x,0)"
    assert xs[1:] == [5, 4] and all(type(d) is int for d in xs[1:])
    assert isinstance(ys[0], SymbolicScalar) and str(ys[0]) == "B"
    assert ys[1:] == [7, 2] and all(type(d) is int for d in ys[1:])
    assert (xd, yd) == (3, 3)
    k(torch.randn(9, 5, 4), torch.randn(1, 7, 2))
    assert len(seen) == 1  # only dynamic sizes changed: no new trace


# ---- parameters --------------------------------------------------------------------------------

def test_tensor_params_first_then_constants_with_defaults():
    def body(x: pypto.Tensor([8], F32), out: pypto.Tensor([8], F32), a=1, b=2):
        pass

    sig = Signature(body, None)
    assert [t.param for t in sig.tensors] == ["x", "out"]
    assert [(c.param, c.default) for c in sig.consts] == [("a", 1), ("b", 2)]
    x, out = torch.zeros(8), torch.zeros(8)
    tensors, consts = sig.bind((x, out, 5), {"b": 7})
    assert tensors[0] is x and tensors[1] is out and consts == {"a": 5, "b": 7}
    tensors, consts = sig.bind((x,), {"out": out})
    assert tensors[1] is out and consts == {"a": 1, "b": 2}
    with pytest.raises(ArgumentValueError, match="'a' given twice"):
        sig.bind((x, out, 5), {"a": 6})


def test_varargs_are_rejected():
    def body(x: pypto.Tensor([8], F32), *rest):
        pass

    with pytest.raises(pypto.errors.UnsupportedSignatureError, match=r"\*args"):  # a NotImplementedError
        Signature(body, None)


def test_constants_are_part_of_the_cache_key():
    seen = Seen()

    @pypto.jit
    def k(x: pypto.Tensor([pypto.DYNAMIC], F32), out: pypto.Tensor([pypto.DYNAMIC], F32), add=1.0):
        seen.append(add)
        out[:] = x + add

    x, out = torch.randn(8), torch.zeros(8)
    k(x, out)
    k(x, out, 2.0)
    torch.testing.assert_close(out, x + 2.0)
    k(x, out, add=2.0)
    assert seen.items == [1.0, 2.0]
    assert k.cache_info().misses == 2 and k.cache_info().hits == 1


def test_numpy_arrays_are_accepted():
    np = pytest.importorskip("numpy")
    k = make_kernel(pypto.Tensor([pypto.DYNAMIC, 4], F32))
    x = np.arange(8, dtype=np.float32).reshape(2, 4)
    out = np.zeros((2, 4), dtype=np.float32)
    k(x, out)
    assert (out == x + 1).all()  # written in place through the shared buffer
