"""Legalisation: from rounded Gaussian means to a legal integer schedule (GauS paper, App. A).

* :func:`legalise_regular` (formulations A, B): clamp ``round(mu)`` into ``[ASAP, ALAP]``, then
  one topological pass ``t_v = max(t_v, max_u t_u + d_uv)``, vectorised per generation.
  Guarantee: if ``ASAP <= ALAP`` everywhere (``D`` is feasible) the result
  is legal, because ``t_u <= ALAP_u <= ALAP_v - d_uv`` keeps every push within ``ALAP_v``.
* :func:`modulo_place` (formulation C, also the list-scheduling baseline): places ops one by
  one in a given topological order at the earliest step ``>= lb`` that meets the placed
  predecessors (distance-0 and recurrence edges) and fits the modulo reservation table.
* :func:`iterative_modulo_schedule`: Rau's iterative modulo scheduling (MICRO-27 1994) with
  eviction and a placement budget, seeded with the rounded means as priorities and lower
  bounds; :func:`legalise_modulo` falls back to it when the fixed-point repair fails (tight
  instances where greedy placement paints itself into a corner).
* :func:`legalise_modulo`: fixed-point repair. Repeat: place in the order of the current lower
  bounds; for every violated recurrence edge raise the consumer's lower bound to
  ``t_u + d - delta*II``. It stops when no edge is violated (legal), when an op would start
  after ``D - 1``, or at the round cap. It then repeats the repair placing ops in ALAP order
  (least slack first), then tries iterative modulo scheduling; if all fail it reports
  failure, which is **not** a proof of infeasibility.

Preconditions: the distance-0 subgraph is acyclic; ``usage`` and ``caps`` as in
:class:`~twill.sched.gaus.graph.GauSGraph`.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import dataclass

import numpy as np

from twill.sched.gaus.graph import (
    GauSGraph,
    asap_alap,
    edges_by_generation,
    forward_edges,
    topological_generations,
)

__all__ = [
    "RepairBudget",
    "legalise_regular",
    "modulo_place",
    "legalise_modulo",
    "iterative_modulo_schedule",
    "forward_pass",
]


def forward_pass(g: GauSGraph, t: np.ndarray, gens: list[np.ndarray]) -> np.ndarray:
    """Push every op to ``max(t_v, max_u t_u + d_uv)`` over distance-0 edges, in topological
    order (vectorised per generation)."""
    t = np.array(t, dtype=np.int64)
    src, dst, d, gen_of = forward_edges(g, gens)
    for e in edges_by_generation(dst, gen_of, len(gens))[1:]:
        if e.size:
            np.maximum.at(t, dst[e], t[src[e]] + d[e])
    return t


def legalise_regular(
    g: GauSGraph,
    mu: np.ndarray,
    D: int,
    *,
    gens: list[np.ndarray] | None = None,
    bounds: tuple[np.ndarray, np.ndarray] | None = None,
) -> np.ndarray | None:
    """Topological legalisation of a one-iteration schedule (formulations A, B).

    Returns
    -------
    numpy.ndarray or None
        Start steps, legal for every distance-0 edge and within ``[0, D-1]``; ``None`` when
        ``D`` is infeasible (ASAP > ALAP for some op).
    """
    gens = topological_generations(g) if gens is None else gens
    asap, alap = asap_alap(g, D, gens) if bounds is None else bounds
    if np.any(asap > alap):
        return None
    t = np.clip(np.rint(mu).astype(np.int64), asap, alap)
    t = forward_pass(g, t, gens)
    return t if t.max(initial=0) <= D - 1 else None


class _Placer:
    """Modulo reservation table and in-edge lists for :func:`modulo_place`."""

    def __init__(self, g: GauSGraph, II: int) -> None:
        self.g = g
        self.II = II
        limited = np.isfinite(g.caps)
        self.lim = np.flatnonzero(limited)
        self.caps = g.caps[limited]
        n, _, L = g.usage.shape
        # usage folded onto offsets modulo II: own[i, k, j] = sum_{c = j mod II} usage[i, k, c]
        u = g.usage[:, limited, :]
        pad = (-L) % II
        u = np.concatenate([u, np.zeros((n, u.shape[1], pad))], axis=2)
        # explicit fold count: with no limited unit the array is empty and -1 is ambiguous
        self.own = u.reshape(n, u.shape[1], (L + pad) // II, II).sum(axis=2)
        self.needs = self.own.reshape(n, -1).any(axis=1)
        order = np.argsort(g.dst, kind="stable")
        self.in_src = g.src[order]
        self.in_lat = (g.delay - g.distance * II)[order]
        self.ptr = np.searchsorted(g.dst[order], np.arange(n + 1))
        self.idx = (np.arange(II)[:, None] + np.arange(II)[None, :]) % II  # [r, j]

    def place(
        self, order: np.ndarray, lb: np.ndarray, D: int, deadline: float | None = None
    ) -> np.ndarray | None:
        g, II = self.g, self.II
        mrt = np.zeros((len(self.lim), II))
        t = np.full(g.n, np.iinfo(np.int64).min // 4, dtype=np.int64)
        placed = np.zeros(g.n, dtype=bool)
        for k, v in enumerate(order):
            if k % 32 == 31 and _past(deadline):  # O(K * II^2) per op: seconds at large II
                return None
            lo, hi = self.ptr[v], self.ptr[v + 1]
            est = int(lb[v])
            if hi > lo:
                preds = self.in_src[lo:hi]
                ok = placed[preds]
                if ok.any():
                    est = max(est, int((t[preds[ok]] + self.in_lat[lo:hi][ok]).max()))
            if self.needs[v]:
                # fits[r]: op fits when started at residue r
                load = mrt[:, self.idx] + self.own[v][:, None, :]  # [K, r, j]
                fits = np.all(load <= self.caps[:, None, None] + 1e-9, axis=(0, 2))
                if not fits.any():
                    return None
                step = np.arange(est, est + II)
                cand = step[fits[step % II]]
                s = int(cand[0])
                r = s % II
                mrt[:, self.idx[r]] += self.own[v]
            else:
                s = est
            if s > D - 1:
                return None
            t[v] = s
            placed[v] = True
        return t


def modulo_place(
    g: GauSGraph, order: np.ndarray, lb: np.ndarray, II: int, D: int
) -> np.ndarray | None:
    """Greedy modulo placement of ``order`` (a topological order of the distance-0 edges).

    Each op starts at the earliest step ``>= lb[v]`` that satisfies every edge from an already
    placed op and leaves every limited resource within capacity in every congruence class.

    Returns
    -------
    numpy.ndarray or None
        Start steps (recurrence edges from ops placed *later* may still be violated), or
        ``None`` when some op cannot fit any slot or would start after ``D - 1``.
    """
    return _Placer(g, II).place(np.asarray(order), np.asarray(lb), D)


def _order_by(t: np.ndarray, rank: np.ndarray) -> np.ndarray:
    """Topological order sorted by ``t`` then topological rank (valid when ``t`` respects
    distance-0 edges with ``d >= 0``)."""
    return np.lexsort((rank, t))


@dataclass(frozen=True)
class RepairBudget:
    """How hard :func:`legalise_modulo` tries before it gives up.

    Parameters
    ----------
    max_rounds
        Cap on place-then-repair rounds.
    restarts, restart_max_nodes
        After the repair and one iterative-modulo-scheduling pass fail, graphs of at most
        ``restart_max_nodes`` ops get up to ``restarts`` more passes with priorities perturbed
        by a fixed-seed uniform shift in ``[0, II)`` (tight kernel graphs need a different
        slot assignment, not more repair).
    """

    max_rounds: int = 100
    restarts: int = 200
    restart_max_nodes: int = 64


def legalise_modulo(
    g: GauSGraph,
    mu: np.ndarray,
    II: int,
    D: int,
    *,
    gens: list[np.ndarray] | None = None,
    budget: RepairBudget | None = None,
    deadline: float | None = None,
) -> tuple[np.ndarray | None, str]:
    """Fixed-point repair of a modulo schedule at ``II`` within ``D`` steps (formulation C).

    Parameters
    ----------
    g
        The graph (recurrence edges have distance > 0).
    mu
        Continuous start steps (the Gaussian means); rounded to the first lower bounds.
    II, D
        Initiation interval and latency bound.
    budget
        How hard the repair tries (:class:`RepairBudget`; ``None``: its defaults).
    deadline
        A ``time.perf_counter()`` value: past it every pass stops and no schedule is returned
        (a 1,500-op loop's repair takes minutes; GauS's ``time_limit`` holds through it).

    Returns
    -------
    (t, message)
        ``t`` is a legal schedule, or ``None`` with a message saying why no legal schedule was
        found (never a proof of infeasibility).
    """
    gens = topological_generations(g) if gens is None else gens
    budget = RepairBudget() if budget is None else budget
    max_rounds = budget.max_rounds
    asap, alap = asap_alap(g, D, gens)
    rank = np.empty(g.n, dtype=np.int64)
    rank[np.concatenate(gens)] = np.arange(g.n)
    placer = _Placer(g, II)
    lb0 = np.maximum(np.rint(mu).astype(np.int64), asap)
    t, why = _repair(placer, lb0, D, lambda key: _order_by(key, rank), gens, max_rounds,
                     deadline)  # fmt: skip
    if t is not None:
        return t, "legal"
    # Least slack first: a long chain placed before the wide, non-critical levels keeps its
    # slots. In time order the first levels fill whole congruence classes and every later
    # chain op waits for a free class (EPFL adder at II = 8: 339 steps for D = 320; this
    # order: 272).
    t, _ = _repair(placer, lb0, D, lambda key: np.lexsort((rank, key, alap)), gens,
                   max_rounds, deadline)  # fmt: skip
    if t is not None:
        return t, "legal (least-slack-first placement)"
    t = iterative_modulo_schedule(g, mu, II, D, deadline=deadline)
    if t is not None:
        return t, "legal (iterative modulo scheduling fallback)"
    # Small graphs: retry with perturbed priorities (fixed seed, so still deterministic).
    rng = np.random.default_rng(0)
    for _ in range(budget.restarts if g.n <= budget.restart_max_nodes else 0):
        t = iterative_modulo_schedule(g, mu + rng.uniform(0, II, size=g.n), II, D,
                                      deadline=deadline)  # fmt: skip
        if t is not None:
            return t, "legal (iterative modulo scheduling, perturbed priorities)"
    return None, (
        f"LEGALISATION_FAILED: {why} at II={II}, D={D}, and iterative modulo scheduling "
        "ran out of budget (not a proof of infeasibility)"
    )


def _past(deadline: float | None) -> bool:
    return deadline is not None and time.perf_counter() >= deadline


def _repair(
    placer: _Placer,
    lb: np.ndarray,
    D: int,
    order: Callable[[np.ndarray], np.ndarray],
    gens: list[np.ndarray],
    max_rounds: int,
    deadline: float | None = None,
) -> tuple[np.ndarray | None, str]:
    """Place in ``order(lower bounds)`` and raise the consumers of violated recurrence edges
    until none is violated; ``(None, why)`` when an op leaves ``[0, D-1]`` or the rounds run
    out. ``order`` must return a topological order of the distance-0 edges. The graph and
    ``II`` are the placer's."""
    g, II = placer.g, placer.II
    lb = lb.copy()
    back = g.distance > 0
    for _ in range(max_rounds):
        if _past(deadline):
            return None, "deadline reached"
        key = forward_pass(g, lb, gens)
        t = placer.place(order(key), lb, D, deadline)
        if t is None and _past(deadline):
            return None, "deadline reached"
        if t is None:
            return None, f"an op does not fit within D={D}"
        need = t[g.src] + g.delay - g.distance * II
        viol = back & (t[g.dst] < need)
        if not viol.any():
            return t, "legal"
        np.maximum.at(lb, g.dst[viol], need[viol])
    return None, f"recurrence repair did not settle in {max_rounds} rounds"


def iterative_modulo_schedule(
    g: GauSGraph,
    mu: np.ndarray,
    II: int,
    D: int,
    *,
    budget_factor: int = 20,
    deadline: float | None = None,
) -> np.ndarray | None:
    """Rau's iterative modulo scheduling with eviction (budget ``budget_factor * n`` steps).

    Ops are taken by priority (smaller rounded mean first, then index); each goes to the first
    slot in ``[estart, estart + II - 1]`` without a resource conflict (``estart`` also respects
    the rounded mean as a lower bound),
    or, if none, to ``estart`` (or one later than its previous slot), evicting the ops it
    conflicts with and any successor whose dependence it breaks.

    Returns
    -------
    numpy.ndarray or None
        A legal schedule within ``[0, D-1]``, or ``None`` when the budget runs out or the
        ``deadline`` (``time.perf_counter()``) passes.
    """
    n = g.n
    table = _IMSTable(_Placer(g, II), rank=np.empty(n, dtype=np.int64))
    lat = g.delay - g.distance * II
    out_ptr_order = np.argsort(g.src, kind="stable")
    out_ptr = np.searchsorted(g.src[out_ptr_order], np.arange(n + 1))
    in_order = np.argsort(g.dst, kind="stable")
    in_ptr = np.searchsorted(g.dst[in_order], np.arange(n + 1))
    lb = np.clip(np.rint(mu).astype(np.int64), 0, max(D - 1, 0))
    prio = np.lexsort((np.arange(n), np.rint(mu)))
    table.rank[prio] = np.arange(n)
    t, prev = table.t, np.full(n, -1, dtype=np.int64)
    budget = budget_factor * max(n, 1)
    while table.unscheduled:
        if budget <= 0 or (budget % 64 == 0 and _past(deadline)):
            return None
        budget -= 1
        v = min(table.unscheduled, key=lambda x: table.rank[x])
        e = in_order[in_ptr[v] : in_ptr[v + 1]]
        placed = t[g.src[e]] >= 0
        estart = int(max(lb[v], (t[g.src[e]][placed] + lat[e][placed]).max(initial=0)))
        slot = next((s for s in range(estart, estart + II) if table.fits(v, s)), None)
        if slot is None:
            slot = estart if prev[v] < 0 or estart > prev[v] else int(prev[v]) + 1
        if slot > D - 1:
            return None
        table.evict_resource_conflicts(v, slot)
        table.place(v, slot)
        prev[v] = slot
        # evict successors whose dependence is now broken
        for k in out_ptr_order[out_ptr[v] : out_ptr[v + 1]]:
            w = int(g.dst[k])
            if w != v and t[w] >= 0 and t[w] < slot + lat[k]:
                table.evict(w)
        # a self-loop or recurrence onto v itself
        self_e = e[g.src[e] == v]
        if self_e.size and np.any(lat[self_e] > 0):
            table.evict(v)
            return None
    return t


class _IMSTable:
    """The state of :func:`iterative_modulo_schedule`: the modulo reservation table, each
    op's slot (``-1``: unscheduled), the ops still to place and their priority ranks."""

    def __init__(self, placer: _Placer, rank: np.ndarray) -> None:
        self.placer = placer
        self.rank = rank
        n = len(rank)
        self.mrt = np.zeros((len(placer.lim), placer.II))
        self.t = np.full(n, -1, dtype=np.int64)
        self.unscheduled = set(range(n))

    def _occupy(self, v: int, s: int, sign: float) -> None:
        p = self.placer
        if p.needs[v]:
            self.mrt[:, p.idx[s % p.II]] += sign * p.own[v]

    def fits(self, v: int, s: int) -> bool:
        """Whether op ``v`` at slot ``s`` stays within every limited unit's capacity."""
        p = self.placer
        if not p.needs[v]:
            return True
        return bool(np.all(self.mrt[:, p.idx[s % p.II]] + p.own[v] <= p.caps[:, None] + 1e-9))

    def place(self, v: int, slot: int) -> None:
        self.t[v] = slot
        self._occupy(v, slot, 1.0)
        self.unscheduled.discard(v)

    def evict(self, u: int) -> None:
        self._occupy(u, int(self.t[u]), -1.0)
        self.t[u] = -1
        self.unscheduled.add(u)

    def evict_resource_conflicts(self, v: int, slot: int) -> None:
        """Unschedule the ops that share a table row with ``v`` at ``slot``, lowest priority
        first, until ``v`` fits there."""
        p, t = self.placer, self.t
        if not p.needs[v] or self.fits(v, slot):
            return
        rows = p.idx[slot % p.II]
        placed = (x for x in range(len(t)) if t[x] >= 0 and p.needs[x])
        for u in sorted(placed, key=lambda x: -self.rank[x]):
            if self.fits(v, slot):
                break
            urows = p.idx[t[u] % p.II]
            overlap = np.intersect1d(rows[p.own[v].any(axis=0)], urows[p.own[u].any(axis=0)])
            if overlap.size:
                self.evict(u)
