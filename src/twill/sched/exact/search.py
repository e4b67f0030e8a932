"""Search for the minimum initiation interval with a certificate (Twill Algorithm 1; spec §5).

Phase 1 of Algorithm 1: try ``I = MII, MII+1, ...`` with :func:`~.phase1.solve_phase1` until a
modulo schedule exists. Starting at MII instead of 1 is equivalent, because every ``I < MII``
is excluded by the bounds (spec §2, §5). The result carries a **certificate**: one entry per
``I`` below the answer, saying whether it was excluded by ResMII/RecMII or proven infeasible
(by which backend, in how long). If any of those solves ended UNKNOWN (time limit), the
answer is a schedule whose optimality is **not proven** (``optimal = False``).

Without ``max_I`` the search stops at a proven-feasible cap: a serial schedule of one
iteration of length ``L_s`` (ops one after another) is a modulo schedule for every
``I >= L_s + max_e d_e``, since no two ops overlap in time and every loop-carried dependence
is met; so the loop always terminates.

Preconditions: as for :func:`~.phase1.solve_phase1`.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from twill.errors import InvalidProblemError
from twill.options import SolverOptions
from twill.progress import OnProgress, ProgressEvent, emit
from twill.results import SolveResult, Status, Timings
from twill.sched.bounds import rec_mii, res_mii
from twill.sched.exact.phase1 import BACKENDS, Phase1Result, solve_phase1
from twill.sched.ir import DependenceGraph
from twill.sched.validate import check_graph

__all__ = ["CertificateEntry", "SearchResult", "search_min_ii", "serial_ii_cap"]

log = logging.getLogger(__name__)


@dataclass(frozen=True)
class CertificateEntry:
    """Why one initiation interval ``I`` below the answer has no schedule (or might have one).

    ``verdict`` is ``"below_bound"`` (``by`` = ``"ResMII"`` or ``"RecMII"``), ``"infeasible"``
    (a finished complete solve; ``by`` = backend) or ``"unknown"`` (a limit was hit).
    """

    I: int
    verdict: str
    by: str
    seconds: float = 0.0

    @property
    def proven(self) -> bool:
        return self.verdict in ("below_bound", "infeasible")

    def to_dict(self) -> dict[str, Any]:
        return {
            "I": self.I,
            "verdict": self.verdict,
            "by": self.by,
            "seconds": round(self.seconds, 4),
        }

    def __str__(self) -> str:
        if self.verdict == "below_bound":
            return f"I={self.I}: excluded by {self.by}"
        if self.verdict == "infeasible":
            return f"I={self.I}: proven infeasible by {self.by} in {self.seconds:.3f} s"
        return f"I={self.I}: UNKNOWN ({self.by} hit its limit after {self.seconds:.3f} s)"


@dataclass(frozen=True)
class SearchResult:
    """Minimum-I search outcome.

    Attributes
    ----------
    status
        OPTIMAL (schedule found, every smaller I proven impossible), FEASIBLE (schedule found,
        some smaller I UNKNOWN), INFEASIBLE (every I up to the cap proven infeasible) or UNKNOWN.
    I, schedule, L
        The answer (``None`` without one).
    optimal
        True only with a complete certificate and a schedule.
    L_optimal
        True when ``L`` is the proven minimum at ``I``.
    certificate
        One :class:`CertificateEntry` per ``I`` below the answer (or up to the cap).
    res_mii, rec_mii, mii
        The bounds.
    attempts
        Every Phase-1 solve made, in order.
    """

    status: Status
    I: int | None
    schedule: dict[str, int] | None
    L: int | None
    optimal: bool
    L_optimal: bool
    certificate: tuple[CertificateEntry, ...]
    res_mii: int
    rec_mii: int
    backend: str
    seconds: float
    attempts: tuple[Phase1Result, ...] = field(default_factory=tuple)

    @property
    def mii(self) -> int:
        return max(self.res_mii, self.rec_mii)

    def to_dict(self) -> dict[str, Any]:
        return search_result_fields(self)

    def as_result(self) -> SolveResult:
        """The shared result shape (:func:`search_as_result`)."""
        return search_as_result(self)


def search_as_result(r: SearchResult | Any, solution: Any = None) -> SolveResult:
    """A minimum-I answer in the shared shape: objective ``I`` (cycles between iteration
    starts), bound MII or ``I`` itself when proven optimal, the certificate as proved."""
    if solution is None and r.schedule is not None:
        solution = dict(r.schedule)
    return SolveResult(
        status=r.status,
        solution=solution,
        objective=r.I,
        objective_unit="cycles (initiation interval)",
        bound=r.I if r.optimal else r.mii,
        certificate=[c.to_dict() for c in r.certificate],
        timings=Timings(solve=r.seconds),
        stats={"L": r.L, "L_optimal": r.L_optimal, "res_mii": r.res_mii, "rec_mii": r.rec_mii},
        settings={"backend": r.backend},
    )


def search_result_fields(r: SearchResult | Any) -> dict[str, Any]:
    """JSON fields of a minimum-I answer, shared by :class:`SearchResult` and
    :class:`twill.twill_solver.TwillResult` (the CLI's ``--json`` names: keep them stable)."""
    return {
        "status": r.status.value,
        "I": r.I,
        "optimal": r.optimal,
        "L": r.L,
        "L_optimal": r.L_optimal,
        "schedule": dict(r.schedule) if r.schedule is not None else None,
        "certificate": [c.to_dict() for c in r.certificate],
        "res_mii": r.res_mii,
        "rec_mii": r.rec_mii,
        "mii": r.mii,
        "backend": r.backend,
        "seconds": round(r.seconds, 4),
    }


def topological_order(graph: DependenceGraph) -> list[str]:
    """The ops in an order that respects every distance-0 edge (Kahn's algorithm, ties by
    graph order); shorter than the graph only when those edges form a cycle."""
    index = graph.index()
    indeg = {n: 0 for n in graph.names}
    succ: dict[str, list[str]] = {n: [] for n in graph.names}
    for e in graph.edges:
        if e.distance == 0 and e.src != e.dst:
            indeg[e.dst] += 1
            succ[e.src].append(e.dst)
    ready = sorted((n for n, k in indeg.items() if k == 0), key=index.__getitem__)
    names: list[str] = []
    while ready:
        n = ready.pop(0)
        names.append(n)
        for m in succ[n]:
            indeg[m] -= 1
            if indeg[m] == 0:
                ready.append(m)
                ready.sort(key=index.__getitem__)
    return names


def serial_ii_cap(graph: DependenceGraph) -> int:
    """An ``I`` at which a modulo schedule certainly exists (see the module docstring)."""
    names = topological_order(graph)  # distance-0 edges form a DAG after check_graph
    ins = {i.name: i for i in graph.instructions}
    preds: dict[str, list[tuple[str, int]]] = {n: [] for n in names}
    for e in graph.edges:
        if e.distance == 0:
            preds[e.dst].append((e.src, e.delay))
    start: dict[str, int] = {}
    clock = 0
    for n in names:
        t = max([clock] + [start[p] + d for p, d in preds[n] if p in start])
        start[n] = t
        clock = t + max(1, ins[n].cycles)
    max_d = max((e.delay for e in graph.edges), default=0)
    return max(1, clock + max_d)


def search_min_ii(
    graph: DependenceGraph,
    *,
    max_I: int | None = None,
    backend: str = "cbc",
    time_limit: float | None = None,
    tie_break: bool = True,
    threads: int = 1,
    check: bool = True,
    on_attempt: Callable[[Phase1Result], None] | None = None,
    total_time_limit: float | None = None,
    length_time_limit: float | None = None,
    decide: str = "window",
    on_progress: OnProgress | None = None,
    options: SolverOptions | None = None,
) -> SearchResult:
    """Smallest ``I`` with a Phase-1 modulo schedule, with a certificate for every smaller ``I``.

    Parameters
    ----------
    graph
        The dependence graph with its machine.
    max_I
        Largest ``I`` to try (``None``: up to :func:`serial_ii_cap`, where a schedule exists).
    backend
        ``"cbc"`` or ``"cpsat"``.
    time_limit
        Seconds per Phase-1 solve (``None``: no limit).
    tie_break, threads, check, decide
        Passed to :func:`~.phase1.solve_phase1` (``check`` runs once, here).
    on_attempt
        Called after every Phase-1 solve with its :class:`~.phase1.Phase1Result`.
    on_progress
        Called with a :class:`twill.progress.ProgressEvent` (``phase="phase1"``) before and
        after every Phase-1 solve: the ``I`` under test, the bounds, the elapsed time, the
        verdict and the length of the schedule found (progress display; the core never prints).
    length_time_limit
        Seconds for minimising ``L`` once a schedule is found at an ``I`` (``None``: the same
        as ``time_limit``). Each Phase-1 solve first only looks for *any* schedule, which is
        all the minimum-``I`` proof needs (INFEASIBLE below ``I*``, a schedule at ``I*``);
        ``L`` is secondary and reported as ``L_optimal`` on its own.
    total_time_limit
        Stop trying new ``I`` once this many seconds have passed (``None``: no limit); the
        result then has no schedule and status UNKNOWN unless one was found before.

    options
        The shared :class:`~twill.options.SolverOptions`: when given, its ``threads``, its
        ``time_limit`` (as ``total_time_limit``) and its ``on_progress`` replace those keywords.

    Returns
    -------
    SearchResult

    Notes
    -----
    Objective: the minimum ``I``, then the minimum ``L`` at it. Guarantee: ``optimal`` is true
    only when every ``I`` below the answer is below MII or proven infeasible by a finished
    solve. Fails (no schedule) when ``max_I`` is too small or limits are hit.

    Examples
    --------
    >>> from twill.sched.kernels import flash_attention_forward_simplified
    >>> r = search_min_ii(flash_attention_forward_simplified())
    >>> r.I, r.optimal, r.schedule
    (2, True, {'S': 0, 'P': 2, 'O': 3})
    """
    if backend not in BACKENDS:
        raise InvalidProblemError(
            f"backend must be one of {', '.join(BACKENDS)}, found {backend!r}"
        )
    if max_I is not None and (isinstance(max_I, bool) or not isinstance(max_I, int) or max_I < 1):
        raise InvalidProblemError(f"max_I must be an integer >= 1, found {max_I!r}")
    if check:
        check_graph(graph)
    t0 = time.perf_counter()
    if options is not None:
        given = dict(threads=threads, total_time_limit=total_time_limit, on_progress=on_progress)
        chosen = options.overrides("total_time_limit", **given)
        threads, on_progress = chosen["threads"], chosen.get("on_progress")
        total_time_limit = chosen.get("total_time_limit")
    rmii, cmii = res_mii(graph), rec_mii(graph)
    lo = max(rmii, cmii)
    cap = max_I if max_I is not None else max(lo, serial_ii_cap(graph))
    log.info("search %s: ResMII=%d RecMII=%d, I in [%d, %d]", graph.name, rmii, cmii, lo, cap)
    certificate: list[CertificateEntry] = []
    for i in range(1, min(lo, cap + 1)):
        certificate.append(CertificateEntry(i, "below_bound", "ResMII" if i < rmii else "RecMII"))
    attempts: list[Phase1Result] = []
    found: Phase1Result | None = None

    def event(ii: int, r: Phase1Result | None = None) -> ProgressEvent:
        answer, length = (None, None) if r is None else (r.status.value, r.L)
        return ProgressEvent("phase1", ii, time.perf_counter() - t0, lower_bound=lo,
                             upper_bound=cap, answer=answer, incumbent=length)  # fmt: skip

    for ii in range(lo, cap + 1):
        limit = time_limit
        if total_time_limit is not None:  # no single solve outlives the overall limit
            left = total_time_limit - (time.perf_counter() - t0)
            if left <= 0:
                log.info("search %s: total time limit hit before I=%d", graph.name, ii)
                break
            limit = left if limit is None else min(limit, left)
        emit(on_progress, event(ii))
        r = solve_phase1(
            graph,
            ii,
            backend=backend,
            time_limit=limit,
            tie_break=tie_break,
            threads=threads,
            check=False,
            decide=decide,
            **({} if length_time_limit is None else {"length_time_limit": length_time_limit}),
        )
        attempts.append(r)
        if on_attempt is not None:
            on_attempt(r)
        emit(on_progress, event(ii, r))
        if r.schedule is not None:
            found = r
            break
        verdict = "infeasible" if r.status is Status.INFEASIBLE else "unknown"
        certificate.append(CertificateEntry(ii, verdict, backend, r.seconds))
    proven = all(c.proven for c in certificate)
    if found is not None:
        status = Status.OPTIMAL if proven else Status.FEASIBLE
        ii_found: int | None = found.II
    else:
        exhausted = bool(certificate) and certificate[-1].I >= cap
        status = Status.INFEASIBLE if proven and exhausted else Status.UNKNOWN
        ii_found = None
    return SearchResult(
        status=status,
        I=ii_found,
        schedule=found.schedule if found else None,
        L=found.L if found else None,
        optimal=found is not None and proven,
        L_optimal=found is not None and found.status is Status.OPTIMAL,
        certificate=tuple(certificate),
        res_mii=rmii,
        rec_mii=cmii,
        backend=backend,
        seconds=time.perf_counter() - t0,
        attempts=tuple(attempts),
    )
