"""Twill Algorithm 1: the joint search over (I, L) (paper §5, §5.1).

For ``I`` from the proven Phase-1 minimum upward, take Phase 1's optimal length ``LEN(M)`` at that
``I`` and try Phase 2 (:func:`~twill.sched.exact.phase2.swp_and_ws`) on every ``L`` of the window
``[LEN(M), I * ceil(LEN(M) / I)]`` (the lengths that keep the copy count ``n``). The first
satisfiable point wins. By default a window is searched on one incremental solver with one
refutation (:mod:`.phase2_window`: the satisfiable lengths of a window form a suffix, so an
unsat answer at ``L`` covers the window up to ``L``); ``window="scan"`` is the paper's loop of
one solve per length. Every solver call is recorded with its answer (``sat``, ``unsat``,
``unknown``; Phase 1 answers ``p1_infeasible`` / ``p1_unknown`` when it has no schedule at that
``I``), the lengths an unsat answer covers, and its time. The answer is called optimal only
when Phase 1's minimum is proven and every earlier window is proven empty (unsat, or Phase-1
infeasible), each with Phase 1's proven-minimal ``LEN(M)`` (which fixes the window); one
``unknown`` makes it "feasible, optimality unproven".

Termination: the paper's loop has no exit for a structurally unsatisfiable graph (e.g. an
ablation). Here ``I`` is capped (``max_I``, default: Phase 1's serial cap, where a Phase-1
schedule certainly exists, at least the Phase-1 minimum plus 4, and at least the ``I`` of a
verified one-iteration-at-a-time joint schedule (:mod:`.witness`), where Phase 2 is certainly
satisfiable; if time limits leave the search without an answer, that schedule is returned as
FEASIBLE), and ``probe=True`` runs
only the first window (the Phase-1 optimal ``I``), so an unsatisfiable model ends with INFEASIBLE
and the list of points proven unsat.

Preconditions: the graph passed :func:`twill.sched.validate.check_graph`.
"""

from __future__ import annotations

import logging
import time
from collections import deque
from collections.abc import Callable, Iterator
from contextlib import closing
from dataclasses import dataclass, fields, replace
from typing import Any

from twill.deadline import NO_DEADLINE, Deadline
from twill.options import SolverOptions
from twill.progress import ProgressEvent, emit
from twill.registry import register_solver
from twill.results import SolveResult, Status, WarpSchedule
from twill.sched.exact.phase1 import solve_phase1
from twill.sched.exact.phase2 import Phase2Result, swp_and_ws
from twill.sched.exact.phase2_window import WindowOutcome, solve_window
from twill.sched.exact.search import TwillResult, search_min_ii, serial_ii_cap, with_run_settings
from twill.sched.exact.settings import TwillSettings, twill_options, twill_settings
from twill.sched.exact.witness import SequentialWitness, sequential_witness
from twill.sched.ir import DependenceGraph
from twill.sched.problems import PROBLEM_WARP_SPECIALISATION, WarpSpecProblem
from twill.sched.verify_warps import WarpRules, program_shape
from twill.validation import check_instance, check_int

__all__ = ["SearchPoint", "algorithm1", "length_window"]

log = logging.getLogger(__name__)


@dataclass(frozen=True)
class SearchPoint:
    """One ``(I, L)`` point of Algorithm 1 and its answer."""

    I: int
    L: int | None
    answer: str
    seconds: float
    variables: int = 0
    clauses: int = 0
    pb_constraints: int = 0
    from_L: int | None = None  # an unsat answer that covers every length from from_L to L

    @property
    def proven_empty(self) -> bool:
        return self.answer in ("unsat", "p1_infeasible")

    @property
    def lengths(self) -> str:
        """``L``, or ``from_L..L`` for an answer that covers a range of lengths."""
        return f"{self.from_L}..{self.L}" if self.from_L is not None else str(self.L)

    def to_dict(self) -> dict[str, Any]:
        return {f.name: getattr(self, f.name) for f in fields(self)} | {
            "seconds": round(self.seconds, 4)
        }

    def __str__(self) -> str:
        where = f"I={self.I}" + (f", L={self.lengths}" if self.L is not None else "")
        return f"({where}): {self.answer} in {self.seconds:.3f} s"


def length_window(ii: int, length: int) -> range:
    """``[LEN(M), I * ceil(LEN(M) / I)]``: the lengths that keep ``n = ceil(L / I)`` fixed."""
    return range(length, ii * -(-length // ii) + 1)


def _point(r: Phase2Result, low: int | None = None) -> SearchPoint:
    st = r.statistics
    covers = low if r.answer == "unsat" and low is not None and low < r.L else None
    return SearchPoint(r.I, r.L, r.answer, r.seconds, st["variables"], st["clauses"],
                       st["pb_constraints"], covers)  # fmt: skip


Checks = list[tuple[Phase2Result, int | None]]


def _scan_window(
    job: _WindowJob, ii: int, length: int, hint: dict[str, int] | None
) -> tuple[WindowOutcome, Checks]:
    """The paper's literal loop: one fresh Phase-2 solve per length, in increasing order."""
    checks: Checks = []
    proven = True
    for length_try in length_window(ii, length):
        r = swp_and_ws(job.graph, ii, length_try, job.options(), rules=job.rules,
                       hint=hint if length_try == length else None)  # fmt: skip
        checks.append((r, None))
        if r.answer == "sat":
            return WindowOutcome(length, length_try, "sat", (), r, proven), checks
        proven = proven and r.answer == "unsat"
    top = length_window(ii, length)[-1]
    return WindowOutcome(length, top, "unsat" if proven else "unknown", (), None, False), checks


@register_solver("algorithm1", problems=(WarpSpecProblem,), settings=TwillSettings)
def solve(problem: WarpSpecProblem, options: SolverOptions | None = None) -> SolveResult:
    """Algorithm 1 on ``problem``: the minimum-I joint modulo schedule and warp assignment
    (:func:`run` in the shared shape: the :class:`~twill.results.WarpSchedule`, objective
    ``I``).

    >>> from twill.kernels import flash_attention_forward_simplified
    >>> r = solve(WarpSpecProblem(flash_attention_forward_simplified()))
    >>> r.status.value, r.objective, r.solution.L
    ('optimal', 2, 4)
    """
    check_instance(problem, "problem", WarpSpecProblem)
    return with_run_settings(run(problem, options).as_result(), options)


def run(problem: WarpSpecProblem, options: SolverOptions | None = None) -> TwillResult:
    """:func:`solve` with Algorithm 1's own record (every point, the phase times).

    ``problem.max_II`` caps the search, ``problem.rules`` is the warp model. ``options``: the
    deadline (``time_limit``: the whole search, Phase 1 included), ``threads`` (the Phase-1
    solver's), ``workers`` (intervals examined at once), ``on_progress`` and ``twill``
    (``backend``, ``solve_time_limit``, ``point_time_limit``, ``probe``,
    ``phase2_encoding``, ``symmetry_breaking``, ``window``).
    """
    check_instance(problem, "problem", WarpSpecProblem)
    options = SolverOptions.of(options).start()
    problem.check()
    return algorithm1(problem.graph, options, max_I=problem.max_II, rules=problem.rules)


def algorithm1(
    graph: DependenceGraph,
    options: SolverOptions | None = None,
    *,
    phase1: TwillResult | None = None,
    max_I: int | None = None,
    rules: WarpRules | None = None,
) -> TwillResult:
    """Minimum-I joint modulo schedule + warp assignment (Twill Algorithm 1).

    Parameters
    ----------
    graph
        Dependence graph (checked).
    options
        ``time_limit``: a deadline that the whole search (its own Phase 1 included) never
        outlives: each solver call gets the smaller of its limit and the time left; when
        none is left the search stops, UNKNOWN unless a joint schedule was found.
        ``threads``: the minimum-I search's CP-SAT threads (more than one may return another
        schedule of the same proven ``L``, hence possibly another valid Phase-2 answer).
        ``workers``: above one, how many ``I`` are examined at once: the next ``I`` run
        speculatively in worker processes, each alone and single-threaded, so every answer
        and proof is the one of a sequential run (the phase seconds are then summed over
        overlapping work; CP-SAT backend only). The workers are spawned, so a script that
        calls this at its top level needs ``if __name__ == "__main__":``, as with any
        ``multiprocessing`` use. ``seed``: the SAT core's. ``on_progress``: called with a
        :class:`twill.progress.ProgressEvent` (``phase="phase2"``) before and after every
        ``(I, L)`` point (progress display; the core never prints). ``twill``
        (:class:`~twill.sched.exact.settings.TwillSettings`): ``backend`` and
        ``solve_time_limit`` of Phase 1; ``point_time_limit``, seconds per Phase-2 point
        (hit: ``unknown``, never unsat); ``phase2_encoding`` and ``symmetry_breaking`` (as
        for :func:`~twill.sched.exact.phase2.swp_and_ws`); ``probe``, only the window at the
        Phase-1 optimal ``I`` (ablations, unsat inputs); ``window``, how each length window
        is searched: ``"monotone"`` on one incremental solver, with one refutation per
        window (:mod:`.phase2_window`: satisfiable lengths form a suffix of the window), or
        ``"scan"``, the paper's loop of one solve per length in increasing order (both
        return the same ``I`` and ``L``).
    phase1
        A finished Phase-1 search (:func:`~twill.sched.exact.search.search_min_ii`); run here
        (without warm start) when ``None``.
    max_I
        Largest ``I`` tried (see the module docstring for the default cap).
    rules
        Warp-model settings (default :meth:`WarpRules.for_graph`).

    Returns
    -------
    TwillResult
        The record of the search (``problem``
        :data:`~twill.sched.problems.PROBLEM_WARP_SPECIALISATION`): the joint answer
        (``warp_schedule``), every point (``points``) and the Phase-1 record it started from
        (``phase1``); ``extra`` holds the same as JSON (``warps``, ``assignment``,
        ``points``, ``phase1_I``, ``phase1_L``, ``phase2_status``, ``phase2_reason``, the
        phase seconds).

    Notes
    -----
    Objective: the minimum ``I``, then the first satisfiable ``L`` of its window (no secondary
    objective among models, paper §5). Guarantee: ``optimal`` only with an unbroken chain of
    proofs (Phase-1 certificate + every earlier point unsat). Fails (INFEASIBLE or UNKNOWN) when
    no point up to the cap is satisfiable.

    Examples
    --------
    >>> from twill.kernels import flash_attention_forward_simplified
    >>> r = algorithm1(flash_attention_forward_simplified())
    >>> r.I, r.L, r.optimal, r.schedule
    (2, 4, True, {'S': 0, 'P': 2, 'O': 3})
    """
    options = SolverOptions.of(options).start()
    s = twill_settings(options)
    check_int(max_I, "max_I", none=True)
    on_progress, deadline = options.on_progress, options.clock
    t0 = time.perf_counter()
    clock = t0 - (phase1.seconds if phase1 is not None else 0.0)  # events: since Phase 1 began
    rules = rules or WarpRules.for_graph(graph)
    if phase1 is None:
        cold = replace(options, twill=replace(s, warm_start=False))
        phase1 = search_min_ii(graph, cold, max_I=max_I)
    p1_seconds = phase1.seconds
    p2_seconds = 0.0
    points: list[SearchPoint] = []

    def record(point: SearchPoint) -> None:
        points.append(point)
        emit(on_progress, ProgressEvent("phase2", point.I, time.perf_counter() - clock, L=point.L,
                                        answer=point.answer))  # fmt: skip

    def finish(status: Status, reason: str, final: Phase2Result | None = None,
               optimal: bool = False, l_opt: bool = False) -> TwillResult:  # fmt: skip
        ws = _warp_schedule(final, graph) if final else None
        extra = {"warps": ws.warps if ws else {},
                 "assignment": {v: list(w) for v, w in ws.assignment.items()} if ws else {},
                 "points": [p.to_dict() for p in points], "phase1_I": phase1.I,
                 "phase1_L": phase1.L, "phase2_status": status.value, "phase2_reason": reason,
                 "phase2_seconds": round(p2_seconds, 4),
                 "phase1_seconds": round(p1_seconds, 4)}  # fmt: skip
        return replace(phase1, status=status, I=ws.I if ws else None, L=ws.L if ws else None,
                       schedule=dict(ws.schedule) if ws else None, optimal=optimal,
                       L_optimal=l_opt, seconds=time.perf_counter() - clock, phase1=phase1,
                       extra=extra, warp_schedule=ws, problem=PROBLEM_WARP_SPECIALISATION,
                       points=tuple(points))  # fmt: skip

    if phase1.I is None or phase1.schedule is None or phase1.L is None:
        return finish(phase1.status if phase1.status != Status.ERROR else Status.UNKNOWN,
                      "Phase 1 found no modulo schedule")  # fmt: skip
    proof, (witness, cap) = phase1.optimal, _search_cap(graph, phase1.I, s.probe, max_I, rules)
    job = _WindowJob(graph, s, rules, options.seed, deadline)
    first = (phase1.L, phase1.schedule, phase1.L_optimal)

    def announce(ii: int) -> None:  # before each I is awaited (progress display)
        low = phase1.L if ii == phase1.I else None  # a later I's window needs its Phase 1
        emit(on_progress, ProgressEvent("phase2", ii, time.perf_counter() - clock, L=low))

    with closing(_examined_in_order(job, phase1.I, first, cap, options.workers,
                                    announce)) as examined:  # fmt: skip
        for ex in examined:
            low = ex.outcome.low if ex.outcome is not None else None
            emit(on_progress, ProgressEvent("phase2", ex.ii, time.perf_counter() - clock, L=low))
            p1_seconds += ex.p1_seconds
            if ex.outcome is None:  # no Phase-1 schedule at this I
                record(SearchPoint(ex.ii, None, ex.empty or "p1_unknown", ex.p1_seconds))
                proof = proof and ex.empty == "p1_infeasible"
                continue
            for r, low in ex.checks:
                p2_seconds += r.seconds
                record(_point(r, low))
            if ex.outcome.answer == "sat":
                status = Status.OPTIMAL if proof else Status.FEASIBLE
                why = "every earlier point proven" if proof else "an earlier point is unproven"
                return finish(status, why, ex.outcome.final, optimal=proof,
                              l_opt=ex.len_proven and ex.outcome.first_proven)  # fmt: skip
            # an unsat window proves this I only when LEN(M), hence the window, is exact
            proof = proof and ex.outcome.answer == "unsat" and ex.len_proven
    proven = proof and _all_empty(points, cap)  # every window exact and empty, to the cap
    where = f"the first window (I={phase1.I})" if s.probe else f"I <= {cap}"
    if witness is not None and not proven:  # limits hit: the verified sequential answer
        return finish(Status.FEASIBLE, *_witness_answer(witness, where))
    return finish(*_no_point(proven, where, deadline))


def _all_empty(points: list[SearchPoint], cap: int) -> bool:
    """Every point proven empty, and every ``I`` up to ``cap`` examined."""
    return bool(points) and max(p.I for p in points) >= cap and all(p.proven_empty for p in points)


def _no_point(proven: bool, where: str, deadline: Deadline) -> tuple[Status, str]:
    """Status and reason when no point was satisfiable: INFEASIBLE needs the whole chain
    (every ``I`` up to the cap examined, each window the exact one and empty)."""
    if not proven and deadline.passed():
        return Status.UNKNOWN, f"time limit reached before a satisfiable point for {where}"
    return (Status.INFEASIBLE if proven else Status.UNKNOWN), f"no satisfiable point for {where}"


@dataclass(frozen=True)
class _WindowJob:
    """What examining one ``I`` needs; plain data, so that a worker process can run it."""

    graph: DependenceGraph
    settings: TwillSettings
    rules: WarpRules
    seed: int = 0
    deadline: Deadline = NO_DEADLINE

    def options(self) -> SolverOptions:
        """The options of one solve inside the job (its deadline, seed and settings)."""
        return twill_options(self.settings, self.deadline, seed=self.seed)


@dataclass(frozen=True)
class _Examined:
    """One ``I`` examined: Phase 1 there (unless given), then its length window."""

    ii: int
    p1_seconds: float
    empty: str | None  # ``p1_infeasible`` / ``p1_unknown`` when Phase 1 has no schedule
    len_proven: bool
    outcome: WindowOutcome | None
    checks: Checks


def _begun(job: _WindowJob, ii: int, start: tuple[Any, Any, bool] | None) -> _Examined | _Begun:
    """Phase 1 at ``ii`` (skipped when ``start = (LEN(M), M, LEN proven)`` is given): the
    window it fixes, or ``ii`` examined already (no time left, or Phase 1 has no schedule)."""
    p1_seconds = 0.0
    if job.deadline.expired():
        return _Examined(ii, 0.0, "time_limit", False, None, [])
    if start is None:
        p1, empty = _phase1_at(job.graph, ii, job.options())
        p1_seconds = p1.timings.solve
        if empty is not None:
            return _Examined(ii, p1_seconds, empty, False, None, [])
        start = (p1.objective, p1.solution, p1.status == Status.OPTIMAL)
    length, hint, len_proven = start
    return _Begun(ii, p1_seconds, length, hint, len_proven)


@dataclass(frozen=True)
class _Begun:
    """One ``I`` after Phase 1: the window ``LEN(M) .. L`` to search (``length = LEN(M)``)
    and Phase 1's schedule ``M`` as its hint."""

    ii: int
    p1_seconds: float
    length: int
    hint: Any
    len_proven: bool

    def scanned(self, job: _WindowJob) -> _Examined:
        """The window scanned length by length (``window="scan"``)."""
        return self.examined(*_scan_window(job, self.ii, self.length, self.hint))

    def examined(self, outcome: WindowOutcome | None, checks: Checks | None = None) -> _Examined:
        """The ``I`` examined, from the window's outcome on one incremental solver (an unsat
        answer at ``L`` covers ``LEN(M) .. L``) or the scan's outcome and checks."""
        if checks is None:
            checks = [(r, outcome.low) for r in outcome.checks]  # type: ignore[union-attr]
        return _Examined(self.ii, self.p1_seconds, None, self.len_proven, outcome, checks)


def _examine(job: _WindowJob, ii: int, start: tuple[Any, Any, bool] | None) -> _Examined:
    """Phase 1 at ``ii``, then Phase 2 on the window it fixes: one ``I`` in a worker process
    (in this process :func:`_examined_in_order` takes the same steps itself, so that the
    window's solver is called from there)."""
    got = _begun(job, ii, start)
    if isinstance(got, _Examined) or job.settings.window == "scan":
        return got if isinstance(got, _Examined) else got.scanned(job)
    return got.examined(solve_window(job.graph, ii, got.length, job.options(), rules=job.rules,
                                     hint=got.hint))  # fmt: skip


def _examined_in_order(
    job: _WindowJob,
    first: int,
    start: tuple[Any, Any, bool],
    cap: int,
    workers: int,
    announce: Callable[[int], None],
) -> Iterator[_Examined]:
    """Every ``I`` from ``first`` to ``cap`` examined, yielded in increasing order;
    ``announce(I)`` is called before each one is examined or awaited.

    With ``workers > 1`` and the CP-SAT Phase-1 backend, the next ``I`` are examined
    speculatively in worker processes (:func:`_examine`) while the earlier ones run; closing
    the generator (the caller stops at the first satisfiable ``I``) terminates the workers.
    Their solvers (CP-SAT, Z3) run in-process, so a terminated worker leaves nothing behind;
    CBC runs as a child process with files, so with CBC the intervals are examined one after
    the other. Each ``I`` is examined alone and single-threaded, exactly as in a sequential
    run, so the answer and every proof are the same; only the wall time changes. An ``I``
    examined in this process calls the window's solver from here (the options' deadline and
    threads reach Z3 one call below).
    """
    pool, pending, following = (
        _pool(job, first, cap, workers),
        deque[Any](),
        iter(range(first + 1, cap + 1)),
    )

    def top_up(in_flight: int) -> None:
        while pool is not None and len(pending) < in_flight:
            ii = next(following, None)
            if ii is None:
                return
            pending.append(pool.apply_async(_examine, (job, ii, None)))

    try:
        top_up(workers - 1)  # this process examines the first I meanwhile
        for ii in range(first, cap + 1):
            if pool is not None and ii > first:
                top_up(workers)  # pending is never empty here: it holds ii .. in order
            announce(ii)
            if pool is not None and ii > first:
                ex = pending.popleft().get()
            elif isinstance(got := _begun(job, ii, start if ii == first else None), _Examined):
                ex = got
            elif job.settings.window == "scan":
                ex = got.scanned(job)
            else:
                ex = got.examined(solve_window(job.graph, ii, got.length, job.options(),
                                               rules=job.rules, hint=got.hint))  # fmt: skip
            if ex.empty == "time_limit":  # the deadline passed before this I's turn
                return
            yield ex
    finally:
        if pool is not None:
            pool.terminate()
            pool.join()


def _pool(job: _WindowJob, first: int, cap: int, workers: int) -> Any:
    """The worker processes for the speculative ``I`` (``None``: one after the other, with
    one worker, one ``I`` or the CBC backend)."""
    if workers <= 1 or cap <= first or job.settings.backend != "cpsat":
        return None
    import multiprocessing

    from twill._interrupt import quiet_worker, starting_workers

    with starting_workers(spawn=True):  # Ctrl-C is this process's to handle; it stops the workers
        return multiprocessing.get_context("spawn").Pool(
            min(workers, cap - first), initializer=quiet_worker
        )


def _phase1_at(
    graph: DependenceGraph, ii: int, options: SolverOptions
) -> tuple[SolveResult, str | None]:
    """Phase 1 at a later ``I`` (its ``LEN(M)`` fixes that window), and the answer to record
    when it has no schedule there (``p1_infeasible`` or ``p1_unknown``; ``None`` when it has)."""
    p1 = solve_phase1(graph, ii, options, check=False)
    if p1.solution is None or p1.objective is None:
        return p1, "p1_infeasible" if p1.status == Status.INFEASIBLE else "p1_unknown"
    return p1, None


def _search_cap(
    graph: DependenceGraph, first: int, probe: bool, max_I: int | None, rules: WarpRules
) -> tuple[SequentialWitness | None, int]:
    """The largest ``I`` examined, and the verified sequential schedule when the cap is the
    default (the range then reaches its ``I``, where Phase 2 is certainly satisfiable)."""
    if probe:
        return None, first
    if max_I is not None:
        return None, max_I
    witness = sequential_witness(graph, rules)
    cap = _default_cap(graph, first)
    return witness, max(cap, witness.I) if witness is not None else cap


def _witness_answer(witness: SequentialWitness, where: str) -> tuple[str, Phase2Result]:
    """The reason and the final answer when only the sequential witness is left."""
    n, total = program_shape(witness.I, witness.L)
    final = Phase2Result("sat", witness.I, witness.L, n, total, witness.schedule,
                         witness.assignment, {"witness": "sequential"}, 0.0, 0.0)  # fmt: skip
    why = (f"no answer found for {where} within the time limits; the verified sequential "
           "schedule (one iteration at a time)")  # fmt: skip
    return why, final


def _default_cap(graph: DependenceGraph, first: int) -> int:
    return max(serial_ii_cap(graph), first + 4)


def _warp_schedule(alg: Phase2Result, graph: DependenceGraph) -> WarpSchedule | None:
    if alg.schedule is None or alg.I is None or alg.L is None or not alg.assignment:
        return None
    return WarpSchedule.of(graph, alg.schedule, alg.assignment, alg.I, alg.L)
