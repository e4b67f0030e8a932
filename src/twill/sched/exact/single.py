"""Twill's problem as the union that holds the baseline: warp specialisation, or one partition.

Algorithm 1 (:mod:`.algorithm1`, paper §5) searches joint schedules in which every operation
runs on the warp groups its layout needs and the variable-latency operations have a warp of
their own. A loop compiled *without* warp specialisation is not in that space: all of its
operations, loads included, are issued by all ``num_warps`` warps of the CTA, each tensor spread
over them (fewer registers per thread), and no value is handed from one warp to another (no
spill cost). That is what Triton's default does, and what a loop run one operation after
another does. So Twill's problem for a kernel with a known CTA width is the union of

* **warp specialisation**: Algorithm 1 on the graph as extracted
  (:data:`~twill.sched.problems.PROBLEM_WARP_SPECIALISATION`);
* **one partition** (:func:`single_partition_graph`): every operation on the same
  ``num_warps`` warps, registers spread; its smallest ``I`` is searched by the pinned search
  (:func:`~twill.sched.exact.pinned.solve_pinned`, the warp slots fixed, stages and order free,
  an operation starting within :data:`SINGLE_PARTITION_STAGES` stages: the depth of Triton's
  default pipeliner, ``num_stages = 3``);
* **the sequential loop**: that partition running one operation after another, one iteration
  at a time (:func:`~twill.sched.exact.witness.sequential_candidate`), always evaluated and
  verified.

The answer is the verified candidate of least ``I`` (then ``L``; on a tie the one partition,
which needs none of Triton's warp-specialisation passes, then warp specialisation). It is
*optimal for the union* only when its ``I`` is at most the proven lower bound of each part:
Algorithm 1's (its certificate), and the single partition's (the larger of Phase 1's proven
minimum, a relaxation of both parts, and the pinned search's refutations). Otherwise it is
feasible with the gap stated.

The single partition's search first places the ops without a solver at each ``I`` from the
bound upward (:func:`~twill.sched.exact.pinned.constructed`, verified): the first that fits is
an incumbent in moments. Algorithm 1 then searches only below it, and the pinned search last
only below the best ``I`` either found (ties between found schedules go to the one partition).

Preconditions: the graph passed :func:`twill.sched.validate.check_graph`.
"""

from __future__ import annotations

import math
import time
from dataclasses import dataclass, replace
from typing import Any

from twill.deadline import MIN_SLICE, Deadline
from twill.options import SolverOptions
from twill.results import Status, WarpSchedule
from twill.sched.exact.pinned import Pins, constructed, solve_pinned
from twill.sched.exact.search import TwillResult, proven_lower_bound, topological_order
from twill.sched.exact.witness import register_aware_order, sequential_candidate
from twill.sched.ir import DependenceGraph
from twill.sched.problems import PROBLEM_UNION
from twill.sched.verify_warps import WARPS_PER_SLOT, WarpRules, slots_needed

__all__ = [
    "SINGLE_PARTITION_STAGES",
    "UnionPart",
    "single_partition_graph",
    "single_partition_slots",
    "solve_union",
]

#: Stages an operation of the single-partition search may start in (Triton's default
#: ``num_stages``).
SINGLE_PARTITION_STAGES = 3
#: Share of the time left that Algorithm 1 (warp specialisation) may take; the one partition's
#: pinned search, which then only has to go up to what Algorithm 1 found, gets the rest.
_SHARE = 2 / 3


def single_partition_graph(graph: DependenceGraph, num_warps: int) -> DependenceGraph:
    """``graph`` without warp specialisation: every operation (the variable-latency ones
    included: without a producer warp the CTA's warps issue the loads) on the same warps, the
    CTA's ``num_warps`` or the widest op's if wider (a tile placed over more warp groups
    than the kernel has, for want of registers), at most the machine's warp slots, each
    register tile spread over them (``ceil(regs x warps / width)`` registers per thread).

    >>> from twill.kernels import simple_gemm_pipeline
    >>> g = single_partition_graph(simple_gemm_pipeline(), 8)
    >>> sorted({(i.warps, i.variable_latency) for i in g.instructions})
    [(8, False)]
    """
    widest = max((i.warps for i in graph.instructions), default=1)
    width = min(max(num_warps, widest), WARPS_PER_SLOT * max(1, graph.machine.warps))
    ins = []
    for i in graph.instructions:
        warps = max(i.warps, width)
        regs = math.ceil(i.regs * max(i.warps, 1) / warps) if i.regs else 0
        ins.append(replace(i, warps=warps, regs=regs, variable_latency=False, streaming=False))
    return replace(graph, instructions=tuple(ins))


def single_partition_slots(graph: DependenceGraph) -> dict[str, tuple[int, ...]]:
    """The one partition's warp slots: every op of a :func:`single_partition_graph` on slots
    ``0 .. k - 1`` (``k`` its width in warp groups)."""
    return {i.name: tuple(range(slots_needed(i))) for i in graph.instructions}


@dataclass(frozen=True)
class UnionPart:
    """One part of the union: its verified answer (``None`` without one) and the proven lower
    bound on its ``I``."""

    name: str
    schedule: WarpSchedule | None
    lower_bound: int
    status: str
    seconds: float = 0.0

    def to_dict(self) -> dict[str, Any]:
        s = self.schedule
        return {"I": s.I if s else None, "L": s.L if s else None, "status": self.status,
                "lower_bound": self.lower_bound, "seconds": round(self.seconds, 3)}  # fmt: skip


def _sequential(graph: DependenceGraph, rules: WarpRules) -> WarpSchedule | None:
    """The one partition run one operation after another (verified), or ``None``."""
    slots = single_partition_slots(graph)
    if any(max(s) >= rules.num_warps(graph) for s in slots.values()):
        return None
    for order in (topological_order(graph), register_aware_order(graph)):
        if len(order) == len(graph.names):
            w = sequential_candidate(graph, order, rules, slots)
            if w is not None:
                return WarpSchedule.of(graph, w.schedule, w.assignment, w.I, w.L)
    return None


def _pins(graph: DependenceGraph) -> Pins | None:
    """The one partition's pins (every op on its slots, at most the stages Triton's default
    pipeliner uses), or ``None`` when an op needs more warps than the CTA has."""
    slots = single_partition_slots(graph)
    if any(max(s) >= graph.machine.warps for s in slots.values()):
        return None
    return Pins(slots=slots, free_stages=SINGLE_PARTITION_STAGES - 1)


def _constructed_one(
    graph: DependenceGraph, pins: Pins, floor: int, cap: int, deadline: Deadline
) -> WarpSchedule | None:
    """The one partition placed without a solver at each ``I`` from ``floor`` up to ``cap``:
    the first that fits (verified by :func:`constructed`), an incumbent in moments."""
    rules = WarpRules.for_graph(graph)
    for ii in range(max(floor, 1), cap + 1):
        if deadline.short_of(MIN_SLICE):
            break
        made = constructed(graph, pins, ii, rules)
        if made is not None:
            return WarpSchedule.of(graph, made[1], made[2], ii, made[0])
    return None


def _single(
    graph: DependenceGraph, pins: Pins | None, span: tuple[int, int, int], built: Any, end: Deadline
) -> UnionPart:
    """The one partition's smallest ``I``: ``built`` (the constructed incumbent, or ``None``)
    and the pinned search (slots fixed) over ``floor <= I <= top`` of ``span = (floor, top,
    cap)``, where ``top`` stops below what another part already has (``cap``: the sequential
    loop's ``I``, the one partition's own ceiling)."""
    floor, top, cap = span
    t0 = time.perf_counter()
    if pins is None:
        return UnionPart("single_partition", None, floor, "infeasible")
    r = solve_pinned(graph, pins, max_I=top, deadline=end) if top >= floor else None
    seconds = time.perf_counter() - t0
    if r is not None and isinstance(r.solution, WarpSchedule):
        low = max(floor, int(r.bound or 0))
        return UnionPart("single_partition", r.solution, low, r.status.value, seconds)
    refuted = r is None or r.status is Status.INFEASIBLE  # every I up to top
    low = top + 1 if refuted else max(floor, int(r.bound or 0) if r is not None else floor)
    if built is not None:
        status = "optimal" if refuted and top + 1 >= built.I else "feasible"
        return UnionPart("single_partition", built, min(low, built.I), status, seconds)
    status = f"none for I <= {top}" if refuted else (r.status.value if r else "unknown")
    if refuted and top >= cap:
        status = f"none for I <= {cap}"
    return UnionPart("single_partition", None, low, status, seconds)


def solve_union(
    graph: DependenceGraph,
    phase1: TwillResult,
    num_warps: int,
    options: SolverOptions | None = None,
    *,
    max_I: int | None = None,
) -> TwillResult:
    """The union's answer (module docstring) from Phase 1's finished search on ``graph``
    (:func:`~twill.sched.exact.search.search_min_ii`): the one partition of ``num_warps``
    warps placed without a solver first (an incumbent in moments), then Algorithm 1 below it
    (no ``I`` at or above it can win; at most two thirds of the options' time left), then the
    one partition's pinned search below the best ``I`` found, with the rest, up to ``max_I``.
    (Searching the one partition first spent a third of a 600 s limit on the B200 forward,
    whose warp-specialised optimum, 20, Algorithm 1 proves in 2 s.)

    Returns
    -------
    TwillResult
        Problem :data:`~twill.sched.problems.PROBLEM_UNION`; ``extra["union"]`` gives each
        part (``I``, ``L``, ``status``, ``lower_bound``), ``picked`` the part answered,
        ``union_lower_bound`` and ``single_partition_warps``. The warp schedule of a
        one-partition answer is on the :func:`single_partition_graph` (the same operations,
        edges and units).

    Examples
    --------
    >>> from twill.kernels import simple_gemm_pipeline
    >>> from twill.sched.exact.search import search_min_ii
    >>> g = simple_gemm_pipeline()
    >>> r = solve_union(g, search_min_ii(g), 4)
    >>> r.problem, r.I <= r.extra["union"]["sequential"]["I"]
    ('modulo+warp-specialisation|single-partition', True)
    """
    from twill.sched.exact.algorithm1 import algorithm1

    options = SolverOptions.of(options).start()
    t0 = time.perf_counter()
    floor = proven_lower_bound(phase1) if phase1.I is not None else phase1.mii  # a relaxation
    sp = single_partition_graph(graph, num_warps)
    seq = _sequential(sp, WarpRules.for_graph(sp))
    if seq is not None and max_I is not None and seq.I > max_I:
        seq = None
    cap = (
        seq.I if seq is not None else 2 * max(floor, 1) + sum(i.cycles for i in graph.instructions)
    )
    cap = min(cap, max_I) if max_I is not None else cap
    pins = _pins(sp)
    built = _constructed_one(sp, pins, floor, cap, options.clock) if pins is not None else None
    ceiling = min((x.I for x in (built, seq) if x is not None), default=None)
    top = max_I if ceiling is None else max(ceiling - 1, phase1.I or 1)
    # warp specialisation first, below the one partition's incumbent (no I at or above it can
    # win: ties go to the one partition); then the pinned search only up to what it found
    joint = algorithm1(graph, options.child(fraction=_SHARE), phase1=phase1, max_I=top)
    ws_low = top + 1 if joint.status is Status.INFEASIBLE and top is not None else (
        proven_lower_bound(joint))  # fmt: skip
    ws_status = joint.status.value
    if joint.status is Status.INFEASIBLE and top is not None:
        ws_status = f"none for I <= {top}"  # searched below the one partition's I only
    ws_part = UnionPart("warp_specialisation", joint.warp_schedule, ws_low, ws_status,
                        joint.seconds)  # fmt: skip
    # the pinned search only below what is found: below Algorithm 1's I (a tie there is not
    # searched; refuting it took 10 s on the B200 forward) and below the constructed incumbent
    tops = [cap] + [x.I - 1 for x in (built, joint.warp_schedule) if x is not None]
    one_top = min(tops)
    one = _single(sp, pins, (floor, one_top, cap), built, options.clock)
    parts = (ws_part, one, UnionPart("sequential", seq, floor, "feasible" if seq else "none"))
    return _pick(joint, parts, floor, num_warps, time.perf_counter() - t0)


def _pick(
    joint: TwillResult,
    parts: tuple[UnionPart, UnionPart, UnionPart],
    floor: int,
    num_warps: int,
    seconds: float,
) -> TwillResult:
    """The union's answer from its parts (warp specialisation, one partition, sequential):
    least ``I``, then ``L``, ties to the one partition; optimal when at most every part's
    proven lower bound."""
    ws_part, one, _ = parts
    extra = {**joint.extra, "union": {p.name: p.to_dict() for p in parts}, "picked": None,
             "single_partition_warps": num_warps, "union_seconds": round(seconds, 3)}  # fmt: skip
    found = [p for p in parts if p.schedule is not None]
    if not found:  # infeasible only when both searched parts are refuted
        refuted = all(p.status == "infeasible" or p.status.startswith("none for")
                      for p in (ws_part, one))  # fmt: skip
        status = Status.INFEASIBLE if refuted else Status.UNKNOWN
        return replace(joint, status=status, optimal=False, problem=PROBLEM_UNION, extra=extra)
    rank = {"single_partition": 0, "warp_specialisation": 1, "sequential": 2}  # ties
    best = min(found, key=lambda p: (p.schedule.I, p.schedule.L, rank[p.name]))  # type: ignore[union-attr]
    ws = best.schedule
    assert ws is not None
    bound = min(ws_part.lower_bound, max(one.lower_bound, floor))
    optimal = ws.I <= bound
    extra.update(picked=best.name, union_lower_bound=bound)
    status = Status.OPTIMAL if optimal else Status.FEASIBLE
    if best is ws_part:
        return replace(joint, status=status, optimal=optimal, problem=PROBLEM_UNION,
                       L_optimal=joint.L_optimal and optimal, extra=extra)  # fmt: skip
    extra.update(warps=ws.warps, assignment={v: list(w) for v, w in ws.assignment.items()},
                 phase2_reason=f"the {best.name.replace('_', ' ')} answer: no warp-specialised "
                 "one below it")  # fmt: skip
    return replace(joint, status=status, I=ws.I, L=ws.L, schedule=dict(ws.schedule),
                   optimal=optimal, L_optimal=False, warp_schedule=ws, problem=PROBLEM_UNION,
                   extra=extra)  # fmt: skip
