"""What a sweep's results depend on, as a key: the kernel (its name and a hash of its source),
the call shapes and dtypes, the space (candidates and constraints) and the machine model (its
calibrated figures). Two sweeps with the same key may share stored trials; any other pair may not.
"""

from __future__ import annotations

import dataclasses
import hashlib
import inspect
import json


def kernel_identity(kernel) -> dict:
    """``{"name": ..., "source": <sha1 of the function's source>}``: an edited kernel is another
    kernel (its stored trials were measured on other code)."""
    fn = getattr(kernel, "fn", kernel)
    try:
        text = inspect.getsource(fn)
    except (OSError, TypeError):  # no source (e.g. built with exec and no linecache entry)
        code = getattr(fn, "__code__", None)
        text = repr((code.co_code, code.co_consts)) if code is not None else repr(fn)
    return {"name": getattr(fn, "__name__", str(fn)), "source": hashlib.sha1(text.encode()).hexdigest()[:16]}


def machine_identity(machine=None) -> str:
    """A short hash of the machine model's figures: a recalibrated model is another machine."""
    from ..runtime.machine import current_machine

    m = machine or current_machine()
    fields = {f.name: getattr(m, f.name) for f in dataclasses.fields(m)}
    text = json.dumps(fields, sort_keys=True, default=repr)
    return f"{getattr(m, 'name', 'machine')}:{hashlib.sha1(text.encode()).hexdigest()[:12]}"


def sweep_key(kernel, space, machine=None, baseline=None) -> dict:
    """The key of a sweep of ``kernel`` over ``space`` (a `Space`) on ``machine`` (default: the
    current one), checked against ``baseline`` (its description: another reference, other checks)."""
    return {"kernel": kernel_identity(kernel), "space": space.to_dict(), "machine": machine_identity(machine),
            "baseline": describe_baseline(baseline)}


def describe_baseline(baseline) -> str:
    """A stable text for the baseline a sweep checks its numbers against."""
    if baseline is None:
        return "kernel defaults"
    if callable(baseline):
        fn = getattr(baseline, "fn", baseline)
        return f"function {getattr(fn, '__qualname__', repr(fn))}"
    return "config " + json.dumps(baseline, sort_keys=True, default=str)


def key_digest(key: dict) -> str:
    """A short hash of a key (file names of the autotune cache)."""
    return hashlib.sha1(json.dumps(key, sort_keys=True, default=str).encode()).hexdigest()[:20]


def key_difference(stored: dict, wanted: dict) -> str:
    """What differs between two keys, in words (for the refusal of a mismatching store)."""
    parts = []
    sk, wk = stored.get("kernel", {}), wanted.get("kernel", {})
    if sk.get("name") != wk.get("name"):
        parts.append(f"kernel '{sk.get('name')}' (this sweep: '{wk.get('name')}')")
    elif sk.get("source") != wk.get("source"):
        parts.append(f"another version of kernel '{sk.get('name')}' (its source changed)")
    ss, ws = stored.get("space", {}), wanted.get("space", {})
    if ss.get("shapes") != ws.get("shapes") or ss.get("dtypes") != ws.get("dtypes"):
        parts.append(f"shapes {_shapes(ss)} (this sweep: {_shapes(ws)})")
    if {k: ss.get(k) for k in ("params", "options", "constraints")} != \
            {k: ws.get(k) for k in ("params", "options", "constraints")}:
        parts.append("another search space (candidates or constraints)")
    if stored.get("machine") != wanted.get("machine"):
        parts.append(f"machine {stored.get('machine')} (this sweep: {wanted.get('machine')})")
    if stored.get("baseline") != wanted.get("baseline"):
        parts.append(f"baseline {stored.get('baseline')} (this sweep: {wanted.get('baseline')})")
    return "; ".join(parts) or "another key"


def _shapes(space: dict) -> str:
    calls = space.get("shapes") or []
    return " + ".join("{" + ", ".join(f"{k}: {tuple(v)}" for k, v in c.items()) + "}" for c in calls) or "none"
