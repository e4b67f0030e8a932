"""What each TTGIR operation costs: its unit and SM clocks (Triton front end, docs/triton.md).

Every operation of a loop body is either an instruction on one unit, with a cost in SM clocks
from its tensor shapes and the per-SM rates of :mod:`twill.sched.machines`, or **folded**
(no time, no unit: its users depend on what it depends on), for one of the reasons in
:data:`FOLD_REASONS`. Anything else is an error naming the operation.

Reductions (``tt.reduce``) follow Triton's lowering of the op (ReduceOpToLLVM: combine within
each thread, then a butterfly of ``shfl.sync`` across the lanes that share the reduced axis,
then through shared memory across the warps that share it); ``tt.scan`` the same, with the
partial results added back to every element. The lanes and warps along the axis are read from
the operand's layout (``#ttg.blocked``, ``#ttg.nvidia_mma``, ``#ttg.linear``); an unknown
layout counts all 32 lanes and every warp (the most a reduction can cross).
"""

from __future__ import annotations

import math
import re

from twill.sched.machines import Rates
from twill.triton.ttgir import SHAPE, TtgirModule, TtgirOp, element_bits

__all__ = [
    "FOLD_REASONS",
    "STREAMED",
    "VIEWS",
    "classify",
    "fold_reason",
    "op_cycles",
    "global_bytes",
]

#: Views of a buffer: their result aliases the buffer itself (a write to either is seen by
#: readers of both, whichever was created first).
VIEWS = frozenset(
    {
        "ttg.memdesc_trans",
        "ttg.memdesc_index",
        "ttg.memdesc_subslice",
        "ttg.memdesc_reshape",
        "ttng.tmem_subslice",
        "ttg.memdesc_reinterpret",
    }
)

#: The accounting of an element-wise op merged into the streamed instruction of its chain
#: (:mod:`twill.triton.stream`): its cost is in that instruction, not dropped.
STREAMED = "streamed: merged into the element-wise instruction of its chain (a wide tile)"

#: Every reason an operation may be folded, with the operations it covers (documented in
#: docs/triton.md; a test checks that each op of a loop body is an instruction or one of these).
FOLD_REASONS: dict[str, frozenset[str]] = {
    "view or register rearrangement (no data moves)": frozenset(
        {
            "tt.splat",
            "tt.broadcast",
            "tt.expand_dims",
            "tt.trans",
            "tt.reshape",
            "tt.join",
            "tt.split",
            "tt.cat",
            "tt.bitcast",
        }
        | VIEWS
    ),
    "index, address or descriptor computation": frozenset(
        {
            "tt.make_range",
            "tt.addptr",
            "arith.constant",
            "tt.get_program_id",
            "tt.get_num_programs",
            "tt.make_tensor_descriptor",
            "tt.make_tensor_ptr",
            "tt.advance",
            "tt.int_to_ptr",
            "tt.ptr_to_int",
        }
    ),
    "synchronisation (completes another op)": frozenset(
        {
            "ttng.init_barrier",
            "ttng.inval_barrier",
            "ttng.barrier_expect",
            "ttng.wait_barrier",
            "ttng.fence_async_shared",
            "ttng.warp_group_dot_wait",
            "ttng.async_tma_store_wait",
            "ttng.tc_gen5_commit",
            "ttg.async_wait",
            "ttg.async_commit_group",
            "gpu.barrier",
            "ttng.arrive_barrier",
        }
    ),
    "control flow and terminators": frozenset(
        {
            "scf.yield",
            "scf.condition",
            "tt.reduce.return",
            "tt.scan.return",
            "tt.return",
            "cf.br",
            "cf.cond_br",
        }
    ),
    "buffer allocation without data": frozenset({"ttg.local_alloc", "ttng.tmem_alloc"}),
    "compiler hint (no code)": frozenset({"llvm.intr.assume"}),
    "scalar or integer arithmetic (index and mask computation)": frozenset(),
    STREAMED: frozenset(),
}
_FOLDED = frozenset().union(*FOLD_REASONS.values())

_TMA = {
    "ttng.async_tma_copy_global_to_local",
    "ttng.async_tma_copy_local_to_global",
    "tt.descriptor_load",
    "tt.descriptor_store",
    "tt.descriptor_gather",
    "tt.descriptor_scatter",
    "ttng.async_tma_gather",
    "ttng.async_tma_scatter",
    "tt.descriptor_reduce",
    "ttng.async_tma_reduce",
}
_GLOBAL = {
    "tt.load",
    "tt.store",
    "tt.atomic_rmw",
    "tt.atomic_cas",
    "ttg.async_copy_global_to_local",
}
_ATOMIC = {"tt.atomic_rmw", "tt.atomic_cas"}
_TC = {
    "ttng.warp_group_dot",
    "ttng.tc_gen5_mma",
    "tt.dot",
    "tt.dot_scaled",
    "ttng.tc_gen5_mma_scaled",
}
_MUFU = {
    "math.exp2",
    "math.exp",
    "math.log2",
    "math.log",
    "math.rsqrt",
    "math.sqrt",
    "math.sin",
    "math.cos",
    "math.tanh",
    "tt.precise_sqrt",
    "tt.extern_elementwise",
    "math.erf",
}
_SLOW_FP = {
    "arith.maxnumf",
    "arith.minnumf",
    "arith.maximumf",
    "arith.minimumf",
    "arith.truncf",
    "arith.extf",
    "arith.select",
    "arith.cmpf",
    "arith.sitofp",
    "arith.fptosi",
    "arith.uitofp",
    "arith.fptoui",
    "tt.fp_to_fp",
    "tt.clampf",
    "math.absf",
    "math.floor",
    "math.ceil",
}
#: ``tt.gather`` (``tl.gather``, a gather of a register tensor along one axis) is lowered
#: through shared memory, like ``convert_layout`` (Triton's GatherOpToLLVM; where the axis
#: stays within a warp it uses shuffles instead, so the shared-memory pass is an upper bound)
_SMEM = {"ttg.local_load", "ttg.local_store", "ttg.convert_layout", "tt.gather"}
_TMEM = {"ttng.tmem_load", "ttng.tmem_store", "ttng.tmem_copy"}
_REDUCE = {"tt.reduce", "tt.scan"}
_FP_ELEMENTWISE = {
    "tt.fp_to_fp",
    "tt.clampf",
    "math.fma",
    "math.absf",
    "math.floor",
    "math.ceil",
    "tt.precise_divf",
    "tt.mulhiui",
}
_PTR_TENSOR = re.compile(r"tensor<((?:\d+x)+)!tt\.ptr<([A-Za-z][A-Za-z0-9]*)>")
_PTR_BLOCK = re.compile(r"!tt\.ptr<tensor<((?:\d+x)+)([A-Za-z][A-Za-z0-9]*)")
_PTR_SCALAR = re.compile(r"!tt\.ptr<([A-Za-z][A-Za-z0-9]*)>")


def shapes(op: TtgirOp) -> list[tuple[list[int], int]]:
    """(dimensions, element bits) of every tensor/memdesc type on the op's lines, in order."""
    return [
        ([int(d) for d in dims.rstrip("x").split("x")], element_bits(elem))
        for dims, elem in SHAPE.findall(op.type_text)
    ]


def result_type(op: TtgirOp) -> str:
    """The text of the op's result type (after ``->``, else the last type after the last
    ``:``: ``arith.select`` prints its condition's type first, ``tensor<..xi1>, tensor<..xf32>``,
    and its result is the float tensor, not a mask)."""
    head = op.type_text.rsplit(" loc(", 1)[0]
    if "->" in head:
        return head.rsplit("->", 1)[1]
    types, depth, cut = head.rsplit(" : ", 1)[-1], 0, 0
    for k, ch in enumerate(types):
        depth += (ch == "<") - (ch == ">")
        if ch == "," and depth == 0:
            cut = k + 1
    return types[cut:].strip()


def fold_reason(op: TtgirOp) -> str | None:
    """Why ``op`` is folded (a key of :data:`FOLD_REASONS`), or ``None`` if it is not."""
    name = op.name
    if name in ("ttg.local_alloc", "ttng.tmem_alloc") and op.operands:
        return None  # a buffer filled from registers: data moves
    for reason, names in FOLD_REASONS.items():
        if name in names:
            return reason
    if name.startswith(("arith.", "math.")) or name in _FP_ELEMENTWISE:
        rtype = result_type(op)
        if "tensor<" not in rtype or re.search(r"tensor<[0-9x]*(?:i\d+|!tt\.ptr)", rtype):
            return "scalar or integer arithmetic (index and mask computation)"
    return None


def classify(op: TtgirOp) -> str | None:
    """The unit of ``op`` (``None``: folded away), or ``"?"`` when it has no mapping."""
    name = op.name
    if fold_reason(op) is not None:
        return None
    if name in ("ttg.local_alloc", "ttng.tmem_alloc"):
        return "SMEM" if name == "ttg.local_alloc" else "TMEM"
    if name in _TMA or name in _GLOBAL:
        return "TMA"
    if name in _TC:
        return "TC"
    if name in _MUFU:
        return "EXP"
    if name in _SMEM:
        return "SMEM"
    if name in _TMEM:
        return "TMEM"
    if name in _REDUCE or name.startswith(("arith.", "math.")) or name in _FP_ELEMENTWISE:
        return "FMA"
    return "?"


def global_bytes(op: TtgirOp) -> int:
    """Bytes a pointer load, store or atomic moves: elements x the pointee's size (a tensor of
    pointers, a block pointer, or one scalar)."""
    text = op.type_text
    m = _PTR_TENSOR.search(text) or _PTR_BLOCK.search(text)
    if m:
        return math.prod(int(d) for d in m.group(1).rstrip("x").split("x")) * max(
            1, element_bits(m.group(2)) // 8
        )
    m = _PTR_SCALAR.search(text)
    return max(1, element_bits(m.group(1)) // 8) if m else 4


def _tc_rate(op: TtgirOp, rates: Rates) -> float:
    """FLOP/clk/SM of a tensor-core op from its operand element type."""
    found = shapes(op)
    operands = [found[0], found[2]] if op.name == "tt.dot_scaled" and len(found) >= 4 else found[:2]
    bits = min((b for _, b in operands), default=16)
    text = op.type_text
    if "f32" in text.split("->")[0] and bits == 32:
        return rates.tc_flops / 2  # TF32
    if bits <= 4 or "e2m1" in text:
        return rates.tc_flops * rates.fp4_speedup
    return rates.tc_flops * (2 if bits <= 8 else 1)


def _tc_cycles(op: TtgirOp, rates: Rates) -> int:
    dims = [d for d, _ in shapes(op)]
    if op.name == "tt.dot_scaled" and len(dims) >= 4:  # a, a's scales, b, b's scales
        dims = [dims[0], dims[2]]
    (m, k), (_, n) = dims[0][-2:], dims[1][-2:]
    if op.name in ("tt.dot_scaled", "ttng.tc_gen5_mma_scaled") and "e2m1" in op.text:
        k *= 2  # FP4 operands are packed two to a byte: K counts bytes in the type
    return max(1, round(2 * m * n * k / _tc_rate(op, rates)))


def op_cycles(op: TtgirOp, unit: str, rates: Rates, module: TtgirModule) -> int:
    """SM clocks of ``op`` on ``unit`` from its shapes and the per-SM rates (at least 1)."""
    if unit == "TC":
        return _tc_cycles(op, rates)
    if op.name in _REDUCE:
        return _reduce_cycles(op, rates, module)
    if op.name in _GLOBAL:
        nbytes = global_bytes(op) * (2 if op.name in _ATOMIC else 1)  # read-modify-write
        return max(1, round(nbytes / rates.gmem_bytes))
    found = shapes(op)
    elems, bits = max(((math.prod(d), b) for d, b in found), default=(1, 32))
    if unit == "EXP":
        return max(1, round(elems / rates.mufu))
    if unit == "FMA":
        fast = op.name not in _SLOW_FP
        return max(1, round(elems / (rates.fp32 if fast else rates.fp32_slow)))
    nbytes = elems * bits // 8
    if unit == "TMEM" and op.name != "ttng.tmem_copy":  # tmem_copy reads shared memory
        return max(1, round(nbytes / rates.tmem_bytes))
    return max(1, round(nbytes / rates.smem_bytes))


def _layout_span(layout: str, axis: int, rank: int, num_warps: int) -> tuple[int, int, bool]:
    """(lanes, warps) that share ``axis`` in a layout's text, and whether it was understood."""

    def listed(key: str) -> list[int] | None:
        m = re.search(key + r"\s*=\s*\[([0-9,\s]*)\]", layout)
        return [int(x) for x in m.group(1).split(",") if x.strip()] if m else None

    if "blocked<" in layout:
        tpw, wpc = listed("threadsPerWarp"), listed("warpsPerCTA")
        if tpw and wpc and axis < len(tpw):
            return tpw[axis], wpc[axis], True
    if "nvidia_mma<" in layout:  # accumulator fragment: 8 lanes down a column, 4 along a row
        wpc = listed("warpsPerCTA")
        if wpc and rank == 2 and axis < 2:
            return (8 if axis == 0 else 4), wpc[axis], True
    if "linear<" in layout:
        spans = []
        for key in ("lane", "warp"):
            m = re.search(key + r"\s*=\s*\[((?:\[[^\]]*\]\s*,?\s*)*)\]", layout)
            bases = re.findall(r"\[([^\]]*)\]", m.group(1)) if m else []
            vecs = [[int(x) for x in b.split(",") if x.strip()] for b in bases]
            spans.append(2 ** sum(1 for v in vecs if axis < len(v) and v[axis] != 0))
        if m is not None:
            return spans[0], spans[1], True
    return 32, num_warps, False


def _reduce_inputs(op: TtgirOp) -> list[tuple[list[int], int, str]]:
    """(dims, bits, layout alias) of each input tensor of a ``tt.reduce``/``tt.scan``."""
    head = op.tail.split("->")[0] if op.tail else op.text
    found = re.findall(r"tensor<((?:\d+x)+)([A-Za-z][A-Za-z0-9]*)(?:,\s*(#[\w.]+))?", head)
    return [
        ([int(d) for d in dims.rstrip("x").split("x")], element_bits(e), lay or "")
        for dims, e, lay in found
    ]


def _reduce_cycles(op: TtgirOp, rates: Rates, module: TtgirModule) -> int:
    """Triton's reduction (or scan): combine within threads, shuffle tree across lanes,
    shared memory across warps (see the module docstring)."""
    m = re.search(r"axis\s*=\s*(\d+)", op.text)
    axis = int(m.group(1)) if m else 0
    combiner = [
        o for r in op.regions for o in r if o.name not in ("^bb",) and "return" not in o.name
    ]
    slow = any(o.name in _SLOW_FP for o in combiner)
    rate = rates.fp32_slow if slow else rates.fp32
    k = max(1, len(combiner))
    total = 0.0
    for dims, bits, alias in _reduce_inputs(op) or [([1], 32, "")]:
        elems = math.prod(dims)
        length = dims[axis] if axis < len(dims) else 1
        lanes, warps, _ = _layout_span(
            module.aliases.get(alias, ""), axis, len(dims), module.num_warps
        )
        lanes = max(1, min(lanes, length))
        warps = max(1, min(warps, length // lanes or 1))
        outputs = elems // max(1, length)
        partials = outputs * lanes * warps  # one per thread and output after the thread's pass
        rounds = int(math.log2(lanes)) if lanes > 1 else 0
        total += elems * k / rate  # within each thread (scan: the thread-local prefix)
        total += rounds * partials * (1 / rates.shuffle + k / rate)  # butterfly across lanes
        if warps > 1:  # partials to shared memory and back, then combined
            total += 2 * outputs * warps * max(bits, 32) / 8 / rates.smem_bytes
            total += outputs * warps * k / rate
        if op.name == "tt.scan":
            total += elems * k / rate  # the lane and warp prefixes added to every element
    return max(1, math.ceil(total))
