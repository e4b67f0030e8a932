"""What every layer mapper returns: CoSA, its variants, random, hybrid,
exhaustive; and the pieces every ``solve(problem, options)`` of the mapping family shares.

* :class:`MappedLayer`: the solution payload of a
  :class:`~twill.mapping.problems.LayerMappingProblem` (a verified mapping and its cost);
* :func:`method_settings`: a method's typed settings read from the options;
* :class:`Controls`: the seed, stop time and progress events of one call;
* :func:`finished`: the last progress event of a call, then its result.
"""

from __future__ import annotations

import math
import time
from dataclasses import dataclass, field
from typing import Any, TypeVar

from twill.errors import InvalidProblemError
from twill.mapping.cost.analytical import CostReport
from twill.mapping.mapping import Mapping, to_dosa_string
from twill.options import SolverOptions
from twill.progress import ProgressEvent
from twill.results import SolveResult, Status, Timings

__all__ = ["MapResult", "MappedLayer", "Controls", "method_settings", "finished"]

_S = TypeVar("_S")

#: The headline numbers of a cost report that a layer's JSON carries.
SUMMARY_KEYS = ("cycles", "energy_uJ", "edp", "utilisation", "valid", "dram_bytes")


@dataclass(frozen=True)
class MappedLayer:
    """A verified mapping of one layer and its exact cost (the solution of a
    :class:`~twill.mapping.problems.LayerMappingProblem`)."""

    layer: str
    mapping: Mapping
    report: CostReport

    def to_dict(self) -> dict[str, Any]:
        """The layer, the mapping as a DOSA string and the cost's headline numbers."""
        rep = self.report.to_dict(summary=True)
        return {"layer": self.layer, "mapping": to_dosa_string(self.mapping),
                **{k: rep[k] for k in SUMMARY_KEYS}}  # fmt: skip


def method_settings(options: SolverOptions, name: str, kind: type[_S]) -> _S:
    """``options.<name>``, a ``kind`` (its defaults when unset); any other type is refused."""
    value = getattr(options, name)
    if value is None:
        return kind()
    if not isinstance(value, kind):
        raise InvalidProblemError(
            f"options.{name} must be a {kind.__name__}, found {type(value).__name__}"
        )
    return value


@dataclass(frozen=True)
class Controls:
    """What one call takes from its options besides the method's settings: the seed, the
    ``perf_counter`` value at which it stops (infinity: none) and the progress callback.

    ``start`` is the call's start; every event's ``seconds`` counts from it.
    """

    seed: int | None = 0
    start: float = field(default_factory=time.perf_counter)
    stop: float = math.inf
    on_progress: Any = None
    method: str = ""

    @classmethod
    def of(cls, options: SolverOptions, method: str, start: float | None = None) -> Controls:
        """The controls of ``options``: its seed, its deadline (anchored now unless the
        caller's options carry one already, see :meth:`~twill.options.SolverOptions.start`)
        and its callback."""
        t0 = time.perf_counter() if start is None else start
        left = options.start().remaining()
        stop = math.inf if left is None else time.perf_counter() + left
        return cls(options.seed, t0, stop, options.on_progress, method)

    def remaining(self) -> float:
        """Seconds left before :attr:`stop` (infinity without a limit; never below 0)."""
        return max(0.0, self.stop - time.perf_counter())

    def expired(self) -> bool:
        """True once the stop time has passed."""
        return time.perf_counter() >= self.stop

    def emit(self, phase: str, **fields: Any) -> None:
        """Send one :class:`~twill.progress.ProgressEvent` (when there is a callback)."""
        if self.on_progress is not None:
            seconds = time.perf_counter() - self.start
            self.on_progress(ProgressEvent(phase, method=self.method, seconds=seconds, **fields))


def finished(controls: Controls, result: SolveResult) -> SolveResult:
    """Emit the ``"done"`` event of a call (its objective, bound and status) and return
    ``result``."""
    controls.emit("done", incumbent=result.objective, bound=result.bound,
                  message=result.status.value)  # fmt: skip
    return result


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
        found = None
        if self.mapping is not None and self.report is not None:
            found = MappedLayer(self.layer, self.mapping, self.report)
        return SolveResult(
            self.status if found is not None or not self.status.has_solution else Status.ERROR,
            solution=found,
            objective=self.objective,
            objective_unit=f"{self.method} {metric}",
            bound=self.bound,
            timings=Timings(**phases),
            stats=dict(self.stats),
            settings={"method": self.method, **self.settings},
            seed=self.seed,
        )
