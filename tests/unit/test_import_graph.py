"""tools/import_graph.py: relative imports resolve to modules, and circles are found."""

import importlib.util
import os

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
spec = importlib.util.spec_from_file_location("import_graph", os.path.join(ROOT, "tools", "import_graph.py"))
import_graph = importlib.util.module_from_spec(spec)
spec.loader.exec_module(import_graph)


def _write(root, files):
    for rel, text in files.items():
        path = os.path.join(root, rel)
        os.makedirs(os.path.dirname(path), exist_ok=True)
        with open(path, "w") as f:
            f.write(text)


def test_imports_resolve_relative_names_and_lazy_imports(tmp_path):
    _write(tmp_path, {
        "pypto/__init__.py": "from .a import x\n",
        "pypto/a/__init__.py": "",
        "pypto/a/one.py": "from . import two\nfrom ..b import thing\n",
        "pypto/a/two.py": "def f():\n    from pypto.a.one import g\n",
        "pypto/b.py": "import os\n",
        "pypto_lab/__init__.py": "import pypto.b\n",
    })
    graph = import_graph.graph_of(str(tmp_path))
    assert graph["pypto.a.one"] == {"pypto.a.two", "pypto.b"}
    assert graph["pypto.a.two"] == {"pypto.a.one"}  # an import inside a function counts
    assert graph["pypto_lab"] == {"pypto.b"}
    assert graph["pypto"] == {"pypto.a"}
    assert import_graph.circles(graph) == [["pypto.a.one", "pypto.a.two"]]
    assert import_graph.room("pypto.a.one") == "pypto.a" and import_graph.room("pypto_lab.x") == "pypto_lab"


def test_circles_finds_each_strongly_connected_set_once():
    graph = {"a": {"b"}, "b": {"c"}, "c": {"a", "d"}, "d": {"e"}, "e": {"d"}, "f": {"a"}}
    assert import_graph.circles(graph) == [["a", "b", "c"], ["d", "e"]]
    assert import_graph.circles({"a": {"b"}, "b": set()}) == []
