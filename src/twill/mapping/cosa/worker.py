"""Out-of-process MILP backends for :class:`~twill.mapping.cosa.model.LinearModel` (exact
linearisation, ``docs/mapping.md``): SCIP through PySCIPOpt and, when installed, HiGHS through
highspy.

OR-Tools and highspy cannot share a process (their bundled native libraries clash), and a
crash inside a native solver would take the caller down with it. So the parent serialises the
model as JSON, runs ``python -m twill.mapping.cosa.worker`` in a fresh, isolated interpreter
(:func:`twill._isolated.isolated_module_command`: the running twill only, never a ``twill/``
folder of the current directory), and reads one JSON answer from its standard output.
:func:`solve_in_subprocess` does the parent's side;
:func:`solve_payload` is the worker's side (usable in-process too, for tests and debugging).

Protocol: stdin ``{"model": {vars, rows, objective}, "backend", "time_limit", "threads",
"seed", "extra"}``; stdout ``{"status", "values", "bound", "seconds", "stats"}``; exit code 0
on an answer (whatever the solver status), 3 when the backend is not installed, 1 on any other
error (message on stderr).
"""

from __future__ import annotations

import json
import logging
import subprocess
import sys
import time
from typing import Any

__all__ = ["OUT_OF_PROCESS", "solve_payload", "solve_in_subprocess", "main"]

log = logging.getLogger(__name__)

#: Backends served by this worker.
OUT_OF_PROCESS = ("scip", "highs")

_EXIT_UNAVAILABLE = 3


class _Unavailable(RuntimeError):
    pass


def _solve_scip(p: dict[str, Any]) -> dict[str, Any]:
    try:
        import pyscipopt
    except ImportError as exc:
        raise _Unavailable("backend scip needs pyscipopt (pip install pyscipopt)") from exc
    mdl = p["model"]
    m = pyscipopt.Model("cosa")
    m.hideOutput()
    xs = {}
    for name, (kind, lb, ub) in mdl["vars"].items():
        vtype = "B" if kind == "B" and ub >= 1 else "C"  # w, q: continuous (exact)
        xs[name] = m.addVar(name=name, vtype=vtype, lb=lb, ub=ub)
    for name, expr, sense, rhs in mdl["rows"]:
        lhs = pyscipopt.quicksum(c * xs[k] for k, c in expr.items())
        if sense == "<=":
            m.addCons(lhs <= rhs, name=name)
        elif sense == ">=":
            m.addCons(lhs >= rhs, name=name)
        else:
            m.addCons(lhs == rhs, name=name)
    m.setObjective(pyscipopt.quicksum(c * xs[k] for k, c in mdl["objective"].items()), "minimize")
    extra = dict(p.get("extra") or {})
    m.setParam("limits/time", float(p["time_limit"]))
    m.setParam("limits/gap", float(extra.pop("gap", 0.0)))
    m.setParam("randomization/randomseedshift", int(p.get("seed", 0)))
    if int(p.get("threads", 1)) > 1:
        m.setParam("parallel/maxnthreads", int(p["threads"]))
    for key, val in extra.items():
        if "/" in key:  # SCIP parameter names look like "limits/nodes"
            m.setParam(key, val)
    t0 = time.perf_counter()
    m.optimize()
    seconds = time.perf_counter() - t0
    st = m.getStatus()
    has = m.getNSols() > 0
    status = {"optimal": "optimal", "infeasible": "infeasible"}.get(
        st, "feasible" if has else "unknown"
    )
    values = {k: float(m.getVal(x)) for k, x in xs.items()} if has else {}
    return {
        "status": status,
        "values": values,
        "bound": float(m.getDualbound()) if has else None,
        "seconds": seconds,
        "stats": {"scip_status": st, "nodes": m.getNNodes(), "gap": m.getGap() if has else None},
    }


def _solve_highs(p: dict[str, Any]) -> dict[str, Any]:
    try:
        import highspy
    except ImportError as exc:
        raise _Unavailable("backend highs needs highspy (pip install highspy)") from exc
    mdl = p["model"]
    h = highspy.Highs()
    h.setOptionValue("output_flag", False)
    h.setOptionValue("time_limit", float(p["time_limit"]))
    h.setOptionValue("mip_rel_gap", float((p.get("extra") or {}).get("gap", 0.0)))
    h.setOptionValue("random_seed", int(p.get("seed", 0)))
    names = list(mdl["vars"])
    col = {k: i for i, k in enumerate(names)}
    inf = highspy.kHighsInf
    for k in names:
        kind, lb, ub = mdl["vars"][k]
        h.addVar(lb, ub)
        h.changeColCost(col[k], float(mdl["objective"].get(k, 0.0)))
        if kind == "B":
            h.changeColIntegrality(col[k], highspy.HighsVarType.kInteger)
    for _name, expr, sense, rhs in mdl["rows"]:
        idx = [col[k] for k in expr]
        val = [float(c) for c in expr.values()]
        lo = rhs if sense in (">=", "==") else -inf
        hi = rhs if sense in ("<=", "==") else inf
        h.addRow(lo, hi, len(idx), idx, val)
    t0 = time.perf_counter()
    h.run()
    seconds = time.perf_counter() - t0
    ms = h.getModelStatus()
    st = h.modelStatusToString(ms)
    info = h.getInfo()
    has = info.primal_solution_status == 2  # kSolutionStatusFeasible
    if ms == highspy.HighsModelStatus.kOptimal:
        status = "optimal"
    elif ms == highspy.HighsModelStatus.kInfeasible:
        status = "infeasible"
    else:
        status = "feasible" if has else "unknown"
    values = {}
    if has:
        sol = h.getSolution().col_value
        values = {k: float(sol[col[k]]) for k in names}
    return {
        "status": status,
        "values": values,
        "bound": float(info.mip_dual_bound) if has else None,
        "seconds": seconds,
        "stats": {"highs_status": st, "nodes": int(info.mip_node_count)},
    }


def solve_payload(payload: dict[str, Any]) -> dict[str, Any]:
    """Solve one serialised model (the worker's side; see the module docstring).

    Raises
    ------
    RuntimeError
        When the backend is unknown or not installed.
    """
    backend = payload["backend"]
    if backend == "scip":
        return _solve_scip(payload)
    if backend == "highs":
        return _solve_highs(payload)
    raise _Unavailable(f"unknown out-of-process backend {backend!r}")


def solve_in_subprocess(payload: dict[str, Any], *, grace_s: float = 60.0) -> dict[str, Any]:
    """Run :func:`solve_payload` in a fresh interpreter and return its answer.

    Returns ``{"status": "unavailable", "error": ...}`` when the backend is not installed and
    ``{"status": "error", "error": ...}`` when the worker crashed, printed no answer or ran
    more than ``grace_s`` past the solver's own time limit (it is then killed).
    """
    from twill._isolated import isolated_module_command

    cmd = isolated_module_command("twill.mapping.cosa.worker")  # never imports from the cwd
    try:
        proc = subprocess.run(
            cmd,
            input=json.dumps(payload),
            capture_output=True,
            text=True,
            timeout=float(payload["time_limit"]) + grace_s,
            check=False,
        )
    except subprocess.TimeoutExpired:
        return {"status": "error", "error": f"{payload['backend']} worker timed out; killed"}
    if proc.returncode == _EXIT_UNAVAILABLE:
        return {"status": "unavailable", "error": proc.stderr.strip()}
    if proc.returncode != 0:
        tail = proc.stderr.strip().splitlines()[-3:]
        return {
            "status": "error",
            "error": f"{payload['backend']} worker exit {proc.returncode}: {' | '.join(tail)}",
        }
    try:
        return json.loads(proc.stdout)
    except json.JSONDecodeError:
        return {"status": "error", "error": f"{payload['backend']} worker printed no JSON answer"}


def main() -> int:
    """Entry point of ``python -m twill.mapping.cosa.worker``."""
    try:
        payload = json.loads(sys.stdin.read())
        answer = solve_payload(payload)
    except _Unavailable as exc:
        print(str(exc), file=sys.stderr)
        return _EXIT_UNAVAILABLE
    except Exception as exc:  # reported to the parent, which turns it into Status.ERROR
        print(f"{type(exc).__name__}: {exc}", file=sys.stderr)
        return 1
    sys.stdout.write(json.dumps(answer))
    return 0


if __name__ == "__main__":
    sys.exit(main())
