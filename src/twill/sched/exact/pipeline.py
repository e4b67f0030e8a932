"""The whole Twill pipeline as one solver: ``solve(problem, options) -> SolveResult``.

1. check the problem (:meth:`twill.sched.problems.ModuloProblem.check`, every defect at once);
2. Phase 1: the minimum initiation interval with a certificate
   (:func:`twill.sched.exact.search.run`);
3. Phase 2, joint modulo scheduling and warp specialisation (Algorithm 1,
   :func:`twill.sched.exact.algorithm1.algorithm1`), when the machine has a warp model
   (:func:`~twill.sched.problems.has_warp_model`) or ``options.twill.phase2`` asks for it;
4. verify the answer once, through the problem's ``verify``, and package it as a
   :class:`TwillResult` (:func:`run`), or in the shared shape (:func:`solve`).

One deadline bounds it all: ``options.time_limit`` is anchored once on entry
(:meth:`twill.options.SolverOptions.start`) and Phase 1, Phase 2 and every solver call inside
them take their time from it, so the whole call ends within the limit plus one solver's
reaction time. The result's ``problem`` says which problem ``optimal`` refers to:
``"modulo"`` (Phase 1 alone), ``"modulo+warp-specialisation"``, or, for a problem with
``single_partition_warps``, the union with one partition
(``"modulo+warp-specialisation|single-partition"``, :mod:`twill.sched.exact.single`).

Examples
--------
>>> from twill.kernels import flash_attention_forward_simplified
>>> r = solve(WarpSpecProblem(flash_attention_forward_simplified(), max_II=5))
>>> r.status.value, r.objective, r.solution.L
('optimal', 2, 4)
"""

from __future__ import annotations

import time
from dataclasses import replace

from twill.errors import InvalidProblemError
from twill.options import SolverOptions
from twill.registry import register_solver
from twill.results import SolveResult
from twill.sched.exact.search import TwillResult, search_min_ii, with_run_settings
from twill.sched.exact.settings import TwillSettings, twill_settings
from twill.sched.ir import DependenceGraph
from twill.sched.problems import (
    PROBLEM_WARP_SPECIALISATION,
    ModuloProblem,
    WarpSpecProblem,
    has_warp_model,
)
from twill.validation import check_instance

__all__ = ["TwillResult", "run", "solve"]


@register_solver("twill", problems=(ModuloProblem,), settings=TwillSettings, default=True)
def solve(problem: ModuloProblem, options: SolverOptions | None = None) -> SolveResult:
    """Twill on ``problem``: the minimum-I schedule (and, with Phase 2, its warp assignment)
    with a proof of optimality, in the shared shape (:meth:`TwillResult.as_result`: the
    :class:`~twill.results.WarpSchedule` when Phase 2 found one, else the modulo schedule;
    objective ``I``)."""
    check_instance(problem, "problem", ModuloProblem)
    return with_run_settings(run(problem, options).as_result(), options)


def run(problem: ModuloProblem, options: SolverOptions | None = None) -> TwillResult:
    """:func:`solve` with Twill's own record (:class:`TwillResult`, what ``twill solve``
    prints and its ``--json`` holds).

    Parameters
    ----------
    problem
        The loop body with its machine; ``max_II`` caps the search (``min_II`` must be
        ``None``); a :class:`~twill.sched.problems.WarpSpecProblem`'s ``rules`` are Phase 2's
        warp model.
    options
        ``time_limit``: the whole call (Phases 1 and 2); ``threads``: the Phase-1 solver's;
        ``workers``: the intervals Phase 2 examines at once; ``on_progress``: a
        :class:`~twill.progress.ProgressEvent` before and after every Phase-1 solve and
        Phase-2 point; ``twill``: :class:`~twill.sched.exact.settings.TwillSettings`.

    Notes
    -----
    Objective: minimum ``I`` (paper §5) of the problem in ``result.problem``, then minimum
    ``L`` at that ``I``. Guarantee: ``optimal`` only with an unbroken chain of proofs below
    ``I``. A limit hit gives the best verified answer found (FEASIBLE, with ``lower_bound``
    and ``gap``) or UNKNOWN, never INFEASIBLE.
    """
    check_instance(problem, "problem", ModuloProblem)
    t0 = time.perf_counter()
    options = SolverOptions.of(options).start()
    s = twill_settings(options)
    problem.check()  # step 1: every defect at once
    options = _reserve_for_verification(options, problem.graph)
    if problem.min_II is not None:
        raise InvalidProblemError("Twill searches from MII: leave min_II None",
                                  source=problem.graph.name)  # fmt: skip
    graph = problem.graph
    run_phase2 = has_warp_model(graph) if s.phase2 is None else s.phase2
    cold = replace(s, warm_start=s.warm_start and not run_phase2)  # Phase 2 starts from
    phase1_options = _phase1_share(options) if run_phase2 else options
    result = search_min_ii(
        graph, replace(phase1_options, twill=cold), max_I=problem.max_II, check=False
    )  # Phase 1's schedule (step 2); checked above
    if run_phase2:  # step 3: Phase 2, Algorithm 1 from the finished Phase 1
        result = replace(result, problem=PROBLEM_WARP_SPECIALISATION, phase1=result)
        if result.schedule is not None:
            from twill.sched.exact.algorithm1 import algorithm1
            from twill.sched.exact.single import solve_union

            rules = problem.rules if isinstance(problem, WarpSpecProblem) else None
            warps = getattr(problem, "single_partition_warps", None)
            if warps is not None and rules is None and not s.probe:  # the union
                result = solve_union(graph, result.phase1, warps, options, max_I=problem.max_II)
            else:
                result = algorithm1(graph, options, phase1=result.phase1,
                                    max_I=problem.max_II, rules=rules)  # fmt: skip
    _verify(result, graph)  # step 4: verified once, before anything is returned or shown
    return replace(result, seconds=time.perf_counter() - t0)


#: The share of a limited budget Phase 1 may take when Phase 2 follows: Phase 2 always builds
#: its sequential witness (linear in the graph, 0.5 s at 3,000 ops) and needs time to improve it.
PHASE1_SHARE = 0.6


def _phase1_share(options: SolverOptions) -> SolverOptions:
    """Phase 1's options when Phase 2 follows: at most :data:`PHASE1_SHARE` of the time left."""
    left = options.remaining()
    return options if left is None else options.child(left * PHASE1_SHARE)


#: Seconds the verification on the way out takes per op and per edge, about 1.5 times what
#: it measures on a 3,000-op graph with 45,000 edges (0.33 s), kept back from the search.
VERIFY_SECONDS_PER_ITEM = 1e-5


def _reserve_for_verification(options: SolverOptions, graph: DependenceGraph) -> SolverOptions:
    """Options whose deadline leaves time for the verification on the way out (linear in the
    graph: :data:`VERIFY_SECONDS_PER_ITEM`; at most half of what is left). Without it a 2 s
    limit on a 3,000-op graph was overrun by the verification's time."""
    left = options.remaining()
    if left is None:
        return options
    need = VERIFY_SECONDS_PER_ITEM * (len(graph.instructions) + len(graph.edges))
    return options.child(max(left / 2, left - need))


def _verify(result: TwillResult, graph: DependenceGraph) -> None:
    """The one verification on the way out: the joint answer, else the Phase-1 schedule."""
    what = f"Twill schedule of {graph.name}"
    ws = result.warp_schedule
    if ws is not None:  # on its own graph: a single partition's spreads the same operations
        WarpSpecProblem(ws.graph).verify(ws).raise_if_invalid(what)
    elif result.schedule is not None and result.I is not None:
        ModuloProblem(graph).verify(result.schedule, result.I).raise_if_invalid(what)
