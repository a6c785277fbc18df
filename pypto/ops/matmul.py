"""matmul: 2-D to 4-D, with transposed operands, out_dtype and bias/scale epilogues."""

from __future__ import annotations


import math

from .._lazy import torch

from ..dtypes import DT_BF16, DT_FP8E4M3, DT_FP8E5M2, DT_FP16, DT_FP32, DT_INT8, DT_INT32, FP8_DTYPES, STORED_ONLY
from ..errors import DTypeError, KernelRuntimeError, ShapeError
from ..ir import expr as E
from ..frontend.builder import require
from .common import broadcast_shapes, check_dtype, checked_before_the_run, dtype_arg, emit, loc, same_size, tensor_arg
from .fixpipe import apply_epilogue, parse_extend_params, round_to_tf32, scale_as_applied  # noqa: F401
from .registry import register

# the cube table; DT_INT8 results (and DT_FP16 from int8) are (de)quantised on the way out (fixpipe.py)
# first entry: the default. The docs' table pairs fp32 operands with an fp32 result only, but
# upstream's frontend accepts any float result for float operands (the fp32 accumulator is
# converted on the way out of L0C, rounding once) and its own models use fp32 -> bf16.
OUT_DTYPES = {DT_FP16: (DT_FP16, DT_FP32, DT_BF16, DT_INT8), DT_BF16: (DT_BF16, DT_FP32, DT_FP16, DT_INT8),
              DT_FP32: (DT_FP32, DT_FP16, DT_BF16, DT_INT8), DT_INT8: (DT_INT32, DT_FP16, DT_INT8),
              # the 950's fp8 operands (e4m3 and e5m2 may be mixed); no default in upstream's table: fp32
              DT_FP8E4M3: (DT_FP32, DT_FP16, DT_BF16), DT_FP8E5M2: (DT_FP32, DT_FP16, DT_BF16)}


def check_fp8_machine(op: str, dt, param: str) -> None:
    """FP8 operands (and e8m0 scales) need a machine with the "fp8" feature (the Ascend 950):
    refused on A2/A3, as upstream's docs say, naming the machine and how to choose the 950."""
    from ..runtime.machine import current_machine, has_feature

    machine = current_machine()
    if dt in STORED_ONLY and not has_feature(machine, "fp8"):
        raise DTypeError(f"pypto.{op}: {dt.name} data needs the Ascend 950 (the machine simulated here, "
                         f"{machine.name}, has no fp8 cube: upstream's A2/A3)",
                         expected="pypto.set_machine('A5') (or PYPTO_MACHINE=A5), or fp16 / bf16 / fp32 / int8 "
                                  "operands", got=dt.name, param=param, loc=loc())


HALF_SUM_ORDERS = ("fp32", "torch")
# How an fp16/bf16 matmul sums (see set_half_sum_order); a one-element list, read by every leaf call
_half_sum_order = ["fp32"]


def set_half_sum_order(order: str) -> None:
    """Choose how fp16/bf16 matmuls without an epilogue add up their fp32 products.

    Both ways accumulate in fp32 and round once, as the cube does; they differ only in the order of
    the additions, which decides the rounding of the rare sums that fall next to a half-way point:

    * ``"fp32"`` (default): the operands upcast, one fp32 matmul, one rounding: fp32 speed;
    * ``"torch"``: torch's own CPU half-precision matmul (4 interleaved fp32 partial sums over K),
      so results agree bit for bit with a golden computed by torch on the CPU, at the speed of
      torch's half matmul (tens of times slower on CPUs without bf16 instructions).
      ``pypto.emulate`` picks it: there the goldens of upstream's scripts are torch CPU matmuls,
      as on the device they are the same cube's.
    """
    if order not in HALF_SUM_ORDERS:
        from ..errors import OptionError
        raise OptionError("pypto.ops.matmul.set_half_sum_order: unknown order",
                               expected=" or ".join(map(repr, HALF_SUM_ORDERS)), got=repr(order), param="order")
    _half_sum_order[0] = order


def half_sum_order() -> str:
    """The current order of `set_half_sum_order`."""
    return _half_sum_order[0]


def matmul(input, mat2, out_dtype=None, *, a_trans=False, b_trans=False, c_matrix_nz=False,
           extend_params=None):
    """``input @ mat2`` on the cube unit, accumulating in fp32 (int32 for int8).

    Operands have equal rank 2 to 4; leading (batch) dims broadcast. ``a_trans``/``b_trans``
    read an operand transposed. ``out_dtype``: float operands (fp16 / bf16 / fp32) give any float
    result (default: the operands' dtype), rounded once from the fp32 accumulator; int8 -> int32
    (default); int8 -> fp16 dequantises and any -> int8 quantises with a scale. ``extend_params`` may hold
    ``bias_tensor``, ``relu_type``, ``scale`` / ``scale_tensor`` and ``trans_mode``: see
    `pypto.ops.fixpipe`.
    """
    tensor_arg(input, "matmul", "input")
    tensor_arg(mat2, "matmul", "mat2")
    dt = check_dtype("matmul", input, "input")
    check_fp8_machine("matmul", dt, "input")
    if mat2.dtype is not dt and not (dt in FP8_DTYPES and mat2.dtype in FP8_DTYPES):
        raise DTypeError("pypto.matmul: operands have different dtypes", expected=dt.name,
                         got=mat2.dtype.name, param="mat2", loc=loc())
    out_dt = OUT_DTYPES[dt][0] if out_dtype is None else dtype_arg(out_dtype, "matmul", "out_dtype")
    if out_dt not in OUT_DTYPES[dt]:
        raise DTypeError(f"pypto.matmul: out_dtype {out_dt.name} is not available for {dt.name} operands",
                         expected=" or ".join(d.name for d in OUT_DTYPES[dt]), got=out_dt.name,
                         param="out_dtype", loc=loc())
    if c_matrix_nz:
        raise DTypeError("pypto.matmul: c_matrix_nz (NZ output format) is not supported by this build",
                         expected="c_matrix_nz=False", got="True", param="c_matrix_nz", loc=loc())
    a, b = input._value, mat2._value
    m, n, ka, kb, batch = matmul_dims("matmul", a, b, a_trans, b_trans, ("input", "mat2"))
    vm = a.valid_shape[-1] if a_trans else a.valid_shape[-2]
    vn = b.valid_shape[-2] if b_trans else b.valid_shape[-1]
    ins, attrs = [input, mat2], {"a_trans": bool(a_trans), "b_trans": bool(b_trans)}
    if (isinstance(ka, E.Expr) or isinstance(kb, E.Expr)) and ka != kb and not checked_before_the_run(ka, kb):
        attrs["k_check"] = (ka, kb)  # K through a loop index: checked by the leaf at run time
    parse_extend_params(extend_params, dt, out_dt, n, batch, ins, attrs)
    if dt in (DT_FP16, DT_BF16) and out_dt is dt and not ({"bias", "scale", "scale_tensor", "relu", "to_int8"}
                                                          & attrs.keys()):
        attrs["same_dtype"] = True  # see _matmul
    shape = (*batch, m, n)
    valid = (*batch_valid(a, b, batch), vm, vn)
    return emit("matmul", ins, [(out_dt, shape, valid)], attrs)


def batch_valid(a, b, batch) -> tuple:
    """Valid extent of each batch dim of ``a @ b``: that of the first operand spanning it (as for
    elementwise ops). The full batch size would claim the padding of a tail tile as valid."""
    out = []
    for d in range(len(batch)):
        pick = 1
        for v in (a, b):
            k = d - (len(batch) - (v.rank - 2))
            if k >= 0 and not (isinstance(v.shape[k], int) and v.shape[k] == 1):
                pick = v.valid_shape[k]
                break
        out.append(pick)
    return tuple(out)


def matmul_dims(op, a, b, a_trans, b_trans, names):
    """(M, N, K of a, K of b, batch shape) of ``a @ b``; rank, K and batch mismatches are errors."""
    if not 2 <= a.rank <= 4 or a.rank != b.rank:
        raise ShapeError(f"pypto.{op}: {names[0]} and {names[1]} must have the same rank, 2 to 4",
                         expected="equal ranks in 2..4", got=f"ranks {a.rank} and {b.rank}",
                         param=names[1], loc=loc())
    m, ka = (a.shape[-1], a.shape[-2]) if a_trans else (a.shape[-2], a.shape[-1])
    kb, n = (b.shape[-1], b.shape[-2]) if b_trans else (b.shape[-2], b.shape[-1])
    if not same_size(ka, kb, f"pypto.{op}: K of {names[0]!r} and K of {names[1]!r}", loc()):
        raise ShapeError(f"pypto.{op}: inner dims do not match",
                         expected=f"K of {names[0]} ({E.render(ka)}) == K of {names[1]}",
                         got=f"{E.render_dims(a.shape)} @ {E.render_dims(b.shape)}"
                             f" (a_trans={a_trans}, b_trans={b_trans})", param=names[1], loc=loc())
    batch = broadcast_shapes(op, [a.shape[:-2], b.shape[:-2]], list(names))
    vka = a.valid_shape[-2] if a_trans else a.valid_shape[-1]
    vkb = b.valid_shape[-1] if b_trans else b.valid_shape[-2]
    if vka != vkb and (isinstance(vka, E.Expr) or isinstance(vkb, E.Expr)):
        # views over K of different tensors: a shorter one would drop part of the sum
        require("pypto." + op).require_equal(vka, vkb, f"pypto.{op}: valid K extents of {names[0]!r} and "
                                                       f"{names[1]!r}", loc())
    return m, n, ka, kb, batch


def check_k(attrs, ev):
    """Two runtime K sizes the trace could not prove equal must agree."""
    ka, kb = ev(attrs["k_check"])
    if ka != kb:
        raise KernelRuntimeError("pypto.matmul: inner dims differ at run time",
                                 expected=f"K of input == K of mat2 ({E.render(attrs['k_check'][0])} == "
                                          f"{E.render(attrs['k_check'][1])})", got=f"{ka} and {kb}")


def check_bias(attrs, ev):
    """A bias whose N the trace could not prove equal to the result's N must agree at run time."""
    bn, n = ev(attrs["bias_check"])
    if bn != n:
        raise KernelRuntimeError("pypto.matmul: extend_params['bias_tensor'] has another N at run time",
                                 expected=f"bias N == N of mat2 ({E.render(attrs['bias_check'][0])} == "
                                          f"{E.render(attrs['bias_check'][1])})", got=f"{bn} and {n}")


def _shared_batch(x):
    """``x`` with every batch dim it only repeats (stride 0: the same matrix for each instance, e.g.
    the weights of a loop over row blocks) cut to size 1, which matmul broadcasts: upcasting it then
    converts one matrix, not one copy per instance."""
    for d in range(x.dim() - 2):
        if x.stride(d) == 0 and x.shape[d] > 1:
            x = x.narrow(d, 0, 1)
    return x


def upcast_operand(x, attrs, W, key):
    """An fp16/bf16 operand of a matmul as the fp32 matrix the product reads (`_matmul` upcasts
    anyway: exact), copied into a buffer the step keeps from its previous call (``W``, a leaf's
    kept tiles, bounded by the kernel's workspace budget) instead of a fresh one per call; a
    shared batch (stride 0) is cut first, so one matrix is converted. ``x`` itself when torch's
    own half matmul is asked for (`set_half_sum_order`), without kept tiles, or for autograd."""
    if W is None or x.requires_grad or (_half_sum_order[0] == "torch" and attrs.get("same_dtype")):
        return x
    x = _shared_batch(x)
    buf = W.get(key)
    if buf is None or buf.shape != x.shape:
        buf = W[key] = torch.empty(x.shape, dtype=torch.float32)
    return buf.copy_(x)


def _operands(ins, attrs, ev):
    """The two operands as the product reads them: shared batches cut, transposes applied, both
    cut to the valid K extent (after the run-time K and bias checks)."""
    a, b = _shared_batch(ins[0]), _shared_batch(ins[1])
    if b.dim() > 2 and a.dim() >= b.dim() and all(n == 1 for n in b.shape[:-2]):
        b = b.reshape(b.shape[-2:])  # one matrix: torch folds a's batch into M, one large GEMM
    if "k_check" in attrs:
        check_k(attrs, ev)
    if "bias_check" in attrs:
        check_bias(attrs, ev)
    if attrs["a_trans"]:
        a = a.transpose(-1, -2)
    if attrs["b_trans"]:
        b = b.transpose(-1, -2)
    k = min(a.shape[-1], b.shape[-2])
    return a.narrow(-1, 0, k), b.narrow(-2, 0, k)


def _outer_product(a, b):
    """``torch.matmul(a, b)`` when no batch dim is above 1 in both operands (every query block
    against every key block: each instance of ``a`` meets each instance of ``b``) as one GEMM,
    ``a``'s batch folded into M and ``b``'s into N, returned as a view in the broadcast result's
    layout (torch's broadcast matmul expands both and runs one small GEMM per pair). None when
    the batches are not of that form."""
    parts = _outer_operands(a, b)
    if parts is None:
        return None
    lhs, rhs, place = parts
    return place(torch.matmul(lhs, rhs))


def _outer_operands(a, b):
    """(lhs, rhs, place) of `_outer_product`: the one GEMM's operands and the function viewing its
    [M, N] result in the broadcast result's layout; None when the batches are not of that form."""
    nd = max(a.dim(), b.dim())
    if nd <= 2:
        return None
    sha = (1,) * (nd - a.dim()) + tuple(a.shape)
    shb = (1,) * (nd - b.dim()) + tuple(b.shape)
    da = [d for d in range(nd - 2) if sha[d] > 1]
    db = [d for d in range(nd - 2) if shb[d] > 1]
    if not da or not db or set(da) & set(db):
        return None
    a, b = a.reshape(sha), b.reshape(shb)
    m, k, n = a.shape[-2], a.shape[-1], b.shape[-1]
    sa, sb = [a.shape[d] for d in da], [b.shape[d] for d in db]
    lhs = a.reshape(math.prod(sa) * m, k)
    rhs = b.reshape(math.prod(sb), k, n).permute(1, 0, 2).reshape(k, math.prod(sb) * n)
    ones = [d for d in range(nd - 2) if a.shape[d] == 1 and b.shape[d] == 1]

    def place(r):
        r = r.view(*sa, m, *sb, n)
        # r: a's batch dims, m, b's batch dims, n -> every batch dim in its place, then m, n
        pos = {d: i for i, d in enumerate(da)}
        pos.update({d: len(da) + 1 + i for i, d in enumerate(db)})
        r = r.permute([pos[d] for d in sorted(pos)] + [len(da), len(da) + 1 + len(db)])
        for d in ones:  # the batch dims neither operand has above 1, back in place
            r = r.unsqueeze(d)
        return r
    return lhs, rhs, place


def _product(a, b):
    """``torch.matmul(a, b)``, an outer product of batches as one GEMM (`_outer_product`)."""
    r = _outer_product(a, b)
    return torch.matmul(a, b) if r is None else r


_EPILOGUE = ("tf32", "bias", "scale", "scale_tensor")  # and relu, to_int8 when set


def _is_float(dtype) -> bool:
    """fp32, fp16 or bf16 (torch is imported lazily: no module-level tuple of its dtypes)."""
    return dtype is torch.float32 or dtype is torch.float16 or dtype is torch.bfloat16


def _matmul_into(ins, attrs, ev, dst):
    """A product without epilogue written into ``dst`` (an output's view of its GM tensor; the same
    numbers as computing it apart) when ``dst`` has the product's shape; None otherwise (the caller
    computes it the usual way). fp16/bf16 operands are upcast and multiplied in fp32, as `_matmul`
    does; an fp16/bf16 ``dst`` takes the fp32 product rounded once by the copy into it (the same
    rounding as ``.to``, without the rounded temporary and its second copy)."""
    if not _is_float(dst.dtype) or any(k in attrs for k in _EPILOGUE) or attrs.get("relu") \
            or attrs.get("to_int8"):
        return None
    if not _is_float(ins[0].dtype) or not _is_float(ins[1].dtype):
        return None
    if (_half_sum_order[0] == "torch" and attrs.get("same_dtype") and ins[0].dtype == ins[1].dtype
            and ins[0].dtype is not torch.float32):
        return None  # torch's own half matmul: `_matmul` computes it
    a, b = _operands(ins, attrs, ev)
    a = a if a.dtype is torch.float32 else a.float()
    b = b if b.dtype is torch.float32 else b.float()
    ba, bb = tuple(a.shape[:-2]), tuple(b.shape[:-2])
    n = max(len(ba), len(bb))
    ba, bb = (1,) * (n - len(ba)) + ba, (1,) * (n - len(bb)) + bb
    if any(x != y and x != 1 and y != 1 for x, y in zip(ba, bb)):
        return None  # (the usual compute reports it)
    shape = tuple(y if x == 1 else x for x, y in zip(ba, bb)) + (a.shape[-2], b.shape[-1])
    if tuple(dst.shape) != shape:
        return None
    if dst.dtype is not torch.float32:
        return dst.copy_(_product(a, b))
    if b.dim() == 2 and a.dim() > 2 and dst.is_contiguous() and a.is_contiguous():
        # one matrix for every instance: the GEMM torch's matmul folds the batch into (M rows of
        # all instances, one product), computed straight into the output viewed the same way
        torch.matmul(a.reshape(-1, a.shape[-1]), b, out=dst.view(-1, dst.shape[-1]))
        return dst
    if ba != bb:  # (torch's matmul into an output is slower than computing apart for broadcast batches)
        return dst.copy_(_product(a, b))
    if not dst.is_contiguous():  # (torch's matmul out= folds batches by viewing the output)
        return dst.copy_(torch.matmul(a, b))
    return torch.matmul(a, b, out=dst)


def _recipe(view, source):
    """(size, stride, offset from ``source``'s) of ``view`` when it views ``source``'s memory (None
    when deriving it copied): what rebuilds it from ``source`` with one ``as_strided``."""
    if view.untyped_storage().data_ptr() != source.untyped_storage().data_ptr():
        return None
    return tuple(view.shape), tuple(view.stride()), view.storage_offset() - source.storage_offset()


def _rebuild(x, recipe):
    size, stride, off = recipe
    return x.as_strided(size, stride, x.storage_offset() + off)


def _prepare_matmul_into(ins, attrs, ev, dst):
    """`_matmul_into` for the next calls of one plan step, whose operand views keep their shapes
    and strides: a runner ``run(ins, dst)`` that makes the product's operands (and the view of its
    result) with one ``as_strided`` each and runs the same torch calls as `_matmul_into` (the same
    numbers), or answers None when the views are not the ones it was made for. None when the
    product is not fp32 throughout or its form depends on the run (K and bias checks)."""
    if len(ins) != 2 or not (ins[0].dtype is torch.float32 and ins[1].dtype is torch.float32
                             and dst.dtype is torch.float32):
        return None
    if any(k in attrs for k in _EPILOGUE) or attrs.get("relu") or attrs.get("to_int8") \
            or "k_check" in attrs or "bias_check" in attrs:
        return None
    x0, x1 = ins
    if x0.numel() == 0 or x1.numel() == 0 or dst.numel() == 0:  # (no memory to tell views from copies)
        return None
    a, b = _operands(ins, attrs, ev)
    ba, bb = tuple(a.shape[:-2]), tuple(b.shape[:-2])
    n = max(len(ba), len(bb))
    ba, bb = (1,) * (n - len(ba)) + ba, (1,) * (n - len(bb)) + bb
    if any(x != y and x != 1 and y != 1 for x, y in zip(ba, bb)):
        return None
    if tuple(dst.shape) != tuple(y if x == 1 else x for x, y in zip(ba, bb)) + (a.shape[-2], b.shape[-1]):
        return None
    guard = (tuple(x0.shape), x0.stride(), tuple(x1.shape), x1.stride(), tuple(dst.shape), dst.stride())
    placed = None
    if b.dim() == 2 and a.dim() > 2 and dst.is_contiguous() and a.is_contiguous():
        form, a, d = "out", a.reshape(-1, a.shape[-1]), dst.view(-1, dst.shape[-1])
    elif ba != bb:
        parts = _outer_operands(a, b)
        form, d = "copy", None
        if parts is not None:
            a, b, place = parts
            # the [M, N] product is a fresh contiguous tensor: its view in the result's layout
            stand_in = torch.empty((a.shape[0], b.shape[1]))
            placed = _recipe(place(stand_in), stand_in)
    elif not dst.is_contiguous():
        form, d = "copy", None
    else:
        form, d = "out", dst
    ra, rb = _recipe(a, x0), _recipe(b, x1)
    rd = _recipe(d, dst) if d is not None else None
    if ra is None or rb is None or (d is not None and rd is None):
        return None

    def run(ins, dst):
        x0, x1 = ins
        if (tuple(x0.shape), x0.stride(), tuple(x1.shape), x1.stride(), tuple(dst.shape), dst.stride()) != guard:
            return None
        a, b = _rebuild(x0, ra), _rebuild(x1, rb)
        if form == "out":
            torch.matmul(a, b, out=_rebuild(dst, rd))
            return dst
        r = torch.matmul(a, b)
        return dst.copy_(_rebuild(r, placed) if placed is not None else r)
    return run


@register("matmul", kind="cube", dtypes=(DT_FP16, DT_BF16, DT_FP32, DT_INT8, DT_FP8E4M3, DT_FP8E5M2),
          into=_matmul_into)
def _matmul(ins, attrs, ev):
    """Matrix product with fp32 (int32) accumulation over the valid K extent."""
    a, b = _operands(ins, attrs, ev)
    if a.dtype == torch.int8:
        out = torch.matmul(a.to(torch.int32), b.to(torch.int32))
    elif "tf32" in attrs:
        out = torch.matmul(round_to_tf32(a.float(), attrs["tf32"]), round_to_tf32(b.float(), attrs["tf32"]))
    elif (_half_sum_order[0] == "torch" and attrs.get("same_dtype") and a.dtype == b.dtype
          and a.dtype in (torch.float16, torch.bfloat16)):
        return torch.matmul(a, b)
    else:  # fp32 accumulation; the leaf rounds once to the declared dtype
        out = _product(a.float(), b.float())
    return apply_epilogue(out, ins, attrs)


_matmul_into.prepare = _prepare_matmul_into  # (codegen `_into_shaped` keeps its runner per step)
