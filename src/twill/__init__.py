"""twill: provably optimal and near-optimal schedules and mappings for accelerators.

Two families live side by side and never import each other:

* :mod:`twill.sched`: dependence graphs of loop bodies and their schedulers (Twill Phase 1
  ILP, Phase 2 SMT, GauS).
* :mod:`twill.mapping`: DNN layers on spatial accelerators (cost model, CoSA, FADiff).

The promised public entry points are thin modules: :mod:`twill.kernels`,
:mod:`twill.twill_solver` and :mod:`twill.gaus_solver`. Importing :mod:`twill` is cheap: heavy
dependencies (torch, z3, ortools, matplotlib) load only where they are used.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from twill.options import SolverOptions
    from twill.results import SolveResult

__all__ = ["__version__", "solve"]

__version__ = "0.1.0"


def solve(problem: object, options: SolverOptions | None = None) -> SolveResult:
    """Solves ``problem`` with the registered solver ``options.method`` (``None``: the default
    for the problem's type), the one entry to every solver of both families.

    ``problem`` is a :class:`~twill.sched.problems.ModuloProblem` or
    :class:`~twill.sched.problems.WarpSpecProblem` (default ``twill``), a
    :class:`~twill.sched.exact.pinned.PinnedProblem` (``pinned``), a
    :class:`~twill.sched.gaus.problem.GauSProblem` (``gaus``), a
    :class:`~twill.mapping.problems.LayerMappingProblem` (``cosa``) or a
    :class:`~twill.mapping.problems.NetworkMappingProblem` (``fadiff``);
    :func:`twill.registry.solvers` lists every method with the problem types it takes. The
    answer has passed the problem's independent verifier.

    Examples
    --------
    >>> import twill
    >>> from twill.options import SolverOptions
    >>> from twill.mapping.arch import gemmini_arch
    >>> from twill.mapping.problems import LayerMappingProblem
    >>> from twill.mapping.workload import Layer
    >>> p = LayerMappingProblem(Layer("fc", {"P": 8, "C": 32, "K": 32}), gemmini_arch())
    >>> twill.solve(p, SolverOptions(method="cosa", time_limit=60)).status.has_solution
    True
    """
    from twill.registry import solve_with

    return solve_with(problem, options)
