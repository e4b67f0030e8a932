"""The GauS scheduling problem as a type: ``check()`` before solving, ``verify()`` after
(GauS paper, formulations A, B and C; issue 40, point 1).

:class:`GauSProblem` is what GauS and every scheduling baseline (list, force-directed,
Gumbel-softmax, exact CP-SAT) solve: a graph, a formulation, the latency bound ``D``, for C the
initiation interval ``II`` and the resource caps, for A the resource weight ``ratio``.
:meth:`GauSProblem.check` raises :class:`~twill.errors.InvalidProblemError` listing every
defect; :meth:`GauSProblem.verify` returns a :class:`~twill.results.Verdict` from the
independent schedule verifier (:func:`twill.sched.verify.verify_start_steps` on the array
view), which imports no solver.

Examples
--------
>>> from twill.gaus_solver import generate_random_dag
>>> p = GauSProblem(generate_random_dag(3, 1.0, 0, seed=1), "B", D=3)
>>> p.check()
>>> p.verify({"n0": 0, "n1": 1, "n2": 2}).ok, p.verify({"n0": 0, "n1": 0, "n2": 2}).ok
(True, False)
>>> GauSProblem(generate_random_dag(3, 1.0, 0), "E", D=0).check()
Traceback (most recent call last):
...
twill.errors.InvalidProblemError: random_dag_3_1.0_0_s0: 2 problems:
  - formulation must be A, B or C, found 'E'
  - D must be an integer >= 1 or None, found 0
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import dataclass
from functools import cached_property

import numpy as np

from twill.errors import InvalidProblemError
from twill.results import Verdict, Violation
from twill.sched.gaus.bounds import default_D, default_II
from twill.sched.gaus.graph import GauSGraph, gaus_view
from twill.sched.gaus.verify import schedule_violations
from twill.sched.ir import DependenceGraph

__all__ = ["FORMULATIONS", "GauSProblem", "schedule_defects"]

#: The three GauS formulations: resource peak + communication, peak memory, modulo.
FORMULATIONS = ("A", "B", "C")


def _int_defect(name: str, value: object) -> list[str]:
    if value is None:
        return []
    if isinstance(value, bool) or not isinstance(value, int | np.integer) or value < 1:
        return [f"{name} must be an integer >= 1 or None, found {value!r:.40}"]
    return []


def _real_defect(name: str, value: object, *, positive: bool) -> list[str]:
    ok = isinstance(value, int | float) and not isinstance(value, bool) and math.isfinite(value)
    if ok and (value > 0 or (not positive and value == 0)):  # type: ignore[operator]
        return []
    what = "> 0" if positive else ">= 0"
    return [f"{name} must be a finite number {what}, found {value!r:.40}"]


@dataclass(frozen=True)
class GauSProblem:
    """Schedule ``graph`` under one GauS formulation.

    Parameters
    ----------
    graph
        The :class:`~twill.sched.ir.DependenceGraph` (the solvers work on its cached array
        view :func:`~twill.sched.gaus.graph.gaus_view`).
    formulation
        ``"A"`` (``ratio`` x peak resource + communication), ``"B"`` (peak live memory) or
        ``"C"`` (modulo MaxLive at ``II`` under resource caps and recurrences).
    D
        Latency bound in steps (``None``: :func:`~twill.sched.gaus.bounds.default_D`).
    II
        Initiation interval, formulation C only (``None``: MII).
    R_cap
        Capacity of every resource type (``None``: the graph's own capacities).
    ratio
        Weight of the resource peaks in formulation A (GS-Schedule's README: 100).
    """

    graph: DependenceGraph
    formulation: str = "A"
    D: int | None = None
    II: int | None = None
    R_cap: float | None = None
    ratio: float = 100.0

    @property
    def name(self) -> str:
        """The graph's name."""
        return str(getattr(self.graph, "name", "graph"))

    def defects(self) -> list[str]:
        """Every defect of the instance, one readable line each (empty when valid)."""
        out: list[str] = []
        if not isinstance(self.graph, DependenceGraph):
            return [f"graph must be a DependenceGraph, found {type(self.graph).__name__}"]
        from twill.sched.validate import graph_defects

        out += graph_defects(self.graph, model_size=False)
        if self.formulation not in FORMULATIONS:
            out.append(f"formulation must be A, B or C, found {self.formulation!r:.40}")
        out += _int_defect("D", self.D) + _int_defect("II", self.II)
        if self.II is not None and self.formulation in ("A", "B"):
            out.append(f"II applies to formulation C only, found II={self.II} with "
                       f"formulation {self.formulation}")  # fmt: skip
        if self.R_cap is not None:
            out += _real_defect("R_cap", self.R_cap, positive=True)
        return out + _real_defect("ratio", self.ratio, positive=False)

    def check(self) -> None:
        """Raise :class:`~twill.errors.InvalidProblemError` listing every defect."""
        found = self.defects()
        if found:
            raise InvalidProblemError(found, source=self.name)

    @cached_property
    def arrays(self) -> GauSGraph:
        """The array view with ``R_cap`` applied (call :meth:`check` first)."""
        g = gaus_view(self.graph)
        return g if self.R_cap is None else g.with_caps(float(self.R_cap))

    @cached_property
    def modulo_II(self) -> int | None:
        """The initiation interval of formulation C (``II``, or MII when not given)."""
        if self.formulation != "C":
            return None
        return int(self.II) if self.II is not None else default_II(self.arrays)

    @cached_property
    def steps(self) -> int:
        """The latency bound ``D`` (given, or the formulation's default)."""
        if self.D is not None:
            return int(self.D)
        return default_D(self.arrays, self.formulation, self.modulo_II)

    def starts(self, schedule: Mapping[str, int]) -> np.ndarray | list[Violation]:
        """``schedule`` as a start-step vector in node order, or its missing names."""
        missing = [v for v in self.arrays.names if v not in schedule]
        if missing:
            return [Violation("missing", {"op": v}, message=f"op {v} has no start step")
                    for v in missing]  # fmt: skip
        return np.array([schedule[v] for v in self.arrays.names])

    def verify(self, schedule: Mapping[str, int]) -> Verdict:
        """Every violation of ``schedule`` (op name -> start step): integrality, the window
        ``[0, D - 1]``, dependences and, in C, the modulo capacities at ``II``."""
        t = self.starts(schedule)
        if isinstance(t, list):
            return Verdict(tuple(t))
        return Verdict(tuple(schedule_defects(self.arrays, t, self.steps, self.modulo_II)))


def schedule_defects(g: GauSGraph, t: np.ndarray, D: int, II: int | None) -> list[Violation]:
    """Every violation of start steps ``t`` in the window ``[0, D - 1]`` (at ``II`` in C):
    the one schedule verifier, on ``g`` with its capacities."""
    return schedule_violations(g, t, D, II)
