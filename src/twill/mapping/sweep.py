"""Design-space sweeps: every architecture of a space against one or more networks, with the
energy, latency, EDP and area of each (architecture, network) and the Pareto frontier of EDP
against area (``docs/mapping.md``, "Design-space sweeps"; issue 52).

The chain:

1. **pairs**: the unique layer shapes over all the networks (a shape two networks share, or one
   network repeats, is one layer), times the architectures: each (architecture, layer) pair is
   mapped once and shared by every network that has the layer;
2. **store**: a pair already in the store (:class:`~twill.mapping.sweep_store.PairStore`, keyed
   by the architecture's fingerprint, the layer's shape and the mapper's settings) is not
   mapped again; the others run as tasks on the executor
   (:func:`~twill.mapping.pipeline.run_map_tasks`: serial, a local process pool, or Ray) and
   each is appended to the store as it finishes;
3. **rows**: per (architecture, network), the sum over its layers of count x the pair's energy
   and cycles (layers run one after another), EDP = energy x cycles, and the architecture's
   area (:mod:`twill.mapping.area`);
4. **frontier**: per network, the rows no other row beats on both area and the objective.

Every mapping passed the verifier (:func:`~twill.mapping.pipeline.map_layer`). The results
depend only on the inputs and the settings (the mapper's seed), not on the executor or on how
often the sweep was stopped and resumed. The core never prints; progress goes through
``on_pair``.
"""

from __future__ import annotations

import hashlib
import json
import logging
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

from twill.errors import ArgumentTypeError, InvalidProblemError
from twill.mapping.mapping import to_dosa_string
from twill.mapping.methods import OBJECTIVES
from twill.mapping.pipeline import MAPPERS, MapTask, run_map_tasks
from twill.mapping.search.common import SearchSettings
from twill.mapping.space import DesignPoint
from twill.mapping.sweep_store import STORE_NAME, PairStore, arch_fingerprint
from twill.mapping.workload import Layer
from twill.options import SolverOptions
from twill.results import SolveResult
from twill.validation import MAX_THREADS, check_choice, check_instance, check_int, check_time_limit

__all__ = ["OBJECTIVES", "SweepNetwork", "SweepSettings", "SweepRow", "SweepResult", "sweep",
           "pareto_frontier"]  # fmt: skip

log = logging.getLogger(__name__)

_METRIC = {"edp": "edp", "energy": "energy_uJ", "cycles": "cycles"}


@dataclass(frozen=True)
class SweepNetwork:
    """A network of a sweep: its name in the table and its layers (with their counts)."""

    name: str
    layers: tuple[Layer, ...]


@dataclass(frozen=True)
class SweepSettings:
    """How a sweep maps its pairs.

    Attributes
    ----------
    mapper
        A :data:`~twill.mapping.pipeline.MAPPERS` name (``cosa``: CoSA's MIP, the default).
    objective
        ``edp`` (default), ``energy`` or ``cycles``: the frontier's second axis, and what the
        search mappers (random, hybrid) rank by.
    executor
        ``serial``, ``local`` (process pool, default), ``ray`` or ``ray:ADDRESS``.
    workers
        Local pool size (default: CPU count, at most 4).
    seed
        The mappers' seed.
    time_limit_s
        Seconds per pair (``None``: none); a pair that hits it without a mapping is stored as
        unmapped (UNKNOWN), and the networks that have it get no total.
    """

    mapper: str = "cosa"
    objective: str = "edp"
    executor: str = "local"
    workers: int | None = None
    seed: int = 0
    time_limit_s: float | None = 60.0

    def check(self) -> None:
        check_choice(self.mapper, "mapper", MAPPERS)
        check_choice(self.objective, "objective", OBJECTIVES)
        if not isinstance(self.executor, str):
            raise ArgumentTypeError(f"executor must be a string, found {self.executor!r}")
        if self.executor.startswith("ray:"):
            from twill.mapping.ray_cluster import parse_ray_address

            parse_ray_address(self.executor.partition(":")[2] or None)
        elif self.executor not in ("serial", "local", "ray"):
            raise InvalidProblemError(f"executor {self.executor!r}: serial, local, ray or "
                                      "ray:ADDRESS")  # fmt: skip
        check_int(self.workers, "workers", maximum=MAX_THREADS, none=True)
        check_int(self.seed, "seed", minimum=0)
        check_time_limit(self.time_limit_s, "time_limit_s")

    def options(self) -> SolverOptions:
        return SolverOptions(time_limit=self.time_limit_s, seed=self.seed,
                             search=SearchSettings(metric=self.objective))  # fmt: skip

    def fingerprint(self) -> str:
        """What a stored pair's result depends on besides the architecture and the layer."""
        text = json.dumps([self.mapper, self.objective, self.seed, self.time_limit_s])
        return hashlib.sha256(text.encode()).hexdigest()[:8]


@dataclass(frozen=True)
class SweepRow:
    """One (architecture, network) of the table; ``None`` totals when a layer has no mapping."""

    arch: str
    network: str
    area_mm2: float
    energy_uJ: float | None  # noqa: N815 (the table's column name)
    cycles: int | None
    params: tuple[tuple[str, float], ...]
    layers: int
    unmapped: int = 0
    on_frontier: bool = False

    @property
    def edp(self) -> float | None:
        """µJ x cycles."""
        if self.energy_uJ is None or self.cycles is None:
            return None
        return self.energy_uJ * self.cycles

    def to_dict(self) -> dict[str, Any]:
        return {"arch": self.arch, "network": self.network, "energy_uJ": self.energy_uJ,
                "cycles": self.cycles, "edp": self.edp, "area_mm2": self.area_mm2,
                "on_frontier": self.on_frontier, "layers": self.layers,
                "unmapped": self.unmapped, **dict(self.params)}  # fmt: skip


@dataclass(frozen=True)
class SweepResult:
    """The table, its frontier and what the run did (pairs mapped now, reused from the store)."""

    rows: tuple[SweepRow, ...]
    settings: SweepSettings
    pairs: int
    computed: int
    reused: int
    recomputed: int
    store: str
    seconds: float
    store_duplicates: int = 0
    notes: tuple[str, ...] = field(default=())

    @property
    def frontier(self) -> tuple[SweepRow, ...]:
        return tuple(r for r in self.rows if r.on_frontier)

    def to_dict(self) -> dict[str, Any]:
        return {
            "rows": [r.to_dict() for r in self.rows],
            "frontier": [r.to_dict() for r in self.frontier],
            "recomputed": self.recomputed,
            "pairs": self.pairs,
            "computed": self.computed,
            "reused": self.reused,
            "store_duplicates": self.store_duplicates,
            "store": self.store,
            "seconds": self.seconds,
            "mapper": self.settings.mapper,
            "objective": self.settings.objective,
            "executor": self.settings.executor,
            "units": {
                "energy_uJ": "µJ",
                "cycles": "cycles",
                "edp": "µJ·cycles",
                "area_mm2": "mm² (40 nm)",
            },  # fmt: skip
            **({"notes": list(self.notes)} if self.notes else {}),
        }


def pareto_frontier(rows: Sequence[SweepRow], objective: str = "edp") -> set[int]:
    """Indices of the rows that no row of the same network beats on area and ``objective``
    (at most as large on both, smaller on one); rows without totals are never on it.

    Examples
    --------
    >>> r = [SweepRow("a", "n", 1.0, 4.0, 10, (), 1), SweepRow("b", "n", 2.0, 1.0, 10, (), 1),
    ...      SweepRow("c", "n", 3.0, 2.0, 10, (), 1)]
    >>> sorted(pareto_frontier(r))
    [0, 1]
    """
    key = _METRIC[objective]
    best: dict[str, float] = {}
    out: set[int] = set()
    values = {i: r.to_dict()[key] for i, r in enumerate(rows) if r.edp is not None}
    for i in sorted(values, key=lambda i: (rows[i].network, rows[i].area_mm2, values[i])):
        value = values[i]
        if value < best.get(rows[i].network, float("inf")):
            best[rows[i].network] = value
            out.add(i)
    return out


def sweep(
    points: Sequence[DesignPoint],
    networks: Sequence[SweepNetwork],
    out_dir: str | Path,
    settings: SweepSettings | None = None,
    *,
    on_pair: Callable[[int, int], None] | None = None,
) -> SweepResult:
    """Map every (architecture, unique layer) pair once, into the store in ``out_dir``, and
    total them per (architecture, network).

    Parameters
    ----------
    points
        The architectures (:meth:`~twill.mapping.space.DesignSpace.points`), distinct names.
    networks
        The networks, distinct names, each with at least one layer.
    out_dir
        An existing folder; the store is ``out_dir/pairs.jsonl`` (read first: its pairs are
        not mapped again).
    settings
        Mapper, objective, executor (:class:`SweepSettings`).
    on_pair
        ``on_pair(done, total)`` after each pair, the reused ones first (progress bars).

    Returns
    -------
    SweepResult

    Raises
    ------
    InvalidProblemError
        Empty or repeated architectures or networks, a network without layers, a bad setting,
        a store another sweep is writing.

    Examples
    --------
    >>> import tempfile
    >>> from twill.mapping.space import DesignSpace
    >>> from twill.mapping.workload import Layer
    >>> points = DesignSpace("gemmini", (("pe_dim", (8, 16)),)).points()
    >>> net = SweepNetwork("tiny", (Layer.gemm(64, 64, 64),))
    >>> with tempfile.TemporaryDirectory() as out:
    ...     res = sweep(points, [net], out, SweepSettings(mapper="random", executor="serial"))
    >>> res.pairs, res.computed, [r.on_frontier for r in res.rows]
    (2, 2, [True, True])
    """
    settings = settings or SweepSettings()
    _check_sweep_call(points, networks, out_dir, settings)
    t0 = time.perf_counter()
    unique = _unique_layers(networks)
    salt = settings.fingerprint()
    prints = [arch_fingerprint(p.arch) for p in points]
    keys = {(a, s): f"{prints[a]}/{s}/{salt}" for a in range(len(points)) for s in unique}
    with PairStore.open(Path(out_dir) / STORE_NAME) as store:
        todo = [pair for pair, key in keys.items() if key not in store]
        reused, total = len(keys) - len(todo), len(keys)
        if on_pair is not None:
            on_pair(reused, total)
        tasks = [MapTask(unique[s], points[a].arch, settings.mapper, settings.options())
                 for a, s in todo]  # fmt: skip

        finished = [reused]

        def done(k: int, res: SolveResult) -> None:
            a, s = todo[k]
            store.append(_record(keys[todo[k]], points[a].arch.name, s, res))
            finished[0] += 1
            if on_pair is not None:
                on_pair(finished[0], total)

        run_map_tasks(tasks, executor=settings.executor, workers=settings.workers, done=done)
        found = {pair: store.records[key] for pair, key in keys.items()}
        rows = _rows(points, networks, found)
        marked = pareto_frontier(rows, settings.objective)
        rows = [replace(r, on_frontier=i in marked) for i, r in enumerate(rows)]
        return SweepResult(tuple(rows), settings, total, len(todo), reused, store.recomputed,
                           str(store.path), time.perf_counter() - t0, store.duplicates)  # fmt: skip


def _check_sweep_call(points: object, networks: object, out_dir: object,
                      settings: object) -> None:  # fmt: skip
    check_instance(settings, "settings", SweepSettings)
    settings.check()  # type: ignore[attr-defined]
    for what, items, kind in (
        ("points", points, DesignPoint),
        ("networks", networks, SweepNetwork),
    ):
        if not isinstance(items, Sequence) or isinstance(items, str):
            raise ArgumentTypeError(f"{what} must be a sequence, found {type(items).__name__}")
        if not items:
            raise InvalidProblemError(f"{what}: empty, nothing to sweep")
        for i, item in enumerate(items):
            check_instance(item, f"{what}[{i}]", kind)
    names = [p.arch.name for p in points]  # type: ignore[attr-defined]
    nets = [n.name for n in networks]  # type: ignore[attr-defined]
    for what, given in (("architecture", names), ("network", nets)):
        twice = sorted({n for n in given if given.count(n) > 1})
        if twice:
            raise InvalidProblemError(f"{what} {twice[0]!r} appears twice")
    for n in networks:  # type: ignore[attr-defined]
        if not n.layers:
            raise InvalidProblemError(f"network {n.name!r} has no layers: nothing to map")
    if not isinstance(out_dir, str | Path) or not Path(out_dir).is_dir():
        raise InvalidProblemError(f"out_dir {out_dir!r}: not an existing folder")


def _unique_layers(networks: Sequence[SweepNetwork]) -> dict[str, Layer]:
    """Shape key -> one layer of that shape (count 1), over every network."""
    out: dict[str, Layer] = {}
    for net in networks:
        for layer in net.layers:
            out.setdefault(layer.key, replace(layer, name=layer.key, count=1))
    return out


def _record(key: str, arch: str, layer: str, res: SolveResult) -> dict[str, Any]:
    found = res.solution
    rep = None if found is None else found.report
    return {
        "key": key,
        "arch": arch,
        "layer": layer,
        "status": res.status.value,
        "energy_pj": None if rep is None else float(rep.energy_pj),
        "cycles": None if rep is None else int(rep.cycles),
        "mapping": None if found is None else to_dosa_string(found.mapping),
        "seconds": round(res.timings.total, 4),
        "error": res.stats.get("error") if found is None else None,
    }


def _rows(
    points: Sequence[DesignPoint],
    networks: Sequence[SweepNetwork],
    found: dict[tuple[int, str], dict[str, Any]],
) -> list[SweepRow]:
    rows = []
    for a, point in enumerate(points):
        for net in networks:
            recs = [(layer.count, found[(a, layer.key)]) for layer in net.layers]
            missing = sum(1 for _, r in recs if r["energy_pj"] is None)
            energy = None if missing else sum(c * r["energy_pj"] for c, r in recs) * 1e-6
            cycles = None if missing else sum(c * r["cycles"] for c, r in recs)
            rows.append(SweepRow(point.arch.name, net.name, point.area_mm2, energy, cycles,
                                 point.params, len(net.layers), missing))  # fmt: skip
    return rows
