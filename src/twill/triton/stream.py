"""Element-wise loops as Triton runs them: tiles over all the kernel's warps, wide tiles streamed.

Twill's tile-level model (paper §3) holds each operation's whole result in the registers of
the warp group(s) it runs on, from its issue until its last user issues. That is how the
tensor-core loops Twill was built for run. A loop with no tensor-core work (norms, losses,
softmax) runs differently in Triton, and two rules of the Triton front end follow it there
(docs/triton.md, "Loops without tensor-core work"; docs/decisions.md):

* **Layout.** Triton's blocked layouts spread every tensor over all ``num_warps`` warps of the
  kernel (``warpsPerCTA`` multiplies to ``num_warps``). A register tile of such a loop is
  placed the same way, over ``min(num_warps, 4 x compute warp groups)`` warps, with
  ``ceil(words / (32 x warps))`` registers per thread on each of their warp groups
  (:func:`spread_warps`), instead of on the fewest warp groups that hold it.
* **Streaming.** A tile that one warp group cannot hold (more 32-bit words than 128 threads
  have registers under the machine's limit: a 32768-element FP32 row is 256 per thread
  against 240 or 255) is never held whole by Triton's code: LLVM runs a chain of element-wise
  operations element by element, from the pointer loads that feed it to the stores that end
  it. Such a chain (element-wise ``arith``/``math`` ops and pointer ``tt.load`` with a wide
  result, and pointer ``tt.store`` of one) is one instruction (:func:`stream_wide`): its
  members run one after another on their units (the reservation tables concatenated, the
  cycles summed, an upper bound on the chain's time), and only results read outside the
  chain hold registers (each its whole tile, until its last reader). Reductions and scans
  stay instructions of their own: a tile they read is held whole until they issue.

Neither rule touches a loop with a tensor-core op, so the shipped kernels' graphs (and Twill's
answers on them) are unchanged.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence

from twill.sched.ir import DependenceGraph, Edge, Instruction
from twill.triton.costs import STREAMED
from twill.triton.ttgir import TtgirOp

__all__ = [
    "GROUP_THREADS",
    "STREAMED",
    "placement",
    "warp_groups",
    "spread_warps",
    "streamable",
    "stream_wide",
]

GROUP_THREADS = 128  # one warp group: the unit a register tensor is placed on

_ELEMENTWISE_EXTRA = frozenset(
    {"tt.fp_to_fp", "tt.clampf", "tt.precise_divf", "tt.precise_sqrt", "tt.mulhiui"}
)


def warp_groups(words: int, register_limit: int) -> tuple[int, int]:
    """Per-thread registers and warps of a register tensor of ``words`` 32-bit words: it runs on
    one warp group (128 threads) unless that would need more than ``register_limit`` registers
    per thread; then on the fewest warp groups that hold it."""
    per_group = -(-words // GROUP_THREADS)
    groups = max(1, -(-per_group // register_limit))
    return max(1, -(-words // (GROUP_THREADS * groups))), 4 * groups


def spread_warps(num_warps: int, machine_warps: int) -> int:
    """Warps a tile of a loop without tensor-core work spans: the kernel's ``num_warps``, at
    most the machine's compute warp groups (all slots but the variable-latency one), in whole
    warp groups; 0 when that is less than one warp group (no spreading)."""
    return 4 * max(0, min(num_warps, 4 * (machine_warps - 1)) // 4)


def placement(words: int, register_limit: int, spread: int) -> tuple[int, int]:
    """``(registers per thread, warps)`` of a register tile: :func:`warp_groups`, then, when
    ``spread`` warps are more, spread over them as Triton's layout does."""
    regs, warps = warp_groups(words, register_limit)
    if spread > warps:
        warps = spread
        regs = max(1, math.ceil(words / (32 * warps)))
    return regs, warps


def streamable(op: TtgirOp) -> bool:
    """An operation that works element by element on its tile (a streaming candidate)."""
    name = op.name
    return (
        name in ("tt.load", "tt.store")
        or name.startswith(("arith.", "math."))
        or (name in _ELEMENTWISE_EXTRA)
    )


def _groups(graph: DependenceGraph, members: set[str]) -> list[list[str]]:
    """Members joined along distance-0 edges, greedily in edge order, never closing a cycle
    through an outside op (the graph of groups stays acyclic at distance 0)."""
    order = [i.name for i in graph.instructions]
    root = {n: n for n in order}

    def find(n: str) -> str:
        while root[n] != n:
            n = root[n]
        return n

    def acyclic() -> bool:
        succ: dict[str, set[str]] = {}
        for e in graph.edges:
            a, b = find(e.src), find(e.dst)
            if e.distance == 0 and a != b:
                succ.setdefault(a, set()).add(b)
        state: dict[str, int] = {}

        def visit(u: str) -> bool:
            state[u] = 1
            for v in succ.get(u, ()):
                if state.get(v) == 1 or (v not in state and not visit(v)):
                    return False
            state[u] = 2
            return True

        return all(visit(u) for u in {find(n) for n in order} if u not in state)

    for e in graph.edges:
        if e.distance or e.src not in members or e.dst not in members:
            continue
        a, b = find(e.src), find(e.dst)
        if a == b:
            continue
        keep = order.index(a) < order.index(b)
        root[b if keep else a] = a if keep else b
        if not acyclic():
            root[b if keep else a] = b if keep else a
    out: dict[str, list[str]] = {}
    for n in order:
        out.setdefault(find(n), []).append(n)
    return [g for g in out.values() if len(g) > 1]


def _merged(graph: DependenceGraph, names: Sequence[str]) -> Instruction:
    """One instruction running ``names`` one after another; registers for results read
    outside the group (or by a later iteration)."""
    ins = [graph.instruction(n) for n in names]
    inside = set(names)
    cycles = sum(i.cycles for i in ins)
    rows: dict[str, list[int]] = {}
    offset = 0
    for i in ins:
        for fu, row in i.reservation.items():
            full = rows.setdefault(fu, [0] * cycles)
            for c, units in enumerate(row):
                full[offset + c] += units
        offset += i.cycles
    out = [
        i for i in ins if any(e.dst not in inside or e.distance for e in graph.out_edges(i.name))
    ]
    units = [i.unit for i in ins if i.unit not in (None, "TMA")]
    ops = " + ".join(i.note.split(" (")[0] for i in ins)
    return Instruction(
        ins[0].name,
        cycles,
        {fu: tuple(row) for fu, row in rows.items()},
        regs=sum(i.regs for i in out),
        spill_cost=max((i.spill_cost for i in out), default=0),
        warps=max(i.warps for i in ins),
        unit=units[0] if units else ins[0].unit,
        note=f"{ops}, streamed ({cycles} clk)",
    )


def stream_wide(
    graph: DependenceGraph, wide: set[str], ops: Mapping[str, TtgirOp]
) -> tuple[DependenceGraph, dict[str, str]]:
    """``graph`` (SM clocks) with every chain of wide element-wise instructions merged into one
    (see the module docstring). ``wide``: instructions whose result tile one warp group cannot
    hold; ``ops``: the TTGIR op of each instruction. Returns the graph and, for every merged
    instruction but the first of its chain, the instruction it went into."""
    members = {n for n in wide if streamable(ops[n]) and ops[n].name != "tt.store"}
    for n, op in ops.items():  # a store of a streamed tile ends the chain
        srcs = [e.src for e in graph.in_edges(n) if e.distance == 0]
        if op.name == "tt.store" and srcs and all(s in members for s in srcs):
            members.add(n)
    groups = _groups(graph, members)
    if not groups:
        return graph, {}
    into = {n: g[0] for g in groups for n in g[1:]}
    merged = {g[0]: _merged(graph, g) for g in groups}
    new = tuple(merged.get(i.name, i) for i in graph.instructions if i.name not in into)
    cycles = {i.name: i.cycles for i in new}
    edges: dict[tuple[str, str, int], Edge] = {}
    for e in graph.edges:
        s, d = into.get(e.src, e.src), into.get(e.dst, e.dst)
        if s == d and e.distance == 0:
            continue
        delay = cycles[s] if e.delay and s in merged else e.delay
        old = edges.get((s, d, e.distance))
        if old is None or delay > old.delay:
            edges[s, d, e.distance] = Edge(s, d, delay, e.distance, e.blocking or bool(
                old and old.blocking))  # fmt: skip
    return DependenceGraph(graph.name, new, tuple(edges.values()), graph.machine), into
