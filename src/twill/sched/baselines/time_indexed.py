"""Time-indexed LP relaxation of formulation A under a peak cap: a lower bound and a guide.

Formulation A with one resource: minimise ``ratio * peak + sum_e c_e (t_v - t_u)``. With the
peak capped at ``P`` the communication term is linear in the starts,
``sum_v coef_v t_v`` with ``coef_v`` = in-weight minus out-weight, so what remains is a
resource-constrained scheduling problem with a weighted-start objective. Its time-indexed
relaxation, in the cumulative variables ``y[v, t] = P(t_v <= t)`` (monotone in ``t``):

* precedence, for every distance-0 edge ``u -> v`` of delay ``d``:
  ``y[v, t] <= y[u, t - d]`` (the disaggregated precedence of Christofides, Alvarez-Valdes
  and Tamarit, EJOR 1987: much tighter than ``E[t_v] >= E[t_u] + d``);
* capacity, at every step ``s``: ``sum_v sum_c usage[v, c] x[v, s - c] <= P`` with
  ``x[v, t] = y[v, t] - y[v, t - 1]``;
* objective: ``sum_v coef_v E[t_v]``, ``E[t_v] = ALAP_v - sum_{t < ALAP_v} y[v, t]``.

Every schedule with peak at most ``P`` is a 0/1 point of it, so ``ratio * P + LP optimum``
bounds the objective of every schedule whose peak is exactly ``P`` (:func:`peak_lp`), and
the minimum over ``P`` bounds formulation A (:func:`formulation_a_lp_bound`). On the EPFL
designs the LP optimum is more than 90 % integral, which makes it a good guide:
:func:`lp_guided_schedule` solves the exact CP-SAT model restricted to each op's LP support
(the steps where it has mass).

Solver: GLOP (OR-Tools' simplex), in-process. Preconditions: formulation A's graph with a
single resource (usage ``[n, 1, L]``) and a legal latency bound ``D``.
"""

from __future__ import annotations

import time
from dataclasses import dataclass

import numpy as np

from twill.deadline import Deadline
from twill.errors import InvalidProblemError
from twill.sched.bounds import least_passing
from twill.sched.gaus.graph import GauSGraph, asap_alap, topological_generations

__all__ = [
    "PeakLP",
    "PeakLPs",
    "PeakRelaxation",
    "capped_rounding",
    "formulation_a_lp_bound",
    "lp_guided_schedule",
    "lp_rounded_schedule",
    "min_communication_schedule",
    "peak_lp",
]


_NO_LIMIT_MS = 10**10  # GLOP's limit when none is asked for: about 4 months


@dataclass(frozen=True)
class PeakLP:
    """The relaxation at one peak cap: ``status`` (``"optimal"``, ``"infeasible"`` or
    ``"unknown"`` when the time limit stopped GLOP), ``bound`` (``ratio * cap + LP
    optimum``; ``inf`` when infeasible, ``-inf`` when unknown: never a false claim), and each
    op's LP support ``[lo, hi]`` (first step with mass, first step where it has surely
    started) and its expected start ``expected`` (``None`` unless optimal)."""

    cap: int
    status: str
    bound: float
    lo: np.ndarray
    hi: np.ndarray
    seconds: float
    expected: np.ndarray | None = None

    @property
    def feasible(self) -> bool:
        return self.status == "optimal"


def peak_lp(
    g: GauSGraph,
    D: int,
    cap: float | None,
    ratio: float = 100.0,
    time_limit: float | None = None,
) -> PeakLP:
    """Solve the relaxation (module docstring) with the peak capped at ``cap`` (``None``: no
    cap, and ``bound`` is then the LP optimum of the communication alone) within
    ``time_limit`` seconds (``None``: no limit)."""
    return PeakRelaxation(g, D, ratio).solve(cap, time_limit)


class PeakRelaxation:
    """The relaxation of ``g`` over ``D`` steps, built once and solved at any number of caps.

    The cap is a variable whose bounds are fixed at the cap asked for, so a new cap changes
    one bound and nothing else: GLOP then starts from the last optimal basis instead of from
    scratch (the searches over caps of :class:`PeakLPs` solve ten or more). The first solve
    runs the dual simplex, the later ones the primal simplex from that basis: on EPFL
    ``i2c`` (1489 ops) the first LP takes about 60 s with the dual simplex (78 s with the
    primal one), and the seven re-solves of the search 18 s with the primal simplex against
    78 s with the dual one (``bar``: 13 s against 26 s)."""

    def __init__(self, g: GauSGraph, D: int, ratio: float = 100.0) -> None:
        from ortools.linear_solver import pywraplp

        if g.usage.shape[1] != 1:
            raise InvalidProblemError("the time-indexed LP supports a single resource")
        self.g, self.D, self.ratio = g, D, ratio
        self.asap, self.alap = asap_alap(g, D)
        self.solver = pywraplp.Solver.CreateSolver("GLOP")
        self.y = _cumulative_vars(self.solver, g, self.asap, self.alap)
        _precedence_rows(self.solver, g, self.y, self.asap)
        self.cap = self.solver.NumVar(0.0, self.solver.infinity(), "cap")
        _capacity_rows(self.solver, g, self.y, (self.asap, self.alap), D, self.cap)
        _communication_objective(self.solver, g, self.y)
        self.solver.SetSolverSpecificParametersAsString("use_dual_simplex: true")

    def solve(self, cap: float | None, time_limit: float | None = None) -> PeakLP:
        """The relaxation at ``cap`` (``None``: uncapped) within ``time_limit`` seconds."""
        from ortools.linear_solver import pywraplp

        start = time.perf_counter()
        top = self.solver.infinity() if cap is None else float(cap)
        self.cap.SetBounds(0.0 if cap is None else float(cap), top)
        limit_ms = _NO_LIMIT_MS if time_limit is None else max(1, int(1000 * time_limit))
        self.solver.SetTimeLimit(limit_ms)
        code = self.solver.Solve()
        self.solver.SetSolverSpecificParametersAsString("use_dual_simplex: false")  # re-solves
        asap, alap = self.asap, self.alap
        if code != pywraplp.Solver.OPTIMAL:
            status = "infeasible" if code == pywraplp.Solver.INFEASIBLE else "unknown"
            bound = float("inf") if status == "infeasible" else float("-inf")
            return PeakLP(int(cap or 0), status, bound, asap, alap, time.perf_counter() - start)
        comm = self.solver.Objective().Value() + sum(_coefficients(self.g) * alap)
        lo, hi = _support(self.y, asap, alap)
        bound = comm + (self.ratio * float(cap) if cap is not None else 0.0)
        expected = np.array([alap[v] - sum(var.solution_value() for var in row.values())
                             for v, row in enumerate(self.y)])  # fmt: skip
        return PeakLP(int(cap or 0), "optimal", float(bound), lo, hi,
                      time.perf_counter() - start, expected)  # fmt: skip


class PeakLPs:
    """The relaxation per peak cap, each solved once, within what is left before
    ``deadline`` (a :class:`~twill.deadline.Deadline`; ``None``: no limit); past it an LP is
    ``"unknown"``. The searches over caps rely on ``V(P) = ratio * P + LP(P)`` being convex
    in ``P`` (an LP's optimum is convex in its right-hand side) and on feasibility being
    monotone in ``P``."""

    def __init__(
        self, g: GauSGraph, D: int, ratio: float = 100.0, deadline: Deadline | None = None
    ) -> None:
        self.g, self.D, self.ratio, self.deadline = g, D, ratio, Deadline.of(deadline)
        self.solved: dict[int | None, PeakLP] = {}
        self.relaxation: PeakRelaxation | None = None

    def at(self, cap: int | None) -> PeakLP:
        """The LP at ``cap`` (``None``: uncapped)."""
        if cap not in self.solved:
            left = self.deadline.remaining()
            if left is not None and left <= 0:  # past the deadline: unknown, not even built
                none = np.zeros(0, dtype=np.int64)
                self.solved[cap] = PeakLP(int(cap or 0), "unknown", float("-inf"), none, none, 0.0)
            else:
                if self.relaxation is None:
                    self.relaxation = PeakRelaxation(self.g, self.D, self.ratio)
                self.solved[cap] = self.relaxation.solve(cap, time_limit=left)
        return self.solved[cap]

    def lowest_feasible(self, top: int) -> int:
        """The lowest cap in ``[1, top]`` the LP admits (``top`` is admitted).

        The bisection starts at the cap below which the LP surely fails (:meth:`least_cap`):
        infeasible LPs far below it cost as much as feasible ones (EPFL ``i2c``: 30 s for
        cap 29, whose answer :meth:`least_cap` gives for free) and leave GLOP a basis that
        slows the next solve."""
        return least_passing(min(top, self.least_cap()), top, lambda cap: self.at(cap).feasible)

    def least_cap(self) -> int:
        """A cap below which every LP is infeasible: the capacity rows (one per step an op
        can use the resource at, ``D + L - 1`` of them) share the total usage, so a
        feasible cap is at least the total over their number."""
        rows = self.D + self.g.usage.shape[2] - 1
        return max(1, int(np.ceil(self.g.usage[:, 0, :].sum() / rows - 1e-9)))

    def least_value(self, lo: int, hi: int) -> int:
        """The cap in ``[lo, hi]`` of least ``V`` (ternary search)."""
        while hi - lo > 2:
            a, b = lo + (hi - lo) // 3, hi - (hi - lo) // 3
            lo, hi = (lo, b) if self.at(a).bound <= self.at(b).bound else (a, hi)
        return min(range(lo, hi + 1), key=lambda c: (self.at(c).bound, c))

    def lower_bound(self, peak: int, best: int | None) -> float | None:
        """A lower bound on formulation A, given ``best``, the cap of least ``V`` below
        ``peak`` (``None``: the LP admits none there). A schedule of peak ``p`` costs at
        least ``V(p)``, so the least ``V`` over every cap bounds them all; above ``peak`` it
        is found by extending the search while ``V`` falls (caps doubling their distance to
        ``peak``, then a ternary search). ``None`` when an LP hit the deadline (its
        conclusions then do not hold). A relative margin of 1e-6 covers the simplex's
        tolerances."""
        # V falls from ``prev`` to ``a``, so its minimum lies above ``prev``; it does not
        # fall from ``a`` to ``b``, so the minimum lies at or below ``b``
        most = int(np.ceil(self.g.usage.sum() - 1e-9))  # no schedule's peak exceeds it
        a, b = (peak, peak + 1) if best is None else (peak - 1, peak)
        prev = a
        while self.at(b).bound < self.at(a).bound and b < most:
            prev, a, b = a, b, min(most, peak + 2 * (b - peak) + 1)
        above = self.least_value(max(peak, prev), b)
        values = [self.at(above).bound] + ([] if best is None else [self.at(best).bound])
        if any(lp.status == "unknown" for lp in self.solved.values()):
            return None
        value = min(values)
        return value - 1e-6 * max(1.0, abs(value))


def formulation_a_lp_bound(g: GauSGraph, D: int, ratio: float, peak: int) -> float | None:
    """A lower bound on formulation A from the relaxation at every cap (found with a few
    LPs, :class:`PeakLPs`); ``peak`` is any schedule's peak (it only steers the search)."""
    lps = PeakLPs(g, D, ratio)
    top = peak - 1
    best = None
    if top >= 1 and lps.at(top).feasible:
        best = lps.least_value(lps.lowest_feasible(top), top)
    return lps.lower_bound(peak, best)


def lp_guided_schedule(
    g: GauSGraph,
    D: int,
    lp: PeakLP,
    *,
    ratio: float = 100.0,
    time_limit: float = 30.0,
    seed: int = 0,
    first: bool = False,
    work_limit: float | None = None,
) -> np.ndarray | None:
    """The exact CP-SAT model of formulation A with the peak capped at ``lp.cap`` and every
    op restricted to its LP support: the relaxation picks the steps, CP-SAT makes them
    integral. Returns the best schedule found within ``time_limit`` seconds (and, when
    given, ``work_limit`` units of CP-SAT's deterministic time: the same answer on any
    machine load; :func:`~twill.sched.baselines.exact.solve_window`), with ``first`` the
    first one found, or ``None`` (the restriction may exclude every schedule; no claim of
    infeasibility)."""
    from twill.sched.baselines.exact import ModelSpec, solve_window

    if not lp.feasible:
        return None
    spec = ModelSpec("A", D, None, ratio, lp.lo, lp.hi, peak_cap=lp.cap)
    _, t = solve_window(
        g, spec, time_limit=time_limit, seed=seed, first=first, work_limit=work_limit
    )
    return t


def lp_rounded_schedule(g: GauSGraph, D: int, lp: PeakLP) -> np.ndarray | None:
    """A legal schedule rounded from the relaxation's expected starts under ``lp.cap``
    (:func:`capped_rounding`; ``None`` unless the LP was solved). Used where the LP is too
    fractional for the restricted exact model of :func:`lp_guided_schedule` to find a
    schedule in time (EPFL ``i2c``: each op has mass on 13 of the 27 steps on average)."""
    if lp.expected is None:
        return None
    return capped_rounding(g, D, lp.expected, lp.cap if lp.cap > 0 else None)


def capped_rounding(
    g: GauSGraph,
    D: int,
    target: np.ndarray,
    cap: float | None,
    *,
    backward: bool = False,
) -> np.ndarray:
    """A legal schedule near the (possibly fractional) starts ``target``, under ``cap``
    (``None``: no cap) where it can be met.

    Forward: ops in order of ``target`` (a topological order when ``target`` respects the
    precedence, as the LPs' starts do), each at the step nearest its target, not before its
    predecessors allow, where it fits under the cap; where no step up to its ALAP fits, at
    the least loaded one. Backward: ops in reverse order, each not after its successors
    allow, down to its ASAP. Steps stay within ASAP/ALAP, so the result is always legal; the
    cap may be exceeded. Why both: a forward pass cannot move an op before its placed
    predecessors, so it cannot spread a schedule packed at the ALAP steps (the
    least-communication schedule of EPFL ``max``: forward, no cap brings its peak below 256;
    backward, peak 80 costs 97812 against 109395)."""
    cap = np.inf if cap is None else cap
    gens = topological_generations(g)
    level = np.zeros(g.n, dtype=np.int64)
    for k, gen in enumerate(gens):
        level[gen] = k
    asap, alap = asap_alap(g, D, gens)
    fwd = np.flatnonzero(g.forward)
    placed_end = g.src if backward else g.dst  # the end of each edge placed after the other
    edges = fwd[np.argsort(placed_end[fwd], kind="stable")]
    ptr = np.searchsorted(placed_end[edges], np.arange(g.n + 1))
    usage = g.usage[:, 0, :]
    L = usage.shape[1]
    loads = np.zeros(D + L)
    t = np.zeros(g.n, dtype=np.int64)
    rounded = np.round(target, 6)
    order = np.lexsort((-level, -rounded)) if backward else np.lexsort((level, rounded))
    lean = -1e-3 if backward else 1e-3  # ties go to the later step backward, earlier forward
    for v in order:
        e = edges[ptr[v] : ptr[v + 1]]
        if backward:
            lo = int(asap[v])
            hi = int(min(alap[v], (t[g.dst[e]] - g.delay[e]).min(initial=alap[v])))
        else:
            lo = int(max(asap[v], (t[g.src[e]] + g.delay[e]).max(initial=0)))
            hi = int(alap[v])
        steps = np.arange(lo, hi + 1)
        window = loads[steps[:, None] + np.arange(L)]
        fits = (window + usage[v] <= cap + 1e-9).all(axis=1)
        if fits.any():
            steps = steps[fits]
            goal = min(max(int(round(target[v])), lo), hi)
            t[v] = steps[np.argmin(np.abs(steps - goal) + lean * steps)]
        else:
            t[v] = steps[int(np.argmin(window.max(axis=1)))]
        loads[t[v] : t[v] + L] += usage[v]
    return t


def min_communication_schedule(g: GauSGraph, D: int) -> np.ndarray | None:
    """Formulation A's schedule of least communication, the peak ignored: minimise
    ``sum_v coef_v t_v`` under the precedence and ASAP/ALAP alone. Its rows are difference
    constraints (a totally unimodular matrix), so the simplex's optimal vertex is integral:
    an exact answer from one small LP (EPFL ``sin``, 5440 ops: about 1 s). ``None`` if GLOP
    does not solve it."""
    from ortools.linear_solver import pywraplp

    asap, alap = asap_alap(g, D)
    solver = pywraplp.Solver.CreateSolver("GLOP")
    t = [solver.NumVar(float(asap[v]), float(alap[v]), "") for v in range(g.n)]
    for e in np.flatnonzero(g.forward):
        solver.Add(t[g.dst[e]] >= t[g.src[e]] + float(g.delay[e]))
    objective = solver.Objective()
    for v, coef in enumerate(_coefficients(g)):
        objective.SetCoefficient(t[v], float(coef))
    objective.SetMinimization()
    if solver.Solve() != pywraplp.Solver.OPTIMAL:
        return None
    return np.round([var.solution_value() for var in t]).astype(np.int64)


def _coefficients(g: GauSGraph) -> np.ndarray:
    """``coef_v``: communication weight into ``v`` minus out of ``v`` (distance-0 edges)."""
    fwd = np.flatnonzero(g.forward)
    coef = np.zeros(g.n)
    np.add.at(coef, g.dst[fwd], g.comm[fwd])
    np.add.at(coef, g.src[fwd], -g.comm[fwd])
    return coef


def _cumulative_vars(solver, g: GauSGraph, asap: np.ndarray, alap: np.ndarray) -> list[dict]:  # noqa: ANN001
    """``y[v][t]`` for ``t`` in ``[ASAP_v, ALAP_v)``, non-decreasing in ``t``."""
    y: list[dict] = []
    for v in range(g.n):
        row = {t: solver.NumVar(0.0, 1.0, "") for t in range(int(asap[v]), int(alap[v]))}
        steps = sorted(row)
        for a, b in zip(steps, steps[1:], strict=False):
            solver.Add(row[a] <= row[b])
        y.append(row)
    return y


def _cum(y: list[dict], v: int, t: int, first: int):  # noqa: ANN202
    """``y[v, t]`` as a variable or a constant (0 before the window, 1 from ALAP on)."""
    if t < first:
        return 0.0
    return y[v].get(t, 1.0)


def _precedence_rows(solver, g: GauSGraph, y: list[dict], asap: np.ndarray) -> None:  # noqa: ANN001
    """``y[v, t] <= y[u, t - d]`` for every distance-0 edge and every step of ``v``'s window."""
    for e in np.flatnonzero(g.forward):
        u, v, d = int(g.src[e]), int(g.dst[e]), int(g.delay[e])
        for t, var in y[v].items():
            rhs = _cum(y, u, t - d, int(asap[u]))
            if not (isinstance(rhs, float) and rhs >= 1.0):
                solver.Add(var <= rhs)


def _capacity_rows(
    solver,  # noqa: ANN001
    g: GauSGraph,
    y: list[dict],
    window: tuple[np.ndarray, np.ndarray],
    D: int,
    cap,  # noqa: ANN001 - a number or the cap's variable
) -> None:
    """``sum_v sum_c usage[v, c] x[v, s - c] <= cap`` at every step ``s``."""
    usage = g.usage[:, 0, :]
    L = usage.shape[1]
    asap, alap = window
    terms: list[list] = [[] for _ in range(D + L)]
    for v in np.flatnonzero(usage.sum(axis=1) > 0):
        first = int(asap[v])
        for t in range(first, int(alap[v]) + 1):
            x = _cum(y, int(v), t, first) - _cum(y, int(v), t - 1, first)
            for c in np.flatnonzero(usage[v] > 0):
                terms[t + int(c)].append(float(usage[v, c]) * x)
    for row in terms:
        if row:
            solver.Add(solver.Sum(row) <= cap)


def _communication_objective(solver, g: GauSGraph, y: list[dict]) -> None:  # noqa: ANN001
    """Minimise ``sum_v coef_v (ALAP_v - sum_t y[v, t])`` (the constant is added back)."""
    coef = _coefficients(g)
    objective = solver.Objective()
    for v, row in enumerate(y):
        for var in row.values():
            objective.SetCoefficient(var, -float(coef[v]))
    objective.SetMinimization()


def _support(y: list[dict], asap: np.ndarray, alap: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """First step with LP mass and first step where the op has surely started."""
    lo, hi = asap.astype(np.int64).copy(), alap.astype(np.int64).copy()
    for v, row in enumerate(y):
        for t in sorted(row):
            value = row[t].solution_value()
            if value <= 1e-6:
                lo[v] = t + 1
            if value >= 1 - 1e-6:
                hi[v] = t
                break
    return lo, hi
