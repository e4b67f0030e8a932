"""Lower bounds and horizons for modulo scheduling (Rau, MICRO-27 1994; Twill Phase 1).

* :func:`res_mii`: ``max_f ceil(sum_v sum_c RRT[v][f,c] / cap(f))`` over limited units
  (Rau, MICRO-27 1994).
* :func:`rec_mii`: the maximum cycle ratio ``max_c ceil(d(c) / delta(c))`` computed **without
  enumerating circuits**: the smallest integer ``II`` for which the graph with edge weights
  ``d - II*delta`` has no positive-weight cycle (Bellman-Ford longest paths), found by binary
  search, since feasibility is monotone in ``II`` (``delta >= 0``).
* :func:`mii`: ``max(res_mii, rec_mii)``.
* :func:`asap`: earliest starts at a given ``II`` (longest paths from time 0).
* :func:`stage_bound`: the proven-sufficient bound on Phase-1 stages (proof in its docstring).

GauS's array forms of these bounds live in :mod:`twill.sched.gaus.bounds`.

Preconditions: the graph has passed :func:`twill.sched.validate.check_graph` (in particular
no zero-distance circuit; :func:`rec_mii` raises ``InvalidProblemError`` if one is found).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import replace

from twill.errors import InvalidProblemError
from twill.sched.ir import DependenceGraph, Edge
from twill.sched.validate import strongly_connected

__all__ = [
    "res_mii",
    "rec_mii",
    "mii",
    "asap",
    "has_positive_cycle",
    "stage_bound",
    "horizon",
    "total_usage",
    "least_passing",
]


def total_usage(graph: DependenceGraph) -> dict[str, int]:
    """Total units reserved per functional unit by one iteration (sum over ops and RRT rows)."""
    usage: dict[str, int] = {fu: 0 for fu in graph.machine.functional_units}
    for ins in graph.instructions:
        for fu, row in ins.reservation.items():
            usage[fu] = usage.get(fu, 0) + sum(row)
    return usage


def res_mii(graph: DependenceGraph) -> int:
    """Resource-constrained minimum initiation interval (at least 1).

    Parameters
    ----------
    graph
        A checked dependence graph; unlimited units (capacity -1) are ignored.

    Returns
    -------
    int
        ``max(1, max_f ceil(usage(f) / cap(f)))``.

    Raises
    ------
    InvalidProblemError
        If a unit with capacity 0 is used.

    Examples
    --------
    >>> from twill.sched.kernels import flash_attention_forward_simplified
    >>> res_mii(flash_attention_forward_simplified())
    2
    """
    best = 1
    for fu, used in total_usage(graph).items():
        cap = graph.machine.functional_units.get(fu, -1)
        if cap < 0 or used == 0:
            continue
        if cap == 0:
            raise InvalidProblemError(f"functional unit {fu!r} has capacity 0 but is used")
        best = max(best, -(-used // cap))
    return best


def _ordered_arcs(graph: DependenceGraph) -> list[tuple[int, int, int, int]]:
    """The edges as ``(src, dst, delay, distance)`` index tuples, sorted by their source's
    place in a topological order of the distance-0 edges: one Bellman-Ford pass then settles
    every chain, so the passes needed are about the back edges on a longest path, not |V|
    (same fixpoint, any order). Independent of ``ii``: :func:`rec_mii` builds it once."""
    index = graph.index()
    rank = _topological_rank(graph, index)
    arcs = [(index[e.src], index[e.dst], e.delay, e.distance) for e in graph.edges]
    arcs.sort(key=lambda a: rank[a[0]])
    return arcs


def _longest_paths(
    graph: DependenceGraph, ii: int, ordered: list[tuple[int, int, int, int]] | None = None
) -> dict[str, int] | None:
    """Longest-path potentials from a virtual source (weight 0 to every node), or ``None``.

    Bellman-Ford with weights ``d - ii*delta`` over ``ordered`` (:func:`_ordered_arcs`, built
    here when not given); ``None`` when a positive cycle exists.
    """
    ordered = _ordered_arcs(graph) if ordered is None else ordered
    dist, _ = _bellman_ford(len(graph.instructions), ii, ordered)
    return None if dist is None else dict(zip(graph.names, dist, strict=True))


def _bellman_ford(
    n: int, ii: int, ordered: list[tuple[int, int, int, int]]
) -> tuple[list[int] | None, list[int] | None]:
    """``(potentials, None)`` when no circuit has ``d - ii*delta > 0``, else ``(None,
    circuit)``: the indices into ``ordered`` of such a circuit (empty when the rounds ran out
    before one was found among the parent arcs)."""
    arcs = [(u, v, d - ii * delta) for u, v, d, delta in ordered]
    dist = [0] * n
    parent = [-1] * n
    for rounds in range(n + 1):
        changed = False
        for k, (u, v, w) in enumerate(arcs):
            cand = dist[u] + w
            if cand > dist[v]:
                dist[v] = cand
                parent[v] = k
                changed = True
        if not changed:
            return dist, None
        if rounds % 8 == 7:
            circuit = _parent_circuit(parent, arcs)
            if circuit:
                return None, circuit  # a circuit of parent arcs has positive weight
    return None, _parent_circuit(parent, arcs)


def _parent_circuit(parent: list[int], arcs: list[tuple[int, int, int]]) -> list[int]:
    """The arcs (indices) of a circuit among the arcs that last improved each op, or ``[]``.
    In a Bellman-Ford run for longest paths such a circuit has positive weight (each of its
    arcs was tight when set, and the values only grew since), so the run would never settle."""
    state = [0] * len(parent)  # 0 unseen, 1 on the current walk, 2 done
    for start in range(len(parent)):
        v, walk = start, []
        while v >= 0 and state[v] == 0:
            state[v] = 1
            walk.append(v)
            v = arcs[parent[v]][0] if parent[v] >= 0 else -1
        if v >= 0 and state[v] == 1:
            circuit, x = [], v
            while True:
                circuit.append(parent[x])
                x = arcs[parent[x]][0]
                if x == v:
                    return circuit
        for x in walk:
            state[x] = 2
    return []


def _topological_rank(graph: DependenceGraph, index: dict[str, int]) -> list[int]:
    """Position of every op in a topological order of the distance-0 edges (Kahn); ops on a
    distance-0 circuit (an invalid graph) come last, in index order."""
    n = len(index)
    succ: list[list[int]] = [[] for _ in range(n)]
    indeg = [0] * n
    for e in graph.edges:
        if e.distance == 0 and e.src != e.dst:
            succ[index[e.src]].append(index[e.dst])
            indeg[index[e.dst]] += 1
    ready = [v for v in range(n) if indeg[v] == 0]
    rank = [n] * n
    k = 0
    while ready:
        u = ready.pop()
        rank[u] = k
        k += 1
        for v in succ[u]:
            indeg[v] -= 1
            if indeg[v] == 0:
                ready.append(v)
    return rank


def has_positive_cycle(
    graph: DependenceGraph, ii: int, ordered: list[tuple[int, int, int, int]] | None = None
) -> bool:
    """True when some circuit ``c`` has ``d(c) - ii*delta(c) > 0`` (so ``ii < RecMII``);
    ``ordered``: the graph's :func:`_ordered_arcs`, when the caller tests several ``ii``."""
    return _longest_paths(graph, ii, ordered) is None


def _circuit_edges(graph: DependenceGraph) -> list[list[Edge]]:
    """The edges of each strongly connected component that has a circuit (a self-loop
    included), one list per component."""
    names = graph.names
    succ: dict[str, list[str]] = {n: [] for n in names}
    for e in graph.edges:
        succ[e.src].append(e.dst)
    component: dict[str, int] = {}
    for k, comp in enumerate(strongly_connected(names, succ)):
        for n in comp:
            component[n] = k
    groups: dict[int, list[Edge]] = {}
    for e in graph.edges:
        if component[e.src] == component[e.dst]:
            groups.setdefault(component[e.src], []).append(e)
    return list(groups.values())


def rec_mii(graph: DependenceGraph) -> int:
    """Recurrence-constrained minimum initiation interval (at least 1), by binary search.

    Parameters
    ----------
    graph
        A checked dependence graph.

    Returns
    -------
    int
        The smallest integer ``II >= 1`` such that no circuit has ``d(c) > II * delta(c)``.

    Raises
    ------
    InvalidProblemError
        If a circuit with total distance 0 and positive delay exists (no ``II`` works).

    Notes
    -----
    Only the edges inside a strongly connected component lie on circuits, so the search runs
    on those alone (a graph without circuits: 1 at once). From ``II = 1`` upward, a
    Bellman-Ford run at ``II`` either settles (``II`` is RecMII) or names a circuit ``c`` with
    ``d(c) > II * delta(c)``, whose ratio lifts ``II`` to ``ceil(d(c) / delta(c))`` (Lawler's
    iteration; a few runs in practice). A circuit of distance 0, or a run that ends without
    naming its circuit, falls back to bisection over ``[II, max(1, sum of a component's
    delays)]``, feasible when every circuit has distance >= 1.

    Examples
    --------
    >>> from twill.sched.kernels import flash_attention_forward_simplified
    >>> rec_mii(flash_attention_forward_simplified())
    1
    """
    cyclic = _circuit_edges(graph)  # only an edge on some circuit can bound II
    if not cyclic:
        return 1
    hi = max(1, max(sum(e.delay for e in group) for group in cyclic))
    inner = replace(graph, edges=tuple(e for group in cyclic for e in group))
    ordered = _ordered_arcs(inner)
    n = len(inner.instructions)
    lo = 1
    while lo <= hi:  # each positive circuit found lifts lo past its own ratio d/delta
        _, circuit = _bellman_ford(n, lo, ordered)
        if circuit is None:
            return lo
        if not circuit:
            break  # rounds ran out without naming the circuit: bisect from lo
        d = sum(ordered[k][2] for k in circuit)
        delta = sum(ordered[k][3] for k in circuit)
        if delta == 0:
            break
        lo = max(lo + 1, -(-d // delta))
    if has_positive_cycle(inner, hi, ordered):
        raise InvalidProblemError(
            f"graph {graph.name!r}: a dependence circuit has total distance 0 and positive delay"
        )
    return least_passing(lo, hi, lambda ii: not has_positive_cycle(inner, ii, ordered))


def least_passing(lo: int, hi: int, passes: Callable[[int], bool]) -> int:
    """The least ``x`` in ``[lo, hi]`` that ``passes``, by bisection: ``passes`` must be
    monotone (false below some point, true from it on); ``hi`` is taken to pass untested.

    Examples
    --------
    >>> least_passing(1, 100, lambda x: x * x >= 50)
    8
    """
    while lo < hi:
        mid = (lo + hi) // 2
        lo, hi = (lo, mid) if passes(mid) else (mid + 1, hi)
    return lo


def mii(graph: DependenceGraph) -> int:
    """``max(res_mii(graph), rec_mii(graph))``: a lower bound on every feasible I."""
    return max(res_mii(graph), rec_mii(graph))


def asap(graph: DependenceGraph, ii: int | None = None) -> dict[str, int]:
    """Earliest start of every op, ignoring resources.

    Parameters
    ----------
    graph
        A checked dependence graph.
    ii
        Initiation interval for loop-carried edges (weight ``d - ii*delta``); ``None`` uses
        only distance-0 edges (one iteration as a DAG).

    Returns
    -------
    dict
        Name -> earliest start, the smallest being 0.

    Raises
    ------
    InvalidProblemError
        If ``ii`` is below RecMII (a positive cycle exists).
    """
    if ii is None:
        sub = graph.replace(edges=tuple(e for e in graph.edges if e.distance == 0))
        dist = _longest_paths(sub, 0)
    else:
        dist = _longest_paths(graph, ii)
    if dist is None:
        raise InvalidProblemError(f"graph {graph.name!r}: no schedule at II={ii} (below RecMII)")
    low = min(dist.values(), default=0)
    return {n: t - low for n, t in dist.items()}


def stage_bound(graph: DependenceGraph, ii: int) -> int:
    """Largest stage ``k_v`` any Phase-1 solution needs: ``(|V|-1) * max_e ceil((d_e+ii-1)/ii)``.

    Proof: fix the residues ``r_v`` of an optimal solution. Dependences become
    difference constraints ``k_v - k_u >= w_e`` with
    ``w_e = ceil((d_e - delta_e*ii - r_v + r_u)/ii) <= ceil((d_e + ii - 1)/ii)``. When feasible,
    the least solution ``k_v = max(0, longest path to v)`` uses paths of at most ``|V|-1`` arcs,
    so ``k_v <= (|V|-1) * max(0, max_e w_e)``; it is pointwise smallest, so it also has the
    smallest length ``L``. Hence the bound cuts off neither feasibility nor the optimal ``L``.
    """
    wmax = max((-(-(e.delay + ii - 1) // ii) for e in graph.edges), default=0)
    return max(0, len(graph.instructions) - 1) * max(0, wmax)


def horizon(graph: DependenceGraph, ii: int) -> int:
    """Largest start time any op needs at ``ii``: ``ii * stage_bound + ii - 1``."""
    return ii * stage_bound(graph, ii) + ii - 1
