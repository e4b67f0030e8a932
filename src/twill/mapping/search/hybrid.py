"""Timeloop-Hybrid-like search (CoSA paper: "best of 16K valid schedules").

Like Timeloop's ``hybrid`` mapper: draw a random tiling (index factorisation, spatial
included); when it is valid, walk up to ``permutations_per_tiling`` (Timeloop's
``max-permutations-per-if-visit``, default 16) random loop orders for it; stop after
``n_valid`` valid evaluations (16,000) and return the best by ``metric`` (EDP, current
Timeloop's default; ``cycles``, ``energy``, ``lex`` also available). Evaluations use the
batched cost model, so 16,000 mappings cost well under a second of model time.

Guarantee: none (a heuristic). FEASIBLE with a mapping, UNKNOWN if no valid tiling was found
within ``max_samples`` draws. Same seed, same result.
"""

from __future__ import annotations

import time
from dataclasses import replace

import numpy as np

from twill.mapping.arch import Arch
from twill.mapping.cost.analytical import MappingBatch, evaluate_batch, valid_batch
from twill.mapping.problems import LayerMappingProblem
from twill.mapping.result import Controls, finished
from twill.mapping.search.common import (
    Found,
    SearchSettings,
    finish_sampled,
    keep_best,
    metric_values,
    start,
)
from twill.mapping.search.random import random_orders, sample_batch
from twill.mapping.workload import Layer
from twill.options import SolverOptions
from twill.registry import register_solver
from twill.results import SolveResult
from twill.validation import check_instance

__all__ = ["tiling_search", "solve"]


@register_solver("hybrid", problems=(LayerMappingProblem,), settings=SearchSettings)
def solve(problem: LayerMappingProblem, options: SolverOptions | None = None) -> SolveResult:
    """Timeloop-Hybrid-like search of the problem's layer (module docstring).

    ``options.search`` holds ``n_valid`` (default 16,000), ``permutations_per_tiling``,
    ``metric``, ``max_samples`` and ``batch_size``; the seed, the time limit (the best
    mapping so far is returned, ``stats["stopped"] == "time_limit"``) and the progress
    events (``"sample"`` per batch, then ``"done"``) come from ``options``.

    Examples
    --------
    >>> from twill.mapping.arch import simba_arch
    >>> from twill.mapping.search.common import SearchSettings
    >>> p = LayerMappingProblem(Layer("l", {"P": 14, "C": 16, "K": 16}), simba_arch())
    >>> r = solve(p, SolverOptions(search=SearchSettings(n_valid=320)))
    >>> r.stats["evaluated"], p.verify(r.solution).ok
    (320, True)
    """
    check_instance(problem, "problem", LayerMappingProblem)
    controls, cfg = start(problem, options, "hybrid")
    return finished(controls, tiling_search(problem.layer, problem.arch, cfg, controls))


def tiling_search(layer: Layer, arch: Arch, cfg: SearchSettings, controls: Controls) -> SolveResult:
    """The hybrid search of one checked layer under ``cfg`` and ``controls``; ``stats``
    holds the tilings drawn (``samples``), the mappings ``evaluated`` and the valid
    ``tilings`` used."""
    t0 = time.perf_counter()
    n_valid = 16_000 if cfg.n_valid is None else cfg.n_valid
    max_samples = cfg.max_samples or 5_000_000
    batch_size, metric = cfg.batch_size or 8192, cfg.metric
    rng = np.random.default_rng(controls.seed)
    ppt = max(1, cfg.permutations_per_tiling)
    best_score, best = np.inf, None
    samples = evaluated = tilings_used = 0
    while evaluated < n_valid and samples < max_samples and not controls.expired():
        size = min(batch_size, max_samples - samples)
        tiles = sample_batch(layer, arch, size, rng=rng, permute=False)
        samples += size
        ok = valid_batch(layer, arch, tiles)  # validity does not depend on the order
        idx = np.flatnonzero(ok)[: -(-(n_valid - evaluated) // ppt)]
        if idx.size == 0:
            continue
        tilings_used += idx.size
        batch = _with_orders(tiles, idx, ppt, n_valid - evaluated, rng)
        cost = evaluate_batch(layer, arch, batch)
        evaluated += batch.temporal.shape[0]
        score = metric_values(cost, metric)
        best_score, best = keep_best(score, np.arange(len(score)), batch, (best_score, best))
        controls.emit("sample", step=evaluated, total=n_valid, incumbent=best_score,
                      message=f"{samples} tilings drawn")  # fmt: skip
    stats = {"samples": samples, "evaluated": evaluated, "tilings": tilings_used}
    settings = {"n_valid": n_valid, "permutations_per_tiling": ppt, "metric": metric}
    done = evaluated >= n_valid or samples >= max_samples
    return finish_sampled(layer, arch, Found("hybrid", best, best_score, stats, settings), controls,
                          t0, done)  # fmt: skip


def _with_orders(
    tiles: MappingBatch, idx: np.ndarray, ppt: int, room: int, rng: np.random.Generator
) -> MappingBatch:
    """The valid tilings ``idx`` of ``tiles``, each repeated ``ppt`` times with random loop
    orders, cut to ``room`` rows."""
    chosen = tiles.take(np.repeat(idx, ppt)[:room])
    return replace(chosen, order=random_orders(rng, chosen.temporal.shape[0], tiles.order.shape[1]))
