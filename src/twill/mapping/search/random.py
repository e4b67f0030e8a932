"""Random-mapping baseline (CoSA paper: "best of 5 valid schedules").

Each prime factor of every loop bound independently draws one of the (level, temporal |
spatial) choices of the architecture (Simba: 6 temporal + 3 spatial = 9). Invalid samples
(capacity, fan-out) are rejected; the first ``n_valid`` valid ones are evaluated and the best
by ``metric`` is returned. Loop orders are drawn uniformly per level, or fixed to
CoSA's canonical order with ``permute=False``.

Guarantee: none (a heuristic); FEASIBLE when at least one valid sample was found, UNKNOWN when
``max_samples`` ran out first. Same seed, same result.
"""

from __future__ import annotations

import math
import time

import numpy as np

from twill.mapping.arch import Arch
from twill.mapping.cost.analytical import MappingBatch, evaluate_batch, valid_batch
from twill.mapping.mapping import Mapping
from twill.mapping.problems import LayerMappingProblem
from twill.mapping.result import Controls, finished
from twill.mapping.search.common import (
    CANONICAL_ORDER,
    Found,
    SearchSettings,
    choices,
    finish_sampled,
    keep_best,
    metric_values,
    start,
)
from twill.mapping.workload import ALL_DIMS, DIMS, Layer, prime_factors
from twill.options import SolverOptions
from twill.registry import register_solver
from twill.results import SolveResult
from twill.validation import check_instance

__all__ = ["sample_batch", "random_orders", "sample_search", "valid_samples", "solve"]


def random_orders(rng: np.random.Generator, n: int, levels: int) -> np.ndarray:
    """``(n, levels, 7)`` uniformly random loop orders (dimension indices, outer -> inner)."""
    return np.argsort(rng.random((n, levels, 7)), axis=2)


def sample_batch(
    layer: Layer,
    arch: Arch,
    n: int,
    *,
    seed: int | None = None,
    rng: np.random.Generator | None = None,
    permute: bool = True,
) -> MappingBatch:
    """Draw ``n`` random perfect factorisations (valid or not) as a :class:`MappingBatch`;
    a grouped layer's G primes are placed like the others' (``group_temporal/spatial``).

    Examples
    --------
    >>> from twill.mapping.arch import simba_arch
    >>> b = sample_batch(Layer("l", {"P": 8, "K": 4}), simba_arch(), 3, seed=0)
    >>> b.temporal.shape, int((b.temporal * b.spatial)[0].prod(axis=0)[2])
    ((3, 6, 7), 8)
    """
    rng = rng if rng is not None else np.random.default_rng(seed)
    T, Sp, keys = _draw(layer, arch, n, rng, permute)
    return _as_batch(layer, T, Sp, _orders(keys, n, arch.n_levels))


def _draw(
    layer: Layer, arch: Arch, n: int, rng: np.random.Generator, permute: bool
) -> tuple[np.ndarray, np.ndarray, np.ndarray | None]:
    """Factors ``(n, L, 7 or 8)`` (G last for a grouped layer) and the loop-order keys
    ``(n, L, 7)`` (``None`` without ``permute``) of ``n`` draws: per dimension, each prime
    draws a choice index; the primes of one choice multiply into one column."""
    L = arch.n_levels
    dims = ALL_DIMS if layer.groups > 1 else DIMS
    T = np.ones((n, L, len(dims)), dtype=np.int64)
    Sp = np.ones((n, L, len(dims)), dtype=np.int64)
    rows = np.arange(n)
    for j, d in enumerate(dims):
        primes = [p for p in prime_factors(layer.dim(d)) if p > 1]
        if not primes:
            continue
        ch = choices(arch, d)
        F = np.ones((n, len(ch)), dtype=np.int64)
        for p in primes:
            F[rows, rng.integers(0, len(ch), n)] *= p
        for k, (m, spatial) in enumerate(ch):
            (Sp if spatial else T)[:, m, j] *= F[:, k]
    return T, Sp, rng.random((n, L, 7)) if permute else None


def _orders(keys: np.ndarray | None, n: int, levels: int) -> np.ndarray:
    """Loop orders of the keys (``None``: CoSA's canonical order)."""
    if keys is not None:
        return np.argsort(keys, axis=2)
    return np.broadcast_to(np.array(CANONICAL_ORDER), (n, levels, 7)).copy()


def _as_batch(layer: Layer, T: np.ndarray, Sp: np.ndarray, order: np.ndarray) -> MappingBatch:
    """The batch of factors from :func:`_draw` with ``order``."""
    if layer.groups == 1:
        return MappingBatch(T, Sp, order)
    return MappingBatch(T[..., :7], Sp[..., :7], order, T[..., 7], Sp[..., 7])


@register_solver("random", problems=(LayerMappingProblem,), settings=SearchSettings)
def solve(problem: LayerMappingProblem, options: SolverOptions | None = None) -> SolveResult:
    """Best of the first ``n_valid`` valid random mappings of the problem's layer.

    ``options.search`` (a :class:`~twill.mapping.search.common.SearchSettings`) holds
    ``n_valid`` (default 5), ``metric``, ``permute``, ``max_samples`` and ``batch_size``;
    ``options.seed`` seeds the one generator; the search stops drawing at
    ``options.time_limit`` (the best valid mapping so far is returned,
    ``stats["stopped"] == "time_limit"``); ``options.on_progress`` receives a ``"sample"``
    :class:`~twill.progress.ProgressEvent` per batch and a last ``"done"``.

    Examples
    --------
    >>> from twill.mapping.arch import simba_arch
    >>> p = LayerMappingProblem(Layer("l", {"P": 14, "Q": 14, "C": 16, "K": 16}), simba_arch())
    >>> r = solve(p, SolverOptions(seed=1))
    >>> r.status.value, p.verify(r.solution).ok
    ('feasible', True)
    """
    check_instance(problem, "problem", LayerMappingProblem)
    controls, cfg = start(problem, options, "random")
    return finished(controls, sample_search(problem.layer, problem.arch, cfg, controls))


def sample_search(layer: Layer, arch: Arch, cfg: SearchSettings, controls: Controls) -> SolveResult:
    """The random search of one checked layer under ``cfg`` and ``controls``; ``stats`` holds
    the ``samples`` drawn and the ``valid`` ones found."""
    t0 = time.perf_counter()
    n_valid = 5 if cfg.n_valid is None else cfg.n_valid
    max_samples = cfg.max_samples or 2_000_000
    batch_size, metric, permute = cfg.batch_size or 8192, cfg.metric, cfg.permute
    rng = np.random.default_rng(controls.seed)
    best_score, best = np.inf, None
    samples = found = 0
    while found < n_valid and samples < max_samples and not controls.expired():
        size = min(batch_size, max_samples - samples)
        batch, idx = _valid_draws(layer, arch, size, rng, permute, n_valid - found)
        samples += size
        if idx.size:
            found += idx.size
            score = metric_values(evaluate_batch(layer, arch, batch), metric)
            best_score, best = keep_best(score, np.arange(idx.size), batch, (best_score, best))
        controls.emit("sample", step=samples, total=max_samples, message=f"{found} valid",
                      incumbent=None if best is None else best_score)  # fmt: skip
    stats = {"samples": samples, "valid": found}
    settings = {"n_valid": n_valid, "metric": metric, "permute": permute}
    done = found >= n_valid or samples >= max_samples
    return finish_sampled(layer, arch, Found("random", best, best_score, stats, settings), controls,
                          t0, done)  # fmt: skip


def valid_samples(
    layer: Layer, arch: Arch, n: int, *, seed: int | None, stop: float = math.inf
) -> list[Mapping]:
    """The first ``n`` valid mappings of the random search's stream (same seed, same batches
    as :func:`sample_search`; at most 2,000,000 draws, none after ``stop``)."""
    rng = np.random.default_rng(seed)
    out: list[Mapping] = []
    samples = 0
    while len(out) < n and samples < 2_000_000 and time.perf_counter() < stop:
        batch, idx = _valid_draws(layer, arch, 8192, rng, True, n - len(out))
        samples += 8192
        out += [batch.mapping(i) for i in range(idx.size)]
    return out


def _valid_draws(
    layer: Layer, arch: Arch, n: int, rng: np.random.Generator, permute: bool, most: int
) -> tuple[MappingBatch, np.ndarray]:
    """The first ``most`` valid rows of ``n`` draws as a batch, and their draw indices; only
    those rows' loop orders are sorted (validity does not depend on the order)."""
    T, Sp, keys = _draw(layer, arch, n, rng, permute)
    probe = _as_batch(layer, T, Sp, np.zeros((n, arch.n_levels, 7), dtype=np.int64))
    idx = np.flatnonzero(valid_batch(layer, arch, probe))[:most]
    order = _orders(None if keys is None else keys[idx], idx.size, arch.n_levels)
    return _as_batch(layer, T[idx], Sp[idx], order), idx
