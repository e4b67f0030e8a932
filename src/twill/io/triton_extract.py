"""Triton front end: TTGIR loop body -> :class:`~twill.sched.ir.DependenceGraph`.

The innermost ``scf.for`` of a kernel's TTGIR becomes the loop body Twill schedules:

* every operation of the body is an instruction, except **folded** ones (index and address
  arithmetic on scalars or integer tensors, ``splat``/``broadcast``/``expand_dims``/
  ``trans``/``memdesc_*`` views, buffer and barrier allocation, ``init/expect/wait/inval``
  barrier operations, fences, and ``warp_group_dot_wait``, which completes its dot). A folded
  operation takes no time and no unit: its users depend directly on whatever it depends on;
* edges: SSA def-use inside the iteration (distance 0); ``iter_args`` fed by ``scf.yield``
  (distance 1); writes into a buffer (TMA copy destination, MMA accumulator, ``tmem_store``)
  reach later readers in the same iteration (distance 0) and earlier readers in the next one
  (distance 1);
* units: TMA and global memory (``async_tma_copy_*``, ``tt.load``/``store``/``atomic_rmw``,
  variable latency), ``TC`` (``warp_group_dot``, ``tc_gen5_mma``), ``EXP`` (``math.exp2`` and
  other MUFU functions), ``FMA`` (floating-point element-wise ops, reductions, conversions),
  ``SMEM`` (``local_alloc`` of a register tensor, ``local_load``/``store``,
  ``convert_layout``) and ``TMEM`` (``tmem_load``/``store``/``alloc`` of a tensor);
* cycles from the tensor shapes and the per-SM rates of :mod:`twill.sched.machines`; the delay
  of an edge is its producer's cycles; streaming loads (no incoming data edge) have delay 0;
* then the paper's cost normalisation (§5.2, ``U = 300``).

Anything else (a nested ``scf.for``, ``scf.if``, an unknown operation) is an
:class:`~twill.errors.InvalidProblemError` naming the operation and its source line.
"""

from __future__ import annotations

import math
import re
from dataclasses import dataclass, field
from pathlib import Path

from twill.errors import InvalidProblemError
from twill.io.ttgir import TtgirModule, TtgirOp, parse_ttgir
from twill.sched.ir import DependenceGraph, Edge, Instruction
from twill.sched.machines import RATES, Rates, machine_for

__all__ = ["extract_graph", "extract_ttgir_file", "classify"]

_FOLD_EXACT = {
    "tt.splat", "tt.broadcast", "tt.expand_dims", "tt.trans", "tt.reshape", "tt.make_range",
    "tt.addptr", "arith.constant", "ttg.memdesc_trans", "ttg.memdesc_index",
    "ttg.memdesc_subslice", "ttg.memdesc_reshape", "ttng.init_barrier", "ttng.inval_barrier",
    "ttng.barrier_expect", "ttng.wait_barrier", "ttng.fence_async_shared",
    "ttng.warp_group_dot_wait", "ttng.async_tma_store_wait", "tt.reduce.return",
    "ttng.tmem_subslice",
}  # fmt: skip
_TMA = {
    "ttng.async_tma_copy_global_to_local", "ttng.async_tma_copy_local_to_global",
    "tt.descriptor_load", "tt.descriptor_store", "tt.load", "tt.store", "tt.atomic_rmw",
    "tt.atomic_cas",
}  # fmt: skip
_TC = {"ttng.warp_group_dot", "ttng.tc_gen5_mma", "tt.dot"}
_MUFU = {"math.exp2", "math.exp", "math.log2", "math.log", "math.rsqrt", "math.sqrt",
         "math.sin", "math.cos"}  # fmt: skip
_SLOW_FP = {"arith.maxnumf", "arith.minnumf", "arith.maximumf", "arith.minimumf", "arith.truncf",
            "arith.extf", "arith.select", "arith.cmpf", "arith.sitofp", "arith.fptosi"}  # fmt: skip
_SMEM = {"ttg.local_load", "ttg.local_store", "ttg.convert_layout"}
_TMEM = {"ttng.tmem_load", "ttng.tmem_store"}
_SHAPE = re.compile(r"(?:tensor|memdesc)<((?:\d+x)+)([a-z]+)(\d+)")
#: Views of a buffer: their result aliases the buffer itself (a write to either is seen by
#: readers of both, whichever was created first).
_VIEWS = {"ttg.memdesc_trans", "ttg.memdesc_index", "ttg.memdesc_subslice",
          "ttg.memdesc_reshape", "ttng.tmem_subslice"}  # fmt: skip
_GROUP_THREADS = 128  # one warp group: the unit a register tensor is placed on
_MAX_REGISTERS = 255  # architectural per-thread limit, when the machine sets none
_WRITES = {"ttng.tc_gen5_mma": 2, "ttng.tmem_store": 1, "ttg.local_store": 1}


def _shapes(op: TtgirOp) -> list[tuple[int, int]]:
    """(elements, bits) of every tensor/memdesc type on the op's line, in order."""
    out = []
    for dims, _, bits in _SHAPE.findall(op.text):
        out.append((math.prod(int(d) for d in dims.rstrip("x").split("x")), int(bits)))
    return out


def _dims(op: TtgirOp) -> list[list[int]]:
    return [[int(d) for d in dims.rstrip("x").split("x")] for dims, _, _ in _SHAPE.findall(op.text)]


def _result_type(op: TtgirOp) -> str:
    head = op.text.rsplit(" loc(", 1)[0]
    return head.rsplit("->", 1)[1] if "->" in head else head.rsplit(" : ", 1)[-1]


def classify(op: TtgirOp) -> str | None:
    """The unit of ``op`` (``None``: folded away), or ``"?"`` when it has no mapping."""
    name = op.name
    if name in _FOLD_EXACT or name == "scf.yield":
        return None
    if name in ("ttg.local_alloc", "ttng.tmem_alloc"):
        if not op.operands:
            return None  # buffer allocation: no traffic
        return "SMEM" if name == "ttg.local_alloc" else "TMEM"
    if name in _TMA:
        return "TMA"
    if name in _TC:
        return "TC"
    if name in _MUFU:
        return "EXP"
    if name in _SMEM:
        return "SMEM"
    if name in _TMEM:
        return "TMEM"
    if name.startswith("arith.") or name in ("tt.reduce", "tt.fp_to_fp", "math.fma"):
        rtype = _result_type(op)
        if "tensor<" not in rtype or re.search(r"tensor<[0-9x]*(?:i\d+|!tt\.ptr)", rtype):
            return None  # scalar or integer arithmetic: index/address computation
        return "FMA"
    return "?"


def _cycles(op: TtgirOp, unit: str, rates: Rates) -> int:
    """SM clocks of ``op`` on ``unit`` from its shapes (at least 1)."""
    shapes = _shapes(op)
    if unit == "TC":
        dims = _dims(op)
        (m, k), (_, n) = dims[0][-2:], dims[1][-2:]
        return max(1, round(2 * m * n * k / rates.tc_flops))
    elems, bits = max(shapes, default=(1, 32))
    if unit == "EXP":
        return max(1, round(elems / rates.mufu))
    if unit == "FMA":
        fast = op.name not in _SLOW_FP and op.name != "tt.reduce"
        return max(1, round(elems / (rates.fp32 if fast else rates.fp32_slow)))
    nbytes = elems * bits // 8
    if unit == "TMEM":
        return max(1, round(nbytes / rates.tmem_bytes))
    return max(1, round(nbytes / rates.smem_bytes))


@dataclass
class _Node:
    name: str
    op: TtgirOp
    unit: str
    cycles: int
    preds: list[tuple[str, int]] = field(default_factory=list)  # (source node, distance)


def _innermost_loop(module: TtgirModule) -> TtgirOp:
    """The one innermost ``scf.for`` (errors for none or for a loop inside the body)."""
    loops = [op for op in module.ops if op.name == "scf.for"]
    if not loops:
        raise InvalidProblemError(
            f"kernel {module.function!r} has no scf.for loop to pipeline", source=module.source
        )
    if len(loops) > 1:
        where = ", ".join(module.source_line(op.loc) for op in loops)
        raise InvalidProblemError(
            f"kernel {module.function!r} has {len(loops)} top-level loops ({where}); Twill "
            "schedules one singly nested loop",
            source=module.source,
        )
    loop = loops[0]
    for op in loop.body:
        if op.name in ("scf.for", "scf.while"):
            raise InvalidProblemError(
                f"nested loop {op.name} at {module.source_line(op.loc)} (TTGIR line {op.line}) "
                "inside the loop: Twill pipelines only singly nested loops without control flow",
                source=module.source,
            )
    return loop


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

    def visit(self, op: TtgirOp) -> None:
        if op.name == "scf.yield":
            self.yielded = list(op.operands)
            return
        unit = classify(op)
        if unit == "?":
            raise InvalidProblemError(
                f"operation {op.name} at {self.module.source_line(op.loc)} (TTGIR line "
                f"{op.line}) has no functional-unit mapping",
                source=self.module.source,
            )
        if unit is None:
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
            return
        node = _Node(
            _node_name(op, unit, self.module, self.used), op, unit, _cycles(op, unit, self.rates)
        )
        for v in op.operands:
            node.preds += self._src(v, node.name)
        self.nodes[node.name] = node
        for r in op.results:
            self.sources[r] = [(node.name, 0)]
        for buf in _written(op):
            self.writer[self._buffer(buf)] = node.name

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
        return sorted(
            out, key=lambda e: (list(self.nodes).index(e[0]), list(self.nodes).index(e[1]), e[2])
        )

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


def _warp_groups(words: int, register_limit: int) -> tuple[int, int]:
    """Per-thread registers and warps of a register tensor of ``words`` 32-bit words: it runs on
    one warp group (128 threads) unless that would need more than ``register_limit`` registers
    per thread; then on the fewest warp groups that hold it."""
    per_group = -(-words // _GROUP_THREADS)
    groups = max(1, -(-per_group // register_limit))
    return max(1, -(-words // (_GROUP_THREADS * groups))), 4 * groups


def _instruction(node: _Node, streaming: bool, rates: Rates, register_limit: int) -> Instruction:
    op, unit = node.op, node.unit
    rtype = _result_type(op) if op.results else ""
    regs, footprint, warps, spill = 0, {}, 1, 0
    m = _SHAPE.search(rtype)
    if m and "tensor<" in rtype[: m.end()]:
        elems = math.prod(int(d) for d in m.group(1).rstrip("x").split("x"))
        words = elems * max(int(m.group(3)), 32) // 32
        regs, warps = _warp_groups(words, register_limit)
        spill = round(rates.spill_base + rates.spill_per_kib * elems * int(m.group(3)) / 8 / 1024)
    elif m:
        mem = "tmem" if "tensor_memory" in rtype else "smem"
        elems = math.prod(int(d) for d in m.group(1).rstrip("x").split("x"))
        footprint = {mem: elems * int(m.group(3)) // 8}
    return Instruction(
        node.name, node.cycles, {unit: (1,) * node.cycles}, regs=regs, footprint=footprint,
        variable_latency=unit == "TMA", streaming=streaming, spill_cost=spill, warps=warps,
        unit=unit, note=f"{op.name} ({node.cycles} clk)",
    )  # fmt: skip


def extract_graph(
    text: str,
    arch: str,
    *,
    source: str = "<ttgir>",
    name: str | None = None,
    normalize: bool = True,
    U: int = 300,
) -> DependenceGraph:
    """Dependence graph of the innermost ``scf.for`` of TTGIR ``text`` for ``arch``.

    Parameters
    ----------
    text
        TTGIR as printed by Triton (``compiled.asm["ttgir"]``).
    arch
        ``"sm_90a"`` (H100) or ``"sm_100a"`` (B200).
    source
        File name for error messages.
    name
        Graph name (default: the kernel's function name).
    normalize
        Apply the §5.2 cost normalisation (``U``); ``False`` keeps SM clock cycles.

    Raises
    ------
    InvalidProblemError
        Unknown arch, no loop, nested loops, or an operation with no unit mapping (named with
        its source line).
    """
    if arch not in RATES:
        raise InvalidProblemError(f"unknown --arch {arch!r}; expected one of {', '.join(RATES)}")
    module = parse_ttgir(text, source)
    loop = _innermost_loop(module)
    builder = _Builder(module, loop, RATES[arch])
    for op in loop.body:
        builder.visit(op)
    edges = builder.edges()
    has_in = {dst for _, dst, _ in edges}
    limit = machine_for(arch).registers_per_warp or _MAX_REGISTERS
    ins = []
    for node in builder.nodes.values():
        streaming = node.unit == "TMA" and node.name not in has_in
        ins.append(_instruction(node, streaming, RATES[arch], limit))
    by_name = {i.name: i for i in ins}
    graph_edges = tuple(
        Edge(s, d, 0 if by_name[s].streaming else by_name[s].cycles, dist,
             blocking=by_name[s].unit == "TC" and by_name[d].unit == "TMEM")
        for s, d, dist in edges
    )  # fmt: skip
    graph = DependenceGraph(name or module.function, tuple(ins), graph_edges, machine_for(arch))
    if normalize:
        from twill.sched.normalize import normalize_graph

        graph, _ = normalize_graph(graph, U, keep_positive=True)
    return graph


def extract_ttgir_file(
    path: str | Path, arch: str | None = None, **options: object
) -> DependenceGraph:
    """:func:`extract_graph` of a saved ``.ttgir`` file (``arch`` defaults to its target)."""
    path = Path(path)
    text = path.read_text(encoding="utf-8")
    if arch is None:
        m = re.search(r'ttg\.target\s*=\s*"cuda:(\d+)"', text)
        arch = {"90": "sm_90a", "100": "sm_100a"}.get(m.group(1) if m else "", "")
    return extract_graph(text, arch, source=str(path), **options)  # type: ignore[arg-type]
