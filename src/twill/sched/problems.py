"""Scheduling problems as types: ``check()`` before solving, ``verify()`` after.

* :class:`ModuloProblem`: a loop body (:class:`~twill.sched.ir.DependenceGraph`, which carries its
  machine) and the range of initiation intervals to search (Twill paper §3.1, Phase 1 §5).
* :class:`WarpSpecProblem`: the same loop body, scheduled jointly with a warp assignment
  (paper §4, Figs. 4–6; Phase 2).

``check()`` raises :class:`~twill.errors.InvalidProblemError` listing every defect (built from
:mod:`twill.sched.validate`); ``verify()`` returns a :class:`~twill.results.Verdict` built from
the independent verifiers :mod:`twill.sched.verify` and :mod:`twill.sched.verify_warps`, which
never import a solver.

Examples
--------
>>> from twill.kernels import flash_attention_forward_simplified
>>> p = ModuloProblem(flash_attention_forward_simplified(), max_II=5)
>>> p.check()
>>> p.verify({"S": 0, "P": 2, "O": 3}, 2).ok
True
>>> p.verify({"S": 0, "P": 0, "O": 3}, 2).ok
False
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass

from twill.errors import InvalidProblemError
from twill.results import Verdict, WarpSchedule
from twill.sched.ir import DependenceGraph
from twill.sched.validate import graph_defects
from twill.sched.verify import verify_modulo_schedule
from twill.sched.verify_warps import WarpRules, verify_warp_schedule

__all__ = [
    "PROBLEM_MODULO",
    "PROBLEM_WARP_SPECIALISATION",
    "PROBLEM_UNION",
    "PROBLEM_TEXT",
    "has_warp_model",
    "ModuloProblem",
    "WarpSpecProblem",
    "fixed_II",
]

PROBLEM_MODULO = "modulo"
PROBLEM_WARP_SPECIALISATION = "modulo+warp-specialisation"
#: Twill's problem for a kernel of known CTA width (:mod:`twill.sched.exact.single`).
PROBLEM_UNION = "modulo+warp-specialisation|single-partition"
PROBLEM_TEXT = {
    PROBLEM_MODULO: "modulo scheduling",
    # the width of each operation (its warp groups) is an input, not a decision: a schedule
    # that spreads an operation over more warp groups is outside this problem
    PROBLEM_WARP_SPECIALISATION: (
        "modulo scheduling with warp specialisation, each operation on its given warp groups"
    ),
    PROBLEM_UNION: (
        "modulo scheduling: warp specialisation (each operation on its given warp groups), or "
        "one partition (every operation on all the CTA's warps, at most 3 stages)"
    ),
}


def has_warp_model(graph: DependenceGraph) -> bool:
    """True when the graph's machine has more than one warp, so that warp specialisation
    (Phase 2) is part of the problem: the GPU kernels of :mod:`twill.kernels`. A HatScheT loop
    or a JSON/YAML graph without ``machine.warps`` has one warp and is a modulo problem."""
    return graph.machine.warps > 1


def _ii_defects(min_ii: int | None, max_ii: int | None) -> list[str]:
    out = []
    for name, value in (("min_II", min_ii), ("max_II", max_ii)):
        if value is not None and (isinstance(value, bool) or not isinstance(value, int)):
            out.append(f"{name} must be an integer >= 1 or None, found {value!r}")
        elif value is not None and value < 1:
            out.append(f"{name} must be >= 1, found {value}")
    if not out and min_ii is not None and max_ii is not None and min_ii > max_ii:
        out.append(f"min_II ({min_ii}) must not exceed max_II ({max_ii})")
    return out


@dataclass(frozen=True)
class ModuloProblem:
    """Find a modulo schedule ``M`` of ``graph`` at an initiation interval in ``[min_II, max_II]``.

    Parameters
    ----------
    graph
        The loop body with its machine description.
    min_II, max_II
        Range of initiation intervals (``None``: from MII; until a schedule must exist).
    """

    graph: DependenceGraph
    min_II: int | None = None
    max_II: int | None = None

    def defects(self) -> list[str]:
        """Every defect of the instance, one readable line each (empty when valid)."""
        return graph_defects(self.graph) + _ii_defects(self.min_II, self.max_II)

    def check(self) -> None:
        """Raise :class:`~twill.errors.InvalidProblemError` listing every defect."""
        found = self.defects()
        if found:
            raise InvalidProblemError(found, source=self.graph.name)

    def verify(self, schedule: Mapping[str, int], II: int) -> Verdict:
        """Every dependence and modulo-capacity violation of ``schedule`` at ``II``."""
        return Verdict(tuple(verify_modulo_schedule(self.graph, schedule, II)))


def fixed_II(problem: ModuloProblem, solver: str) -> int:
    """The one initiation interval of a problem with ``min_II == max_II`` (what a solver at a
    fixed ``I`` solves, e.g. one Phase-1 solve); else :class:`InvalidProblemError` naming
    ``solver``."""
    if problem.min_II is None or problem.min_II != problem.max_II:
        raise InvalidProblemError(
            f"{solver} solves one initiation interval: give min_II == max_II, found "
            f"min_II={problem.min_II!r}, max_II={problem.max_II!r}",
            source=problem.graph.name,
        )
    return problem.min_II


@dataclass(frozen=True)
class WarpSpecProblem(ModuloProblem):
    """Find a joint modulo schedule and warp assignment (Twill Phase 2, paper §4).

    Parameters
    ----------
    graph, min_II, max_II
        As :class:`ModuloProblem`.
    rules
        Warp-model settings (``None``: :meth:`~twill.sched.verify_warps.WarpRules.for_graph`).
    L
        A fixed schedule length (one Phase-2 point ``(I, L)`` with ``min_II == max_II``);
        ``None``: the length is minimised.
    single_partition_warps
        The CTA's warps (a Triton kernel's ``num_warps``): the problem is then the union of
        warp specialisation and one partition on that many warps
        (:data:`PROBLEM_UNION`, :mod:`twill.sched.exact.single`); ``None``: warp
        specialisation only.

    Examples
    --------
    >>> from twill.kernels import flash_attention_forward_simplified
    >>> g = flash_attention_forward_simplified()
    >>> ws = WarpSchedule.of(g, {"S": 0, "P": 2, "O": 3}, {"S": 0, "P": 0, "O": 0}, 2, 4)
    >>> WarpSpecProblem(g).verify(ws).ok
    True
    """

    rules: WarpRules | None = None
    L: int | None = None
    single_partition_warps: int | None = None

    def defects(self) -> list[str]:
        """Every defect of the instance, one readable line each (empty when valid)."""
        out = super().defects()
        if self.L is not None and (isinstance(self.L, bool) or not isinstance(self.L, int)
                                   or self.L < 1):  # fmt: skip
            out.append(f"L must be an integer >= 1 or None, found {self.L!r}")
        w = self.single_partition_warps
        if w is not None and (isinstance(w, bool) or not isinstance(w, int) or w < 1):
            out.append(f"single_partition_warps must be an integer >= 1 or None, found {w!r}")
        return out

    def verify(self, schedule: Mapping[str, int] | WarpSchedule, II: int | None = None) -> Verdict:  # type: ignore[override]
        """Every modulo and warp (Figs. 4–6) violation of a :class:`~twill.results.WarpSchedule`.

        A plain schedule (with ``II``) is checked as a Phase-1 answer only.
        """
        if not isinstance(schedule, WarpSchedule):
            if II is None:
                raise TypeError("verify needs II with a plain schedule")
            return super().verify(schedule, II)
        found = verify_modulo_schedule(self.graph, schedule.schedule, schedule.I)
        found += verify_warp_schedule(schedule, rules=self.rules)
        return Verdict(tuple(found))
