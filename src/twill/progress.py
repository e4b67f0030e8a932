"""Progress events of long exact solves, shared by both solver families.

A solver that may run for minutes (the Phase-1 search for the minimum initiation interval, the
Phase-2 search over ``(I, L)`` points) accepts ``on_progress``, a callable that receives one
:class:`ProgressEvent` when a step starts and one when it ends. The solvers never print: the
command line hangs a status line on these events, a notebook may draw a bar, a test may collect
them.

Events are small frozen records; a callback must return quickly and must not raise (an
exception propagates and stops the solve).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

__all__ = ["ProgressEvent", "OnProgress", "emit"]


@dataclass(frozen=True)
class ProgressEvent:
    """One step of an exact search, when it starts (``answer is None``) and when it ends.

    Attributes
    ----------
    phase
        ``"phase1"`` (minimum-I modulo search) or ``"phase2"`` (warp-specialisation search).
    I
        Initiation interval under test (cycles between iteration starts).
    elapsed
        Seconds since the search began.
    L
        Schedule length under test (Phase 2) or of the schedule found (Phase 1), in cycles.
    lower_bound
        The proven lower bound on ``I`` (MII): no smaller ``I`` can have a schedule.
    upper_bound
        The largest ``I`` the search will try (``max_I``, or an ``I`` at which a schedule is
        known to exist).
    answer
        ``None`` when the step starts; then the solver's verdict for it: ``"infeasible"``,
        ``"feasible"``, ``"optimal"``, ``"unknown"`` (a limit was hit) in Phase 1; ``"sat"``,
        ``"unsat"``, ``"unknown"``, ``"p1_infeasible"``, ``"p1_unknown"`` in Phase 2.
    incumbent
        Length ``L`` (cycles) of the best schedule found so far, where the backend has one.
    """

    phase: str
    I: int
    elapsed: float
    L: int | None = None
    lower_bound: int | None = None
    upper_bound: int | None = None
    answer: str | None = None
    incumbent: int | None = None

    def describe(self) -> str:
        """One line for a status display, e.g. ``Phase 1: I=5 (MII 4, max 12) infeasible``."""
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
                head += f" (MII {self.lower_bound}{cap})"
        what = "trying" if self.answer is None else self.answer
        tail = "" if self.incumbent is None else f", incumbent L={self.incumbent}"
        return f"{head} {what}{tail}  [{self.elapsed:.1f} s]"


OnProgress = Callable[[ProgressEvent], None]


def emit(on_progress: OnProgress | None, event: ProgressEvent) -> None:
    """Send ``event`` to ``on_progress`` when one is given."""
    if on_progress is not None:
        on_progress(event)
