"""CoSA for the cost model's EDP (method ``cosa-edp``, the default of ``map-network`` and
``fuse``): CoSA's MIP candidates and a seeded evolutionary search on the true cost model, each
polished by a local search on the energy-delay product. Not CoSA's method; never claimed
optimal.

Why: CoSA's objective is a log-domain proxy. On awkward shapes it is far from the cost
model's optimum: ViT's FFN fc1 (197 tokens, a prime) on Simba gets P=197 at DRAM and every
weight re-read 197 times, 3.3x worse in EDP than a 16,000-sample random search
(docs/benchmarks.md). A single-factor local search from CoSA's mapping cannot escape (moving
197 on chip needs several moves at once); polishing the best of a few random draws escaped on
fc1 but stopped 1.29x above ``random16k`` on the 768x768 projection. Mutating the best
mappings found so far, thousands at a time on the batched model, reaches below both.

What it does, per layer:

1. CoSA: :func:`~twill.mapping.cosa.rerank.rerank` (the pure CoSA MIP and its restricted
   variants, loop orders polished) ranked by EDP;
2. evolution: :func:`~twill.mapping.search.evolve.evolve` from CoSA's mapping and the first
   ``n_random`` valid random draws (:func:`~twill.mapping.search.random.valid_samples`, the
   random search's stream), ``generations`` rounds of 2,048 mutants of the 32 best;
3. both results polished by :func:`~twill.mapping.fadiff.polish.polish_mappings`
   (prime-factor moves, repair pairs and loop orders on the tangent of the EDP,
   re-linearised, never worse); the verified one with the lower EDP wins.

Guarantee: FEASIBLE with a verified mapping whose EDP is no worse than ``cosa-rerank``'s with
``metric="edp"`` (its mapping is a candidate and the polish never worsens it), nor than the
best of the first ``n_random`` valid draws of ``random`` with the same seed. Against
``random16k`` (16,000 valid draws) there is no proof: docs/benchmarks.md measures it layer by
layer on the test networks.
"""

from __future__ import annotations

import time
from dataclasses import replace
from typing import Any

from twill.errors import VerificationError
from twill.mapping.arch import Arch
from twill.mapping.cosa.solve import CoSASettings, incumbent_events, start
from twill.mapping.cost.analytical import evaluate
from twill.mapping.mapping import Mapping, verify_mapping
from twill.mapping.problems import LayerMappingProblem
from twill.mapping.result import Controls, MappedLayer, finished, objective_meaning
from twill.mapping.workload import Layer
from twill.options import SolverOptions
from twill.registry import register_solver
from twill.results import SolveResult, Status, Timings
from twill.validation import check_instance

__all__ = ["edp_search", "solve"]


@register_solver("cosa-edp", problems=(LayerMappingProblem,), settings=CoSASettings)
def solve(problem: LayerMappingProblem, options: SolverOptions | None = None) -> SolveResult:
    """``cosa-edp`` on the problem's layer (module docstring).

    ``options`` as :func:`twill.mapping.cosa.solve.solve`; ``options.cosa.n_random`` valid
    random starts (seeded by ``options.seed``) join CoSA's candidates; ``options.time_limit``
    bounds the MIPs and the random starts together (the polish that follows takes about a
    second).

    Examples
    --------
    >>> from twill.mapping.arch import simba_arch
    >>> p = LayerMappingProblem(Layer("fc", {"P": 16, "C": 64, "K": 64}), simba_arch())
    >>> r = solve(p, SolverOptions(cosa=CoSASettings(n_random=20, generations=2)))
    >>> r.settings["method"], r.status.value, p.verify(r.solution).ok
    ('cosa-edp', 'feasible', True)
    """
    check_instance(problem, "problem", LayerMappingProblem)
    controls, cfg = start(problem, options, "cosa-edp")
    return finished(controls, edp_search(problem.layer, problem.arch, cfg, controls))


def edp_search(layer: Layer, arch: Arch, cfg: CoSASettings, controls: Controls) -> SolveResult:
    """``cosa-edp`` of one checked layer under ``cfg``: the MIPs and the random starts stop
    at ``controls.stop``.

    FEASIBLE with a verified mapping, objective = its EDP (µJ·cycles);
    ``stats["candidates"]`` gives each start's EDP before and after the polish,
    ``stats["chosen"]`` the winner."""
    from twill.mapping.cosa.rerank import rerank
    from twill.mapping.fadiff.polish import polish_mappings

    t0 = time.perf_counter()
    n_random, seed = cfg.n_random, cfg.seed
    base = rerank(layer, arch, replace(cfg, metric="edp"), incumbent_events(controls),
                  controls.stop)  # fmt: skip
    starts = [("cosa-rerank", base.solution.mapping if base.solution is not None else None)]
    starts.append(("evolve", _evolved(layer, arch, cfg, controls, starts[0][1])))
    cands: list[dict[str, Any]] = []
    best: tuple[float, str, Any, Any] | None = None
    for name, first in starts:
        if first is None:
            cands.append({"start": name, "status": "no mapping"})
            continue
        mapping = polish_mappings([layer], arch, [first], stop=controls.stop)[0]
        bad = verify_mapping(layer, arch, mapping)
        if bad:
            raise VerificationError(bad, what=f"cosa-edp mapping of {layer.name}")
        rep = evaluate(layer, arch, mapping)
        cands.append({"start": name, "edp_start": evaluate(layer, arch, first).edp, "edp": rep.edp})
        if best is None or rep.edp < best[0]:
            best = (rep.edp, name, mapping, rep)
    timings = Timings(solve=time.perf_counter() - t0)
    settings = {**base.settings, "method": "cosa-edp", "n_random": n_random,
                "generations": cfg.generations, "seed": seed}  # fmt: skip
    unit = objective_meaning("cosa-edp")[1]
    if best is None:
        status = base.status if not base.status.has_solution else Status.ERROR
        return SolveResult(status, objective_unit=unit, timings=timings,
                           stats={"candidates": cands}, settings=settings)  # fmt: skip
    return SolveResult(Status.FEASIBLE, MappedLayer(layer.name, best[2], best[3]), best[0], unit,
                       timings=timings, stats={"candidates": cands, "chosen": best[1]},
                       settings=settings, seed=seed)  # fmt: skip


def _evolved(
    layer: Layer, arch: Arch, cfg: CoSASettings, controls: Controls, cosa: Mapping | None
) -> Mapping | None:
    """The evolutionary search (:func:`~twill.mapping.search.evolve.evolve`, seeded) from
    CoSA's mapping and the first ``cfg.n_random`` valid random mappings."""
    from twill.mapping.search.evolve import EvolveSettings, evolve
    from twill.mapping.search.random import valid_samples

    starts = [] if cosa is None else [cosa]
    starts += valid_samples(layer, arch, cfg.n_random, seed=cfg.seed, stop=controls.stop)
    if not starts:
        return None
    settings = EvolveSettings(generations=cfg.generations)
    return evolve(layer, arch, starts, settings, seed=cfg.seed, stop=controls.stop)
