"""Whole networks: each layer → mapper → verify + cost → reduce → network report.

The chain, spelled out:

1. **layers**: a list of :class:`~twill.mapping.workload.Layer` (unique shapes with counts, as
   :func:`twill.io.timeloop.read_network` returns them);
2. **mapper**: :func:`map_layer` with one of ``cosa``, ``cosa-rerank``, ``cosa-edp``,
   ``random``, ``random16k``, ``hybrid``, ``exhaustive`` (each runs check → solve → verify
   and returns a :class:`~twill.results.SolveResult`);
3. **cost**: the verified mapping's :class:`CostReport` (inside the result's solution, a
   :class:`~twill.mapping.result.MappedLayer`);
4. **reduce**: per method, the network total ``sum(report)`` weighted by layer counts (layers run
   sequentially, so latencies add);
5. **report**: :class:`NetworkMappings` (``to_dict``) for the CLI, the benchmark and the plots.

Layers are independent, so step 2 runs in parallel: a local process pool by default, or Ray
(``executor="ray"``) on an existing cluster, joined in bounded time
(:mod:`~twill.mapping.ray_cluster`). The core never prints;
progress goes through the ``on_result`` callback.
"""

from __future__ import annotations

import logging
import os
import time
from collections.abc import Callable, Sequence
from collections.abc import Mapping as Mapping_
from dataclasses import dataclass, field, replace
from typing import Any, NamedTuple

from twill.errors import ArgumentTypeError, InvalidProblemError
from twill.mapping.arch import Arch
from twill.mapping.cost.analytical import CostReport
from twill.mapping.mapping import Mapping
from twill.mapping.methods import MAPPERS, PRESETS
from twill.mapping.problems import LayerMappingProblem
from twill.mapping.result import layer_json
from twill.mapping.search.common import SearchSettings
from twill.mapping.workload import Layer
from twill.options import SolverOptions
from twill.registry import solver
from twill.results import SolveResult, Status
from twill.validation import MAX_THREADS, check_choice, check_instance, check_int

__all__ = ["MAPPERS", "map_layer", "map_network", "NetworkMappings", "MapTask", "run_map_tasks"]

log = logging.getLogger(__name__)


def map_layer(
    problem: LayerMappingProblem, method: str = "cosa", options: SolverOptions | None = None
) -> SolveResult:
    """Map one layer with ``method``; every returned mapping passed the verifier.

    Parameters
    ----------
    problem
        The layer and the accelerator.
    method
        ``cosa`` (MIP; settings in ``options.cosa``), ``cosa-rerank`` (a few CoSA MIP
        solutions re-ranked under the cost model), ``cosa-edp`` (CoSA's candidates and an
        evolutionary search from 300 random starts, polished for the cost model's EDP; the
        default of ``map-network``),
        ``random`` (best of 5 valid), ``random16k`` (best of 16,000 valid), ``hybrid``
        (Timeloop-Hybrid-like best of 16,000) or ``exhaustive`` (small layers only); the
        searches' settings in ``options.search``.
    options
        The shared solver options, passed to the mapper's ``solve``.

    Examples
    --------
    >>> from twill.mapping.arch import simba_arch
    >>> p = LayerMappingProblem(Layer("l", {"P": 14, "C": 16, "K": 16}), simba_arch())
    >>> r = map_layer(p, "random", SolverOptions(seed=3))
    >>> r.settings["method"], p.verify(r.solution).ok
    ('random', True)
    """
    check_instance(problem, "problem", LayerMappingProblem)
    check_choice(method, "method", MAPPERS)
    options = SolverOptions.of(options)
    base, n_valid = PRESETS.get(method, (method, None))
    search = options.search or SearchSettings()
    if n_valid is not None and search.n_valid is None:
        options = replace(options, search=replace(search, n_valid=n_valid))
    res = solver(base)(problem, options)
    return res if base == method else replace(res, settings={**res.settings, "method": method})


@dataclass(frozen=True)
class NetworkMappings:
    """Per-layer results of every method and the network totals (weighted by layer counts)."""

    network: str
    arch: str
    layers: tuple[Layer, ...]
    results: dict[str, tuple[SolveResult, ...]]
    seconds: float
    executor: str
    notes: tuple[str, ...] = field(default=())

    def total(self, method: str) -> CostReport | None:
        """Network report of ``method`` (``None`` if some layer has no mapping)."""
        found = [r.solution for r in self.results[method]]
        if any(f is None for f in found):
            return None
        return sum(f.report for f in found)  # type: ignore[return-value]

    def mappings(self, method: str) -> dict[str, Mapping]:
        """Layer shape key -> the mapping ``method`` found (layers without one left out)."""
        pairs = zip(self.layers, self.results[method], strict=True)
        return {ly.key: r.solution.mapping for ly, r in pairs if r.solution is not None}

    def solve_seconds(self, method: str) -> list[float]:
        """Seconds of every layer's solve, in layer order."""
        return [r.timings.total for r in self.results[method]]

    def to_dict(self) -> dict[str, Any]:
        """JSON-ready: one row per layer (its result under every method) and the totals."""
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
                row[method] = layer_json(res[i], layer.name)
            out["layers"].append(row)
        for method in self.results:
            tot = self.total(method)
            secs = self.solve_seconds(method)
            out["totals"][method] = {
                **(tot.to_dict(summary=True) if tot is not None else {"cycles": None}),
                "name": self.network,  # the sum's own name joins the first few layers' names
                "seconds_total": sum(secs),
                "seconds_median": sorted(secs)[len(secs) // 2] if secs else None,
                "seconds_max": max(secs) if secs else None,
                "statuses": sorted({r.status.value for r in self.results[method]}),
            }
        if self.notes:
            out["notes"] = list(self.notes)
        return out


def _task(layer: Layer, arch: Arch, method: str, options: SolverOptions) -> SolveResult:
    """One layer mapped by ``method`` (:func:`map_layer`); a task whose turn comes after the
    deadline (a queued layer of a network larger than the time allows) is UNKNOWN at once,
    saying so, instead of building a model it has no time to solve (on a loaded machine that
    took 2-3 s a layer, all past the command's ``--time-limit``, issue 51)."""
    if options.deadline is not None and options.deadline.expired():
        return SolveResult(Status.UNKNOWN, stats={"stopped": "time_limit", "message":
                           "not started: the time limit had passed before this layer's turn"},
                           settings={"method": method})  # fmt: skip
    try:
        return map_layer(LayerMappingProblem(layer, arch), method, options)
    except InvalidProblemError as exc:  # e.g. exhaustive on a large layer
        return SolveResult(Status.ERROR, stats={"error": str(exc)}, settings={"method": method})


class MapTask(NamedTuple):
    """One mapping job: ``method`` maps ``layer`` onto ``arch`` (a Ray task's whole payload:
    a layer, an architecture and the options pickle to a few kB)."""

    layer: Layer
    arch: Arch
    method: str
    options: SolverOptions


def run_map_tasks(
    tasks: Sequence[MapTask],
    *,
    executor: str = "local",
    workers: int | None = None,
    done: Callable[[int, SolveResult], None],
) -> None:
    """Run every task (:func:`map_layer`: check, map, verify) on ``executor`` and call
    ``done(index, result)`` in this process as each one finishes, in finishing order.

    ``executor`` and ``workers`` as :func:`map_network` takes them (checked there); a
    failure or an interrupt stops the workers (:func:`_stop_pool`) and propagates.
    """
    workers = min(workers or min(os.cpu_count() or 1, 4), max(1, len(tasks)))  # none idle
    if executor == "serial" or (executor == "local" and workers <= 1):
        for k, task in enumerate(tasks):
            done(k, _task(*task))
    elif executor == "local":
        from concurrent.futures import ProcessPoolExecutor, as_completed

        from twill._interrupt import quiet_worker, starting_workers

        pool = ProcessPoolExecutor(max_workers=workers, initializer=quiet_worker)
        try:
            with starting_workers():  # the first submit forks the workers
                futs = {pool.submit(_task, *task): k for k, task in enumerate(tasks)}
            for fut in as_completed(futs):
                done(futs[fut], fut.result())
        except BaseException:  # Ctrl-C, SIGTERM, a failed task: stop the workers now
            _stop_pool(pool)
            raise
        pool.shutdown()
    elif executor == "ray" or executor.startswith("ray:"):
        _run_ray(tasks, executor.partition(":")[2] or None, done)
    else:
        raise InvalidProblemError(f"unknown executor {executor!r} (local, serial or ray)")


def map_network(
    layers: Sequence[Layer],
    arch: Arch,
    *,
    methods: Sequence[str] = ("cosa",),
    options: Mapping_[str, SolverOptions] | None = None,
    executor: str = "local",
    workers: int | None = None,
    network: str = "network",
    on_result: Callable[[int, str, SolveResult], None] | None = None,
) -> NetworkMappings:
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
        Per-method :class:`~twill.options.SolverOptions`, e.g.
        ``{"cosa": SolverOptions(time_limit=60), "random": SolverOptions(seed=1)}`` (a
        method without an entry gets the defaults). A time limit is per layer: each layer's
        solve starts its own clock.
    executor
        ``"local"`` (process pool; ``workers=1`` runs in-process), ``"serial"``, ``"ray"``
        (the running cluster, or this process's Ray session when one is initialised) or
        ``"ray:ADDRESS"`` (the cluster at ``ADDRESS``).
    workers
        Pool size (default: CPU count, at most 4).
    on_result
        ``callback(layer_index, method, result)`` as each task finishes (progress bars).

    Returns
    -------
    NetworkMappings
    """
    options = _check_network_call(layers, arch, methods, options, executor, workers)
    pairs = [(i, m) for m in methods for i in range(len(layers))]
    slots: dict[str, list[SolveResult | None]] = {m: [None] * len(layers) for m in methods}
    t0 = time.perf_counter()

    def done(k: int, res: SolveResult) -> None:
        i, m = pairs[k]
        slots[m][i] = res
        if on_result is not None:
            on_result(i, m, res)

    tasks = [MapTask(layers[i], arch, m, options.get(m, SolverOptions())) for i, m in pairs]
    run_map_tasks(tasks, executor=executor, workers=workers, done=done)
    results = {m: tuple(r for r in slots[m] if r is not None) for m in methods}
    return NetworkMappings(
        network, arch.name, tuple(layers), results, time.perf_counter() - t0, executor
    )


def _check_network_call(
    layers: object,
    arch: object,
    methods: object,
    options: object,
    executor: object,
    workers: object,
) -> dict[str, SolverOptions]:
    """:func:`map_network`'s arguments, checked at the entry (a ``TypeError`` for a wrong
    type, :class:`~twill.errors.InvalidProblemError` for a value out of range, each naming
    the argument); returns the per-method options as a dict."""
    if isinstance(layers, str | bytes) or not isinstance(layers, Sequence):
        raise ArgumentTypeError(
            f"layers must be a sequence of Layer, found {type(layers).__name__}"
        )
    for i, layer in enumerate(layers):
        check_instance(layer, f"layers[{i}]", Layer)
    check_instance(arch, "arch", Arch)
    if isinstance(methods, str) or not isinstance(methods, Sequence):
        raise ArgumentTypeError(
            f"methods must be a sequence of mapper names, found {type(methods).__name__}"
        )
    for m in methods:
        check_choice(m, "method", MAPPERS)
    if options is not None and not isinstance(options, Mapping_):
        raise ArgumentTypeError(
            f"options must map method names to SolverOptions, found {type(options).__name__}"
        )
    per_method = dict(options or {})
    for m, o in per_method.items():
        check_instance(o, f"options[{m!r}]", SolverOptions)
    if not isinstance(executor, str):
        raise ArgumentTypeError(f"executor must be a string, found {type(executor).__name__}")
    if executor.startswith("ray:"):  # the address's form now; the cluster when it is joined
        from twill.mapping.ray_cluster import parse_ray_address

        parse_ray_address(executor.partition(":")[2] or None)
    check_int(workers, "workers", maximum=MAX_THREADS, none=True)
    return per_method


def _stop_pool(pool: Any) -> None:
    """Cancel the queued tasks and end the running workers (a plain ``shutdown`` would wait for
    every running solve to finish, so an interrupt would hang until then), then wait for the
    pool's manager thread to end.

    That last wait matters at the interpreter's exit: ``concurrent.futures`` then writes to the
    wake-up pipe of every manager thread not yet collected, while a manager that is still
    ending closes its pipe; the race (CPython 3.11, fixed in 3.12) printed "Exception ignored
    in: <module 'threading'> ... OSError: [Errno 9] Bad file descriptor" after one Ctrl-C in
    a few. A joined manager is gone (collected) before the exit.
    """
    manager = getattr(pool, "_executor_manager_thread", None)  # no public accessor
    workers = list((getattr(pool, "_processes", None) or {}).values())
    pool.shutdown(wait=False, cancel_futures=True)
    for proc in workers:
        proc.terminate()
    for proc in workers:
        proc.join(5)
    if manager is not None:
        manager.join(5)  # it sees its workers gone, fails their futures and ends


def _run_ray(
    tasks: Sequence[MapTask], address: str | None, done: Callable[[int, SolveResult], None]
) -> None:
    from twill.mapping.ray_cluster import connect

    connect(address)  # in bounded time, or a clear error (module docstring)
    import ray

    remote = ray.remote(num_cpus=1)(_task)
    refs = {remote.remote(*task): k for k, task in enumerate(tasks)}
    pending = list(refs)
    try:
        while pending:
            ready, pending = ray.wait(pending, num_returns=1)
            if pending:  # and every other one finished by now, in one call (thousands of tasks)
                more, pending = ray.wait(pending, num_returns=len(pending), timeout=0)
                ready += more
            for ref in ready:
                done(refs[ref], ray.get(ref))
    except BaseException:  # Ctrl-C, SIGTERM, a failed task: end this driver's tasks now
        # (a local instance stops; on a cluster the job ends), before the CLI removes its
        # scratch folder under Ray's feet, which made every running task fail aloud
        del refs, pending
        ray.shutdown()
        raise
