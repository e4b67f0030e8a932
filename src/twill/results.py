"""Result vocabulary shared by every solver of both families.

* :class:`Status`: the outcome of one call (a timeout is UNKNOWN, never INFEASIBLE).
* :class:`Timings`: build / solve / verify seconds.
* :class:`SolveResult`: the one result shape; solver-specific results extend it or convert to
  it (:meth:`SolveResult.to_dict` is JSON-ready).
* :class:`Violation`: one broken rule with its witness, used by every verifier.
* :class:`Verdict`: what a problem's ``verify`` returns (every violation, empty when valid).
* :class:`WarpSchedule`: a joint modulo schedule and warp assignment (Twill Phase 2), the value
  that codegen, the pictures and the warp verifier take.

Examples
--------
>>> r = SolveResult(Status.OPTIMAL, solution={"a": 0}, objective=2, objective_unit="cycles")
>>> r.to_dict()["status"], r.has_solution
('optimal', True)
"""

from __future__ import annotations

import functools
import inspect
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from enum import Enum
from types import MappingProxyType
from typing import TYPE_CHECKING, Any, TypeVar

if TYPE_CHECKING:
    from twill.sched.ir import DependenceGraph

__all__ = [
    "Status",
    "Timings",
    "SolveResult",
    "Violation",
    "Verdict",
    "WarpSchedule",
    "takes_warp_schedule",
]

_R = TypeVar("_R")


class Status(str, Enum):
    """Outcome of one solver call.

    ``UNKNOWN`` means a time or node limit was hit before a proof: it is never read as
    ``INFEASIBLE``.
    """

    OPTIMAL = "optimal"
    FEASIBLE = "feasible"
    INFEASIBLE = "infeasible"
    UNKNOWN = "unknown"
    ERROR = "error"

    @property
    def has_solution(self) -> bool:
        """True when the status carries a solution (optimal or feasible)."""
        return self in (Status.OPTIMAL, Status.FEASIBLE)

    @property
    def is_proof(self) -> bool:
        """True when the verdict is proven (optimal or infeasible)."""
        return self in (Status.OPTIMAL, Status.INFEASIBLE)


@dataclass(frozen=True)
class Timings:
    """Wall seconds spent building the model, solving it and verifying the answer."""

    build: float = 0.0
    solve: float = 0.0
    verify: float = 0.0

    @property
    def total(self) -> float:
        """Sum of the three phases."""
        return self.build + self.solve + self.verify

    def to_dict(self) -> dict[str, float]:
        """JSON-ready seconds, rounded to 0.1 ms."""
        return {k: round(getattr(self, k), 4) for k in ("build", "solve", "verify")}


def _jsonable(value: Any) -> Any:
    """``value`` with mappings, sequences, enums and ``to_dict`` objects made JSON-ready."""
    if callable(getattr(value, "to_dict", None)):
        try:
            return value.to_dict()
        except TypeError:  # a to_dict that needs context (e.g. a fusion plan): use its text
            return str(value)
    if isinstance(value, Enum):
        return value.value
    if isinstance(value, Mapping):
        return {str(k): _jsonable(v) for k, v in value.items()}
    if isinstance(value, list | tuple | set | frozenset):
        return [_jsonable(v) for v in value]
    if value is None or isinstance(value, bool | int | float | str):
        return value
    return str(value)


@dataclass(frozen=True)
class SolveResult:
    """The one result shape: what every solver returns or extends.

    Parameters
    ----------
    status
        OPTIMAL and FEASIBLE carry a solution; INFEASIBLE is a proof; UNKNOWN is a limit hit.
    solution
        The answer (a schedule, a mapping, ...); ``None`` unless ``status.has_solution``.
    objective, objective_unit
        The value minimised and its unit (``"cycles"``, ``"pJ"``, ...).
    bound
        A proven lower bound on the objective (``None`` when none is known).
    certificate
        What was proved, in solver-specific JSON-ready form (e.g. every smaller II infeasible).
    timings
        Build, solve and verify seconds.
    stats
        Solver statistics (nodes, iterations, ...); each also reads as an attribute
        (``result.iterations``), as do the attributes of the solution that are no field here.
    settings
        The settings of the call, enough to replay it.
    seed
        The seed used.
    """

    status: Status
    solution: Any = None
    objective: float | None = None
    objective_unit: str = ""
    bound: float | None = None
    certificate: Any = None
    timings: Timings = field(default_factory=Timings)
    stats: Mapping[str, Any] = field(default_factory=dict, repr=False)
    settings: Mapping[str, Any] = field(default_factory=dict, repr=False)
    seed: int | None = None

    @property
    def has_solution(self) -> bool:
        """True when ``status`` carries a solution."""
        return self.status.has_solution

    @property
    def seconds(self) -> float:
        """Wall seconds of the call (``timings.total``)."""
        return self.timings.total

    def __getattr__(self, name: str) -> Any:
        """A method's own statistic (``stats[name]``) or an attribute of its solution read as
        an attribute, e.g. ``result.iterations`` of a GauS run or ``result.II`` of its
        schedule; only names that are no field of the result itself reach here."""
        if name.startswith("_"):  # copy and pickle probe before the fields exist
            raise AttributeError(name)
        stats = self.__dict__.get("stats")
        if stats is not None and name in stats:
            return stats[name]
        solution = self.__dict__.get("solution")
        if solution is not None and hasattr(solution, name):
            return getattr(solution, name)
        raise AttributeError(f"{type(self).__name__} has no field, statistic or solution "
                             f"attribute {name!r}")  # fmt: skip

    def to_dict(self) -> dict[str, Any]:
        """JSON-ready dictionary of every field."""
        return {
            "status": self.status.value,
            "solution": _jsonable(self.solution),
            "objective": self.objective,
            "objective_unit": self.objective_unit,
            "bound": self.bound,
            "certificate": _jsonable(self.certificate),
            "timings": self.timings.to_dict(),
            "stats": _jsonable(self.stats),
            "settings": _jsonable(self.settings),
            "seed": self.seed,
        }


@dataclass(frozen=True)
class Violation:
    """One broken rule, with its witness.

    Parameters
    ----------
    rule
        Machine-readable rule name: ``"dependence"``, ``"capacity"``, ``"missing"``,
        ``"extra"``, ``"negative_start"``, ``"non_integer_start"``, ``"invalid_II"``,
        ``"unknown_unit"``.
    at
        Where: e.g. ``{"edge": "S->P", "distance": 0}`` or ``{"fu": "TC", "slot": 0}``.
    value
        The offending quantity (slack achieved, units used, the bad start, ...).
    limit
        The bound it had to respect (``None`` when not numeric).
    message
        A readable sentence.
    """

    rule: str
    at: dict[str, Any] = field(default_factory=dict)
    value: Any = None
    limit: Any = None
    message: str = ""

    def __str__(self) -> str:
        where = ", ".join(f"{k}={v}" for k, v in self.at.items())
        text = self.message or f"value {self.value!r}, limit {self.limit!r}"
        return f"[{self.rule}{' @ ' + where if where else ''}] {text}"


@dataclass(frozen=True)
class Verdict:
    """Outcome of verifying one solution: every violation found (none means valid).

    Examples
    --------
    >>> Verdict(()).ok
    True
    >>> Verdict((Violation("capacity", {"fu": "TC"}, value=2, limit=1),)).ok
    False
    """

    violations: tuple[Violation, ...] = ()

    @property
    def ok(self) -> bool:
        """True when nothing is violated."""
        return not self.violations

    def __bool__(self) -> bool:
        return self.ok

    def raise_if_invalid(self, what: str) -> None:
        """Raise :class:`~twill.errors.VerificationError` naming ``what`` unless ``ok``."""
        if self.violations:
            from twill.errors import VerificationError

            raise VerificationError(list(self.violations), what=what)


def _slots(raw: int | Sequence[int]) -> tuple[int, ...]:
    return (int(raw),) if isinstance(raw, int) else tuple(int(w) for w in raw)


@dataclass(frozen=True)
class WarpSchedule:
    """A joint modulo schedule with its warp assignment (Twill paper §4, Phase 2 output).

    Parameters
    ----------
    graph
        The loop body.
    schedule
        Op -> start cycle ``M(v)`` (minimum 0).
    assignment
        Op -> warp slots (a tuple; most ops use one slot).
    I
        Initiation interval.
    L
        Schedule length ``max_v M(v) + cycles(v)``.

    Examples
    --------
    >>> from twill.kernels import flash_attention_forward_simplified
    >>> ws = WarpSchedule.of(flash_attention_forward_simplified(), {"S": 0, "P": 2, "O": 3},
    ...                      {"S": 0, "P": 0, "O": 0}, 2)
    >>> ws.L, ws.warps
    (4, {'S': 0, 'P': 0, 'O': 0})
    """

    graph: DependenceGraph = field(repr=False)
    schedule: Mapping[str, int]
    assignment: Mapping[str, tuple[int, ...]]
    I: int  # noqa: E741 (the paper's name)
    L: int

    @classmethod
    def of(
        cls,
        graph: DependenceGraph | WarpSchedule,
        schedule: Mapping[str, int] | None = None,
        assignment: Mapping[str, int | Sequence[int]] | None = None,
        II: int | None = None,
        L: int | None = None,
    ) -> WarpSchedule:
        """Build from the parts (``assignment=None``: every op on warp 0; ``L=None``: computed).

        A :class:`WarpSchedule` given as ``graph`` is returned unchanged, so functions can
        accept either form.
        """
        if isinstance(graph, WarpSchedule):
            return graph
        if schedule is None or II is None:
            raise TypeError("WarpSchedule.of needs graph, schedule and II")
        starts = {v: int(t) for v, t in schedule.items()}
        if L is None:
            L = max(starts[v] + graph.instruction(v).cycles for v in starts)
        slots = {v: _slots(0 if assignment is None else assignment[v]) for v in graph.names}
        return cls(graph, MappingProxyType(starts), MappingProxyType(slots), int(II), int(L))

    @property
    def warps(self) -> dict[str, int]:
        """Op -> its first warp slot."""
        return {v: ws[0] for v, ws in self.assignment.items()}

    def to_dict(self) -> dict[str, Any]:
        """JSON-ready fields (the graph by name)."""
        return {
            "graph": self.graph.name,
            "I": self.I,
            "L": self.L,
            "schedule": dict(self.schedule),
            "assignment": {v: list(ws) for v, ws in self.assignment.items()},
        }


def takes_warp_schedule(fn: Callable[..., _R]) -> Callable[..., _R]:
    """Let ``fn(ws, *, options)`` also be called with a schedule's parts, as documented.

    The wrapped function takes ``(graph, schedule=None, assignment=None, II=None, L=None)``
    (the parameters of :meth:`WarpSchedule.of`) followed by ``fn``'s keyword-only options, and
    calls ``fn(WarpSchedule.of(graph, schedule, assignment, II, L), **options)``. So the
    drawing and code-generation entries share one parameter list and one normalisation.

    Examples
    --------
    >>> @takes_warp_schedule
    ... def period(ws: WarpSchedule, *, scale: int = 1) -> int:
    ...     return ws.I * scale
    >>> from twill.kernels import flash_attention_forward_simplified
    >>> period(flash_attention_forward_simplified(), {"S": 0, "P": 2, "O": 3}, II=2, scale=3)
    6
    """
    parts = list(inspect.signature(WarpSchedule.of).parameters.values())
    names = [p.name for p in parts]
    options = list(inspect.signature(fn).parameters.values())[1:]
    signature = inspect.signature(fn).replace(parameters=[*parts, *options])

    @functools.wraps(fn)
    def wrapper(*args: Any, **kwargs: Any) -> _R:
        given = signature.bind(*args, **kwargs).arguments
        ws = WarpSchedule.of(*(given.pop(name, None) for name in names))
        return fn(ws, **given)

    wrapper.__signature__ = signature  # type: ignore[attr-defined]
    return wrapper
