"""The solver registry and ``twill.solve``, the one entry (issue 51; src/twill/registry.py)."""

from __future__ import annotations

import math
import subprocess
import sys
from dataclasses import dataclass

import pytest

import twill
from twill.errors import InvalidProblemError, TwillError
from twill.options import MethodSettings, SolverOptions, method_settings
from twill.registry import register_solver, solver, solvers
from twill.results import SolveResult, Status


# -- the ten-line example solver of docs/architecture.md ------------------------------------
@dataclass(frozen=True)
class SquareRootProblem:
    """Find x >= 0 with x * x = value."""

    value: float


@register_solver("newton", problems=(SquareRootProblem,), default=True)
def solve(problem: SquareRootProblem, options: SolverOptions | None = None) -> SolveResult:
    x = max(problem.value, 1.0)
    for _ in range(60):
        x = (x + problem.value / x) / 2
    return SolveResult(Status.FEASIBLE, solution=x, objective=x, objective_unit="x")


# -- with its own settings: one class that names its slot, no edit to SolverOptions ---------
@dataclass(frozen=True)
class NewtonSettings(MethodSettings, slot="newton_steps"):
    steps: int = 60


@register_solver("newton-steps", problems=(SquareRootProblem,), settings=NewtonSettings)
def solve_in_steps(problem: SquareRootProblem, options: SolverOptions | None = None) -> SolveResult:
    steps = method_settings(SolverOptions.of(options), "newton_steps", NewtonSettings).steps
    x = max(problem.value, 1.0)
    for _ in range(steps):
        x = (x + problem.value / x) / 2
    return SolveResult(Status.FEASIBLE, solution=x, objective=x, objective_unit="x")


# -------------------------------------------------------------------------------------------


def test_a_solver_with_its_own_settings_needs_no_edit_to_the_options() -> None:
    """A settings class registers its slot where it is defined: ``SolverOptions`` takes it
    by that name, reads it back, checks its type, copies and pickles it."""
    import pickle
    from dataclasses import replace

    one = SolverOptions(method="newton-steps", newton_steps=NewtonSettings(steps=1))
    assert twill.solve(SquareRootProblem(9.0), one).solution == 5.0  # (9 + 9/9) / 2
    assert one.newton_steps == NewtonSettings(steps=1) and SolverOptions().newton_steps is None
    many = replace(one, newton_steps=NewtonSettings())
    assert twill.solve(SquareRootProblem(9.0), many).solution == 3.0
    assert pickle.loads(pickle.dumps(many)) == many
    assert one.to_dict()["newton_steps"] == {"steps": 1}
    with pytest.raises(InvalidProblemError, match="options.newton_steps must be a NewtonSettings"):
        SolverOptions(newton_steps=3)
    with pytest.raises(TypeError, match="unknown setting 'newton_stepz'"):
        SolverOptions(newton_stepz=NewtonSettings())
    with pytest.raises(AttributeError):
        _ = one.newton_stepz


def test_a_solver_registered_outside_the_package_is_reached_by_twill_solve() -> None:
    """Registering is the whole change: no edit to the options, the CLI or the registry."""
    r = twill.solve(SquareRootProblem(2.0))
    assert r.status is Status.FEASIBLE and math.isclose(r.solution, math.sqrt(2))
    assert twill.solve(SquareRootProblem(9.0), SolverOptions(method="newton")).solution == 3.0
    assert "newton" in {s.name for s in solvers(SquareRootProblem(1.0))}


def test_every_family_has_its_default() -> None:
    from twill.kernels import flash_attention_forward_simplified
    from twill.mapping.arch import gemmini_arch
    from twill.mapping.problems import LayerMappingProblem
    from twill.mapping.workload import Layer
    from twill.registry import default_solver
    from twill.sched.exact.pinned import PinnedProblem, Pins
    from twill.sched.problems import ModuloProblem, WarpSpecProblem

    g = flash_attention_forward_simplified()
    assert default_solver(ModuloProblem(g)).name == "twill"
    assert default_solver(WarpSpecProblem(g)).name == "twill"
    pinned = PinnedProblem(g, pins=Pins({"S": 0, "P": 0, "O": 1}, (), {"O": (1,)}))
    assert default_solver(pinned).name == "pinned"  # the nearest class's default
    layer = LayerMappingProblem(Layer("fc", {"P": 8, "C": 32, "K": 32}), gemmini_arch())
    assert default_solver(layer).name == "cosa"


def test_twill_solve_runs_the_named_exact_solver_and_verifies() -> None:
    from twill.kernels import flash_attention_forward_simplified
    from twill.sched.problems import WarpSpecProblem

    problem = WarpSpecProblem(flash_attention_forward_simplified(), max_II=5)
    r = twill.solve(problem, SolverOptions(time_limit=300, method="twill"))
    assert r.status is Status.OPTIMAL and r.objective == 2
    assert not problem.verify(r.solution).violations


@pytest.mark.parametrize(
    ("problem", "options", "words"),
    [
        (None, None, "problem must be one of"),
        ("g.json", None, "found str"),
        (SquareRootProblem(1.0), "cosa", "options must be a SolverOptions"),
        (SquareRootProblem(1.0), SolverOptions(method="nope"), "unknown method 'nope'"),
        (SquareRootProblem(1.0), SolverOptions(method="cosa"), "solves LayerMappingProblem"),
    ],
)
def test_bad_calls_are_typed_errors_naming_the_argument(problem, options, words) -> None:
    with pytest.raises(TwillError, match=words):
        twill.solve(problem, options)


def test_wrong_types_are_type_errors() -> None:
    with pytest.raises(TypeError):
        twill.solve(None)
    with pytest.raises(TypeError):
        SolverOptions(method=3)
    with pytest.raises(InvalidProblemError):
        solver("nope")


def test_aliases_of_the_command_line_resolve() -> None:
    assert solver("force").name == "force-directed"
    assert solver("exact").name == "exact-cpsat"


def test_the_registry_imports_no_solver_until_one_is_called() -> None:
    """Listing solvers reads their registrations from source: torch, z3 and OR-Tools stay
    unloaded (a ``twill map`` must not pay for GauS's imports)."""
    code = (
        "import sys, twill.registry as r\n"
        "names = [s.name for s in r.solvers()]\n"
        "assert len(names) >= 18, names\n"
        "heavy = {'torch', 'z3', 'ortools', 'pulp'} & set(sys.modules)\n"
        "assert not heavy, heavy\n"
    )
    subprocess.run([sys.executable, "-c", code], check=True, timeout=120)


def test_the_scan_agrees_with_the_imported_registrations() -> None:
    """What the source scan read is what the decorators register once imported (the
    decorator raises on a disagreement; loading every solver exercises all of them)."""
    for spec in solvers():
        loaded = spec.load()
        assert loaded == spec and loaded.function is not None
