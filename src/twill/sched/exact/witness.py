"""A joint schedule that certainly exists: one iteration at a time (Twill Phase 2 upper bound).

Algorithm 1 raises ``I`` until Phase 2 is satisfiable; without an ``I`` known to be
satisfiable, its default cap could stop short and answer "infeasible" for a legal kernel. Here
the operations run one after another in a topological order of the distance-0 edges, one
iteration at a time (``L <= I``, a single copy), variable-latency ops on slot 0 and every other
op on the consumer warp slots, each register-holding op placed on the slot set with the fewest
registers live when it issues. A consumer on another slot than its producer waits the
producer's spill cost too. ``I`` is then ``L``, or more where a loop-carried edge needs it.

The candidate is checked by the independent verifier
(:func:`twill.sched.verify_warps.verify_warp_schedule`); only a candidate that passes is
returned, so its ``I`` is *proven* satisfiable and the window there holds its ``L`` (Phase 1's
``LEN(M) <= L <= I``).

Preconditions: the graph passed :func:`twill.sched.validate.check_graph`.
"""

from __future__ import annotations

import heapq
import math
from dataclasses import dataclass

from twill.sched.exact.search import topological_order
from twill.sched.ir import DependenceGraph
from twill.sched.verify_warps import WarpRules, slots_needed, verify_warp_schedule

__all__ = [
    "SequentialWitness",
    "register_aware_order",
    "sequential_candidate",
    "sequential_witness",
]


@dataclass(frozen=True)
class SequentialWitness:
    """A verified joint schedule: start cycles, warp slots, ``I`` and ``L``."""

    I: int  # noqa: E741 (the paper's name)
    L: int
    schedule: dict[str, int]
    assignment: dict[str, tuple[int, ...]]


def _last_use(graph: DependenceGraph, order: list[str]) -> dict[str, int]:
    """Position in ``order`` until which each op's result is live (past the end when a later
    iteration reads it)."""
    pos = {n: k for k, n in enumerate(order)}
    last = {n: pos[n] for n in order}
    for e in graph.edges:
        last[e.src] = len(order) if e.distance > 0 else max(last[e.src], pos[e.dst])
    return last


def _assign(graph: DependenceGraph, order: list[str], rules: WarpRules) -> dict[str, tuple]:
    """Slots per op: slot 0 for variable latency, else the least-loaded consumer slots."""
    total = rules.num_warps(graph)
    has_vl = any(i.variable_latency for i in graph.instructions)
    consumers = list(range(1 if has_vl else 0, total))
    last = _last_use(graph, order)
    load = {w: 0 for w in range(total)}
    live: list[tuple[int, int, tuple[int, ...], int]] = []  # heap: (last position, k, slots, regs)
    out: dict[str, tuple[int, ...]] = {}
    for k, name in enumerate(order):
        ins = graph.instruction(name)
        while live and live[0][0] <= k:  # read for the last time by op k
            _, _, freed, regs = heapq.heappop(live)
            for w in freed:
                load[w] -= regs
        if ins.variable_latency:
            slots: tuple[int, ...] = (0,) if has_vl else (consumers[0],)
        else:
            need = slots_needed(ins, rules.warps_per_slot)
            slots = tuple(sorted(sorted(consumers, key=lambda w: (load[w], w))[:need]))
        out[name] = slots
        if ins.regs:
            heapq.heappush(live, (last[name], k, slots, ins.regs))
            for w in slots:
                load[w] += ins.regs
    return out


def register_aware_order(graph: DependenceGraph) -> list[str]:
    """A topological order of the distance-0 edges that keeps few registers live: among the
    ready ops it takes the one that adds the fewest registers net of the values it reads for
    the last time (ties by graph order). Where graph order would load a second wide tile while
    the first still waits for its reader (FlashAttention's rescaled O beside the P tile on
    B200), this order lets the reader go first."""
    index = graph.index()
    preds: dict[str, set[str]] = {n: set() for n in graph.names}
    readers: dict[str, set[str]] = {n: set() for n in graph.names}
    carried = {e.src for e in graph.edges if e.distance > 0}  # live to the end regardless
    for e in graph.edges:
        if e.distance == 0 and e.src != e.dst:
            preds[e.dst].add(e.src)
            readers[e.src].add(e.dst)
    done: set[str] = set()
    order: list[str] = []

    def net(n: str) -> int:
        freed = sum(graph.instruction(p).regs for p in preds[n]
                    if p not in carried and readers[p] - done <= {n})  # fmt: skip
        return graph.instruction(n).regs - freed

    while len(order) < len(graph.names):
        ready = [n for n in graph.names if n not in done and preds[n] <= done]
        if not ready:
            break  # a cycle of distance-0 edges (check_graph refuses it)
        pick = min(ready, key=lambda n: (net(n), index[n]))
        order.append(pick)
        done.add(pick)
    return order


def sequential_witness(
    graph: DependenceGraph, rules: WarpRules | None = None
) -> SequentialWitness | None:
    """A verified one-iteration-at-a-time joint schedule of ``graph``, or ``None`` when no
    candidate passes the verifier (e.g. too few slots for an op, or registers that do not fit
    even one at a time). Candidates come from two orders: graph order first, then
    :func:`register_aware_order`.

    Examples
    --------
    >>> from twill.kernels import flash_attention_forward_simplified
    >>> w = sequential_witness(flash_attention_forward_simplified())
    >>> (w.I, w.L) if w else None
    (3, 3)
    """
    rules = rules or WarpRules.for_graph(graph)
    if any(
        slots_needed(i, rules.warps_per_slot) > rules.num_warps(graph) for i in graph.instructions
    ):
        return None
    for make_order in (topological_order, register_aware_order):  # the second only if needed
        order = make_order(graph)
        if len(order) == len(graph.names):
            found = sequential_candidate(graph, order, rules)
            if found is not None:
                return found
    return None


def sequential_candidate(
    graph: DependenceGraph,
    order: list[str],
    rules: WarpRules,
    assignment: dict[str, tuple[int, ...]] | None = None,
) -> SequentialWitness | None:
    """The sequential schedule of ``order`` with its slot assignment (default: variable
    latency on slot 0, each other op on the least-loaded consumer slots), if the verifier
    passes it."""
    assignment = assignment or _assign(graph, order, rules)
    start: dict[str, int] = {}
    clock = 0
    for name in order:
        t = clock
        for e in graph.in_edges(name):
            if e.distance == 0 and e.src in start:
                cross = assignment[e.src] != assignment[name]
                spill = graph.instruction(e.src).spill_cost if cross else 0
                t = max(t, start[e.src] + e.delay + spill)
        start[name] = t
        clock = t + max(1, graph.instruction(name).cycles)
    length = max(start[n] + graph.instruction(n).cycles for n in order)
    ii = max(1, length)
    for e in graph.edges:
        if e.distance > 0:
            cross = assignment[e.src] != assignment[e.dst]
            need = start[e.src] + e.delay + (graph.instruction(e.src).spill_cost if cross else 0)
            ii = max(ii, math.ceil((need - start[e.dst]) / e.distance))
    schedule = dict(start)
    if verify_warp_schedule(graph, schedule, assignment, ii, length, rules=rules):
        return None
    return SequentialWitness(ii, length, schedule, assignment)
