"""Array form of a scheduling graph for GauS and its baselines (GauS paper Eqs. 1 and 6).

:class:`GauSGraph` is not a second IR: it is the view of a
:class:`~twill.sched.ir.DependenceGraph` as flat NumPy arrays, so that losses, legalisation,
verification and baselines are vectorised. :func:`gaus_view` computes it once per graph and
reuses it while the graph lives; :func:`from_dependence_graph` computes it with other weights.

Edge convention: an edge ``(u -> v, d, delta)`` requires ``t_v + delta*II >= t_u + d``.
Resource usage is a reservation table ``usage[i, k, c]``: op ``i`` occupies ``usage[i, k, c]``
units of resource ``k`` in its ``c``-th step after its start.

Helpers here are plain functions (``topological_generations``, ``asap_alap``,
``critical_path_steps``); preconditions are stated on each. Nothing here imports torch.
"""

from __future__ import annotations

import weakref
from dataclasses import dataclass, field

import numpy as np

from twill.errors import InvalidProblemError
from twill.sched.ir import DependenceGraph

__all__ = [
    "GauSGraph",
    "from_dependence_graph",
    "gaus_view",
    "topological_generations",
    "asap_alap",
    "forward_edges",
    "edges_by_generation",
    "critical_path_steps",
    "longest_path_nodes",
]


@dataclass(frozen=True, eq=False)
class GauSGraph:
    """A scheduling graph as arrays (read-only by convention).

    Parameters
    ----------
    name
        Display name (file stem or kernel name).
    names
        Node names, index ``i`` is node ``i``.
    resources
        Resource-type names, index ``k``.
    usage
        ``float64[n, K, L]`` reservation tables (``L >= 1``).
    caps
        ``float64[K]`` capacity per resource type; ``inf`` means unlimited.
    src, dst, delay, distance
        ``int64[E]`` edge arrays.
    comm
        ``float64[E]`` communication weight per edge (formulation A).
    mem
        ``float64[n]`` memory weight ``b_i`` of each node's result (formulations B, C).
    live_out
        ``bool[n]``: results that stay live until the end of the window (formulation B).
    weight_note
        How weights, delays and capacities were chosen (recorded with every result).
    """

    name: str
    names: tuple[str, ...]
    resources: tuple[str, ...]
    usage: np.ndarray
    caps: np.ndarray
    src: np.ndarray
    dst: np.ndarray
    delay: np.ndarray
    distance: np.ndarray
    comm: np.ndarray
    mem: np.ndarray
    live_out: np.ndarray = field(default=None)  # type: ignore[assignment]
    weight_note: str = ""

    def __post_init__(self) -> None:
        n = len(self.names)
        if self.live_out is None:
            object.__setattr__(self, "live_out", np.zeros(n, dtype=bool))
        for attr, dtype in (
            ("src", np.int64),
            ("dst", np.int64),
            ("delay", np.int64),
            ("distance", np.int64),
        ):
            object.__setattr__(self, attr, np.asarray(getattr(self, attr), dtype=dtype).ravel())
        for attr in ("comm", "mem", "caps"):
            object.__setattr__(self, attr, np.asarray(getattr(self, attr), dtype=np.float64))
        object.__setattr__(self, "usage", np.asarray(self.usage, dtype=np.float64))
        if self.usage.ndim != 3 or self.usage.shape[0] != n:
            raise InvalidProblemError(f"usage must have shape (n, K, L), found {self.usage.shape}")

    @property
    def n(self) -> int:
        """Number of nodes."""
        return len(self.names)

    @property
    def num_edges(self) -> int:
        """Number of edges."""
        return int(self.src.shape[0])

    @property
    def forward(self) -> np.ndarray:
        """Boolean mask of distance-0 edges."""
        return self.distance == 0

    @property
    def has_back_edges(self) -> bool:
        """True when some edge has distance > 0 (a recurrence)."""
        return bool(np.any(self.distance > 0))

    def with_caps(self, caps: float | np.ndarray) -> GauSGraph:
        """A copy with every capacity replaced by ``caps`` (scalar or per resource)."""
        from dataclasses import replace

        new = np.broadcast_to(np.asarray(caps, dtype=np.float64), self.caps.shape).copy()
        return replace(self, caps=new)

    def schedule_dict(self, t: np.ndarray) -> dict[str, int]:
        """Map node name -> start step."""
        return {name: int(x) for name, x in zip(self.names, t, strict=True)}


#: Array views of live graphs: ``id(graph) -> (weak reference to graph, view)``. Kept beside
#: the graph rather than in it, so that solving a graph leaves the caller's object as it was
#: (and pickles no arrays); an entry goes when its graph is collected.
_VIEWS: dict[int, tuple[weakref.ref, GauSGraph]] = {}


def gaus_view(graph: DependenceGraph) -> GauSGraph:
    """The array view of ``graph`` with its own weights, computed on first use and reused
    while the graph lives (graphs are frozen; ``graph.replace`` makes a new graph)."""
    key = id(graph)
    hit = _VIEWS.get(key)
    if hit is not None and hit[0]() is graph:
        return hit[1]
    view = from_dependence_graph(graph)
    _VIEWS[key] = (weakref.ref(graph, lambda _ref, key=key: _VIEWS.pop(key, None)), view)
    return view


def from_dependence_graph(
    graph: DependenceGraph,
    *,
    comm_weight: float = 1.0,
    memory: str | None = None,
) -> GauSGraph:
    """Convert a :class:`~twill.sched.ir.DependenceGraph` to arrays.

    Parameters
    ----------
    graph
        Any dependence graph (checked elsewhere with ``check_graph``).
    comm_weight
        Factor on every edge's ``comm`` weight (formulation A).
    memory
        Memory weight ``b_i``: ``"footprint"`` (sum of bytes over memories), ``"regs"``,
        ``"unit"`` (1 per op) or ``"auto"`` (footprint when any op has one, else regs when any
        op has some, else 1); ``None``: the graph's ``memory_weight``.

    Returns
    -------
    GauSGraph
        Resources are the machine's functional units (unlimited ones get ``inf``).
    """
    ins = graph.instructions
    n = len(ins)
    index = {x.name: i for i, x in enumerate(ins)}
    fus = list(graph.machine.functional_units)
    for x in ins:
        for fu in x.reservation:
            if fu not in fus:
                fus.append(fu)
    kidx = {fu: k for k, fu in enumerate(fus)}
    length = max([1] + [len(row) for x in ins for row in x.reservation.values()])
    usage = np.zeros((n, len(fus), length))
    for i, x in enumerate(ins):
        for fu, row in x.reservation.items():
            if len(row):
                usage[i, kidx[fu], : len(row)] = row
    caps = np.array(
        [
            np.inf
            if graph.machine.functional_units.get(fu, -1) < 0
            else float(graph.machine.functional_units[fu])
            for fu in fus
        ]
    )
    missing = [e for e in graph.edges if e.src not in index or e.dst not in index]
    if missing:
        raise InvalidProblemError(
            [f"edge {e.src}->{e.dst}: unknown instruction" for e in missing], source=graph.name
        )
    src = np.array([index[e.src] for e in graph.edges], dtype=np.int64)
    dst = np.array([index[e.dst] for e in graph.edges], dtype=np.int64)
    delay = np.array([e.delay for e in graph.edges], dtype=np.int64)
    dist = np.array([e.distance for e in graph.edges], dtype=np.int64)
    memory = graph.memory_weight if memory is None else memory
    foot = np.array([float(sum(x.footprint.values())) for x in ins])
    regs = np.array([float(x.regs) for x in ins])
    if memory == "auto":
        memory = "footprint" if foot.any() else ("regs" if regs.any() else "unit")
    if memory == "footprint":
        mem = foot
    elif memory == "regs":
        mem = regs
    elif memory == "unit":
        mem = np.ones(n)
    else:
        raise InvalidProblemError(f"memory must be auto, footprint, regs or unit, found {memory!r}")
    return GauSGraph(
        name=graph.name,
        names=tuple(x.name for x in ins),
        resources=tuple(fus),
        usage=usage,
        caps=caps,
        src=src,
        dst=dst,
        delay=delay,
        distance=dist,
        comm=np.array([float(comm_weight) * e.comm for e in graph.edges], dtype=np.float64),
        mem=mem,
        weight_note=graph.weight_note
        or f"from DependenceGraph: RRT usage, edge delays, comm {comm_weight}/edge, "
        f"memory weight = {memory}",
    )


def topological_generations(g: GauSGraph) -> list[np.ndarray]:
    """Nodes grouped by generation of the distance-0 subgraph (Kahn's algorithm, vectorised).

    Raises
    ------
    InvalidProblemError
        If the distance-0 edges contain a cycle (names some nodes on it).
    """
    fwd = g.forward
    src, dst = g.src[fwd], g.dst[fwd]
    indeg = np.bincount(dst, minlength=g.n)
    order = np.argsort(src, kind="stable")
    s_sorted, d_sorted = src[order], dst[order]
    starts = np.searchsorted(s_sorted, np.arange(g.n + 1))
    gens: list[np.ndarray] = []
    frontier = np.flatnonzero(indeg == 0)
    seen = 0
    while frontier.size:
        gens.append(frontier)
        seen += frontier.size
        if frontier.size == 1:
            succ = d_sorted[starts[frontier[0]] : starts[frontier[0] + 1]]
        else:
            lo, hi = starts[frontier], starts[frontier + 1]
            lens = hi - lo
            idx = np.repeat(lo - np.concatenate(([0], np.cumsum(lens)[:-1])), lens)
            succ = d_sorted[np.arange(lens.sum()) + idx]
        np.subtract.at(indeg, succ, 1)
        cand = np.unique(succ)
        frontier = cand[indeg[cand] == 0]
    if seen != g.n:
        stuck = [g.names[i] for i in np.flatnonzero(indeg > 0)[:5]]
        raise InvalidProblemError(
            f"distance-0 edges form a cycle through {', '.join(stuck)}"
            + (" ..." if (indeg > 0).sum() > 5 else ""),
            source=g.name,
        )
    return gens


def asap_alap(
    g: GauSGraph, D: int | None = None, gens: list[np.ndarray] | None = None
) -> tuple[np.ndarray, np.ndarray]:
    """ASAP and ALAP start steps over distance-0 edges.

    ``ASAP_v = max_u (ASAP_u + d_uv)`` with sources at 0; ``ALAP_u = min_v (ALAP_v - d_uv)``
    with sinks at ``D - 1`` (``D`` defaults to the ASAP makespan + 1). ``ASAP > ALAP`` somewhere
    means no schedule fits in ``D`` steps.
    """
    gens = topological_generations(g) if gens is None else gens
    src, dst, d, gen_of = forward_edges(g, gens)
    into = edges_by_generation(dst, gen_of, len(gens))
    out_of = edges_by_generation(src, gen_of, len(gens))
    asap = np.zeros(g.n, dtype=np.int64)
    for k in range(1, len(gens)):
        e = into[k]
        np.maximum.at(asap, dst[e], asap[src[e]] + d[e])
    horizon = int(asap.max(initial=0)) + 1 if D is None else int(D)
    alap = np.full(g.n, horizon - 1, dtype=np.int64)
    for k in range(len(gens) - 2, -1, -1):
        e = out_of[k]
        np.minimum.at(alap, src[e], alap[dst[e]] - d[e])
    return asap, alap


def forward_edges(
    g: GauSGraph, gens: list[np.ndarray]
) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """The distance-0 edges as ``(src, dst, delay)`` and each op's generation in ``gens``."""
    fwd = g.forward
    gen_of = np.empty(g.n, dtype=np.int64)
    for k, nodes in enumerate(gens):
        gen_of[nodes] = k
    return g.src[fwd], g.dst[fwd], g.delay[fwd], gen_of


def edges_by_generation(ends: np.ndarray, gen_of: np.ndarray, count: int) -> list[np.ndarray]:
    """Edge indices grouped by the generation of their end ``ends`` (stable within a group)."""
    order = np.argsort(gen_of[ends], kind="stable")
    bounds = np.searchsorted(gen_of[ends][order], np.arange(count + 1))
    return [order[bounds[k] : bounds[k + 1]] for k in range(count)]


def critical_path_steps(g: GauSGraph) -> int:
    """Smallest ``D`` for which the distance-0 edges fit: ASAP makespan + 1."""
    asap, _ = asap_alap(g)
    return int(asap.max(initial=0)) + 1


def longest_path_nodes(g: GauSGraph) -> int:
    """Number of nodes on the longest distance-0 path (GS-Schedule's default depth)."""
    return len(topological_generations(g))
