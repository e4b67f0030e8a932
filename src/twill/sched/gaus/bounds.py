"""Lower bounds and default windows on array graphs (GauS spec §6, §10; Rau MICRO-27 1994).

* :func:`res_mii`, :func:`rec_mii`, :func:`modulo_asap`: the one implementation in
  :mod:`twill.sched.bounds` (re-exported here), which takes this array view too.
* :func:`default_II`: ``MII = max(ResMII, RecMII)``.
* :func:`default_D`: the window used when the user gives none (documented choice).

Preconditions: the distance-0 subgraph is acyclic.
"""

from __future__ import annotations

import math

import numpy as np

from twill.sched.bounds import modulo_asap, rec_mii, res_mii
from twill.sched.gaus.graph import GauSGraph, critical_path_steps, longest_path_nodes

__all__ = ["res_mii", "rec_mii", "modulo_asap", "default_D", "default_II"]


def default_II(g: GauSGraph) -> int:
    """``MII = max(ResMII, RecMII)``."""
    return max(res_mii(g), rec_mii(g))


def default_D(g: GauSGraph, formulation: str = "A", II: int | None = None) -> int:
    """Default latency bound.

    * All delays 0 (GS-Schedule data): the number of nodes on the longest path, the default
      depth of GS-Schedule's ILP generator (spec §9.1).
    * Otherwise ``ceil(1.25 * critical path)`` steps, so that non-critical ops have slack for
      the objective.
    * Formulation C: at least the modulo ASAP makespan + ``2 II`` (room for the resource
      conflicts that push ops to later slots).
    """
    if not np.any(g.delay[g.forward] > 0):
        D = longest_path_nodes(g)
    else:
        crit = critical_path_steps(g)
        D = max(crit, math.ceil(1.25 * crit))
    if formulation == "C" and II is not None:
        asap = modulo_asap(g, II)
        if asap is not None:
            D = max(D, int(asap.max(initial=0)) + 1 + 2 * II)
    return D
