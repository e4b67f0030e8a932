"""The one result type of every mapper: CoSA, random, hybrid, exhaustive."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from twill.mapping.cost.analytical import CostReport
from twill.mapping.mapping import Mapping, to_dosa_string
from twill.results import SolveResult, Status, Timings

__all__ = ["MapResult"]


@dataclass(frozen=True)
class MapResult:
    """Outcome of mapping one layer.

    Attributes
    ----------
    method
        ``cosa``, ``random``, ``hybrid``, ``exhaustive`` ...
    status
        OPTIMAL only with a proof (the MIP solved to optimality for its own objective, or an
        exhaustive enumeration); FEASIBLE for heuristics; UNKNOWN on a timeout without answer.
    mapping, report
        The verified mapping and its cost (``None`` without a solution).
    objective, bound
        The mapper's own objective (MIP objective, or the search metric) and a proven bound.
    timings
        Seconds per phase (``build``, ``solve``, ``verify``, ``total``).
    stats
        Solver statistics (variables, constraints, samples drawn, valid samples ...).
    settings
        The settings that reproduce the run (backend, limits, seed ...).
    """

    method: str
    status: Status
    layer: str
    mapping: Mapping | None = None
    report: CostReport | None = None
    objective: float | None = None
    bound: float | None = None
    timings: dict[str, float] = field(default_factory=dict)
    stats: dict[str, Any] = field(default_factory=dict)
    settings: dict[str, Any] = field(default_factory=dict)
    seed: int | None = None

    @property
    def seconds(self) -> float:
        return float(self.timings.get("total", sum(self.timings.values())))

    def to_dict(self, summary: bool = True) -> dict[str, Any]:
        out: dict[str, Any] = {
            "layer": self.layer,
            "method": self.method,
            "status": self.status.value,
            "mapping": to_dosa_string(self.mapping) if self.mapping is not None else None,
            "objective": self.objective,
            "bound": self.bound,
            "seconds": self.seconds,
            "timings": dict(self.timings),
            "stats": dict(self.stats),
            "settings": dict(self.settings),
            "seed": self.seed,
        }
        if self.report is not None:
            rep = self.report.to_dict(summary=summary)
            for k in ("cycles", "energy_uJ", "edp", "utilisation", "valid", "dram_bytes"):
                out[k] = rep[k]
            if not summary:
                out["report"] = rep
        return out

    def as_result(self) -> SolveResult:
        """The shared :class:`~twill.results.SolveResult`: the mapping as solution, the
        mapper's own objective (its unit names the method and metric) and proven bound."""
        metric = self.settings.get("metric", "objective")
        phases = {k: float(self.timings.get(k, 0.0)) for k in ("build", "solve", "verify")}
        return SolveResult(
            self.status,
            solution=self.mapping,
            objective=self.objective,
            objective_unit=f"{self.method} {metric}",
            bound=self.bound,
            timings=Timings(**phases),
            stats=dict(self.stats),
            settings=dict(self.settings),
            seed=self.seed,
        )
