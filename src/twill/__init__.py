"""twill: provably optimal and near-optimal schedules and mappings for accelerators.

Two families live side by side and never import each other:

* :mod:`twill.sched`: dependence graphs of loop bodies and their schedulers (Twill Phase 1
  ILP, Phase 2 SMT, GauS).
* :mod:`twill.mapping`: DNN layers on spatial accelerators (cost model, CoSA, FADiff).

The promised public entry points are thin modules: :mod:`twill.kernels`,
:mod:`twill.twill_solver` and :mod:`twill.gaus_solver`. Importing :mod:`twill` is cheap: heavy
dependencies (torch, z3, ortools, matplotlib) load only where they are used.
"""

__all__ = ["__version__"]

__version__ = "0.1.0"
