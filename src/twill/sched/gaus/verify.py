"""Discrete objectives and the legality check of integer schedules (``docs/gaus.md``).

Independent of the optimiser: this module imports neither torch nor any GauS or baseline
module, and recomputes everything from the definitions on a :class:`GauSGraph`.

* :func:`schedule_violations`: every broken rule of a start-step vector ``t``, checked by
  the one schedule verifier, :func:`twill.sched.verify.verify_start_steps`: integrality,
  the latency bound ``0 <= t_i <= D - 1``, dependences (``t_v + delta*II >= t_u + d``; only
  distance-0 edges when no ``II`` is given), and, for modulo schedules, per-congruence-class
  capacity of every limited resource (row ``c`` of op ``i`` lands on ``(t_i + c) mod II``).
* :func:`objective_a`: ``ratio * sum_k max_s R_k(s) + sum_e c_e (t_v - t_u)`` (GS-Schedule's
  ILP objective when there is one resource type and binary ``c``).
* :func:`peak_memory`: ``max_s sum_i b_i [t_i <= s < max_j t_j]`` (formulation B).
* :func:`modulo_maxlive`: ``max_r sum_i b_i #{s in [t_i, end_i), s = r mod II}`` with
  ``end_i = max_j (t_j + delta_ij II)`` (formulation C).

Preconditions: ``t`` has one entry per node. Returned violations are
:class:`twill.results.Violation`.
"""

from __future__ import annotations

import numpy as np

from twill.errors import InvalidProblemError
from twill.results import Violation
from twill.sched.gaus.graph import GauSGraph
from twill.sched.verify import verify_start_steps

__all__ = [
    "schedule_violations",
    "resource_profile",
    "objective_a",
    "peak_memory",
    "modulo_maxlive",
    "discrete_objective",
]

_MAX_REPORTED = 50


def schedule_violations(
    g: GauSGraph, t: np.ndarray, D: int, II: int | None = None, *, check_capacity: bool = True
) -> list[Violation]:
    """Every rule ``t`` breaks (empty list: legal): :func:`twill.sched.verify.verify_start_steps`
    in the window ``[0, D - 1]``, at most 50 violations of each rule.

    Parameters
    ----------
    g
        The graph.
    t
        Start step per node.
    D
        Latency bound: every start must lie in ``[0, D - 1]``.
    II
        Initiation interval for a modulo schedule; ``None`` checks a one-iteration schedule
        (distance-0 edges only, no capacity constraint, as in formulations A and B).
    check_capacity
        For modulo schedules, check limited resources per congruence class.
    """
    capacity = check_capacity and II is not None
    return verify_start_steps(g, t, II, D=D, check_capacity=capacity, most=_MAX_REPORTED)


def resource_profile(g: GauSGraph, t: np.ndarray) -> np.ndarray:
    """``float[K, H]``: units of each resource used at each absolute step."""
    n, K, L = g.usage.shape
    H = int(t.max(initial=0)) + L
    prof = np.zeros((K, H))
    for c in range(L):
        for k in range(K):
            prof[k] += np.bincount(t + c, weights=g.usage[:, k, c], minlength=H)
    return prof


def objective_a(g: GauSGraph, t: np.ndarray, ratio: float) -> float:
    """Formulation A: ``ratio * sum_k peak_k + sum_e c_e (t_v - t_u)`` over distance-0 edges."""
    t = np.asarray(t, dtype=np.int64)
    peak = resource_profile(g, t).max(axis=1, initial=0.0).sum()
    fwd = g.forward
    comm = float(np.sum(g.comm[fwd] * (t[g.dst[fwd]] - t[g.src[fwd]])))
    return float(ratio * peak + comm)


def _last_use(g: GauSGraph, t: np.ndarray, II: int | None) -> np.ndarray:
    """End of each value's lifetime (``-1``: never live)."""
    mask = np.ones(g.num_edges, dtype=bool) if II is not None else g.forward
    end = np.full(g.n, -1, dtype=np.int64)
    shift = g.distance * (II if II is not None else 0)
    np.maximum.at(end, g.src[mask], (t[g.dst] + shift)[mask])
    return end


def live_profile(g: GauSGraph, t: np.ndarray, D: int) -> tuple[np.ndarray, np.ndarray]:
    """Formulation B's live memory at every step ``s``, ``sum_i b_i [t_i <= s < end_i]``, and
    each value's end ``end_i`` (its last consumer's step; ``D`` when ``live_out``).

    A value is live from its producer's step up to, not including, its last consumer's step;
    ops without successors are not counted unless ``live_out`` (then live until ``D - 1``).
    """
    t = np.asarray(t, dtype=np.int64)
    end = _last_use(g, t, None)
    end = np.where(g.live_out, D, end)
    live = end > t
    H = int(max(D, end.max(initial=0))) + 1
    diff = np.zeros(H + 1)
    np.add.at(diff, t[live], g.mem[live])
    np.add.at(diff, end[live], -g.mem[live])
    return np.cumsum(diff)[:H], end


def peak_memory(g: GauSGraph, t: np.ndarray, D: int) -> float:
    """Formulation B: the peak of :func:`live_profile`."""
    return float(live_profile(g, t, D)[0].max(initial=0.0))


def modulo_maxlive(g: GauSGraph, t: np.ndarray, II: int) -> float:
    """Formulation C: modulo MaxLive, values folded onto the ``II`` congruence classes."""
    t = np.asarray(t, dtype=np.int64)
    end = _last_use(g, t, II)
    live = end > t
    H = int(end.max(initial=0)) + 1
    diff = np.zeros(H + 1)
    np.add.at(diff, t[live], g.mem[live])
    np.add.at(diff, end[live], -g.mem[live])
    prof = np.cumsum(diff)[:H]
    pad = (-H) % II
    folded = np.concatenate([prof, np.zeros(pad)]).reshape(-1, II).sum(axis=0)
    return float(folded.max(initial=0.0))


def discrete_objective(
    g: GauSGraph,
    t: np.ndarray,
    formulation: str,
    *,
    D: int,
    II: int | None = None,
    ratio: float = 1.0,
) -> float:
    """The objective of formulation ``"A"``, ``"B"`` or ``"C"`` for an integer schedule."""
    if formulation == "A":
        return objective_a(g, t, ratio)
    if formulation == "B":
        return peak_memory(g, t, D)
    if formulation == "C":
        if II is None:
            raise InvalidProblemError("formulation C needs II")
        return modulo_maxlive(g, t, II)
    raise InvalidProblemError(f"formulation must be A, B or C, found {formulation!r}")
