"""The package's import layering, checked from source with :mod:`ast` (docs/architecture.md).

Rules, each a test below:

* no import cycle between modules (a package ``__init__`` re-exporting its children aside);
* no import loop between packages (``twill.io``, ``twill.sched``, ... and each top-level
  module count as one), imports inside function bodies included: a loop hidden in a function
  is still a loop a reader has to untangle;
* ``twill.sched`` and ``twill.mapping`` never import each other, nor an outer layer:
  ``twill.io``, the front ends ``twill.triton`` and ``twill.onnx``, ``twill.cli``,
  ``twill.visualization`` or ``twill.codegen``;
* a front end never imports ``twill.io``: ``io.load_graph`` reads a ``.ttgir`` through the
  Triton front end, so the arrow points from ``io/`` to the front ends;
* nothing imports ``twill.cli`` (``twill.__main__`` aside), and ``twill.cli`` imports at most
  ``CLI_CORE_IMPORTS_MAX`` core modules (through the families' ``front`` modules);
* no module outside ``twill.sched`` and ``twill.mapping`` (the front doors aside) calls a
  solver directly: it imports neither a module that registers a solver (the registry's list)
  nor a core module that reaches one, save through a family's ``front`` (``twill.solve`` and
  ``twill.registry`` are the other way in);
* no private name crosses modules: ``from M import _x`` and ``M._x`` from another module
  fail; a private module (``twill._interrupt``, ``twill.sched.exact._deadline``) is private to
  its package, which may import it;
* the front doors (``twill``, ``twill.kernels``, ``twill.twill_solver``, ``twill.gaus_solver``)
  import no outer layer when they are imported: an outer import sits in the function that
  needs it (``twill_solve(verbose=True)`` prints through ``twill.visualization``);
* the shared vocabulary (``errors``, ``results``, ``options``, ``progress``, ``validation``)
  imports nothing of twill but itself when it runs (``results`` names ``DependenceGraph`` in
  its annotations only).

Imports at module level and inside functions both count. An import under
``if TYPE_CHECKING:`` counts for the layer rules (a type the layer may not name) but not for
loops (it never runs). There is no list of exceptions: a rule that does not hold fails.
"""

from __future__ import annotations

import ast
from pathlib import Path

SRC = Path(__file__).resolve().parents[1] / "src"

_OUTER = (
    "twill.io",
    "twill.triton",
    "twill.onnx",
    "twill.cli",
    "twill.visualization",
    "twill.codegen",
)
FRONT_ENDS = ("twill.triton", "twill.onnx")
FRONT_DOORS = ("twill", "twill.kernels", "twill.twill_solver", "twill.gaus_solver")
SHARED = (
    "twill.errors",
    "twill.results",
    "twill.options",
    "twill.deadline",
    "twill.progress",
    "twill.validation",
)


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


def _is_type_checking(node: ast.If) -> bool:
    test = node.test
    return (isinstance(test, ast.Name) and test.id == "TYPE_CHECKING") or (
        isinstance(test, ast.Attribute) and test.attr == "TYPE_CHECKING"
    )


def _import_nodes(
    body: list[ast.stmt], in_function: bool = False, typing_only: bool = False
) -> list[tuple[ast.Import | ast.ImportFrom, bool, bool]]:
    """Every import statement under ``body``: (node, inside a function, under TYPE_CHECKING)."""
    found: list[tuple[ast.Import | ast.ImportFrom, bool, bool]] = []
    for node in body:
        if isinstance(node, (ast.Import, ast.ImportFrom)):
            found.append((node, in_function, typing_only))
            continue
        inner = in_function or isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef))
        typing = typing_only or (isinstance(node, ast.If) and _is_type_checking(node))
        for field in ("body", "orelse", "finalbody", "handlers", "cases"):
            children = getattr(node, field, None) or []
            if field == "orelse" and isinstance(node, ast.If) and _is_type_checking(node):
                found += _import_nodes(children, inner, typing_only)  # the runtime branch
                continue
            found += _import_nodes(children, inner, typing)
    return found


def imports_of(name: str, path: Path, modules: dict[str, Path]) -> list[tuple[str, bool, bool]]:
    """The twill modules ``name`` imports: (module, inside a function, under TYPE_CHECKING)."""
    is_pkg = path.name == "__init__.py"
    found = []
    for node, in_function, typing_only in _import_nodes(ast.parse(path.read_text()).body):
        if isinstance(node, ast.Import):
            names = [a.name for a in node.names]
        else:
            base = _resolve(name, is_pkg, node)
            names = [f"{base}.{a.name}" for a in node.names] + [base]
        for imported in names:
            if imported.split(".")[0] != "twill":
                continue
            hit = _known(imported, modules)
            if hit and hit != name:
                found.append((hit, in_function, typing_only))
    return found


def import_graph(*, runtime: bool = False, module_level: bool = False) -> dict[str, set[str]]:
    """Module -> twill modules it imports anywhere in its body (``runtime``: not under
    TYPE_CHECKING; ``module_level``: not inside a function)."""
    modules = _modules()
    return {
        name: {
            hit
            for hit, in_function, typing_only in imports_of(name, path, modules)
            if not (runtime and typing_only) and not (module_level and in_function)
        }
        for name, path in modules.items()
    }


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
    if any(_within(src, f) for f in FRONT_ENDS) and _within(dst, "twill.io"):
        return "a front end never imports twill.io (io.load_graph reads through it)"
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


def _unit(module: str) -> str:
    """The package a module belongs to for the loop rule: ``twill.X`` for everything under a
    subpackage ``twill/X/``, else the top-level module itself."""
    parts = module.split(".")
    if len(parts) > 1 and (SRC / "twill" / parts[1]).is_dir():
        return ".".join(parts[:2])
    return module


def package_graph(graph: dict[str, set[str]]) -> dict[str, set[str]]:
    """``graph`` with each module replaced by its package (:func:`_unit`), self-edges dropped."""
    units: dict[str, set[str]] = {}
    for src, dsts in graph.items():
        units.setdefault(_unit(src), set()).update(_unit(d) for d in dsts)
    return {u: {d for d in dsts if d != u} for u, dsts in units.items()}


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
    cycles = [c for c in _cycles(_package_edges(import_graph(runtime=True)))]
    assert not cycles, "import cycles:\n" + "\n".join(" <-> ".join(c) for c in cycles)


def test_cycle_detection_finds_a_loop() -> None:
    assert _cycles({"a": {"b"}, "b": {"c"}, "c": {"a"}, "d": {"a"}}) == [("a", "b", "c")]


def test_no_package_loops_through_function_imports() -> None:
    """A function-level import is still an arrow: ``twill.io`` calling up into ``twill.triton``
    while ``twill.triton`` reads through ``twill.io`` is a loop between the two packages."""
    loops = _cycles(package_graph(import_graph(runtime=True)))
    assert not loops, "package loops:\n" + "\n".join(" <-> ".join(c) for c in loops)


def test_package_graph_sees_function_level_loops() -> None:
    graph = {"twill.io.a": {"twill.triton"}, "twill.triton": {"twill.io.b"}, "twill.io.b": set()}
    assert _cycles(package_graph(graph)) == [("twill.io", "twill.triton")]


def test_type_checking_imports_are_not_runtime_edges() -> None:
    """``results.py`` names ``DependenceGraph`` for its annotations only; that is no loop."""
    assert "twill.sched.ir" in import_graph()["twill.results"]
    assert "twill.sched.ir" not in import_graph(runtime=True)["twill.results"]


def test_shared_vocabulary_imports_only_itself() -> None:
    graph = import_graph(runtime=True)
    bad = [f"{m} -> {d}" for m in SHARED for d in sorted(graph[m]) if d not in SHARED]
    assert not bad, "the shared vocabulary imports only itself:\n" + "\n".join(bad)


def test_front_doors_import_no_outer_layer_at_module_level() -> None:
    graph = import_graph(module_level=True)
    bad = [
        f"{door} -> {dst}"
        for door in FRONT_DOORS
        for dst in sorted(graph[door])
        if any(_within(dst, o) for o in _OUTER)
    ]
    assert not bad, "front doors import an outer layer at module level:\n" + "\n".join(bad)


def _private(part: str) -> bool:
    return part.startswith("_") and not part.startswith("__")


def _module_allowed(importer: str, module: str) -> bool:
    """Whether ``importer`` may import ``module``: every private part of its dotted name must
    have ``importer`` inside the package that holds it."""
    parts = module.split(".")
    return all(
        _within(importer, ".".join(parts[:k])) for k in range(1, len(parts)) if _private(parts[k])
    )


def crossings(name: str, tree: ast.Module, modules: set[str], is_pkg: bool) -> list[str]:
    """Every private name or module that module ``name`` (parsed as ``tree``) reaches across."""
    bad: list[str] = []
    aliases: dict[str, str] = {}  # local name -> twill module it is bound to
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            for a in node.names:
                if a.name.split(".")[0] == "twill":
                    if not _module_allowed(name, a.name):
                        bad.append(f"import {a.name}")
                    aliases[a.asname or "twill"] = a.name if a.asname else "twill"
        elif isinstance(node, ast.ImportFrom):
            base = _resolve(name, is_pkg, node)
            if base.split(".")[0] != "twill" or base == name:
                continue
            if not _module_allowed(name, base):
                bad.append(f"from {base} import ...")
                continue
            for a in node.names:
                full = f"{base}.{a.name}"
                if full in modules:
                    aliases[a.asname or a.name] = full
                    if not _module_allowed(name, full):
                        bad.append(f"from {base} import {a.name}")
                elif _private(a.name):
                    bad.append(f"from {base} import {a.name}")
    for node in ast.walk(tree):
        if isinstance(node, ast.Attribute) and _private(node.attr):
            chain, value = [node.attr], node.value
            while isinstance(value, ast.Attribute):
                chain.append(value.attr)
                value = value.value
            if isinstance(value, ast.Name) and value.id in aliases:
                target = ".".join([aliases[value.id], *reversed(chain[1:])])
                if target in modules and target != name:
                    bad.append(f"{target}.{node.attr}")
    return bad


def test_no_private_name_crosses_modules() -> None:
    modules = _modules()
    found = {
        name: cross
        for name, path in modules.items()
        if (
            cross := crossings(
                name, ast.parse(path.read_text()), set(modules), path.name == "__init__.py"
            )
        )
    }
    assert not found, "private names used across modules (promote or move them):\n" + "\n".join(
        f"{m}: {', '.join(c)}" for m, c in sorted(found.items())
    )


def test_the_check_sees_each_kind() -> None:
    mods = {"twill.a", "twill.b", "twill.pkg", "twill.pkg._inner", "twill.pkg.c"}

    def check(importer: str, code: str) -> list[str]:
        return crossings(importer, ast.parse(code), mods, False)

    assert check("twill.a", "from twill.b import _helper") == ["from twill.b import _helper"]
    assert check("twill.a", "from twill.b import helper, __version__") == []
    assert check("twill.a", "from twill.pkg._inner import x") == [
        "from twill.pkg._inner import ..."
    ]
    assert check("twill.pkg.c", "from twill.pkg._inner import x") == []
    assert check("twill.a", "import twill.b as b\nb._helper()") == ["twill.b._helper"]
    assert check("twill.a", "from twill import b\nb._helper()") == ["twill.b._helper"]
    assert check("twill.a", "from twill.b import _x as y") == ["from twill.b import _x"]


#: The most core modules (``twill`` outside the outer layers: ``sched``, ``mapping`` and the
#: package root) that ``cli/`` may import (issue 51: ≤ 12).
CLI_CORE_IMPORTS_MAX = 12


def cli_core_imports() -> dict[str, set[str]]:
    """Core module -> the ``cli/`` modules importing it (any import: module level, function,
    TYPE_CHECKING)."""
    used: dict[str, set[str]] = {}
    for src, dsts in import_graph().items():
        if not _within(src, "twill.cli"):
            continue
        for dst in dsts:
            if not any(_within(dst, o) for o in _OUTER):
                used.setdefault(dst, set()).add(src)
    return used


def test_cli_imports_few_core_modules() -> None:
    """``cli/`` parses, calls one front function per family and prints: it reaches the core
    through a few front modules, not through each solver's internals."""
    used = cli_core_imports()
    listing = "\n".join(f"{m} <- {', '.join(sorted(s))}" for m, s in sorted(used.items()))
    assert len(used) <= CLI_CORE_IMPORTS_MAX, f"cli/ imports {len(used)} core modules:\n{listing}"


#: The doors through which an outer layer reaches a family's solvers: each name listed once,
#: the defining module's own object (``tests/test_fronts.py``).
FAMILY_FRONTS = ("twill.sched.front", "twill.mapping.front")


def solver_modules() -> set[str]:
    """The modules that register a solver, read from the registry (the one list)."""
    from twill.registry import solvers

    return {spec.module for spec in solvers()}


def reaching(graph: dict[str, set[str]], targets: set[str]) -> set[str]:
    """Every module of ``graph`` from which an import path leads to one of ``targets``
    (``targets`` included)."""
    back: dict[str, set[str]] = {}
    for src, dsts in graph.items():
        for dst in dsts:
            back.setdefault(dst, set()).add(src)
    found, todo = set(targets), list(targets)
    while todo:
        for src in back.get(todo.pop(), ()):
            if src not in found:
                found.add(src)
                todo.append(src)
    return found


def direct_solver_imports(graph: dict[str, set[str]], solvers: set[str]) -> list[str]:
    """``outer -> core`` imports that reach a solver other than through a family's front: a
    module outside ``twill.sched`` and ``twill.mapping`` (the front doors aside) importing a
    solver's module, or a core module whose functions run one (it reaches a solver's module),
    such as ``twill.sched.exact.single`` (``solve_union``)."""
    runs = reaching(graph, solvers)

    def core(m: str) -> bool:
        return _within(m, "twill.sched") or _within(m, "twill.mapping")

    return [
        f"{src} -> {dst}"
        for src, dsts in sorted(graph.items())
        if not core(src) and src not in FRONT_DOORS
        for dst in sorted(dsts)
        if core(dst) and dst in runs and dst not in FAMILY_FRONTS
    ]


def test_no_module_outside_the_families_calls_a_solver_directly() -> None:
    """Issue 51: the Triton front end, ``io/``, ``codegen/``, ``visualization/`` and ``cli/``
    build problems and reach the solvers through ``twill.solve`` or a family's ``front``
    (the orchestration they need lives in the family: ``sched/exact/kernel_loop.py``).
    Imports anywhere count: module level, in a function, under ``TYPE_CHECKING``. A cost
    computation that runs a small model of its own and reaches no registered solver stays
    callable: ``triton/extract.py`` scales its costs with ``sched/normalize.py`` (a ZLP)."""
    solvers = solver_modules()
    assert {"twill.sched.exact.pinned", "twill.mapping.cosa.solve"} <= solvers
    bad = direct_solver_imports(import_graph(), solvers)
    assert not bad, "outer modules importing solvers (go through a front):\n" + "\n".join(bad)


def test_the_solver_check_sees_a_direct_and_an_indirect_call() -> None:
    graph = {
        "twill.triton.peer": {"twill.sched.exact.pinned", "twill.sched.ir"},
        "twill.triton.extract": {"twill.sched.union"},
        "twill.sched.union": {"twill.sched.exact.pinned"},
        "twill.io.gml": {"twill.sched.ir", "twill.sched.front"},
        "twill.sched.front": {"twill.sched.exact.pinned"},
        "twill.twill_solver": {"twill.sched.exact.pinned"},
        "twill.sched.exact.pinned": {"twill.sched.ir"},
        "twill.sched.ir": set(),
    }
    assert direct_solver_imports(graph, {"twill.sched.exact.pinned"}) == [
        "twill.triton.extract -> twill.sched.union",
        "twill.triton.peer -> twill.sched.exact.pinned",
    ]
