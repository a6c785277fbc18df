"""``program.json``: the compiled kernels of a process, their root functions and leaf functions.

Upstream writes one ``program.json`` into the output folder, describing every function compiled
so far (its toolkit opens it as the Execute/Block Graph overview, and merges it with
``dyn_topo.txt`` into swimlanes). Here the file is rewritten at each new compiled version with all
versions written to that folder by this process::

    {"version": 1, "kernels": [{"name", "key", "leaves": [...], "roots": [...]}, ...]}

``leaves`` are the leaf functions (Block Graphs) in the order of ``CompiledKernel.source``
(``index`` is the ``leafIndex`` of ``dyn_topo.txt`` and ``tilefwk_L1_prof_data.json``) and
``roots`` the root functions with their calls (Execute Graph), as `pypto.passes.dump` summarises
them.
"""

from __future__ import annotations

import os
import threading
import weakref

from ..passes.dump import graph_summary
from .folder import replace_json

PROGRAM_VERSION = 1
FILE = "program.json"

_lock = threading.Lock()
_written: dict = {}  # folder -> [(weakref to CompiledKernel, its record)] in the order written


def leaf_index(compiled) -> dict:
    """Leaf function name -> its index in the kernel (the order of ``compiled.source``)."""
    cached = compiled.__dict__.get("_leaf_index")
    if cached is None:
        cached = compiled.__dict__["_leaf_index"] = {name: i for i, name in enumerate(compiled.source)}
    return cached


def kernel_record(compiled) -> dict:
    """The JSON record of one compiled version."""
    lowered = compiled.lowered
    index = leaf_index(compiled)
    leaves = graph_summary("block", dict(lowered.leaves))["leaves"] if lowered is not None else []
    for leaf in leaves:
        leaf["index"] = index.get(leaf["name"], -1)
    leaves.sort(key=lambda leaf: leaf["index"])
    roots = graph_summary("execute", list(lowered.roots))["roots"] if lowered is not None else []
    return {"name": compiled.name, "key": compiled.key_text, "leaves": leaves, "roots": roots}


def write_program(compiled, folder: str) -> str:
    """Add ``compiled`` to ``folder``'s program.json (once per version; a version dropped from its
    kernel's cache stays listed) and return the file's path."""
    path = os.path.join(folder, FILE)
    with _lock:
        entries = _written.setdefault(folder, [])
        known = any(ref() is compiled for ref, _ in entries)
        if known and os.path.exists(path):
            return path
        if not known:
            entries.append((weakref.ref(compiled), kernel_record(compiled)))
        replace_json(path, {"version": PROGRAM_VERSION, "kernels": [record for _, record in entries]}, indent=1,
                     ensure_ascii=False, trailing_newline=True)
    return path
