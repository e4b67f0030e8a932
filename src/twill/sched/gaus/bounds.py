"""Lower bounds and default windows on array graphs (GauS paper; Rau MICRO-27 1994).

* :func:`res_mii`, :func:`rec_mii`: Rau's bounds of :mod:`twill.sched.bounds` on the array
  view, vectorised over edges (a limited resource of capacity 0 that is used gives
  ``math.inf``; the recurrence bound is 1 without back edges).
* :func:`modulo_asap`: the array form of :func:`twill.sched.bounds.asap`.
* :func:`default_II`: ``MII = max(ResMII, RecMII)``.
* :func:`default_D`: the window used when the user gives none (documented choice).

Preconditions: the distance-0 subgraph is acyclic.
"""

from __future__ import annotations

import math

import numpy as np

from twill.sched.bounds import least_passing
from twill.sched.gaus.graph import GauSGraph, critical_path_steps, longest_path_nodes

__all__ = ["res_mii", "rec_mii", "modulo_asap", "default_D", "default_II"]


def res_mii(g: GauSGraph) -> int:
    """ResMII on the array view (``inf`` when a used resource has capacity 0)."""
    totals = g.usage.sum(axis=(0, 2))
    out = 1
    for k, cap in enumerate(g.caps):
        if np.isfinite(cap) and totals[k] > 0:
            if cap <= 0:
                return math.inf  # type: ignore[return-value]
            out = max(out, math.ceil(totals[k] / cap - 1e-9))
    return out


def modulo_asap(g: GauSGraph, II: int) -> np.ndarray | None:
    """Longest-path starts (an int64 array) on the array view with edge weights
    ``d - II*delta`` from 0; ``None`` on a positive cycle (``II < RecMII``)."""
    t = np.zeros(g.n, dtype=np.int64)
    w = g.delay - g.distance * II
    for _ in range(g.n + 1):
        cand = np.zeros(g.n, dtype=np.int64)
        np.maximum.at(cand, g.dst, t[g.src] + w)
        new = np.maximum(t, cand)
        if np.array_equal(new, t):
            return t
        t = new
    return None


def rec_mii(g: GauSGraph) -> int:
    """RecMII on the array view (1 without back edges), by binary search over ``II``."""
    if not g.has_back_edges:
        return 1
    hi = max(1, int(g.delay.sum()) + 1)
    return least_passing(1, hi, lambda ii: modulo_asap(g, ii) is not None)


def default_II(g: GauSGraph) -> int:
    """``MII = max(ResMII, RecMII)``."""
    return max(res_mii(g), rec_mii(g))


def default_D(g: GauSGraph, formulation: str = "A", II: int | None = None) -> int:
    """Default latency bound.

    * All delays 0 (GS-Schedule data): the number of nodes on the longest path, the default
      depth of GS-Schedule's ILP generator.
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
