"""Public Twill entry point (``twill.twill_solver``): optimal software pipelining (paper §5).

:func:`twill_solve` composes the steps of Algorithm 1 as a readable chain:

1. check the graph (:func:`twill.sched.validate.check_graph`);
2. Phase 1: search ``I = MII, MII+1, ...`` for the minimum initiation interval with an exact
   modulo scheduler and a certificate (:func:`twill.sched.exact.search.search_min_ii`);
3. Phase 2, joint modulo scheduling and warp specialisation (Algorithm 1), when the problem
   has a warp model (:func:`has_warp_model`: the machine has more than one warp, as the GPU
   kernels do) or when asked for with ``phase2=True``;
4. verify the answer once, through the problem's ``verify``
   (:class:`twill.sched.problems.ModuloProblem`, :class:`~twill.sched.problems.WarpSpecProblem`),
   and package it as a frozen :class:`TwillResult`.

The result's ``problem`` says which problem its ``optimal`` refers to: ``"modulo"`` (the
minimum initiation interval of modulo scheduling, Phase 1 alone) or
``"modulo+warp-specialisation"`` (the minimum ``I`` of a joint schedule and warp assignment,
which can be larger than the modulo minimum).

Every schedule returned has passed the independent verifiers, once. Only this front door
prints, and only with ``verbose=True`` (:func:`format_result`); the solvers underneath log.

Examples
--------
>>> from twill.kernels import flash_attention_forward_simplified
>>> r = twill_solve(flash_attention_forward_simplified(), max_I=5)
>>> r.I, r.optimal, r.L, r.schedule
(2, True, 4, {'S': 0, 'P': 2, 'O': 3})
"""

from __future__ import annotations

import os
import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field, replace
from typing import Any

from twill.options import SolverOptions
from twill.progress import OnProgress
from twill.results import SolveResult, Status, WarpSchedule
from twill.sched.exact.search import (
    CertificateEntry,
    SearchResult,
    search_as_result,
    search_min_ii,
    search_result_fields,
)
from twill.sched.ir import DependenceGraph
from twill.sched.problems import (
    PROBLEM_MODULO,
    PROBLEM_WARP_SPECIALISATION,
    ModuloProblem,
    WarpSpecProblem,
    has_warp_model,
)
from twill.visualization.text import format_mrt, format_result

__all__ = [
    "PROBLEM_MODULO",
    "PROBLEM_WARP_SPECIALISATION",
    "TwillResult",
    "twill_solve",
    "has_warp_model",
    "format_result",
    "format_mrt",
]


@dataclass(frozen=True)
class TwillResult:
    """Answer of :func:`twill_solve`.

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


def _as_graph(graph: Any) -> DependenceGraph:
    """The graph itself, or the graph a kernel name or file path names (as ``twill solve``)."""
    if isinstance(graph, DependenceGraph):
        return graph
    if isinstance(graph, str | os.PathLike):
        from twill.io import load_graph

        return load_graph(graph)
    raise TypeError(
        "twill_solve expects a DependenceGraph, a kernel name (see `twill kernels`) or the path "
        f"of a .json, .yaml or .graphml graph, found {type(graph).__name__}"
    )


def _phase1(graph: DependenceGraph, **options: Any) -> SearchResult:
    return search_min_ii(graph, check=False, **options)


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


def _check_options(
    max_I: object,
    backend: object,
    time_limit: object,
    threads: object,
    total_time_limit: object,
    phase2_time_limit: object,
) -> None:
    """The numeric and choice options of :func:`twill_solve`, checked as the CLI checks them."""
    from twill.sched.exact.phase1 import BACKENDS
    from twill.validation import MAX_THREADS, check_choice, check_int, check_time_limit

    check_int(max_I, "max_I", none=True)
    check_choice(backend, "backend", BACKENDS)
    check_int(threads, "threads", maximum=MAX_THREADS)
    for name, value in (("time_limit", time_limit), ("total_time_limit", total_time_limit),
                        ("phase2_time_limit", phase2_time_limit)):  # fmt: skip
        check_time_limit(value, name)


def twill_solve(
    graph: DependenceGraph | str | os.PathLike[str],
    max_I: int | None = None,
    verbose: bool = False,
    backend: str = "cbc",
    time_limit: float | None = None,
    *,
    tie_break: bool = True,
    threads: int = 1,
    on_attempt: Callable[[Any], None] | None = None,
    total_time_limit: float | None = None,
    phase2: bool | None = None,
    probe: bool = False,
    phase2_time_limit: float | None = None,
    on_progress: OnProgress | None = None,
    options: SolverOptions | None = None,
) -> TwillResult:
    """Minimum-I modulo schedule of ``graph`` with a proof of optimality.

    Parameters
    ----------
    graph
        The loop body and its machine (e.g. from :mod:`twill.kernels` or
        :func:`twill.io.load_graph`), or, as on the command line, a kernel name
        (``"simple_gemm_pipeline"``) or the path of a ``.json``, ``.yaml`` or ``.graphml``
        graph.
    max_I
        Largest initiation interval to try (``None``: until a schedule is certain to exist).
    verbose
        Print a readable summary (:func:`format_result`) to stdout.
    backend
        ``"cbc"`` (PuLP + CBC, the paper's solver) or ``"cpsat"`` (OR-Tools CP-SAT).
    time_limit
        Seconds per Phase-1 solve (``None``: no limit). A limit hit below the answer makes
        it "not proven optimal".
    tie_break
        Deterministic as-late-as-possible choice among schedules of minimum ``L``.
    threads
        Solver threads.
    on_attempt
        Called after every Phase-1 solve (progress bars).
    total_time_limit
        Seconds for the whole call, Phase 1 and Phase 2 together (``None``: no limit). Every
        solver call gets the smaller of its own limit and the time left, so the call ends
        within about this time plus one solver's reaction time; it then returns the best
        verified answer found: the Phase-1 incumbent (FEASIBLE, with ``lower_bound`` and
        ``gap``) for a modulo problem, or UNKNOWN when Phase 2 found no joint schedule in time.
    phase2
        Run Phase 2 (joint SWP + warp specialisation, Algorithm 1); the result then carries
        ``extra["warps"]``, ``["points"]`` and ``["phase1_I"]``
        (:func:`twill.sched.exact.algorithm1.merge_into`). ``None`` (default): decided by the
        problem, Phase 2 exactly when the machine has a warp model (:func:`has_warp_model`).
    probe
        Phase 2 only on the window at the Phase-1 optimal I.
    phase2_time_limit
        Seconds per Phase-2 ``(I, L)`` point (a hit is "unknown", never unsat).
    on_progress
        Called with a :class:`twill.progress.ProgressEvent` before and after every Phase-1
        solve and every Phase-2 point (the function itself never prints progress).

    options
        The shared :class:`~twill.options.SolverOptions`: when given, its ``threads``, its
        ``time_limit`` (as ``total_time_limit``, and as ``phase2_time_limit`` unless that is
        given) and its ``on_progress`` replace those keywords.

    Returns
    -------
    TwillResult

    Raises
    ------
    InvalidProblemError
        The graph or an option is invalid (every defect listed), or an unknown kernel name.
    TypeError
        ``graph`` is neither a graph, a kernel name nor a path; ``phase2`` is not a bool.

    Notes
    -----
    Objective: minimum ``I`` (paper §5) of the problem in ``result.problem``, then minimum
    ``L`` at that ``I``. Guarantee:
    ``optimal`` only with an unbroken chain of proofs below ``I``. Fails when ``max_I`` is too
    small (status INFEASIBLE) or time limits are hit (UNKNOWN).

    Examples
    --------
    >>> from twill.kernels import flash_attention_forward_simplified
    >>> twill_solve(flash_attention_forward_simplified(), max_I=5).schedule
    {'S': 0, 'P': 2, 'O': 3}
    """
    t0 = time.perf_counter()
    started = time.monotonic()
    if options is not None:
        given = dict(threads=threads, total_time_limit=total_time_limit, on_progress=on_progress)
        chosen = options.overrides("total_time_limit", **given)
        threads, on_progress = chosen["threads"], chosen.get("on_progress")
        total_time_limit = chosen.get("total_time_limit")
        if phase2_time_limit is None:  # each Phase-2 point is bounded by the same limit
            phase2_time_limit = options.time_limit
    graph = _as_graph(graph)
    _check_options(max_I, backend, time_limit, threads, total_time_limit, phase2_time_limit)
    WarpSpecProblem(graph, max_II=max_I).check()  # step 1: every defect at once
    if phase2 is not None and not isinstance(phase2, bool):
        raise TypeError(f"phase2 must be None, True or False, found {phase2!r}")
    run_phase2 = has_warp_model(graph) if phase2 is None else phase2
    deadline = None if total_time_limit is None else started + total_time_limit
    p1 = _phase1(  # step 2: Phase 1 + search for the minimum I
        graph,
        max_I=max_I,
        backend=backend,
        time_limit=time_limit,
        tie_break=tie_break,
        threads=threads,
        on_attempt=on_attempt,
        deadline=deadline,
        on_progress=on_progress,
        warm_start=not run_phase2,  # Phase 2 starts from Phase 1's schedule (decisions.md)
    )
    result = _package(graph, p1, t0)
    if run_phase2:  # step 3: Phase 2 + Algorithm 1 (warps)
        from twill.sched.exact.algorithm1 import algorithm1, merge_into

        result = replace(result, problem=PROBLEM_WARP_SPECIALISATION)
        if p1.schedule is not None:
            alg = algorithm1(graph, phase1=p1, max_I=max_I, probe=probe, backend=backend,
                             phase1_time_limit=time_limit, time_limit=phase2_time_limit,
                             on_progress=on_progress, deadline=deadline,
                             options=SolverOptions(threads=threads))  # fmt: skip
            result = merge_into(result, alg, graph)
    _verify(result, graph)  # step 4: verified once, before anything is returned or shown
    if verbose:
        print(format_result(result, graph))  # the front door shows; the solvers only log
    return result
