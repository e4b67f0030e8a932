"""Twill Phase 1: exact modulo scheduling at a fixed initiation interval (paper §4; spec §3).

OPTIMAL-MODULO-SCHEDULE(G, I) as the residue + stage integer program (Stoutchinin, PaCT 1997;
spec §3.1), minimising the schedule length ``L``:

* ``a[v,r]`` (binary, ``r in [0, I)``): op ``v`` issues in congruence class ``r``; only for ops
  that reserve a *limited* unit. ``k[v]`` (integer stage), ``M(v) = I*k[v] + sum_r r*a[v,r]``.
  Ops that touch only unlimited units get a plain integer start ``m[v]``.
* **§3.1 dependences**: ``M(v) - M(u) + delta*I >= d`` for every edge.
* **§3.1 modulo reservation table**: for every limited unit ``f`` and class ``r``,
  ``sum_v sum_c RRT[v][f,c] * a[v, (r-c) mod I] <= cap(f)`` (RRTs longer than ``I`` wrap).
* **§3.1 length**: ``L >= M(v) + cycles(v)``; minimise ``L``.

Two complete backends share this model: ``"cbc"`` (PuLP + CBC, the paper's solver) and
``"cpsat"`` (OR-Tools CP-SAT). Each call returns a :class:`Phase1Result` whose status is
``OPTIMAL`` (with ``M`` and ``L``), ``FEASIBLE`` (a schedule, ``L`` not proven minimal: a time
limit hit after an incumbent), ``INFEASIBLE`` (proven: no modulo schedule at this ``I``) or
``UNKNOWN`` (limit hit before any proof). A time-out is never reported as infeasible.

Stage bound (proven sufficient, see :func:`twill.sched.bounds.stage_bound`): ``0 <= k[v] <=
K = (|V|-1) * max_e ceil((d_e+I-1)/I)``. Fix the residues of any feasible solution; the
dependences become difference constraints ``k_v - k_u >= w_e`` with
``w_e <= ceil((d_e+I-1)/I)``; their least solution uses longest paths of at most ``|V|-1``
arcs, so every stage is at most ``K``, and being pointwise least it also has the least ``L``.
So an INFEASIBLE verdict under this bound is a proof for the unbounded problem, and the optimum
``L`` is never cut off. Plain starts get the matching horizon ``I*K + I - 1``.

Tie-break (deterministic, documented): after ``L*`` is proven, a second solve fixes
``L = L*`` and maximises ``sum_v M(v)`` (as-late-as-possible), then the schedule is shifted so
``min M = 0``. On Fig. 1 this returns the paper's ``S@0, P@2, O@3`` rather than the other
optimum ``P@1``. If the second solve hits its limit, its incumbent (or else the first
solution) is kept; ``L*`` is proven either way.

Every returned schedule has passed :func:`twill.sched.verify.verify_modulo_schedule`;
otherwise :class:`~twill.errors.VerificationError` is raised.

Preconditions: ``graph`` has passed :func:`twill.sched.validate.check_graph` (checked here
unless ``check=False``); ``II >= 1``.
"""

from __future__ import annotations

import logging
import time
from dataclasses import dataclass, field
from typing import Any

from twill.errors import BackendUnavailableError, InvalidProblemError, VerificationError
from twill.results import Status
from twill.sched.bounds import stage_bound
from twill.sched.ir import DependenceGraph
from twill.sched.validate import check_graph
from twill.sched.verify import verify_modulo_schedule

__all__ = ["Phase1Result", "solve_phase1", "BACKENDS"]

log = logging.getLogger(__name__)

BACKENDS = ("cbc", "cpsat")


@dataclass(frozen=True)
class Phase1Result:
    """Outcome of one Phase-1 solve at a fixed ``II``.

    Attributes
    ----------
    status
        OPTIMAL, FEASIBLE, INFEASIBLE (proven) or UNKNOWN (limit hit before a proof).
    II
        The initiation interval tried.
    schedule
        Start cycle per op (``min = 0``), or ``None`` without a solution.
    L
        Schedule length ``max_v M(v) + cycles(v)``, or ``None``.
    backend
        ``"cbc"`` or ``"cpsat"``.
    seconds
        Wall time of build + solve(s) + verify.
    stage_bound
        The proven-sufficient stage bound ``K`` used.
    stats
        Model size and solver details (``variables``, ``constraints``, ``tie_break``, ...).
    """

    status: Status
    II: int
    schedule: dict[str, int] | None
    L: int | None
    backend: str
    seconds: float
    stage_bound: int
    stats: dict[str, Any] = field(default_factory=dict)

    def to_dict(self) -> dict[str, Any]:
        return {
            "status": self.status.value,
            "II": self.II,
            "schedule": dict(self.schedule) if self.schedule is not None else None,
            "L": self.L,
            "backend": self.backend,
            "seconds": round(self.seconds, 4),
            "stage_bound": self.stage_bound,
            "stats": dict(self.stats),
        }


@dataclass(frozen=True)
class _Model:
    """Backend-neutral data of the §3.1 model at one ``II``."""

    ii: int
    names: tuple[str, ...]
    cycles: tuple[int, ...]
    limited: tuple[bool, ...]  # op has residue variables
    edges: tuple[tuple[int, int, int, int], ...]  # (src, dst, delay, distance)
    # per (fu, class r): list of (op index, residue, units) with a[op, residue] in the sum
    mrt_rows: tuple[tuple[str, int, int, tuple[tuple[int, int, int], ...]], ...]
    stage_bound: int

    @property
    def horizon(self) -> int:
        return self.ii * self.stage_bound + self.ii - 1


def _build_model(graph: DependenceGraph, ii: int) -> _Model:
    machine = graph.machine
    index = graph.index()
    limited_units = {fu for fu, cap in machine.functional_units.items() if cap >= 0}
    limited = tuple(
        any(fu in limited_units and any(row) for fu, row in ins.reservation.items())
        for ins in graph.instructions
    )
    rows = []
    for fu in sorted(limited_units):
        cap = machine.functional_units[fu]
        terms: dict[int, list[tuple[int, int, int]]] = {r: [] for r in range(ii)}
        total = 0
        for i, ins in enumerate(graph.instructions):
            for c, units in enumerate(ins.reservation.get(fu, ())):
                if units:
                    for r in range(ii):
                        terms[r].append((i, (r - c) % ii, units))
                    total += units
        if total <= cap:
            continue  # the row can never be violated
        for r in range(ii):
            merged: dict[tuple[int, int], int] = {}
            for i, res, units in terms[r]:
                merged[i, res] = merged.get((i, res), 0) + units
            worst = sum(merged.values())
            if worst > cap:
                rows.append((fu, r, cap, tuple((i, res, u) for (i, res), u in merged.items())))
    edges = tuple((index[e.src], index[e.dst], e.delay, e.distance) for e in graph.edges)
    return _Model(
        ii=ii,
        names=tuple(graph.names),
        cycles=tuple(ins.cycles for ins in graph.instructions),
        limited=limited,
        edges=edges,
        mrt_rows=tuple(rows),
        stage_bound=stage_bound(graph, ii),
    )


# ---------------------------------------------------------------------------------------------
# CBC through PuLP
# ---------------------------------------------------------------------------------------------


class _PulpModel:
    def __init__(self, model: _Model) -> None:
        import pulp

        self.pulp = pulp
        self.m = model
        self.prob = pulp.LpProblem(f"phase1_II{model.ii}", pulp.LpMinimize)
        self._variables()
        self._add_fig_dependences()
        self._add_modulo_reservation()
        self._add_length()
        self.prob.setObjective(pulp.lpSum([self.L]))

    def _variables(self) -> None:
        pulp, m = self.pulp, self.m
        self.a: dict[tuple[int, int], Any] = {}
        self.start: list[Any] = []
        for i, lim in enumerate(m.limited):
            if lim:
                k = pulp.LpVariable(f"k[{i}]", 0, m.stage_bound, cat="Integer")
                expr = m.ii * k
                for r in range(m.ii):
                    self.a[i, r] = pulp.LpVariable(f"a[{i},{r}]", cat="Binary")
                    if r:
                        expr = expr + r * self.a[i, r]
                self.prob += pulp.lpSum(self.a[i, r] for r in range(m.ii)) == 1, f"one[{i}]"
                self.start.append(expr)
            else:
                self.start.append(pulp.LpVariable(f"m[{i}]", 0, m.horizon, cat="Integer"))
        self.L = pulp.LpVariable("L", 0, m.horizon + max(m.cycles, default=0), cat="Integer")

    def _add_fig_dependences(self) -> None:
        m = self.m
        for n, (u, v, d, delta) in enumerate(m.edges):
            if u == v:
                if d > delta * m.ii:
                    self.prob += self.L <= -1, f"dep[{n}]"  # self-loop impossible at this II
                continue
            self.prob += self.start[v] - self.start[u] >= d - delta * m.ii, f"dep[{n}]"

    def _add_modulo_reservation(self) -> None:
        pulp = self.pulp
        for fu, r, cap, terms in self.m.mrt_rows:
            self.prob += (
                pulp.lpSum(u * self.a[i, res] for i, res, u in terms) <= cap,
                f"mrt[{fu},{r}]",
            )

    def _add_length(self) -> None:
        for i, c in enumerate(self.m.cycles):
            self.prob += self.L >= self.start[i] + c, f"len[{i}]"

    def solve(self, time_limit: float | None, threads: int) -> Status:
        pulp = self.pulp
        try:
            solver = pulp.PULP_CBC_CMD(
                msg=False, timeLimit=time_limit, threads=threads, gapRel=0.0, gapAbs=0.0
            )
        except pulp.PulpSolverError as exc:  # pragma: no cover - environment
            raise BackendUnavailableError(f"CBC is not available: {exc}") from exc
        self.prob.solve(solver)
        # PuLP folds "Stopped on time" with an incumbent into status 1 (Optimal) and tells the
        # difference only through sol_status (1 = proven optimal, 2 = integer feasible).
        status, sol = self.prob.status, self.prob.sol_status
        if status == pulp.LpStatusOptimal and sol == pulp.LpSolutionOptimal:
            return Status.OPTIMAL
        if status == pulp.LpStatusOptimal and sol == pulp.LpSolutionIntegerFeasible:
            return Status.FEASIBLE
        if status == pulp.LpStatusInfeasible:
            return Status.INFEASIBLE
        return Status.UNKNOWN

    def values(self) -> list[int]:
        return [int(round(self.pulp.value(s))) for s in self.start]

    def fix_length_maximise_starts(self, length: int) -> None:
        pulp = self.pulp
        self.prob += self.L == length, "tie_break_fix_L"
        self.prob.sense = pulp.LpMaximize
        self.prob.setObjective(pulp.lpSum(self.start))

    def size(self) -> dict[str, int]:
        return {
            "variables": len(self.prob.variables()),
            "constraints": len(self.prob.constraints),
        }


# ---------------------------------------------------------------------------------------------
# OR-Tools CP-SAT
# ---------------------------------------------------------------------------------------------


class _CpSatModel:
    def __init__(self, model: _Model) -> None:
        try:
            from ortools.sat.python import cp_model
        except ImportError as exc:  # pragma: no cover - environment
            raise BackendUnavailableError(f"OR-Tools CP-SAT is not available: {exc}") from exc
        self.cp = cp_model
        self.m = model
        self.model = cp_model.CpModel()
        self._variables()
        self._add_fig_dependences()
        self._add_modulo_reservation()
        self._add_length()
        self.model.minimize(self.L)
        self.solver: Any = None

    def _variables(self) -> None:
        m, model = self.m, self.model
        self.a: dict[tuple[int, int], Any] = {}
        self.start: list[Any] = []
        for i, lim in enumerate(m.limited):
            if lim:
                k = model.new_int_var(0, m.stage_bound, f"k[{i}]")
                row = []
                for r in range(m.ii):
                    self.a[i, r] = model.new_bool_var(f"a[{i},{r}]")
                    row.append(self.a[i, r])
                model.add_exactly_one(row)
                t = model.new_int_var(0, m.horizon, f"M[{i}]")
                model.add(t == m.ii * k + sum(r * self.a[i, r] for r in range(1, m.ii)))
                self.start.append(t)
            else:
                self.start.append(model.new_int_var(0, m.horizon, f"m[{i}]"))
        self.L = model.new_int_var(0, m.horizon + max(m.cycles, default=0), "L")

    def _add_fig_dependences(self) -> None:
        m = self.m
        for u, v, d, delta in m.edges:
            if u == v:
                if d > delta * m.ii:
                    self.model.add_bool_or([])  # self-loop impossible at this II
                continue
            self.model.add(self.start[v] - self.start[u] >= d - delta * m.ii)

    def _add_modulo_reservation(self) -> None:
        for _fu, _r, cap, terms in self.m.mrt_rows:
            self.model.add(sum(u * self.a[i, res] for i, res, u in terms) <= cap)

    def _add_length(self) -> None:
        for i, c in enumerate(self.m.cycles):
            self.model.add(self.L >= self.start[i] + c)

    def solve(self, time_limit: float | None, threads: int) -> Status:
        cp = self.cp
        solver = cp.CpSolver()
        if time_limit is not None:
            solver.parameters.max_time_in_seconds = float(time_limit)
        solver.parameters.num_workers = max(1, threads)
        solver.parameters.random_seed = 0
        code = solver.solve(self.model)
        self.solver = solver
        return {
            cp.OPTIMAL: Status.OPTIMAL,
            cp.FEASIBLE: Status.FEASIBLE,
            cp.INFEASIBLE: Status.INFEASIBLE,
            cp.MODEL_INVALID: Status.ERROR,
        }.get(code, Status.UNKNOWN)

    def values(self) -> list[int]:
        return [int(self.solver.value(s)) for s in self.start]

    def fix_length_maximise_starts(self, length: int) -> None:
        values = self.values()
        self.model.add(self.L == length)
        self.model.clear_hints()
        for s, v in zip(self.start, values, strict=True):
            self.model.add_hint(s, v)
        self.model.maximize(sum(self.start))

    def size(self) -> dict[str, int]:
        proto = self.model.proto
        return {"variables": len(proto.variables), "constraints": len(proto.constraints)}


# ---------------------------------------------------------------------------------------------
# front function
# ---------------------------------------------------------------------------------------------


def solve_phase1(
    graph: DependenceGraph,
    II: int,
    *,
    backend: str = "cbc",
    time_limit: float | None = None,
    tie_break: bool = True,
    threads: int = 1,
    check: bool = True,
) -> Phase1Result:
    """Exact modulo schedule of minimum length ``L`` at initiation interval ``II``.

    Parameters
    ----------
    graph
        The dependence graph with its machine.
    II
        Initiation interval (integer >= 1).
    backend
        ``"cbc"`` (PuLP + CBC) or ``"cpsat"`` (OR-Tools CP-SAT).
    time_limit
        Seconds per solver call (``None``: no limit). Hitting it gives UNKNOWN or FEASIBLE.
    tie_break
        Run the second, as-late-as-possible solve at ``L = L*`` (module docstring).
    threads
        Solver threads (1 keeps both backends deterministic).
    check
        Run :func:`~twill.sched.validate.check_graph` first.

    Returns
    -------
    Phase1Result
        OPTIMAL with ``M`` and ``L``, FEASIBLE, INFEASIBLE (proven) or UNKNOWN.

    Raises
    ------
    InvalidProblemError
        Invalid graph, ``II`` or backend.
    VerificationError
        The solver's schedule failed the independent verifier (a bug).

    Notes
    -----
    Objective: minimise ``L``. Guarantee: OPTIMAL means ``L`` is the minimum over all modulo
    schedules at ``II``; INFEASIBLE means none exists (the stage bound is proven sufficient).
    Fails (UNKNOWN) only when ``time_limit`` is hit before a proof.

    Examples
    --------
    >>> from twill.sched.kernels import flash_attention_forward_simplified
    >>> r = solve_phase1(flash_attention_forward_simplified(), 2)
    >>> r.status.value, r.L, r.schedule
    ('optimal', 4, {'S': 0, 'P': 2, 'O': 3})
    """
    if backend not in BACKENDS:
        raise InvalidProblemError(
            f"backend must be one of {', '.join(BACKENDS)}, found {backend!r}"
        )
    if isinstance(II, bool) or not isinstance(II, int) or II < 1:
        raise InvalidProblemError(f"II must be an integer >= 1, found {II!r}")
    if check:
        check_graph(graph)
    t0 = time.perf_counter()
    data = _build_model(graph, II)
    impl: _PulpModel | _CpSatModel = (_PulpModel if backend == "cbc" else _CpSatModel)(data)
    stats: dict[str, Any] = {**impl.size(), "mrt_rows": len(data.mrt_rows)}
    log.info(
        "phase1 %s II=%d: %d ops, %d edges, stage bound %d, %s",
        backend,
        II,
        len(data.names),
        len(data.edges),
        data.stage_bound,
        stats,
    )
    status = impl.solve(time_limit, threads)
    stats["solve_seconds"] = round(time.perf_counter() - t0, 4)
    if not status.has_solution:
        return Phase1Result(
            status, II, None, None, backend, time.perf_counter() - t0, data.stage_bound, stats
        )
    starts = impl.values()
    length = max((s + c for s, c in zip(starts, data.cycles, strict=True)), default=0)
    if tie_break and status is Status.OPTIMAL:
        impl.fix_length_maximise_starts(length)
        second = impl.solve(time_limit, threads)
        stats["tie_break"] = second.value
        if second.has_solution:
            starts = impl.values()
    low = min(starts, default=0)
    schedule = {n: s - low for n, s in zip(data.names, starts, strict=True)}
    length = max((s + c for s, c in zip(schedule.values(), data.cycles, strict=True)), default=0)
    violations = verify_modulo_schedule(graph, schedule, II)
    if violations:
        raise VerificationError(violations, what=f"phase-1 schedule ({backend}, II={II})")
    return Phase1Result(
        status, II, schedule, length, backend, time.perf_counter() - t0, data.stage_bound, stats
    )
