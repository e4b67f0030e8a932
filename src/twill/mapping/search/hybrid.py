"""Timeloop-Hybrid-like search (CoSA spec §7.2; paper: "best of 16K valid schedules").

Like Timeloop's ``hybrid`` mapper: draw a random tiling (index factorisation, spatial
included); when it is valid, walk up to ``permutations_per_tiling`` (Timeloop's
``max-permutations-per-if-visit``, default 16) random loop orders for it; stop after
``n_valid`` valid evaluations (16,000) and return the best by ``metric`` (DEC-14: EDP, current
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
from twill.mapping.cost.analytical import MappingBatch, evaluate_batch
from twill.mapping.result import MapResult
from twill.mapping.search.common import finish_sampled, keep_best, metric_values, search_controls
from twill.mapping.search.random import random_orders, sample_batch
from twill.mapping.workload import Layer
from twill.options import SolverOptions

__all__ = ["hybrid_search"]


def hybrid_search(
    layer: Layer,
    arch: Arch,
    *,
    n_valid: int = 16_000,
    permutations_per_tiling: int = 16,
    seed: int = 0,
    metric: str = "edp",
    max_samples: int = 5_000_000,
    batch_size: int = 8192,
    options: SolverOptions | None = None,
) -> MapResult:
    """Best of ``n_valid`` valid mappings, ``permutations_per_tiling`` orders per valid tiling.

    Parameters
    ----------
    layer, arch
        The layer and the accelerator.
    n_valid
        Valid evaluations before stopping (16,000 as in the paper).
    permutations_per_tiling
        Loop orders tried per valid tiling (Timeloop's default 16).
    seed
        Seeds the one generator.
    metric
        What "best" means: ``edp`` (default), ``cycles``, ``energy`` or ``lex``.
    max_samples
        Tilings drawn before giving up.
    options
        Shared solver options; when given, ``options.seed`` replaces ``seed``, the search
        stops drawing at ``options.time_limit`` (the best valid mapping so far is returned,
        ``stats["stopped"] == "time_limit"``) and ``options.on_progress`` receives
        ``{"samples", "evaluated", "best"}`` after each batch.

    Returns
    -------
    MapResult

    Examples
    --------
    >>> from twill.mapping.arch import simba_arch
    >>> r = hybrid_search(Layer("l", {"P": 14, "C": 16, "K": 16}), simba_arch(), n_valid=320)
    >>> r.stats["evaluated"], r.report.valid
    (320, True)
    """
    t0 = time.perf_counter()
    seed, stop, report = search_controls(seed, options)
    rng = np.random.default_rng(seed)
    ppt = max(1, permutations_per_tiling)
    best_score, best = np.inf, None
    samples = evaluated = tilings_used = 0
    while evaluated < n_valid and samples < max_samples and time.perf_counter() < stop:
        size = min(batch_size, max_samples - samples)
        tiles = sample_batch(layer, arch, size, rng=rng, permute=False)
        samples += size
        ok = evaluate_batch(layer, arch, tiles).valid  # validity does not depend on the order
        idx = np.flatnonzero(ok)[: -(-(n_valid - evaluated) // ppt)]
        if idx.size == 0:
            continue
        tilings_used += idx.size
        batch = _with_orders(tiles, idx, ppt, n_valid - evaluated, rng)
        cost = evaluate_batch(layer, arch, batch)
        evaluated += batch.temporal.shape[0]
        score = metric_values(cost, metric)
        best_score, best = keep_best(score, np.arange(len(score)), batch, (best_score, best))
        if report is not None:
            report({"samples": samples, "evaluated": evaluated, "best": best_score})
    return finish_sampled(
        layer,
        arch,
        best,
        best_score,
        method="hybrid",
        t0=t0,
        stop=stop,
        done=evaluated >= n_valid or samples >= max_samples,
        stats={"samples": samples, "evaluated": evaluated, "tilings": tilings_used},
        settings={"n_valid": n_valid, "permutations_per_tiling": ppt, "metric": metric},
        seed=seed,
    )


def _with_orders(
    tiles: MappingBatch, idx: np.ndarray, ppt: int, room: int, rng: np.random.Generator
) -> MappingBatch:
    """The valid tilings ``idx`` of ``tiles``, each repeated ``ppt`` times with random loop
    orders, cut to ``room`` rows."""
    chosen = tiles.take(np.repeat(idx, ppt)[:room])
    return replace(chosen, order=random_orders(rng, chosen.temporal.shape[0], tiles.order.shape[1]))
