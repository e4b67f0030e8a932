"""GauS formulation C as a second incumbent source for large loops (issue 43, item 1).

Rau's iterative modulo scheduling (:mod:`.ims`) gives the first incumbent in well under a
second, but on large loops with tight recurrences its ``I`` can sit above what a schedule
needs. GauS (:mod:`twill.sched.gaus`) in formulation C optimises a modulo schedule at a fixed
``II`` by gradient descent and legalises it; :func:`improve_with_gaus` asks it for a schedule
at ``II = I - 1, I - 2, ...`` below the current incumbent, within a time budget, and keeps
the best one that the independent verifier (:func:`twill.sched.verify.verify_modulo_schedule`)
accepts. It never replaces a better incumbent and makes no optimality claim.

Cost, measured (docs/benchmarks.md): importing torch and building GauS's model take seconds,
and a 900-op loop needs about 10 s per ``II``; so it runs only on loops of
:data:`GAUS_MIN_OPS` or more operations whose incumbent is above MII.
"""

from __future__ import annotations

import logging
import time
import warnings

from twill.sched.heuristics.ims import HeuristicSchedule
from twill.sched.ir import DependenceGraph
from twill.sched.verify import verify_modulo_schedule

__all__ = ["GAUS_MIN_OPS", "improve_with_gaus"]

log = logging.getLogger(__name__)

GAUS_MIN_OPS = 500  # smaller loops: IMS is at the optimum or the exact search closes fast


def improve_with_gaus(
    graph: DependenceGraph, incumbent: HeuristicSchedule, mii: int, budget: float
) -> HeuristicSchedule:
    """The better of ``incumbent`` and GauS-C schedules at ``II < incumbent.I`` (``>= mii``).

    ``II`` is lowered by one after each verified success and the search stops at the first
    ``II`` without one or when ``budget`` seconds are spent (each GauS call gets what is
    left: its ``time_limit`` bounds it; the torch import comes before the budget starts).
    The returned schedule has ``method = "gaus-C"`` when GauS won; ``seconds`` counts both
    heuristics and the import.
    """
    started = time.perf_counter()
    from twill.options import SolverOptions
    from twill.sched.gaus import losses  # noqa: F401  torch (seconds): imported before the
    from twill.sched.gaus.problem import GauSProblem  # budget starts, not in GauS's limit
    from twill.sched.gaus.solver import solve

    t0 = time.perf_counter()
    best = incumbent
    tried = list(incumbent.tried)
    ii = incumbent.I - 1
    while ii >= mii and (left := budget - (time.perf_counter() - t0)) > 0.5:
        with warnings.catch_warnings():  # "no legal schedule" is an answer here, not a warning
            warnings.simplefilter("ignore")
            r = solve(GauSProblem(graph, "C", None, ii), SolverOptions(time_limit=left, seed=0))
        ok = r.solution is not None and not verify_modulo_schedule(graph, r.solution, ii)
        tried.append((ii, ok))
        if not ok:
            break
        low = min(r.solution.values())
        schedule = {n: int(t) - low for n, t in r.solution.items()}
        length = max(schedule[i.name] + i.cycles for i in graph.instructions)
        best = HeuristicSchedule(ii, schedule, length, "gaus-C", 0.0)
        ii -= 1
    log.info("GauS-C incumbent %s: I=%d (IMS %d), %d II tried", graph.name, best.I,
             incumbent.I, len(tried) - len(incumbent.tried))  # fmt: skip
    seconds = incumbent.seconds + (time.perf_counter() - started)
    return HeuristicSchedule(best.I, best.schedule, best.L, best.method, seconds, tuple(tried),
                             (incumbent.I, incumbent.seconds))  # fmt: skip
