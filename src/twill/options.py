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


def _merged(name: str, keyword: Any, option: Any, default: Any, field_name: str = "") -> Any:
    """One field of :meth:`SolverOptions.overrides`: the value set (not ``default``) in either
    place, or an error when both are set to different values."""
    if keyword is default or (default is not None and keyword == default):
        return option
    if option is default or (default is not None and option == default) or option == keyword:
        return keyword
    raise InvalidProblemError(
        f"{name}={keyword!r} as a keyword and {field_name or name}={option!r} in the options: "
        "give it once"
    )


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
        Called with one :class:`~twill.progress.ProgressEvent` per step; the core never
        prints.
    gaus
        GauS's own settings, a :class:`twill.sched.gaus.alm.GauSSettings` (``None``: the
        defaults of the problem's formulation). Typed where it is defined; this shared module
        does not import a solver family, so the solver checks the type.
    gumbel
        The Gumbel-softmax baseline's settings, a
        :class:`twill.sched.baselines.categorical.GumbelSettings` (``None``: its defaults).

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
    gaus: Any = None
    gumbel: Any = None

    def overrides(self, time_key: str = "time_limit", **given: Any) -> dict[str, Any]:
        """The keyword values of a solver that also takes ``threads``, a time limit (under
        ``time_key``) and ``on_progress`` one by one, merged with these options.

        ``given`` holds the values the caller received as keywords. The merge keeps both
        (decisions.md, "explicit keywords and options"): a field set in only one place is
        taken from there; set in both to different values it is an error, never a silent
        choice. A keyword at its default (``threads=1``, ``None``) counts as not set, and so
        does an options field at its default. ``seed`` (default 0) is merged the same way
        when the caller passes it (solvers that draw random numbers).

        >>> SolverOptions(time_limit=5, threads=2).overrides("total_time_limit")
        {'threads': 2, 'total_time_limit': 5.0}
        >>> SolverOptions(time_limit=5).overrides(threads=4)["threads"]
        4
        >>> SolverOptions(threads=2).overrides(threads=4)  # doctest: +ELLIPSIS
        Traceback (most recent call last):
        ...
        twill.errors.InvalidProblemError: threads=4 as a keyword and threads=2 in the options: ...
        """
        out: dict[str, Any] = {"threads": _merged("threads", given.get("threads", 1),
                                                  self.threads, 1)}  # fmt: skip
        limit = _merged(time_key, given.get(time_key), self.time_limit, None, "time_limit")
        if limit is not None:
            out[time_key] = limit
        progress = _merged("on_progress", given.get("on_progress"), self.on_progress, None)
        if progress is not None:
            out["on_progress"] = progress
        if "seed" in given:
            out["seed"] = _merged("seed", given["seed"], self.seed, 0)
        return out

    def __post_init__(self) -> None:
        object.__setattr__(self, "time_limit", _time_limit(self.time_limit))
        _positive_int("threads", self.threads)
        if isinstance(self.seed, bool) or not isinstance(self.seed, int):
            raise InvalidProblemError(f"seed must be an integer, found {self.seed!r}")
        object.__setattr__(self, "extra", MappingProxyType(dict(self.extra)))

    def __reduce__(self) -> tuple[Any, ...]:
        """Pickled with a plain dict for ``extra`` (a read-only view does not pickle), so that
        options and their callback reach a worker process."""
        fields = (self.time_limit, self.threads, self.seed, dict(self.extra))
        return (type(self), (*fields, self.on_progress, self.gaus, self.gumbel))

    def to_dict(self) -> dict[str, Any]:
        """JSON-ready settings (the callback is left out)."""
        return {
            "time_limit": self.time_limit,
            "threads": self.threads,
            "seed": self.seed,
            "extra": dict(self.extra),
            **{k: getattr(self, k).to_dict() for k in ("gaus", "gumbel") if getattr(self, k)},
        }
