"""FlashAttention backward loop bodies for Hopper and Blackwell (Twill paper §6, Table 1).

The single-pass FA3 backward algorithm: a CTA owns one K/V block
(``Bc = 128`` keys, head dim ``d = 128``; K and V are loaded once, outside the loop) and iterates
over Q blocks of ``Br`` rows. One iteration has **five GEMMs, one exponential and an atomic
reduction**:

* ``S = Q K^T`` and ``dP = dO V^T`` (``Br x Bc``, inner dimension ``d``);
* ``P = exp(S * scale - LSE)`` (``Br * Bc`` exponentials);
* ``dS = P * (dP - D)`` (elementwise, FP32 pipes);
* ``dV += P^T dO`` and ``dK += dS^T Q`` (``Bc x d`` accumulators carried across iterations);
* ``dQ = dS K`` (``Br x d``), added to the global dQ with a TMA reduce-add (``cp.reduce.async
  .bulk``), a variable-latency operation issued from the producer warp (FA3's dQ writer).

The loads of Q (with LSE) and dO (with D) are streaming variable-latency operations (paper §5.3):
zero latency on their out-edges, one cycle of the TMA issue unit. The dQ reduce-add is variable
latency but not streaming (it consumes dQ), so it is pinned to the variable-latency slot too.

Hardware rates (public NVIDIA figures, as in :mod:`twill.sched.kernels`): H100 4096 dense FP16
FLOP/clk/SM, B200 8192; MUFU 16 ``ex2``/clk/SM on both; FP32 FMA 128/clk/SM (min/max and
conversions 64/clk); register -> shared memory -> register hand-off 61 clocks + 16.1 clocks/KB
(third-party B200 micro-benchmarks). Costs are normalised so that one cycle is 512
SM clocks on both GPUs.

Preconditions: none (factories).
"""

from __future__ import annotations

from twill.sched.ir import DependenceGraph, Edge, Instruction, MachineDescription
from twill.sched.kernel_ops import tma_load, unit_op

__all__ = ["flash_attention_backward_hopper", "flash_attention_backward_blackwell"]

_KIB = 1024


def _loads(q_bytes: int, do_bytes: int) -> list[Instruction]:
    return [
        tma_load("LOAD_Q", q_bytes, "TMA load of a Q block and its LSE"),
        tma_load("LOAD_DO", do_bytes, "TMA load of a dO block and its D = rowsum(dO * O)"),
    ]


def _dq_add() -> Instruction:
    return unit_op("DQ_ADD", "TMA", "TMA reduce-add of dQ into global memory (atomic)",
                   spill_cost=0, variable_latency=True)  # fmt: skip


def flash_attention_backward_hopper() -> DependenceGraph:
    """FA3 backward on H100 (paper §6): ``Br = 64``, ``Bc = 128``, head dim 128.

    Costs (1 cycle = 512 clocks): each GEMM is ``2*64*128*128 / 4096 = 512`` clocks = 1 TC
    cycle (all five have 2 MFLOP: ``S``, ``dP`` are 64x128 with k = 128, ``dV``, ``dK`` are
    128x128 with k = 64, ``dQ`` is 64x128 with k = 128); ``P`` is ``8192 / 16 = 512`` MUFU
    clocks = 1 EXP cycle; ``dS = P * (dP - D)`` is 8192 FFMA + FMUL (``2*8192/128 = 128``
    clocks) plus FP16 packing (64), 192 clocks, rounded up to 1 FMA cycle (a value is never
    used in the cycle its producer issues). ResMII = 5 (five GEMMs on one TC).

    Warps (FA3): one producer warp group (TMA loads, dQ writer) and two MMA warp groups that
    split **every** GEMM and the softmax between them (each op spans 8 warps = both compute
    slots), 240 registers per thread (``setmaxnreg``). Registers per thread of the 256 MMA
    threads: ``S``, ``P``, ``dP``, ``dS``, ``dQ`` (64x128 FP32) 32 each; the ``dV`` and ``dK``
    accumulators (128x128 FP32) 64 each. ``P`` and ``dS`` are also staged in shared memory
    (FP16, 16 KiB) as operands of the transposed GEMMs. dQ reaches the producer warp through
    shared memory: a 32 KiB FP32 tile costs 61 + 16.1*32 = 576 clocks, so ``spill_cost(dQ) =
    1`` cycle; the other values never change slot (``spill_cost`` 1 as well, unused).

    Expected (paper: "register-bound, only intra-iteration parallelism"): Phase 1 gives I = 5,
    LEN(M) = 5; the dQ hand-off to the producer warp makes Phase 2 unsat at I = 5, and the
    answer is I = 6 with L <= I, a single copy (no cross-iteration overlap).

    Returns
    -------
    DependenceGraph
        Ops ``LOAD_Q``, ``LOAD_DO``, ``S``, ``P``, ``dP``, ``dS``, ``dV``, ``dK``, ``dQ``,
        ``DQ_ADD``.

    Examples
    --------
    >>> g = flash_attention_backward_hopper()
    >>> sum(1 for i in g.instructions if i.unit == "TC"), g.machine.registers_per_warp
    (5, 240)
    """
    machine = MachineDescription(
        "h100-sxm5",
        {"TC": 1, "EXP": 1, "FMA": 1, "TMA": 1},
        registers_per_warp=240,
        memories={"smem": 228 * _KIB},
        warps=3,
        note="1 producer warp group + 2 MMA warp groups sharing every op; 1 cycle = 512 clocks",
    )
    blk = 64 * 128 * 2  # an FP16 64x128 tile
    gemm = "64x128x128 WGMMA: 512 clk"
    staged = {"smem": blk}
    ins = _loads(blk, blk) + [
        unit_op("S", "TC", gemm, regs=32, warps=8),
        unit_op("dP", "TC", gemm, regs=32, warps=8),
        unit_op("P", "EXP", "exp of 64x128: 512 MUFU clk", regs=32, footprint=staged, warps=8),
        unit_op(
            "dS", "FMA", "P * (dP - D), pack to FP16: 192 clk", regs=32, footprint=staged, warps=8
        ),
        unit_op("dV", "TC", "dV += P^T dO, 128x128x64 WGMMA: 512 clk", regs=64, warps=8),
        unit_op("dK", "TC", "dK += dS^T Q, 128x128x64 WGMMA: 512 clk", regs=64, warps=8),
        unit_op("dQ", "TC", "dQ = dS K, 64x128x128 WGMMA: 512 clk", regs=32, warps=8),
        _dq_add(),
    ]
    edges = (
        Edge("LOAD_Q", "S", 0),
        Edge("LOAD_DO", "dP", 0),
        Edge("S", "P", 1),
        Edge("P", "dS", 1),
        Edge("dP", "dS", 1),
        Edge("P", "dV", 1),
        Edge("LOAD_DO", "dV", 0),
        Edge("dS", "dK", 1),
        Edge("LOAD_Q", "dK", 0),
        Edge("dS", "dQ", 1),
        Edge("dQ", "DQ_ADD", 1),
        Edge("dV", "dV", 1, 1),
        Edge("dK", "dK", 1, 1),
    )
    return DependenceGraph("flash_attention_backward_hopper", tuple(ins), edges, machine)


def flash_attention_backward_blackwell() -> DependenceGraph:
    """FA4-style backward on B200 (paper §6): ``Br = Bc = 128``, head dim 128.

    Costs (1 cycle = 512 clocks): each GEMM is ``2*128**3 / 8192 = 512`` clocks = 1 TC cycle,
    accumulating into tensor memory (TMEM, 256 KiB); ``P`` is ``16384 / 16 = 1024`` MUFU clocks
    = 2 EXP cycles; ``dS = P * (dP - D)`` is ``2*16384/128 = 256`` FMA clocks plus BF16 packing
    (128), 384 clocks = 1 FMA cycle; ``DQ_LD`` reads the dQ accumulator out of TMEM
    (``tcgen05.ld``) and stages it in shared memory for the reduce-add: 1 cycle of the TMEM
    port. ResMII = 5 (five GEMMs on one TC).

    TMEM holds the five 128x128 FP32 accumulators, 64 KiB each: ``dV`` and ``dK`` for the whole
    loop, ``S``, ``dP`` and ``dQ`` until they are read, so at most two of those three can be
    live at once (320 KiB > 256 KiB). Reading ``S``, ``dP`` or ``dQ`` out of TMEM is a blocking
    wait on the tensor core. ``P`` and ``dS`` are staged in shared memory (BF16, 32 KiB) as
    GEMM operands and kept in registers (64 per thread of a 128-thread warp group) until
    ``dS`` and the GEMMs that read them issue; ``DQ_LD`` holds 128 registers. Cross-warp
    hand-offs go through shared memory and mbarriers; a BF16 128x128 tile (32 KiB) costs
    61 + 16.1*32 = 576 clocks, ``spill_cost = 1``.

    Warps: the variable-latency slot (TMA loads and the dQ reduce-add) and three compute warp
    groups (the paper's "3 warp groups, reduced registers" configuration), 255 registers.

    Expected (paper Table 1: the joint solve needs a larger I than Phase 1, 15 -> 20 in their
    units): Phase 1 gives I = 5; the TMEM capacity and the blocking TMEM reads make Phase 2
    unsat there, and the answer has a larger I.

    Returns
    -------
    DependenceGraph
        Ops ``LOAD_Q``, ``LOAD_DO``, ``S``, ``P``, ``dP``, ``dS``, ``dV``, ``dK``, ``dQ``,
        ``DQ_LD``, ``DQ_ADD``.

    Examples
    --------
    >>> g = flash_attention_backward_blackwell()
    >>> g.machine.memories["tmem"] // 1024
    256
    """
    machine = MachineDescription(
        "b200",
        {"TC": 1, "EXP": 1, "FMA": 1, "TMEM": 1, "TMA": 1},
        registers_per_warp=255,
        memories={"smem": 228 * _KIB, "tmem": 256 * _KIB},
        warps=4,
        note="TMA slot + 3 compute warp groups; 1 cycle = 512 SM clocks",
    )
    blk = 128 * 128 * 2  # a BF16 128x128 tile
    acc = {"tmem": 128 * 128 * 4}  # a 128x128 FP32 accumulator in TMEM
    umma = "128x128x128 UMMA into TMEM: 512 clk"
    staged = {"smem": blk}
    ins = _loads(blk, blk) + [
        unit_op("S", "TC", umma, footprint=acc),
        unit_op("dP", "TC", umma, footprint=acc),
        unit_op(
            "P",
            "EXP",
            "exp of 128x128: 1024 MUFU clk",
            cycles=2,
            regs=64,
            footprint=staged,
            warps=4,
        ),
        unit_op(
            "dS", "FMA", "P * (dP - D), pack to BF16: 384 clk", regs=64, footprint=staged, warps=4
        ),
        unit_op("dV", "TC", "dV += P^T dO: 512 clk", footprint=acc),
        unit_op("dK", "TC", "dK += dS^T Q: 512 clk", footprint=acc),
        unit_op("dQ", "TC", "dQ = dS K: 512 clk", footprint=acc),
        unit_op("DQ_LD", "TMEM", "tcgen05.ld of dQ, store to shared memory", regs=128, warps=4),
        _dq_add(),
    ]
    edges = (
        Edge("LOAD_Q", "S", 0),
        Edge("LOAD_DO", "dP", 0),
        Edge("S", "P", 1, blocking=True),
        Edge("P", "dS", 2),
        Edge("dP", "dS", 1, blocking=True),
        Edge("P", "dV", 2),
        Edge("LOAD_DO", "dV", 0),
        Edge("dS", "dK", 1),
        Edge("LOAD_Q", "dK", 0),
        Edge("dS", "dQ", 1),
        Edge("dQ", "DQ_LD", 1, blocking=True),
        Edge("DQ_LD", "DQ_ADD", 1),
        Edge("dV", "dV", 1, 1),
        Edge("dK", "dK", 1, 1),
    )
    return DependenceGraph("flash_attention_backward_blackwell", tuple(ins), edges, machine)
