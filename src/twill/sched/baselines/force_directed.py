"""Force-directed scheduling baseline (Paulin & Knight, IEEE TCAD 1989) for formulations A, C.

Each unscheduled op ``i`` has a uniform distribution over its time frame ``[e_i, ALAP_i]``;
the distribution graph ``DG_k(s)`` sums the expected usage. Ops are fixed one at a time in
topological order (smallest frame first within a generation) at the step of least self-force
``sum_k sum_c w_ikc (DG_k(s + c) - mean DG_k over the frame)`` (plus ``comm / ratio`` for A);
frames of later ops start at their predecessors' fixed steps (updated lazily when the op is
reached, a common linear-time variant). For C the force uses the DG folded onto ``II`` slots
and the FDS steps seed the same modulo placement and recurrence repair as GauS legalisation.

Objective: the formulation's (A: ratio * peak + comm; C: placement only, no memory term).
Guarantee: legal for A whenever ``D`` is feasible; heuristic. Failure: C may return
``UNKNOWN`` (no proof).
"""

from __future__ import annotations

import numpy as np

from twill.errors import InvalidProblemError
from twill.options import SolverOptions
from twill.registry import register_solver
from twill.results import SolveResult
from twill.sched.baselines import common
from twill.sched.baselines.common import keyword_front_door, solve_placed
from twill.sched.gaus.graph import GauSGraph
from twill.sched.gaus.legalise import legalise_modulo
from twill.sched.gaus.problem import GauSProblem
from twill.validation import check_instance

__all__ = ["force_directed_schedule", "solve", "start_steps"]


@register_solver("force-directed", problems=(GauSProblem,), aliases=("force",))
def solve(problem: GauSProblem, options: SolverOptions | None = None) -> SolveResult:
    """Force-directed schedule of ``problem`` (formulation A or C; module docstring).

    Deterministic and single-threaded: of ``options`` only ``on_progress`` applies (one
    ``phase="done"`` event).

    Raises
    ------
    InvalidProblemError
        For formulation B (a memory objective has no resource distribution graph), or a
        defect of the problem.
    """
    check_instance(problem, "problem", GauSProblem)
    if problem.formulation not in ("A", "C"):
        raise InvalidProblemError("force-directed scheduling applies to formulations A and C")
    return solve_placed(problem, options, "force", _place)


def start_steps(g: GauSGraph, D: int, II: int) -> np.ndarray | None:
    """The force-directed modulo schedule (formulation C) of the array view ``g`` itself:
    its verified start steps, or ``None`` when it found none."""
    return common.verified_starts(g, "force", _place, "C", D, II, 1.0)


def _place(
    g: GauSGraph, window: common.StartWindow, formulation: str, II: int | None, ratio: float
) -> tuple[np.ndarray | None, str]:
    """The force-directed schedule in ``window`` (C: then the modulo placement and repair)."""
    D, asap, alap, gens = window.D, window.asap, window.alap, window.gens
    n, K, L = g.usage.shape
    H = D + L
    fold = II if formulation == "C" else None
    width = fold or H

    def spread(i: int, lo: int, hi: int) -> np.ndarray:
        """Expected usage [K, width] of op i uniform over [lo, hi]."""
        out = np.zeros((K, H))
        p = 1.0 / (hi - lo + 1)
        for c in range(L):
            out[:, lo + c : hi + c + 1] += p * g.usage[i, :, c][:, None]
        if fold:
            pad = (-H) % fold
            out = np.concatenate([out, np.zeros((K, pad))], axis=1).reshape(K, -1, fold).sum(1)
        return out

    dg = np.zeros((K, width))
    for i in range(n):
        dg += spread(i, int(asap[i]), int(alap[i]))
    fwd = np.flatnonzero(g.forward)
    src, dst, d, cw = g.src[fwd], g.dst[fwd], g.delay[fwd], g.comm[fwd]
    by_dst = np.argsort(dst, kind="stable")
    ptr = np.searchsorted(dst[by_dst], np.arange(n + 1))
    scale = np.maximum(g.usage.sum(axis=(0, 2)) / max(D, 1), 1e-9)[:, None]
    order = np.concatenate(
        [nodes[np.argsort(alap[nodes] - asap[nodes], kind="stable")] for nodes in gens]
    )
    t = np.zeros(n, dtype=np.int64)
    for v in order:
        e = by_dst[ptr[v] : ptr[v + 1]]
        lo = int(asap[v])
        if e.size:
            lo = max(lo, int((t[src[e]] + d[e]).max()))
        hi = max(lo, int(alap[v]))
        dg -= spread(v, int(asap[v]), int(alap[v]))
        cand = np.arange(lo, hi + 1)
        force = np.zeros(cand.size)
        for c in range(L):
            col = (cand + c) % fold if fold else cand + c
            force += ((dg[:, col] / scale) * g.usage[v, :, c][:, None]).sum(axis=0)
        if formulation == "A" and e.size:
            force += (cw[e][None, :] * (cand[:, None] - t[src[e]][None, :])).sum(1) / max(
                ratio * scale.max(), 1e-9
            )
        s = int(cand[np.argmin(force)])
        t[v] = s
        dg += spread(v, s, s)
    if formulation == "C":
        return legalise_modulo(g, t.astype(float), II, D, gens=gens)  # type: ignore[arg-type]
    return t, "legal"


#: The keyword front door: ``force_directed_schedule(g, formulation="A", *, D=None, II=None,
#: ratio=100.0, options=None)``, :func:`run` on the problem the keywords describe.
force_directed_schedule = keyword_front_door(solve, "force_directed_schedule")
