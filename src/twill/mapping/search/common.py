"""Shared pieces of the search baselines: choice tables, metrics, verified results."""

from __future__ import annotations

import time
from dataclasses import asdict, dataclass, replace
from typing import Any

import numpy as np

from twill.errors import InvalidProblemError, VerificationError
from twill.mapping.arch import Arch
from twill.mapping.cost.analytical import BatchCost, MappingBatch, evaluate
from twill.mapping.mapping import Mapping, verify_mapping
from twill.mapping.problems import LayerMappingProblem
from twill.mapping.result import Controls, MappedLayer, method_settings, objective_meaning
from twill.mapping.workload import Dim, Layer
from twill.options import MethodSettings, SolverOptions
from twill.results import SolveResult, Status, Timings

__all__ = [
    "METRICS",
    "SearchSettings",
    "start",
    "choices",
    "metric_values",
    "finish",
    "CANONICAL_ORDER",
    "Found",
    "stopped_stats",
    "finish_sampled",
    "keep_best",
]

#: Metrics the searches minimise: ``edp`` (default), ``cycles``, ``energy``, or ``lex``
#: (cycles first, energy breaks ties).
METRICS = ("edp", "cycles", "energy", "lex")

#: CoSA's fixed loop order R,S,P,Q,C,K,N innermost first, i.e. outer -> inner N K C Q P S R.
CANONICAL_ORDER = (6, 5, 4, 3, 2, 1, 0)


@dataclass(frozen=True)
class SearchSettings(MethodSettings, slot="search"):
    """The search mappers' settings (``options.search``); ``None`` means the mapper's own
    default.

    Attributes
    ----------
    n_valid
        Valid mappings evaluated before stopping (random: 5, the CoSA paper's; random16k and
        hybrid: 16,000).
    metric
        What "best" means: ``edp`` (default), ``cycles``, ``energy`` or ``lex``.
    permute
        Random: a random loop order per level (default) or CoSA's canonical order.
    permutations_per_tiling
        Hybrid: loop orders tried per valid tiling (Timeloop's default 16).
    orders
        Exhaustive: ``"all"`` (every order of the non-unit loops; OPTIMAL) or
        ``"canonical"`` (CoSA's order only; FEASIBLE).
    max_samples
        Random and hybrid: draws before giving up (random 2,000,000; hybrid 5,000,000).
    max_mappings
        Exhaustive: refuse spaces with more tilings (or tiling x order pairs) than this.
    batch_size
        Mappings evaluated per NumPy call (random and hybrid 8,192; exhaustive 65,536).
    """

    n_valid: int | None = None
    metric: str = "edp"
    permute: bool = True
    permutations_per_tiling: int = 16
    orders: str = "all"
    max_samples: int | None = None
    max_mappings: int = 2_000_000
    batch_size: int | None = None

    def to_dict(self) -> dict[str, Any]:
        """Every field, JSON-ready."""
        return asdict(self)


def start(
    problem: LayerMappingProblem, options: SolverOptions | None, method: str
) -> tuple[Controls, SearchSettings]:
    """The first steps of every search's ``solve``: the controls (the clock starts here),
    ``problem.check()`` and ``options.search``."""
    options = SolverOptions.of(options)
    controls = Controls.of(options, method)
    problem.check()
    cfg = method_settings(options, "search", SearchSettings)
    if cfg.metric not in METRICS:
        raise InvalidProblemError(f"options.search.metric must be one of {METRICS}, "
                                  f"found {cfg.metric!r}")  # fmt: skip
    return controls, cfg


def choices(arch: Arch, d: Dim) -> list[tuple[int, bool]]:
    """Where one prime factor of ``d`` may go: (level, spatial?) pairs (CoSA's random baseline)."""
    out = [(m, False) for m in range(arch.n_levels)]
    for m, lv in enumerate(arch.levels):
        if arch.fanout(m) > 1 and (lv.spatial_dims is None or d in lv.spatial_dims):
            out.append((m, True))
    return out


def metric_values(cost: BatchCost, metric: str) -> np.ndarray:
    """Scalar score per mapping (lower is better)."""
    if metric == "edp":
        return cost.edp
    if metric == "cycles":
        return cost.cycles.astype(float)
    if metric == "energy":
        return cost.energy_pj
    if metric == "lex":
        e = cost.energy_pj
        return cost.cycles.astype(float) + e / (float(np.max(e)) * 2.0 + 1.0)
    raise ValueError(f"metric must be one of {METRICS}, got {metric!r}")


@dataclass(frozen=True)
class Found:
    """What a search found: its ``method``, best ``mapping`` (``None``: none), its score as
    ``objective``, its statistics and settings, and the ``status`` it proves."""

    method: str
    mapping: Mapping | None
    objective: float | None
    stats: dict[str, Any]
    settings: dict[str, Any]
    status: Status = Status.FEASIBLE


def finish(layer: Layer, arch: Arch, found: Found, t0: float, seed: int | None) -> SolveResult:
    """Verify, evaluate and wrap what a search found (``t0``: its start); an unverifiable
    mapping is a bug (raises)."""
    t_solve = time.perf_counter() - t0
    unit = objective_meaning(found.method, found.settings.get("metric", "edp"))[1]
    settings = {"method": found.method, **found.settings}
    if found.mapping is None:
        return SolveResult(found.status, objective_unit=unit, timings=Timings(solve=t_solve),
                           stats=found.stats, settings=settings, seed=seed)  # fmt: skip
    t1 = time.perf_counter()
    violations = verify_mapping(layer, arch, found.mapping)
    if violations:
        raise VerificationError(violations, what=f"{found.method} mapping of {layer.name}")
    solution = MappedLayer(layer.name, found.mapping, evaluate(layer, arch, found.mapping))
    timings = Timings(solve=t_solve, verify=time.perf_counter() - t1)
    return SolveResult(found.status, solution, found.objective, unit, timings=timings,
                       stats=found.stats, settings=settings, seed=seed)  # fmt: skip


def stopped_stats(stop: float, done: bool) -> dict[str, str]:
    """``{"stopped": "time_limit"}`` when a search that is not ``done`` ran out of time."""
    return {"stopped": "time_limit"} if not done and time.perf_counter() >= stop else {}


def finish_sampled(
    layer: Layer, arch: Arch, found: Found, controls: Controls, t0: float, done: bool
) -> SolveResult:
    """:func:`finish` for a sampling search: FEASIBLE with its best mapping, UNKNOWN without
    one (sampling proves nothing: :func:`finish` drops the objective of a search that found
    no mapping); a search not ``done`` at its stop records the stop."""
    status = Status.FEASIBLE if found.mapping is not None else Status.UNKNOWN
    stats = {**found.stats, **stopped_stats(controls.stop, done)}
    return finish(layer, arch, replace(found, status=status, stats=stats), t0, controls.seed)


def keep_best(
    score: np.ndarray,
    rows: np.ndarray,
    batch: MappingBatch,
    best: tuple[float, Mapping | None],
) -> tuple[float, Mapping | None]:
    """``best`` (score, mapping) updated with the lowest ``score`` of a batch, whose entries
    belong to the batch's ``rows``; ties keep the earlier mapping."""
    k = int(np.argmin(score))
    if score[k] < best[0]:
        return float(score[k]), batch.mapping(int(rows[k]))
    return best
