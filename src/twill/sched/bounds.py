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

from twill.errors import InvalidProblemError
from twill.sched.ir import DependenceGraph

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
    names = graph.names
    ordered = _ordered_arcs(graph) if ordered is None else ordered
    arcs = [(u, v, d - ii * delta) for u, v, d, delta in ordered]
    dist = [0] * len(names)
    parent = [-1] * len(names)
    for rounds in range(len(names) + 1):
        changed = False
        for k, (u, v, w) in enumerate(arcs):
            cand = dist[u] + w
            if cand > dist[v]:
                dist[v] = cand
                parent[v] = k
                changed = True
        if not changed:
            return dict(zip(names, dist, strict=True))
        if rounds % 8 == 7 and _parent_circuit(parent, arcs):
            return None  # a circuit of parent arcs has positive weight: stop early
    return None


def _parent_circuit(parent: list[int], arcs: list[tuple[int, int, int]]) -> bool:
    """True when the arcs that last improved each op form a circuit. In a Bellman-Ford run
    for longest paths such a circuit has positive weight (each of its arcs was tight when
    set, and the values only grew since), so the run would never settle."""
    state = [0] * len(parent)  # 0 unseen, 1 on the current walk, 2 done
    for start in range(len(parent)):
        v, walk = start, []
        while v >= 0 and state[v] == 0:
            state[v] = 1
            walk.append(v)
            v = arcs[parent[v]][0] if parent[v] >= 0 else -1
        if v >= 0 and state[v] == 1:
            return True
        for x in walk:
            state[x] = 2
    return False


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
    ``II = max(1, sum_e d_e)`` is always feasible when every circuit has distance >= 1, so
    the search runs over ``[1, sum_e d_e]`` with ``O(|V| |E| log sum d)`` work.

    Examples
    --------
    >>> from twill.sched.kernels import flash_attention_forward_simplified
    >>> rec_mii(flash_attention_forward_simplified())
    1
    """
    hi = max(1, sum(e.delay for e in graph.edges))
    ordered = _ordered_arcs(graph)
    if has_positive_cycle(graph, hi, ordered):
        raise InvalidProblemError(
            f"graph {graph.name!r}: a dependence circuit has total distance 0 and positive delay"
        )
    return least_passing(1, hi, lambda ii: not has_positive_cycle(graph, ii, ordered))


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
