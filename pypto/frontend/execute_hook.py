"""The steps of a kernel call under upstream's names, and the ``_execute_kernel`` hook.

Upstream's kernel class (``JitCallableWrapper``) splits a call into steps that its test set-ups
replace on the class: ``__call__`` separates the tensor arguments from the non-tensor ones
(kept in ``self.kwargs``) and hands the tensors to ``_execute_kernel(torch_tensors,
tensor_defs)``, which compiles and runs. A set-up that only wants compilation and pass verify
patches ``_execute_kernel`` with its own function built from the other steps:

* ``_convert_tensors_with_metadata(torch_tensors, tensor_defs)``: ``pypto.from_torch`` tensors
  named after their parameters, dynamic dims marked;
* ``_set_config_option()``: the kernel's own option dicts set in the current option scope;
* ``compile(tensors, tensor_defs=None)``: the compiled version for these tensors and the
  non-tensor values of the call being made, without running it; with ``verify_options``
  ``enable_pass_verify`` on, the verify data is set up (``pypto.runtime.setup_verify_data``) and
  the stages are verified on copies of the tensors, against the goldens of
  `pypto.set_verify_golden_data` too, so the caller's tensors are left as they were.

The kernel call itself stays on its fast path while nobody replaced ``_execute_kernel``: the
class's metaclass (`ExecuteHookType`) watches that one attribute and, while it differs from the
class's own, makes ``__call__`` go through it (`call_through_hook`); putting the original back
(as ``monkeypatch`` does when a test ends) restores the direct call. So an unpatched call pays
nothing for the hook. Patch the class (as upstream's set-ups do); an attribute set on one kernel
object is not consulted.
"""

from __future__ import annotations

from ..errors import ArgumentValueError, PyptoError
from .host_tensor import from_torch, host_data

HOOK = "_execute_kernel"


class ExecuteHookType(type):
    """Metaclass of the kernel class: routes calls through ``_execute_kernel`` while it is replaced."""

    def __init__(cls, name, bases, namespace):
        super().__init__(name, bases, namespace)
        # the class's own steps, as defined: what a replaced hook is compared with
        type.__setattr__(cls, "_own_execute_kernel", cls.__dict__.get(HOOK, getattr(cls, HOOK, None)))
        type.__setattr__(cls, "_direct_call", cls.__call__)

    def __setattr__(cls, name, value):
        super().__setattr__(name, value)
        if name == HOOK:
            cls._route_calls()

    def __delattr__(cls, name):
        super().__delattr__(name)
        if name == HOOK:
            cls._route_calls()

    def _route_calls(cls) -> None:
        replaced = getattr(cls, HOOK, None) is not cls._own_execute_kernel
        type.__setattr__(cls, "__call__", call_through_hook if replaced else cls._direct_call)


def call_through_hook(self, *args, **kwargs):
    """A kernel call while ``_execute_kernel`` is replaced: the tensor arguments (in signature
    order) and their parameter specs go to the hook; the non-tensor values are in ``self.kwargs``
    for the hook's steps. Returns what the hook returns."""
    try:
        sig = self._sig or self._signature()
        try:
            tensors, consts = sig.bind(args, kwargs)
        except PyptoError as e:
            raise e.with_loc(self.loc)
        self.kwargs = consts
        return getattr(self, HOOK)(tensors, list(sig.tensors))
    except PyptoError as e:
        raise e.with_traceback(None)  # the message already points at the kernel line


class ExecutionSteps:
    """Upstream's per-call steps of a kernel (mixed into `pypto.frontend.jit.JitFunction`)."""

    kwargs = None  # the non-tensor arguments of the call being made (upstream's attribute name)

    def _execute_kernel(self, torch_tensors, tensor_defs):
        """Compile (if needed) and run on ``torch_tensors`` with the non-tensor values of the call
        being made: what a kernel call does. Returns the kernel's results."""
        _check_count(self, torch_tensors, tensor_defs)
        return type(self)._direct_call(self, *torch_tensors, **(self.kwargs or {}))

    @staticmethod
    def _convert_tensors_with_metadata(torch_tensors, tensor_defs) -> list:
        """``pypto.from_torch`` of each tensor, named after its parameter, DYNAMIC dims marked."""
        out = []
        for t, spec in zip(torch_tensors, tensor_defs):
            dynamic = [i for i, d in enumerate(spec.dims or ()) if d.kind == "dynamic"]
            out.append(from_torch(t, spec.param, dynamic_axis=dynamic or None))
        return out

    def _set_config_option(self) -> None:
        """Set this kernel's own option dicts (decorator arguments) in the current option scope."""
        from ..options import set_options

        if self.jit_options:
            set_options(**{f"{group}_options": dict(values) for group, values in self.jit_options.items()})

    def compile(self, tensors, tensor_defs=None) -> None:
        """Compile the version for ``tensors`` (``pypto.from_torch`` results or torch tensors) and the
        non-tensor values of the call being made, without running it. With pass verify on, set the
        verify data up and verify every stage on copies of the tensors (a divergence raises
        `pypto.runtime.verify.PassVerifyError`, after the verify log recorded it)."""
        from .. import runtime
        from ..runtime.verify import verify

        if tensor_defs is not None:
            _check_count(self, tensors, tensor_defs)
        torch_tensors = tuple(host_data(t) for t in tensors)
        try:
            entry, bound, env = self._lookup(torch_tensors, dict(self.kwargs or {}), count=False)[:3]
        except PyptoError as e:
            raise e.with_traceback(None)
        opts = self._resolved()
        if not opts.get("verify", "enable_pass_verify"):
            return
        runtime.setup_verify_data(list(tensors))  # looked up at call time: set-ups replace it
        compiled = entry.compiled
        copies = [t.clone() for t in bound]
        try:
            verify(compiled, copies, env, opts, lambda: compiled.executor.run(copies, env, opts))
        except PyptoError as e:
            raise e.with_traceback(None)


def _check_count(kernel, tensors, tensor_defs) -> None:
    if len(tensors) != len(tensor_defs):
        raise ArgumentValueError(f"kernel '{kernel.fn.__name__}' got {len(tensors)} tensor(s) for "
                                 f"{len(tensor_defs)} tensor definition(s)",
                                 expected=f"{len(tensor_defs)} tensors", got=str(len(tensors)),
                                 param="tensors", loc=kernel.loc)


__all__ = ["ExecuteHookType", "ExecutionSteps", "call_through_hook"]
