"""Public entry points of GauS (GauS: differentiable scheduling via Gaussian reparameterisation,
Cai et al., arXiv 2602.20427; ``docs/gaus.md``).

* :class:`GauSSolver`: formulations A (resource peak + communication), B (peak memory) and C
  (modulo: II, resource caps, recurrences, memory) on any graph.
* :func:`gaus_solve_twill_graph`: modulo-schedule a Twill kernel graph at a target II, or at
  the smallest II GauS legalises starting from MII.
* :func:`generate_random_dag`: seeded random DAGs with optional back edges (recurrences).

This module is thin: the algorithms live in :mod:`twill.sched.gaus`.
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np

from twill.errors import InvalidProblemError
from twill.results import SolveResult, Status
from twill.sched.gaus.alm import GauSSettings
from twill.sched.gaus.result import GauSSchedule
from twill.sched.gaus.solver import GauSSolver
from twill.sched.ir import DependenceGraph, Edge, Instruction, MachineDescription
from twill.validation import check_int, check_real

__all__ = [
    "GauSSolver",
    "GauSSettings",
    "GauSSchedule",
    "gaus_solve_twill_graph",
    "generate_random_dag",
]

RANDOM_DAG_UNITS = ("ALU", "MUL", "MEM", "TC")


def generate_random_dag(
    num_nodes: int,
    edge_density: float,
    num_back_edges: int = 0,
    seed: int = 0,
    *,
    max_recurrence_ratio: int = 4,
) -> DependenceGraph:
    """A seeded random dependence graph: forward DAG plus optional recurrence back edges.

    Forward edges ``i -> j`` (``i < j``) appear independently with probability
    ``edge_density``, each with delay 1 and distance 0. Every node is a one-step op using one
    unit of one of four functional units (``ALU``, ``MUL``, ``MEM``, ``TC``, chosen uniformly;
    unlimited capacity, so a solver's ``R_cap`` sets the limit) and holds a 1-unit result
    (memory weight ``regs = 1``).

    Back edges go from a deeper node ``u`` to a shallower ancestor-level node ``v`` (ASAP
    ``u`` > ASAP ``v``) with delay 1 and distance
    ``ceil((ASAP_u - ASAP_v + 1) / max_recurrence_ratio)``, so every circuit satisfies
    ``sum d <= max_recurrence_ratio * sum delta`` and RecMII <= ``max_recurrence_ratio``
    (telescoping over ASAP levels).

    Parameters
    ----------
    num_nodes
        Number of ops (>= 1).
    edge_density
        Probability of each forward edge, in [0, 1].
    num_back_edges
        Number of recurrence edges to add (fewer if the graph has too few levels).
    seed
        Random seed (default 0, so calls without one are reproducible).
    max_recurrence_ratio
        Bound on every circuit's delay/distance ratio.

    Returns
    -------
    DependenceGraph
        Ops named ``n0 .. n{num_nodes-1}``.

    Examples
    --------
    >>> g = generate_random_dag(10, 0.3, 2, seed=1)
    >>> len(g.instructions), sum(e.distance > 0 for e in g.edges)
    (10, 2)
    """
    try:
        check_int(num_nodes, "num_nodes", maximum=10_000_000)
        check_real(edge_density, "edge_density", strict=False, maximum=1.0)
        check_int(num_back_edges, "num_back_edges", minimum=0)
        check_int(seed, "seed", minimum=0)
        check_int(max_recurrence_ratio, "max_recurrence_ratio")
    except InvalidProblemError as exc:
        raise exc.with_source("generate_random_dag") from None
    rng = np.random.default_rng(seed)
    n = num_nodes
    # forward edges: sample the upper triangle row by row (memory O(n) per row)
    src_list, dst_list = [], []
    for i in range(n - 1):
        js = np.flatnonzero(rng.random(n - 1 - i) < edge_density) + i + 1
        src_list.append(np.full(js.size, i))
        dst_list.append(js)
    src = np.concatenate(src_list) if src_list else np.zeros(0, np.int64)
    dst = np.concatenate(dst_list) if dst_list else np.zeros(0, np.int64)
    level = np.zeros(n, dtype=np.int64)
    order = np.argsort(dst, kind="stable")
    ptr = np.searchsorted(dst[order], np.arange(n + 1))
    for j in range(n):  # node order is topological
        e = order[ptr[j] : ptr[j + 1]]
        if e.size:
            level[j] = level[src[e]].max() + 1
    units = rng.integers(0, len(RANDOM_DAG_UNITS), size=n)
    names = [f"n{i}" for i in range(n)]
    instructions = tuple(
        Instruction(names[i], 1, {RANDOM_DAG_UNITS[units[i]]: (1,)}, regs=1) for i in range(n)
    )
    edges = [Edge(names[s], names[d], 1) for s, d in zip(src, dst, strict=True)]
    back = 0
    attempts = 0
    while back < num_back_edges and attempts < 50 * max(num_back_edges, 1):
        attempts += 1
        u, v = rng.integers(0, n, size=2)
        if level[u] <= level[v]:
            continue
        dist = math.ceil((int(level[u] - level[v]) + 1) / max_recurrence_ratio)
        edges.append(Edge(names[u], names[v], 1, dist))
        back += 1
    machine = MachineDescription(
        "random", {u: MachineDescription.UNLIMITED for u in RANDOM_DAG_UNITS}
    )
    return DependenceGraph(
        f"random_dag_{n}_{edge_density}_{num_back_edges}_s{seed}",
        instructions,
        tuple(edges),
        machine,
    )


def gaus_solve_twill_graph(
    graph: DependenceGraph,
    target_II: int | None = None,
    D: int | None = None,
    verbose: bool = False,
    *,
    max_II: int | None = None,
    **options: Any,
) -> SolveResult:
    """Modulo-schedule a Twill dependence graph with GauS (formulation C).

    Parameters
    ----------
    graph
        The kernel graph (its machine gives the capacities).
    target_II
        Solve at this II. ``None``: try II = MII, MII+1, ... until GauS returns a legal
        schedule (at most ``max_II``, default ``MII + 16``).
    D
        Latency bound in steps (``None``: default window).
    verbose
        Log progress at INFO.
    **options
        Passed to :class:`GauSSolver` (``lr``, ``max_iters``, ``device``, ``seed``,
        ``total_time_limit``, ...). ``total_time_limit`` bounds the whole search over II.

    Returns
    -------
    SolveResult
        A verified legal schedule (``legal`` True; ``solution`` a :class:`GauSSchedule` at
        ``II``) or the reason why none was found (``message``); the run record is in
        ``stats``, also read as attributes (``result.II``, ``result.seconds``, ...).

    Notes
    -----
    Heuristic: a failure at some II is not a proof that the II is infeasible unless the status
    is ``INFEASIBLE`` (II below ResMII/RecMII).
    """
    from twill.sched.gaus.bounds import default_II

    check_int(target_II, "target_II", none=True)
    check_int(max_II, "max_II", none=True)
    solver = GauSSolver(graph, D=D, verbose=verbose, **options)
    if target_II is not None:
        return solver.solve_modulo(int(target_II))
    mii = default_II(solver.graph)  # the view the solver built and checked
    last = None
    # one deadline for the whole search over II: each solve keeps the started options' clock
    solver.options = solver.options.start()
    for ii in range(mii, (max_II if max_II is not None else mii + 16) + 1):
        if last is not None and solver.options.clock.passed():
            break
        last = solver.solve_modulo(ii)
        if last.legal:
            return last
        if last.status is Status.INFEASIBLE and last.infeasible_cause == "D":
            break
    assert last is not None
    return last
