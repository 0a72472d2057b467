"""vm-core's modules import each other without a cycle, function-level (lazy) imports included.

The graph is read from the source with `ast`: one edge per `import` or `from ... import` anywhere in a module
(inside functions too), except under `if TYPE_CHECKING:`, which never runs. A cycle is a strongly connected set of
two or more modules. There is none: any cycle fails.
"""

from __future__ import annotations

import ast
from pathlib import Path

import vm_core

ROOT = Path(vm_core.__file__).parent

def _modules(root: Path) -> dict[str, Path]:
    modules = {}
    for path in root.rglob("*.py"):
        parts = [root.name, *path.relative_to(root).with_suffix("").parts]
        if parts[-1] == "__init__":
            parts.pop()
        modules[".".join(parts)] = path
    return modules


def _targets(module: str, node: ast.Import | ast.ImportFrom, is_package: bool, known: dict[str, Path]) -> set[str]:
    """The vm_core modules one import statement loads (a name imported from a package counts as that package
    unless it is a submodule)."""
    if isinstance(node, ast.Import):
        return {alias.name for alias in node.names} & known.keys()
    if node.level:
        base = module.split(".") if is_package else module.split(".")[:-1]
        base = base[:len(base) - (node.level - 1)]
        prefix = ".".join([*base, *([node.module] if node.module else [])])
    else:
        prefix = node.module or ""
    found = set()
    for alias in node.names:
        name = f"{prefix}.{alias.name}"
        found.add(name if name in known else prefix)
    return found & known.keys()


def _type_checking_only(tree: ast.Module) -> set[int]:
    return {id(inner) for node in ast.walk(tree)
            if isinstance(node, ast.If) and "TYPE_CHECKING" in ast.unparse(node.test)
            for statement in node.body for inner in ast.walk(statement)}


def import_graph(root: Path = ROOT) -> dict[str, set[str]]:
    """Module -> the modules of the same package it imports (the package is the directory `root`)."""
    modules = _modules(root)
    graph: dict[str, set[str]] = {}
    for name, path in modules.items():
        tree = ast.parse(path.read_text(encoding="utf-8"))
        skipped = _type_checking_only(tree)
        graph[name] = set()
        for node in ast.walk(tree):
            if isinstance(node, ast.Import | ast.ImportFrom) and id(node) not in skipped:
                graph[name] |= _targets(name, node, path.name == "__init__.py", modules) - {name}
    return graph


def cycles(graph: dict[str, set[str]]) -> set[frozenset[str]]:
    """The strongly connected sets of two or more modules (Tarjan's algorithm, iterative)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    found: set[frozenset[str]] = set()
    for root in graph:
        if root in index:
            continue
        work = [(root, iter(sorted(graph[root])))]
        index[root] = low[root] = len(index)
        stack.append(root)
        on_stack.add(root)
        while work:
            node, children = work[-1]
            child = next(children, None)
            if child is not None:
                if child not in index:
                    index[child] = low[child] = len(index)
                    stack.append(child)
                    on_stack.add(child)
                    work.append((child, iter(sorted(graph[child]))))
                elif child in on_stack:
                    low[node] = min(low[node], index[child])
                continue
            work.pop()
            if work:
                low[work[-1][0]] = min(low[work[-1][0]], low[node])
            if low[node] == index[node]:
                component = set()
                while True:
                    member = stack.pop()
                    on_stack.discard(member)
                    component.add(member)
                    if member == node:
                        break
                if len(component) > 1:
                    found.add(frozenset(component))
    return found


def test_the_scan_finds_a_cycle_through_a_lazy_import() -> None:
    graph = {"a": {"b"}, "b": {"c"}, "c": {"a"}, "d": {"a"}}
    assert cycles(graph) == {frozenset({"a", "b", "c"})}


def test_the_graph_sees_function_level_imports_and_skips_type_checking_ones(tmp_path: Path) -> None:
    package = tmp_path / "pkg"
    (package / "sub").mkdir(parents=True)
    (package / "__init__.py").write_text("")
    (package / "sub" / "__init__.py").write_text("")
    (package / "a.py").write_text("from .sub import b\n")
    (package / "sub" / "b.py").write_text("def later():\n    from ..c import thing\n    return thing\n")
    (package / "c.py").write_text("from typing import TYPE_CHECKING\nif TYPE_CHECKING:\n    from . import a\n"
                                  "import pkg.sub.b\n")
    graph = import_graph(package)
    assert graph["pkg.a"] == {"pkg.sub.b"}
    assert graph["pkg.sub.b"] == {"pkg.c"}  # imported inside a function
    assert graph["pkg.c"] == {"pkg.sub.b"}  # the TYPE_CHECKING import of `a` is not an edge
    assert cycles(graph) == {frozenset({"pkg.sub.b", "pkg.c"})}


def test_vm_core_has_no_import_cycle() -> None:
    found = sorted(sorted(c) for c in cycles(import_graph()))
    assert not found, f"import cycles: {found}"
