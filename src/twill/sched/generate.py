"""Large loop bodies for benchmarks and tests: random HLS loops and unrolled loops.

:func:`unroll` unrolls a loop body ``u`` times (as an HLS tool does before pipelining), so
the shipped HatScheT loops give loops of 1,000+ operations with their real recurrences.

:func:`random_hls_loop`: random loop bodies with recurrences and HatScheT-style resource
models.

The operator mix, latencies and limits follow the resource models of the HatScheT MachSuite
instances (SpeedyBK/hatschet ``benchmarks/MachSuite``: ``mem_read`` latency 2 limit 2,
``mem_write`` latency 1 limit 1, ``fp_plus`` latency 16 limit 4, ``fp_mult`` latency 13 limit
4, ``fp_rdiv`` latency 32 limit 2, one ``special_loop`` counter, unlimited integer operators),
with one non-pipelined divider (``blockingTime`` 4, a multi-row reservation table) so that
every kind of reservation the readers build occurs. Semantics as in
:mod:`twill.io.hatschet`: an edge's delay is the source's latency; an op reserves
``blockingTime`` consecutive cycles of its unit.

Structure: ops in a random topological order; each takes one or two operands from the
previous ``window`` ops (distance-0 edges); about one op in ``1 / recurrence_rate`` closes a
recurrence: an edge back to an op up to ``window`` positions earlier, distance 1 or 2 (the
loop-carried accumulators and induction variables of unrolled HLS loops). The same ``seed``
and arguments give the same graph.
"""

from __future__ import annotations

import random

from twill.sched.ir import DependenceGraph, Edge, Instruction, MachineDescription

__all__ = ["RESOURCES", "random_hls_loop", "unroll"]

# name: (latency, blockingTime, limit, weight in the operator mix); limit -1 = unlimited
RESOURCES: dict[str, tuple[int, int, int, float]] = {
    "mem_read": (2, 1, 2, 0.16),
    "mem_write": (1, 1, 1, 0.06),
    "fp_plus": (16, 1, 4, 0.16),
    "fp_mult": (13, 1, 4, 0.14),
    "fp_rdiv": (32, 1, 2, 0.02),
    "div_seq": (8, 4, 1, 0.01),
    "int_alu": (1, 1, -1, 0.30),
    "int_cmp": (0, 0, -1, 0.14),
    "special_loop": (1, 1, 1, 0.01),
}


def random_hls_loop(
    ops: int,
    seed: int,
    *,
    window: int = 24,
    recurrence_rate: float = 0.03,
    depth: int | None = None,
) -> DependenceGraph:
    """A random loop body of ``ops`` operations with recurrences (module docstring).

    Parameters
    ----------
    ops
        Number of operations (>= 2).
    seed
        Random seed (deterministic output).
    window
        How far back (in the op order) operands and recurrences reach.
    recurrence_rate
        Expected recurrences per op.

    Returns
    -------
    DependenceGraph
        Named ``random_<ops>_s<seed>``; valid (every circuit has distance >= 1).

    Examples
    --------
    >>> g = random_hls_loop(50, seed=1)
    >>> len(g.instructions), g.name
    (50, 'random_50_s1')
    """
    rng = random.Random(seed)
    kinds = list(RESOURCES)
    weights = [RESOURCES[k][3] for k in kinds]
    chosen = rng.choices(kinds, weights, k=ops)
    chosen[0] = "special_loop"  # the loop counter heads the body
    names = [f"{k}_{i}" for i, k in enumerate(chosen)]
    instructions = []
    for name, kind in zip(names, chosen, strict=True):
        _lat, block, limit, _w = RESOURCES[kind]
        rrt = {kind: (1,) * block} if block > 0 else {}
        instructions.append(Instruction(name, block, rrt, unit=kind))
    edges: list[Edge] = [Edge(names[0], names[0], RESOURCES[chosen[0]][0], 1)]
    operands: list[list[int]] = [[]]
    depth = max(4, ops // 50) if depth is None else depth
    for i in range(1, ops):
        operands.append(
            sorted({rng.randrange(max(0, i - window), i) for _ in range(rng.choice((1, 1, 2)))})
        )
        for j in operands[i]:
            edges.append(Edge(names[j], names[i], RESOURCES[chosen[j]][0]))
        if rng.random() < recurrence_rate:  # back to an ancestor: a real circuit
            j = i
            for _ in range(rng.randint(2, depth)):
                if not operands[j]:
                    break
                j = rng.choice(operands[j])
            if j != i:
                edges.append(Edge(names[i], names[j], RESOURCES[chosen[i]][0], rng.choice((1, 2))))
    used = sorted(set(chosen))
    machine = MachineDescription(
        name="hatschet_machsuite_like",
        functional_units={k: RESOURCES[k][2] for k in used},
        note="HatScheT MachSuite-style resource model (twill.sched.random_loops)",
    )
    unique = list(dict.fromkeys(edges))
    return DependenceGraph(f"random_{ops}_s{seed}", tuple(instructions), tuple(unique), machine)


def unroll(graph: DependenceGraph, factor: int) -> DependenceGraph:
    """The loop body unrolled ``factor`` times: one iteration of the result runs ``factor``
    consecutive iterations of ``graph``.

    Copy ``k`` of op ``v`` is ``v@k``. An edge ``(u, v, d, delta)`` becomes, for every copy
    ``k``, the edge from ``u@k`` to ``v@((k + delta) mod factor)`` with distance
    ``(k + delta) // factor``: the same dependence between the same original iterations. The
    machine is unchanged. A modulo schedule of ``graph`` at ``I`` gives one of the result at
    ``factor * I`` (copy ``k`` at ``M(v) + k*I``), so the unrolled loop's minimum ``I`` is at
    most ``factor`` times the original's.

    Examples
    --------
    >>> from twill.sched.kernels import flash_attention_forward_simplified
    >>> g = unroll(flash_attention_forward_simplified(), 2)
    >>> len(g.instructions), [(e.src, e.dst, e.distance) for e in g.edges if e.src.startswith("O")]
    (6, [('O@0', 'O@1', 0), ('O@1', 'O@0', 1)])
    """
    if isinstance(factor, bool) or not isinstance(factor, int) or factor < 1:
        raise ValueError(f"unroll factor must be an integer >= 1, found {factor!r}")
    from dataclasses import replace

    instructions = tuple(
        replace(ins, name=f"{ins.name}@{k}") for k in range(factor) for ins in graph.instructions
    )
    edges = tuple(
        replace(
            e,
            src=f"{e.src}@{k}",
            dst=f"{e.dst}@{(k + e.distance) % factor}",
            distance=(k + e.distance) // factor,
        )  # fmt: skip
        for k in range(factor)
        for e in graph.edges
    )
    return DependenceGraph(f"{graph.name}_x{factor}", instructions, edges, graph.machine)
