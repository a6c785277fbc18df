"""Tracing a kernel into a `Program`: parameters become graph values, the body runs per path."""

from __future__ import annotations

import types

from ..errors import KernelSyntaxError, SourceLoc
from ..ir import expr as E
from ..ir.graph import Program, TensorParam
from ..ir.guards import dedup
from .builder import PathExplorer, Tracer
from .scalar import builtin_max, builtin_min
from .tensor import Tensor


def kernel_function(fn):
    """``fn`` with builtin ``min``/``max`` routed to ``pypto.min``/``pypto.max`` for symbolic args."""
    g = dict(fn.__globals__)
    g.setdefault("min", builtin_min)
    g.setdefault("max", builtin_max)
    f = types.FunctionType(fn.__code__, g, fn.__name__, fn.__defaults__, fn.__closure__)
    f.__kwdefaults__ = fn.__kwdefaults__
    return f


def _returns(result, loc):
    if result is None:
        return ()
    items = result if isinstance(result, (tuple, list)) else (result,)
    for r in items:
        if not isinstance(r, Tensor):
            raise KernelSyntaxError("a kernel may only return tensors", expected="Tensor or a tuple of Tensors",
                                    got=type(r).__name__, loc=loc)
    return tuple(r._value for r in items)


def trace(fn, name: str, tensor_specs, tensors, dtypes, consts: dict, tiles, loop_names,
          loc: SourceLoc | None) -> tuple[Program, str | None]:
    """Trace ``fn`` for the given call; returns the program and the kind of its return value."""
    tracer = Tracer(name, loop_names)
    tracer.vec_tile, tracer.cube_tile = tiles
    with tracer:
        params = []
        symbols = []
        for spec, t, dt in zip(tensor_specs, tensors, dtypes):
            shape = []
            for i, size in enumerate(t.shape):
                ds = spec.dims[i] if spec.dims is not None and i < len(spec.dims) else None
                if ds is not None and ds.kind == "dynamic":
                    shape.append(E.Sym(ds.symbol, nonneg=True))
                    if ds.symbol not in symbols:
                        symbols.append(ds.symbol)
                else:
                    shape.append(int(size))
            value = tracer.new_value(dt, shape, kind="param", name=spec.param, loc=loc)
            params.append(TensorParam(spec.param, spec.index, value, spec.layout))
        func = kernel_function(fn)
        explorer = PathExplorer(loc)
        kinds = set()
        more = True
        while more:
            tracer.push_block(explorer)
            result = func(*[Tensor._wrap(p.value) for p in params], **consts)
            kinds.add(None if result is None else type(result).__name__ if isinstance(result, (tuple, list))
                      else "tensor")
            block = tracer.pop_block(explorer, _returns(result, loc))
            more = explorer.finish(block)
        if len(kinds) > 1:
            raise KernelSyntaxError("the kernel returns different kinds of results on different paths",
                                    got=", ".join(sorted(map(str, kinds))), loc=loc)
        program = Program(name, tuple(params), tuple(consts.items()), explorer.region(), tuple(symbols), loc,
                          dedup(tracer.size_guards))
    return program, kinds.pop()
