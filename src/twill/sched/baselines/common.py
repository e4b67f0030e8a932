"""Shared plumbing of the scheduling baselines: their keyword front doors, the start-step
window, and verify, score, report and package a schedule.

Every baseline is ``solve(problem, options) -> SolveResult`` on a
:class:`~twill.sched.gaus.problem.GauSProblem`, with ``run(problem, options)`` returning the
:class:`~twill.sched.gaus.result.ScheduleRunResult` it is made from; every schedule passed
:func:`twill.sched.gaus.verify.schedule_violations`: nothing unverified is returned.
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
from twill.results import Status
from twill.sched.gaus.bounds import default_D, modulo_asap
from twill.sched.gaus.graph import GauSGraph, asap_alap, topological_generations
from twill.sched.gaus.problem import GauSProblem
from twill.sched.gaus.result import ScheduleRunResult
from twill.sched.gaus.verify import discrete_objective, schedule_violations
from twill.sched.ir import DependenceGraph

__all__ = [
    "StartWindow",
    "keyword_front_door",
    "keyword_problem",
    "package",
    "problem_window",
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
    run: Callable[[GauSProblem, SolverOptions | None], ScheduleRunResult], name: str
) -> Callable[..., ScheduleRunResult]:
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
    ) -> ScheduleRunResult:
        return run(keyword_problem(g, formulation, D, II, ratio, R_cap), options)

    front.__name__ = front.__qualname__ = name
    front.__doc__ = f"""``run`` of :mod:`{run.__module__}` on the problem these keywords
    describe (``II``: formulation C only)."""
    return front


def problem_window(
    problem: GauSProblem, method: str, start: float
) -> StartWindow | ScheduleRunResult:
    """Check ``problem`` (every defect at once), then its :func:`start_window`."""
    problem.check()
    return start_window(problem.arrays, method, problem.formulation, problem.steps,
                        problem.modulo_II, problem.ratio, start)  # fmt: skip


def reported(result: ScheduleRunResult, options: SolverOptions | None) -> ScheduleRunResult:
    """``result`` after its last progress event (``phase="done"``) went to
    ``options.on_progress``."""
    if options is not None:
        emit(options.on_progress, ProgressEvent(
            "done", seconds=result.seconds, incumbent=result.objective, method=result.method,
            step=result.iterations, bound=result.bound, message=result.status.value))  # fmt: skip
    return result


@dataclass(frozen=True)
class StartWindow:
    """Where every op may start, as all baselines compute it before they schedule.

    ``asap`` is raised to the modulo ASAP (recurrences at ``II``) for formulation C; ``common``
    holds the keyword arguments that :func:`package` needs for this run.
    """

    D: int
    asap: np.ndarray
    alap: np.ndarray
    gens: list[np.ndarray]
    common: dict[str, Any]


def start_window(
    g: GauSGraph,
    method: str,
    formulation: str,
    D: int | None,
    II: int | None,
    ratio: float,
    start: float,
) -> StartWindow | ScheduleRunResult:
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
    common = dict(method=method, formulation=formulation, D=D, II=II, ratio=ratio, start=start)
    if np.any(asap > alap):
        return package(g, None, message=f"infeasible at D={D}", status=Status.INFEASIBLE,
                       infeasible_cause="D", **common)  # fmt: skip
    if formulation == "C":
        masap = modulo_asap(g, II)  # type: ignore[arg-type]
        if masap is None:
            return package(
                g,
                None,
                message=f"infeasible at II={II}: RecMII > II",
                status=Status.INFEASIBLE,
                infeasible_cause="II",
                **common,
            )
        asap = np.maximum(asap, masap)
    return StartWindow(D, asap, alap, gens, common)


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
    *,
    method: str,
    formulation: str,
    D: int,
    II: int | None,
    ratio: float,
    start: float,
    message: str,
    status: Status | None = None,
    **extra: Any,
) -> ScheduleRunResult:
    """Verify ``t`` (if any) and build the result (raises ``VerificationError`` on a bug)."""
    obj = None
    if t is not None:
        bad = schedule_violations(g, t, D, II if formulation == "C" else None)
        if bad:
            raise VerificationError(bad, what=f"{method} schedule of {g.name}")
        obj = discrete_objective(g, t, formulation, D=D, II=II, ratio=ratio)
    if status is None:
        status = Status.FEASIBLE if t is not None else Status.UNKNOWN
    return ScheduleRunResult(
        status=status,
        method=method,
        formulation=formulation,
        graph=g.name,
        schedule=g.schedule_dict(t) if t is not None else {},
        legal=t is not None,
        objective=obj,
        II=II if formulation == "C" else None,
        D=D,
        seconds=time.perf_counter() - start,
        message=message,
        **extra,
    )
