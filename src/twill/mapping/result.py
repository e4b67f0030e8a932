"""What every layer mapper returns: CoSA, its variants, random, hybrid,
exhaustive; and the pieces every ``solve(problem, options)`` of the mapping family shares.

* :class:`MappedLayer`: the solution payload of a
  :class:`~twill.mapping.problems.LayerMappingProblem` (a verified mapping and its cost);
* :func:`objective_meaning`: what a mapper's ``objective`` means and its unit;
* :func:`layer_json`: a layer mapper's result with the fields of the ``map`` command's JSON;
* :func:`method_settings`: a method's typed settings read from the options;
* :class:`Controls`: the seed, deadline and progress events of one call;
* :func:`finished`: the last progress event of a call, then its result.
"""

from __future__ import annotations

import math
import time
from dataclasses import dataclass, field
from typing import Any

from twill.deadline import NO_DEADLINE, Deadline
from twill.mapping.cost.analytical import CostReport
from twill.mapping.mapping import Mapping, to_dosa_string
from twill.options import SolverOptions, method_settings
from twill.progress import ProgressEvent
from twill.results import SolveResult

__all__ = [
    "MappedLayer",
    "Controls",
    "method_settings",
    "finished",
    "objective_meaning",
    "layer_json",
    "COSA_OBJECTIVE",
    "METRIC_OBJECTIVES",
]


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


@dataclass(frozen=True)
class Controls:
    """What one call takes from its options besides the method's settings: the seed, the
    options' :class:`~twill.deadline.Deadline` and the progress callback.

    ``start`` is the call's start (``perf_counter``); every event's ``seconds`` counts from it.
    """

    seed: int | None = 0
    start: float = field(default_factory=time.perf_counter)
    deadline: Deadline = NO_DEADLINE
    on_progress: Any = None
    method: str = ""

    @classmethod
    def of(cls, options: SolverOptions, method: str, start: float | None = None) -> Controls:
        """The controls of ``options``: its seed, its deadline (anchored now unless the
        caller's options carry one already, see :meth:`~twill.options.SolverOptions.start`)
        and its callback."""
        t0 = time.perf_counter() if start is None else start
        return cls(options.seed, t0, options.clock, options.on_progress, method)

    @property
    def stop(self) -> float:
        """The deadline as a ``perf_counter`` value (infinity: none), for the search loops."""
        return self.deadline.perf_stop()

    def remaining(self) -> float:
        """Seconds left before the deadline (infinity without a limit; never below 0)."""
        left = self.deadline.remaining()
        return math.inf if left is None else left

    def expired(self) -> bool:
        """True once the deadline has passed."""
        return self.deadline.passed()

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


#: What CoSA's MIP minimises (``twill.mapping.cosa.mip.cosa_objective_terms``).
COSA_OBJECTIVE = (
    "CoSA objective (10*compute - 0.1*utilisation + traffic, each a sum of log2 loop factors: "
    "a proxy for latency and data movement, not the cost model's cycles or energy)",
    "log2 units",
)
#: What the search baselines minimise, by metric (``twill.mapping.search.common``).
METRIC_OBJECTIVES = {
    "edp": ("energy-delay product of the cost model", "µJ·cycles"),
    "cycles": ("latency of the cost model", "cycles"),
    "energy": ("energy of the cost model", "pJ"),
    "lex": ("latency of the cost model, energy breaking ties (cycles + a fraction < 1)", "cycles"),
}


def objective_meaning(method: str, metric: str = "edp") -> tuple[str, str]:
    """``(meaning, unit)`` of a layer mapper's ``objective`` (and of its ``bound``)."""
    if method == "cosa":
        return COSA_OBJECTIVE
    if method == "cosa-edp":
        return (
            "energy-delay product of the cost model (CoSA's candidates and random starts, "
            "polished by local search)",
            "µJ·cycles",
        )
    if method == "cosa-rerank":
        return (
            "CoSA's MIP candidates re-ranked by the cost model: cycles first, then energy",
            "cycles",
        )
    return METRIC_OBJECTIVES[metric]


def layer_json(result: SolveResult, layer: str, full: bool = False) -> dict[str, Any]:
    """``result.to_dict()`` with the fields the ``map`` command's JSON has always had: the
    ``layer`` and ``method`` names, the ``mapping`` as a DOSA string (``None`` without
    one), total ``seconds`` and the cost's headline numbers (``full``: the whole
    ``report`` too)."""
    out = result.to_dict()
    found = result.solution
    out.update(layer=layer, method=result.settings.get("method"), seconds=result.timings.total,
               mapping=None if found is None else to_dosa_string(found.mapping))  # fmt: skip
    if found is not None:
        rep = found.report.to_dict(summary=not full)
        out.update({k: rep[k] for k in SUMMARY_KEYS})
        if full:
            out["report"] = rep
    return out
