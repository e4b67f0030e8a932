"""A small backend-neutral linear model (variables, rows, objective) and its backends:
CBC through PuLP (floating-point coefficients), OR-Tools CP-SAT (coefficients scaled to
integers), and SCIP / HiGHS in a separate process (:mod:`~twill.mapping.cosa.worker`; OR-Tools
and highspy cannot share a process). The CoSA builder (:mod:`twill.mapping.cosa.mip`) writes
into it once; each backend translates it. Rows keep the names the builder gave them, so a
dumped model reads like ``docs/mapping.md``.
"""

from __future__ import annotations

import logging
import math
import time
from collections.abc import Callable
from dataclasses import dataclass, field, replace
from typing import Any

from twill._interrupt import solve_cpsat, solve_pulp
from twill.errors import BackendUnavailableError
from twill.results import Status

__all__ = ["LinearModel", "Solution", "solve_model", "BACKENDS"]

log = logging.getLogger(__name__)

BACKENDS = ("cpsat", "scip", "highs", "cbc")

#: CP-SAT needs integers: objective coefficients are scaled by this and rounded ...
OBJ_SCALE = 1_000_000
#: ... and fractional row coefficients by this, with a slack of half a unit per term.
ROW_SCALE = 10_000_000


@dataclass
class LinearModel:
    """Variables (binary or bounded integer/continuous), linear rows and a linear objective."""

    name: str = "model"
    vars: dict[str, tuple[str, float, float]] = field(default_factory=dict)  # kind, lb, ub
    rows: list[tuple[str, dict[str, float], str, float]] = field(default_factory=list)
    objective: dict[str, float] = field(default_factory=dict)
    objective_constant: float = 0.0

    def binary(self, name: str, ub: float = 1.0) -> str:
        self.vars[name] = ("B", 0.0, ub)
        return name

    def continuous(self, name: str, lb: float = 0.0, ub: float = 1.0, integral: bool = True) -> str:
        """A bounded variable; ``integral`` tells CP-SAT that integer values suffice."""
        self.vars[name] = ("I" if integral else "C", lb, ub)
        return name

    def add(self, name: str, expr: dict[str, float], sense: str, rhs: float) -> str:
        """Add ``expr sense rhs`` (sense in ``<=``, ``>=``, ``==``); returns the row name."""
        clean = {k: v for k, v in expr.items() if v != 0.0}
        self.rows.append((name, clean, sense, float(rhs)))
        return name

    def set_objective(self, expr: dict[str, float]) -> None:
        self.objective = {k: v for k, v in expr.items() if v != 0.0}

    def value(self, expr: dict[str, float], values: dict[str, float]) -> float:
        return sum(c * values.get(k, 0.0) for k, c in expr.items())

    def objective_value(self, values: dict[str, float]) -> float:
        """The objective (constant included) at ``values``."""
        return self.objective_constant + self.value(self.objective, values)

    @property
    def size(self) -> dict[str, int]:
        n_bin = sum(1 for k, *_ in self.vars.values() if k == "B")
        return {"variables": len(self.vars), "binary": n_bin, "rows": len(self.rows)}


@dataclass(frozen=True)
class Solution:
    status: Status
    values: dict[str, float]
    objective: float | None
    bound: float | None
    seconds: float
    stats: dict[str, Any]


def solve_model(
    model: LinearModel,
    backend: str = "cpsat",
    *,
    time_limit: float = 60.0,
    threads: int = 1,
    seed: int = 0,
    extra: dict[str, Any] | None = None,
    on_incumbent: Callable[[float, float, float], None] | None = None,
) -> Solution:
    """Solve with ``backend`` (``cpsat``, ``scip``, ``highs`` or ``cbc``); the objective
    reported is always the floating-point objective of the model evaluated at the returned
    values. ``scip`` and ``highs`` run in a child process (``extra={"in_process": True}``
    runs them here, for debugging).

    With a relative gap limit ``extra={"gap": g}``, g > 0, CBC's, SCIP's and HiGHS's "optimal"
    only means "within g of the bound": such answers are reported FEASIBLE
    (``stats["gap_limit"] = g``), never OPTIMAL. CP-SAT does not take a gap and always proves
    optimality."""
    if backend in ("scip", "highs"):
        sol = _solve_out_of_process(model, backend, time_limit, threads, seed, extra or {})
    elif backend == "cbc":
        sol = _solve_cbc(model, time_limit, threads, extra or {})
    elif backend == "cpsat":
        sol = _solve_cpsat(model, time_limit, threads, seed, extra or {}, on_incumbent)
    else:
        raise BackendUnavailableError(
            f"unknown backend {backend!r} (choose from {', '.join(BACKENDS)})"
        )
    gap = float((extra or {}).get("gap", 0.0))
    if gap > 0 and backend != "cpsat" and sol.status is Status.OPTIMAL:  # cpsat ignores "gap"
        bound = None if backend == "cbc" else sol.bound  # CBC's bound was the objective itself
        stats = {**sol.stats, "gap_limit": gap}
        sol = replace(sol, status=Status.FEASIBLE, bound=bound, stats=stats)
    return sol


def _solve_out_of_process(
    model: LinearModel,
    backend: str,
    time_limit: float,
    threads: int,
    seed: int,
    extra: dict[str, Any],
) -> Solution:
    from twill.mapping.cosa.worker import solve_in_subprocess, solve_payload

    extra = dict(extra)
    in_process = bool(extra.pop("in_process", False))
    t0 = time.perf_counter()
    payload = {
        "model": {
            "vars": model.vars,
            "rows": model.rows,
            "objective": model.objective,
        },
        "backend": backend,
        "time_limit": float(time_limit),
        "threads": int(threads),
        "seed": int(seed),
        "extra": extra,
    }
    if in_process:
        try:
            ans = solve_payload(payload)
        except RuntimeError as exc:
            raise BackendUnavailableError(str(exc)) from exc
    else:
        ans = solve_in_subprocess(payload)
    wall = time.perf_counter() - t0
    if ans["status"] == "unavailable":
        raise BackendUnavailableError(ans["error"])
    stats: dict[str, Any] = {"backend": backend, "wall_s": wall, **ans.get("stats", {})}
    if ans["status"] == "error":
        log.warning("backend %s failed: %s", backend, ans["error"])
        stats["error"] = ans["error"]
        return Solution(Status.ERROR, {}, None, None, wall, stats)
    status = {
        "optimal": Status.OPTIMAL,
        "feasible": Status.FEASIBLE,
        "infeasible": Status.INFEASIBLE,
    }.get(ans["status"], Status.UNKNOWN)
    values = {
        k: (float(round(v)) if model.vars[k][0] != "C" else float(v))
        for k, v in ans["values"].items()
    }
    obj = model.objective_value(values) if values else None
    bound = ans.get("bound")
    if bound is not None:
        bound += model.objective_constant
    stats["solver_s"] = float(ans["seconds"])
    return Solution(status, values, obj, bound, wall, stats)  # wall: child start included


def _safe(name: str) -> str:
    return name.replace("[", "(").replace("]", ")")


def _solve_cbc(
    model: LinearModel, time_limit: float, threads: int, extra: dict[str, Any]
) -> Solution:
    try:
        import pulp
    except ImportError as exc:  # pragma: no cover - pulp is a core dependency
        raise BackendUnavailableError("backend cbc needs pulp") from exc
    t0 = time.perf_counter()
    prob = pulp.LpProblem(_safe(model.name), pulp.LpMinimize)
    pv: dict[str, Any] = {}
    for name, (kind, lb, ub) in model.vars.items():
        cat = pulp.LpBinary if kind == "B" and ub >= 1 else pulp.LpContinuous
        if kind == "B":
            pv[name] = pulp.LpVariable(_safe(name), 0, ub, cat)
        else:
            pv[name] = pulp.LpVariable(_safe(name), lb, ub, pulp.LpContinuous)
    prob += pulp.lpSum(c * pv[k] for k, c in model.objective.items())
    for i, (name, expr, sense, rhs) in enumerate(model.rows):
        lhs = pulp.lpSum(c * pv[k] for k, c in expr.items())
        row = lhs <= rhs if sense == "<=" else (lhs >= rhs if sense == ">=" else lhs == rhs)
        prob += row, f"r{i}_{_safe(name)}"[:250]
    build = time.perf_counter() - t0
    solver = pulp.PULP_CBC_CMD(
        msg=False,
        timeLimit=time_limit,
        threads=max(1, threads),
        gapRel=extra.get("gap", 0.0),
        options=list(extra.get("options", [])),
    )
    t1 = time.perf_counter()
    solve_pulp(prob, solver)
    solve_s = time.perf_counter() - t1
    st = pulp.LpStatus.get(prob.status, "Undefined")
    has = prob.sol_status in (pulp.LpSolutionOptimal, pulp.LpSolutionIntegerFeasible)
    if st == "Optimal" and prob.sol_status == pulp.LpSolutionOptimal:
        status = Status.OPTIMAL
    elif st == "Infeasible" and (time_limit is None or solve_s * max(1, threads) < time_limit):
        status = Status.INFEASIBLE  # CBC stopped by its limit may say "infeasible": no proof
    elif has:
        status = Status.FEASIBLE
    else:
        status = Status.UNKNOWN
    values = (
        {k: float(v.value() or 0.0) for k, v in pv.items()}
        if has or status == Status.OPTIMAL
        else {}
    )
    values = {k: (round(v) if model.vars[k][0] != "C" else v) for k, v in values.items()}
    obj = model.objective_value(values) if values else None
    return Solution(
        status,
        values,
        obj,
        obj if status == Status.OPTIMAL else None,
        solve_s,
        {"backend": "cbc", "build_s": build, "pulp_status": st},
    )


def _is_int(x: float) -> bool:
    return abs(x - round(x)) < 1e-12


def _cpsat_model(cp_model: Any, model: LinearModel) -> tuple[Any, dict[str, Any]]:
    """``model``'s variables and rows as a CP-SAT model (rows with fractional coefficients
    scaled by ``ROW_SCALE`` and widened by a rounding slack), and its variables by name."""
    m = cp_model.CpModel()
    cv: dict[str, Any] = {}
    for name, (kind, lb, ub) in model.vars.items():
        if kind == "B":
            cv[name] = m.NewBoolVar(name) if ub >= 1 else m.NewIntVar(0, 0, name)
        elif kind == "I":
            cv[name] = m.NewIntVar(math.ceil(lb), math.floor(ub), name)
        else:
            raise BackendUnavailableError(f"cpsat cannot hold the continuous variable {name}")
    for _name, expr, sense, rhs in model.rows:
        if all(_is_int(c) for c in expr.values()) and _is_int(rhs):
            lhs = sum(int(round(c)) * cv[k] for k, c in expr.items())
            r = int(round(rhs))
            slack = 0
        else:
            lhs = sum(int(round(c * ROW_SCALE)) * cv[k] for k, c in expr.items())
            slack = len(expr) // 2 + 1
            r = rhs * ROW_SCALE
        if sense == "<=":
            m.Add(lhs <= math.floor(r + slack))
        elif sense == ">=":
            m.Add(lhs >= math.ceil(r - slack))
        else:
            m.Add(lhs == int(round(r)))
    return m, cv


def _solve_cpsat(
    model: LinearModel,
    time_limit: float,
    threads: int,
    seed: int,
    extra: dict[str, Any],
    on_incumbent: Callable[[float, float, float], None] | None,
) -> Solution:
    try:
        from ortools.sat.python import cp_model
    except ImportError as exc:  # pragma: no cover
        raise BackendUnavailableError("backend cpsat needs ortools") from exc
    t0 = time.perf_counter()
    m, cv = _cpsat_model(cp_model, model)
    m.Minimize(sum(int(round(c * OBJ_SCALE)) * cv[k] for k, c in model.objective.items()))
    build = time.perf_counter() - t0
    solver = cp_model.CpSolver()
    solver.parameters.max_time_in_seconds = float(time_limit)
    solver.parameters.num_workers = max(1, threads)
    solver.parameters.random_seed = int(seed)
    for key, val in extra.items():
        if key not in ("gap", "options"):
            setattr(solver.parameters, key, val)
    t1 = time.perf_counter()
    if on_incumbent is not None:

        class _CB(cp_model.CpSolverSolutionCallback):
            def on_solution_callback(self) -> None:
                on_incumbent(
                    self.ObjectiveValue() / OBJ_SCALE,
                    self.BestObjectiveBound() / OBJ_SCALE,
                    time.perf_counter() - t1,
                )

        code = solve_cpsat(solver, m, _CB())
    else:
        code = solve_cpsat(solver, m)
    solve_s = time.perf_counter() - t1
    status = {
        cp_model.OPTIMAL: Status.OPTIMAL,
        cp_model.FEASIBLE: Status.FEASIBLE,
        cp_model.INFEASIBLE: Status.INFEASIBLE,
        cp_model.MODEL_INVALID: Status.ERROR,
    }.get(code, Status.UNKNOWN)
    values: dict[str, float] = {}
    if status.has_solution:
        values = {k: float(solver.Value(v)) for k, v in cv.items()}
    obj = model.objective_value(values) if values else None
    bound = (
        solver.BestObjectiveBound() / OBJ_SCALE + model.objective_constant
        if status.has_solution
        else None
    )
    return Solution(
        status,
        values,
        obj,
        bound,
        solve_s,
        {
            "backend": "cpsat",
            "build_s": build,
            "conflicts": solver.NumConflicts(),
            "branches": solver.NumBranches(),
            "scaled_objective": solver.ObjectiveValue() if status.has_solution else None,
        },
    )
