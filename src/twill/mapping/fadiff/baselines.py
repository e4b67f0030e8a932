"""Baselines for FADiff under the same cost model (``docs/fadiff.md``: layer-wise gradient
descent without fusion, layer-wise mapping plus greedy fusion, random search; plus CoSA).

* ``layerwise-cosa``: every layer mapped by CoSA's MIP (:mod:`twill.mapping.cosa`), no fusion.
* ``layerwise-gradient``: :func:`twill.mapping.fadiff.train.fadiff` with ``fusion=False``
  (DOSA-like one-loop gradient search).
* ``layerwise-greedy-fusion``: the better of the two layer-wise plans, then every candidate
  boundary fused, largest intermediate first, whenever the plan stays valid and the EDP drops.
* ``random``: per layer, random perfect factorisations (random prime-factor placement and
  random loop orders, :func:`twill.mapping.search.random.sample_batch`), as many model
  evaluations as FADiff made; the valid mapping with the lowest layer EDP is kept; no fusion.

All plans are verified (:func:`twill.mapping.fadiff.fusion.verify_plan`) before they are
returned, as a :class:`~twill.results.SolveResult` whose solution is a
:class:`~twill.mapping.fadiff.plan.NetworkPlan` (FEASIBLE; the objective is the exact EDP).
"""

from __future__ import annotations

import time

import numpy as np

from twill.errors import VerificationError
from twill.mapping.arch import Arch
from twill.mapping.cost.analytical import evaluate_batch
from twill.mapping.fadiff.fusion import FusionPlan, evaluate_plan, verify_plan
from twill.mapping.fadiff.heuristics import greedy_fusion
from twill.mapping.fadiff.plan import NetworkPlan
from twill.mapping.fadiff.train import all_dram_mapping
from twill.mapping.mapping import Mapping
from twill.mapping.network import Network
from twill.options import SolverOptions
from twill.results import SolveResult, Status, Timings

__all__ = [
    "layerwise_cosa",
    "layerwise_plan",
    "greedy_fusion_baseline",
    "random_search",
]


def _checked(net: Network, arch: Arch, plan: FusionPlan, t0: float) -> SolveResult:
    """The verified ``plan`` (``t0``: when its making began) as a FEASIBLE result."""
    viol = verify_plan(net, arch, plan)
    if viol:
        raise VerificationError(viol, what=f"{plan.method} plan for {net.name}")
    report = evaluate_plan(net, arch, plan)
    return SolveResult(Status.FEASIBLE, NetworkPlan(plan, report, plan.method), report.edp,
                       "EDP (µJ·cycles)", timings=Timings(solve=time.perf_counter() - t0),
                       settings={"method": plan.method})  # fmt: skip


def layerwise_cosa(net: Network, arch: Arch, options: SolverOptions | None = None) -> SolveResult:
    """CoSA (:func:`twill.mapping.cosa.solve.solve`) per unique layer shape, no fusion.

    ``options`` go to every CoSA call (default: a 10 s limit); its time limit is per layer
    shape (each solve starts its own clock). A layer CoSA cannot map in time keeps the
    all-DRAM mapping (noted in ``plan.meta``).
    """
    from twill.mapping.cosa.solve import solve
    from twill.mapping.problems import LayerMappingProblem

    t0 = time.perf_counter()
    options = options or SolverOptions(time_limit=10.0)
    cache: dict[str, object] = {}
    failed = []
    mappings = []
    for ly in net.layers:
        if ly.key not in cache:
            res = solve(LayerMappingProblem(ly, arch), options)
            if res.solution is None:
                failed.append(ly.name)
            cache[ly.key] = res.solution.mapping if res.solution else all_dram_mapping(ly, arch)
        mappings.append(cache[ly.key])
    plan = FusionPlan(net.name, tuple(mappings), (), "layerwise-cosa", {"unmapped": failed})
    return _checked(net, arch, plan, t0)


def layerwise_plan(
    net: Network, arch: Arch, mappings: dict[str, Mapping], method: str
) -> SolveResult:
    """An unfused plan from one mapping per layer shape (``mappings`` by
    :attr:`~twill.mapping.workload.Layer.key`, e.g. ``map-network``'s), verified; shapes
    without a mapping keep the all-DRAM mapping (listed in ``plan.meta["unmapped"]``)."""
    t0 = time.perf_counter()
    failed = [ly.name for ly in net.layers if ly.key not in mappings]
    ms = tuple(mappings.get(ly.key) or all_dram_mapping(ly, arch) for ly in net.layers)
    return _checked(net, arch, FusionPlan(net.name, ms, (), method, {"unmapped": failed}), t0)


def greedy_fusion_baseline(net: Network, arch: Arch, layerwise: FusionPlan) -> SolveResult:
    """Greedy fusion on top of a layer-wise plan (mappings unchanged)."""
    t0 = time.perf_counter()
    plan = greedy_fusion(net, arch, layerwise)
    plan = FusionPlan(net.name, plan.mappings, plan.fused, "layerwise-greedy-fusion")
    return _checked(net, arch, plan, t0)


def random_search(
    net: Network,
    arch: Arch,
    *,
    evaluations: int,
    seed: int = 0,
    batch: int = 512,
) -> SolveResult:
    """Random valid mappings per layer with a total budget of ``evaluations`` model calls.

    Parameters
    ----------
    net, arch
        Network and hardware.
    evaluations
        Total layer-mapping evaluations (split evenly over the layers).
    seed
        Seeds the NumPy generator.
    batch
        Mappings evaluated per NumPy call.
    """
    from twill.mapping.search.random import sample_batch

    t0 = time.perf_counter()
    rng = np.random.default_rng(seed)
    per_layer = max(1, evaluations // max(1, len(net.layers)))
    mappings = []
    for ly in net.layers:
        best, best_score, done = all_dram_mapping(ly, arch), np.inf, 0
        while done < per_layer:
            n = min(batch, per_layer - done)
            mb = sample_batch(ly, arch, n, rng=rng)
            cost = evaluate_batch(ly, arch, mb)
            score = np.where(cost.valid, cost.energy_pj * cost.cycles, np.inf)
            k = int(np.argmin(score))
            if score[k] < best_score:
                best_score, best = score[k], mb.mapping(k)
            done += n
        mappings.append(best)
    plan = FusionPlan(net.name, tuple(mappings), (), "random")
    return _checked(net, arch, plan, t0)
