"""The package's import graph, drawn from its own source: rooms, arrows, circles.

A room is a subpackage of ``pypto`` (``pypto.runtime``) or one of its top-level modules
(``pypto.options``); ``pypto_lab`` is one room. Every ``import`` statement counts, also those
inside functions (a lazy import is still a dependency, only a later one). A circle is a set of
modules that reach each other through imports (a strongly connected component of more than one
module). Run from the repository root::

    python tools/import_graph.py            # rooms, arrows between rooms, circles
    python tools/import_graph.py --modules  # also each module's imports into other rooms

Issue 22's structural clean-up measures itself with this (its targets: no circle but
Tensor <-> ops, at most 12 loose modules under ``pypto/``).
"""

from __future__ import annotations

import argparse
import ast
import os
import sys
from collections import defaultdict

PACKAGES = ("pypto", "pypto_lab")


def module_files(root: str) -> dict:
    """Dotted module name -> file path, for every ``.py`` file of the packages under ``root``."""
    found = {}
    for package in PACKAGES:
        for folder, _dirs, files in os.walk(os.path.join(root, package)):
            for name in files:
                if not name.endswith(".py"):
                    continue
                path = os.path.join(folder, name)
                parts = os.path.relpath(path, root)[:-3].split(os.sep)
                if parts[-1] == "__init__":
                    parts = parts[:-1]
                found[".".join(parts)] = path
    return found


def _resolve(module: str, is_package: bool, node: ast.ImportFrom) -> str:
    """The absolute module an ``ImportFrom`` names (relative imports resolved)."""
    if node.level == 0:
        return node.module or ""
    base = module.split(".") if is_package else module.split(".")[:-1]
    base = base[:len(base) - (node.level - 1)]
    return ".".join(base + ([node.module] if node.module else []))


def imports_of(module: str, path: str, known: dict) -> set:
    """The package modules that ``module`` imports (the longest known prefix of each name)."""
    tree = ast.parse(open(path, encoding="utf-8").read(), path)
    is_package = path.endswith("__init__.py")
    names = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            names.update(alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom):
            target = _resolve(module, is_package, node)
            for alias in node.names:  # `from . import x` imports module x, not the package's top
                sub = f"{target}.{alias.name}"
                names.add(sub if sub in known else target)
    found = set()
    for name in names:
        parts = name.split(".")
        while parts and ".".join(parts) not in known:
            parts.pop()
        if parts and ".".join(parts) != module:
            found.add(".".join(parts))
    return found


def room(module: str) -> str:
    """``pypto.runtime.plan`` -> ``pypto.runtime``; ``pypto.options`` stays; the lab is one room."""
    parts = module.split(".")
    if parts[0] != "pypto":
        return parts[0]
    return ".".join(parts[:2])


def circles(graph: dict) -> list:
    """Strongly connected components of more than one node (Tarjan's algorithm, iterative)."""
    index, low, on_stack, stack, out = {}, {}, set(), [], []
    counter = [0]
    for start in sorted(graph):
        if start in index:
            continue
        work = [(start, iter(sorted(graph.get(start, ()))))]
        index[start] = low[start] = counter[0]
        counter[0] += 1
        stack.append(start)
        on_stack.add(start)
        while work:
            node, children = work[-1]
            child = next(children, None)
            if child is None:
                work.pop()
                if work:
                    low[work[-1][0]] = min(low[work[-1][0]], low[node])
                if low[node] == index[node]:
                    component = []
                    while True:
                        top = stack.pop()
                        on_stack.discard(top)
                        component.append(top)
                        if top == node:
                            break
                    if len(component) > 1:
                        out.append(sorted(component))
            elif child not in index:
                index[child] = low[child] = counter[0]
                counter[0] += 1
                stack.append(child)
                on_stack.add(child)
                work.append((child, iter(sorted(graph.get(child, ())))))
            elif child in on_stack:
                low[node] = min(low[node], index[child])
    return sorted(out, key=lambda c: (-len(c), c))


def graph_of(root: str) -> dict:
    """Module -> the set of package modules it imports."""
    files = module_files(root)
    return {module: imports_of(module, path, files) for module, path in files.items()}


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--root", default=os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
    parser.add_argument("--modules", action="store_true", help="list each module's imports into other rooms")
    args = parser.parse_args(argv)
    graph = graph_of(args.root)
    rooms = defaultdict(set)
    for module, targets in graph.items():
        for target in targets:
            if room(target) != room(module):
                rooms[room(module)].add(room(target))
    names = sorted({room(m) for m in graph})
    loose = [m for m in graph if m.count(".") == 1 and m.startswith("pypto.")
             and not os.path.exists(os.path.join(args.root, *m.split("."), "__init__.py"))]
    print(f"{len(graph)} modules in {len(names)} rooms; {sum(len(t) for t in rooms.values())} arrows between "
          f"rooms; {len(loose)} loose modules under pypto/")
    for name in names:
        print(f"  {name} -> {', '.join(sorted(rooms[name])) or '-'}")
    found = circles(graph)
    print(f"{len(found)} circles of modules")
    for component in found:
        print(f"  ({len(component)}) " + ", ".join(component))
    if args.modules:
        for module in sorted(graph):
            outside = sorted(t for t in graph[module] if room(t) != room(module))
            if outside:
                print(f"{module}: {', '.join(outside)}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
