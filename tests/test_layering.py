"""Module layering of the engine (issue 18): the package's import graph has no cycles, and the model (types) sits
below the robot-file readers and the scene builder (model ← robots ← builder).

The graph is read from the source (every ``import``/``from … import`` statement, those inside functions included,
since a function-level import is how a cycle usually hides), not from ``sys.modules``: importing any submodule runs
the package's ``__init__``, which imports everything."""
from __future__ import annotations

import ast
from pathlib import Path

import cenic_gym

PACKAGE = Path(cenic_gym.__file__).resolve().parent


def _module_name(path):
    rel = path.relative_to(PACKAGE).with_suffix("")
    parts = [p for p in rel.parts if p != "__init__"]
    return ".".join(["cenic_gym", *parts])


def import_graph():
    """{module: set of cenic_gym modules it imports} for the engine's own modules (the tasks under envs/ excluded)."""
    graph = {}
    for path in sorted(PACKAGE.rglob("*.py")):
        if "envs" in path.relative_to(PACKAGE).parts or "assets" in path.relative_to(PACKAGE).parts:
            continue
        name = _module_name(path)
        package = name if path.name == "__init__.py" else name.rsplit(".", 1)[0]
        deps = set()
        for node in ast.walk(ast.parse(path.read_text(), str(path))):
            if isinstance(node, ast.ImportFrom):
                if node.level:
                    base = package.split(".")
                    base = base[:len(base) - node.level + 1]
                    mod = ".".join(base + ([node.module] if node.module else []))
                else:
                    mod = node.module or ""
                if mod.startswith("cenic_gym"):
                    # `from . import x` / `from .pkg import x`: x may itself be a module
                    for alias in node.names:
                        deps.add(f"{mod}.{alias.name}" if f"{mod}.{alias.name}" in _all_modules() else mod)
            elif isinstance(node, ast.Import):
                deps.update(a.name for a in node.names if a.name.startswith("cenic_gym"))
        graph[name] = {d for d in deps if d != name and d in _all_modules()}
    return graph


_MODULES = None


def _all_modules():
    global _MODULES
    if _MODULES is None:
        _MODULES = {_module_name(p) for p in PACKAGE.rglob("*.py")}
    return _MODULES


def _cycles(graph):
    """Strongly connected components with more than one module (Tarjan)."""
    index, low, stack, on, out = {}, {}, [], set(), []

    def visit(v):
        index[v] = low[v] = len(index)
        stack.append(v)
        on.add(v)
        for w in graph.get(v, ()):
            if w not in index:
                visit(w)
                low[v] = min(low[v], low[w])
            elif w in on:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            comp = []
            while True:
                w = stack.pop()
                on.discard(w)
                comp.append(w)
                if w == v:
                    break
            if len(comp) > 1:
                out.append(sorted(comp))

    for v in graph:
        if v not in index:
            visit(v)
    return out


def test_engine_modules_import_no_cycle():
    graph = {k: v for k, v in import_graph().items() if k != "cenic_gym"}  # __init__ re-exports everything
    assert _cycles(graph) == []


def test_model_is_below_robots_and_builder():
    graph = import_graph()
    assert not graph["cenic_gym.model"] & {"cenic_gym.robots", "cenic_gym.builder"}
    assert "cenic_gym.model" in graph["cenic_gym.robots"]
    assert "cenic_gym.builder" not in graph["cenic_gym.robots"]
    assert {"cenic_gym.model", "cenic_gym.robots"} <= graph["cenic_gym.builder"]


def test_the_cycle_finder_finds_a_cycle():
    assert _cycles({"a": {"b"}, "b": {"c"}, "c": {"a"}, "d": {"a"}}) == [["a", "b", "c"]]
