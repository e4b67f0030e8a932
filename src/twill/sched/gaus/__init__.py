"""GauS: differentiable scheduling with Gaussian start times (Cai et al., arXiv 2602.20427).

* :mod:`~twill.sched.gaus.graph`: array form of scheduling graphs, ASAP/ALAP.
* :mod:`~twill.sched.gaus.losses`: closed-form expected losses (paper Eqs. 8b, 9c, 10b, 24).
* :mod:`~twill.sched.gaus.alm`: augmented Lagrangian + Adam (``docs/gaus.md``).
* :mod:`~twill.sched.gaus.legalise`: topological and fixed-point legalisation (paper App. A).
* :mod:`~twill.sched.gaus.verify`: discrete objectives and legality (independent).
* :mod:`~twill.sched.gaus.solver`: :class:`GauSSolver`, ``solve(problem, options)``.
* :mod:`~twill.sched.gaus.result`: the schedule payload and run record of its results.

Importing this package does not import torch.
"""

from twill.sched.gaus.graph import GauSGraph, from_dependence_graph
from twill.sched.gaus.result import GauSSchedule

__all__ = ["GauSGraph", "from_dependence_graph", "GauSSchedule"]
