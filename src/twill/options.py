"""Solver settings shared by every solver of both families.

:class:`SolverOptions` carries what every backend understands: a time limit that becomes a
deadline, a thread count, a worker count, a seed and a progress callback. Backend-specific
knobs travel untouched in ``extra``; each method's own knobs are one typed settings object,
given by the name its class registers (``SolverOptions(twill=TwillSettings(...))``): a
settings class is a :class:`MethodSettings` that names its slot where it is defined
(``class TwillSettings(MethodSettings, slot="twill")``), so this module names no solver family
and a new method adds its settings without an edit here.

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
from dataclasses import MISSING, dataclass, field, fields, replace
from types import MappingProxyType
from typing import Any, TypeVar

from twill.deadline import MIN_SLICE, Deadline
from twill.errors import ArgumentTypeError, InvalidProblemError

_S = TypeVar("_S")

__all__ = ["MIN_SLICE", "MethodSettings", "SolverOptions"]

#: Slot name -> the settings class registered for it (:class:`MethodSettings`).
_SLOTS: dict[str, type] = {}


class MethodSettings:
    """Base of every method's settings dataclass. A subclass names the slot it fills in
    :class:`SolverOptions` where it is defined, ``class FooSettings(MethodSettings,
    slot="foo")``; its subclasses share that slot. Then ``SolverOptions(foo=FooSettings())``
    and ``options.foo`` work, with no edit to this module."""

    slot: str = ""

    def __init_subclass__(cls, slot: str | None = None, **kwargs: Any) -> None:
        super().__init_subclass__(**kwargs)
        if slot is None:
            return
        taken = _SLOTS.get(slot)
        if taken is not None and taken.__qualname__ != cls.__qualname__:
            raise TypeError(f"settings slot {slot!r} is taken by {taken.__qualname__}")
        if slot in _FIELD_NAMES:
            raise TypeError(f"settings slot {slot!r} is a SolverOptions field")
        cls.slot = slot
        _SLOTS[slot] = cls

    def to_dict(self) -> dict[str, Any]:
        """JSON-ready settings: a dataclass's fields by name (subclasses may say more)."""
        from dataclasses import asdict, is_dataclass

        return asdict(self) if is_dataclass(self) else {}


@dataclass(frozen=True, init=False)
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
    methods
        Each method's settings by slot (read-only view); given as keywords, ``twill=...``,
        ``gaus=...``, one per registered :class:`MethodSettings` class (``None``: that
        method's defaults). The slots of this package: ``twill``
        (:class:`twill.sched.exact.settings.TwillSettings`), ``gaus``
        (:class:`twill.sched.gaus.alm.GauSSettings`), ``gumbel``
        (:class:`twill.sched.baselines.categorical.GumbelSettings`), ``cosa``
        (:class:`twill.mapping.cosa.solve.CoSASettings`), ``search``
        (:class:`twill.mapping.search.common.SearchSettings`) and ``fadiff``
        (:class:`twill.mapping.fadiff.train.FADiffSettings`). Read back as attributes
        (``options.twill``); a slot not given reads ``None``.
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
    workers: int = 1
    deadline: Deadline | None = field(default=None, compare=False, repr=False)
    method: str | None = None
    methods: Mapping[str, Any] = field(default_factory=dict)

    def __init__(self, **values: Any) -> None:
        """Keyword arguments only: the fields above, then each method's settings by slot
        (``twill=TwillSettings(...)``); ``methods=`` takes them as one mapping too."""
        for f in fields(self):
            if f.name in values:
                value = values.pop(f.name)
            elif f.default_factory is not MISSING:
                value = f.default_factory()
            else:
                value = f.default
            object.__setattr__(self, f.name, value)
        object.__setattr__(self, "methods", _method_slots({**(self.methods or {}), **values}))
        self.__post_init__()

    def __getattr__(self, name: str) -> Any:  # noqa: ANN401 (a method's settings)
        """A method's settings by slot name (``options.twill``); ``None`` when not given."""
        if name.startswith("__") or name not in _SLOTS:
            raise AttributeError(f"SolverOptions has no attribute or settings slot {name!r}")
        return self.__dict__.get("methods", {}).get(name)

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
        values = {f.name: getattr(self, f.name) for f in fields(self)}
        plain = {k: dict(v) if isinstance(v, MappingProxyType) else v for k, v in values.items()}
        return (_unpickled, (type(self), plain))

    def to_dict(self) -> dict[str, Any]:
        """JSON-ready settings (the callback is left out)."""
        out = {k: getattr(self, k) for k in ("time_limit", "threads", "seed", "workers")}
        if self.method:
            out["method"] = self.method
        out["extra"] = dict(self.extra)
        return out | {k: v.to_dict() for k, v in self.methods.items()}


_FIELD_NAMES = frozenset(f.name for f in fields(SolverOptions))


def _method_slots(given: Mapping[str, Any]) -> MappingProxyType:
    """The method settings given by slot, each checked against the class registered for its
    slot (``None`` values dropped: that method's defaults)."""
    out = {}
    for name, value in given.items():
        kind = _SLOTS.get(name)
        if kind is None:
            known = ", ".join(sorted(_SLOTS)) or "none registered"
            raise ArgumentTypeError(f"SolverOptions got an unknown setting {name!r} "
                                    f"(method settings slots: {known})")  # fmt: skip
        if value is None:
            continue
        if not isinstance(value, kind):
            raise InvalidProblemError(
                f"options.{name} must be a {kind.__name__}, found {type(value).__name__}"
            )
        out[name] = value
    return MappingProxyType(out)


def _unpickled(cls: type[SolverOptions], values: dict[str, Any]) -> Any:
    """Options rebuilt in the receiving process (a started deadline re-anchors itself on the
    receiving clock, :class:`~twill.deadline.Deadline`)."""
    return cls(**values)


def method_settings(options: SolverOptions, name: str, kind: type[_S]) -> _S:
    """``options.<name>``, a ``kind`` (its defaults when unset); any other type is refused.

    Each solver family reads its own typed settings slot through this one check, so that a
    settings object of the wrong method is an error naming the slot, never silently ignored.
    """
    value = options.methods.get(name)
    if value is None:
        return kind()
    if not isinstance(value, kind):
        raise InvalidProblemError(
            f"options.{name} must be a {kind.__name__}, found {type(value).__name__}"
        )
    return value
