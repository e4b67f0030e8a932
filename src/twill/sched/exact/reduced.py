"""The reduced Twill Phase-1 model: residue + stage data at one ``II``, only the *kept* ops.

Shared by the two Phase-1 models, the full residue + stage program (:mod:`.phase1`) and the
translation-reduced window model (:mod:`.window`). Only ops that occur in a modulo-reservation
row that can be over-subscribed are *kept*; every other op is projected out of the difference
constraints exactly (Fourier-Motzkin = longest paths through the eliminated ops), and
:func:`stage_bounds` gives per-op stage bounds that cut off no feasible residues and never the
optimal ``L`` (the proofs are in the function docstrings).

Preconditions: ``II >= RecMII`` (no positive circuit), so every longest path is finite; the
caller checks it first with a Bellman-Ford test.
"""

from __future__ import annotations

from dataclasses import dataclass

from twill.deadline import Deadline
from twill.sched.ir import DependenceGraph

__all__ = ["OutOfTime", "ReducedModel", "build_reduced_model", "stage_bounds"]


class OutOfTime(Exception):  # noqa: N818 (a signal, not an error: the caller answers UNKNOWN)
    """The deadline passed while the bounds were computed (they are exact only when complete,
    so none are returned): the caller's answer is UNKNOWN."""


def _check_time(deadline: Deadline | float | None) -> None:
    if Deadline.of(deadline).passed():
        raise OutOfTime


@dataclass(frozen=True)
class ReducedModel:
    """Backend-neutral data of the residue + stage model at one ``II``, reduced to the *kept* ops.

    Kept ops appear in at least one modulo-reservation row that could be violated; every
    other op is projected out (see :func:`_project`).
    """

    ii: int
    names: tuple[str, ...]
    cycles: tuple[int, ...]
    kept: tuple[int, ...]  # op indices with residue variables
    arcs: tuple[tuple[int, int, int], ...]  # (x, y, w): M(y) - M(x) >= w between kept ops
    lower: tuple[tuple[int, int], ...]  # (x, h): M(x) >= h
    tail: tuple[tuple[int, int], ...]  # (x, t): L >= M(x) + t
    l_const: int  # L >= l_const (chains of projected ops from time 0)
    # per (fu, class r): (fu, r, cap, ((op index, residue, units), ...))
    mrt_rows: tuple[tuple[str, int, int, tuple[tuple[int, int, int], ...]], ...]
    stage_bound: int  # the largest per-op stage bound
    stage_ub: tuple[tuple[int, int], ...]  # (x, K_x): 0 <= k[x] <= K_x
    # units whose every user reserves only its first row: (fu, cap, ((op, units), ...))
    residue_groups: tuple[tuple[str, int, tuple[tuple[int, int], ...]], ...]
    weights: tuple[tuple[int, int, int], ...]  # every edge as (u, v, d - delta*II)

    @property
    def horizon(self) -> int:
        return self.ii * self.stage_bound + self.ii - 1

    @property
    def length_ub(self) -> int:
        ub = dict(self.stage_ub)
        tails = [self.ii * ub[x] + self.ii - 1 + t for x, t in self.tail]
        return max([self.l_const] + tails)


def _mrt_rows(
    graph: DependenceGraph, ii: int, deadline: Deadline | float | None = None
) -> list[tuple[str, int, int, tuple]]:
    """Modulo reservation rows that can be violated at all (others are dropped). Their terms
    grow as ops x ``ii`` (9 million at 3,000 ops and ``ii`` 3,000), so ``deadline`` is
    consulted per op (:class:`OutOfTime`)."""
    machine = graph.machine
    rows = []
    for fu in sorted(machine.functional_units):
        cap = machine.functional_units[fu]
        if cap < 0:
            continue
        terms: dict[int, dict[tuple[int, int], int]] = {r: {} for r in range(ii)}
        total = 0
        for i, ins in enumerate(graph.instructions):
            _check_time(deadline)
            for c, units in enumerate(ins.reservation.get(fu, ())):
                if units:
                    total += units
                    for r in range(ii):
                        key = (i, (r - c) % ii)
                        terms[r][key] = terms[r].get(key, 0) + units
        if total <= cap:
            continue  # the unit can never be over-subscribed
        for r in range(ii):
            _check_time(deadline)
            if sum(terms[r].values()) > cap:
                rows.append((fu, r, cap, tuple((i, res, u) for (i, res), u in terms[r].items())))
    return rows


def _project(
    n: int, kept: set[int], weights: list[tuple[int, int, int]], cycles: tuple[int, ...]
) -> tuple[list[tuple[int, int, int]], dict[int, int], dict[int, int], int]:
    """Project the ops outside ``kept`` out of the difference constraints (exact).

    The constraints ``M(v) - M(u) >= w``, ``M >= 0`` and ``L >= M(v) + cycles(v)`` form a
    difference system; eliminating a set of variables (Fourier-Motzkin) leaves, between every
    pair of remaining variables, the longest path through eliminated ones. So the reduced
    model has exactly the same feasible kept starts and the same ``L`` values. Requires no
    positive cycle (``II >= RecMII``).
    """
    succ: dict[int, list[tuple[int, int]]] = {i: [] for i in range(n)}
    for u, v, w in weights:
        succ[u].append((v, w))
    elim = [i for i in range(n) if i not in kept]

    def through(seeds: dict[int, int]) -> dict[int, int]:
        dist = dict(seeds)
        queue = list(seeds)
        while queue:
            e = queue.pop()
            for v, w in succ[e]:
                if v in kept:
                    continue
                cand = dist[e] + w
                if cand > dist.get(v, cand - 1):
                    dist[v] = cand
                    queue.append(v)
        return dist

    arcs: dict[tuple[int, int], int] = {}
    tail: dict[int, int] = {}
    for x in sorted(kept):
        seeds: dict[int, int] = {}
        for v, w in succ[x]:
            if v not in kept and w > seeds.get(v, w - 1):
                seeds[v] = w
        dist = through(seeds)
        tail[x] = max([cycles[x]] + [d + cycles[e] for e, d in dist.items()])
        for src, base in [(x, 0)] + list(dist.items()):
            for v, w in succ[src]:
                if v in kept and (src == x or src not in kept):
                    cand = base + w
                    if cand > arcs.get((x, v), cand - 1):
                        arcs[x, v] = cand
    zero = through(dict.fromkeys(elim, 0))
    lower: dict[int, int] = {}
    for e, d in zero.items():
        for v, w in succ[e]:
            if v in kept and d + w > lower.get(v, 0):
                lower[v] = d + w
    l_const = max([0] + [d + cycles[e] for e, d in zero.items()])
    return [(x, y, w) for (x, y), w in arcs.items()], lower, tail, l_const


def stage_bounds(
    ii: int,
    kept: tuple[int, ...],
    arcs: list[tuple[int, int, int]],
    lower: dict[int, int],
    deadline: Deadline | float | None = None,
) -> dict[int, int]:
    """Per-op stage bounds ``K_x`` that cut off no feasible residues and not the optimal ``L``.
    Each relaxation round consults ``deadline`` (``time.monotonic()``) and raises
    :class:`OutOfTime` past it: a 3,000-op graph with 45,000 edges spent 10 s here after a
    2 s limit (issue 49).

    Fix the residues ``r`` of any solution of the reduced system. Each arc becomes
    ``k_y - k_x >= ceil((w - r_y + r_x)/ii)`` and each lower bound ``k_x >= ceil((h - r_x)/ii)``.
    The least solution (pointwise smallest, hence also of smallest ``L``) is
    ``k_v = max(0, longest path from a seed to v)``; the system is feasible, so no circuit is
    positive and the longest path is attained on a simple path ``P`` (at most
    ``|kept| - 1`` arcs). Two upper bounds on that path value, the smaller is used:

    * rounding every arc up, ``ceil((w + ii - 1)/ii)``, and relaxing ``|kept| - 1`` rounds;
    * ``ceil(z/ii) <= (z + ii - 1)/ii`` and the residues telescope along ``P``, so
      ``k_v <= (A(v) + |kept|*(ii - 1)) / ii`` with ``A(v)`` the longest path with the true
      weights (from the seeds ``h`` and 0), which is finite because ``ii >= RecMII``.
    """
    n = len(kept)
    bound = {x: max(0, -(-lower.get(x, 0) // ii)) for x in kept}
    up = [(x, y, -(-(w + ii - 1) // ii)) for x, y, w in arcs if x != y]
    for _ in range(max(0, n - 1)):
        _check_time(deadline)
        changed = False
        for x, y, w in up:
            if bound[x] + w > bound[y]:
                bound[y] = bound[x] + w
                changed = True
        if not changed:
            break
    asap = {x: max(0, lower.get(x, 0)) for x in kept}
    for _ in range(n + 1):
        _check_time(deadline)
        changed = False
        for x, y, w in arcs:
            if x != y and asap[x] + w > asap[y]:
                asap[y] = asap[x] + w
                changed = True
        if not changed:
            break
    return {x: min(bound[x], max(0, (asap[x] + n * (ii - 1)) // ii)) for x in kept}


def _residue_groups(graph: DependenceGraph, rows: list) -> list:
    """Units (with a row in the model) whose users each reserve only their first cycle."""
    out = []
    for fu in sorted({row[0] for row in rows}):
        users = []
        for i, ins in enumerate(graph.instructions):
            rrt = tuple(ins.reservation.get(fu, ()))
            if any(rrt):
                if rrt[0] == 0 or any(rrt[1:]):
                    break
                users.append((i, rrt[0]))
        else:
            out.append((fu, graph.machine.functional_units[fu], tuple(users)))
    return out


def build_reduced_model(
    graph: DependenceGraph, ii: int, deadline: Deadline | float | None = None
) -> ReducedModel:
    """The residue + stage model at ``ii``, reduced to the kept ops (exact; see the module);
    :class:`OutOfTime` when ``deadline`` passes while its bounds are computed."""
    index = graph.index()
    rows = _mrt_rows(graph, ii, deadline)
    kept = {i for _, _, _, terms in rows for i, _, _ in terms}
    weights = [(index[e.src], index[e.dst], e.delay - e.distance * ii) for e in graph.edges]
    cycles = tuple(ins.cycles for ins in graph.instructions)
    arcs, lower, tail, l_const = _project(len(cycles), kept, weights, cycles)
    kept_t = tuple(sorted(kept))
    ub = stage_bounds(ii, kept_t, arcs, lower, deadline)
    return ReducedModel(
        ii=ii,
        names=tuple(graph.names),
        cycles=cycles,
        kept=kept_t,
        arcs=tuple(arcs),
        lower=tuple(sorted(lower.items())),
        tail=tuple(sorted(tail.items())),
        l_const=l_const,
        mrt_rows=tuple(rows),
        stage_bound=max(ub.values(), default=0),
        stage_ub=tuple(sorted(ub.items())),
        residue_groups=tuple(_residue_groups(graph, rows)),
        weights=tuple(weights),
    )
