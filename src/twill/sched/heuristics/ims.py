"""Iterative modulo scheduling (B. R. Rau, "Iterative Modulo Scheduling", MICRO-27, 1994).

A legal modulo schedule in well under a second for loops of thousands of operations, without
any proof. :mod:`twill.sched.exact.search` uses it as the *incumbent*: its ``I`` is the top of
the exact search, and a time-out returns it as FEASIBLE with the gap to the proven lower bound.

At a fixed ``II`` (:func:`iterative_modulo_schedule`), following Rau:

* **Priority** ``HeightR``: the longest path from the op to the end of the iteration over edge
  weights ``d - delta*II`` (a fixed point; finite because ``II >= RecMII``); the highest op
  is scheduled first.
* **Placement**: ``Estart`` is the earliest start after the op's *scheduled* predecessors;
  the op takes the first start in ``[Estart, Estart + II - 1]`` whose reservation rows fit the
  modulo reservation table (MRT); if none fits, it takes ``Estart`` (or one after its previous
  start, so that the search moves on) and **evicts** what conflicts: the ops holding the MRT
  rows it needs (lowest priority first, until the rows fit) and every scheduled successor
  whose dependence it breaks. Evicted ops go back into the queue.
* A **budget** of ``budget_ratio * |V|`` placements bounds the work; running out is a failure
  (``None``), not a proof of anything.

Multi-row reservation tables and capacities above one are handled (an RRT longer than ``II``
wraps onto itself, as in the verifier). Every schedule returned has passed
:func:`twill.sched.verify.verify_modulo_schedule`.

Over ``II`` (:func:`heuristic_schedule`): ``MII``, then the next few values, then growing
steps, then a bisection back down between the last failure and the first success; if
nothing succeeds before the deadline, the serial schedule (:func:`serial_schedule`: ops one
after another, a modulo schedule at every ``I`` at least its length plus the largest delay)
is the answer. So an answer always exists.

Preconditions: the graph passed :func:`twill.sched.validate.check_graph`.
"""

from __future__ import annotations

import heapq
import logging
import time
from dataclasses import dataclass

from twill.deadline import Deadline
from twill.errors import VerificationError
from twill.sched.bounds import rec_mii, res_mii
from twill.sched.ir import DependenceGraph
from twill.sched.verify import verify_modulo_schedule

__all__ = [
    "HeuristicSchedule",
    "heuristic_schedule",
    "iterative_modulo_schedule",
    "serial_schedule",
]

log = logging.getLogger(__name__)

_LINEAR_TRIES = 4  # II = MII .. MII+3 one by one, then growing steps


@dataclass(frozen=True)
class HeuristicSchedule:
    """A verified modulo schedule from a heuristic (no optimality claim).

    Attributes
    ----------
    I
        Initiation interval of the schedule (cycles between iteration starts).
    schedule
        Start cycle per op, minimum 0.
    L
        Schedule length ``max_v M(v) + cycles(v)`` in cycles.
    method
        ``"ims"`` (iterative modulo scheduling) or ``"serial"`` (the fallback).
    seconds
        Wall time of the heuristic, every ``II`` tried included.
    tried
        ``(II, succeeded)`` for every ``II`` tried, in order.
    first
        ``(I, seconds)`` of the first verified schedule (IMS's or the serial one) when a
        second source ran after it (:mod:`.gaus_c`), else ``None`` (it is this one).
    """

    I: int
    schedule: dict[str, int]
    L: int
    method: str
    seconds: float
    tried: tuple[tuple[int, bool], ...] = ()
    first: tuple[int, float] | None = None


class _Loop:
    """The graph as index arrays, built once for every ``II`` tried."""

    def __init__(self, graph: DependenceGraph) -> None:
        self.graph = graph
        self.names = graph.names
        index = graph.index()
        n = len(self.names)
        self.n = n
        caps = graph.machine.functional_units
        self.caps = {fu: c for fu, c in caps.items() if c >= 0}
        # rows[v] = ((fu, c, units), ...) on limited units only
        self.rows = [
            tuple(
                (fu, c, u)
                for fu, rrt in ins.reservation.items()
                if fu in self.caps
                for c, u in enumerate(rrt)
                if u
            )
            for ins in graph.instructions
        ]
        self.cycles = [ins.cycles for ins in graph.instructions]
        self.preds: list[list[tuple[int, int, int]]] = [[] for _ in range(n)]
        self.succs: list[list[tuple[int, int, int]]] = [[] for _ in range(n)]
        for e in graph.edges:
            u, v = index[e.src], index[e.dst]
            if u != v:  # a self-edge holds at II >= RecMII
                self.preds[v].append((u, e.delay, e.distance))
                self.succs[u].append((v, e.delay, e.distance))
        self.order = _reverse_topological(n, self.succs)

    def heights(self, ii: int) -> list[int] | None:
        """Rau's ``HeightR`` at ``ii`` (longest path to the iteration's end), or ``None`` on a
        positive circuit (``ii < RecMII``)."""
        h = list(self.cycles)
        for _ in range(self.n + 1):
            changed = False
            for v in self.order:
                best = h[v]
                for s, d, dist in self.succs[v]:
                    cand = h[s] + d - dist * ii
                    if cand > best:
                        best = cand
                if best > h[v]:
                    h[v] = best
                    changed = True
            if not changed:
                return h
        return None


def _reverse_topological(n: int, succs: list[list[tuple[int, int, int]]]) -> list[int]:
    """Ops in reverse topological order of the distance-0 edges (a DAG after check_graph)."""
    indeg = [0] * n
    for u in range(n):
        for v, _d, dist in succs[u]:
            if dist == 0:
                indeg[v] += 1
    ready = [v for v in range(n) if indeg[v] == 0]
    order: list[int] = []
    while ready:
        u = ready.pop()
        order.append(u)
        for v, _d, dist in succs[u]:
            if dist == 0:
                indeg[v] -= 1
                if indeg[v] == 0:
                    ready.append(v)
    seen = set(order)
    order += [v for v in range(n) if v not in seen]  # only on an unchecked graph
    return order[::-1]


def _needs(rows: tuple[tuple[str, int, int], ...], t: int, ii: int) -> dict[tuple[str, int], int]:
    """MRT rows ``(fu, (t + c) mod ii)`` an op started at ``t`` reserves, with their units."""
    need: dict[tuple[str, int], int] = {}
    for fu, c, u in rows:
        key = (fu, (t + c) % ii)
        need[key] = need.get(key, 0) + u
    return need


def iterative_modulo_schedule(
    graph: DependenceGraph, ii: int, *, budget_ratio: float = 6.0, _loop: _Loop | None = None
) -> dict[str, int] | None:
    """A modulo schedule at ``ii`` by Rau's iterative modulo scheduling, or ``None``.

    Parameters
    ----------
    graph
        A checked dependence graph.
    ii
        Initiation interval (integer >= 1).
    budget_ratio
        Placements allowed per op before giving up (Rau used 3-6).

    Returns
    -------
    dict or None
        Start per op (minimum 0), verified; ``None`` when the budget ran out, ``ii`` is below
        RecMII or one op alone over-subscribes a unit at this ``ii`` (no proof either way).

    Notes
    -----
    Heuristic (module docstring): no optimality or infeasibility claim.

    Examples
    --------
    >>> from twill.sched.kernels import flash_attention_forward_simplified
    >>> iterative_modulo_schedule(flash_attention_forward_simplified(), 2)
    {'S': 0, 'P': 1, 'O': 3}
    """
    loop = _loop or _Loop(graph)
    heights = loop.heights(ii)
    if heights is None:
        return None
    for v in range(loop.n):  # an op whose own rows over-subscribe a unit never fits
        if any(u > loop.caps[fu] for (fu, _), u in _needs(loop.rows[v], 0, ii).items()):
            return None
    start = _place_all(loop, ii, heights, max(1, int(budget_ratio * loop.n)))
    if start is None:
        return None
    low = min(start, default=0)
    schedule = {name: t - low for name, t in zip(loop.names, start, strict=True)}
    violations = verify_modulo_schedule(graph, schedule, ii)
    if violations:  # a bug here must not reach the user: no schedule instead
        log.warning("IMS schedule at II=%d failed the verifier: %s", ii, violations[0])
        return None
    return schedule


def _place_all(loop: _Loop, ii: int, heights: list[int], budget: int) -> list[int] | None:
    """Rau's scheduling loop (module docstring); starts per op, or ``None`` out of budget."""
    n, caps = loop.n, loop.caps
    time_of: list[int | None] = [None] * n
    last: list[int | None] = [None] * n
    usage: dict[tuple[str, int], int] = {}
    holders: dict[tuple[str, int], dict[int, int]] = {}
    queue = [(-heights[v], v) for v in range(n)]
    heapq.heapify(queue)
    left = n

    def evict(v: int) -> None:
        nonlocal left
        for key, u in _needs(loop.rows[v], time_of[v], ii).items():  # type: ignore[arg-type]
            usage[key] -= u
            del holders[key][v]
        time_of[v] = None
        left += 1
        heapq.heappush(queue, (-heights[v], v))

    while left:
        if budget <= 0:
            return None
        _, v = heapq.heappop(queue)
        if time_of[v] is not None:
            continue
        budget -= 1
        est = 0
        for u, d, dist in loop.preds[v]:
            tu = time_of[u]
            if tu is not None and tu + d - dist * ii > est:
                est = tu + d - dist * ii
        t = _first_fit(loop.rows[v], est, ii, usage, caps)
        if t is None:
            prev = last[v]
            t = est if prev is None or est > prev else prev + 1
            for key, u in _needs(loop.rows[v], t, ii).items():
                while usage.get(key, 0) + u > caps[key[0]]:
                    evict(min(holders[key], key=lambda x: (heights[x], -x)))
        for s, d, dist in loop.succs[v]:
            ts = time_of[s]
            if ts is not None and ts < t + d - dist * ii:
                evict(s)
        time_of[v] = last[v] = t
        left -= 1
        for key, u in _needs(loop.rows[v], t, ii).items():
            usage[key] = usage.get(key, 0) + u
            holders.setdefault(key, {})[v] = u
    return time_of  # type: ignore[return-value]


def _first_fit(
    rows: tuple[tuple[str, int, int], ...],
    est: int,
    ii: int,
    usage: dict[tuple[str, int], int],
    caps: dict[str, int],
) -> int | None:
    """The first start in ``[est, est + ii - 1]`` whose MRT rows fit, or ``None``."""
    if not rows:
        return est
    if len(rows) == 1:  # the common case (one unit, one row): no dictionaries per start
        fu, c, u = rows[0]
        room = caps[fu] - u
        for t in range(est, est + ii):
            if usage.get((fu, (t + c) % ii), 0) <= room:
                return t
        return None
    for t in range(est, est + ii):
        if all(usage.get(k, 0) + u <= caps[k[0]] for k, u in _needs(rows, t, ii).items()):
            return t
    return None


def serial_schedule(graph: DependenceGraph) -> tuple[int, dict[str, int]]:
    """One iteration with its ops one after another, and an ``I`` at which it is a modulo
    schedule.

    Ops go in a topological order of the distance-0 edges, each after its predecessors and
    after the previous op has finished (``max(1, cycles)`` later). With its length ``L_s``,
    ``I = max(1, L_s + max_e d_e)`` works: no two ops overlap in time, so no two reservation
    rows share a class modulo ``I``, and a loop-carried edge (distance >= 1) spans at least
    ``I - L_s >= d`` cycles.

    Returns
    -------
    tuple
        ``(I, schedule)``.
    """
    index = graph.index()
    n = len(graph.instructions)
    succs: list[list[tuple[int, int, int]]] = [[] for _ in range(n)]
    for e in graph.edges:
        if e.src != e.dst:
            succs[index[e.src]].append((index[e.dst], e.delay, e.distance))
    order = _reverse_topological(n, succs)[::-1]
    preds: list[list[tuple[int, int]]] = [[] for _ in range(n)]
    for u in range(n):
        for v, d, dist in succs[u]:
            if dist == 0:
                preds[v].append((u, d))
    start = [0] * n
    clock = 0
    for v in order:
        start[v] = max([clock] + [start[u] + d for u, d in preds[v]])
        clock = start[v] + max(1, graph.instructions[v].cycles)
    max_d = max((e.delay for e in graph.edges), default=0)
    return max(1, clock + max_d), {name: start[i] for i, name in enumerate(graph.names)}


def heuristic_schedule(
    graph: DependenceGraph,
    *,
    mii: int | None = None,
    deadline: Deadline | float | None = None,
    budget_ratio: float = 6.0,
) -> HeuristicSchedule:
    """A verified modulo schedule at a small ``I``, fast: the incumbent of the exact search.

    Parameters
    ----------
    graph
        A checked dependence graph.
    mii
        ``max(ResMII, RecMII)`` when the caller has it (computed otherwise).
    deadline
        A :class:`~twill.deadline.Deadline` (or its ``time.monotonic()`` end) after which no
        new ``II`` is tried once IMS has found a schedule (``None``: none). Before that the
        search goes on: a schedule is the point.
    budget_ratio
        Passed to :func:`iterative_modulo_schedule`.

    Returns
    -------
    HeuristicSchedule
        Always a schedule: the smallest ``II`` at which IMS succeeded, else the serial one.

    Notes
    -----
    The order of ``II`` tried is in the module docstring; no optimality claim.

    Examples
    --------
    >>> from twill.sched.kernels import flash_attention_forward_simplified
    >>> h = heuristic_schedule(flash_attention_forward_simplified())
    >>> h.I, h.method
    (2, 'ims')
    """
    t0 = time.perf_counter()
    lo = mii if mii is not None else max(res_mii(graph), rec_mii(graph))
    cap, serial = serial_schedule(graph)
    cap = max(cap, lo)  # the serial schedule holds at every I >= its own
    loop = _Loop(graph)
    tried: list[tuple[int, bool]] = []
    best: tuple[int, dict[str, int]] | None = None

    def attempt(ii: int) -> bool:
        s = iterative_modulo_schedule(graph, ii, budget_ratio=budget_ratio, _loop=loop)
        tried.append((ii, s is not None))
        nonlocal best
        if s is not None and (best is None or ii < best[0]):
            best = (ii, s)
        return s is not None

    clock = Deadline.of(deadline)

    def late() -> bool:  # the deadline stops the search only once there is a schedule
        return best is not None and clock.passed()

    ii, step, failed = lo, 1, lo - 1
    while ii < cap and not late():
        if attempt(ii):
            break
        failed = ii
        if ii - lo + 1 >= _LINEAR_TRIES:
            step *= 2
        ii = ii + step
    if best is not None:  # bisect back down between the last failure and the success
        low, high = failed, best[0]
        while high - low > 1 and not late():
            mid = (low + high) // 2
            if attempt(mid):
                high = mid
            else:
                low = mid
    if best is None:
        best, method = (cap, serial), "serial"
        violations = verify_modulo_schedule(graph, serial, cap)
        if violations:  # impossible by serial_schedule's docstring
            raise VerificationError(violations, what=f"serial schedule of {graph.name}")
    else:
        method = "ims"
    ii, schedule = best
    length = max((schedule[i.name] + i.cycles for i in graph.instructions), default=0)
    log.info("heuristic %s: I=%d (MII %d) by %s, %d II tried", graph.name, ii, lo, method,
             len(tried))  # fmt: skip
    return HeuristicSchedule(ii, schedule, length, method, time.perf_counter() - t0, tuple(tried))
