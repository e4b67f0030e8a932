"""The result of one GauS or baseline run (GauS spec §13 "report per run")."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from twill.results import SolveResult, Status, Timings

__all__ = ["ScheduleRunResult"]


#: What each formulation's ``objective`` counts (GauS spec §3).
OBJECTIVE_UNITS = {
    "A": "ratio x peak resource + communication",
    "B": "peak live memory (result units)",
    "C": "modulo MaxLive (result units)",
}


@dataclass(frozen=True)
class ScheduleRunResult:
    """Outcome of a GauS (or baseline) run on one graph.

    Parameters
    ----------
    status
        ``FEASIBLE`` with a verified legal schedule; ``OPTIMAL`` only when an exact solver
        proved it; ``INFEASIBLE`` only with a proof (``message`` says which bound);
        ``UNKNOWN`` when no legal schedule was found (e.g. legalisation failed, time cap).
    method
        ``"gaus"``, ``"list"``, ``"force"``, ``"gumbel"`` or ``"exact"``.
    formulation
        ``"A"``, ``"B"`` or ``"C"``.
    schedule
        Node name -> start step (empty without a legal schedule).
    legal
        True when the schedule passed the verifier.
    objective
        Discrete objective of the legal schedule (``None`` without one).
    bound
        A proven lower bound on the objective, when the method has one (exact solver).
    II, D
        Initiation interval (``None`` for A/B) and latency bound.
    seconds
        Wall time of the whole call, legalisation and verification included.
    iterations
        Gradient steps (or solver-specific iteration count).
    expected_violation
        Sum of expected constraint violations at the end of the gradient phase.
    loss_history, violation_history, objective_history
        Per gradient step: the augmented-Lagrangian loss and the expected violation; per outer
        iteration: ``(seconds, discrete objective of the best legal schedule so far)``.
    message
        One line explaining the status.
    settings
        Every hyperparameter used (replays the run together with ``seed``).
    gaus_objective
        GauS runs with a post-legalisation local search (:mod:`twill.sched.gaus.polish`):
        the discrete objective of GauS's own legalised schedule *before* that search, so
        GauS proper and post-processing stay distinguishable (``objective`` is after it).
    polish_history
        The any-time curve of that local search (run on improving checkpoints during the
        optimisation, setting ``polish_share``, and on the final best schedule) and of the
        large-neighbourhood search after it (setting ``lns_time``), where it improved:
        ``(seconds from the call start, best searched objective so far)`` after every pass
        that improved it (each schedule legal by construction; the returned one is
        verified). Together with ``objective_history`` it gives the run's best legal
        objective over time (:meth:`seconds_to_reach`). Empty when the search did not run or
        was not kept.
    infeasible_cause
        For a proven INFEASIBLE: ``"D"`` (the latency bound is too short, at every II) or
        ``"II"`` (the initiation interval is below ResMII or RecMII); ``None`` otherwise.
    """

    status: Status
    method: str
    formulation: str
    graph: str
    schedule: dict[str, int] = field(repr=False)
    legal: bool
    objective: float | None
    II: int | None
    D: int
    seconds: float
    iterations: int = 0
    bound: float | None = None
    expected_violation: float | None = None
    loss_history: tuple[float, ...] = field(default=(), repr=False)
    violation_history: tuple[float, ...] = field(default=(), repr=False)
    objective_history: tuple[tuple[float, float], ...] = field(default=(), repr=False)
    message: str = ""
    settings: dict[str, Any] = field(default_factory=dict, repr=False)
    seed: int | None = None
    timings: dict[str, float] = field(default_factory=dict, repr=False)
    gaus_objective: float | None = None
    polish_history: tuple[tuple[float, float], ...] = field(default=(), repr=False)
    infeasible_cause: str | None = None

    def seconds_to_reach(self, target: float) -> float | None:
        """Seconds from the call start until a legal schedule with objective ``<= target``
        was held, the earliest point of ``objective_history`` or ``polish_history``; ``None`` if
        never.

        This is the any-time reading of a run (e.g. GauS against the time an exact solver
        needed for its incumbent): model building, legalisation and the local search up to
        that point are included, the final verification (milliseconds) is not.
        """
        tol = 1e-9 * max(1.0, abs(target))
        hits = [s for s, o in (*self.objective_history, *self.polish_history) if o <= target + tol]
        return float(min(hits)) if hits else None

    @property
    def feasible(self) -> bool:
        """True when a legal schedule was found."""
        return self.legal

    def as_result(self) -> SolveResult:
        """The shared result shape (solution ``None`` unless ``legal``)."""
        return SolveResult(
            status=self.status,
            solution=dict(self.schedule) if self.legal else None,
            objective=self.objective,
            objective_unit=OBJECTIVE_UNITS.get(self.formulation, ""),
            bound=self.bound,
            timings=Timings(solve=self.seconds),
            stats={
                "iterations": self.iterations,
                "message": self.message,
                "II": self.II,
                "steps_seconds": dict(self.timings),
            },  # fmt: skip
            settings={
                "method": self.method,
                "formulation": self.formulation,
                "D": self.D,
                **self.settings,
            },  # fmt: skip
            seed=self.seed,
        )

    def to_dict(self, *, history: bool = True) -> dict[str, Any]:
        """JSON-ready dictionary (``history=False`` drops the per-step curves)."""
        out: dict[str, Any] = {
            "status": self.status.value,
            "method": self.method,
            "formulation": self.formulation,
            "graph": self.graph,
            "legal": self.legal,
            "objective": self.objective,
            "bound": self.bound,
            "II": self.II,
            "D": self.D,
            "seconds": self.seconds,
            "iterations": self.iterations,
            "expected_violation": self.expected_violation,
            "message": self.message,
            "settings": dict(self.settings),
            "seed": self.seed,
            "timings": dict(self.timings),
            "gaus_objective": self.gaus_objective,
            "schedule": dict(self.schedule),
        }
        if history:
            out["loss_history"] = list(self.loss_history)
            out["violation_history"] = list(self.violation_history)
            out["objective_history"] = [list(p) for p in self.objective_history]
            out["polish_history"] = [list(p) for p in self.polish_history]
        return out
