"""Exact baseline with CP-SAT and a time cap, reporting its proven bound (GS-Schedule's ILP).

* Formulation A: integer steps ``s_i in [ASAP_i, ALAP_i]``, precedence ``s_v >= s_u + d``,
  one-hot step booleans only for ops with non-zero usage, ``peak_k >= usage at every step``;
  minimise ``ratio * sum_k peak_k + sum_e c_e (s_v - s_u)``. Because a legal schedule has
  ``s_v >= s_u``, the communication term is linear (equal to GS-Schedule's crossing count),
  so no per-boundary crossing variables are needed.
* Formulation C: ``s_i = II k_i + r_i`` with one-hot residues, every edge
  ``s_v + delta II >= s_u + d``, per-slot capacity with reservation tables; CP-SAT minimises
  ``sum_i b_i (end_i - s_i)`` (``end_i >= s_j + delta II`` for every successor), whose optimum
  divided by ``II`` is a lower bound on modulo MaxLive (the average over slots); the MaxLive
  of the schedule found is reported as the objective and the lifetime bound / ``II`` as
  ``bound``.
* Formulation B: each value with a consumer (or ``live_out``) is an interval from its
  producer's step to its last consumer's (``AddMaxEquality``; ``D`` for live-out values) with
  demand ``b_i``; ``AddCumulative`` bounds them by the variable ``peak``, which is minimised:
  the model's objective is exactly the reported peak live memory.

Any-time curve (formulations A and B): every CP-SAT incumbent is recorded in
``objective_history`` as ``(seconds since the call started, model objective)``, model
building included, so benchmarks can report how long the exact model takes to reach a given
quality.

Objective, guarantee, failure: ``OPTIMAL`` only when CP-SAT proves it (A, B); C is reported
``FEASIBLE`` (the model's objective is a proxy). A time-out without a solution is ``UNKNOWN``,
never ``INFEASIBLE``; CP-SAT's infeasibility proof gives ``INFEASIBLE``.
"""

from __future__ import annotations

import logging
import math
import time
from dataclasses import dataclass
from typing import Any

import numpy as np

from twill._interrupt import solve_cpsat
from twill.errors import InvalidProblemError
from twill.options import SolverOptions
from twill.progress import ProgressEvent, emit
from twill.registry import register_solver
from twill.results import SolveResult, Status
from twill.sched.baselines.common import (
    RunSpec,
    keyword_problem,
    package,
    problem_window,
    reported,
)
from twill.sched.gaus.graph import GauSGraph
from twill.sched.gaus.problem import GauSProblem
from twill.sched.ir import DependenceGraph
from twill.validation import check_instance

__all__ = [
    "DEFAULT_TIME_LIMIT",
    "ModelSpec",
    "build_model",
    "exact_schedule",
    "solve",
    "solve_window",
]

log = logging.getLogger(__name__)


@dataclass(frozen=True)
class ModelSpec:
    """What :func:`build_model` builds: formulation ``A``, ``B`` or ``C`` over ``D`` steps
    (``II`` in C, the peak weight ``ratio`` in A), with op ``i``'s start in
    ``[lo[i], hi[i]]``. ``peak_cap`` caps every resource's peak usage (A) or the peak live
    memory (B); ``strong_precedence`` (A) adds the time-indexed precedence cuts of
    :func:`_strong_precedence`."""

    formulation: str
    D: int
    II: int | None
    ratio: float
    lo: np.ndarray
    hi: np.ndarray
    peak_cap: int | None = None
    strong_precedence: bool = False


#: CP-SAT's cap in seconds when neither ``time_limit`` nor ``options.time_limit`` is given.
DEFAULT_TIME_LIMIT = 120.0


@register_solver("exact-cpsat", problems=(GauSProblem,), aliases=("exact",))
def solve(problem: GauSProblem, options: SolverOptions | None = None) -> SolveResult:
    """Solve ``problem`` (formulation A, B or C) exactly with CP-SAT (module docstring).

    ``options``: ``time_limit`` bounds the call (default :data:`DEFAULT_TIME_LIMIT`; a hit
    gives FEASIBLE with the incumbent and CP-SAT's bound, or UNKNOWN, never INFEASIBLE),
    ``threads`` are CP-SAT's workers, ``seed`` its random seed, ``on_progress`` gets one
    event per incumbent, and ``extra["precedence_cuts"] = True`` adds, in formulation A, the
    time-indexed precedence cuts of :func:`_strong_precedence` and solves with CP-SAT's full
    LP relaxation (``linearization_level`` 2): slower per node, but it proves some small
    instances optimal that the default model leaves open (EPFL ``ctrl``,
    ``docs/benchmarks.md``). Other formulations ignore it.
    """
    check_instance(problem, "problem", GauSProblem)
    from ortools.sat.python import cp_model

    if problem.formulation not in ("A", "B", "C"):
        raise InvalidProblemError("the exact baseline supports formulations A, B and C")
    options = SolverOptions.of(options)
    formulation = problem.formulation
    cuts = bool(options.extra.get("precedence_cuts", False)) and formulation == "A"
    time_limit = options.time_limit if options.time_limit is not None else DEFAULT_TIME_LIMIT
    clock = options.clock.child(time_limit)  # a caller's deadline holds too
    start = time.perf_counter()
    window = problem_window(problem, "exact", start)
    if isinstance(window, SolveResult):
        return reported(window, options)
    g, II = problem.arrays, problem.modulo_II
    D, asap, alap = window.D, window.asap, window.alap
    spec = ModelSpec(formulation, D, II, problem.ratio, asap, alap, strong_precedence=cuts)
    m, s, scale = build_model(g, spec)
    solver = cp_model.CpSolver()
    solver.parameters.max_time_in_seconds = clock.within()
    solver.parameters.num_workers = options.threads
    if cuts:
        solver.parameters.linearization_level = 2
    solver.parameters.random_seed = options.seed
    curve: list[tuple[float, float]] = []

    class _Incumbents(cp_model.CpSolverSolutionCallback):
        """Records ``(seconds since the call started, model objective)`` per incumbent."""

        def on_solution_callback(self) -> None:
            seconds, objective = time.perf_counter() - start, self.ObjectiveValue() / scale
            curve.append((seconds, objective))
            emit(options.on_progress, ProgressEvent(
                "solve", seconds=seconds, incumbent=objective, method="exact", step=len(curve),
                bound=self.BestObjectiveBound() / scale, message="CP-SAT incumbent"))  # fmt: skip

    code = solve_cpsat(solver, m, _Incumbents())
    answer = CpSatAnswer(solver, code, s, scale, curve)
    return reported(_packaged(g, answer, time_limit, window.spec), options)


def exact_schedule(
    g: DependenceGraph,
    formulation: str = "A",
    *,
    D: int | None = None,
    II: int | None = None,
    ratio: float = 100.0,
    time_limit: float = DEFAULT_TIME_LIMIT,
    threads: int = 1,
    seed: int = 0,
) -> SolveResult:
    """:func:`solve` on the problem and options these keywords describe (code that holds a
    :class:`~twill.options.SolverOptions`, e.g. with ``extra["precedence_cuts"]``, calls
    :func:`solve` itself)."""
    options = SolverOptions(time_limit=time_limit, threads=threads, seed=seed)
    return solve(keyword_problem(g, formulation, D, II, ratio), options)


@dataclass(frozen=True)
class CpSatAnswer:
    """What one CP-SAT solve of a model answered: the solver after ``Solve``, its status
    ``code``, the start variables ``s``, the objective's integer ``scale`` and the
    incumbent curve ``(seconds, objective)``."""

    solver: Any
    code: int
    s: list
    scale: int
    curve: list[tuple[float, float]]


def _packaged(g: GauSGraph, answer: CpSatAnswer, time_limit: float, spec: RunSpec) -> SolveResult:
    """The result of CP-SAT's ``answer`` to run ``spec`` (module docstring: statuses and
    bound)."""
    from ortools.sat.python import cp_model

    solver, code, s, scale, curve = answer.solver, answer.code, answer.s, answer.scale, answer.curve
    formulation, II = spec.formulation, spec.II
    if code in (cp_model.OPTIMAL, cp_model.FEASIBLE):
        t = np.array([solver.Value(v) for v in s], dtype=np.int64)
        bound = solver.BestObjectiveBound() / scale
        if formulation == "C":
            bound = bound / II  # type: ignore[operator]
            status = Status.FEASIBLE
        else:
            status = Status.OPTIMAL if code == cp_model.OPTIMAL else Status.FEASIBLE
        said = solver.StatusName(code).lower()
        message = (f"feasible: CP-SAT {said} on its proxy model (formulation C minimises a "
                   "stand-in for the objective, so its proof is not one of this objective)"
                   if formulation == "C" else f"{status.value}: CP-SAT {said}")  # fmt: skip
        return package(g, t, spec, message, status=status,
                       bound=float(bound),
                       objective_history=tuple(curve) if formulation != "C" else ())  # fmt: skip
    if code == cp_model.INFEASIBLE:
        return package(g, None, spec, "CP-SAT proved the model infeasible",
                       status=Status.INFEASIBLE)  # fmt: skip
    return package(g, None, spec, f"CP-SAT {solver.StatusName(code)} within {time_limit} s",
                   status=Status.UNKNOWN)  # fmt: skip


def build_model(g: GauSGraph, spec: ModelSpec) -> tuple[Any, list, int]:
    """The CP-SAT model of ``spec`` (module docstring); returns ``(model, start variables,
    objective scale)``.

    :func:`exact_schedule` passes the ASAP/ALAP window; the large-neighbourhood search of
    :mod:`twill.sched.gaus.polish_lns` pins the ops outside a neighbourhood (``lo = hi``)
    and may cap the peak. In A a pinned op's entry in the returned list is its step (an
    ``int``), not a variable; ``CpSolver.Value`` reads both.
    """
    from ortools.sat.python import cp_model

    m = cp_model.CpModel()
    lo, hi, D, II = spec.lo, spec.hi, spec.D, spec.II
    pinned = (lo == hi) if spec.formulation == "A" else np.zeros(g.n, dtype=bool)
    s: list[Any] = [
        int(lo[i]) if pinned[i] else m.NewIntVar(int(lo[i]), int(hi[i]), f"s[{g.names[i]}]")
        for i in range(g.n)
    ]
    _precedence(m, g, s, spec, pinned)
    scale = 1
    if spec.formulation == "A":
        scale = _resource_comm_model(m, g, s, spec)
    elif spec.formulation == "B":
        scale = _peak_memory_model(m, g, s, D, spec.peak_cap)
    else:
        assert II is not None
        _modulo_lifetime_model(m, g, s, D, II)
    return m, s, scale


def _precedence(m: Any, g: GauSGraph, s: list, spec: ModelSpec, pinned: np.ndarray) -> None:
    """``s_v + distance * II >= s_u + delay`` on every edge (C) or distance-0 edge (A, B);
    an edge between two pinned ops is checked here instead of posted."""
    mask = np.ones(g.num_edges, bool) if spec.formulation == "C" else g.forward
    shift = g.distance.astype(np.int64) * (spec.II or 0)
    both = mask & pinned[g.src] & pinned[g.dst]
    if np.any(spec.lo[g.dst[both]] + shift[both] < spec.lo[g.src[both]] + g.delay[both]):
        m.AddBoolOr([])  # two pinned ops break an edge: no schedule exists
    for e in np.flatnonzero(mask & ~both):
        m.Add(s[g.dst[e]] + int(shift[e]) >= s[g.src[e]] + int(g.delay[e]))


def solve_window(
    g: GauSGraph,
    spec: ModelSpec,
    *,
    hint: np.ndarray | None = None,
    time_limit: float,
    seed: int,
    first: bool = False,
    work_limit: float | None = None,
) -> tuple[int, np.ndarray | None]:
    """One single-threaded CP-SAT solve of :func:`build_model` on ``spec``, from ``hint``
    (for the ops left free) when given, stopped at the first schedule with ``first``:
    CP-SAT's status and the schedule found (``None`` when it found none, which proves
    nothing unless the status is ``INFEASIBLE``). The large-neighbourhood search and the
    LP-guided schedules solve their restricted models this way.

    ``work_limit`` (optional) also stops the solve after that much of CP-SAT's deterministic
    time (its ``max_deterministic_time``, a count of work, not seconds): with one worker and
    a fixed seed the answer is then the same on a quiet or a loaded machine, as long as
    ``time_limit`` is not reached first.

    An exception raised inside CP-SAT's native solve (``IndexError: absl::btree_map::at``,
    once in about a hundred neighbourhoods on EPFL ``max``) is logged and
    answered ``UNKNOWN`` with no schedule: a sub-solve that fails proves nothing, and the
    caller keeps the schedule it has."""
    from ortools.sat.python import cp_model

    m, s, _ = build_model(g, spec)
    if hint is not None:
        for i in np.flatnonzero(spec.lo < spec.hi):
            m.AddHint(s[i], int(hint[i]))
    solver = cp_model.CpSolver()
    solver.parameters.max_time_in_seconds = float(time_limit)
    solver.parameters.num_workers = 1
    solver.parameters.random_seed = int(seed)
    solver.parameters.stop_after_first_solution = first
    if work_limit is not None:
        solver.parameters.max_deterministic_time = float(work_limit)
    try:
        code = solve_cpsat(solver, m)
    except (IndexError, RuntimeError, ValueError) as exc:  # the native solver's own failure
        log.warning("CP-SAT failed on a restricted window (%s: %s); no schedule taken from it",
                    type(exc).__name__, exc)  # fmt: skip
        return cp_model.UNKNOWN, None
    if code not in (cp_model.OPTIMAL, cp_model.FEASIBLE):
        return code, None
    return code, np.array([v if isinstance(v, int) else solver.Value(v) for v in s], dtype=np.int64)


def _peak_memory_model(m: Any, g: GauSGraph, s: list, D: int, peak_cap: int | None = None) -> int:
    """Formulation B on model ``m`` (module docstring); returns the objective's scale."""
    mem = g.mem
    scale = 1 if np.all(mem == np.round(mem)) else 1000
    fwd = np.flatnonzero(g.forward)
    order = fwd[np.argsort(g.src[fwd], kind="stable")]
    ptr = np.searchsorted(g.src[order], np.arange(g.n + 1))
    intervals, demands = [], []
    for i in range(g.n):
        out = g.dst[order[ptr[i] : ptr[i + 1]]]
        demand = int(round(mem[i] * scale))
        if demand <= 0 or (out.size == 0 and not g.live_out[i]):
            continue
        if g.live_out[i]:
            end: Any = D
        else:
            end = m.NewIntVar(0, D - 1, f"end[{g.names[i]}]")
            m.AddMaxEquality(end, [s[j] for j in out])
        size = m.NewIntVar(0, D, f"life[{g.names[i]}]")
        intervals.append(m.NewIntervalVar(s[i], size, end, f"live[{g.names[i]}]"))
        demands.append(demand)
    top = int(sum(demands)) if peak_cap is None else int(peak_cap) * scale
    peak = m.NewIntVar(0, top, "peak")
    if intervals:
        m.AddCumulative(intervals, demands, peak)
    m.Minimize(peak)
    return scale


def _resource_comm_model(m: Any, g: GauSGraph, s: list, spec: ModelSpec) -> int:
    """Formulation A of ``spec`` on model ``m`` (module docstring): one-hot steps of the ops
    that use a resource within ``[spec.lo, spec.hi]``, a peak per resource (at most
    ``spec.peak_cap``), and ``ratio * sum(peaks) + communication`` minimised, with the
    precedence cuts when ``spec.strong_precedence``; returns the objective's scale (1000 when
    a weight is fractional, else 1).

    An op with ``lo == hi`` is pinned: its start in ``s`` is an integer, and its usage
    and communication enter as constants. Why: the large-neighbourhood search pins all but a
    few dozen of thousands of ops, and building and presolving a variable per pinned op cost
    most of each neighbourhood's time (EPFL ``max``, 3377 ops)."""
    D, asap, alap, ratio, peak_cap = spec.D, spec.lo, spec.hi, spec.ratio, spec.peak_cap
    _, K, L = g.usage.shape
    peaks = []
    used = np.flatnonzero(g.usage.sum(axis=(1, 2)) > 0)
    H = D + L - 1
    load: list[list[list]] = [[[] for _ in range(H)] for _ in range(K)]
    fixed_load = np.zeros((K, H))
    steps: dict[int, dict[int, Any]] = {}
    fixed = used[asap[used] == alap[used]]
    for c in range(L):
        np.add.at(fixed_load.T, asap[fixed] + c, g.usage[fixed, :, c])
    for i in used[asap[used] < alap[used]]:
        x = {d: m.NewBoolVar(f"x[{g.names[i]},{d}]") for d in range(asap[i], alap[i] + 1)}
        steps[int(i)] = x
        m.AddExactlyOne(x.values())
        m.Add(s[i] == sum(d * v for d, v in x.items()))
        for d, v in x.items():
            for k in range(K):
                for c in range(L):
                    if g.usage[i, k, c]:
                        load[k][d + c].append((int(round(g.usage[i, k, c])), v))
    for k in range(K):
        if not any(load[k]) and not fixed_load[k].any():
            continue
        top = int(g.usage[:, k].sum()) if peak_cap is None else int(peak_cap)
        pk = m.NewIntVar(0, top, f"peak[{g.resources[k]}]")
        for d, terms in enumerate(load[k]):
            base = int(round(fixed_load[k, d]))
            if terms:
                m.Add(pk >= base + sum(w * v for w, v in terms))
            elif base:
                m.Add(pk >= base)
        peaks.append(pk)
    if spec.strong_precedence:
        _strong_precedence(m, g, steps)
    cw = g.comm
    scale = 1000 if np.any(cw != np.round(cw)) or ratio != round(ratio) else 1
    m.Minimize(int(round(ratio * scale)) * sum(peaks) + _communication(g, s, scale))
    return scale


def _communication(g: GauSGraph, s: list, scale: int) -> Any:
    """``scale * sum_e c_e (s_v - s_u)`` over the forward edges with a weight, gathered into
    one coefficient per free start plus the pinned starts' constant."""
    from ortools.sat.python import cp_model

    edges = np.flatnonzero(g.forward & (g.comm > 0))
    w = np.round(g.comm[edges] * scale).astype(np.int64)
    src, dst = g.src[edges], g.dst[edges]
    pinned = np.array([isinstance(v, int) for v in s], dtype=bool)
    start = np.array([v if p else 0 for v, p in zip(s, pinned, strict=True)], dtype=np.int64)
    offset = int(np.sum(w * (start[dst] - start[src])))
    coef = np.rint(np.bincount(dst, w, g.n) - np.bincount(src, w, g.n)).astype(np.int64)
    free = np.flatnonzero(~pinned & (coef != 0))
    return (
        cp_model.LinearExpr.WeightedSum([s[i] for i in free], [int(coef[i]) for i in free]) + offset
    )


def _strong_precedence(m: Any, g: GauSGraph, steps: dict[int, dict[int, Any]]) -> None:
    """Time-indexed (disaggregated) precedence: for a distance-0 edge ``u -> v`` with delay
    ``d`` between ops with step booleans, ``sum_{t' <= t} x[v,t'] <= sum_{t' <= t-d} x[u,t']``
    for every step ``t``: ``v`` has started by ``t`` only if ``u`` started by ``t - d``.

    The integer precedence ``s_v >= s_u + d`` already implies it; its LP relaxation does
    not, and with these cuts the relaxation of the peak and communication terms is much
    tighter (Christofides, Alvarez-Valdes and Tamarit, EJOR 1987). With CP-SAT's full LP
    (``linearization_level`` 2) that proved EPFL ``ctrl`` optimal; on larger designs the LP
    slows the search more than it helps.
    """
    for e in np.flatnonzero(g.forward):
        xu, xv = steps.get(int(g.src[e])), steps.get(int(g.dst[e]))
        if xu is None or xv is None:
            continue
        delay = int(g.delay[e])
        for t in sorted(xv)[:-1]:
            started_u = [x for d, x in xu.items() if d <= t - delay]
            m.Add(sum(x for d, x in xv.items() if d <= t) <= sum(started_u))


def _modulo_lifetime_model(m: Any, g: GauSGraph, s: list, D: int, II: int) -> None:
    """Formulation C on model ``m`` (module docstring): ``s_i = II k_i + r_i`` with one-hot
    residues, per-slot capacity from the reservation tables, and the weighted lifetimes
    ``sum_i b_i (end_i - s_i)`` minimised."""
    n, K, L = g.usage.shape
    rvars = []
    for i in range(n):
        k_i = m.NewIntVar(0, D // II + 1, f"k[{g.names[i]}]")
        x = [m.NewBoolVar(f"a[{g.names[i]},{r}]") for r in range(II)]
        m.AddExactlyOne(x)
        m.Add(s[i] == II * k_i + sum(r * v for r, v in enumerate(x)))
        rvars.append(x)
    for k in range(K):
        if not math.isfinite(g.caps[k]):
            continue
        for r in range(II):
            terms = [
                (int(g.usage[i, k, c]), rvars[i][(r - c) % II])
                for i in range(n)
                for c in range(L)
                if g.usage[i, k, c]
            ]
            if terms:
                m.Add(sum(w * v for w, v in terms) <= int(math.floor(g.caps[k] + 1e-9)))
    life = []
    for i in range(n):
        out = np.flatnonzero(g.src == i)
        if out.size == 0 or g.mem[i] == 0:
            continue
        horizon = D + int(g.distance.max(initial=0)) * II
        end = m.NewIntVar(0, horizon, f"end[{g.names[i]}]")
        for e in out:
            m.Add(end >= s[g.dst[e]] + int(g.distance[e]) * II)
        life.append(int(round(g.mem[i])) * (end - s[i]))
    m.Minimize(sum(life))
