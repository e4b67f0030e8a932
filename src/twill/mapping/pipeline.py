"""Whole networks: each layer → mapper → verify + cost → reduce → network report.

The chain, spelled out:

1. **layers**: a list of :class:`~twill.mapping.workload.Layer` (unique shapes with counts, as
   :func:`twill.io.timeloop.read_network` returns them);
2. **mapper**: :func:`map_layer` with one of ``cosa``, ``cosa-rerank``, ``random``,
   ``random16k``, ``hybrid``, ``exhaustive`` (each runs check → solve → verify and returns a
   :class:`MapResult`);
3. **cost**: the verified mapping's :class:`CostReport` (inside the result);
4. **reduce**: per method, the network total ``sum(report)`` weighted by layer counts (layers run
   sequentially, so latencies add);
5. **report**: :class:`NetworkResult` (``to_dict``) for the CLI, the benchmark and the plots.

Layers are independent, so step 2 runs in parallel: a local process pool by default, or Ray
(``executor="ray"``) on an existing cluster (``ray.init(address=...)``). The core never prints;
progress goes through the ``on_result`` callback.
"""

from __future__ import annotations

import logging
import os
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any

from twill.errors import BackendUnavailableError, InvalidProblemError
from twill.mapping.arch import Arch
from twill.mapping.cost.analytical import CostReport
from twill.mapping.result import MapResult
from twill.mapping.workload import Layer
from twill.options import SolverOptions
from twill.results import Status

__all__ = ["MAPPERS", "map_layer", "map_network", "NetworkResult"]

log = logging.getLogger(__name__)

#: Mapper names accepted by :func:`map_layer`.
MAPPERS = ("cosa", "cosa-rerank", "cosa-edp", "random", "random16k", "hybrid", "exhaustive")


def map_layer(
    layer: Layer,
    arch: Arch,
    *,
    mapper: str = "cosa",
    options: SolverOptions | None = None,
    **mapper_options: Any,
) -> MapResult:
    """Map one layer with ``mapper``; every returned mapping passed the verifier.

    Parameters
    ----------
    layer, arch
        The layer and the accelerator.
    mapper
        ``cosa`` (MIP; options ``backend``, ``time_limit``, ``threads``, ``seed`` ...),
        ``cosa-rerank`` (a few CoSA MIP solutions re-ranked under the cost model; same
        options plus ``metric``, default ``lex``), ``cosa-edp`` (CoSA's candidates and 300
        random starts polished for the cost model's EDP; the default of ``map-network``),
        ``random`` (best of 5 valid), ``random16k`` (best of 16,000 valid), ``hybrid``
        (Timeloop-Hybrid-like best of 16,000) or ``exhaustive`` (small layers only).
    options
        Shared solver options (seed, threads, time limit, progress), passed to the mapper.
    **mapper_options
        The mapper's own keywords.

    Examples
    --------
    >>> from twill.mapping.arch import simba_arch
    >>> layer = Layer("l", {"P": 14, "C": 16, "K": 16})
    >>> r = map_layer(layer, simba_arch(), mapper="random", seed=3)
    >>> r.method, r.report.valid
    ('random', True)
    """
    bad = layer.check() + arch.check()
    if bad:
        raise InvalidProblemError(bad, source=layer.name)
    if mapper == "cosa":
        from twill.mapping.cosa import cosa_map

        return cosa_map(layer, arch, options=options, **mapper_options)
    if mapper == "cosa-rerank":
        from twill.mapping.cosa import cosa_rerank_map

        return cosa_rerank_map(layer, arch, options=options, **mapper_options)
    if mapper == "cosa-edp":
        from twill.mapping.cosa.edp import cosa_edp_map

        return cosa_edp_map(layer, arch, options=options, **mapper_options)
    if mapper in ("random", "random16k"):
        from twill.mapping.search.random import random_search

        mapper_options.setdefault("n_valid", 5 if mapper == "random" else 16_000)
        res = random_search(layer, arch, options=options, **mapper_options)
        return res if mapper == "random" else _renamed(res, mapper)
    if mapper == "hybrid":
        from twill.mapping.search.hybrid import hybrid_search

        return hybrid_search(layer, arch, options=options, **mapper_options)
    if mapper == "exhaustive":
        from twill.mapping.search.exhaustive import exhaustive_search

        return exhaustive_search(layer, arch, options=options, **mapper_options)
    raise InvalidProblemError(f"unknown mapper {mapper!r} (choose from {', '.join(MAPPERS)})")


def _renamed(res: MapResult, method: str) -> MapResult:
    from dataclasses import replace

    return replace(res, method=method)


@dataclass(frozen=True)
class NetworkResult:
    """Per-layer results of every method and the network totals (weighted by layer counts)."""

    network: str
    arch: str
    layers: tuple[Layer, ...]
    results: dict[str, tuple[MapResult, ...]]
    seconds: float
    executor: str
    notes: tuple[str, ...] = field(default=())

    def total(self, method: str) -> CostReport | None:
        """Network report of ``method`` (``None`` if some layer has no mapping)."""
        reps = [r.report for r in self.results[method]]
        if any(r is None for r in reps):
            return None
        return sum(reps)  # type: ignore[return-value]

    def solve_seconds(self, method: str) -> list[float]:
        return [r.seconds for r in self.results[method]]

    def to_dict(self) -> dict[str, Any]:
        out: dict[str, Any] = {
            "network": self.network,
            "arch": self.arch,
            "executor": self.executor,
            "seconds": self.seconds,
            "layers": [],
            "totals": {},
        }
        for i, layer in enumerate(self.layers):
            row: dict[str, Any] = {
                "layer": layer.name,
                "shape": layer.key,
                "count": layer.count,
                "groups": layer.groups,
            }
            for method, res in self.results.items():
                row[method] = res[i].to_dict()
            out["layers"].append(row)
        for method in self.results:
            tot = self.total(method)
            secs = self.solve_seconds(method)
            out["totals"][method] = {
                **(tot.to_dict(summary=True) if tot is not None else {"cycles": None}),
                "seconds_total": sum(secs),
                "seconds_median": sorted(secs)[len(secs) // 2] if secs else None,
                "seconds_max": max(secs) if secs else None,
                "statuses": sorted({r.status.value for r in self.results[method]}),
            }
        if self.notes:
            out["notes"] = list(self.notes)
        return out


def _task(layer: Layer, arch: Arch, method: str, options: dict[str, Any]) -> MapResult:
    try:
        return map_layer(layer, arch, mapper=method, **options)
    except InvalidProblemError as exc:  # e.g. exhaustive on a large layer
        return MapResult(method, Status.ERROR, layer.name, stats={"error": str(exc)})


def map_network(
    layers: Sequence[Layer],
    arch: Arch,
    *,
    methods: Sequence[str] = ("cosa",),
    options: dict[str, dict[str, Any]] | None = None,
    executor: str = "local",
    workers: int | None = None,
    ray_address: str | None = None,
    network: str = "network",
    on_result: Callable[[int, str, MapResult], None] | None = None,
) -> NetworkResult:
    """Map every layer of a network with every method, in parallel.

    Parameters
    ----------
    layers
        Unique layers with their ``count``.
    arch
        The accelerator.
    methods
        Mapper names (:data:`MAPPERS`).
    options
        Per-method options, e.g. ``{"cosa": {"backend": "cbc"}, "random": {"seed": 1}}``.
    executor
        ``"local"`` (process pool; ``workers=1`` runs in-process), ``"serial"``, or ``"ray"``.
    workers
        Pool size (default: CPU count, at most 4).
    ray_address
        Ray cluster address (``"auto"`` = the running cluster); when Ray is already initialised
        in this process that session is used.
    on_result
        ``callback(layer_index, method, result)`` as each task finishes (progress bars).

    Returns
    -------
    NetworkResult
    """
    for m in methods:
        if m not in MAPPERS:
            raise InvalidProblemError(f"unknown method {m!r} (choose from {', '.join(MAPPERS)})")
    options = options or {}
    tasks = [(i, m) for m in methods for i in range(len(layers))]
    slots: dict[str, list[MapResult | None]] = {m: [None] * len(layers) for m in methods}
    t0 = time.perf_counter()
    workers = min(workers or min(os.cpu_count() or 1, 4), max(1, len(tasks)))  # none idle

    def done(i: int, m: str, res: MapResult) -> None:
        slots[m][i] = res
        if on_result is not None:
            on_result(i, m, res)

    if executor == "serial" or (executor == "local" and workers <= 1):
        for i, m in tasks:
            done(i, m, _task(layers[i], arch, m, dict(options.get(m, {}))))
    elif executor == "local":
        from concurrent.futures import ProcessPoolExecutor, as_completed

        from twill._interrupt import quiet_worker, starting_workers

        pool = ProcessPoolExecutor(max_workers=workers, initializer=quiet_worker)
        try:
            with starting_workers():  # the first submit forks the workers
                futs = {
                    pool.submit(_task, layers[i], arch, m, dict(options.get(m, {}))): (i, m)
                    for i, m in tasks
                }
            for fut in as_completed(futs):
                i, m = futs[fut]
                done(i, m, fut.result())
        except BaseException:  # Ctrl-C, SIGTERM, a failed task: stop the workers now
            _stop_pool(pool)
            raise
        pool.shutdown()
    elif executor == "ray":
        _run_ray(tasks, layers, arch, options, ray_address, done)
    else:
        raise InvalidProblemError(f"unknown executor {executor!r} (local, serial or ray)")
    results = {m: tuple(r for r in slots[m] if r is not None) for m in methods}
    return NetworkResult(
        network, arch.name, tuple(layers), results, time.perf_counter() - t0, executor
    )


def _stop_pool(pool: Any) -> None:
    """Cancel the queued tasks and end the running workers (a plain ``shutdown`` would wait for
    every running solve to finish, so an interrupt would hang until then)."""
    workers = list((getattr(pool, "_processes", None) or {}).values())  # no public accessor
    pool.shutdown(wait=False, cancel_futures=True)
    for proc in workers:
        proc.terminate()
    for proc in workers:
        proc.join(5)


def _run_ray(
    tasks: list[tuple[int, str]],
    layers: Sequence[Layer],
    arch: Arch,
    options: dict[str, dict[str, Any]],
    address: str | None,
    done: Callable[[int, str, MapResult], None],
) -> None:
    try:
        import ray
    except ImportError as exc:
        raise BackendUnavailableError(
            "executor 'ray' needs the ray package (pip install 'twill-sched[ray]')"
        ) from exc
    if not ray.is_initialized():
        try:
            ray.init(address=address or "auto", log_to_driver=False)
        except (ConnectionError, RuntimeError) as exc:
            raise BackendUnavailableError(
                f"cannot connect to a Ray cluster at {address or 'auto'}: {exc}"
            ) from exc
    remote = ray.remote(num_cpus=1)(_task)
    refs = {remote.remote(layers[i], arch, m, dict(options.get(m, {}))): (i, m) for i, m in tasks}
    pending = list(refs)
    while pending:
        ready, pending = ray.wait(pending, num_returns=1)
        for ref in ready:
            i, m = refs[ref]
            done(i, m, ray.get(ref))
