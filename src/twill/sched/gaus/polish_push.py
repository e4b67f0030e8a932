"""Push moves for the post-legalisation local searches (additions to GauS, not in the paper).

A push move puts op ``i`` at step ``b`` and shifts its dependants as far as their distance-0
dependences need: successors later when ``b`` is later, predecessors earlier when it is
earlier, transitively (:func:`push_closure`). Every dependence and the latency bound hold
after it, so a legal schedule stays legal. Single moves inside an op's legal range are the
special case where nothing else moves.

:func:`polish_push_resource` is a descent for formulation A, ``ratio * sum_k peak_k +
sum_e c_e (t_v - t_u)``, with such moves, run after :mod:`twill.sched.gaus.polish`'s
single-move search has reached its local optimum: moves are compared by a key (objective,
peak cells, sum of squared loads; or peak term first, see ``peak_first``) and taken when it
decreases, so the descent cannot cycle. Reservation tables of length 1 only
(others are returned unchanged). The caller verifies the result.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

import numpy as np

from twill.deadline import NO_DEADLINE, Deadline
from twill.sched.gaus.graph import GauSGraph
from twill.sched.gaus.polish import resource_terms

__all__ = [
    "Adjacency",
    "PushMoves",
    "descend",
    "lex_better",
    "polish_push_resource",
    "push_closure",
]

_TOL = 1e-9
Key = tuple[float, int, float]


class Adjacency:
    """Distance-0 successor and predecessor lists (CSR) with their delays."""

    def __init__(self, g: GauSGraph) -> None:
        fwd = g.forward
        src, dst, d = g.src[fwd], g.dst[fwd], g.delay[fwd]
        o = np.argsort(src, kind="stable")
        self.succ, self.succ_d = dst[o], d[o]
        self.succ_ptr = np.searchsorted(src[o], np.arange(g.n + 1))
        o = np.argsort(dst, kind="stable")
        self.pred, self.pred_d = src[o], d[o]
        self.pred_ptr = np.searchsorted(dst[o], np.arange(g.n + 1))


def push_closure(
    adj: Adjacency, t: np.ndarray, i: int, b: int, D: int, cap: int
) -> dict[int, int] | None:
    """New steps of the ops that move when op ``i`` goes to ``b`` (``i`` included): its
    successors pushed later (``b`` later) or predecessors pulled earlier, transitively, as far
    as their dependences need. ``None`` when more than ``cap`` ops would move or one would
    leave ``[0, D-1]``."""
    if not 0 <= b <= D - 1:
        return None
    new = {i: b}
    stack = [i]
    later = b > t[i]
    nbr, ptr, dd = (
        (adj.succ, adj.succ_ptr, adj.succ_d) if later else (adj.pred, adj.pred_ptr, adj.pred_d)
    )
    while stack:
        u = stack.pop()
        tu = new[u]
        for k in range(ptr[u], ptr[u + 1]):
            v = int(nbr[k])
            tv = new.get(v, int(t[v]))
            need = tu + int(dd[k]) if later else tu - int(dd[k])
            if (later and tv < need) or (not later and tv > need):
                if not 0 <= need <= D - 1 or len(new) >= cap:
                    return None
                new[v] = need
                stack.append(v)
    return new


def lex_better(a: tuple[float, int, float], b: tuple[float, int, float]) -> bool:
    """``a`` strictly below ``b`` lexicographically (floats compared with a tolerance)."""
    scale = _TOL * max(1.0, abs(b[0]))
    if abs(a[0] - b[0]) > scale:
        return a[0] < b[0]
    if a[1] != b[1]:
        return a[1] < b[1]
    return a[2] < b[2] - _TOL * max(1.0, abs(b[2]))


def _key_a(
    load: np.ndarray, comm: float, ratio: float, peak_first: bool
) -> tuple[float, int, float]:
    """Descent key of formulation A: (objective, peak cells, sum of squared loads), or with
    ``peak_first`` (peak term, peak cells, objective)."""
    peak = load.max(axis=1)
    cells = int((load >= peak[:, None] - _TOL).sum())
    obj = ratio * float(peak.sum()) + comm
    if peak_first:
        return float(peak.sum()), cells, obj
    return obj, cells, float((load * load).sum())


@dataclass(frozen=True)
class PushMoves:
    """Which push moves a descent of :func:`polish_push_resource` tries.

    Parameters
    ----------
    radius
        Steps on each side of an op's current one that are tried.
    push
        Most ops one move may shift.
    peak_first
        Compare by (peak term, peak cells, objective) and try only the ops on a peak step:
        a peak step is emptied one op at a time even when each move lengthens edges (the
        objective may rise; the caller keeps the best schedule it has seen). Default: by
        (objective, peak cells, sum of squared loads), every op tried.
    """

    radius: int = 8
    push: int = 32
    peak_first: bool = False


def polish_push_resource(
    g: GauSGraph,
    t: np.ndarray,
    D: int,
    ratio: float,
    *,
    time_limit: float | None = None,
    moves: PushMoves | None = None,
    max_moves: int | None = None,
    deadline: Deadline = NO_DEADLINE,
) -> tuple[np.ndarray, int]:
    """Descent on formulation A's objective with push moves from a legal ``t``.

    Parameters
    ----------
    g, t, D, ratio
        Graph, legal start steps (not modified), latency bound, weight of the peak.
    time_limit
        Wall-clock cap in seconds (``None``: none), within ``deadline``.
    moves
        Which push moves are tried and how they compare (:class:`PushMoves`; ``None``: its
        defaults).
    max_moves
        Cap on applied moves (default ``n``).
    deadline
        The caller's :class:`~twill.deadline.Deadline` (the search runs on its child).

    Returns
    -------
    (t, moves)
        The schedule (legal whenever the input was; objective never above the input's
        unless ``peak_first``) and the number of moves applied.
    """
    deadline = deadline.child(time_limit)
    rule = PushMoves() if moves is None else moves
    radius, push, peak_first = rule.radius, rule.push, rule.peak_first
    t = np.array(t, dtype=np.int64)
    terms = resource_terms(g, t, D)
    if terms is None:
        return t, 0
    w, cnet, load = terms
    adj = Adjacency(g)
    st = {"load": load}
    st["comm"] = float(t @ cnet)
    heavy = w.any(axis=1)

    def hot() -> np.ndarray:
        if not peak_first:
            return np.arange(g.n)
        load = st["load"]
        at_peak = (load >= load.max(axis=1)[:, None] - _TOL).any(axis=0)
        return np.flatnonzero(heavy & at_peak[t])

    def best_move(i: int, cur: Key) -> tuple | None:
        best = None
        a = int(t[i])
        for b in range(max(0, a - radius), min(D - 1, a + radius) + 1):
            new = push_closure(adj, t, i, b, D, push) if b != a else None
            if new is None:
                continue
            idx = np.fromiter(new.keys(), dtype=np.int64, count=len(new))
            to = np.fromiter(new.values(), dtype=np.int64, count=len(new))
            ld = st["load"].copy()
            np.subtract.at(ld.T, t[idx], w[idx])
            np.add.at(ld.T, to, w[idx])
            c = st["comm"] + float((to - t[idx]) @ cnet[idx])
            k = _key_a(ld, c, ratio, peak_first)
            if lex_better(k, cur if best is None else best[0]):
                best = (k, idx, to, ld, c)
        return best

    def apply(found: tuple) -> None:
        _, idx, to, st["load"], st["comm"] = found
        t[idx] = to

    cur = _key_a(st["load"], st["comm"], ratio, peak_first)
    done = descend(hot, best_move, apply, cur, deadline, g.n if max_moves is None else max_moves)
    return t, done


def descend(
    hot: Callable[[], np.ndarray],
    best_move: Callable[[int, Key], tuple | None],
    apply: Callable[[tuple], None],
    cur: Key,
    deadline: Deadline,
    max_moves: int,
) -> int:
    """First-improvement descent shared by the push searches: passes over ``hot()`` ops,
    applying each op's best improving move (``(key, ...)`` from ``best_move(op, key)``) until
    a pass changes nothing, ``max_moves`` moves or the ``deadline``.
    Returns the number of moves applied."""
    moves = 0
    while moves < max_moves:
        improved = False
        for i in hot():
            if deadline.passed():
                return moves
            found = best_move(int(i), cur)
            if found is not None:
                cur = found[0]
                apply(found)
                moves += 1
                improved = True
                if moves >= max_moves:
                    break
        if not improved:
            break
    return moves
