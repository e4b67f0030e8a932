"""CoSA re-ranked (method ``cosa-rerank``): a few CoSA MIP solutions, loop orders polished and
the best picked under the true cost model. Not CoSA's method and never claimed optimal.

Why: CoSA's objective is a log-domain proxy (compute, utilisation, traffic). It has no term for
bandwidth-bound latency, and its DRAM-level traffic is blind to loop order. On Gemmini that
costs latency on about a third of the layers (docs/benchmarks.md, "Whole networks on
Gemmini"): the MIP optimum leaves a reduction factor (C, R, S) above an output-relevant loop
above the accumulator, so partial sums go back and forth to DRAM and the accumulator's
2 words/cycle bound the latency; or the decoder's fixed loop order at DRAM refetches a tile;
or the one-word weight registers are reloaded so often that the scratchpad bounds latency
(the proxy counts no reuse of irrelevant factors at inner levels).

What it does, per layer:

1. candidates: the pure CoSA MIP (:func:`~twill.mapping.cosa.solve.run`); when some tensor
   bypasses the global buffer, the MIP restricted by
   :func:`~twill.mapping.cosa.mip.add_no_bypass_refetch`; when the innermost level is a
   one-word register under a throttled parent, that MIP also restricted by
   :func:`~twill.mapping.cosa.mip.add_register_reuse`. Restrictions that add no row are
   skipped (Simba: only the pure MIP); restricted MIPs may be infeasible;
2. each decoded, capacity-repaired and verified mapping gets its loop orders polished under
   the cost model (:func:`polish_loop_orders`; tiling and spatial factors unchanged);
3. the best candidate by ``metric`` wins (default ``lex``: cycles, then energy, since the
   issue's target is latency).

Guarantee: FEASIBLE with a verified mapping whose ``metric`` is no worse than the pure CoSA
mapping's (the pure MIP solution is a candidate and the polish keeps its order when nothing is
better); the MIP statuses of the candidates are in ``stats["candidates"]``.
"""

from __future__ import annotations

import itertools
import math
import time
from dataclasses import replace
from typing import Any

import numpy as np

from twill.errors import VerificationError
from twill.mapping.arch import Arch
from twill.mapping.cosa.mip import CosaIndex, bypass_refetch_operands, register_reuse_bound
from twill.mapping.cosa.solve import (
    CoSASettings,
    incumbent_events,
    run,
    start,
)
from twill.mapping.cost.analytical import CostReport, MappingBatch, evaluate, evaluate_batch
from twill.mapping.mapping import Mapping, verify_mapping
from twill.mapping.problems import LayerMappingProblem
from twill.mapping.result import MappedLayer, finished, objective_meaning
from twill.mapping.search.common import METRICS
from twill.mapping.workload import DIMS, Layer
from twill.options import SolverOptions
from twill.registry import register_solver
from twill.results import SolveResult, Status, Timings
from twill.validation import check_instance

__all__ = ["polish_loop_orders", "rerank", "solve"]


def _key(cycles: float, energy_pj: float, metric: str) -> tuple[float, ...]:
    """Comparable score (lower is better) of one evaluated mapping."""
    if metric == "edp":
        return (energy_pj * 1e-6 * cycles,)
    if metric == "cycles":
        return (cycles,)
    if metric == "energy":
        return (energy_pj,)
    if metric == "lex":
        return (cycles, energy_pj)
    raise ValueError(f"metric must be one of {METRICS}, got {metric!r}")


def _level_orders(temporal: tuple[int, ...], current: tuple[int, ...]) -> list[tuple[int, ...]]:
    """Distinct orders (outer → inner dim indices) of one level: every permutation of its
    non-unit loops; unit loops cost nothing anywhere, so they follow in ``current``'s order."""
    live = [d for d in current if temporal[d] > 1]
    rest = tuple(d for d in current if temporal[d] == 1)
    return [tuple(p) + rest for p in itertools.permutations(live)]


def _best_of(
    layer: Layer, arch: Arch, tiling: Mapping, orders: np.ndarray, metric: str
) -> tuple[int, tuple[float, ...]]:
    """Index and key of the best order in ``orders`` ``(B, L, 7)`` for the tiling of
    ``tiling`` (its factors, G's included)."""
    B = orders.shape[0]
    placed = tiling.placed(layer.groups)
    T, Sp = np.array(tiling.temporal), np.array(tiling.spatial)
    gt, gs = np.array([placed.group_temporal]), np.array([placed.group_spatial])
    batch = MappingBatch(
        np.repeat(T[None], B, 0),
        np.repeat(Sp[None], B, 0),
        orders,
        np.repeat(gt, B, 0),
        np.repeat(gs, B, 0),
    )
    cost = evaluate_batch(layer, arch, batch)
    keys = [
        _key(float(c), float(e), metric) for c, e in zip(cost.cycles, cost.energy_pj, strict=True)
    ]
    k = min(range(B), key=keys.__getitem__)
    return k, keys[k]


def polish_loop_orders(
    layer: Layer,
    arch: Arch,
    mapping: Mapping,
    *,
    metric: str = "lex",
    max_batch: int = 20_000,
    max_sweeps: int = 4,
) -> Mapping:
    """Best loop orders for a fixed tiling under the cost model (tiling, spatial factors and
    keeps unchanged, so validity is unchanged).

    All levels jointly when the product of their order counts is at most ``max_batch``;
    otherwise coordinate descent (one level at a time, all its orders, the others fixed,
    until a sweep improves nothing or ``max_sweeps``). Never worse than ``mapping``'s own
    orders for ``metric`` (they are among the candidates). Guarantee: exact best order only in
    the joint case; a heuristic otherwise.

    Examples
    --------
    >>> from twill.mapping.arch import gemmini_arch
    >>> from twill.mapping.mapping import parse_dosa_mapping
    >>> layer = Layer("l", {"P": 4, "C": 32, "K": 32})
    >>> m = parse_dosa_mapping("L3[WIO] P2 C2 - L2[WI] K2 K16X - L1[O] P2 C16X - L0[W] N1", layer)
    >>> p = polish_loop_orders(layer, gemmini_arch(), m)
    >>> evaluate(layer, gemmini_arch(), p).cycles <= evaluate(layer, gemmini_arch(), m).cycles
    True
    """
    if metric not in METRICS:
        raise ValueError(f"metric must be one of {METRICS}, got {metric!r}")
    T = np.array(mapping.temporal, dtype=np.int64)
    current = [tuple(d.index for d in lv) for lv in mapping.order]
    per = [_level_orders(tuple(T[m]), current[m]) for m in range(len(current))]
    if math.prod(len(p) for p in per) <= max_batch:
        combos = np.array(list(itertools.product(*per)), dtype=np.int64)
        k, _ = _best_of(layer, arch, mapping, combos, metric)
        best = [tuple(int(x) for x in row) for row in combos[k]]
    else:
        best = list(current)
        _, best_key = _best_of(layer, arch, mapping, np.array([best], dtype=np.int64), metric)
        for _sweep in range(max_sweeps):
            improved = False
            for m, orders in enumerate(per):
                if len(orders) < 2:
                    continue
                trial = np.array([best[:m] + [o] + best[m + 1 :] for o in orders], dtype=np.int64)
                k, key = _best_of(layer, arch, mapping, trial, metric)
                if key < best_key:
                    best[m], best_key, improved = orders[k], key, True
            if not improved:
                break
    order = tuple(tuple(DIMS[d] for d in lv) for lv in best)
    return replace(mapping, order=order)


@register_solver("cosa-rerank", problems=(LayerMappingProblem,), settings=CoSASettings)
def solve(problem: LayerMappingProblem, options: SolverOptions | None = None) -> SolveResult:
    """``cosa-rerank`` on the problem's layer (the module docstring): CoSA's MIP and its
    restricted variants, loop orders polished, the best under the cost model.

    ``options`` as :func:`twill.mapping.cosa.solve.solve`; ``options.time_limit`` bounds all
    the MIPs together (each gets what is left; a variant reached after the deadline is
    skipped), and ``options.cosa.metric`` / ``.polish`` choose the ranking and the polish.

    Examples
    --------
    >>> from twill.mapping.arch import gemmini_arch
    >>> p = LayerMappingProblem(Layer("fc", {"P": 16, "C": 64, "K": 64}), gemmini_arch())
    >>> r = solve(p)
    >>> r.status.value, r.settings["method"], p.verify(r.solution).ok
    ('feasible', 'cosa-rerank', True)
    """
    check_instance(problem, "problem", LayerMappingProblem)
    controls, cfg = start(problem, options, "cosa-rerank")
    res = rerank(problem.layer, problem.arch, cfg, incumbent_events(controls), controls.stop)
    return finished(controls, res)


def rerank(
    layer: Layer,
    arch: Arch,
    cfg: CoSASettings,
    on_incumbent: Any = None,
    stop: float = math.inf,
) -> SolveResult:
    """The re-ranked CoSA of one checked layer under ``cfg`` (``cfg.metric``, ``cfg.polish``,
    ``cfg.gb_order``); the MIPs stop at ``stop`` (a ``perf_counter`` value) together.

    FEASIBLE with the chosen verified mapping (never OPTIMAL: the choice is the best of a few
    candidates, not an optimum of the cost model); otherwise the pure MIP's status without a
    mapping. ``stats["candidates"]`` lists every candidate (variant, MIP status and
    objective, cycles and energy before and after the polish), ``stats["chosen"]`` the
    winner."""
    metric, polish = cfg.metric, cfg.polish
    if metric not in METRICS:
        raise ValueError(f"metric must be one of {METRICS}, got {metric!r}")
    t0, c0 = time.perf_counter(), time.process_time()
    variants = _variants(layer, arch, cfg.gb_order)
    candidates: list[dict[str, Any]] = []
    best: tuple[tuple[float, ...], str, Mapping, CostReport] | None = None
    first: SolveResult | None = None
    solve_s = 0.0
    for name, flags in variants:
        if first is not None and time.perf_counter() >= stop:
            candidates.append({"variant": name, "mip_status": "skipped: time limit"})
            continue
        r = run(layer, arch, replace(cfg, **flags), on_incumbent, stop)
        first = first or r
        solve_s += r.timings.solve
        cand: dict[str, Any] = {
            "variant": name,
            "mip_status": r.status.value,
            "mip_objective": r.objective,
        }
        candidates.append(cand)
        if r.solution is None:
            continue
        got = r.solution
        mapping, rep = _ranked(layer, arch, got.mapping, got.report, cand, polish=polish,
                               metric=metric)  # fmt: skip
        key = _key(rep.cycles, rep.energy_pj, metric)
        if best is None or key < best[0]:
            best = (key, name, mapping, rep)
    timings = Timings(solve=solve_s, verify=max(0.0, time.perf_counter() - t0 - solve_s))
    stats: dict[str, Any] = {"candidates": candidates, "cpu_seconds": time.process_time() - c0}
    return _rerank_result(layer.name, first, best, stats, timings, cfg)


def _variants(layer: Layer, arch: Arch, gb_order: str) -> list[tuple[str, dict[str, bool]]]:
    """The MIP variants solved: plain CoSA, then the restrictions this layer admits."""
    ix = CosaIndex.build(layer, arch, gb_order=gb_order)
    nbr = bool(bypass_refetch_operands(ix))
    variants: list[tuple[str, dict[str, bool]]] = [("cosa", {})]
    if nbr:
        variants.append(("no_bypass_refetch", {"no_bypass_refetch": True}))
    if register_reuse_bound(ix, arch) is not None:
        name = "no_bypass_refetch+register_reuse" if nbr else "register_reuse"
        variants.append((name, {"no_bypass_refetch": nbr, "register_reuse": True}))
    return variants


def _ranked(
    layer: Layer,
    arch: Arch,
    mapping: Mapping,
    mip_report: CostReport,
    cand: dict[str, Any],
    *,
    polish: bool,
    metric: str,
) -> tuple[Mapping, CostReport]:
    """One MIP candidate's (polished, verified) mapping and exact cost, recorded in ``cand``
    beside the cost of the MIP's own loop order (``mip_report``)."""
    if polish:
        mapping = polish_loop_orders(layer, arch, mapping, metric=metric)
    bad = verify_mapping(layer, arch, mapping)
    if bad:
        raise VerificationError(bad, what=f"cosa-rerank mapping of {layer.name}")
    rep = evaluate(layer, arch, mapping)
    cand.update(
        cycles_mip_order=mip_report.cycles,
        energy_uJ_mip_order=mip_report.energy_uj,
        cycles=rep.cycles,
        energy_uJ=rep.energy_uj,
        mapping=str(mapping),
    )
    return mapping, rep


def _rerank_result(
    layer: str,
    first: SolveResult | None,
    best: tuple[tuple[float, ...], str, Mapping, CostReport] | None,
    stats: dict[str, Any],
    timings: Timings,
    cfg: CoSASettings,
) -> SolveResult:
    """FEASIBLE with the ``best`` candidate, else the plain MIP's (``first``) status."""
    settings = {**(first.settings if first else {}), "method": "cosa-rerank",
                "metric": cfg.metric, "polish": cfg.polish}  # fmt: skip
    settings.pop("no_bypass_refetch", None)
    settings.pop("register_reuse", None)
    unit = objective_meaning("cosa-rerank")[1]
    if best is None:
        status = first.status if first is not None else Status.UNKNOWN
        return SolveResult(status if not status.has_solution else Status.ERROR,
                           objective_unit=unit, timings=timings, stats=stats,
                           settings=settings, seed=cfg.seed)  # fmt: skip
    stats["chosen"] = best[1]
    return SolveResult(Status.FEASIBLE, MappedLayer(layer, best[2], best[3]), None, unit,
                       timings=timings, stats=stats, settings=settings, seed=cfg.seed)  # fmt: skip
