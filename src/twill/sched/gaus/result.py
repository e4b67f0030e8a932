"""What a GauS or baseline run returns (``docs/gaus.md``).

Every GauS-family solver returns the shared :class:`~twill.results.SolveResult`. Its
``solution`` is a :class:`GauSSchedule` (op -> start step, with the formulation, ``D`` and
``II`` it is legal for) when the schedule passed the verifier, else ``None``; its ``stats``
hold the run record (:data:`RUN_STATS`), which also reads as attributes
(``result.iterations``, ``result.loss_history``, ``result.II``, ...); ``result.seconds`` is
the wall time of the whole call.

Examples
--------
>>> from twill.results import Status
>>> r = run_result(Status.FEASIBLE, GauSSchedule({"a": 0, "b": 1}, "B", D=2), 1.0,
...                {"method": "list", "graph": "g"}, seconds=0.5)
>>> r.legal, r.II, r.D, r.schedule, r.seconds, run_json(r)["schedule"]
(True, None, 2, {'a': 0, 'b': 1}, 0.5, {'a': 0, 'b': 1})
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from dataclasses import dataclass, field
from typing import Any

from twill.results import SolveResult, Status, Timings

__all__ = [
    "GauSSchedule",
    "OBJECTIVE_UNITS",
    "RUN_STATS",
    "best_so_far",
    "run_result",
    "run_json",
    "seconds_to_reach",
]


#: What each formulation's ``objective`` counts (``docs/gaus.md``, "Formulations").
OBJECTIVE_UNITS = {
    "A": "ratio x peak resource + communication",
    "B": "peak live memory (result units)",
    "C": "modulo MaxLive (result units)",
}

#: The run record in ``stats`` and its defaults. ``method``: ``"gaus"``, ``"list"``,
#: ``"force"``, ``"gumbel"`` or ``"exact"``; ``formulation``, ``graph`` (its name), ``II``
#: (``None`` for A and B) and ``D``; ``legal``: a verified schedule is the solution;
#: ``iterations``: gradient steps (or the method's own count); ``expected_violation``: the sum
#: of expected constraint violations after the gradient phase; ``loss_history`` and
#: ``violation_history`` per gradient step; ``objective_history``: ``(seconds from the call
#: start, best legal objective so far)`` per outer iteration; ``polish_history``: the same
#: curve for the local and large-neighbourhood searches after GauS, where they improved;
#: ``gaus_objective``: GauS's own legalised objective before those searches (``objective`` is
#: after them); ``infeasible_cause``: ``"D"`` (the latency bound is too short, at every II) or
#: ``"II"`` (below ResMII or RecMII) for a proven INFEASIBLE; ``message``: one line on the
#: status; ``steps_seconds``: seconds of the named steps (optimise, polish, lns, ...).
RUN_STATS: dict[str, Any] = {
    "method": "",
    "formulation": "",
    "graph": "",
    "II": None,
    "D": 0,
    "legal": False,
    "iterations": 0,
    "expected_violation": None,
    "loss_history": (),
    "violation_history": (),
    "objective_history": (),
    "polish_history": (),
    "gaus_objective": None,
    "infeasible_cause": None,
    "message": "",
    "steps_seconds": {},
}

_CURVES = ("loss_history", "violation_history", "objective_history", "polish_history")


@dataclass(frozen=True, eq=False)
class GauSSchedule(Mapping[str, int]):
    """A verified GauS (or baseline) schedule: op name -> start step, read as a mapping, with
    the formulation, latency bound ``D`` and (C) initiation interval ``II`` it is legal for."""

    starts: Mapping[str, int] = field(repr=False)
    formulation: str
    D: int
    II: int | None = None

    def __getitem__(self, op: str) -> int:
        return self.starts[op]

    def __iter__(self) -> Iterator[str]:
        return iter(self.starts)

    def __len__(self) -> int:
        return len(self.starts)

    @property
    def schedule(self) -> dict[str, int]:
        """Op name -> start step, as a plain dictionary."""
        return dict(self.starts)


def run_result(
    status: Status,
    solution: GauSSchedule | None,
    objective: float | None,
    stats: Mapping[str, Any],
    *,
    seconds: float,
    settings: Mapping[str, Any] | None = None,
    seed: int | None = None,
    bound: float | None = None,
) -> SolveResult:
    """The :class:`~twill.results.SolveResult` of one run: ``stats`` completed from
    :data:`RUN_STATS` (``legal``, ``D`` and ``II`` from the solution when there is one),
    ``seconds`` as the solve time, and the method, formulation and ``D`` in ``settings``."""
    record = {**RUN_STATS, **stats, "legal": solution is not None}
    if solution is not None:
        record.update(formulation=solution.formulation, D=solution.D, II=solution.II)
    return SolveResult(
        status=status,
        solution=solution,
        objective=objective,
        objective_unit=OBJECTIVE_UNITS.get(record["formulation"], ""),
        bound=bound,
        timings=Timings(solve=seconds),
        stats=record,
        settings={
            "method": record["method"],
            "formulation": record["formulation"],
            "D": record["D"],
            **(settings or {}),
        },  # fmt: skip
        seed=seed,
    )


def run_json(result: SolveResult, *, history: bool = False) -> dict[str, Any]:
    """``result.to_dict()`` (the per-step curves left out of ``stats`` unless ``history``)
    plus the fields ``twill gaus --json`` has always had at the top level: ``method``,
    ``formulation``, ``graph``, ``legal``, ``II``, ``D``, ``seconds``, ``iterations``,
    ``expected_violation``, ``message``, ``gaus_objective``, ``schedule`` (empty without a
    legal schedule) and, with ``history``, the curves."""
    out = result.to_dict()
    stats = dict(out["stats"])
    curves = {k: stats.pop(k) for k in _CURVES if k in stats}
    out["stats"] = stats
    for key in ("method", "formulation", "graph", "legal", "II", "D", "iterations",
                "expected_violation", "message", "gaus_objective"):  # fmt: skip
        out[key] = stats.get(key)
    out["seconds"] = result.seconds
    out["schedule"] = dict(result.solution or {})
    if history:
        out.update(curves)
    return out


def best_so_far(points: list[tuple[float, float]]) -> list[tuple[float, float]]:
    """The any-time curve of ``(seconds, objective)`` points from several searches on one
    clock (a run's ``objective_history`` and ``polish_history``): in time order, each point
    that lowers the best objective so far. Here, beside the run record, so that a picture of
    a run (:mod:`twill.visualization.gaus_plots`) needs no solver module."""
    curve: list[tuple[float, float]] = []
    for when, obj in sorted(points):
        if not curve or obj < curve[-1][1]:
            curve.append((when, obj))
    return curve


def seconds_to_reach(result: SolveResult, target: float) -> float | None:
    """Seconds from the call start until a legal schedule with objective ``<= target`` was
    held, the earliest point of ``objective_history`` or ``polish_history``; ``None`` if never.

    This is the any-time reading of a run (e.g. GauS against the time an exact solver needed
    for its incumbent): model building, legalisation and the local search up to that point are
    included, the final verification (milliseconds) is not.
    """
    tol = 1e-9 * max(1.0, abs(target))
    curve = (*result.stats.get("objective_history", ()), *result.stats.get("polish_history", ()))
    hits = [s for s, o in curve if o <= target + tol]
    return float(min(hits)) if hits else None
