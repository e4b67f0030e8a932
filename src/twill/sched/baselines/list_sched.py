"""List scheduling baseline for formulations A, B and C (a baseline of the GauS paper).

Objective, guarantee, failure:

* A/B (no hard resource limit): ops are taken in topological order, most-critical first
  (smallest ALAP), and each is placed at the step in ``[earliest, ALAP]`` that increases the
  formulation's running cost least: for A the resulting per-step usage (``ratio * usage`` plus
  the communication it adds), for B the live memory at that step. Ties go to the earliest
  step. Always legal when ``D`` is feasible; heuristic.
* C (modulo): classical modulo list scheduling, ops in topological order by ALAP priority, each
  at the earliest step that satisfies placed predecessors and the modulo reservation table,
  with the same fixed-point recurrence repair as GauS legalisation. May fail (``UNKNOWN``),
  which is not a proof.
"""

from __future__ import annotations

from collections.abc import Callable

import numpy as np

from twill.options import SolverOptions
from twill.registry import register_solver
from twill.results import SolveResult
from twill.sched.baselines.common import (
    StartWindow,
    keyword_front_door,
    solve_placed,
    verified_starts,
)
from twill.sched.gaus.graph import GauSGraph, asap_alap, topological_generations
from twill.sched.gaus.legalise import legalise_modulo
from twill.sched.gaus.problem import GauSProblem
from twill.validation import check_instance

__all__ = ["capped_list_schedule", "list_schedule", "solve", "start_steps"]


@register_solver("list", problems=(GauSProblem,))
def solve(problem: GauSProblem, options: SolverOptions | None = None) -> SolveResult:
    """List-schedule ``problem`` (formulation A, B or C; see the module docstring).

    Deterministic, single-threaded and linear in the graph: of ``options`` only
    ``on_progress`` applies (one ``phase="done"`` event).

    Examples
    --------
    >>> from twill.io.gml import parse_gml
    >>> g = parse_gml('graph [ node [ id 0 parameter 5 ] node [ id 1 parameter 5 ] ]')
    >>> solve(GauSProblem(g, "A", D=2)).objective  # the two ops go to different steps
    500.0
    """
    check_instance(problem, "problem", GauSProblem)
    return solve_placed(problem, options, "list", _place)


def start_steps(
    g: GauSGraph, formulation: str, D: int, II: int | None = None, ratio: float = 100.0
) -> np.ndarray | None:
    """The list schedule of the array view ``g`` itself: its verified start steps, or
    ``None`` when it found none (what GauS compares its own schedules with)."""
    return verified_starts(g, "list", _place, formulation, D, II, ratio)


def _place(
    g: GauSGraph, window: StartWindow, formulation: str, II: int | None, ratio: float
) -> tuple[np.ndarray | None, str]:
    """The list schedule in ``window`` (C: the modulo placement of the ASAP steps)."""
    if formulation == "C":
        return legalise_modulo(g, window.asap.astype(float), II, window.D, gens=window.gens)  # type: ignore[arg-type]
    order = _topological_priority(g, window.gens, window.alap)
    return _greedy(g, order, window.asap, window.alap, window.D, formulation, ratio), "legal"


def _topological_priority(g: GauSGraph, gens: list[np.ndarray], alap: np.ndarray) -> np.ndarray:
    """Topological order; within the ready set, smallest ALAP first (by generations)."""
    return np.concatenate([nodes[np.argsort(alap[nodes], kind="stable")] for nodes in gens])


def _earliest_starts(g: GauSGraph) -> Callable[[int, np.ndarray, int], int]:
    """``est(v, t, lower)``: the earliest step ``v`` may take once its distance-0
    predecessors are placed in ``t``, and not before ``lower``."""
    fwd = np.flatnonzero(g.forward)
    src, dst, d = g.src[fwd], g.dst[fwd], g.delay[fwd]
    by_dst = np.argsort(dst, kind="stable")
    ptr = np.searchsorted(dst[by_dst], np.arange(g.n + 1))

    def est(v: int, t: np.ndarray, lower: int) -> int:
        e = by_dst[ptr[v] : ptr[v + 1]]
        return lower if e.size == 0 else max(lower, int((t[src[e]] + d[e]).max()))

    return est


def capped_list_schedule(g: GauSGraph, D: int, cap: float) -> np.ndarray | None:
    """List scheduling with every step's usage of the (single) resource capped at ``cap``.

    Ops in :func:`list_schedule`'s order (topological by generation, least ALAP first), each
    at its earliest step up to its ALAP where it fits under ``cap``. Returns the start steps,
    or ``None`` when an op finds no such step (not a proof that none exists). Used by the
    large-neighbourhood search (:mod:`twill.sched.gaus.polish_lns`) to start at lower peaks.
    """
    gens = topological_generations(g)
    asap, alap = asap_alap(g, D, gens)
    est = _earliest_starts(g)
    usage = g.usage[:, 0, :]
    L = usage.shape[1]
    loads = np.zeros(D + L)
    t = np.zeros(g.n, dtype=np.int64)
    for v in _topological_priority(g, gens, alap):
        steps = np.arange(est(v, t, int(asap[v])), int(alap[v]) + 1)
        fits = (loads[steps[:, None] + np.arange(L)] + usage[v] <= cap + 1e-9).all(axis=1)
        if not fits.any():
            return None
        t[v] = steps[int(np.argmax(fits))]
        loads[t[v] : t[v] + L] += usage[v]
    return t


def _greedy(
    g: GauSGraph,
    order: np.ndarray,
    asap: np.ndarray,
    alap: np.ndarray,
    D: int,
    formulation: str,
    ratio: float,
) -> np.ndarray:
    fwd = np.flatnonzero(g.forward)
    src, dst, d, cw = g.src[fwd], g.dst[fwd], g.delay[fwd], g.comm[fwd]
    by_dst = np.argsort(dst, kind="stable")
    ptr = np.searchsorted(dst[by_dst], np.arange(g.n + 1))
    L = g.usage.shape[2]
    K = g.usage.shape[1]
    prof = np.zeros((K, D + L))
    t = np.zeros(g.n, dtype=np.int64)
    for v in order:
        e = by_dst[ptr[v] : ptr[v + 1]]
        est = int(asap[v])
        if e.size:
            est = max(est, int((t[src[e]] + d[e]).max()))
        if formulation != "A":
            t[v] = est  # B: the earliest start keeps the producers' lifetimes short
            continue
        cand = np.arange(est, int(alap[v]) + 1)
        new_prof = prof[:, cand[:, None] + np.arange(L)[None, :]] + g.usage[v][:, None, :]
        peaks = np.maximum(new_prof.max(axis=2), prof.max(axis=1)[:, None]).sum(axis=0)
        cost = ratio * peaks
        if e.size:
            cost = cost + (cw[e][None, :] * (cand[:, None] - t[src[e]][None, :])).sum(axis=1)
        s = int(cand[np.argmin(cost)])
        prof[:, s : s + L] += g.usage[v]
        t[v] = s
    return t


#: The keyword front door: ``list_schedule(g, formulation="A", *, D=None, II=None, ratio=100.0,
#: options=None)``, :func:`run` on the problem the keywords describe.
list_schedule = keyword_front_door(solve, "list_schedule")
