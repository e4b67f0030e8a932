"""The one progress event of every solver of both families (issue 40, point 4).

A solver that may run for more than a moment accepts ``on_progress`` (directly, or as
:attr:`twill.options.SolverOptions.on_progress`), a callable that receives one
:class:`ProgressEvent` per step: the exact searches when a Phase-1 solve or a Phase-2 point
starts and ends, GauS after its Adam steps, the scheduling baselines per epoch or at the end.
The solvers never print: the command line hangs a status line or a bar on these events, a
notebook may draw a bar, a test may collect them.

Events are small frozen, picklable records (a callback may live in another process); a
callback must return quickly and must not raise (an exception propagates and stops the
solve).

Examples
--------
>>> e = ProgressEvent(method="gaus", phase="alm", step=100, total=2000, incumbent=12.0,
...                   seconds=0.5)
>>> e.describe()
'gaus alm: step 100/2000, incumbent 12  [0.5 s]'
>>> import pickle; pickle.loads(pickle.dumps(e)) == e
True
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

__all__ = ["ProgressEvent", "OnProgress", "emit"]


@dataclass(frozen=True)
class ProgressEvent:
    """One step of a solver.

    The first three fields keep the positional order of the exact searches' events
    (``phase, I, seconds``); every other field is given by keyword.

    Attributes
    ----------
    phase
        What the solver is doing: ``"phase1"`` (minimum-I modulo search), ``"phase2"``
        (warp-specialisation search), ``"alm"`` (GauS's gradient phase), ``"polish"``
        (GauS's local searches), ``"epoch"`` (the Gumbel baseline), ``"solve"`` (one solve
        of a baseline), ``"done"`` (the last event of a run).
    I
        Exact searches: the initiation interval under test.
    seconds
        Seconds since the call began.
    L
        Exact searches: schedule length under test (Phase 2) or of the schedule found
        (Phase 1), in cycles.
    lower_bound, upper_bound
        Phase 1: the proven lower bound on ``I`` (MII, raised by every refutation from MII
        up) and the largest ``I`` it will try (the incumbent's, once there is one).
    answer
        Exact searches: ``None`` when the step starts, then the verdict for it
        (``"infeasible"``, ``"feasible"``, ``"optimal"``, ``"unknown"`` in Phase 1; ``"sat"``,
        ``"unsat"``, ``"unknown"``, ``"p1_infeasible"``, ``"p1_unknown"`` in Phase 2).
    incumbent
        Objective of the best solution held so far (exact searches: its length ``L``), in the
        solver's objective unit; ``None`` before there is one.
    method
        The solver: ``"twill"`` (the exact searches; filled in from ``phase``), ``"gaus"``,
        ``"list"``, ``"force"``, ``"gumbel"``, ``"exact"``.
    step, total
        Steps done and the step budget (``total`` ``None`` when unknown).
    bound
        A proven lower bound on the objective, where the solver has one.
    message
        Anything else worth a line (e.g. the expected violation of GauS).
    best_I
        Phase 1: the initiation interval of the best verified schedule found so far (the
        incumbent, from the heuristic or an exact solve), ``None`` before there is one. The
        search's answer is never above it; ``best_I - lower_bound`` is the current gap.
    """

    phase: str
    I: int | None = None  # noqa: E741 (the paper's name)
    seconds: float = 0.0
    L: int | None = None
    lower_bound: int | None = None
    upper_bound: int | None = None
    answer: str | None = None
    incumbent: float | None = None
    method: str = ""
    step: int | None = None
    total: int | None = None
    bound: float | None = None
    message: str = ""
    best_I: int | None = None

    def __post_init__(self) -> None:
        if not self.method and self.phase in ("phase1", "phase2"):
            object.__setattr__(self, "method", "twill")

    @property
    def elapsed(self) -> float:
        """Seconds since the call began (the exact searches' earlier name of ``seconds``)."""
        return self.seconds

    def describe(self) -> str:
        """One line for a status display, e.g. ``Phase 1: I=5 (MII 4, max 12) infeasible``."""
        if self.method != "twill":
            return self._describe_steps()
        if self.phase == "phase2":
            head = (
                f"Phase 2: (I={self.I}, L={self.L})"
                if self.L is not None
                else (f"Phase 2: I={self.I}")
            )
        else:
            head = f"Phase 1: I={self.I}"
            if self.lower_bound is not None:
                cap = "" if self.upper_bound is None else f", max {self.upper_bound}"
                head += f" (lower bound {self.lower_bound}{cap})"
        what = "trying" if self.answer is None else self.answer
        tail = ""
        if self.best_I is not None:
            gap = "" if self.lower_bound is None else f", gap {self.best_I - self.lower_bound}"
            tail = f", incumbent I={self.best_I}{gap}"
        if self.incumbent is not None:
            tail += f", incumbent L={self.incumbent}"
        return f"{head} {what}{tail}  [{self.seconds:.1f} s]"

    def _describe_steps(self) -> str:
        """The line of a step-counting solver (GauS, the baselines)."""
        parts = []
        if self.step is not None:
            parts.append(f"step {self.step}" + ("" if self.total is None else f"/{self.total}"))
        parts.append("incumbent " + ("-" if self.incumbent is None else f"{self.incumbent:.6g}"))
        if self.bound is not None:
            parts.append(f"bound {self.bound:.6g}")
        if self.message:
            parts.append(self.message)
        return f"{self.method} {self.phase}: {', '.join(parts)}  [{self.seconds:.1f} s]"


OnProgress = Callable[[ProgressEvent], None]


def emit(on_progress: OnProgress | None, event: ProgressEvent) -> None:
    """Send ``event`` to ``on_progress`` when one is given."""
    if on_progress is not None:
        on_progress(event)
