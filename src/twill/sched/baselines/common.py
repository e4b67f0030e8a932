"""Shared plumbing of the scheduling baselines: the start-step window, and verify, score and
package a schedule.

Every baseline returns a :class:`~twill.sched.gaus.result.ScheduleRunResult` whose schedule
passed :func:`twill.sched.gaus.verify.schedule_violations` (house rule 5).
"""

from __future__ import annotations

import time
from dataclasses import dataclass
from typing import Any

import numpy as np

from twill.errors import InvalidProblemError, VerificationError
from twill.results import Status
from twill.sched.gaus.bounds import default_D, modulo_asap
from twill.sched.gaus.graph import GauSGraph, asap_alap, topological_generations
from twill.sched.gaus.result import ScheduleRunResult
from twill.sched.gaus.verify import discrete_objective, schedule_violations

__all__ = ["StartWindow", "package", "start_window"]


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
