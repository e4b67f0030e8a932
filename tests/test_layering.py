"""The package's import layering, checked from source with :mod:`ast` (docs/architecture.md).

Rules: no import cycle between modules; ``twill.sched`` and ``twill.mapping`` never import each
other; neither imports ``twill.io``, ``twill.cli``, ``twill.visualization`` or ``twill.codegen``;
nothing imports ``twill.cli``. Module-level and function-level imports both count.
"""

from __future__ import annotations

import ast
from pathlib import Path

SRC = Path(__file__).resolve().parents[1] / "src"

_OUTER = ("twill.io", "twill.cli", "twill.visualization", "twill.codegen")


def _module_name(path: Path) -> str:
    parts = list(path.relative_to(SRC).with_suffix("").parts)
    if parts[-1] == "__init__":
        parts.pop()
    return ".".join(parts)


def _modules() -> dict[str, Path]:
    return {_module_name(p): p for p in sorted((SRC / "twill").rglob("*.py"))}


def _resolve(importer: str, is_pkg: bool, node: ast.ImportFrom) -> str:
    if node.level == 0:
        return node.module or ""
    base = importer.split(".")
    if not is_pkg:
        base = base[:-1]
    base = base[: len(base) - (node.level - 1)]
    return ".".join(base + ([node.module] if node.module else []))


def _known(name: str, modules: dict[str, Path]) -> str | None:
    """The longest prefix of ``name`` that is a module of the package."""
    parts = name.split(".")
    while parts:
        candidate = ".".join(parts)
        if candidate in modules:
            return candidate
        parts.pop()
    return None


def import_graph() -> dict[str, set[str]]:
    """Module -> twill modules it imports anywhere in its body."""
    modules = _modules()
    graph: dict[str, set[str]] = {}
    for name, path in modules.items():
        is_pkg = path.name == "__init__.py"
        targets: set[str] = set()
        for node in ast.walk(ast.parse(path.read_text(), str(path))):
            if isinstance(node, ast.Import):
                names = [a.name for a in node.names]
            elif isinstance(node, ast.ImportFrom):
                base = _resolve(name, is_pkg, node)
                names = [f"{base}.{a.name}" for a in node.names] + [base]
            else:
                continue
            for imported in names:
                if imported.split(".")[0] != "twill":
                    continue
                hit = _known(imported, modules)
                if hit and hit != name:
                    targets.add(hit)
        graph[name] = targets
    return graph


def _within(module: str, package: str) -> bool:
    return module == package or module.startswith(package + ".")


def _layer_violation(src: str, dst: str) -> str | None:
    if _within(dst, "twill.cli") and not _within(src, "twill.cli") and src != "twill.__main__":
        return "nothing imports twill.cli"
    for family, other in (("twill.sched", "twill.mapping"), ("twill.mapping", "twill.sched")):
        if _within(src, family) and _within(dst, other):
            return f"{family} never imports {other}"
        if _within(src, family) and any(_within(dst, o) for o in _OUTER):
            return f"{family} never imports an outer layer"
    return None


def _cycles(graph: dict[str, set[str]]) -> list[tuple[str, ...]]:
    """Strongly connected components with more than one module (Tarjan)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    found: list[tuple[str, ...]] = []

    def visit(v: str) -> None:
        index[v] = low[v] = len(index)
        stack.append(v)
        on_stack.add(v)
        for w in sorted(graph.get(v, ())):
            if w not in index:
                visit(w)
                low[v] = min(low[v], low[w])
            elif w in on_stack:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            component = []
            while True:
                w = stack.pop()
                on_stack.discard(w)
                component.append(w)
                if w == v:
                    break
            if len(component) > 1:
                found.append(tuple(sorted(component)))

    for v in sorted(graph):
        if v not in index:
            visit(v)
    return found


def _package_edges(graph: dict[str, set[str]]) -> dict[str, set[str]]:
    """The graph without edges from a package ``__init__`` to its own submodules.

    A package re-exporting its children is not a loop a reader has to untangle; an edge from a
    child back to its package is kept only when the package is not merely re-exporting.
    """
    return {src: {d for d in dsts if not _within(d, src)} for src, dsts in graph.items()}


def test_graph_is_found() -> None:
    graph = import_graph()
    assert "twill.sched.exact.phase1" in graph
    assert "twill.sched.ir" in graph["twill.sched.exact.phase1"]


def test_no_layer_violations() -> None:
    graph = import_graph()
    bad = [
        f"{src} -> {dst}: {why}"
        for src, dsts in sorted(graph.items())
        for dst in sorted(dsts)
        if (why := _layer_violation(src, dst))
    ]
    assert not bad, "layering violations:\n" + "\n".join(bad)


def test_no_import_cycles() -> None:
    cycles = [c for c in _cycles(_package_edges(import_graph()))]
    assert not cycles, "import cycles:\n" + "\n".join(" <-> ".join(c) for c in cycles)


def test_cycle_detection_finds_a_loop() -> None:
    assert _cycles({"a": {"b"}, "b": {"c"}, "c": {"a"}, "d": {"a"}}) == [("a", "b", "c")]
