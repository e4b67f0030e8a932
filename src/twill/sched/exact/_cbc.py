"""Running CBC through PuLP and reading its verdict (shared by the Phase-1 models).

PuLP folds CBC's "Stopped on time" with an incumbent into status 1 (Optimal) and tells the
difference only through ``sol_status`` (1 = proven optimal, 2 = integer feasible); a stop
without an incumbent is status 0. Only status -1 is a proof of infeasibility. A CBC run that
ends in an error (seen with limits under a second on large warm-started models) is UNKNOWN.
CBC stopped by a very short limit (in its presolve) has also been seen to answer
"infeasible": so an infeasibility verdict counts only when the run ended before the limit
could have been reached (CBC's clock, CPU time over all threads, cannot exceed wall time x
threads); otherwise it is UNKNOWN. CBC's limit does not cover its presolve and root LP, so a
run still going 2 % + 0.5 s past its limit is killed (UNKNOWN).
"""

from __future__ import annotations

import logging
import time
from typing import Any

from twill._interrupt import solve_pulp
from twill.errors import BackendUnavailableError
from twill.results import Status
from twill.validation import check_time_limit

__all__ = ["run_cbc"]

log = logging.getLogger(__name__)


def run_cbc(prob: Any, time_limit: float | None, threads: int, warm: bool) -> Status:
    """Solve the PuLP problem ``prob`` with CBC; OPTIMAL, FEASIBLE, INFEASIBLE or UNKNOWN."""
    import pulp

    check_time_limit(time_limit)  # CBC reads "-sec nan" as a limit already hit: no proof
    solver = pulp.PULP_CBC_CMD(
        msg=False,
        timeLimit=time_limit,
        threads=threads,
        gapRel=0.0,
        gapAbs=0.0,
        warmStart=warm,
    )
    if not solver.available():  # pragma: no cover - environment
        raise BackendUnavailableError("the CBC binary shipped with PuLP cannot run here")
    started = time.perf_counter()
    # CBC's limit leaves out its presolve and root LP: past the limit plus a margin the run is
    # killed (UNKNOWN, like any verdict that came after the limit could have hit)
    kill_after = None if time_limit is None else time_limit * 1.02 + 0.5
    try:
        solve_pulp(prob, solver, kill_after)
    except pulp.PulpSolverError as exc:  # e.g. CBC dies on a very short limit: no proof
        if kill_after is not None and time.perf_counter() - started >= kill_after:
            # our own stop at the time limit, an expected end: not a warning for the user
            log.info("CBC ran past its %.1f s limit and was stopped: UNKNOWN", time_limit)
        else:
            log.warning("CBC stopped without an answer (%s): UNKNOWN", exc)
        return Status.UNKNOWN
    status, sol = prob.status, prob.sol_status
    if status == pulp.LpStatusOptimal and sol == pulp.LpSolutionOptimal:
        return Status.OPTIMAL
    if status == pulp.LpStatusOptimal and sol == pulp.LpSolutionIntegerFeasible:
        return Status.FEASIBLE
    if status == pulp.LpStatusInfeasible:
        spent = (time.perf_counter() - started) * max(threads, 1)
        if time_limit is not None and spent >= time_limit:
            log.warning("CBC said infeasible after its time limit could have hit: UNKNOWN")
            return Status.UNKNOWN
        return Status.INFEASIBLE
    return Status.UNKNOWN
