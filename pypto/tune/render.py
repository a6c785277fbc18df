"""Using a configuration: `render` writes it as the decorator, signature and tile calls to paste
into the kernel's source; `apply` returns a kernel compiled with it."""

from __future__ import annotations

import ast
import inspect
import textwrap
import types

from .space import split

_TILE_CALLS = ("set_vec_tile_shapes", "set_cube_tile_shapes", "set_conv_tile_shapes")


def _config_of(best) -> dict:
    return dict(getattr(best, "config", best))


def render(kernel, best) -> str:
    """``best`` (a `TrialRecord` or a configuration dict) as source text: the ``@pypto.jit(...)``
    decorator with its runtime and pass options, the ``def`` line with the tuned parameter values
    as defaults, and each tile-shape call of the body with those values substituted."""
    config = _config_of(best)
    params, runtime, passes = split(config)
    fn = getattr(kernel, "fn", kernel)
    groups = {k: v for k, v in _tuned_options(kernel, runtime, passes).items() if v}
    deco = "@pypto.jit" + ("(" + ", ".join(f"{k}={_literal(v)}" for k, v in groups.items()) + ")" if groups else "")
    try:
        tree = ast.parse(textwrap.dedent(inspect.getsource(fn)))
        func = next(n for n in ast.walk(tree) if isinstance(n, ast.FunctionDef) and n.name == fn.__name__)
    except (OSError, TypeError, StopIteration, SyntaxError):
        return deco + f"\ndef {fn.__name__}(...)  # tuned: " + ", ".join(f"{k}={v!r}" for k, v in params.items())
    args = func.args
    positional = args.posonlyargs + args.args
    parts = []
    for a in positional:
        text = a.arg + (f": {ast.unparse(a.annotation)}" if a.annotation is not None else "")
        default = inspect.signature(fn).parameters[a.arg].default
        value = repr(params[a.arg]) if a.arg in params else (
            repr(default) if default is not inspect.Parameter.empty else None)
        parts.append(text + (f" = {value}" if value is not None and a.annotation is not None
                             else f"={value}" if value is not None else ""))
    lines = [deco, f"def {fn.__name__}(" + ",\n        ".join(parts) + "):"]
    calls = [n for n in ast.walk(func) if isinstance(n, ast.Call) and _called_name(n) in _TILE_CALLS]
    for node in sorted(calls, key=lambda n: (n.lineno, n.col_offset)):  # in source order
        lines.append("    " + ast.unparse(_Substitute(params).visit(node)))
    return "\n".join(lines)


def apply(kernel, best):
    """A new ``pypto.jit`` kernel: ``kernel``'s function with the tuned parameters as its defaults
    and the configuration's runtime and pass options in its jit options (``best``: a `TrialRecord`
    or a configuration dict). Call it like the original; it compiles on its first call."""
    import pypto

    from ..errors import OptionError

    config = _config_of(best)
    params, runtime, passes = split(config)
    fn = getattr(kernel, "fn", kernel)
    sig = inspect.signature(fn)
    unknown = sorted(set(params) - set(sig.parameters))
    if unknown:
        raise OptionError(f"kernel '{fn.__name__}' has no parameter {', '.join(map(repr, unknown))}",
                          param="best", expected=f"parameters of {fn.__name__}: {', '.join(sig.parameters)}",
                          got=", ".join(unknown))
    positional = [p for p in sig.parameters.values() if p.kind in (p.POSITIONAL_ONLY, p.POSITIONAL_OR_KEYWORD)]
    values = [params.get(p.name, p.default) for p in positional]
    first = next((i for i, v in enumerate(values) if v is not inspect.Parameter.empty), len(values))
    if any(v is inspect.Parameter.empty for v in values[first:]):
        late = next(p.name for p, v in zip(positional[first:], values[first:]) if v is inspect.Parameter.empty)
        raise OptionError(f"cannot give tuned parameter '{positional[first].name}' a default: '{late}' "
                          "after it has none", param="best", expected="tuned parameters after the "
                          "parameters without defaults", got=str(sig))
    new = types.FunctionType(fn.__code__, fn.__globals__, fn.__name__, tuple(values[first:]) or None,
                             fn.__closure__)
    keyword_only = {p.name for p in sig.parameters.values() if p.kind is p.KEYWORD_ONLY}
    new.__kwdefaults__ = {**(fn.__kwdefaults__ or {}),
                          **{k: v for k, v in params.items() if k in keyword_only}} or None
    new.__annotations__ = dict(fn.__annotations__)
    new.__qualname__, new.__module__, new.__doc__ = fn.__qualname__, fn.__module__, fn.__doc__
    return pypto.jit(new, **_tuned_options(kernel, runtime, passes))


def jit_keywords(kernel) -> dict:
    """``kernel``'s own jit options as ``pypto.jit`` keywords (``{"runtime_options": {...}}``)."""
    return {f"{g}_options": dict(v) for g, v in getattr(kernel, "jit_options", {}).items()}


def _tuned_options(kernel, runtime: dict, passes: dict) -> dict:
    options = jit_keywords(kernel)
    for key, values in (("runtime_options", runtime), ("pass_options", passes)):
        if values:
            options[key] = {**options.get(key, {}), **values}
    return options


def _called_name(call: ast.Call) -> str:
    f = call.func
    return f.attr if isinstance(f, ast.Attribute) else f.id if isinstance(f, ast.Name) else ""


class _Substitute(ast.NodeTransformer):
    def __init__(self, values: dict):
        self.values = values

    def visit_Name(self, node):
        if node.id in self.values:
            return ast.copy_location(ast.Constant(self.values[node.id]), node)
        return node


def _literal(d: dict) -> str:
    return "{" + ", ".join(f"{k!r}: {v!r}" for k, v in d.items()) + "}"
