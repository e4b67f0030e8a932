"""Shared plumbing of the scheduling baselines: their keyword front doors, the start-step
window, and verify, score, report and package a schedule.

Every baseline is ``solve(problem, options) -> SolveResult`` on a
:class:`~twill.sched.gaus.problem.GauSProblem` (solution a
:class:`~twill.sched.gaus.result.GauSSchedule`, the run record in ``stats``); every schedule
passed :func:`twill.sched.gaus.verify.schedule_violations`: nothing unverified is returned.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import numpy as np

from twill.errors import InvalidProblemError, VerificationError
from twill.options import SolverOptions
from twill.progress import ProgressEvent, emit
from twill.results import SolveResult, Status
from twill.sched.gaus.bounds import default_D, modulo_asap
from twill.sched.gaus.graph import GauSGraph, asap_alap, topological_generations
from twill.sched.gaus.problem import GauSProblem
from twill.sched.gaus.result import GauSSchedule, run_result
from twill.sched.gaus.verify import discrete_objective, schedule_violations
from twill.sched.ir import DependenceGraph

__all__ = [
    "StartWindow",
    "keyword_front_door",
    "keyword_problem",
    "package",
    "problem_window",
    "solve_placed",
    "RunSpec",
    "reported",
    "start_window",
    "verified_starts",
]


def keyword_problem(
    g: DependenceGraph,
    formulation: str,
    D: int | None,
    II: int | None,
    ratio: float,
    R_cap: float | None = None,
) -> GauSProblem:
    """The problem a baseline's keyword front door describes (``II`` counts in C only, as
    before the problem type existed)."""
    return GauSProblem(g, formulation, D, II if formulation == "C" else None, R_cap, ratio)


def keyword_front_door(
    run: Callable[[GauSProblem, SolverOptions | None], SolveResult], name: str
) -> Callable[..., SolveResult]:
    """The keyword function ``name(g, formulation="A", *, D=None, II=None, ratio=100.0,
    R_cap=None, options=None)`` of a baseline without knobs of its own: ``run`` on the
    problem the keywords describe (``II`` counts in formulation C only)."""

    def front(
        g: DependenceGraph,
        formulation: str = "A",
        *,
        D: int | None = None,
        II: int | None = None,
        ratio: float = 100.0,
        R_cap: float | None = None,
        options: SolverOptions | None = None,
    ) -> SolveResult:
        return run(keyword_problem(g, formulation, D, II, ratio, R_cap), options)

    front.__name__ = front.__qualname__ = name
    front.__doc__ = f"""``run`` of :mod:`{run.__module__}` on the problem these keywords
    describe (``II``: formulation C only)."""
    return front


def problem_window(problem: GauSProblem, method: str, start: float) -> StartWindow | SolveResult:
    """Check ``problem`` (every defect at once), then its :func:`start_window`."""
    problem.check()
    return start_window(problem.arrays, method, problem.formulation, problem.steps,
                        problem.modulo_II, problem.ratio, start)  # fmt: skip


def solve_placed(
    problem: GauSProblem,
    options: SolverOptions | None,
    method: str,
    place: Callable[
        [GauSGraph, StartWindow, str, int | None, float], tuple[np.ndarray | None, str]
    ],
) -> SolveResult:
    """The run of a one-shot placer: check, window, ``place(g, window, formulation, II,
    ratio)``, verify and package, reported to ``options.on_progress``."""
    start = time.perf_counter()
    window = problem_window(problem, method, start)
    if isinstance(window, SolveResult):
        return reported(window, options)
    g = problem.arrays
    t, msg = place(g, window, problem.formulation, problem.modulo_II, problem.ratio)
    return reported(package(g, t, window.spec, msg), options)


def reported(result: SolveResult, options: SolverOptions | None) -> SolveResult:
    """``result`` after its last progress event (``phase="done"``) went to
    ``options.on_progress``."""
    if options is not None:
        emit(options.on_progress, ProgressEvent(
            "done", seconds=result.seconds, incumbent=result.objective, method=result.method,
            step=result.iterations, bound=result.bound, message=result.status.value))  # fmt: skip
    return result


@dataclass(frozen=True)
class RunSpec:
    """One baseline run as its result reports it: the method's name, the formulation, the
    latency bound ``D``, ``II`` (formulation C), the resource weight ``ratio`` (A) and the
    clock reading ``start`` its seconds count from."""

    method: str
    formulation: str
    D: int
    II: int | None
    ratio: float
    start: float

    @property
    def modulo_II(self) -> int | None:
        """``II`` in formulation C, else ``None``."""
        return self.II if self.formulation == "C" else None


@dataclass(frozen=True)
class StartWindow:
    """Where every op may start, as all baselines compute it before they schedule.

    ``asap`` is raised to the modulo ASAP (recurrences at ``II``) for formulation C; ``spec``
    is the run that :func:`package` reports.
    """

    D: int
    asap: np.ndarray
    alap: np.ndarray
    gens: list[np.ndarray]
    spec: RunSpec


def start_window(
    g: GauSGraph,
    method: str,
    formulation: str,
    D: int | None,
    II: int | None,
    ratio: float,
    start: float,
) -> StartWindow | SolveResult:
    """The ASAP/ALAP window of ``g`` at latency bound ``D`` (default: formulation's default),
    or an INFEASIBLE result when no schedule fits (``D`` too small, or ``II`` below RecMII).

    Raises
    ------
    InvalidProblemError
        For formulation C without ``II`` (a ``ValueError``).
    """
    if formulation == "C" and II is None:
        raise InvalidProblemError("formulation C needs II")
    D = int(D) if D is not None else default_D(g, formulation, II)
    gens = topological_generations(g)
    asap, alap = asap_alap(g, D, gens)
    spec = RunSpec(method, formulation, D, II, ratio, start)
    if np.any(asap > alap):
        return package(g, None, spec, f"infeasible at D={D}", status=Status.INFEASIBLE,
                       infeasible_cause="D")  # fmt: skip
    if formulation == "C":
        masap = modulo_asap(g, II)  # type: ignore[arg-type]
        if masap is None:
            return package(g, None, spec, f"infeasible at II={II}: RecMII > II",
                           status=Status.INFEASIBLE, infeasible_cause="II")  # fmt: skip
        asap = np.maximum(asap, masap)
    return StartWindow(D, asap, alap, gens, spec)


def verified_starts(
    g: GauSGraph,
    method: str,
    place: Callable[..., tuple[np.ndarray | None, str]],
    formulation: str,
    D: int,
    II: int | None,
    ratio: float,
) -> np.ndarray | None:
    """A baseline's schedule of the array view ``g`` (``place(g, window, formulation, II,
    ratio)`` in its :func:`start_window`): the start steps, verified (a violation is a bug:
    ``VerificationError``), or ``None`` when it found none. GauS's own comparisons and the
    large-neighbourhood search's starts use it on the view they already hold."""
    II = II if formulation == "C" else None
    window = start_window(g, method, formulation, D, II, ratio, time.perf_counter())
    if not isinstance(window, StartWindow):
        return None
    t, _ = place(g, window, formulation, II, ratio)
    if t is not None and (bad := schedule_violations(g, t, window.D, II)):
        raise VerificationError(bad, what=f"{method} schedule of {g.name}")
    return None if t is None else t.astype(np.int64)


def package(
    g: GauSGraph,
    t: np.ndarray | None,
    spec: RunSpec,
    message: str,
    *,
    status: Status | None = None,
    **stats: Any,
) -> SolveResult:
    """Verify ``t`` (if any: raises ``VerificationError`` on a bug) and build the result of
    run ``spec`` (``stats`` join its run record; a ``bound`` becomes the result's)."""
    obj, solution, II = None, None, spec.modulo_II
    if t is not None:
        bad = schedule_violations(g, t, spec.D, II)
        if bad:
            raise VerificationError(bad, what=f"{spec.method} schedule of {g.name}")
        obj = discrete_objective(g, t, spec.formulation, D=spec.D, II=spec.II, ratio=spec.ratio)
        solution = GauSSchedule(g.schedule_dict(t), spec.formulation, spec.D, II)
    if status is None:
        status = Status.FEASIBLE if t is not None else Status.UNKNOWN
    bound = stats.pop("bound", None)
    record = {"method": spec.method, "formulation": spec.formulation, "graph": g.name,
              "II": II, "D": spec.D, "message": message, **stats}  # fmt: skip
    return run_result(status, solution, obj, record, bound=bound,
                      seconds=time.perf_counter() - spec.start)  # fmt: skip
