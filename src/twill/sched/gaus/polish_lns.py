"""Large-neighbourhood search after GauS (post-processing, not in the GauS paper).

The local searches of :mod:`~twill.sched.gaus.polish`, :mod:`~twill.sched.gaus.polish_push`
and :mod:`~twill.sched.gaus.polish_memory` move one op, or one op and the chain it pushes, at
a time; on small, shallow designs they stop in local optima that an exact model escapes (EPFL
``int2float``, formulation A). This search frees a *neighbourhood* of ops, pins every other
op to its current step, and solves the formulation's exact CP-SAT model
(:func:`twill.sched.baselines.exact.build_model`) over the freed ops, starting from the
current schedule as a hint. A result is kept when the formulation's true objective
(:func:`~twill.sched.gaus.verify.discrete_objective`) does not increase and the schedule is
legal, so the search never makes a schedule worse.

Neighbourhoods, taken in turn:

* ``steps``: every op whose start lies in a random run of consecutive steps;
* ``graph``: a breadth-first ball around a random op over the dependence edges;
* ``peak`` (formulations A and B): one op on every step of peak usage (A), or one value live
  at every step of peak memory with its producer and last consumers (B), and their
  neighbours, with the peak capped one lower, so the peak can be flattened.

The neighbourhood size adapts: it grows by 20 % after a sub-problem CP-SAT solved to
optimality within its time cap, and shrinks by 20 % otherwise.

In formulation A with one resource, :func:`lns_search` ends in stages that lower the peak,
and each stage first re-optimises the whole schedule with every op within a step of its
start (:func:`_shifted`), which moves the long chains no neighbourhood moves alone.

Preconditions: ``t`` is a legal schedule of ``g`` at ``D`` (and ``II`` for C). Formulation
C's model minimises the weighted lifetimes, a proxy of modulo MaxLive; its results are
compared on MaxLive all the same.
"""

from __future__ import annotations

import logging
import time
from dataclasses import dataclass, field

import numpy as np

from twill.deadline import NO_DEADLINE, Deadline
from twill.sched.baselines import force_directed, list_sched
from twill.sched.baselines.exact import ModelSpec, solve_window
from twill.sched.baselines.list_sched import capped_list_schedule
from twill.sched.baselines.time_indexed import (
    PeakLPs,
    capped_rounding,
    lp_guided_schedule,
    lp_rounded_schedule,
    min_communication_schedule,
)
from twill.sched.gaus.bounds import modulo_asap
from twill.sched.gaus.graph import GauSGraph, asap_alap
from twill.sched.gaus.polish_push import Adjacency
from twill.sched.gaus.result import best_so_far
from twill.sched.gaus.verify import (
    discrete_objective,
    live_profile,
    resource_profile,
    schedule_violations,
)

__all__ = ["LNSProblem", "LNSReport", "best_so_far", "lns_improve", "lns_search"]

log = logging.getLogger(__name__)

_NEIGHBOURHOODS = {
    "A": ("peak", "steps", "graph"),
    "B": ("peak", "steps", "graph"),
    "C": ("steps", "graph"),
}


@dataclass(frozen=True)
class LNSProblem:
    """The instance a search works on: graph, formulation, latency bound, II (C) and the
    peak weight (A)."""

    g: GauSGraph
    formulation: str
    D: int
    II: int | None = None
    ratio: float = 100.0

    def objective(self, t: np.ndarray) -> float:
        """The formulation's true objective of ``t``."""
        return discrete_objective(self.g, t, self.formulation, D=self.D, II=self.II,
                                  ratio=self.ratio)  # fmt: skip

    def legal(self, t: np.ndarray) -> bool:
        """Whether ``t`` passes the verifier."""
        II = self.II if self.formulation == "C" else None
        return not schedule_violations(self.g, t, self.D, II)


@dataclass
class LNSReport:
    """What one search did: sub-problems solved, improvements kept, objectives, the any-time
    curve ``(seconds, best objective so far)`` (seconds since the clock the search was given,
    by default its own start; :func:`lns_search` gives all its phases its own start, so the
    curve spans the whole search), and, in A when the time-indexed LP was solved, the lower
    bound it proves (:meth:`twill.sched.baselines.time_indexed.PeakLPs.lower_bound`)."""

    rounds: int = 0
    improvements: int = 0
    before: float = float("nan")
    after: float = float("nan")
    history: list[tuple[float, float]] = field(default_factory=list)
    lower_bound: float | None = None


def lns_improve(
    problem: LNSProblem,
    t: np.ndarray,
    *,
    time_limit: float = 30.0,
    sub_limit: float = 1.0,
    size: int = 40,
    seed: int = 0,
    clock: float | None = None,
) -> tuple[np.ndarray, LNSReport]:
    """Improve the legal schedule ``t`` by repeated exact re-optimisation of neighbourhoods.

    Parameters
    ----------
    problem, t
        The instance and a legal schedule of it.
    time_limit
        Wall-clock seconds for the whole search.
    sub_limit
        CP-SAT's cap per neighbourhood, seconds.
    size
        Initial number of freed ops (adapted during the search).
    seed
        Seeds the choice of neighbourhoods and CP-SAT.
    clock
        ``time.perf_counter()`` value from which the report's curve counts seconds (``None``:
        the call's start).

    Returns
    -------
    (schedule, report)
        The best legal schedule found (``t`` itself when nothing improved) and a report.
    """
    from ortools.sat.python import cp_model

    start = time.perf_counter()
    origin = start if clock is None else clock
    g, D = problem.g, problem.D
    rng = np.random.default_rng(seed)
    window = _start_window(problem)
    cur = np.asarray(t, dtype=np.int64).copy()
    cur_obj = problem.objective(cur)
    report = LNSReport(before=cur_obj, after=cur_obj, history=[(start - origin, cur_obj)])
    adj = Adjacency(g)
    neighbours = _undirected_neighbours(adj)
    kinds = _NEIGHBOURHOODS[problem.formulation]
    k = float(min(size, g.n))
    while time.perf_counter() - start < time_limit:
        kind = kinds[report.rounds % len(kinds)]
        free = _neighbourhood(kind, problem.formulation, g, cur, int(k), neighbours, rng, D)
        left = time_limit - (time.perf_counter() - start)
        code, cand = _solve_neighbourhood(problem, cur, free, kind, window, adj,
                                          max(0.05, min(sub_limit, left)), rng)  # fmt: skip
        report.rounds += 1
        k = min(float(g.n), k * 1.2) if code == cp_model.OPTIMAL else max(8.0, k * 0.8)
        if cand is None:
            continue
        obj = problem.objective(cand)
        if obj > cur_obj or not problem.legal(cand):
            continue
        if obj < cur_obj:
            report.improvements += 1
            report.history.append((time.perf_counter() - origin, obj))
            log.info("LNS %s neighbourhood of %d ops: %s -> %s", kind, len(free), cur_obj, obj)
        cur, cur_obj = cand, obj
    report.after = cur_obj
    return cur, report


def _start_window(problem: LNSProblem) -> tuple[np.ndarray, np.ndarray]:
    """Every op's feasible start range: ASAP/ALAP under ``D``, raised to the modulo ASAP in C."""
    asap, alap = asap_alap(problem.g, problem.D)
    if problem.formulation == "C" and problem.II is not None:
        masap = modulo_asap(problem.g, problem.II)
        if masap is not None:
            asap = np.maximum(asap, masap)
    return asap, alap


def _solve_neighbourhood(
    problem: LNSProblem,
    cur: np.ndarray,
    free: np.ndarray,
    kind: str,
    window: tuple[np.ndarray, np.ndarray],
    adj: Adjacency,
    limit: float,
    rng: np.random.Generator,
) -> tuple[int, np.ndarray | None]:
    """CP-SAT on the exact model with the ops outside ``free`` pinned (in A a peak
    neighbourhood also caps the peak one below the current one; in B the peak is the
    objective itself, left uncapped so that moves at an equal peak stay open); returns the
    status and the schedule."""
    g, D = problem.g, problem.D
    lo, hi = _free_windows(adj, cur, free, window)
    cap = None
    if kind == "peak" and problem.formulation == "A":
        cap = max(0, _peak(g, cur) - 1)
    spec = ModelSpec(problem.formulation, D, problem.II, problem.ratio, lo, hi, peak_cap=cap)
    return solve_window(g, spec, hint=cur, time_limit=limit, seed=int(rng.integers(1 << 30)))


def lns_search(
    problem: LNSProblem,
    t: np.ndarray,
    *,
    time_limit: float = 30.0,
    seed: int = 0,
    deadline: Deadline = NO_DEADLINE,
) -> tuple[np.ndarray, LNSReport, str]:
    """:func:`lns_improve` from several starts, raced: once the starts are built (and those
    far behind the best dropped, :func:`_promising`), they race for up to half of what is
    left (:func:`_race`), and the best schedule then gets the rest (in formulation A with one
    resource, in stages, each later one from the previous result rounded below its peak:
    :func:`_improve_and_lower_the_peak`).

    The starts are ``t`` and, in formulation A with one resource, schedules at lower peaks:
    the LP-guided schedules of :func:`_lp_guided_starts` (up to 40 % of the budget) and
    the capped roundings of ``t`` and of the least-communication schedule
    (:func:`_rounded_starts`) where they beat ``t``, or, where neither gives one, the capped
    list schedules (:func:`~twill.sched.baselines.list_sched.capped_list_schedule`) at every
    peak below ``t``'s that the list scheduler can meet (on EPFL ``max`` 229 of them took
    40 s, and all were more than 1.7× behind the rounded start). In B and C
    they are the baseline schedules of :func:`_baseline_starts`. Why: lowering the peak by
    one needs most ops to move at once, which no neighbourhood reaches (EPFL ``router``: in
    a traced search, every neighbourhood of up to 170 of its 317 ops proved peak 7
    infeasible around GauS's peak-8 schedule, while the optimum has peak 6). Returns the
    best schedule, the report of the search that produced it, and the name of its start.
    The search runs on a child of the caller's ``deadline``: ``time_limit`` at most.
    """
    start = time.perf_counter()
    clock = deadline.child(time_limit)

    def left() -> float:  # the child is limited: time_limit is a number
        return clock.remaining() or 0.0

    starts = [("GauS", np.asarray(t, dtype=np.int64))]
    bound = None
    one_resource = _single_integral_resource(problem)
    if one_resource:
        rounded = _rounded_starts(problem, starts[0][1], clock.child(0.1 * time_limit))
        budget = 0.4 * time_limit - (time.perf_counter() - start)
        guided, bound = _lp_guided_starts(problem, starts[0][1], budget, seed, deadline=clock)
        starts += (guided + rounded) or _capped_list_starts(problem, starts[0][1])
    else:
        starts += _baseline_starts(problem)
    starts = _promising(problem, starts)
    finish = _improve_and_lower_the_peak if one_resource else lns_improve
    if len(starts) == 1:
        best, rep = finish(problem, starts[0][1], time_limit=left(), seed=seed, clock=start)
        rep.lower_bound = bound
        return best, rep, starts[0][0]
    k, cand, first, history = _race(problem, starts, 0.5 * left(), seed, start)
    final, rep = finish(problem, cand, time_limit=left(), seed=seed + 2 * len(starts),
                        clock=start)  # fmt: skip
    rep.rounds += first.rounds
    rep.improvements += first.improvements
    rep.before = problem.objective(starts[k][1])
    rep.lower_bound = bound
    rep.history = best_so_far([*history, *rep.history])
    return final, rep, starts[k][0]


def _race(
    problem: LNSProblem,
    starts: list[tuple[str, np.ndarray]],
    budget: float,
    seed: int,
    clock: float,
) -> tuple[int, np.ndarray, LNSReport, list[tuple[float, float]]]:
    """:func:`lns_improve` from each start in two rounds of ``budget / 2`` each, the second
    only for the starts that could still catch the leader: those that, gaining as much again
    as in the first round, would come within :data:`_RACE_KEEP` of the leader's value.
    Where a start's first round is longer than :data:`_RACE_GLANCE` seconds, it is cut
    after that glance when, gaining at the glance's pace to the end of the round, it would
    still not come within :data:`_RACE_KEEP` of the leader's value. Returns the index of
    the best start, its schedule, its report (rounds of both rounds counted) and the curve
    of all the searches. Where only the leader is left, the second round is not run and its
    time goes to what follows.

    Why: the search's gains slow down, so a start that trails by more than its own pace
    does not catch up (EPFL ``max``: after 139 s each, GauS's schedule went from 135890 to
    120377, its rounding from 118106 to 110514 and the rounded least-communication schedule
    from 97315 to 95256), and the time they took is worth more to the finish. A start far
    behind but fast stays (EPFL ``i2c``: the LP's rounding, 1.49× behind GauS's schedule
    at the start, has won there)."""
    share = budget / 2 / len(starts)
    glance = min(share, _RACE_GLANCE)
    results = []
    for k, (_, t0) in enumerate(starts):
        cand, rep = lns_improve(problem, t0, time_limit=glance, seed=seed + k, clock=clock)
        results.append([k, cand, rep])
    history = [pt for _, _, rep in results for pt in rep.history]
    if glance < share:
        pace, reach = share / glance, (1.0 + _RACE_KEEP) * min(r[2].after for r in results)
        results = [r for r in results if r[2].before - pace * (r[2].before - r[2].after) <= reach]
        for r in results:
            history += _search_on(problem, r, share - glance, seed + 3 * len(starts), clock)
    lead = min(rep.after for _, _, rep in results)
    kept = [r for r in results if 2 * r[2].after - r[2].before <= (1.0 + _RACE_KEEP) * lead]
    if len(kept) > 1:
        for r in kept:
            history += _search_on(problem, r, budget / 2 / len(kept), seed + len(starts), clock)
    k, cand, rep = min(kept, key=lambda r: (r[2].after, r[0]))
    return k, cand, rep, history


def _search_on(
    problem: LNSProblem, entry: list, time_limit: float, seed: int, clock: float
) -> list[tuple[float, float]]:
    """:func:`lns_improve` on from a race entry ``[index, schedule, report]``, updated in
    place (its report keeps its ``before`` and counts the rounds of both searches); returns
    the new search's curve."""
    k, t0, first = entry
    cand, rep = lns_improve(problem, t0, time_limit=time_limit, seed=seed + k, clock=clock)
    rep.before = first.before
    rep.rounds += first.rounds
    rep.improvements += first.improvements
    entry[1:] = [cand, rep]
    return rep.history


# The time-indexed LP has one variable per op and step of its window. EPFL i2c (26k) takes
# about 60 s for its first LP and bar (14k) about 16 s; adder, priority, max, sin and
# arbiter (197k-492k) finish none within 40 % of a 300-s budget, which was then lost.
_LP_MAX_VARIABLES = 100_000
# Above this many (op, step) pairs in the LP's supports, the LP-guided model stops at its
# first schedule, and the search, which gains faster from there, gets the rest of the time.
# EPFL i2c (23k pairs): the first schedule after 77 s, then 2.7 % in 150 s more, where
# the search gains 11-14 % in 63-85 s; ctrl, router, int2float and cavlc (0.9k-3.9k)
# improve their first schedule within seconds, and router's restricted model ends at
# 3013, where the search from the first schedule ends at 3028.
_GUIDED_FIRST_ONLY_PAIRS = 10_000
# The length of one stage of the search's finish in A (:func:`_improve_and_lower_the_peak`):
# 840 s of search leave about 720 s for the finish on EPFL ``max``, six stages.
_STAGE_SECONDS = 120.0
# The whole-schedule model of a stage of the finish (:func:`_shifted`): each op within this
# many steps of its start, for at most this share of the stage. EPFL ``max``: within two
# steps (17k pairs), CP-SAT found no schedule in 90 s; within one, its gains come in the
# first 15-45 s.
_SHIFT_STEPS = 1
_SHIFT_SHARE = 1 / 3
# After the race's first round, a start stays when, gaining as much again, it would come
# within this fraction of the leader's value (:func:`_race`).
_RACE_KEEP = 0.02
# The race's first look at each start, seconds (:func:`_race`). EPFL ``max`` at
# ``--gaus-lns 840``: a first round of 67 s per start, of which GauS's schedule and its
# rounding, far behind, now take 20 s each, and the finish gains the rest.
_RACE_GLANCE = 20.0
# Starts worse than this factor times the best start are not raced, per formulation.
_RACE_SPREAD = {"A": 1.5, "B": 3.0, "C": 3.0}


def _promising(
    problem: LNSProblem, starts: list[tuple[str, np.ndarray]]
) -> list[tuple[str, np.ndarray]]:
    """The starts whose objective is within :data:`_RACE_SPREAD` times the best one's, in
    their order. Why: each raced start costs an equal share of the time, and one far behind
    does not catch up within it. In A the starts are schedules of the same objective at
    other peaks, and in the runs of ``docs/benchmarks.md`` none more than 1.5× behind won
    (EPFL ``max``: 229 capped list schedules at 168k-206k would race the rounded
    least-communication schedule at 97k, and take half of the budget). A tighter 1.2× drops
    GauS's own schedule there too (1.4× behind), and the search ended 0.3 % lower over four
    runs, but it also drops the LP's rounding that wins ``i2c`` (14658 instead of 12885),
    and keeping starts at a lower peak than the best's up to 1.5× did not save it. In B
    and C the baseline starts are of another shape than GauS's local optimum and may win
    from far behind (EPFL ``router`` in B, from the ASAP or ALAP schedule)."""
    values = [problem.objective(t) for _, t in starts]
    limit = _RACE_SPREAD[problem.formulation] * min(values)
    return [st for st, v in zip(starts, values, strict=True) if v <= limit]


def _single_integral_resource(problem: LNSProblem) -> bool:
    """Formulation A with one resource and whole-unit usage: where a peak cap is an integer
    and the time-indexed LP applies."""
    u = problem.g.usage
    return problem.formulation == "A" and u.shape[1] == 1 and bool(np.all(u == np.round(u)))


def _baseline_starts(problem: LNSProblem) -> list[tuple[str, np.ndarray]]:
    """Formulations B and C: legal schedules of other shapes than GauS's, raced beside it.

    B has only dependence and latency constraints, so the ASAP and the ALAP schedules are
    legal; C takes the list and force-directed modulo schedules that pass the verifier.
    Why: the search stays near its start, and on EPFL ``router`` in B GauS's schedule (all
    ops in the first 57 of 69 steps) is a local optimum at peak 55 for every neighbourhood
    tried, while from the ASAP or ALAP schedule the search reaches 44-60 in 50 s, depending
    on its seed (``docs/gaus.md``).
    """
    g, D = problem.g, problem.D
    if problem.formulation == "B":
        asap, alap = asap_alap(g, D)
        return [("ASAP", asap.astype(np.int64)), ("ALAP", alap.astype(np.int64))]
    if problem.formulation != "C":
        return []
    assert problem.II is not None
    starts = []
    for name, t in (("list", list_sched.start_steps(g, "C", D, problem.II)),
                    ("force-directed", force_directed.start_steps(g, D, problem.II))):  # fmt: skip
        if t is not None and problem.legal(t):
            starts.append((name, t.astype(np.int64)))
    return starts


def _rounded_starts(
    problem: LNSProblem, t: np.ndarray, deadline: Deadline | float
) -> list[tuple[str, np.ndarray]]:
    """Formulation A: ``t`` and the schedule of least communication
    (:func:`~twill.sched.baselines.time_indexed.min_communication_schedule`), each rounded
    forward and backward under caps from its own peak down to a tenth of it
    (:func:`~twill.sched.baselines.time_indexed.capped_rounding`, 19 caps, until
    ``deadline``); the best rounding of each is a start when it beats ``t``.

    Why: lowering the peak needs many ops to move at once, and the capped pass moves them
    all, each as little as it can (EPFL ``bar``: GauS's schedule, peak 253, costs 34711;
    rounded forward at cap 223 it costs 33875 at peak 229). On deep designs with wide
    windows GauS's schedule keeps long edges that no neighbourhood shortens at once, and the
    least-communication schedule has none (EPFL ``priority``: GauS 11707, the backward
    rounding at peak 8 5932; ``max``: 135938 and 97812 at peak 80)."""
    g, D, deadline = problem.g, problem.D, Deadline.of(deadline)
    least = min_communication_schedule(g, D)
    sweeps = [("GauS", t, False), ("least-communication", least, True),
              ("least-communication", least, False), ("GauS", t, True)]  # fmt: skip
    best: dict[str, tuple[float, str, np.ndarray]] = {}
    to_beat = problem.objective(t)
    for name, target, backward in sweeps:
        if target is None:
            continue
        peak = _peak(g, target)
        caps = sorted({max(1, round(peak * f)) for f in np.linspace(1.0, 0.1, 19)}, reverse=True)
        for cap in caps:
            if deadline.passed():
                break
            cand = capped_rounding(g, D, target, cap, backward=backward)
            obj = problem.objective(cand)
            if obj < best.get(name, (to_beat,))[0] and problem.legal(cand):
                way = "backward" if backward else "forward"
                best[name] = (obj, f"{name} rounded {way} at peak {cap}", cand)
    return [(label, cand) for _, label, cand in best.values()]


def _capped_list_starts(problem: LNSProblem, t: np.ndarray) -> list[tuple[str, np.ndarray]]:
    """List schedules capped at every peak below ``t``'s, down to the first the list
    scheduler cannot meet."""
    starts = []
    for cap in range(_peak(problem.g, t) - 1, 0, -1):
        capped = capped_list_schedule(problem.g, problem.D, cap)
        if capped is None:
            break
        starts.append((f"list capped at {cap}", capped))
    return starts


def _lp_guided_starts(
    problem: LNSProblem,
    t: np.ndarray,
    budget: float,
    seed: int,
    *,
    deadline: Deadline = NO_DEADLINE,
) -> tuple[list[tuple[str, np.ndarray]], float | None]:
    """Formulation A: schedules at peaks below ``t``'s guided by the time-indexed LP
    (:mod:`twill.sched.baselines.time_indexed`).

    The relaxation's value ``ratio * P + LP(P)`` is convex in the cap ``P`` (an LP's optimum
    is convex in its right-hand side), so a bisection finds the lowest cap the LP admits and
    a ternary search the cap of least value. The restricted exact model
    (:func:`~twill.sched.baselines.time_indexed.lp_guided_schedule`) is then solved at the
    lowest cap and at the best one (each while its LP value is below ``t``'s objective),
    sharing what is left of ``budget``: on EPFL ``router`` the best cap's schedule wins, on
    ``cavlc`` the lowest cap's. Where the supports hold more than
    :data:`_GUIDED_FIRST_ONLY_PAIRS` (op, step) pairs, the restricted model stops at its
    first schedule. Where the restricted model finds none in its share, or no
    time is left for it, the LP's rounding
    (:func:`~twill.sched.baselines.time_indexed.lp_rounded_schedule`) is the start instead.
    Also returns the lower bound the LPs prove (``None`` when none was solved, or when the
    budget cut an LP short). Skipped (no starts, no bound) where the relaxation has more
    than :data:`_LP_MAX_VARIABLES` variables. Within the caller's ``deadline``."""
    clock = deadline.child(budget)
    g, D, ratio = problem.g, problem.D, problem.ratio
    asap, alap = asap_alap(g, D)
    if int((alap - asap).sum()) > _LP_MAX_VARIABLES:
        return [], None
    top = _peak(g, t) - 1
    lps = PeakLPs(g, D, ratio, deadline=clock)
    if top < 1:
        return [], None
    if not lps.at(top).feasible:
        return [], lps.lower_bound(top + 1, None)
    lowest = lps.lowest_feasible(top)
    best = lps.least_value(lowest, top)
    bound = lps.lower_bound(top + 1, best)
    objective = problem.objective(t)
    caps = sorted({lowest, best})
    caps = [c for c in caps if lps.at(c).bound < objective]
    found = []
    for k, cap in enumerate(caps):
        left = clock.remaining() or 0.0  # limited: budget is a number
        sched, name = None, f"LP-guided at peak {cap}"
        lp = lps.at(cap)
        if left > 0:
            first = int((lp.hi - lp.lo + 1).sum()) > _GUIDED_FIRST_ONLY_PAIRS
            sched = lp_guided_schedule(g, D, lp, ratio=ratio, first=first,
                                       time_limit=left / (len(caps) - k), seed=seed)  # fmt: skip
        if sched is None:  # the rounding costs no more than a list schedule
            sched, name = lp_rounded_schedule(g, D, lp), f"LP-rounded at peak {cap}"
        if sched is not None and problem.legal(sched):
            found.append((name, sched))
    return found, bound


def _improve_and_lower_the_peak(
    problem: LNSProblem,
    t: np.ndarray,
    *,
    time_limit: float,
    seed: int,
    clock: float | None = None,
) -> tuple[np.ndarray, LNSReport]:
    """Formulation A with one resource: :func:`lns_improve` in stages of equal length,
    the first from ``t`` and each later one from the previous stage's result rounded below
    its peak (:func:`_rounded_below`; from the result itself where no rounding is within
    the slack), except that the last of three or more searches on from the best stage's
    schedule. Each stage first re-optimises its start as a whole within a step of it
    (:func:`_shifted`, at most :data:`_SHIFT_SHARE` of the stage; counted as one round),
    and searches from the result. There are ``time_limit / _STAGE_SECONDS`` stages, at
    least two. Returns the best stage's schedule, with the rounds of all stages counted.

    Why: the search lowers communication well but the peak rarely, since a lower peak needs
    an op moved off every step at the peak at once. A capped rounding moves them all, and
    each stage's search removes most of the communication the rounding added. On EPFL
    ``priority``, 200 s of search from its best start stalled at 5770 with peak 7 and 200 s
    more gained nothing; rounded at peak 6 (5804), 200 s of search reached 5700. On ``max``,
    from the same start and in 600 s, two stages ended at 94325 (peak 66), three at 94098:
    the peak went 71, 63 (rounded), 62, 59 (rounded), 59; CP-SAT's best schedule in 900 s
    has peak 65 and costs 94180. A stage needs most of its time to repay its rounding, so
    a rounding in the last stage rarely pays: in seven runs on ``max`` with five stages,
    the last stage's rounded start never gave the best schedule."""
    start = time.perf_counter()
    clock = start if clock is None else clock
    stages = max(2, round(time_limit / _STAGE_SECONDS))
    cur, best, best_rep = np.asarray(t, dtype=np.int64), None, None
    rounds, improvements, history = 0, 0, []
    for k in range(stages):
        if stages >= 3 and k == stages - 1:
            cur = best
        elif k:
            lower = _rounded_below(problem, cur)
            cur = cur if lower is None else lower
        began = time.perf_counter()
        share = (time_limit - (began - start)) / (stages - k)
        shifted = _shifted(problem, cur, _SHIFT_SHARE * share, seed + k)
        if shifted is not cur:
            improvements += 1
            history.append((time.perf_counter() - clock, problem.objective(shifted)))
        left = share - (time.perf_counter() - began)
        cur, rep = lns_improve(problem, shifted, time_limit=left, seed=seed + k, clock=clock)
        rounds, improvements = rounds + 1 + rep.rounds, improvements + rep.improvements
        history += rep.history
        if best_rep is None or rep.after < best_rep.after:
            best, best_rep = cur, rep
    assert best is not None and best_rep is not None
    best_rep.before = problem.objective(t)
    best_rep.rounds, best_rep.improvements = rounds, improvements
    best_rep.history = best_so_far(history)
    return best, best_rep


def _shifted(problem: LNSProblem, t: np.ndarray, time_limit: float, seed: int) -> np.ndarray:
    """Formulation A: ``t`` re-optimised by CP-SAT with every op free within
    :data:`_SHIFT_STEPS` steps of its start (inside its ASAP/ALAP window) and the peak
    capped at ``t``'s; ``t`` itself when CP-SAT finds nothing better within ``time_limit``.

    Why: the neighbourhoods free a few hundred ops, each anywhere in a range; this frees
    every op at once, each by a step, which moves the long chains that shorten the edges
    between them. On EPFL ``max`` (3377 ops, about 10,000 (op, step) pairs) the search's
    final schedules, which no neighbourhood improved for minutes, fell from 94110 to 93421
    in 42 s, and a stage's rounded start from 95346 to 93848 in 15 s, where 120 s of
    search reached 94268. CP-SAT gets no hint: with one, its first schedule came only
    after 35 s of repairing it, without one after 12-17 s."""
    g = problem.g
    asap, alap = _start_window(problem)
    lo = np.maximum(asap, t - _SHIFT_STEPS).astype(np.int64)
    hi = np.minimum(alap, t + _SHIFT_STEPS).astype(np.int64)
    spec = ModelSpec("A", problem.D, None, problem.ratio, lo, hi, peak_cap=_peak(g, t))
    _, cand = solve_window(g, spec, time_limit=time_limit, seed=seed)
    if cand is None or problem.objective(cand) >= problem.objective(t) or not problem.legal(cand):
        return t
    return cand


def _rounded_below(
    problem: LNSProblem, t: np.ndarray, caps: int = 10, slack: float = 0.01
) -> np.ndarray | None:
    """The legal capped rounding of ``t`` (forward or backward, at up to ``caps`` caps from
    one below its peak down to three quarters of it;
    :func:`~twill.sched.baselines.time_indexed.capped_rounding`) of lowest peak among those
    within ``slack`` of ``t``'s objective, the cheaper at equal peaks; ``None`` when none
    lowers the peak within it. Why the lowest: the search then removes most of the
    communication the rounding added (EPFL ``max``: the rounding at peak 63 cost 0.7 % more
    than ``t``, and the search from it ended below the search from ``t``; ``priority``: at
    peak 6, 0.6 % more)."""
    g, D = problem.g, problem.D
    peak, limit = _peak(g, t), (1.0 + slack) * problem.objective(t)
    levels = np.unique(np.round(np.linspace(peak - 1, max(1.0, 0.75 * peak), caps)))
    best, best_key = None, (peak, limit)
    for cap in levels[levels >= 1]:
        for backward in (False, True):
            cand = capped_rounding(g, D, t.astype(float), float(cap), backward=backward)
            key = (_peak(g, cand), problem.objective(cand))
            if key[0] < peak and key < best_key and key[1] <= limit and problem.legal(cand):
                best, best_key = cand, key
    return best


def _undirected_neighbours(adj: Adjacency) -> list[np.ndarray]:
    """Each op's distance-0 successors and predecessors."""
    sp, pp = adj.succ_ptr, adj.pred_ptr
    return [
        np.concatenate([adj.succ[sp[i] : sp[i + 1]], adj.pred[pp[i] : pp[i + 1]]])
        for i in range(len(sp) - 1)
    ]


def _free_windows(
    adj: Adjacency, cur: np.ndarray, free: np.ndarray, window: tuple[np.ndarray, np.ndarray]
) -> tuple[np.ndarray, np.ndarray]:
    """Each op's start range in a neighbourhood: ``cur`` for the pinned ops; for the freed
    ones their window narrowed to what the distance-0 edges allow given the pinned ops,
    propagated through the freed ones. Why: a freed op's ASAP/ALAP window spans most of
    ``D`` on deep designs (EPFL ``max``: about 100 of 360 steps), while its pinned
    neighbours leave it a few, and the model has one boolean per step of the range.

    Precondition: ``cur`` is legal, so it lies in every range and the propagation ends."""
    lo, hi = cur.copy(), cur.copy()
    lo[free], hi[free] = window[0][free], window[1][free]
    order = free[np.argsort(cur[free], kind="stable")]
    changed = True
    while changed:
        changed = False
        for v in order:
            for k in range(adj.pred_ptr[v], adj.pred_ptr[v + 1]):
                need = lo[adj.pred[k]] + adj.pred_d[k]
                if need > lo[v]:
                    lo[v], changed = need, True
        for u in order[::-1]:
            for k in range(adj.succ_ptr[u], adj.succ_ptr[u + 1]):
                need = hi[adj.succ[k]] - adj.succ_d[k]
                if need < hi[u]:
                    hi[u], changed = need, True
    return lo, hi


def _neighbourhood(
    kind: str,
    formulation: str,
    g: GauSGraph,
    t: np.ndarray,
    k: int,
    neighbours: list[np.ndarray],
    rng: np.random.Generator,
    D: int,
) -> np.ndarray:
    """The ops to free (sorted indices, at most about ``k``)."""
    if kind == "steps":
        order = np.argsort(t, kind="stable")
        first = int(rng.integers(max(1, g.n - k + 1)))
        lo_step, hi_step = t[order[first]], t[order[min(g.n, first + k) - 1]]
        return np.flatnonzero((t >= lo_step) & (t <= hi_step))[: 2 * k]
    if kind == "peak":
        seeds = _peak_ops(g, t, rng) if formulation == "A" else _peak_values(g, t, D, rng)
        if seeds.size == 0:
            seeds = np.array([int(rng.integers(g.n))])
        return _ball(seeds, k, neighbours, rng)
    return _ball(np.array([int(rng.integers(g.n))]), k, neighbours, rng)


def _ball(
    seeds: np.ndarray, k: int, neighbours: list[np.ndarray], rng: np.random.Generator
) -> np.ndarray:
    """Breadth-first ball of about ``k`` ops around ``seeds`` (all seeds, then neighbours)."""
    seeds = rng.permutation(seeds)
    seen = set(int(x) for x in seeds)
    frontier = list(seen)
    while frontier and len(seen) < k:
        nxt = []
        for i in frontier:
            for j in rng.permutation(neighbours[i]):
                if len(seen) >= k:
                    break
                if int(j) not in seen:
                    seen.add(int(j))
                    nxt.append(int(j))
        frontier = nxt
    return np.array(sorted(seen), dtype=np.int64)


def _peak_ops(g: GauSGraph, t: np.ndarray, rng: np.random.Generator) -> np.ndarray:
    """One op on every step where a random resource (with usage) reaches its peak: lowering
    the peak by one needs an op off each of them at once."""
    L = g.usage.shape[2]
    loads = resource_profile(g, t)
    active = np.flatnonzero(loads.max(axis=1, initial=0.0) > 0)
    if active.size == 0:
        return np.array([], dtype=np.int64)
    r = int(rng.choice(active))
    seeds = []
    for step in np.flatnonzero(loads[r] >= loads[r].max() - 1e-9):
        offsets = step - t
        ok = (offsets >= 0) & (offsets < L)
        hit = np.flatnonzero(ok)[g.usage[np.flatnonzero(ok), r, offsets[ok]] > 0]
        if hit.size:
            seeds.append(int(rng.choice(hit)))
    return np.array(seeds, dtype=np.int64)


def _peak_values(g: GauSGraph, t: np.ndarray, D: int, rng: np.random.Generator) -> np.ndarray:
    """Formulation B: on every step where live memory peaks, one value live there (its
    producer and the consumers that end its lifetime): lowering the peak needs each of those
    steps relieved at once."""
    profile, end = live_profile(g, t, D)
    live = (end > t) & (g.mem > 0)
    fwd = np.flatnonzero(g.forward)
    seeds: list[int] = []
    for step in np.flatnonzero(profile >= profile.max() - 1e-9):
        there = np.flatnonzero(live & (t <= step) & (end > step))
        if there.size:
            i = int(rng.choice(there))
            last = g.dst[fwd][(g.src[fwd] == i) & (t[g.dst[fwd]] == end[i])]
            seeds.extend([i, *map(int, last)])
    return np.unique(np.array(seeds, dtype=np.int64))


def _peak(g: GauSGraph, t: np.ndarray) -> int:
    """The largest per-step usage of any resource under ``t``."""
    return int(np.ceil(resource_profile(g, t).max(initial=0.0) - 1e-9))
