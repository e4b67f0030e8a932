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
``"modulo"`` (Phase 1 alone) or ``"modulo+warp-specialisation"``.

Examples
--------
>>> from twill.kernels import flash_attention_forward_simplified
>>> r = solve(WarpSpecProblem(flash_attention_forward_simplified(), max_II=5))
>>> r.status.value, r.objective, r.solution.L
('optimal', 2, 4)
"""

from __future__ import annotations

import time
from collections.abc import Mapping
from dataclasses import dataclass, field, replace
from typing import Any

from twill.errors import InvalidProblemError
from twill.options import SolverOptions
from twill.results import SolveResult, Status, WarpSchedule
from twill.sched.exact import search
from twill.sched.exact.search import (
    CertificateEntry,
    SearchResult,
    search_as_result,
    search_result_fields,
)
from twill.sched.exact.settings import twill_settings
from twill.sched.ir import DependenceGraph
from twill.sched.problems import (
    PROBLEM_MODULO,
    PROBLEM_WARP_SPECIALISATION,
    ModuloProblem,
    WarpSpecProblem,
    has_warp_model,
)

__all__ = ["TwillResult", "run", "solve"]


@dataclass(frozen=True)
class TwillResult:
    """Answer of :func:`run` (and of :func:`twill.twill_solver.twill_solve`).

    Attributes
    ----------
    status
        OPTIMAL (I proven minimum), FEASIBLE (a schedule, I not proven), INFEASIBLE (no
        schedule up to ``max_I``, proven) or UNKNOWN.
    I
        Initiation interval found (``None`` without a schedule).
    optimal
        True only with a complete certificate: every smaller I below MII or proven infeasible.
    L
        Schedule length at ``I``; ``L_optimal`` says whether it is proven minimal.
    schedule
        Operation name -> start cycle (``M``, minimum 0).
    certificate
        One :class:`~twill.sched.exact.search.CertificateEntry` per I below the answer.
    seconds
        Total wall time.
    extra
        Fields added by later steps (merged into :meth:`to_dict`).
    warp_schedule
        The verified joint answer of Phase 2 as one value (``None`` without one): what
        :mod:`twill.codegen` and :mod:`twill.visualization` take.
    problem
        The problem ``I``, ``optimal`` and the certificate refer to: :data:`PROBLEM_MODULO`
        (Phase 1 only) or :data:`PROBLEM_WARP_SPECIALISATION` (Phase 2 ran).
    """

    status: Status
    I: int | None
    optimal: bool
    L: int | None
    schedule: dict[str, int] | None
    certificate: tuple[CertificateEntry, ...]
    seconds: float
    backend: str
    graph: str
    res_mii: int
    rec_mii: int
    L_optimal: bool = False
    phase1: SearchResult | None = field(default=None, repr=False, compare=False)
    extra: Mapping[str, Any] = field(default_factory=dict)
    warp_schedule: WarpSchedule | None = field(default=None, repr=False, compare=False)
    problem: str = PROBLEM_MODULO

    def __repr__(self) -> str:
        return (
            f"TwillResult(graph={self.graph!r}, problem={self.problem!r}, "
            f"status={self.status.value!r}, I={self.I}, optimal={self.optimal}, L={self.L}, "
            f"ops={len(self.schedule or {})}, seconds={self.seconds:.3f})"
        )

    @property
    def mii(self) -> int:
        return max(self.res_mii, self.rec_mii)

    @property
    def warps(self) -> dict[str, int] | None:
        """Op -> (first) warp slot of the verified Phase-2 answer; ``None`` without one
        (``phase2=False``, or Phase 2 found no joint schedule)."""
        warps = self.extra.get("warps")
        return dict(warps) if warps else None

    def to_dict(self) -> dict[str, Any]:
        """JSON-ready dictionary (the CLI's ``--json`` object).

        A modulo-only answer carries ``warps: None`` (no warp model), ``points: []`` and
        ``phase1_I`` equal to ``I``, so both problems share one set of fields.
        """
        base = {"warps": None, "points": [], "phase1_I": self.I}
        return {"graph": self.graph, "problem": self.problem, **search_result_fields(self),
                **base, **self.extra}  # fmt: skip

    def as_result(self) -> SolveResult:
        """The shared result shape; the solution is the :class:`~twill.results.WarpSchedule`
        when Phase 2 found one, else the Phase-1 schedule."""
        return search_as_result(self, self.warp_schedule)


def solve(problem: ModuloProblem, options: SolverOptions | None = None) -> SolveResult:
    """Twill on ``problem``: the minimum-I schedule (and, with Phase 2, its warp assignment)
    with a proof of optimality, in the shared shape (:meth:`TwillResult.as_result`: the
    :class:`~twill.results.WarpSchedule` when Phase 2 found one, else the modulo schedule;
    objective ``I``)."""
    return run(problem, options).as_result()


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
    t0 = time.perf_counter()
    options = (options or SolverOptions()).start()
    s = twill_settings(options)
    problem.check()  # step 1: every defect at once
    if problem.min_II is not None:
        raise InvalidProblemError("Twill searches from MII: leave min_II None",
                                  source=problem.graph.name)  # fmt: skip
    graph = problem.graph
    run_phase2 = has_warp_model(graph) if s.phase2 is None else s.phase2
    cold = replace(s, warm_start=s.warm_start and not run_phase2)  # Phase 2 starts from
    p1 = search.search_min_ii(
        graph, replace(options, twill=cold), max_I=problem.max_II, check=False
    )  # Phase 1's schedule (step 2); checked above
    result = _package(graph, p1, t0)
    if run_phase2:  # step 3: Phase 2
        result = replace(result, problem=PROBLEM_WARP_SPECIALISATION)
        if p1.schedule is not None:
            result = _phase2(problem, options, p1, result)
    _verify(result, graph)  # step 4: verified once, before anything is returned or shown
    return result


def _phase2(
    problem: ModuloProblem, options: SolverOptions, p1: SearchResult, result: TwillResult
) -> TwillResult:
    """Algorithm 1 from the finished Phase 1, inside the same deadline, merged into
    ``result``."""
    from twill.sched.exact.algorithm1 import algorithm1, merge_into

    rules = problem.rules if isinstance(problem, WarpSpecProblem) else None
    alg = algorithm1(problem.graph, options, phase1=p1, max_I=problem.max_II, rules=rules)
    return merge_into(result, alg, problem.graph)


def _verify(result: TwillResult, graph: DependenceGraph) -> None:
    """The one verification on the way out: the joint answer, else the Phase-1 schedule."""
    what = f"Twill schedule of {graph.name}"
    ws = result.warp_schedule
    if ws is not None:
        WarpSpecProblem(graph).verify(ws).raise_if_invalid(what)
    elif result.schedule is not None and result.I is not None:
        ModuloProblem(graph).verify(result.schedule, result.I).raise_if_invalid(what)


def _package(graph: DependenceGraph, p1: SearchResult, t0: float) -> TwillResult:
    return TwillResult(
        status=p1.status,
        I=p1.I,
        optimal=p1.optimal,
        L=p1.L,
        schedule=dict(p1.schedule) if p1.schedule is not None else None,
        certificate=p1.certificate,
        seconds=time.perf_counter() - t0,
        backend=p1.backend,
        graph=graph.name,
        res_mii=p1.res_mii,
        rec_mii=p1.rec_mii,
        L_optimal=p1.L_optimal,
        phase1=p1,
    )
