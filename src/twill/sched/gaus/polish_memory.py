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

import time

import numpy as np

from twill.sched.gaus.graph import GauSGraph

__all__ = ["polish_memory"]

_TOL = 1e-9


def _csr(keys: np.ndarray, vals: np.ndarray, n: int) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """``(order, vals[order], ptr)``: ``vals`` grouped by ``keys`` (a CSR adjacency)."""
    order = np.argsort(keys, kind="stable")
    return order, vals[order], np.searchsorted(keys[order], np.arange(n + 1))


class _MemState:
    """A legal schedule with its live profile, value ends and per-op adjacency."""

    def __init__(self, g: GauSGraph, t: np.ndarray, D: int) -> None:
        fwd = g.forward
        src, dst, d = g.src[fwd], g.dst[fwd], g.delay[fwd]
        self.D = D
        self.t = np.array(t, dtype=np.int64)
        self.mem = np.asarray(g.mem, dtype=np.float64)
        self.live_out = np.asarray(g.live_out, dtype=bool)
        o, self.succ, self.succ_ptr = _csr(src, dst, g.n)
        self.succ_d = d[o]
        o, self.pred, self.pred_ptr = _csr(dst, src, g.n)
        self.pred_d = d[o]
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
        """New steps of the ops that move when op ``i`` goes to ``b``: successors pushed
        later (``b`` later) or predecessors pulled earlier, transitively, as far as their
        dependences need. ``None`` when more than ``cap`` ops would move or one would leave
        ``[0, D-1]``."""
        new = {i: b}
        stack = [i]
        later = b > self.t[i]
        nbr, ptr, dd = (
            (self.succ, self.succ_ptr, self.succ_d)
            if later
            else (self.pred, self.pred_ptr, self.pred_d)
        )
        while stack:
            u = stack.pop()
            tu = new[u]
            for k in range(ptr[u], ptr[u + 1]):
                v = int(nbr[k])
                tv = new.get(v, int(self.t[v]))
                need = tu + int(dd[k]) if later else tu - int(dd[k])
                if (later and tv < need) or (not later and tv > need):
                    if not 0 <= need <= self.D - 1 or len(new) >= cap:
                        return None
                    new[v] = need
                    stack.append(v)
        return new

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


def _better(a: tuple[float, int, float], b: tuple[float, int, float]) -> bool:
    """``a`` strictly below ``b`` lexicographically (floats compared with a tolerance)."""
    if a[0] < b[0] - _TOL:
        return a[0] < b[0]
    if abs(a[0] - b[0]) > _TOL:
        return False
    if a[1] != b[1]:
        return a[1] < b[1]
    return a[2] < b[2] - 1e-9 * max(1.0, abs(b[2]))


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
        if _better(k, cur if best is None else best[0]):
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
        Wall-clock cap in seconds (``None``: none).
    radius
        Steps on each side of an op's current one that are tried.
    push
        Most ops one move may shift: moving an op later pushes its successors as far as
        their dependences need (earlier: pulls its predecessors), transitively.
    max_moves
        Cap on applied moves (default ``4 n``).

    Returns
    -------
    (t, moves)
        The improved schedule (legal whenever the input was) and the number of moves applied;
        its peak is never above the input's.
    """
    start = time.perf_counter()
    if g.n == 0 or D <= 1:
        return np.array(t, dtype=np.int64), 0
    st = _MemState(g, t, D)
    max_moves = 4 * g.n if max_moves is None else int(max_moves)
    moves = 0
    cur = _key(st.prof)
    while moves < max_moves:
        improved = False
        for i in st.hot():
            if time_limit is not None and time.perf_counter() - start > time_limit:
                return st.t, moves
            found = _best_step(st, int(i), radius, push, cur)
            if found is not None:
                cur, new, ch, p = found
                st.apply(new, ch, p)
                moves += 1
                improved = True
                if moves >= max_moves:
                    break
        if not improved:
            break
    return st.t, moves
