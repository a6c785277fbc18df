"""The operators of the PyPTO language. Each module registers its ops (see registry.py)."""

from .creation import full, ones, tensor, zeros
from .elementwise import (abs, add, cast, clip, div, eq, exp, ge, gt, le, log, lt, maximum, minimum, mul, ne,
                          neg, reciprocal, relu, rsqrt, sigmoid, sqrt, sub, tanh, where)
from .matmul import matmul
from .reduce import amax, amin, softmax, sum
from .registry import REGISTRY, OpDef
from .shape import (assemble, clone, concat, expand_clone, read_element, reshape, squeeze_dims, transpose,
                    unsqueeze_dims, view)
from .sort import topk

__all__ = [
    "abs", "add", "amax", "amin", "assemble", "cast", "clip", "clone", "concat", "div", "eq", "exp",
    "expand_clone", "full", "ge", "gt", "le", "log", "lt", "matmul", "maximum", "minimum", "mul", "ne",
    "neg", "ones", "reciprocal", "relu", "reshape", "rsqrt", "sigmoid", "softmax", "sqrt", "sub", "sum",
    "tanh", "tensor", "topk", "transpose", "view", "where", "zeros", "REGISTRY", "OpDef",
]
