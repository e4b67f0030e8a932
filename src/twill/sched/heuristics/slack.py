"""Slack modulo scheduling on the window model (Huff, PLDI 1993; Rau, MICRO-27 1994).

Rau's iterative modulo scheduling (:mod:`.ims`) places ops by height, each after its
*scheduled* predecessors only. On HLS loops whose memory ops all sit in one recurrence (the
ChStone loops: aes, blowfish, adpcm, mips), that order cannot see how far an op may move
before a loop-carried edge breaks, and IMS ends 5-25 % above the optimum. Here the same
search runs on the translation-reduced window model of :mod:`twill.sched.exact.window` at
one ``II`` (the ops of limited units, each in a window relative to its component's anchor,
the dependences through the other ops folded into all-pairs longest paths ``D``):

* **Priority** (Huff's slack scheduling): the unplaced op with the narrowest current window
  ``[Estart, Lstart]`` goes next. Every placement ``M(x) = t`` narrows the others:
  ``Estart(v) >= t + D[x, v]`` and ``Lstart(v) <= t - D[v, x]``.
* **Placement**: the first start in ``[Estart, min(Lstart, Estart + II - 1)]`` whose
  reservation rows fit the modulo reservation table. If none fits, Rau's forced placement:
  at ``Estart`` (or one after the op's previous start, so that the search moves on), evicting
  every placed op whose longest-path bound it breaks and the holders of the rows it needs.
* A **budget** of ``budget_ratio`` placements per op; running out is a failure (``None``),
  never a proof.

The window model's solution is lifted as the exact decision's is (:func:`.window.lift`: free
ops fill the residues left, then least starts), the other ops go to their earliest starts
(:func:`twill.sched.exact.phase1.complete_schedule`), and every schedule returned has passed
:func:`twill.sched.verify.verify_modulo_schedule`.

Over ``II`` (:func:`improve_with_slack`): a bisection between the proven lower bound and the
incumbent's ``I``, inside a time budget.

Preconditions: the graph passed :func:`twill.sched.validate.check_graph`.
"""

from __future__ import annotations

import logging
import time
from typing import Any

from twill.deadline import NO_DEADLINE, Deadline
from twill.sched.bounds import has_positive_cycle
from twill.sched.exact.phase1 import FW_RATE, complete_schedule
from twill.sched.exact.reduced import OutOfTime, build_reduced_model
from twill.sched.exact.window import NO_PATH, build_window_model, lift, longest_matrix
from twill.sched.heuristics.ims import HeuristicSchedule
from twill.sched.ir import DependenceGraph
from twill.sched.verify import verify_modulo_schedule

__all__ = ["improve_with_slack", "slack_modulo_schedule"]

log = logging.getLogger(__name__)

_FAR = 1 << 40  # "no bound" in the window arrays


def slack_modulo_schedule(
    graph: DependenceGraph,
    ii: int,
    *,
    budget_ratio: float = 3.0,
    deadline: Deadline | float | None = None,
) -> dict[str, int] | None:
    """A modulo schedule at ``ii`` by slack scheduling on the window model, or ``None``.

    Parameters
    ----------
    graph, ii
        As for :func:`twill.sched.heuristics.ims.iterative_modulo_schedule`.
    budget_ratio
        Placements allowed per op of the window model before giving up.
    deadline
        :class:`~twill.deadline.Deadline` (or ``time.monotonic()`` value) past which the model
        build gives up (``None``: none).

    Returns
    -------
    dict or None
        Start per op (minimum 0), verified; ``None`` when ``ii`` is below RecMII, the window
        model already shows no schedule, the budget or the deadline ran out.

    Notes
    -----
    A heuristic like IMS: ``None`` proves nothing, and a schedule is not claimed minimal.

    Examples
    --------
    >>> from twill.sched.kernels import flash_attention_forward_simplified as fig1
    >>> slack_modulo_schedule(fig1(), 2)  # the paper's Fig. 1 at its minimum I
    {'S': 0, 'P': 1, 'O': 3}
    """
    if has_positive_cycle(graph, ii):
        return None
    try:
        data = build_reduced_model(graph, ii, deadline)
    except OutOfTime:
        return None
    if Deadline.of(deadline).short_of(len(data.kept) ** 3 / FW_RATE):
        return None  # the window model's all-pairs longest paths cannot be interrupted
    wm = build_window_model(data, energetic=False)
    if wm.overfull is not None:
        return None
    times = _place(wm, budget_ratio)
    kept = lift(data, wm, times) if times is not None else None
    if kept is None:
        return None
    schedule, _length = complete_schedule(data, kept)
    violations = verify_modulo_schedule(graph, schedule, ii)
    if violations:  # a bug here must not reach the user: no schedule instead
        log.warning("slack schedule at II=%d failed the verifier: %s", ii, violations[0])
        return None
    return schedule


class _Table:
    """The modulo reservation table of the window model's decided ops: residue groups and
    0-1 rows, with who holds each entry."""

    def __init__(self, wm: Any, pos: dict[int, int]) -> None:
        self.ii = wm.ii
        n = len(pos)
        self.cap: dict[tuple, int] = {}
        self.groups: list[list[tuple[int, int]]] = [[] for _ in range(n)]
        for gi, (_fu, cap, users) in enumerate(wm.groups):
            self.cap["g", gi] = cap
            for i, u in users:
                self.groups[pos[i]].append((gi, u))
        self.rows: list[dict[int, list[tuple[tuple, int]]]] = [{} for _ in range(n)]
        for rid, (_fu, _r, cap, terms) in enumerate(wm.rows):
            self.cap["r", rid] = cap
            for i, q, u in terms:
                self.rows[pos[i]].setdefault(q, []).append((("r", rid), u))
        self.used: dict[tuple, int] = {}
        self.holders: dict[tuple, dict[int, int]] = {}  # entry -> {op: its units there}

    def needs(self, x: int, t: int) -> list[tuple[tuple, int]]:
        """The entries op ``x`` started at ``t`` reserves, with their units."""
        r = t % self.ii
        out = [(("g", gi, r), u) for gi, u in self.groups[x]]
        return out + self.rows[x].get(r, [])

    def fits(self, x: int, t: int) -> bool:
        return all(self.used.get(k, 0) + u <= self._cap(k) for k, u in self.needs(x, t))

    def _cap(self, key: tuple) -> int:
        return self.cap[key[:2]]

    def add(self, x: int, t: int) -> None:
        for k, u in self.needs(x, t):
            self.used[k] = self.used.get(k, 0) + u
            self.holders.setdefault(k, {})[x] = u

    def remove(self, x: int, t: int) -> None:
        for k, u in self.needs(x, t):
            self.used[k] -= u
            del self.holders[k][x]

    def blockers(self, x: int, t: int) -> list[int]:
        """Placed ops to evict (lowest index first) so that ``x`` fits at ``t``."""
        out: list[int] = []
        for k, u in self.needs(x, t):
            over = self.used.get(k, 0) + u - self._cap(k)
            for y, units in sorted(self.holders.get(k, {}).items()):
                if over <= 0:
                    break
                if y not in out:
                    out.append(y)
                over -= units
        return out


def _place(wm: Any, budget_ratio: float) -> dict[int, int] | None:
    """The slack-scheduling loop (module docstring) on the window model ``wm``: a start per
    decided op, or ``None`` out of budget."""
    import numpy as np

    ops = list(wm.ops)
    n = len(ops)
    if n == 0:
        return {}
    pos = {v: i for i, v in enumerate(ops)}
    d = longest_matrix(tuple(ops), wm.arcs)
    has = d > NO_PATH // 2
    after = np.where(has, d, -_FAR)  # M(v) >= M(x) + after[x, v]
    before = np.where(has.T, -d.T, _FAR)  # M(v) <= M(x) + before[x, v]
    dom_lo = np.array([wm.domain[v][0] for v in ops], dtype=np.int64)
    dom_hi = np.array([wm.domain[v][1] for v in ops], dtype=np.int64)
    table = _Table(wm, pos)
    start = np.zeros(n, dtype=np.int64)
    placed = np.zeros(n, dtype=bool)
    last: list[int | None] = [None] * n
    budget = max(1, int(budget_ratio * n))

    def windows() -> tuple[Any, Any]:
        if not placed.any():
            return dom_lo.copy(), dom_hi.copy()
        p = np.nonzero(placed)[0]
        lo = np.maximum(dom_lo, (start[p, None] + after[p]).max(axis=0))
        hi = np.minimum(dom_hi, (start[p, None] + before[p]).min(axis=0))
        return lo, hi

    def evict(y: int) -> None:
        table.remove(y, int(start[y]))
        placed[y] = False

    lo, hi = windows()
    evicted = False
    while not placed.all():
        if budget <= 0:
            return None
        budget -= 1
        x = int(np.argmin(np.where(placed, _FAR, hi - lo)))
        t = _first_fit(table, x, int(lo[x]), int(hi[x]))
        if t is None:  # Rau's forced placement, evicting what it breaks
            t = max(int(dom_lo[x]), min(int(lo[x]), int(dom_hi[x])))
            prev = last[x]
            if prev is not None and t <= prev:
                t = prev + 1 if prev < dom_hi[x] else int(dom_lo[x])
            p = np.nonzero(placed)[0]
            broken = [
                int(y) for y in p[(start[p] < t + after[x, p]) | (start[p] > t + before[x, p])]
            ]
            for y in broken + table.blockers(x, t):
                if placed[y]:
                    evict(y)
                    evicted = True
        table.add(x, t)
        start[x], placed[x], last[x] = t, True, t
        if evicted:  # the windows again from what is left placed
            lo, hi = windows()
            evicted = False
        else:  # one more placement only narrows them
            np.maximum(lo, t + after[x], out=lo)
            np.minimum(hi, t + before[x], out=hi)
    return {v: int(start[pos[v]]) for v in ops}


def _first_fit(table: _Table, x: int, lo: int, hi: int) -> int | None:
    """The first start in ``[lo, min(hi, lo + II - 1)]`` whose rows fit, or ``None``."""
    for t in range(lo, min(hi, lo + table.ii - 1) + 1):
        if table.fits(x, t):
            return t
    return None


def improve_with_slack(
    graph: DependenceGraph,
    incumbent: HeuristicSchedule,
    lower: int,
    budget: float,
    *,
    deadline: Deadline = NO_DEADLINE,
) -> HeuristicSchedule:
    """The better of ``incumbent`` and slack schedules at ``lower <= II < incumbent.I``.

    Bisection between ``lower - 1`` (taken as a failure) and ``incumbent.I`` (a schedule):
    feasibility need not be monotone in ``II``, so this is a heuristic order, about
    ``log2(incumbent.I - lower)`` tries; each try builds the window model at its ``II``
    (0.1-0.5 s at 800-1,400 ops), and no try starts after ``budget`` seconds or the caller's
    ``deadline`` (the search runs on its child). The returned schedule has
    ``method = "slack"`` when it won; ``seconds`` counts both heuristics, ``tried`` both
    lists.

    Examples
    --------
    >>> from twill.sched.heuristics.ims import heuristic_schedule
    >>> from twill.sched.kernels import flash_attention_forward_simplified
    >>> g = flash_attention_forward_simplified()
    >>> improve_with_slack(g, heuristic_schedule(g), 2, 1.0).I
    2
    """
    t0 = time.perf_counter()
    end = deadline.child(budget)
    best: tuple[int, dict[str, int]] | None = None
    tried = list(incumbent.tried)

    def attempt(ii: int) -> bool:
        nonlocal best
        s = slack_modulo_schedule(graph, ii, deadline=end)
        tried.append((ii, s is not None))
        if s is not None and (best is None or ii < best[0]):
            best = (ii, s)
        return s is not None

    low, high = lower - 1, incumbent.I  # bisection: a failure at low, a schedule at high
    while high - low > 1 and not end.passed():
        mid = (low + high) // 2
        low, high = (low, mid) if attempt(mid) else (mid, high)
    seconds = incumbent.seconds + time.perf_counter() - t0
    if best is None:
        return HeuristicSchedule(incumbent.I, incumbent.schedule, incumbent.L, incumbent.method,
                                 seconds, tuple(tried), incumbent.first)  # fmt: skip
    ii, schedule = best
    length = max((schedule[i.name] + i.cycles for i in graph.instructions), default=0)
    log.info("slack incumbent %s: I=%d (IMS %d), %d II tried", graph.name, ii, incumbent.I,
             len(tried) - len(incumbent.tried))  # fmt: skip
    first = incumbent.first or (incumbent.I, incumbent.seconds)
    return HeuristicSchedule(ii, schedule, length, "slack", seconds, tuple(tried), first)
