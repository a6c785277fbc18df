"""Tensor arguments that share memory with an argument the kernel writes.

A call reads its inputs as they were when it started: a parameter the kernel only reads whose
memory overlaps a written parameter (``kernel(x, x)``, ``kernel(a[0:5], a[1:6])``) is copied
before anything runs, so the result is the kernel's function of the inputs whatever the tile
shapes and the schedule (torch's ``out=`` semantics for an exact alias). Two written parameters
passed the very same tensor (a cache updated in place and returned as an output, as upstream's
models do) are one memory whose accesses are ordered as the program says; two written
parameters that overlap otherwise (the cache and a reshape of it) make the call run its tasks
one at a time in program order, as the memory they share would on the device. Strided written
arguments run on dense copies written back one after the other, so any overlap between them is
refused before anything runs.

The test on the hot path is one data pointer per argument; only arguments sharing a storage are
compared, by byte range, then (for strided views whose ranges interleave, ``a[:, :8]`` and
``a[:, 8:]``) element by element.
"""

from __future__ import annotations

from ..errors import ArgumentValueError


def byte_range(t) -> tuple:
    """[first byte, end) that ``t`` can touch in its storage."""
    start = t.data_ptr()
    if t.numel() == 0:
        return start, start
    last = sum((n - 1) * st for n, st in zip(t.shape, t.stride()))
    return start, start + (last + 1) * t.element_size()


def _same_view(t, u) -> bool:
    """Whether ``t`` and ``u`` are the very same view (same first element, shape, strides, dtype)."""
    return (t.data_ptr(), t.shape, t.stride(), t.dtype) == (u.data_ptr(), u.shape, u.stride(), u.dtype)


def _elements_overlap(t, u) -> bool:
    """Whether two views of one storage whose byte ranges overlap share an element."""
    if t.is_contiguous() and u.is_contiguous():
        return True  # dense ranges: overlapping ranges share bytes
    if t.element_size() != u.element_size() or t.dtype.is_complex or u.dtype.is_complex:
        return True  # different element grids: keep the conservative answer
    from .._lazy import torch

    marks = torch.zeros(t.untyped_storage().nbytes() // t.element_size(), dtype=torch.bool)
    marks.as_strided(t.shape, t.stride(), t.storage_offset()).fill_(True)
    return bool(marks.as_strided(u.shape, u.stride(), u.storage_offset()).any())


def refuse_written_overlaps(lowered, tensors: list, strided: list) -> None:
    """For a call with strided arguments (run on dense copies, `frontend.strided`): two written
    parameters passed the very same strided view share one dense copy (``tensors`` is updated in
    place), so they stay one memory; any other overlap of written arguments in the caller's
    memory is refused (their copies would be written back one over the other). ``strided`` is
    ``[(index, caller's tensor)]``."""
    callers = list(tensors)
    for i, original in strided:
        if hasattr(original, "untyped_storage"):  # a torch view (numpy copies own their memory)
            callers[i] = original
    written = lowered.written_params
    params = lowered.program.params
    copied = {i for i, _ in strided}
    for j in sorted(copied):
        for i in range(j):
            t, u = callers[i], callers[j]
            if i in copied and params[i].value.id in written and params[j].value.id in written and _same_view(t, u):
                tensors[j] = tensors[i]
                callers[j] = tensors[i]  # compared as that copy from now on
                break
    for j in range(len(callers)):
        for i in range(j):
            if (i not in copied and j not in copied) or callers[i] is callers[j] or \
                    params[i].value.id not in written or params[j].value.id not in written:
                continue  # two contiguous arguments: the executor orders them (separate_overlaps)
            t, u = callers[i], callers[j]
            if t.untyped_storage().data_ptr() != u.untyped_storage().data_ptr():
                continue
            separate_overlaps(lowered, _only(len(callers), {i: t, j: u}), allow_same=False)


def _only(n, picked: dict) -> list:
    """``n`` arguments of which only ``picked`` (index -> tensor) hold memory."""
    from .._lazy import torch

    return [picked[k] if k in picked else torch.empty(0) for k in range(n)]


def separate_overlaps(lowered, tensors: list, allow_same: bool = True):
    """``(tensors, same, serial)``: read-only arguments that overlap a written one replaced by
    copies; ``same``, pairs (value id, value id of an earlier parameter) of written parameters
    passed the very same tensor (``kernel(cache, cache)`` for an input updated in place and an
    output): their accesses are one memory's, ordered as the program says (`remap_keys`);
    ``serial``: two written arguments overlap otherwise (a cache and a reshape of it), so the call
    runs its tasks one at a time in program order. Without ``allow_same`` (dense copies of strided
    arguments, written back one after the other) any overlap of written arguments is an
    `ArgumentValueError`."""
    if len(tensors) < 2:
        return tensors, (), False
    storages = [t.untyped_storage().data_ptr() for t in tensors]
    if len(set(storages)) == len(storages):
        return tensors, (), False
    params = lowered.program.params
    written = lowered.written_params
    out, same, serial = list(tensors), [], False
    for j in range(len(tensors)):
        for i in range(j):
            if storages[i] != storages[j]:
                continue
            wi, wj = params[i].value.id in written, params[j].value.id in written
            if not (wi or wj):
                continue
            t, u = tensors[i], tensors[j]
            (a, b), (c, d) = byte_range(t), byte_range(u)
            if not (a < d and c < b) or not _elements_overlap(t, u):
                continue
            if wi and wj:
                if allow_same and _same_view(t, u):
                    if all(k != params[j].value.id for k, _ in same):
                        same.append((params[j].value.id, params[i].value.id))
                    continue
                if allow_same:  # one memory under two shapes (a cache and its reshape): program order
                    serial = True
                    continue
                raise ArgumentValueError(
                    f"tensor arguments '{params[i].name}' and '{params[j].name}' are both written by the kernel "
                    f"and share memory", expected="written arguments with memory of their own (or the very same "
                    "tensor, whose accesses are ordered as the program says)",
                    got=f"shapes {list(t.shape)} and {list(u.shape)} (strides {list(t.stride())} and "
                        f"{list(u.stride())}) over byte ranges [{a:#x}, {b:#x}) and [{c:#x}, {d:#x}) of one "
                        f"storage",
                    param=params[j].name, loc=lowered.program.loc,
                    hint="pass separate tensors and combine them after the call")
            r = j if wi else i
            if out[r] is tensors[r]:
                out[r] = tensors[r].clone()  # the values before any write
    return out, tuple(same), serial


def remap_keys(tasks, same) -> None:
    """Accesses of a parameter that is the same tensor as an earlier one use that one's region key."""
    to = dict(same)
    for t in tasks:
        t.keys = tuple([to.get(k, k) for k in t.keys])
        if t.alias is not None:  # the memory an operand lives in, and its dependency region
            t.alias = tuple(None if e is None else (to.get(e[0], e[0]), e[1], to.get(e[2], e[2]), *e[3:])
                            for e in t.alias)


def shared_memory_test(lowered):
    """``shares(tensors) -> bool`` for the cached call: does some written parameter's tensor share
    a storage with another argument's? When it does not, `separate_overlaps` changes nothing
    (``(tensors, (), False)``) and the call may skip it; None when no parameter is written. The
    test is generated for the kernel's parameters: one storage pointer per argument and one
    comparison per pair that holds a written parameter."""
    params = lowered.program.params
    written = [i for i, p in enumerate(params) if p.value.id in lowered.written_params]
    if not written or len(params) < 2:
        return None
    pairs = sorted({(min(i, j), max(i, j)) for j in written for i in range(len(params)) if i != j})
    used = sorted({k for pair in pairs for k in pair})
    lines = ["def shares(T):"]
    lines += [f"    s{k} = T[{k}].untyped_storage().data_ptr()" for k in used]
    lines.append(f"    return {' or '.join(f's{i} == s{j}' for i, j in pairs)}")
    namespace: dict = {}
    exec(compile("\n".join(lines) + "\n", "<pypto shared memory>", "exec"), namespace)  # noqa: S102
    return namespace["shares"]
