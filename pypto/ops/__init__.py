"""The operators of the PyPTO language. Each module registers its ops (see registry.py)."""

from .activation import expand_exp_dif, lrelu, prelu, rms_norm
from .bitwise import (bitwise_and, bitwise_left_shift, bitwise_not, bitwise_or, bitwise_right_shift, bitwise_xor,
                      isfinite, isnan, logical_and, logical_not)
from .creation import full, ones, tensor, zeros
from .elementwise import (abs, add, cast, clip, div, eq, exp, ge, greater, gt, le, log, lt, maximum, minimum, mul, ne,
                          neg, reciprocal, relu, rsqrt, sigmoid, sqrt, sub, tanh, where)
from .matmul import matmul
from .cube import conv, scaled_mm
from .pack import pack, unpack
from .math import (acos, acosh, asin, asinh, atan, atan2, atanh, axpy_, cbrt, ceil, ceil_div, copysign, cos, cosh,
                   erf, erfc,
                   exp2, expm1, floor, floor_div, fmod, gcd, hypot, log1p, log2, log10, pow, remainder, round, sign,
                   signbit, sin, sinh, tan, trunc)
from .reduce import amax, amin, softmax, sum
from .registry import REGISTRY, OpDef
from .scan import argmax, argmin, argsort, cumprod, cumsum, prod, var
from .shape import (assemble, clone, concat, expand, expand_clone, read_element, reshape, squeeze_dims, transpose,
                    unsqueeze_dims, view)
from .sort import topk
from .indexing import (gather, index_add, index_add_, index_select, one_hot, scatter, scatter_, scatter_update)
from .layout import deinterleave, interleave, pad, permute, tril, tril_, triu, triu_, unsqueeze
from .quant import dequantize, quantize
from .random import arange, normal, uniform

__all__ = [
    "abs", "add", "amax", "amin", "assemble", "cast", "clip", "clone", "concat", "div", "eq", "exp",
    "expand", "expand_clone", "full", "ge", "greater", "gt", "le", "log", "lt", "matmul", "maximum", "minimum", "mul", "ne",
    "neg", "ones", "reciprocal", "relu", "reshape", "rsqrt", "sigmoid", "softmax", "sqrt", "sub", "sum",
    "tanh", "tensor", "topk", "transpose", "view", "where", "zeros", "REGISTRY", "OpDef",
]

__all__ += [  # math.py and bitwise.py
    "acos", "acosh", "asin", "asinh", "atan", "atan2", "atanh", "axpy_", "cbrt", "ceil", "ceil_div", "copysign", "cos",
    "cosh",
    "erf", "erfc", "exp2", "expm1", "floor", "floor_div", "fmod", "gcd", "hypot", "log1p", "log2", "log10", "pow",
    "remainder", "round", "sign", "signbit", "sin", "sinh", "tan", "trunc",
    "bitwise_and", "bitwise_left_shift", "bitwise_not", "bitwise_or", "bitwise_right_shift", "bitwise_xor",
    "isfinite", "isnan", "logical_and", "logical_not",
]

__all__ += [  # activation.py and scan.py (online_softmax* live in pypto.experimental)
    "expand_exp_dif", "lrelu", "prelu", "rms_norm",
    "argmax", "argmin", "argsort", "cumprod", "cumsum", "prod", "var",
]

__all__ += [  # issue 6: indexing.py, layout.py, random.py, quant.py
    "gather", "index_add", "index_add_", "index_select", "one_hot", "scatter", "scatter_", "scatter_update",
    "deinterleave", "interleave", "pad", "permute", "tril", "tril_", "triu", "triu_", "unsqueeze",
    "dequantize", "quantize", "arange", "normal", "uniform",
]

__all__ += ["conv", "scaled_mm", "pack", "unpack"]  # cube.py, pack.py (experimental: transposed_batchmatmul)

from .more_indexing import (atomic_add, fillpad, gathermask, index_add__ub, index_add_ub,  # noqa: E402
                           index_put_)

__all__ += ["atomic_add", "fillpad", "gathermask", "index_add__ub", "index_add_ub", "index_put_"]  # more_indexing.py


def _wrap_public_ops(namespace: dict, names, where: str = "pypto") -> None:
    """Every public op reports a call that does not fit its signature as a PyptoError (arguments.py)."""
    import inspect

    from .arguments import public_op

    for name in names:
        fn = namespace[name]
        if inspect.isfunction(fn) and not hasattr(fn, "__pypto_op__"):
            namespace[name] = public_op(fn, where)


_wrap_public_ops(globals(), __all__)


def _wrap_tensor_methods() -> None:
    """The ops' method spellings (``x.view(...)``, ``x.sum(...)``) report bad calls the same way."""
    import inspect

    from ..frontend.tensor import Tensor
    from .arguments import public_op

    for name, fn in list(vars(Tensor).items()):
        if not name.startswith("_") and inspect.isfunction(fn) and not hasattr(fn, "__pypto_op__"):
            setattr(Tensor, name, public_op(fn, "Tensor"))


_wrap_tensor_methods()
