"""The exact scheduler's own knobs, typed: :class:`TwillSettings` (``SolverOptions.twill``).

Every exact solver of this package is ``solve(problem, options=None) -> SolveResult``: the
problem says *what* is solved (a :class:`~twill.sched.problems.ModuloProblem` or a
:class:`~twill.sched.problems.WarpSpecProblem`), :class:`~twill.options.SolverOptions` says
how long (its deadline), with how many threads and workers, with which seed and progress
callback, and its ``twill`` field holds these method settings. Nothing travels as a loose
keyword.

Examples
--------
>>> TwillSettings(backend="cpsat").backend
'cpsat'
>>> TwillSettings(backend="glpk")
Traceback (most recent call last):
...
twill.errors.InvalidProblemError: TwillSettings: backend must be one of cbc, cpsat, found 'glpk'
"""

from __future__ import annotations

import math
from dataclasses import asdict, dataclass, replace
from typing import Any

from twill.deadline import Deadline
from twill.errors import ArgumentTypeError, InvalidProblemError
from twill.options import MethodSettings, SolverOptions, method_settings

__all__ = ["TwillSettings", "twill_options", "twill_settings"]

_CHOICES = {
    "backend": ("cbc", "cpsat"),
    "decide": ("window", "full"),
    "encoding": (None, "ed97", "standard", "residue"),
    "phase2_encoding": ("compact", "grid"),
    "window": ("monotone", "scan"),
}
_LIMITS = ("solve_time_limit", "length_time_limit", "point_time_limit")
_FLAGS = ("tie_break", "incumbent", "exact", "probes", "warm_start", "probe", "symmetry_breaking")


@dataclass(frozen=True)
class TwillSettings(MethodSettings, slot="twill"):
    """How the exact searches work (Twill Phase 1, the minimum-I search, Phase 2, Algorithm 1).

    The whole call's time is ``SolverOptions.time_limit`` (a deadline); the limits here only
    cap one step inside it, never extend it.

    Attributes
    ----------
    backend
        Phase-1 solver: ``"cbc"`` (PuLP + CBC, the paper's) or ``"cpsat"`` (OR-Tools CP-SAT).
    solve_time_limit
        Seconds per Phase-1 solve (``None``: only the deadline). A hit below the answer makes
        it "not proven optimal".
    length_time_limit
        Seconds for minimising ``L`` once a schedule is found at an ``I`` (``None``: the same
        as ``solve_time_limit``).
    tie_break
        Deterministic as-late-as-possible choice among Phase-1 schedules of minimum ``L``.
    decide
        How Phase 1 decides an ``I``: ``"window"`` (translation-reduced model) or ``"full"``.
    encoding
        Phase-1 dependence rows (``None``: chosen per instance; see
        :func:`twill.sched.exact.phase1.solve_phase1`).
    incumbent
        Start the minimum-I search from a verified heuristic schedule (its ``I`` tops it).
    exact
        Run the exact search (``False``: the heuristic incumbent alone, verified, every
        ``I`` below it ``untried``; ``twill solve --heuristic-only``).
    probes
        Before the backend's own search, decide ``I`` between the proven bound and the
        incumbent by CP-SAT probes on the window model (decisions only, doubling limits,
        whatever ``backend``, CBC too in the first round;
        :func:`twill.sched.exact.search.search_min_ii`): each refuted ``I`` is a proof (by
        the backend that found it), each schedule found a better incumbent; an ``I`` they
        leave open goes to CP-SAT first in the backend's own search.
    warm_start
        Hand that incumbent to the exact solves (no decision at its own ``I``; ``L``
        minimised from it). The Twill pipeline turns it off when Phase 2 follows (Phase 2
        starts from Phase 1's schedule; :func:`twill.sched.exact.search.search_min_ii`).
    phase2
        Run Phase 2 after Phase 1 (``None``: exactly when the machine has a warp model).
    probe
        Phase 2 only on the window at the Phase-1 optimal ``I``.
    point_time_limit
        Seconds per Phase-2 ``(I, L)`` point (a hit is "unknown", never unsat).
    phase2_encoding, symmetry_breaking
        Phase-2 model: ``"compact"`` or ``"grid"`` (the same constraints), and symmetry
        breaking over compute slots (sat/unsat unchanged).
    window
        Algorithm 1's search of a length window: ``"monotone"`` or ``"scan"`` (same answers).
    """

    backend: str = "cbc"
    solve_time_limit: float | None = None
    length_time_limit: float | None = None
    tie_break: bool = True
    decide: str = "window"
    encoding: str | None = None
    incumbent: bool = True
    exact: bool = True
    probes: bool = True
    warm_start: bool = True
    phase2: bool | None = None
    probe: bool = False
    point_time_limit: float | None = None
    phase2_encoding: str = "compact"
    symmetry_breaking: bool = True
    window: str = "monotone"

    def defects(self) -> list[str]:
        """Every out-of-range field, one line each (empty when valid)."""
        out = []
        for name, allowed in _CHOICES.items():
            value = getattr(self, name)
            if value not in allowed:
                shown = ", ".join(str(a) for a in allowed if a is not None)
                out.append(f"{name} must be one of {shown}, found {value!r}")
        for name in _LIMITS:
            value = getattr(self, name)
            ok = value is None or (
                isinstance(value, int | float) and not isinstance(value, bool)
                and math.isfinite(value) and value > 0
            )  # fmt: skip
            if not ok:
                out.append(f"{name} must be finite seconds > 0 or None, found {value!r}")
        for name in _FLAGS:
            if not isinstance(getattr(self, name), bool):
                out.append(f"{name} must be True or False, found {getattr(self, name)!r}")
        if self.phase2 is not None and not isinstance(self.phase2, bool):
            out.append(f"phase2 must be None, True or False, found {self.phase2!r}")
        if self.exact is False and self.incumbent is False:
            out.append("exact=False needs incumbent=True (the heuristic is the answer)")
        return out

    def __post_init__(self) -> None:
        found = self.defects()
        if found:  # a field of the wrong type is a TypeError too (ArgumentTypeError is both)
            error = ArgumentTypeError if self._wrong_types() else InvalidProblemError
            raise error(found, source="TwillSettings")

    def _wrong_types(self) -> bool:
        """Whether a field has the wrong type (not only a value out of range)."""
        if any(not isinstance(getattr(self, n), bool) for n in _FLAGS):
            return True
        if self.phase2 is not None and not isinstance(self.phase2, bool):
            return True
        return any(
            (v := getattr(self, n)) is not None
            and (isinstance(v, bool) or not isinstance(v, int | float))
            for n in _LIMITS
        )

    def to_dict(self) -> dict[str, Any]:
        """JSON-ready fields."""
        return asdict(self)


def twill_settings(options: Any) -> TwillSettings:
    """``options.twill``, or the defaults when it is ``None``; anything else is an error
    (``options`` is a :class:`~twill.options.SolverOptions`)."""
    return method_settings(options, "twill", TwillSettings)


def twill_options(
    settings: TwillSettings,
    deadline: Deadline | float | None = None,
    *,
    threads: int = 1,
    seed: int = 0,
) -> SolverOptions:
    """Options that carry ``settings`` and end at ``deadline`` (a
    :class:`~twill.deadline.Deadline` or its ``time.monotonic()`` end; ``None``: no limit):
    for a caller that already runs against a deadline (a worker process of Algorithm 1, the
    Triton diagnostics), so a nested solve keeps that clock instead of starting a new one."""
    options = SolverOptions(threads=threads, seed=seed, twill=settings)
    return options if deadline is None else replace(options, deadline=Deadline.of(deadline))
