"""Exhaustive search for small layers (the baseline that proves optima).

Enumerates every distinct placement of every prime factor on the (level, temporal | spatial)
choices, keeps the valid tilings, and for each tries every order of its non-unit loops at every
level (orders of unit loops do not change any count). The best by ``metric`` is therefore
optimal over the whole mapping space of the cost model (keep/bypass fixed by the
architecture): status OPTIMAL. Spaces above ``max_mappings`` raise
:class:`~twill.errors.InvalidProblemError` instead of running for hours.
"""

from __future__ import annotations

import itertools
import math
import time

import numpy as np

from twill.errors import InvalidProblemError
from twill.mapping.arch import Arch
from twill.mapping.cost.analytical import MappingBatch, evaluate_batch
from twill.mapping.problems import LayerMappingProblem
from twill.mapping.result import Controls, finished
from twill.mapping.search.common import (
    CANONICAL_ORDER,
    Found,
    SearchSettings,
    choices,
    finish,
    keep_best,
    metric_values,
    start,
    stopped_stats,
)
from twill.mapping.workload import DIMS, Layer, prime_factors
from twill.options import SolverOptions
from twill.registry import register_solver
from twill.results import SolveResult, Status
from twill.validation import check_instance

__all__ = ["count_tilings", "enumerate_mappings", "solve"]

#: Tilings checked for validity per cost-model call (bounds the time between deadline checks).
_CHUNK = 16384


def _dim_options(layer: Layer, arch: Arch, j: int) -> np.ndarray:
    """Distinct ``(n, L, 2)`` (temporal, spatial) factor vectors of dimension ``j``."""
    d = DIMS[j]
    ch = choices(arch, d)
    L = arch.n_levels
    per_prime: list[list[np.ndarray]] = []
    primes: dict[int, int] = {}
    for p in prime_factors(layer.dim(d)):
        if p > 1:
            primes[p] = primes.get(p, 0) + 1
    for p, mult in primes.items():
        opts = []
        for combo in itertools.combinations_with_replacement(range(len(ch)), mult):
            v = np.ones((L, 2), dtype=np.int64)
            for c in combo:
                m, sp = ch[c]
                v[m, int(sp)] *= p
            opts.append(v)
        per_prime.append(opts)
    out = {}
    for parts in itertools.product(*per_prime) if per_prime else [()]:
        v = np.ones((L, 2), dtype=np.int64)
        for part in parts:
            v *= part
        out[v.tobytes()] = v
    return np.array(list(out.values()))


def count_tilings(layer: Layer, arch: Arch) -> int:
    """Number of distinct tilings (before validity) the enumeration visits."""
    return math.prod(len(_dim_options(layer, arch, j)) for j in range(7))


@register_solver("exhaustive", problems=(LayerMappingProblem,), settings=SearchSettings)
def solve(problem: LayerMappingProblem, options: SolverOptions | None = None) -> SolveResult:
    """Enumerate the whole mapping space of the problem's (small) layer; the best mapping.

    ``options.search`` holds ``metric``, ``orders`` (``"all"``: OPTIMAL), ``max_mappings``
    (larger spaces raise :class:`~twill.errors.InvalidProblemError`) and ``batch_size``; the
    evaluation stops at ``options.time_limit`` (then the best so far is FEASIBLE, never
    OPTIMAL, and ``stats["stopped"] == "time_limit"``); ``options.on_progress`` receives an
    ``"enumerate"`` :class:`~twill.progress.ProgressEvent` per batch and a last ``"done"``.

    Examples
    --------
    >>> from twill.mapping.arch import gemmini_arch
    >>> p = LayerMappingProblem(Layer.gemm(4, 4, 4), gemmini_arch(4, 1, 1))
    >>> r = solve(p)
    >>> r.status.value, p.verify(r.solution).ok
    ('optimal', True)
    """
    check_instance(problem, "problem", LayerMappingProblem)
    controls, cfg = start(problem, options, "exhaustive")
    return finished(controls, enumerate_mappings(problem.layer, problem.arch, cfg, controls))


def enumerate_mappings(
    layer: Layer, arch: Arch, cfg: SearchSettings, controls: Controls
) -> SolveResult:
    """The exhaustive search of one checked layer under ``cfg`` and ``controls``: OPTIMAL
    for a complete enumeration of every order, FEASIBLE when cut short or with the canonical
    order only (``stats["stopped"] == "time_limit"`` on a stop)."""
    t0 = time.perf_counter()
    metric, orders, max_mappings = cfg.metric, cfg.orders, cfg.max_mappings
    batch_size = cfg.batch_size or 65536
    T, Sp, total, complete = _valid_tilings(layer, arch, max_mappings, controls.stop)
    n_tilings = int(T.shape[0])
    if orders == "all":
        order_all, own = _all_orders(layer, T, max_mappings, controls.stop)
    else:
        order_all = np.broadcast_to(np.array(CANONICAL_ORDER), (n_tilings, arch.n_levels, 7))
        order_all = order_all.copy()
        own = np.arange(n_tilings)
    best_score, best = np.inf, None
    done = 0
    while done < len(own) and not controls.expired():
        sel = own[done : done + batch_size]
        batch = MappingBatch(T[sel], Sp[sel], order_all[done : done + batch_size])
        score = metric_values(evaluate_batch(layer, arch, batch), metric)
        done += len(sel)
        best_score, best = keep_best(score, np.arange(len(score)), batch, (best_score, best))
        controls.emit("enumerate", step=done, total=int(len(own)),
                      incumbent=None if best is None else best_score)  # fmt: skip
    listed = n_tilings == 0 or (len(own) > 0 and int(own[-1]) == n_tilings - 1)
    complete = complete and (orders != "all" or listed)
    stopped = stopped_stats(controls.stop, complete and done >= len(own))
    stats = {"tilings": total, "valid_tilings": n_tilings, "evaluated": done, **stopped}
    status = _status(orders == "all", best is not None, bool(stopped))
    score = None if best is None else best_score
    found = Found("exhaustive", best, score, stats, {"metric": metric, "orders": orders}, status)
    return finish(layer, arch, found, t0, controls.seed)


def _valid_tilings(
    layer: Layer, arch: Arch, max_mappings: int, stop: float = math.inf
) -> tuple[np.ndarray, np.ndarray, int, bool]:
    """Every valid tiling (temporal and spatial factor tables, ``(n, levels, 7)`` each), the
    number of tilings enumerated and whether all were checked; refuses spaces over
    ``max_mappings``. Validity is checked in chunks; at ``stop`` (a ``perf_counter`` value)
    the valid tilings found so far are returned."""
    opts = [_dim_options(layer, arch, j) for j in range(7)]
    total = math.prod(len(o) for o in opts)
    if total > max_mappings:
        raise InvalidProblemError(
            f"exhaustive search: {total} tilings exceed max_mappings={max_mappings}; "
            "use --method cosa or hybrid for this layer",
            source=layer.name,
        )
    grids = np.indices([len(o) for o in opts]).reshape(7, -1)
    T = np.stack([opts[j][grids[j], :, 0] for j in range(7)], axis=2)
    Sp = np.stack([opts[j][grids[j], :, 1] for j in range(7)], axis=2)
    valid = np.zeros(T.shape[0], dtype=bool)
    for lo in range(0, T.shape[0], _CHUNK):
        if time.perf_counter() >= stop:
            return T[valid], Sp[valid], total, False
        hi = min(lo + _CHUNK, T.shape[0])
        canon = np.broadcast_to(np.array(CANONICAL_ORDER), (hi - lo, arch.n_levels, 7))
        batch = MappingBatch(T[lo:hi], Sp[lo:hi], canon.copy())
        valid[lo:hi] = evaluate_batch(layer, arch, batch).valid
    return T[valid], Sp[valid], total, True


def _all_orders(
    layer: Layer, T: np.ndarray, max_mappings: int, stop: float = math.inf
) -> tuple[np.ndarray, np.ndarray]:
    """Every loop order of the non-unit loops of each level, for each tiling of ``T``: the
    orders ``(n, levels, 7)`` and the tiling each row belongs to; refuses more than
    ``max_mappings`` (tiling, order) pairs. At ``stop`` (a ``perf_counter`` value) the rows
    listed so far are returned (the search then stops unfinished)."""
    L = T.shape[1]
    rows_o, rows_t = [], []
    for t in range(T.shape[0]):
        if time.perf_counter() >= stop:
            break
        per_level = []
        for m in range(L):
            live = [j for j in CANONICAL_ORDER if T[t, m, j] > 1]
            rest = [j for j in CANONICAL_ORDER if T[t, m, j] == 1]
            per_level.append([list(p) + rest for p in itertools.permutations(live)])
        if len(rows_o) + math.prod(len(x) for x in per_level) > max_mappings:
            raise InvalidProblemError(
                f"exhaustive search: more than max_mappings={max_mappings} "
                "(tiling, order) pairs; use orders='canonical' or another method",
                source=layer.name,
            )
        for combo in itertools.product(*per_level):
            rows_o.append(combo)
            rows_t.append(t)
    return np.array(rows_o, dtype=np.int64).reshape(-1, L, 7), np.array(rows_t, dtype=np.int64)


def _status(all_orders: bool, found: bool, stopped: bool) -> Status:
    """OPTIMAL only for a complete enumeration of every order; INFEASIBLE only when every
    candidate was evaluated and none is valid; a stop on the time limit proves nothing."""
    if found:
        return Status.OPTIMAL if all_orders and not stopped else Status.FEASIBLE
    return Status.UNKNOWN if stopped else Status.INFEASIBLE
