"""Triton front end: TTGIR loops -> :class:`~twill.sched.ir.DependenceGraph` (docs/triton.md).

Every loop of the kernel that holds no other loop (``scf.for`` or ``scf.while``, anywhere in
the function: after an early return, inside an ``scf.if``, inside an outer loop) is one
scheduling problem. The body of each enclosing loop outside the inner loop (a persistent
kernel's tile epilogue, the prologue of a K loop) is reported as context with its cost in SM
clocks (:class:`LoopContext`), not scheduled.

* every operation of the body is an instruction (unit and SM clocks from
  :mod:`twill.triton.costs`) or folded for a documented reason
  (:data:`~twill.triton.costs.FOLD_REASONS`): a folded op takes no time and no unit, and
  its users depend on whatever it depends on;
* ``scf.if`` in the body is **predicated**: the branch with the larger total cost is taken as
  if it always ran (its ops are instructions and depend on the condition), the other is dropped
  and counted in :attr:`ExtractedLoop.notes`;
* edges: SSA def-use inside the iteration (distance 0); loop-carried values fed by
  ``scf.yield`` (distance 1); writes into a buffer (TMA copy destination, MMA accumulator,
  ``tmem_store``) reach later readers in the same iteration (distance 0) and earlier readers in
  the next one (distance 1); the delay of an edge is its producer's cycles; streaming loads
  (no incoming data edge) have delay 0;
* then the paper's cost normalisation (§5.2, ``U = 300``); a loop whose lower bound on I
  then spans more than :data:`UNITS_PER_BOUND` units is normalised again with a smaller
  budget (:func:`normalise_loop`).

An unknown operation is an :class:`~twill.errors.InvalidProblemError` naming the operation and
its source line.
"""

from __future__ import annotations

import contextvars
import math
import re
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from twill.deadline import Deadline
from twill.errors import InvalidProblemError
from twill.sched.ir import DependenceGraph, Edge, Instruction
from twill.sched.machines import RATES, Rates, machine_for
from twill.triton.costs import VIEWS as _VIEWS
from twill.triton.costs import classify, fold_reason, op_cycles, result_type
from twill.triton.stream import STREAMED, placement, spread_warps, stream_wide, warp_groups
from twill.triton.ttgir import SHAPE, TtgirModule, TtgirOp, element_bits, parse_ttgir

__all__ = [
    "extract_graph",
    "extract_loops",
    "extract_ttgir_file",
    "read_ttgir_file",
    "classify",
    "ExtractedLoop",
    "LoopContext",
]

_MAX_REGISTERS = 255  # architectural per-thread limit, when the machine sets none
_WRITES = {
    "ttng.tc_gen5_mma": 2,
    "ttng.tc_gen5_mma_scaled": 2,
    "ttng.tmem_store": 1,
    "ttg.local_store": 1,
    "ttng.tmem_copy": 1,
}
_LOOPS = ("scf.for", "scf.while")


@dataclass(frozen=True)
class LoopContext:
    """An enclosing loop of a scheduled loop: its body outside the inner loop(s), not
    scheduled, with its cost stated (SM clocks of one pass, its ops one after another)."""

    line: int
    ops: int
    cycles: int

    def to_dict(self) -> dict[str, Any]:
        return {"line": self.line, "ops": self.ops, "cycles": self.cycles}


@dataclass(frozen=True)
class ExtractedLoop:
    """One loop of a kernel as a scheduling problem.

    Attributes
    ----------
    line
        Kernel source line of the loop (its TTGIR line when the location is unknown).
    graph
        The loop body's dependence graph (normalised unless asked otherwise).
    ops, reductions
        Instructions of the body, and how many of them are ``tt.reduce``/``tt.scan``.
    cycles
        SM clocks of one iteration with its instructions one after another (before
        normalisation): the cost used to pick the costliest loop.
    scale
        Normalised cost units per SM clock (1.0 without normalisation).
    context
        Enclosing loops, innermost first.
    notes
        Modelling choices made for this loop (``scf.if`` predicated, branch dropped).
    calls
        Kernel lines of the calls through which the loop was inlined (innermost first): a
        helper function called twice gives two loops at one ``line``.
    num_warps
        The kernel's ``num_warps`` (``ttg.num-warps``): the CTA's warps, over which a loop
        without warp specialisation runs every operation.
    accounting
        Every op of the body: (TTGIR line, op name, ``"instruction"`` or the fold reason, or
        ``"other branch"`` for a dropped ``scf.if`` branch).
    """

    line: int
    ttgir_line: int
    graph: DependenceGraph
    ops: int
    reductions: int
    cycles: int
    scale: float = 1.0
    context: tuple[LoopContext, ...] = ()
    notes: tuple[str, ...] = ()
    accounting: tuple[tuple[int, str, str], ...] = field(default=(), repr=False)
    calls: tuple[int, ...] = ()
    num_warps: int | None = None

    def to_dict(self) -> dict[str, Any]:
        return {
            "line": self.line,
            "ops": self.ops,
            "reductions": self.reductions,
            "cycles": self.cycles,
            "context": [c.to_dict() for c in self.context],
            "notes": list(self.notes),
            "calls": list(self.calls),
        }


@dataclass
class _Node:
    name: str
    op: TtgirOp
    unit: str
    cycles: int
    preds: list[tuple[str, int]] = field(default_factory=list)  # (source node, distance)


def _walk_loops(
    ops: list[TtgirOp], outer: tuple[TtgirOp, ...], out: list[tuple[TtgirOp, tuple[TtgirOp, ...]]]
) -> bool:
    """Append every innermost loop of ``ops`` with its enclosing loops (innermost first);
    returns whether ``ops`` holds a loop."""
    found = False
    for op in ops:
        if op.name in _LOOPS:
            found = True
            inner = False
            for region in op.regions:
                inner |= _walk_loops(region, (op, *outer), out)
            if not inner:
                out.append((op, outer))
        else:
            for region in op.regions:
                found |= _walk_loops(region, outer, out)
    return found


def _unmapped(op: TtgirOp, module: TtgirModule) -> InvalidProblemError:
    return InvalidProblemError(
        f"operation {op.name} at {module.source_line(op.loc)} (TTGIR line {op.line}) has no "
        "functional-unit mapping (see docs/triton.md for the operations Twill models)",
        source=module.source,
    )


def _cost(ops: list[TtgirOp], module: TtgirModule, rates: Rates, *, strict: bool) -> int:
    """SM clocks of ``ops`` one after another (an ``scf.if``: its longer branch; a loop: 0,
    it is its own problem). ``strict``: an unknown op is an error, else it counts 0."""
    total = 0
    for op in ops:
        if op.name in _LOOPS:
            continue
        if op.name == "scf.if":
            total += max((_cost(r, module, rates, strict=strict) for r in op.regions), default=0)
            continue
        unit = classify(op) if op.name != "^bb" else None
        if unit == "?":
            if strict:
                raise _unmapped(op, module)
            continue
        if unit is not None:
            total += op_cycles(op, unit, rates, module)
    return total


def _count_instructions(ops: list[TtgirOp]) -> int:
    n = 0
    for op in ops:
        if op.name == "scf.if":
            n += max((_count_instructions(r) for r in op.regions), default=0)
        elif op.name not in _LOOPS and op.name != "^bb" and classify(op) not in (None, "?"):
            n += 1
    return n


def _node_name(op: TtgirOp, unit: str, module: TtgirModule, used: set[str]) -> str:
    """``UNIT_var`` from the Triton variable name of the op's location (unique)."""
    var = module.loc_name(op.loc)
    if var is None:
        var = op.results[0].lstrip("%").split("#")[0] if op.results else op.name.split(".")[-1]
    base = f"{unit}_{var}"
    name, k = base, 1
    while name in used:
        k += 1
        name = f"{base}_{k}"
    used.add(name)
    return name


def _written(op: TtgirOp) -> list[str]:
    """Buffers ``op`` writes in place."""
    if op.name == "ttng.async_tma_copy_global_to_local":
        m = re.search(r"\]\s+(%[\w$.-]+)", op.text)
        return [m.group(1)] if m else []
    idx = _WRITES.get(op.name)
    return [op.operands[idx]] if idx is not None and idx < len(op.operands) else []


class _Builder:
    """One pass over the loop body in program order."""

    def __init__(self, module: TtgirModule, loop: TtgirOp, rates: Rates) -> None:
        self.module, self.loop, self.rates = module, loop, rates
        self.sources: dict[str, list[tuple[str, int]]] = {}
        self.iter_index = {arg: k for k, (arg, _) in enumerate(loop.iter_args)}
        self.writer: dict[str, str] = {}
        self.alias: dict[str, str] = {}  # view -> the buffer it shows
        self.late_reads: list[tuple[str, str]] = []
        self.nodes: dict[str, _Node] = {}
        self.used: set[str] = set()
        self.yielded: list[str] = []
        self.condition: list[str] = []  # scf.while: values passed to the "do" region
        self.predicates: list[list[tuple[str, int]]] = []  # sources of enclosing scf.if
        self.notes: list[str] = []
        self.accounting: list[tuple[int, str, str]] = []
        self.rows: dict[str, int] = {}  # instruction -> its row of the accounting

    def _buffer(self, value: str) -> str:
        while value in self.alias:
            value = self.alias[value]
        return value

    def _src(self, value: str, reader: str | None) -> list[tuple[str, int]]:
        value = self._buffer(value)
        if value in self.writer:
            return [(self.writer[value], 0)]
        if value in self.sources:
            return self.sources[value]
        if value in self.iter_index:
            return [(f"@iter{self.iter_index[value]}", 0)]
        if reader is not None:
            self.late_reads.append((value, reader))
        return []

    def run(self) -> None:
        """Visit the loop's regions (``scf.while``: the condition region, then the body)."""
        for k, region in enumerate(self.loop.regions):
            last = len(region) - 1
            for i, op in enumerate(region):
                if op.name == "^bb" and self.loop.name == "scf.while" and k == 1:
                    for arg, value in zip(op.results, self.condition[1:], strict=False):
                        self.sources[arg] = self._src(value, None)
                    continue
                if op.name == "scf.yield" and i == last:
                    self.yielded = list(op.operands)
                elif op.name == "scf.condition":
                    self.condition = list(op.operands)
                if op.name != "^bb":
                    self.visit(op)

    def visit(self, op: TtgirOp) -> None:
        if op.name == "scf.if":
            self._visit_if(op)
            return
        unit = classify(op)
        if unit == "?":
            raise _unmapped(op, self.module)
        if unit is None:
            self.accounting.append((op.line, op.name, fold_reason(op) or "folded"))
            self._fold(op)
            return
        self.accounting.append((op.line, op.name, "instruction"))
        cycles = op_cycles(op, unit, self.rates, self.module)
        node = _Node(_node_name(op, unit, self.module, self.used), op, unit, cycles)
        self.rows[node.name] = len(self.accounting) - 1
        for v in op.operands:
            node.preds += self._src(v, node.name)
        for srcs in self.predicates:
            node.preds += srcs
        self.nodes[node.name] = node
        for r in op.results:
            self.sources[r] = [(node.name, 0)]
        for buf in _written(op):
            self.writer[self._buffer(buf)] = node.name

    def _fold(self, op: TtgirOp) -> None:
        if op.name in _VIEWS and op.operands and op.results:
            self.alias[op.results[0]] = self._buffer(op.operands[0])
            return
        if op.name == "ttng.warp_group_dot_wait":  # result k is operand k, completed
            for r, v in zip(op.results, op.operands, strict=False):
                self.sources[r] = self._src(v, None)
            return
        srcs = [s for v in op.operands for s in self._src(v, None)]
        for r in op.results:
            self.sources[r] = srcs

    def _visit_if(self, op: TtgirOp) -> None:
        """Predicated ``scf.if``: the costlier branch runs, after its condition."""
        costs = [_cost(r, self.module, self.rates, strict=True) for r in op.regions]
        k = max(range(len(costs)), key=lambda i: (costs[i], -i)) if costs else 0
        where = self.module.line_number(op)
        self.accounting.append((op.line, op.name, "control flow and terminators"))
        for i, region in enumerate(op.regions):
            if i != k:
                self.accounting += [(o.line, o.name, "other branch") for o in _flat(region)]
        branch = op.regions[k] if op.regions else []
        self.predicates.append(self._src(op.operands[0], None) if op.operands else [])
        for inner in branch:
            if inner.name == "scf.yield":
                self.accounting.append((inner.line, inner.name, "control flow and terminators"))
                for r, v in zip(op.results, inner.operands, strict=False):
                    self.sources[r] = self._src(v, None)
            elif inner.name != "^bb":
                self.visit(inner)
        self.predicates.pop()
        names = ("then", "else")
        other = (
            f", the {names[1 - k]} branch ({costs[1 - k]} clk) dropped" if len(costs) > 1 else ""
        )
        self.notes.append(
            f"scf.if at line {where}: predicated, the {names[k]} branch "
            f"({costs[k] if costs else 0} clk) always runs{other}"
        )

    def edges(self) -> list[tuple[str, str, int]]:
        out: set[tuple[str, str, int]] = set()
        for node in self.nodes.values():
            for src, dist in node.preds:
                for s, d in self._expand(src, dist, 0):
                    out.add((s, node.name, d))
        for value, reader in self.late_reads:
            value = self._buffer(value)
            if value in self.writer:
                out.add((self.writer[value], reader, 1))
        order = {n: i for i, n in enumerate(self.nodes)}
        return sorted(out, key=lambda e: (order[e[0]], order[e[1]], e[2]))

    def _expand(self, src: str, dist: int, depth: int) -> list[tuple[str, int]]:
        if not src.startswith("@iter"):
            return [(src, dist)]
        if depth > len(self.iter_index):
            return []
        k = int(src[5:])
        value = self.yielded[k] if k < len(self.yielded) else None
        if value is None:
            return []
        return [
            x for s, d in self._src(value, None) for x in self._expand(s, d + dist + 1, depth + 1)
        ]


def _flat(ops: list[TtgirOp]) -> list[TtgirOp]:
    out = []
    for op in ops:
        out.append(op)
        for r in op.regions:
            out += _flat(r)
    return out


def _result_shape(op: TtgirOp) -> tuple[str, re.Match[str] | None]:
    rtype = result_type(op) if op.results else ""
    if op.name == "tt.load":  # the result is printed as its pointer type: use the pointee
        rtype = re.sub(r"!tt\.ptr<([A-Za-z][A-Za-z0-9]*)>", r"\1", rtype)
    return rtype, SHAPE.search(rtype)


def _tile_words(op: TtgirOp) -> int:
    """32-bit words of ``op``'s register tile (0 when its result is not a register tensor)."""
    rtype, m = _result_shape(op)
    if not m or "tensor<" not in rtype[: m.end()]:
        return 0
    elems = math.prod(int(d) for d in m.group(1).rstrip("x").split("x"))
    return elems * max(element_bits(m.group(2)), 32) // 32


def _instruction(
    node: _Node, streaming: bool, rates: Rates, register_limit: int, spread: int = 0
) -> Instruction:
    op, unit = node.op, node.unit
    regs, footprint, warps, spill = 0, {}, 1, 0
    rtype, m = _result_shape(op)
    if m and "tensor<" in rtype[: m.end()]:
        elems = math.prod(int(d) for d in m.group(1).rstrip("x").split("x"))
        bits = element_bits(m.group(2))
        regs, warps = placement(_tile_words(op), register_limit, spread)
        spill = round(rates.spill_base + rates.spill_per_kib * elems * bits / 8 / 1024)
    elif m:
        mem = "tmem" if "tensor_memory" in rtype else "smem"
        elems = math.prod(int(d) for d in m.group(1).rstrip("x").split("x"))
        footprint = {mem: elems * element_bits(m.group(2)) // 8}
    return Instruction(
        node.name,
        node.cycles,
        {unit: (1,) * node.cycles},
        regs=regs,
        footprint=footprint,
        variable_latency=unit == "TMA",
        streaming=streaming,
        spill_cost=spill,
        warps=warps,
        unit=unit,
        note=f"{op.name} ({node.cycles} clk)",
    )


def _loop_graph(builder: _Builder, arch: str, name: str) -> DependenceGraph:
    """The loop's graph in SM clocks; a loop without tensor-core work is laid out and
    streamed as Triton runs it (:mod:`twill.triton.stream`)."""
    edges = builder.edges()
    has_in = {dst for _, dst, _ in edges}
    machine = machine_for(arch)
    limit = machine.registers_per_warp or _MAX_REGISTERS
    plain = not any(n.unit == "TC" for n in builder.nodes.values())
    spread = spread_warps(builder.module.num_warps, machine.warps) if plain else 0
    ins = []
    for node in builder.nodes.values():
        streaming = node.unit == "TMA" and node.name not in has_in
        ins.append(_instruction(node, streaming, RATES[arch], limit, spread))
    by_name = {i.name: i for i in ins}
    graph_edges = tuple(
        Edge(
            s,
            d,
            0 if by_name[s].streaming else by_name[s].cycles,
            dist,
            blocking=by_name[s].unit == "TC" and by_name[d].unit == "TMEM",
        )
        for s, d, dist in edges
    )
    graph = DependenceGraph(name, tuple(ins), graph_edges, machine)
    if not plain:
        return graph
    ops = {n: node.op for n, node in builder.nodes.items()}
    wide = {n for n, op in ops.items() if warp_groups(_tile_words(op), limit)[1] > 4}
    graph, into = stream_wide(graph, wide, ops)
    for n in into:  # the accounting says which ops were merged
        line, op_name, _ = builder.accounting[builder.rows[n]]
        builder.accounting[builder.rows[n]] = (line, op_name, STREAMED)
    return graph


def _context(outer: tuple[TtgirOp, ...], module: TtgirModule, rates: Rates) -> tuple:
    return tuple(
        LoopContext(
            module.line_number(o),
            sum(_count_instructions(r) for r in o.regions),
            sum(_cost(r, module, rates, strict=False) for r in o.regions),
        )
        for o in outer
    )


UNITS_PER_BOUND = 32
"""The most units a loop's lower bound on I (``mii``) spans after normalisation: about the
resolution of the shipped FlashAttention forward loops at ``U = 300`` (bound 20-28 units)."""


LARGE_LOOP_UNITS_PER_COST = 4
"""Budget per cost of a loop with more costs than ``U``: one unit each would flatten every
cost to one unit (the pool's sum is bounded by the budget); four keep the ratios (the
``tl.sort`` loop's bound on I: 1049 SM clocks at four, against 988 unnormalised and 2743 at
one)."""


_DEADLINE: contextvars.ContextVar[Deadline | float | None] = contextvars.ContextVar(
    "twill_normalisation_deadline", default=None
)


@contextmanager
def normalisation_deadline(deadline: Deadline | float | None) -> Iterator[None]:
    """Within this block, :func:`extract_loops` normalises costs by ``deadline`` (a
    :class:`~twill.deadline.Deadline` or its ``time.monotonic()`` end; ``None``: no limit)
    unless given one: a command's deadline
    reaches the reader without a parameter on every function between them."""
    token = _DEADLINE.set(deadline)
    try:
        yield
    finally:
        _DEADLINE.reset(token)


def normalise_loop(
    graph: DependenceGraph, U: int = 300, deadline: Deadline | float | None = None
) -> tuple[DependenceGraph, Any]:
    """The paper's §5.2 normalisation of one loop (``keep_positive``): budget ``U``, then, where the
    loop's lower bound on I (``mii``) spans more than :data:`UNITS_PER_BOUND` units, again
    with the budget scaled down to bring it to about that many (at least one unit per cost).
    A loop with more costs than ``U`` (a ``tl.sort`` in the loop: 112 ops, 436 costs) gets
    :data:`LARGE_LOOP_UNITS_PER_COST` units per cost instead, once.

    Why: each loop is normalised on its own. Costs with exact ratios get a coarse scale from
    the ZLP's tie-break, but a loop of a few large operations with no common divisor (a copy
    loop: a load, one element-wise op, a store, and their hand-off costs) fills the budget:
    a unit of 2-3 SM clocks, I above 100, and Algorithm 1 examines every I between the
    modulo minimum and the joint one (45 of them, 124-513 s, on the corpus's early-return
    copy loop on B200) at a resolution no other loop has. Returns the graph and the report
    of the normalisation kept.
    """
    from twill.sched.bounds import mii
    from twill.sched.normalize import graph_costs, normalize_graph

    clock = Deadline.of(deadline)  # each normalisation within the command's deadline
    n_costs = len(graph_costs(graph)[0])
    if n_costs > U:  # keep_positive needs a unit per cost; four leave room for their ratios
        return normalize_graph(graph, LARGE_LOOP_UNITS_PER_COST * n_costs, keep_positive=True,
                               deadline=clock)  # fmt: skip
    normed, report = normalize_graph(graph, U, keep_positive=True, deadline=clock)
    bound = mii(normed)
    if bound > UNITS_PER_BOUND:
        budget = math.ceil(sum(report.solution.scaled) * UNITS_PER_BOUND / bound)
        budget = max(len(report.solution.costs), budget)
        if budget < U:
            normed, report = normalize_graph(graph, budget, keep_positive=True, deadline=clock)
    return normed, report


_WARP_SPECIALIZE = re.compile(r"^\s*(?:%[^=]+=\s*)?ttg\.warp_specialize\(", re.M)


def _refuse_warp_specialized(text: str, source: str) -> None:
    """A TTGIR that Triton has warp-specialised (a saved one compiled with
    ``tl.range(..., warp_specialize=True)``: each partition holds its own copy of the loop,
    with values passed in as region arguments) is not a loop Twill reads: refused with the
    line (it was read as one partition's loop, or failed as malformed TTGIR)."""
    found = _WARP_SPECIALIZE.search(text)
    if found is not None:
        line = text.count("\n", 0, found.start()) + 1
        raise InvalidProblemError(
            f"line {line}: ttg.warp_specialize: this TTGIR was compiled with Triton's warp "
            "specialisation, which splits each loop into partitions; Twill reads the loop "
            "before it: give the kernel as FILE.py:KERNEL (compiled with it off), or a TTGIR "
            "compiled without warp_specialize (docs/triton.md, Limitations)",
            source=source,
        )


def extract_loops(
    text: str,
    arch: str,
    *,
    source: str = "<ttgir>",
    name: str | None = None,
    normalize: bool = True,
    U: int = 300,
    deadline: Deadline | float | None = None,
) -> tuple[ExtractedLoop, ...]:
    """Every innermost loop of TTGIR ``text`` for ``arch``, in program order.

    Parameters
    ----------
    text
        TTGIR as printed by Triton (``compiled.asm["ttgir"]``).
    arch
        ``"sm_90a"`` (H100) or ``"sm_100a"`` (B200).
    source
        File name for error messages.
    name
        Graph name (default: the kernel's function name; ``NAME@LINE`` for a kernel with
        several loops).
    normalize
        Apply the paper's §5.2 cost normalisation (``U``) to each loop; ``False`` keeps SM clocks.
    deadline
        ``time.monotonic()`` by which the normalisation must end (a command's deadline, which
        starts when the command does): each ZLP gets the time left, and one out of time keeps
        a proportional rounding (status FEASIBLE) instead.

    Raises
    ------
    InvalidProblemError
        Unknown arch, no loop, or an operation with no unit mapping (named with its source
        line).
    InputFormatError
        Malformed TTGIR (named with its line).
    """
    if arch not in RATES:
        raise InvalidProblemError(f"unknown --arch {arch!r}; expected one of {', '.join(RATES)}")
    _refuse_warp_specialized(text, source)
    module = parse_ttgir(text, source)
    found: list[tuple[TtgirOp, tuple[TtgirOp, ...]]] = []
    _walk_loops(module.ops, (), found)
    if not found:
        raise InvalidProblemError(
            f"kernel {module.function!r} has no scf.for or scf.while loop to pipeline",
            source=module.source,
        )
    base = name or module.function
    out = []
    spins = []
    for loop, outer in found:
        builder = _Builder(module, loop, RATES[arch])
        builder.run()
        if _spin_wait(builder):
            spins.append(str(module.line_number(loop)))
            continue
        line, calls = module.line_number(loop), module.call_lines(loop)
        at = f"{line}" + "".join(f"<{c}" for c in calls)  # one name per call of a helper
        graph = _loop_graph(builder, arch, base if len(found) == 1 else f"{base}@{at}")
        cycles = sum(i.cycles for i in graph.instructions)
        scale = 1.0
        if normalize and graph.instructions:
            graph, report = normalise_loop(graph, U, deadline or _DEADLINE.get())
            scale = sum(report.solution.scaled) / max(1, sum(report.solution.costs))
        reductions = sum(1 for n in builder.nodes.values() if n.op.name in ("tt.reduce", "tt.scan"))
        out.append(
            ExtractedLoop(
                line,
                loop.line,
                graph,
                len(graph.instructions),
                reductions,
                cycles,
                scale,
                _context(outer, module, RATES[arch]),
                tuple(builder.notes),
                tuple(builder.accounting),
                calls,
                module.num_warps,
            )
        )
    if not out:
        raise InvalidProblemError(
            f"kernel {module.function!r}: its only loop(s) (line {', '.join(spins)}) wait on a "
            "lock (spin-wait: an atomic on one address and nothing else), not a loop to "
            "pipeline; the kernel's work outside loops is not scheduled (docs/triton.md, "
            "Limitations)",
            source=module.source,
        )
    return tuple(out)


def _spin_wait(builder: _Builder) -> bool:
    """A loop whose only instructions are atomics on a single address (a lock)."""
    from twill.triton.costs import global_bytes

    nodes = list(builder.nodes.values())
    return bool(nodes) and all(
        n.op.name in ("tt.atomic_cas", "tt.atomic_rmw") and global_bytes(n.op) <= 8 for n in nodes
    )


def pick_loop(loops: tuple[ExtractedLoop, ...], line: int | None, source: str) -> ExtractedLoop:
    """The loop at kernel source ``line`` (a loop in a helper called several times: the line
    of the call), else the costliest. A TTGIR line is not a source line and is refused (it
    picked an unrelated loop whenever the two numberings met); errors list the valid lines."""
    if line is None:
        return max(loops, key=lambda lp: lp.cycles)  # first of equals: max keeps the first
    hits = [lp for lp in loops if lp.line == line] or [
        lp
        for lp in loops
        if lp.calls[:1] == (line,)  # the line of a helper's call
    ]
    if len(hits) > 1:  # one helper inlined at several calls
        where = [str(lp.calls[0] if lp.calls else lp.ttgir_line) for lp in hits]
        raise InvalidProblemError(
            f"--loop {line}: {len(hits)} loops at that line (a function called "
            f"{len(hits)} times); give the line of its call instead: {' or '.join(where)}",
            source=source,
        )
    if hits:
        return hits[0]
    valid = sorted({lp.calls[0] if lp.calls else lp.line for lp in loops})
    ttgir = " (that is a TTGIR line; --loop takes the kernel's source line)" if any(
        lp.ttgir_line == line and lp.ttgir_line != lp.line for lp in loops
    ) else ""  # fmt: skip
    raise InvalidProblemError(
        f"--loop {line}: no loop at that source line{ttgir}; the loops are at source "
        f"line(s) {', '.join(map(str, valid))}",
        source=source,
    )


def extract_graph(
    text: str, arch: str, *, loop: int | None = None, **options: Any
) -> DependenceGraph:
    """Dependence graph of one loop of TTGIR ``text`` for ``arch``: the loop at source line
    ``loop``, else the costliest (:func:`extract_loops` with ``options``, :func:`pick_loop`).

    Raises
    ------
    InvalidProblemError
        As :func:`extract_loops`, or no loop at ``loop``.
    """
    loops = extract_loops(text, arch, **options)
    return pick_loop(loops, loop, options.get("source", "<ttgir>")).graph


def read_ttgir_file(path: str | Path) -> str:
    """The text of a ``.ttgir`` file (size limit and UTF-8 checked before parsing)."""
    from twill.text import read_text_file

    return read_text_file(path)


_TARGETS = {"90": "sm_90a", "100": "sm_100a"}


def arch_of_ttgir(text: str) -> str | None:
    """``sm_90a``/``sm_100a`` from the module's ``ttg.target`` (``None`` if neither)."""
    m = re.search(r'ttg\.target\s*=\s*"cuda:(\d+)"', text)
    return _TARGETS.get(m.group(1) if m else "")


def ttgir_arch(text: str, arch: str | None, source: str) -> str:
    """The architecture a saved TTGIR is read for: its own ``ttg.target``, which ``arch`` (the
    command line's ``--arch``) may repeat but not contradict. Triton compiled the file's
    operations for that target (``warp_group_dot`` on Hopper, ``tc_gen5_mma`` on Blackwell), so
    pricing them with another machine's rates would be a wrong answer, not a what-if."""
    m = re.search(r'ttg\.target\s*=\s*"cuda:(\d+)"', text)
    target = _TARGETS.get(m.group(1)) if m else None
    if m and target is None:
        raise InvalidProblemError(
            f"compiled for cuda:{m.group(1)} (its ttg.target); Twill models sm_90a (cuda:90) "
            "and sm_100a (cuda:100)",
            source=source,
        )
    if arch is None and target is None:
        raise InvalidProblemError(
            "the TTGIR names no ttg.target; give --arch sm_90a or sm_100a", source=source
        )
    if arch is not None and target is not None and arch != target:
        raise InvalidProblemError(
            f"compiled for {target} (its ttg.target is cuda:{m.group(1) if m else ''}), "
            f"not for --arch {arch}; leave --arch out or recompile the kernel for {arch}",
            source=source,
        )
    return target or str(arch)


def extract_ttgir_file(
    path: str | Path, arch: str | None = None, **options: Any
) -> DependenceGraph:
    """:func:`extract_graph` of a saved ``.ttgir`` file (``arch`` defaults to its target)."""
    text = read_ttgir_file(path)
    return extract_graph(text, ttgir_arch(text, arch, str(path)), source=str(path), **options)
