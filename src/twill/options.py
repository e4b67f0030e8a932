"""Solver settings shared by every solver of both families.

:class:`SolverOptions` carries what every backend understands: a time limit that becomes a
deadline, a thread count, a worker count, a seed and a progress callback. Backend-specific
knobs travel untouched in ``extra``; each method's own knobs live in its typed settings field
(``gaus``, ``gumbel``, ``twill``, ...).

**A deadline, not a duration** (issues 40, 51). ``time_limit`` is the budget of the *whole*
call. The front door anchors it once (:meth:`SolverOptions.start`) as the options'
:class:`~twill.deadline.Deadline`, the one deadline class; every level below asks the same
options for the time left (:meth:`~SolverOptions.remaining`, :meth:`~SolverOptions.within`,
:meth:`~SolverOptions.expired`) and a nested call gets :meth:`~SolverOptions.child` options
(``seconds`` or ``fraction=`` of the time left), whose deadline can only be earlier. So nested
solves can never together outlive the deadline. :meth:`~SolverOptions.start` on options that
already carry a deadline returns them unchanged: a solver called by another solver keeps its
caller's clock. Pickled (to a worker process), the deadline travels as the seconds left.

Examples
--------
>>> SolverOptions(time_limit=10, threads=2, seed=1).time_limit
10.0
>>> o = SolverOptions(time_limit=10).start()
>>> 9.0 < o.remaining() <= 10.0, o.child(2).remaining() <= 2.0, o.child(60).remaining() <= 10.0
(True, True, True)
>>> SolverOptions().start().remaining() is None
True
>>> SolverOptions(threads=0)
Traceback (most recent call last):
...
twill.errors.InvalidProblemError: threads must be an integer in [1, 1024], found 0 (int)
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass, field, fields, replace
from types import MappingProxyType
from typing import Any, TypeVar

from twill.deadline import MIN_SLICE, Deadline
from twill.errors import ArgumentTypeError, InvalidProblemError

_S = TypeVar("_S")

__all__ = ["MIN_SLICE", "SolverOptions"]

#: The fields holding one method's typed settings (read through :func:`method_settings`).
_METHOD_SLOTS = ("gaus", "gumbel", "twill", "cosa", "search", "fadiff")


@dataclass(frozen=True)
class SolverOptions:
    """What every solver takes besides its problem.

    Parameters
    ----------
    time_limit
        Wall-clock seconds for the whole call (``None``: no limit). Hitting it gives UNKNOWN
        (or the best solution found), never INFEASIBLE.
    threads
        Solver threads (>= 1): the threads of one CBC, CP-SAT, z3 or torch solve.
    workers
        Worker processes (>= 1) of a solver that runs independent solves side by side
        (process-level parallelism, separate from ``threads``).
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
    twill
        The exact scheduler's settings (Phase 1, the minimum-I search, Phase 2, Algorithm 1),
        a :class:`twill.sched.exact.settings.TwillSettings` (``None``: its defaults).
    cosa
        CoSA's settings (and those of its variants ``cosa-rerank``, ``cosa-edp``), a
        :class:`twill.mapping.cosa.solve.CoSASettings` (``None``: its defaults).
    search
        The search mappers' settings (random, hybrid, exhaustive), a
        :class:`twill.mapping.search.common.SearchSettings` (``None``: each mapper's defaults).
    fadiff
        FADiff's settings, a :class:`twill.mapping.fadiff.train.FADiffSettings` (``None``:
        its defaults).
    deadline
        The :class:`~twill.deadline.Deadline` of the call (the absolute end on the
        ``time.monotonic()`` clock), set by :meth:`start` from ``time_limit`` (leave it
        ``None``).
    method
        The registered solver :func:`twill.solve` runs (``twill``, ``gaus``, ``cosa``, ...;
        :func:`twill.registry.solvers` lists them); ``None``: the problem type's default.

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
    workers: int = 1
    twill: Any = None
    cosa: Any = None
    search: Any = None
    fadiff: Any = None
    deadline: Deadline | None = field(default=None, compare=False, repr=False)
    method: str | None = None

    # -- the deadline ------------------------------------------------------------------------

    def start(self, at: float | None = None) -> SolverOptions:
        """These options with their :class:`~twill.deadline.Deadline` anchored: ``at +
        time_limit`` (``at``: a ``time.monotonic()`` value, default now; the command line
        passes the moment the command began). Options that carry a deadline already (a
        caller's) keep it, cut to ``time_limit`` from now when that is earlier: so a nested
        solve keeps its caller's clock (started options are unchanged: their deadline is
        never later than ``time_limit`` from now), and a caller can give each call a cap
        (``time_limit``) inside its own end (``deadline``). Every solver calls it on entry."""
        if self.deadline is None:
            return replace(self, deadline=Deadline.after(self.time_limit, at))
        capped = self.deadline.child(self.time_limit)  # a caller's end and our own limit
        return self if capped is self.deadline else replace(self, deadline=capped)

    @property
    def clock(self) -> Deadline:
        """The deadline of these options (:meth:`start`-ed now if it was not)."""
        return self.start().deadline  # type: ignore[return-value]

    def remaining(self) -> float | None:
        """Seconds left before the deadline (``None``: no limit; never below 0). Options not
        yet :meth:`start`-ed have their whole ``time_limit`` left."""
        if self.deadline is None:
            return self.time_limit
        return self.deadline.remaining()

    def expired(self) -> bool:
        """True when less than :data:`MIN_SLICE` seconds are left: too little to start a
        solver call."""
        left = self.remaining()
        return left is not None and left < MIN_SLICE

    def within(self, limit: float | None = None) -> float | None:
        """The seconds one solver call may take: the smaller of its own ``limit`` and the
        time left (``None``: neither is set; never below 0.01 s, a valid solver limit)."""
        return self.clock.within(limit)

    def child(self, limit: float | None = None, *, fraction: float | None = None) -> SolverOptions:
        """Options for a nested call that may take at most ``limit`` more seconds, or
        ``fraction`` of the time left: the only way a sub-solve gets time. Its deadline is
        the earlier of this one and the sub-budget's (:meth:`Deadline.child`: it can only
        shrink)."""
        started = self.start()
        clock = started.clock
        sub = clock.child(limit, fraction=fraction)
        return started if sub is clock else replace(started, deadline=sub)

    def __post_init__(self) -> None:
        """Every field checked once, here: a wrong type is a ``TypeError``, a value out of
        range an :class:`~twill.errors.InvalidProblemError`, both naming the field."""
        from twill.validation import MAX_THREADS, check_callable, check_int, check_time_limit

        object.__setattr__(self, "time_limit", check_time_limit(self.time_limit))
        if self.deadline is not None:  # a monotonic end (older callers) becomes a Deadline
            object.__setattr__(self, "deadline", Deadline.of(self.deadline))
        check_int(self.threads, "threads", maximum=MAX_THREADS)
        check_int(self.workers, "workers", maximum=MAX_THREADS)
        check_int(self.seed, "seed", minimum=-(2**63))
        if not isinstance(self.extra, Mapping):
            raise ArgumentTypeError(
                f"extra must be a mapping of backend settings, found {type(self.extra).__name__}"
            )
        check_callable(self.on_progress, "on_progress")
        object.__setattr__(self, "extra", MappingProxyType(dict(self.extra)))
        if self.method is not None and not isinstance(self.method, str):
            raise ArgumentTypeError(f"method must be a solver name or None, found {self.method!r}")

    @classmethod
    def of(cls, options: object) -> SolverOptions:
        """``options`` as a public ``solve(problem, options)`` takes them: ``None`` (the
        defaults) or a :class:`SolverOptions`; anything else (a dict, a string, a number) is
        a ``TypeError`` naming the argument, raised at the entry rather than deep inside."""
        if options is None:
            return cls()
        if not isinstance(options, SolverOptions):
            raise ArgumentTypeError(
                "options must be a twill.options.SolverOptions or None, found "
                f"{type(options).__name__} {str(options)[:40]!r}"
            )
        return options

    def __reduce__(self) -> tuple[Any, ...]:
        """Pickled with a plain dict for ``extra`` (a read-only view does not pickle) and a
        started deadline as the seconds left (re-anchored when unpickled), so that options
        and their callback reach a worker process."""
        values = (getattr(self, f.name) for f in fields(self))
        plain = tuple(dict(v) if isinstance(v, MappingProxyType) else v for v in values)
        return (_unpickled, (type(self), plain))

    def to_dict(self) -> dict[str, Any]:
        """JSON-ready settings (the callback is left out)."""
        out = {k: getattr(self, k) for k in ("time_limit", "threads", "seed", "workers")}
        if self.method:
            out["method"] = self.method
        out["extra"] = dict(self.extra)
        return out | {k: v.to_dict() for k in _METHOD_SLOTS if (v := getattr(self, k))}


def _unpickled(cls: type[SolverOptions], values: tuple[Any, ...]) -> Any:
    """Options rebuilt in the receiving process (a started deadline re-anchors itself on the
    receiving clock, :class:`~twill.deadline.Deadline`)."""
    return cls(*values)


def method_settings(options: SolverOptions, name: str, kind: type[_S]) -> _S:
    """``options.<name>``, a ``kind`` (its defaults when unset); any other type is refused.

    Each solver family reads its own typed settings slot through this one check, so that a
    settings object of the wrong method is an error naming the slot, never silently ignored.
    """
    value = getattr(options, name)
    if value is None:
        return kind()
    if not isinstance(value, kind):
        raise InvalidProblemError(
            f"options.{name} must be a {kind.__name__}, found {type(value).__name__}"
        )
    return value
