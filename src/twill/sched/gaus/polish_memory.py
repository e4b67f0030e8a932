"""Post-legalisation local search for formulation B, peak live memory (an addition to GauS,
not in the paper).

A value ``i`` of ``b_i`` bits is live on the steps ``[t_i, end_i)``, where ``end_i`` is its
last consumer's step (``D`` for live-out values), and the objective is the peak of the live
profile. The profile is flat at its peak, so a single move rarely lowers the peak at once; the
descent therefore compares schedules by the key ``(peak, steps at the peak, sum of squared
profile)`` and accepts a move only when the key decreases, which cannot cycle.

Moves keep legality by construction: op ``i`` moves to a step in ``[lo_i, hi_i]`` (its placed
predecessors' ``t_u + d_ui`` and successors' ``t_v - d_iv``, within ``[0, D-1]``), so every
dependence and the latency bound hold after it. Only the ops that can change the profile at a
peak step are tried: the values live at some peak step (moving the producer later shortens
the value) and their last consumers (moving one earlier shortens it). Each move changes the
op's own interval and its predecessors' ends, a handful of slices of the ``D``-step profile,
so one evaluation costs ``O(D + degree)``.

The caller verifies the result like any other schedule.
"""

from __future__ import annotations

import numpy as np

from twill.deadline import NO_DEADLINE, Deadline
from twill.sched.gaus.graph import GauSGraph
from twill.sched.gaus.polish_push import Adjacency, descend, lex_better, push_closure

__all__ = ["polish_memory"]

_TOL = 1e-9


class _MemState:
    """A legal schedule with its live profile, value ends and per-op adjacency."""

    def __init__(self, g: GauSGraph, t: np.ndarray, D: int) -> None:
        self.D = D
        self.t = np.array(t, dtype=np.int64)
        self.mem = np.asarray(g.mem, dtype=np.float64)
        self.live_out = np.asarray(g.live_out, dtype=bool)
        self.adj = Adjacency(g)
        self.succ, self.succ_ptr = self.adj.succ, self.adj.succ_ptr
        self.pred, self.pred_ptr = self.adj.pred, self.adj.pred_ptr
        self.end = np.array([self._end(i) for i in range(g.n)], dtype=np.int64)
        self.prof = np.zeros(D + 1)
        live = self.end > self.t
        np.add.at(self.prof, self.t[live], self.mem[live])
        np.add.at(self.prof, self.end[live], -self.mem[live])
        self.prof = np.cumsum(self.prof)[:D]

    def _end(self, u: int, new: dict[int, int] | None = None) -> int:
        """End of value ``u`` with the ops of ``new`` at their new steps (``-1``: no
        consumer)."""
        if self.live_out[u]:
            return self.D
        s = self.succ[self.succ_ptr[u] : self.succ_ptr[u + 1]]
        if s.size == 0:
            return -1
        if not new:
            return int(self.t[s].max())
        return max(new.get(int(v), int(self.t[v])) for v in s)

    def shifted(self, i: int, b: int, cap: int) -> dict[int, int] | None:
        """The ops that move when op ``i`` goes to ``b`` (:func:`push_closure`)."""
        return push_closure(self.adj, self.t, i, b, self.D, cap)

    def changes(self, new: dict[int, int]) -> list[tuple[int, int, int, float]]:
        """Interval changes ``(value, new start, new end, bits)`` of the moves ``new``."""
        touched = set(new)
        for i in new:
            touched.update(int(u) for u in self.pred[self.pred_ptr[i] : self.pred_ptr[i + 1]])
        out = []
        for v in touched:
            start = new.get(v, int(self.t[v]))
            e = self._end(v, new)
            if start != self.t[v] or e != self.end[v]:
                out.append((v, start, e, self.mem[v]))
        return out

    def profile_after(self, ch: list[tuple[int, int, int, float]]) -> np.ndarray:
        """The live profile after the interval changes ``ch``."""
        p = self.prof.copy()
        for v, start, end, w in ch:
            a, e = int(self.t[v]), int(self.end[v])
            if e > a:
                p[a:e] -= w
            if end > start:
                p[start:end] += w
        return p

    def apply(self, new: dict[int, int], ch: list, p: np.ndarray) -> None:
        """Commit the moves ``new`` (their interval changes ``ch`` and new profile ``p``)."""
        for v, _, end, _ in ch:
            self.end[v] = end
        for v, s in new.items():
            self.t[v] = s
        self.prof = p

    def hot(self) -> np.ndarray:
        """Ops that can change the profile at a peak step: values live at one, and their last
        consumers."""
        peak = self.prof.max(initial=0.0)
        cnt = np.concatenate([[0], np.cumsum(self.prof >= peak - _TOL)])
        e = np.clip(self.end, 0, self.D)
        live = (self.end > self.t) & (cnt[e] - cnt[np.clip(self.t, 0, self.D)] > 0)
        vals = np.flatnonzero(live)
        last = [
            self.succ[self.succ_ptr[u] : self.succ_ptr[u + 1]][
                self.t[self.succ[self.succ_ptr[u] : self.succ_ptr[u + 1]]] == self.end[u]
            ]
            for u in vals
        ]
        return np.unique(np.concatenate([vals, *last])) if vals.size else vals


def _key(p: np.ndarray) -> tuple[float, int, float]:
    """Descent key: peak, number of steps at the peak, sum of squares."""
    peak = float(p.max(initial=0.0))
    return peak, int((p >= peak - _TOL).sum()), float(p @ p)


def _best_step(
    st: _MemState, i: int, radius: int, cap: int, cur: tuple[float, int, float]
) -> tuple | None:
    """The best improving move of op ``i`` within ``radius`` steps (pushing at most ``cap``
    ops): ``(key, moves, changes, profile)`` or ``None``."""
    a = int(st.t[i])
    best = None
    for b in range(max(0, a - radius), min(st.D - 1, a + radius) + 1):
        new = st.shifted(i, b, cap) if b != a else None
        if new is None:
            continue
        ch = st.changes(new)
        p = st.profile_after(ch)
        k = _key(p)
        if lex_better(k, cur if best is None else best[0]):
            best = (k, new, ch, p)
    return best


def polish_memory(
    g: GauSGraph,
    t: np.ndarray,
    D: int,
    *,
    time_limit: float | None = None,
    radius: int = 16,
    push: int = 32,
    max_moves: int | None = None,
    deadline: Deadline = NO_DEADLINE,
) -> tuple[np.ndarray, int]:
    """Local descent on the peak live memory (formulation B) from a legal ``t``.

    Parameters
    ----------
    g
        The graph (distance-0 edges only, as in formulation B).
    t
        A legal start-step vector within ``[0, D-1]`` (not modified).
    D
        Latency bound.
    time_limit
        Wall-clock cap in seconds (``None``: none), within ``deadline``.
    radius
        Steps on each side of an op's current one that are tried.
    push
        Most ops one move may shift: moving an op later pushes its successors as far as
        their dependences need (earlier: pulls its predecessors), transitively.
    max_moves
        Cap on applied moves (default ``4 n``).
    deadline
        The caller's :class:`~twill.deadline.Deadline` (the search runs on its child).

    Returns
    -------
    (t, moves)
        The improved schedule (legal whenever the input was) and the number of moves applied;
        its peak is never above the input's.
    """
    deadline = deadline.child(time_limit)
    if g.n == 0 or D <= 1:
        return np.array(t, dtype=np.int64), 0
    st = _MemState(g, t, D)
    max_moves = 4 * g.n if max_moves is None else int(max_moves)

    def apply(found: tuple) -> None:
        _, new, ch, p = found
        st.apply(new, ch, p)

    moves = descend(
        st.hot,
        lambda i, cur: _best_step(st, i, radius, push, cur),
        apply,
        _key(st.prof),
        deadline,
        max_moves,
    )
    return st.t, moves
