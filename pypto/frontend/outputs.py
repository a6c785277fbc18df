"""The parameters a kernel writes: which caller objects may receive the writes.

A kernel writes its outputs in place, so the object passed for a written parameter must accept an
in-place write under the same rules torch applies to ``out.copy_(...)``; anything else is refused
before the first write, naming the parameter:

- a numpy array that is not writeable (``flags.writeable`` False: a view of ``bytes``, a memmap
  opened ``mode="r"``, ``np.broadcast_to``): writing through it would change immutable memory or
  fault on a read-only page;
- a torch tensor that requires grad while grad mode is on: the kernel records no autograd graph,
  so the write could not be differentiated (torch refuses in-place writes to such leaf tensors
  too). Under ``torch.no_grad()`` the write is allowed, as torch allows it;
- an inference tensor (made under ``torch.inference_mode()``) outside inference mode, which torch
  refuses for every in-place update.

Parameters the kernel only reads accept all of these.
"""

from __future__ import annotations

from ..dtypes import PACKED_FP4
from ..errors import ArgumentValueError
from .._lazy import LazyModule

_torch = LazyModule("torch")


def refusal(original) -> tuple[str, str, str] | None:
    """(what is wrong, what was expected, hint) when ``original`` (the caller's tensor or numpy
    array) cannot receive the kernel's writes, else None."""
    if not isinstance(original, _torch.Tensor):
        if not original.flags.writeable:
            return ("a read-only numpy array (flags.writeable is False)",
                    "a writeable array or tensor",
                    "pass a writeable copy (np.array(x)) or a torch tensor; open a memmap with mode 'r+'")
        return None
    tensor = original
    if tensor.requires_grad and _torch.is_grad_enabled():
        return ("a tensor that requires grad, while grad mode is on",
                "a tensor that does not require grad (the kernel records no autograd graph)",
                "pass out.detach() or a new tensor, or call the kernel under torch.no_grad()")
    if tensor.is_inference() and not _torch.is_inference_mode_enabled():
        return ("an inference tensor (made under torch.inference_mode()), outside inference mode",
                "a normal tensor, or a call inside torch.inference_mode()",
                "clone it first (out.clone()), or call the kernel inside torch.inference_mode()")
    return None


def check_outputs(compiled, specs, tensors: list, originals: dict, loc) -> None:
    """Refuse, before anything runs, a written parameter whose argument cannot be written.

    ``originals`` maps a parameter index to the caller's object when the call runs on another
    object (a numpy array, a dense copy of a strided view)."""
    written = compiled.lowered.written_params
    for i, p in enumerate(compiled.program.params):
        if p.value.id not in written:
            continue
        if p.value.dtype in PACKED_FP4:  # the kernel computes on a decoded copy (pypto/frontend/fp4.py)
            name = specs[i].param
            raise ArgumentValueError(f"tensor argument '{name}' is {p.value.dtype.name} and written by the kernel",
                                     expected="a DT_FP4_E2M1 parameter the kernel only reads (this build decodes "
                                              "packed fp4 arguments and never writes them back)",
                                     got="a write into it", param=name, loc=loc)
        why = refusal(originals.get(i, tensors[i]))
        if why is not None:
            name = specs[i].param
            raise ArgumentValueError(f"tensor argument '{name}' is written by the kernel but is {why[0]}",
                                     expected=why[1], got=why[0], param=name, loc=loc, hint=why[2])
