"""The solver registry: every solver of both families, by method name and problem type.

A solver module registers its ``solve(problem, options=None) -> SolveResult`` once, where it
is defined::

    @register_solver("cosa", problems=(LayerMappingProblem,), settings=CoSASettings,
                     default=True)
    def solve(problem, options=None): ...

and :func:`twill.solve` (which calls :func:`solve_with` here), the command line, the
pipelines and the conformance suite find it through this module, so a new solver is one
module and no edit anywhere else (``docs/architecture.md``).

**Finding solvers without importing them.** Importing every solver would load torch, z3 and
OR-Tools for a ``twill map`` that needs none of them. So the registry reads the decorator's
literal arguments (name, aliases, problem types, default) from the source of
``twill.sched`` and ``twill.mapping`` with :mod:`ast` and imports a solver's module only when
that solver is called. Importing a module registers its solvers at once as well (that is how
a solver outside the package, a test's or a user's, joins). When the module is imported, the
decorator's real arguments replace what the scan read, and a disagreement is an error.

Problem types are matched by class name along the problem's method resolution order, so a
:class:`~twill.sched.exact.pinned.PinnedProblem` (a ``WarpSpecProblem``, a
``ModuloProblem``) is accepted by every solver of its bases, and its default is the nearest
one declared (``pinned`` before ``twill``).
"""

from __future__ import annotations

import ast
import importlib
import io
import re
import tokenize
from collections.abc import Callable
from dataclasses import dataclass, field
from functools import cache
from pathlib import Path
from typing import Any

from twill.errors import ArgumentTypeError, InvalidProblemError

__all__ = ["SolverSpec", "register_solver", "solve_with", "solver", "solvers"]

_MARK = "register_solver"
_FAMILIES = ("sched", "mapping")


@dataclass(frozen=True)
class SolverSpec:
    """One registered solver.

    Attributes
    ----------
    name
        The method name (``twill``, ``gaus``, ``cosa``, ...), unique over the registry.
    problems
        Names of the problem classes it solves (subclasses included).
    module
        The module that defines it, imported on first use.
    default
        Whether it is the method :func:`solve_with` picks for these problem types when the
        options name none.
    aliases
        Other accepted names (the command line's short forms: ``force``, ``exact``).
    settings
        Its settings dataclass, once the module is imported (``None`` before, or when it has
        none).
    """

    name: str
    problems: tuple[str, ...]
    module: str
    default: bool = False
    aliases: tuple[str, ...] = ()
    settings: type | None = field(default=None, compare=False)
    function: Callable[..., Any] | None = field(default=None, compare=False, repr=False)

    def accepts(self, problem: object) -> bool:
        """Whether ``problem`` is an instance of one of :attr:`problems` (by class name)."""
        return any(c.__name__ in self.problems for c in type(problem).__mro__)

    def load(self) -> SolverSpec:
        """This spec with its ``solve`` function, its module imported if it was not yet."""
        if self.function is not None:
            return self
        importlib.import_module(self.module)
        loaded = _REGISTERED.get(self.name)
        if loaded is None:
            raise RuntimeError(f"{self.module} no longer registers solver {self.name!r}")
        return loaded

    def __call__(self, problem: Any, options: Any = None) -> Any:
        """Runs the solver: ``solve(problem, options)``."""
        fn = self.load().function
        assert fn is not None
        return fn(problem, options)


_REGISTERED: dict[str, SolverSpec] = {}


def register_solver(
    name: str,
    *,
    problems: tuple[type, ...],
    settings: type | None = None,
    default: bool = False,
    aliases: tuple[str, ...] = (),
) -> Callable[[Callable[..., Any]], Callable[..., Any]]:
    """Registers the decorated ``solve(problem, options=None)`` as method ``name``.

    Keep the arguments literal (a string, a tuple of class names, ``True``/``False``, a tuple
    of strings): the registry reads them from source before the module is imported.
    """

    def decorate(fn: Callable[..., Any]) -> Callable[..., Any]:
        spec = SolverSpec(
            name, tuple(p.__name__ for p in problems), fn.__module__, default, tuple(aliases),
            settings, fn,
        )  # fmt: skip
        scanned = _scanned().get(name)
        if scanned is not None and scanned.module != spec.module:
            raise RuntimeError(
                f"solver {name!r} is registered by {scanned.module} and {spec.module}"
            )
        if scanned is not None and scanned != spec:
            raise RuntimeError(f"solver {name!r}: its registration differs from its source")
        _REGISTERED[name] = spec
        return fn

    return decorate


def solvers(problem: object = None) -> tuple[SolverSpec, ...]:
    """Every registered solver (those accepting ``problem`` when given), by name."""
    found = {**_scanned(), **_REGISTERED}
    specs = (found[k] for k in sorted(found))
    return tuple(s for s in specs if problem is None or s.accepts(problem))


def solver(name: str) -> SolverSpec:
    """The solver called ``name`` (or one of its aliases), its module imported.

    Raises
    ------
    InvalidProblemError
        No solver has that name; the message lists the names there are.
    """
    if not isinstance(name, str):
        raise ArgumentTypeError(f"method must be a solver name, found {type(name).__name__}")
    for spec in solvers():
        if name == spec.name or name in spec.aliases:
            return spec.load()
    names = ", ".join(s.name for s in solvers())
    raise InvalidProblemError(f"unknown method {name!r} (choose from {names})")


def default_solver(problem: object) -> SolverSpec:
    """The default solver of ``problem``'s type: the one declared for the nearest class of its
    method resolution order."""
    defaults = [s for s in solvers(problem) if s.default]
    for cls in type(problem).__mro__:
        for spec in defaults:
            if cls.__name__ in spec.problems:
                return spec.load()
    known = sorted({p for s in solvers() for p in s.problems})
    raise ArgumentTypeError(
        f"problem must be one of {', '.join(known)}, found {type(problem).__name__}"
    )


def solve_with(problem: Any, options: Any = None) -> Any:
    """Solves ``problem`` with ``options.method`` (``None``: its type's default solver);
    what :func:`twill.solve` does.

    Raises
    ------
    TypeError
        ``problem`` is of no registered problem type, or ``options`` is not a
        :class:`~twill.options.SolverOptions` (both also :class:`~twill.errors.TwillError`).
    InvalidProblemError
        The method is unknown or does not solve this problem type.
    """
    from twill.options import SolverOptions

    if options is not None and not isinstance(options, SolverOptions):
        raise ArgumentTypeError(
            f"options must be a SolverOptions or None, found {type(options).__name__}"
        )
    method = None if options is None else options.method
    if method is None:
        return default_solver(problem)(problem, options)
    spec = solver(method)
    if not spec.accepts(problem):
        raise InvalidProblemError(
            f"method {spec.name!r} solves {', '.join(spec.problems)}, not {type(problem).__name__}"
        )
    return spec(problem, options)


@cache
def _scanned() -> dict[str, SolverSpec]:
    """The registrations written in ``twill.sched`` and ``twill.mapping``, read from source."""
    root = Path(__file__).parent
    found: dict[str, SolverSpec] = {}
    for family in _FAMILIES:
        for path in sorted((root / family).rglob("*.py")):
            text = path.read_text(encoding="utf-8")
            if f"@{_MARK}(" not in text:
                continue
            module = ".".join(path.relative_to(root.parent).with_suffix("").parts)
            for spec in _registrations(_decorations(text), module):
                found[spec.name] = spec
    return found


def _decorations(text: str) -> ast.Module:
    """The module-level ``@register_solver(...)`` decorations of ``text``, each on a stub
    function: parsing them alone, not the whole solver module, keeps the scan at a few
    milliseconds (the 18 solver modules parsed whole took 70 ms at every command's start)."""
    stubs = []
    for found in re.finditer(rf"^@{_MARK}\(", text, flags=re.MULTILINE):
        depth, end = 0, None
        tokens = tokenize.generate_tokens(io.StringIO(text[found.start() + 1 :]).readline)
        for tok in tokens:
            if tok.type == tokenize.OP and tok.string in "([{":
                depth += 1
            elif tok.type == tokenize.OP and tok.string in ")]}":
                depth -= 1
                if depth == 0:
                    end = tok.end
                    break
        if end is not None:
            lines = text[found.start() + 1 :].splitlines()[: end[0]]
            lines[-1] = lines[-1][: end[1]]
            stubs.append("@" + "\n".join(lines) + "\ndef _stub(): pass\n")
    return ast.parse("".join(stubs))


def _registrations(tree: ast.Module, module: str) -> list[SolverSpec]:
    """The ``@register_solver(...)`` decorations of ``tree``'s module-level functions."""
    out = []
    for node in tree.body:
        if not isinstance(node, ast.FunctionDef):
            continue
        for deco in node.decorator_list:
            if isinstance(deco, ast.Call) and getattr(deco.func, "id", None) == _MARK:
                kw = {k.arg: k.value for k in deco.keywords}
                problems = kw["problems"]
                assert isinstance(problems, ast.Tuple)
                out.append(
                    SolverSpec(
                        ast.literal_eval(deco.args[0]),
                        tuple(ast.unparse(e).rsplit(".", 1)[-1] for e in problems.elts),
                        module,
                        ast.literal_eval(kw["default"]) if "default" in kw else False,
                        tuple(ast.literal_eval(kw["aliases"])) if "aliases" in kw else (),
                    )
                )
    return out
