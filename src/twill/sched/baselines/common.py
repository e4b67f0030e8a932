"""Shared plumbing of the scheduling baselines: verify, score and package a schedule.

Every baseline returns a :class:`~twill.sched.gaus.result.ScheduleRunResult` whose schedule
passed :func:`twill.sched.gaus.verify.schedule_violations` (house rule 5).
"""

from __future__ import annotations

import time
from typing import Any

import numpy as np

from twill.errors import VerificationError
from twill.results import Status
from twill.sched.gaus.graph import GauSGraph
from twill.sched.gaus.result import ScheduleRunResult
from twill.sched.gaus.verify import discrete_objective, schedule_violations

__all__ = ["package"]


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
