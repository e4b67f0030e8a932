"""Solver settings shared by every solver of both families (house rule 8, style 3.5).

:class:`SolverOptions` carries what every backend understands: a wall-clock limit, a thread
count, a seed and a progress callback. Backend-specific knobs travel untouched in ``extra``.
Method settings (GauS formulations, FADiff temperatures, ...) stay in their own settings
objects beside it.

Examples
--------
>>> SolverOptions(time_limit=10, threads=2, seed=1).time_limit
10.0
>>> SolverOptions(threads=0)
Traceback (most recent call last):
...
twill.errors.InvalidProblemError: threads must be an integer >= 1, found 0
"""

from __future__ import annotations

import math
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from types import MappingProxyType
from typing import Any

from twill.errors import InvalidProblemError

__all__ = ["SolverOptions"]


def _time_limit(value: object) -> float | None:
    if value is None:
        return None
    if isinstance(value, bool) or not isinstance(value, int | float):
        raise InvalidProblemError(f"time_limit must be seconds or None, found {value!r}")
    if not math.isfinite(value) or value <= 0:
        raise InvalidProblemError(f"time_limit must be finite and > 0 seconds, found {value!r}")
    return float(value)


def _positive_int(name: str, value: object) -> int:
    if isinstance(value, bool) or not isinstance(value, int) or value < 1:
        raise InvalidProblemError(f"{name} must be an integer >= 1, found {value!r}")
    return value


@dataclass(frozen=True)
class SolverOptions:
    """What every solver takes besides its problem.

    Parameters
    ----------
    time_limit
        Wall-clock seconds for the whole call (``None``: no limit). Hitting it gives UNKNOWN
        (or the best solution found), never INFEASIBLE.
    threads
        Solver threads (>= 1).
    seed
        Seed of every random choice; the same seed and inputs give the same result.
    extra
        Backend-specific settings passed through untouched (read-only view).
    on_progress
        Called with progress events (solver-defined objects); the core never prints.

    Raises
    ------
    InvalidProblemError
        A value out of range (the message names the field, what is allowed and what was found).
    """

    time_limit: float | None = None
    threads: int = 1
    seed: int = 0
    extra: Mapping[str, Any] = field(default_factory=dict)
    on_progress: Callable[[Any], None] | None = field(default=None, compare=False, repr=False)

    def overrides(self, time_key: str = "time_limit") -> dict[str, Any]:
        """The keyword values these options replace in a solver that also takes them one by
        one: ``threads`` always, the time limit (under ``time_key``) and ``on_progress`` when
        set. ``seed`` is left to solvers that draw random numbers.

        >>> SolverOptions(time_limit=5, threads=2).overrides("total_time_limit")
        {'threads': 2, 'total_time_limit': 5.0}
        """
        out: dict[str, Any] = {"threads": self.threads}
        if self.time_limit is not None:
            out[time_key] = self.time_limit
        if self.on_progress is not None:
            out["on_progress"] = self.on_progress
        return out

    def __post_init__(self) -> None:
        object.__setattr__(self, "time_limit", _time_limit(self.time_limit))
        _positive_int("threads", self.threads)
        if isinstance(self.seed, bool) or not isinstance(self.seed, int):
            raise InvalidProblemError(f"seed must be an integer, found {self.seed!r}")
        object.__setattr__(self, "extra", MappingProxyType(dict(self.extra)))

    def to_dict(self) -> dict[str, Any]:
        """JSON-ready settings (the callback is left out)."""
        return {
            "time_limit": self.time_limit,
            "threads": self.threads,
            "seed": self.seed,
            "extra": dict(self.extra),
        }
