"""Search for the minimum initiation interval with a certificate (Twill paper §5, Algorithm 1).

First an *incumbent*: a fast heuristic schedule (Rau's iterative modulo scheduling,
:mod:`twill.sched.heuristics.ims`, verified), whose ``I`` tops the search. Then Phase 1 of
Algorithm 1: try ``I = MII, MII+1, ...`` below the incumbent with
:func:`~.phase1.solve_phase1` until a modulo schedule exists; if none does, the incumbent's
``I`` is the answer, with ``L`` minimised from the incumbent (hint / warm start). With
``warm_start`` the incumbent is also handed to the solves: no decision at its own ``I``, and
the window decisions below it are hinted with it where the greedy schedule fails.

Between the two, *probes* (``probes=True``, the default; :meth:`_Run.probe`): CP-SAT
decisions on the window model, whatever the backend, ``L`` not minimised, in rounds of
doubling limits (1, 2, 4, ... s): upward from MII while each ``I`` is refuted (a certificate
entry by ``cpsat``), then two ``I`` just above the first open one, whose schedule (verified)
replaces the incumbent. On the ChStone loops the refutations take well under a second and a
schedule at the first open ``I`` a few seconds, where IMS stays 5-25 % above it and CBC
needs minutes at that ``I`` (docs/benchmarks.md). What no probe decided is left to the
upward search below, CP-SAT first at each ``I`` the probes left open, then the backend.

Why upward (docs/decisions.md): optimality needs a proof for *every* ``I`` below the answer,
so the refutations from MII up are needed whatever the order; upward, the first schedule
found is the answer at once, and the lower bound rises with every refutation, so the gap
shrinks from both ends (the heuristic gives the top). The refutations near MII are the
cheap ones on the HLS loops (most end in an implied-arc circuit, without a solver call).
A time-out at any point leaves the incumbent as a FEASIBLE answer with its gap.

Starting at MII instead of 1 is equivalent, because every ``I < MII`` is excluded by the bounds (MII
is a lower bound). The result carries a **certificate**: one entry per ``I`` below the answer,
saying whether it was excluded by ResMII/RecMII or proven infeasible (by which backend, in how
long). If any of those solves ended UNKNOWN (time limit), the answer is a schedule whose optimality
is **not proven** (``optimal = False``).

Without ``max_I`` the search stops at a proven-feasible cap: a serial schedule of one
iteration of length ``L_s`` (ops one after another) is a modulo schedule for every
``I >= L_s + max_e d_e``, since no two ops overlap in time and every loop-carried dependence
is met; so the loop always terminates.

Preconditions: as for :func:`~.phase1.solve_phase1`.
"""

from __future__ import annotations

import heapq
import logging
import time
from collections.abc import Mapping
from dataclasses import dataclass, field, replace
from typing import Any

from twill.deadline import MIN_SLICE
from twill.errors import InvalidProblemError, VerificationError
from twill.options import SolverOptions
from twill.progress import ProgressEvent, emit
from twill.registry import register_solver
from twill.results import SolveResult, Status, Timings, WarpSchedule
from twill.sched.bounds import rec_mii, res_mii
from twill.sched.exact.phase1 import phase1_result, solve_phase1
from twill.sched.exact.settings import TwillSettings, twill_settings
from twill.sched.heuristics.gaus_c import GAUS_MIN_OPS, improve_with_gaus
from twill.sched.heuristics.ims import HeuristicSchedule, heuristic_schedule
from twill.sched.heuristics.slack import improve_with_slack
from twill.sched.ir import DependenceGraph
from twill.sched.problems import PROBLEM_MODULO, ModuloProblem
from twill.sched.validate import check_graph
from twill.validation import check_instance

__all__ = ["CertificateEntry", "TwillResult", "run", "search_min_ii", "serial_ii_cap", "solve"]

log = logging.getLogger(__name__)


@dataclass(frozen=True)
class CertificateEntry:
    """Why one initiation interval ``I`` below the answer has no schedule (or might have one).

    ``verdict`` is ``"below_bound"`` (``by`` = ``"ResMII"`` or ``"RecMII"``), ``"infeasible"``
    (a finished complete solve; ``by`` = backend), ``"unknown"`` (a limit was hit) or
    ``"untried"`` (the overall time limit ran out before this ``I``'s turn).
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
        if self.verdict == "untried":
            return f"I={self.I}: not tried ({self.by} reached)"
        return f"I={self.I}: UNKNOWN ({self.by} hit its limit after {self.seconds:.3f} s)"


@dataclass(frozen=True)
class TwillResult:
    """The record of a Twill search: the minimum-I search (:func:`search_min_ii`, the
    problem :data:`~twill.sched.problems.PROBLEM_MODULO`), extended by Phase 2
    (:func:`twill.sched.exact.algorithm1.algorithm1`, the problem
    :data:`~twill.sched.problems.PROBLEM_WARP_SPECIALISATION`); what
    :func:`twill.twill_solver.twill_solve` returns and ``twill solve --json`` prints.

    Attributes
    ----------
    status
        OPTIMAL (I proven minimum), FEASIBLE (a schedule, I not proven), INFEASIBLE (no
        schedule up to the cap, proven) or UNKNOWN.
    I, schedule, L
        The answer (``None`` without one): initiation interval, op -> start cycle (``M``,
        minimum 0), schedule length at ``I``.
    optimal
        True only with a complete certificate: every smaller I below MII or proven infeasible
        (and, with Phase 2, every earlier window proven empty).
    L_optimal
        True when ``L`` is the proven minimum at ``I``.
    certificate
        One :class:`CertificateEntry` per ``I`` below the Phase-1 answer (or up to the cap).
    seconds
        Total wall time.
    backend, graph, res_mii, rec_mii
        The Phase-1 solver, the graph's name and its bounds.
    phase1
        The minimum-I search Phase 2 started from (``None`` for that search itself).
    extra
        Phase 2's fields (``warps``, ``assignment``, ``points``, ``phase1_I``, ``phase1_L``,
        ``phase2_status``, ``phase2_reason``, ``phase2_seconds``, ``phase1_seconds``), merged
        into :meth:`to_dict`.
    warp_schedule
        The verified joint answer of Phase 2 as one value (``None`` without one): what
        :mod:`twill.codegen` and :mod:`twill.visualization` take.
    problem
        The problem ``I``, ``optimal`` and the certificate refer to.
    attempts
        Every Phase-1 solve of the minimum-I search, in order.
    heuristic
        The incumbent found before any exact solve (:func:`~twill.sched.heuristics.
        heuristic_schedule`), or ``None`` when none was asked for or it exceeded ``max_I``.
    points
        Phase 2's ``(I, L)`` points (:class:`~twill.sched.exact.algorithm1.SearchPoint`).
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
    phase1: TwillResult | None = field(default=None, repr=False, compare=False)
    extra: Mapping[str, Any] = field(default_factory=dict)
    warp_schedule: WarpSchedule | None = field(default=None, repr=False, compare=False)
    problem: str = PROBLEM_MODULO
    attempts: tuple[SolveResult, ...] = field(default=(), repr=False, compare=False)
    heuristic: HeuristicSchedule | None = field(default=None, repr=False, compare=False)
    points: tuple[Any, ...] = field(default=(), repr=False, compare=False)

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
    def lower_bound(self) -> int:
        """The proven lower bound on ``I`` (:func:`proven_lower_bound`)."""
        return proven_lower_bound(self)

    @property
    def warps(self) -> dict[str, int] | None:
        """Op -> (first) warp slot of the verified Phase-2 answer; ``None`` without one
        (Phase 1 only, or Phase 2 found no joint schedule)."""
        return self.warp_schedule.warps if self.warp_schedule is not None else None

    @property
    def assignment(self) -> dict[str, tuple[int, ...]] | None:
        """Op -> its warp slots in the Phase-2 answer (``None`` without one)."""
        ws = self.warp_schedule
        return dict(ws.assignment) if ws is not None else None

    @property
    def phase1_I(self) -> int | None:
        """The minimum ``I`` of the modulo problem (Phase 1's answer)."""
        return self.extra.get("phase1_I", self.I)

    @property
    def phase1_L(self) -> int | None:
        """Phase 1's ``L`` at its minimum ``I``."""
        return self.extra.get("phase1_L", self.L)

    @property
    def reason(self) -> str:
        """Why Phase 2 ended as it did (empty for Phase 1 alone)."""
        return self.extra.get("phase2_reason", "")

    @property
    def phase1_seconds(self) -> float:
        """Seconds in Phase 1 (every Phase-1 solve, the later windows' included)."""
        return self.extra.get("phase1_seconds", self.seconds)

    @property
    def phase2_seconds(self) -> float:
        """Seconds in Phase 2's solver calls (0 for Phase 1 alone)."""
        return self.extra.get("phase2_seconds", 0.0)

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


def search_as_result(r: TwillResult, solution: Any = None) -> SolveResult:
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


def with_run_settings(result: SolveResult, options: SolverOptions | None) -> SolveResult:
    """``result`` recording what it ran under, as every method's result does: the exact
    scheduler's settings, the options' time limit, threads and workers, and the seed."""
    o = SolverOptions.of(options)
    ran = {**twill_settings(o).to_dict(), "time_limit": o.time_limit, "threads": o.threads,
           "workers": o.workers}  # fmt: skip
    return replace(result, settings={**ran, **result.settings}, seed=o.seed)


def proven_lower_bound(r: TwillResult) -> int:
    """The smallest ``I`` not excluded by a proof: ``I`` itself when it is proven optimal,
    else the first ``I`` from MII up whose certificate entry is not a proof (every smaller
    ``I`` is below MII or proven infeasible). A lower bound on the problem's minimum ``I``."""
    if r.optimal and r.I is not None:
        return r.I
    low = max(r.res_mii, r.rec_mii)
    for c in sorted(r.certificate, key=lambda c: c.I):
        if c.I == low and c.proven:
            low += 1
        elif c.I >= low:
            break
    return low


def search_result_fields(r: TwillResult) -> dict[str, Any]:
    """JSON fields of a minimum-I answer (the CLI's ``--json`` names: keep them stable).

    ``lower_bound`` is :func:`proven_lower_bound`; ``gap`` is ``I - lower_bound`` in cycles
    (0 when ``I`` is proven optimal; ``None`` without a schedule); ``incumbent`` describes the
    heuristic schedule that seeded the search (``I``, ``L``, ``method``, ``seconds``)."""
    low = proven_lower_bound(r)
    heur = r.heuristic if r.heuristic is not None or r.phase1 is None else r.phase1.heuristic
    return {
        "status": r.status.value,
        "I": r.I,
        "lower_bound": low,
        "gap": r.I - low if r.I is not None else None,
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
        "incumbent": None if heur is None else {
            "I": heur.I, "L": heur.L, "method": heur.method, "seconds": round(heur.seconds, 4)},
    }  # fmt: skip


@register_solver("search-min-ii", problems=(ModuloProblem,), settings=TwillSettings)
def solve(problem: ModuloProblem, options: SolverOptions | None = None) -> SolveResult:
    """The minimum initiation interval of ``problem`` with a certificate for every smaller
    ``I`` (:func:`run` in the shared shape: objective ``I``, the schedule as solution).

    >>> from twill.kernels import flash_attention_forward_simplified
    >>> r = solve(ModuloProblem(flash_attention_forward_simplified()))
    >>> r.status.value, r.objective, r.solution
    ('optimal', 2, {'S': 0, 'P': 2, 'O': 3})
    """
    check_instance(problem, "problem", ModuloProblem)
    return with_run_settings(run(problem, options).as_result(), options)


def run(problem: ModuloProblem, options: SolverOptions | None = None) -> TwillResult:
    """:func:`solve` with the search's own record (attempts, the incumbent), which the
    Twill pipeline and the benchmarks read.

    ``problem.max_II`` caps the search (``min_II`` must be ``None``: the search starts at
    MII). ``options``: the deadline (``time_limit``: the whole search, every solve inside
    it), ``threads``, ``on_progress`` and ``twill`` (``backend``, ``solve_time_limit``,
    ``length_time_limit``, ``tie_break``, ``decide``, ``incumbent``, ``warm_start``).
    """
    check_instance(problem, "problem", ModuloProblem)
    options = SolverOptions.of(options).start()
    problem.check()
    if problem.min_II is not None:
        raise InvalidProblemError("the minimum-I search starts at MII: leave min_II None",
                                  source=problem.graph.name)  # fmt: skip
    return search_min_ii(problem.graph, options, max_I=problem.max_II, check=False)


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
    ready = [index[n] for n, k in indeg.items() if k == 0]  # a heap of graph positions
    heapq.heapify(ready)
    order = graph.names
    names: list[str] = []
    while ready:
        n = order[heapq.heappop(ready)]
        names.append(n)
        for m in succ[n]:
            indeg[m] -= 1
            if indeg[m] == 0:
                heapq.heappush(ready, index[m])
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
    options: SolverOptions | None = None,
    *,
    max_I: int | None = None,
    check: bool = True,
) -> TwillResult:
    """Smallest ``I`` with a Phase-1 modulo schedule, with a certificate for every smaller ``I``.

    Parameters
    ----------
    graph
        The dependence graph with its machine.
    max_I
        Largest ``I`` to try (``None``: up to :func:`serial_ii_cap`, where a schedule exists).
    options
        ``time_limit``: the whole search (``None``: no limit), a deadline no solver call
        outlives (each gets the smaller of its own limit and the time left); when it runs
        out, the answer is the incumbent (FEASIBLE, with ``lower_bound`` and ``gap``), or
        UNKNOWN without one. ``threads``: each Phase-1 solve's. ``on_progress``: called with a
        :class:`twill.progress.ProgressEvent` (``phase="phase1"``) before and after every
        Phase-1 solve: the ``I`` under test, the bounds, the elapsed time, the verdict and
        the length of the schedule found (progress display; the core never prints).
        ``twill`` (:class:`~twill.sched.exact.settings.TwillSettings`): ``backend``,
        ``solve_time_limit`` (seconds per Phase-1 solve), ``tie_break``, ``decide`` and
        ``encoding`` (as for :func:`~.phase1.solve_phase1`); ``length_time_limit``, seconds
        for minimising ``L`` once a schedule is found at an ``I`` (each Phase-1 solve first
        only looks for *any* schedule, which is all the minimum-``I`` proof needs, INFEASIBLE
        below ``I*`` and a schedule at ``I*``; ``L`` is secondary and reported as
        ``L_optimal`` on its own); ``incumbent``, first compute a heuristic schedule
        (:func:`~twill.sched.heuristics.heuristic_schedule`, verified) whose ``I`` tops the
        exact search and is the answer when no smaller ``I`` has a schedule or time runs out
        (``False``: exact solves only); ``warm_start``, hand the incumbent to the exact
        solves: at its own ``I`` no decision is run (it proves ``I`` feasible) and ``L`` is
        minimised from it (CP-SAT hint, CBC initial solution); below it, it hints the window
        decision when the greedy list schedule finds none. ``False`` (the Twill pipeline
        does this when Phase 2 follows: Phase 2 starts from Phase 1's schedule,
        docs/decisions.md): the incumbent only tops the search and is the fallback. Either
        way the same ``I`` and the same proofs.
    max_I
        Largest ``I`` to try (``None``: up to :func:`serial_ii_cap`, where a schedule exists).
    check
        Run :func:`~twill.sched.validate.check_graph` first (once, here; not per solve).

    Returns
    -------
    TwillResult
        The record of the search (``problem`` :data:`~twill.sched.problems.PROBLEM_MODULO`).

    Notes
    -----
    Objective: the minimum ``I``, then the minimum ``L`` at it. Guarantee: ``optimal`` is true
    only when every ``I`` below the answer is below MII or proven infeasible by a finished
    solve. Fails (no schedule) only when ``max_I`` is below every schedule found, or without
    the incumbent when limits are hit. Search order: upward from MII to the
    incumbent's ``I`` (module docstring).

    Examples
    --------
    >>> from twill.sched.kernels import flash_attention_forward_simplified
    >>> r = search_min_ii(flash_attention_forward_simplified())
    >>> r.I, r.optimal, r.schedule
    (2, True, {'S': 0, 'P': 2, 'O': 3})
    """
    options = SolverOptions.of(options).start()
    s = twill_settings(options)
    if max_I is not None and (isinstance(max_I, bool) or not isinstance(max_I, int) or max_I < 1):
        raise InvalidProblemError(f"max_I must be an integer >= 1, found {max_I!r}")
    if check:
        check_graph(graph)
    t0 = time.perf_counter()
    run = _Run(graph, options, s, t0)
    rmii, cmii = res_mii(graph), rec_mii(graph)
    lo = max(rmii, cmii)
    cap = max_I if max_I is not None else max(lo, serial_ii_cap(graph))
    log.info("search %s: ResMII=%d RecMII=%d, I in [%d, %d]", graph.name, rmii, cmii, lo, cap)
    certificate = [CertificateEntry(i, "below_bound", "ResMII" if i < rmii else "RecMII")
                   for i in range(1, min(lo, cap + 1))]  # fmt: skip
    heur = run.incumbent(lo, cap if max_I is not None else None) if s.incumbent else None
    best, refuted = heur, {}  # the best verified schedule; I -> CP-SAT's proof of no schedule
    if heur is not None and s.probes and s.exact and heur.I > lo:
        best, refuted = run.probe(lo, heur)
    top = cap if best is None else best.I - 1
    if not s.exact:  # the heuristic alone: no solve, every I below its schedule left open
        certificate += [CertificateEntry(i, "untried", "heuristic only")
                        for i in range(lo, top + 1)]  # fmt: skip
        top = lo - 1
    upper, found = (top if best is None else best.I), None
    guide = best.schedule if best is not None and s.warm_start else None
    for ii in range(lo, top + 1):  # upward until a schedule (the answer); an I without one
        if ii in refuted:  # gets its certificate entry
            certificate.append(refuted[ii])
            continue
        if run.stopped(ii, best, certificate, refuted):
            break
        # an I the probes left open goes to CP-SAT first, with the time left: on adpcm/graph1
        # it refuted I = 53 in 5-8 s, where CBC had no answer in 13 s (docs/benchmarks.md)
        cpsat_first = ii in run.probed and s.backend != "cpsat"
        backends = ("cpsat", s.backend) if cpsat_first else (s.backend,)
        r, backend = run.decide(ii, upper, backends, guide)
        if r.solution is not None:
            found = r
            break
        verdict = "infeasible" if r.status is Status.INFEASIBLE else "unknown"
        certificate.append(CertificateEntry(ii, verdict, backend, r.timings.solve))
    if found is None and best is not None:  # every I below the best schedule examined (or
        r = None  # out of time): its I, L minimised from it (hint / warm start)
        if run.room_at_incumbent() and s.exact:
            run.event(best.I, best.I)
            r = run.record(best.I, best.I, solve_phase1(graph, best.I, options, check=False,
                                                        incumbent=best.schedule))  # fmt: skip
        found = run.at_incumbent(best, r)
    proven = all(c.proven for c in certificate)
    if found is not None:
        status = Status.OPTIMAL if proven else Status.FEASIBLE
    else:
        exhausted = bool(certificate) and certificate[-1].I >= cap
        status = Status.INFEASIBLE if proven and exhausted else Status.UNKNOWN
    return TwillResult(
        status=status,
        I=found.settings["II"] if found else None,
        schedule=found.solution if found else None,
        L=found.objective if found else None,
        optimal=found is not None and proven,
        L_optimal=found is not None and found.status is Status.OPTIMAL,
        certificate=tuple(certificate),
        res_mii=rmii,
        rec_mii=cmii,
        backend=s.backend,
        seconds=time.perf_counter() - t0,
        graph=graph.name,
        attempts=tuple(run.attempts),
        heuristic=heur,
    )


_AT_INCUMBENT_MIN = 1.0  # seconds: less left and the incumbent is returned as it is
_PROBE_FIRST = 1.0  # seconds: the first round's limit per probe, doubled every round
_PROBE_SHARE = 0.2  # a round starts only while its limit is at most this share of the time
# left (the backend's own search below gets the rest); without a deadline, up to _PROBE_LAST
_PROBE_LAST = 64.0
_GALLOP = (1, 3)  # after the first open I, each round probes these steps above it
_REFUTERS = ("cpsat", "cbc")  # at the first open I, CBC after CP-SAT, in the first round
# only: its time-indexed LP refuted adpcm/graph1's I = 51, 52 in 0.5 s each, where CP-SAT
# needed 2-5 s, but where it fails in a second it did not succeed in 2 or 13 s (I = 53)
_SLACK_SECONDS = 5.0  # slack scheduling's budget: at most 1/4 of the time left
_GAUS_SECONDS = 10.0  # GauS-C's budget on large loops: at most 1/4 of the time left
_GAUS_MIN_LEFT = 60.0  # ... and only with this much left: its torch import, which no deadline
# bounds, took 2-20 s on the loaded development machine


@dataclass
class _Run:
    """One minimum-I search: its settings, its clock and the Phase-1 solves made so far."""

    graph: DependenceGraph
    options: SolverOptions
    settings: TwillSettings
    t0: float
    attempts: list[SolveResult] = field(default_factory=list)
    best: tuple[int, int] | None = None  # (I, L) of the incumbent
    low: int = 0  # the proven lower bound so far
    probed: set[int] = field(default_factory=set)  # the I the probes left open

    def decide(
        self, ii: int, upper: int, backends: tuple[str, ...], guide: Mapping[str, int] | None
    ) -> tuple[SolveResult, str]:
        """Phase 1 at ``ii`` (``L`` minimised when a schedule is found) with each backend in
        turn, until one decides it or too little time is left; the last answer and its
        backend."""
        for backend in backends:
            options = replace(self.options, twill=replace(self.settings, backend=backend))
            self.event(ii, upper)
            r = self.record(ii, upper, solve_phase1(self.graph, ii, options, check=False,
                                                    guide=guide))  # fmt: skip
            left = self.left()
            if r.status is Status.INFEASIBLE or r.solution is not None:
                break
            if left is not None and left < MIN_SLICE:
                break
        return r, backend

    def left(self) -> float | None:
        return self.options.clock.remaining()

    def event(self, ii: int, upper: int, r: SolveResult | str | None = None) -> None:
        answer = r if isinstance(r, str) or r is None else r.status.value
        length = r.objective if isinstance(r, SolveResult) else None
        if length is None and self.best is not None:
            length = self.best[1]
        emit(self.options.on_progress, ProgressEvent(
            "phase1", ii, time.perf_counter() - self.t0, lower_bound=self.low,
            upper_bound=upper, answer=answer, incumbent=length,
            best_I=None if self.best is None else self.best[0]))  # fmt: skip

    def incumbent(self, lo: int, cap: int | None) -> HeuristicSchedule | None:
        """The heuristic schedule (verified), when its ``I`` is within ``cap`` (``max_I``):
        IMS, then slack scheduling on the window model below IMS's ``I``
        (:func:`~twill.sched.heuristics.slack.improve_with_slack`), then, where that found
        nothing better, on large loops GauS formulation C below IMS's ``I``
        (:func:`~twill.sched.heuristics.gaus_c.improve_with_gaus`); the best one."""
        self.low = lo
        heur = heuristic_schedule(self.graph, mii=lo, deadline=self.options.clock)
        left = self.left()
        if heur.I > lo:
            budget = _SLACK_SECONDS if left is None else min(_SLACK_SECONDS, left / 4)
            heur = improve_with_slack(self.graph, heur, lo, budget, deadline=self.options.clock)
            left = self.left()
        budget = _GAUS_SECONDS if left is None else min(_GAUS_SECONDS, left / 4)
        roomy = left is None or left >= _GAUS_MIN_LEFT
        fallen_short = heur.method == "ims" and heur.I > lo  # slack found nothing better
        if len(self.graph.instructions) >= GAUS_MIN_OPS and fallen_short and roomy:
            self.best = (heur.I, heur.L)
            self.event(heur.I, heur.I, "incumbent")  # IMS's, while GauS looks below it
            heur = improve_with_gaus(self.graph, heur, lo, budget)
        if cap is not None and heur.I > cap:
            log.info("search %s: heuristic I=%d above max_I=%d, unused", self.graph.name,
                     heur.I, cap)  # fmt: skip
            return None
        self.best = (heur.I, heur.L)
        self.event(heur.I, heur.I, "incumbent")
        return heur

    def probe(
        self, lo: int, heur: HeuristicSchedule
    ) -> tuple[HeuristicSchedule, dict[int, CertificateEntry]]:
        """Probes (decisions only, ``L`` not minimised) on the window model, whatever the
        backend, in rounds of doubling limits: upward from the proven bound ``lo`` while
        each ``I`` is refuted (CP-SAT, then, in the first round, CBC where CP-SAT ran out of
        time), then CP-SAT at ``+1`` and ``+3`` above the first open ``I`` (below the best
        schedule). The ``I`` left open go to CP-SAT first in the backend's search.
        Unhinted: measured, the incumbent as CP-SAT's hint (moved into the windows) kept it
        from any schedule at aes/graph4's optimum within 20 s, where it finds one in 1-5 s
        without.

        Returns the best verified schedule (``heur`` or a probe's, ``method="probe"``) and
        the ``I`` refuted by a finished proof, each with its certificate entry (by the
        backend that proved it). An
        ``I`` below the best schedule that no probe decided is left to the backend's search
        (:func:`search_min_ii`)."""
        best, refuted = heur, {}
        tried: dict[int, float] = {}  # I -> the largest limit it stayed open under
        limit, low = _PROBE_FIRST, lo

        def room() -> bool:
            left = self.left()
            if left is None:
                return limit <= _PROBE_LAST
            return left >= MIN_SLICE and limit <= _PROBE_SHARE * left

        def decide(ii: int, backends: tuple[str, ...] = ("cpsat",)) -> Status:
            nonlocal best
            if ii in refuted or tried.get(ii, 0.0) >= limit:
                return Status.INFEASIBLE if ii in refuted else Status.UNKNOWN
            for backend in backends if limit == _PROBE_FIRST else backends[:1]:
                probing = replace(self.settings, backend=backend, solve_time_limit=limit)
                self.event(ii, best.I)
                r = self.record(ii, best.I, solve_phase1(
                    self.graph, ii, replace(self.options, twill=probing), check=False,
                    hint=limit == _PROBE_FIRST, length=False))  # fmt: skip
                if r.status is Status.INFEASIBLE:
                    refuted[ii] = CertificateEntry(ii, "infeasible", backend, r.timings.solve)
                    return r.status
                if r.solution is not None and ii < best.I:
                    best = HeuristicSchedule(ii, dict(r.solution), int(r.objective), "probe",
                                             time.perf_counter() - self.t0)  # fmt: skip
                    return r.status
                if not room():
                    break
            tried[ii] = limit
            return Status.UNKNOWN

        while low < best.I and room():
            while low < best.I and room() and decide(low, _REFUTERS) is Status.INFEASIBLE:
                low += 1
            for step in _GALLOP:  # a few I above the first open one (the optimum is mostly
                if low + step >= best.I or not room() or decide(low + step).has_solution:
                    break  # at it): where it is hard, a schedule just above it
            limit *= 2
        self.probed = {ii for ii in tried if ii < best.I and ii not in refuted}
        log.info("search %s: probes: I in [%d, %d], %d refuted", self.graph.name, low, best.I,
                 len(refuted))  # fmt: skip
        return best, refuted

    def record(self, ii: int, upper: int, r: SolveResult) -> SolveResult:
        """Keep the Phase-1 answer ``r`` at ``ii``: among the attempts, as the incumbent when
        it has a schedule, raising the proven bound when it is a proof from MII up without a
        hole; then report it."""
        self.attempts.append(r)
        if r.solution is not None and r.objective is not None:
            self.best = (ii, int(r.objective))
        if r.status is Status.INFEASIBLE and self.low == ii:
            self.low = ii + 1  # proofs from MII up without a hole raise the bound
        self.event(ii, upper, r)
        return r

    def stopped(
        self,
        ii: int,
        heur: HeuristicSchedule | None,
        certificate: list[CertificateEntry],
        refuted: Mapping[int, CertificateEntry],
    ) -> bool:
        """True when too little time is left to start the solve at ``ii``; the entries up
        to the incumbent then say why they are open (``untried``), or that a probe refuted
        them (``refuted``)."""
        left = self.left()
        if left is None or left >= MIN_SLICE:
            return False
        log.info("search %s: total time limit hit before I=%d", self.graph.name, ii)
        if heur is not None:
            certificate += [refuted.get(i, CertificateEntry(i, "untried", "total time limit"))
                            for i in range(ii, heur.I)]  # fmt: skip
        return True

    def room_at_incumbent(self) -> bool:
        """True when enough time is left to minimise ``L`` at the incumbent's ``I``."""
        left = self.left()
        return left is None or left > _AT_INCUMBENT_MIN

    def at_incumbent(self, heur: HeuristicSchedule, r: SolveResult | None) -> SolveResult:
        """The answer at the incumbent's ``I``: ``r``, Phase 1 there with ``L`` minimised
        from the incumbent in the time left (``None``: too little time for it), when it has a
        schedule, else the incumbent itself (FEASIBLE, ``L`` unproven)."""
        if r is not None and r.status is Status.INFEASIBLE:  # a verified schedule refutes it
            raise VerificationError(
                [f"I={heur.I} proven infeasible, but the incumbent schedule is legal"],
                what=f"phase-1 proof ({self.settings.backend})",
            )
        if r is not None and r.solution is not None:
            return r
        stats = {"schedule_source": "incumbent", "length_status": "skipped (time limit)"}
        return phase1_result(Status.FEASIBLE, heur.I, dict(heur.schedule), heur.L,
                             self.settings.backend, 0.0, 0, stats)  # fmt: skip
