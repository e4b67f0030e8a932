"""Example loop bodies: FlashAttention forward and a GEMM main loop (Twill paper §3.1, §6).

Every factory returns a fresh, valid
:class:`~twill.sched.ir.DependenceGraph` whose costs are **normalised** (paper §5.2): one
"cycle" of the graph stands for a fixed number of SM clock cycles, stated in each docstring
together with the public hardware rates it is derived from. Only ratios matter, because
multiplying every cost by a positive integer gives an isomorphic problem (paper §5.2).

Hardware rates used (public NVIDIA figures):

* H100 SXM5: 1024 dense FP16 FLOP/clk per tensor core, 4 per SM = **4096 FLOP/clk/SM**; MUFU
  (``ex2``) **16 ops/clk/SM**; 255 registers per thread; up to 228 KiB shared memory per SM.
* B200: tensor-core throughput about 2x an H100 SM = **8192 FLOP/clk/SM**; MUFU unchanged at
  **16 ops/clk/SM**; 256 KiB tensor memory (TMEM) per SM.

Register annotations (``regs``) are 32-bit registers per thread of the owning warp group;
footprints are bytes. Phase 2 (warp specialisation) reads ``warps``, ``registers_per_warp``,
``memories``, ``regs``, ``footprint``, ``variable_latency``, ``streaming`` and ``spill_cost``.
"""

from __future__ import annotations

from collections.abc import Callable

from twill.sched.ir import DependenceGraph, Edge, Instruction, MachineDescription
from twill.sched.kernel_ops import tma_load, unit_op
from twill.sched.kernels_backward import (
    flash_attention_backward_blackwell,
    flash_attention_backward_hopper,
)

__all__ = [
    "flash_attention_forward_simplified",
    "flash_attention_forward_hopper",
    "flash_attention_forward_blackwell",
    "flash_attention_backward_hopper",
    "flash_attention_backward_blackwell",
    "simple_gemm_pipeline",
    "KERNELS",
    "get_kernel",
]

_KIB = 1024
_H100_SMEM = 228 * _KIB
_B200_SMEM = 228 * _KIB
_B200_TMEM = 256 * _KIB
_REGS_PER_THREAD = 255
_FA3_CONSUMER_REGS = 240  # setmaxnreg of FA3's consumer warp groups


def _kv_loads(tile: int) -> list[Instruction]:
    """The TMA loads of one K and one V tile (``tile`` bytes of shared memory each)."""
    return [tma_load(f"LOAD_{x}", tile, f"TMA load of a 128x128 {x} tile") for x in "KV"]


def flash_attention_forward_simplified() -> DependenceGraph:
    """The paper's Fig. 1 loop: ``S = Q K_i^T; P = exp(S); O += P V_i`` on Hopper.

    Costs (public rates): one 128x128x128 FP16 GEMM is ``2*128**3 / 4096 = 1024`` clocks on an
    H100 SM, and an exp over 128x128 elements at 16 MUFU ops/clk is ``16384 / 16 = 1024``
    clocks. One normalised cycle = 1024 clocks, so S and O take 1 tensor-core (TC) cycle and P
    one EXP cycle; ``cap(TC) = cap(EXP) = 1``. Each edge delay equals the producer's length;
    ``O -> O`` (distance 1) is the accumulator.

    Expected: ResMII = 2, RecMII = 1, minimum I = 2 with ``S@0, P@2, O@3``, L = 4 (paper §3.1).

    Returns
    -------
    DependenceGraph
        Ops ``S``, ``P``, ``O`` on machine ``hopper-fig1``.

    Examples
    --------
    >>> g = flash_attention_forward_simplified()
    >>> g.names
    ['S', 'P', 'O']
    """
    machine = MachineDescription(
        "hopper-fig1",
        {"TC": 1, "EXP": 1},
        registers_per_warp=None,
        memories={"smem": _H100_SMEM},
        warps=2,
        note="Fig. 1 model: registers unconstrained (paper Fig. 1); 1 cycle = 1024 SM clocks",
    )
    instructions = (
        unit_op("S", "TC", "128x128x128 GEMM: 1024 clk", regs=128, warps=4),
        unit_op("P", "EXP", "exp of 128x128: 1024 clk", regs=64, warps=4),
        unit_op("O", "TC", "128x128x128 GEMM accumulate: 1024 clk", regs=128, warps=4),
    )
    edges = (Edge("S", "P", 1), Edge("P", "O", 1), Edge("O", "O", 1, 1))
    return DependenceGraph("flash_attention_forward_simplified", instructions, edges, machine)


def flash_attention_forward_hopper() -> DependenceGraph:
    """Sub-tiled FlashAttention-3 forward on H100 (paper §6).

    FA3 (head dim 128) runs a 128-row Q block per CTA on two consumer warp groups of 64 rows
    each (sub-tiles 0 and 1), plus a producer warp issuing TMA loads of K and V. Per sub-tile
    ``j`` and K/V block (``Bc = 128`` columns) the loop body is FA3's mainloop:

    * ``S_j = Q_j K^T``: 64x128x128 WGMMA, ``2*64*128*128 / 4096 = 512`` clocks of the SM's
      tensor cores (TC);
    * ``P_j``: row max then ``exp2(S_j*scale - m_j)`` over 64x128 elements, MUFU-bound:
      ``8192 / 16 = 512`` clocks (EXP);
    * ``R_j``: the rest of the online softmax on the FP32 pipes (FMA, 128 FP32 ops/clk/SM;
      min/max and conversions at 64/clk): row max ``8192/64 = 128``, scale ``64``, row sum
      ``64``, rescale of the ``O_j`` accumulator (64x128 FMUL) ``64``, FP32 -> FP16 packing of
      ``P_j`` ``4096/64 = 64``: **384 clocks**, rounded to one unit (0.75 unit);
    * ``O_j += P_j V``: 64x128x128 WGMMA, 512 clocks (TC).

    One normalised cycle = 512 clocks: each of the four GEMMs is 1 TC cycle, each exp 1 EXP
    cycle, each softmax bookkeeping 1 FMA cycle (all units cap 1, the SM-wide pipes). Edges:
    ``S_j -> P_j -> R_j -> O_j`` (delay = producer length); ``O_j -> R_j`` (distance 1, the
    rescale waits for the previous accumulate; FA3 ``rescale_o``); ``P_j -> P_j`` and
    ``R_j -> R_j`` (distance 1: running max and sum); TMA loads are streaming
    variable-latency ops (paper §5.3): zero latency on their out-edges, 1 cycle of TMA issue.

    Warp annotations (Phase 2): registers per thread of a 128-thread warp group holding a
    64-row sub-tile: ``S_j`` and ``P_j`` 64x128 FP32 = 64, ``R_j`` (``P_j`` in FP16) 32,
    ``O_j`` 64; limit 240 (FA3's ``setmaxnreg`` for two consumer warp groups: 24 + 2*240 <= 512
    registers per thread of the 64 Ki-register file). A cross-warp hand-off goes through shared
    memory: 61 clocks + 16.1 clocks/KB (third-party) for a 32 KiB FP32 tile = 576 clocks, about
    one unit, so ``spill_cost = 1``.

    Expected: ResMII = 4 (four GEMM cycles on one TC), RecMII = 2, minimum I = 4. At I = 4 the
    per-sub-tile chain ``S -> P -> R -> O`` (3 cycles) and the full tensor core force
    ``LEN(M) = 6``: two overlapped copies, and the first GEMM of iteration ``k+1`` issues before
    the second GEMM of iteration ``k`` (FA3's software pipeline).

    Returns
    -------
    DependenceGraph
        Ops ``LOAD_K``, ``LOAD_V``, and per sub-tile ``S_j``, ``P_j``, ``R_j``, ``O_j``.
    """
    machine = MachineDescription(
        "h100-sxm5",
        {"TC": 1, "EXP": 1, "FMA": 1, "TMA": 1},
        registers_per_warp=_FA3_CONSUMER_REGS,
        memories={"smem": _H100_SMEM},
        warps=3,
        note="1 producer warp (TMA) + 2 consumer warp groups; 1 cycle = 512 SM clocks",
    )
    tile = 128 * 128 * 2  # one FP16 128x128 K or V tile in shared memory
    ins = _kv_loads(tile)
    edges: list[Edge] = []
    for j in (0, 1):
        s, p, r, o = f"S{j}", f"P{j}", f"R{j}", f"O{j}"
        ins += [
            unit_op(s, "TC", "64x128x128 WGMMA: 512 clk", regs=64, warps=4),
            unit_op(p, "EXP", "row max + exp2 of 64x128: 512 MUFU clk", regs=64, warps=4),
            unit_op(r, "FMA", "row sum, rescale O, pack P to FP16: 384 clk", regs=32, warps=4),
            unit_op(o, "TC", "64x128x128 WGMMA accumulate: 512 clk", regs=64, warps=4),
        ]
        edges += [
            Edge("LOAD_K", s, 0),
            Edge(s, p, 1),
            Edge(p, r, 1),
            Edge(r, o, 1),
            Edge("LOAD_V", o, 0),
            Edge(o, r, 1, 1),
            Edge(p, p, 1, 1),
            Edge(r, r, 1, 1),
        ]
    return DependenceGraph("flash_attention_forward_hopper", tuple(ins), tuple(edges), machine)


def flash_attention_forward_blackwell(*, subtiled: bool = True) -> DependenceGraph:
    """FlashAttention-4 forward on B200 (paper §6).

    FA4 processes two 128-row Q sub-tiles per CTA: a TMA warp, an MMA warp, one softmax warp
    group per sub-tile and a correction warp group that rescales the accumulators in TMEM.
    With ``subtiled=False`` the CTA processes one 128-row tile per iteration (the Triton
    tutorial kernel, paper §6's "no sub-tiling" ablation): the same per-op costs, one chain.

    Costs: a 128x128x128 GEMM is ``2*128**3 / 8192 = 512`` clocks on a B200 SM; an exp over
    128x128 elements is ``16384 / 16 = 1024`` clocks (GEMM : EXP = 1 : 2). One
    normalised cycle = 1024 clocks, in which the tensor core completes **two** 128-row GEMMs:
    every GEMM is 1 cycle of a TC with ``cap(TC) = 2`` (a throughput of two tiles per cycle),
    every exp 1 cycle of EXP (cap 1). The correction ``C_j`` reads and rescales the ``O_j``
    accumulator through the TMEM load/store port (its own unit, cap 1), and that read
    is a blocking wait (``blocking=True``). TMA loads are streaming, zero latency.

    Warp annotations (Phase 2): ``P_j`` holds a 128x128 FP32 tile of ``S_j`` loaded from TMEM by a
    128-thread warp group, 128 registers per thread; ``C_j`` loads a 128x128 FP32 block of
    ``O_j`` to rescale it, 128 registers per thread (FA4 ``correction`` warp group). The GEMMs
    keep their results in TMEM (no registers). A cross-warp hand-off is an mbarrier arrive/wait
    of about 92 clocks (third-party B200 micro-benchmarks), under 0.1 of a 1024-clock
    unit, so ``spill_cost = 0`` after normalisation.

    Warp slots are warp groups (``docs/model.md``): FA4 runs four (two softmax, one correction,
    and one holding the TMA, MMA and epilogue warps), so the machine declares **4 slots**: the
    variable-latency slot (TMA only, the iff rule of Fig. 6) and 3 compute slots; the
    single-thread, asynchronous MMA issue shares a compute slot.

    Expected: ResMII = 2 (TC: 4 GEMMs / 2; EXP: 2 exps; TMEM: 2 corrections), minimum I = 2.
    Un-sub-tiled: ResMII = 1 (per 128 rows), and Phase 2 is unsat at I = 1: the softmax warp
    group would hold two 128-register tiles at once (paper: "instruction granularity is not
    fine enough").

    Parameters
    ----------
    subtiled
        Two 128-row sub-tiles per iteration (FA4, default) or one (the ablation).

    Returns
    -------
    DependenceGraph
        Ops ``LOAD_K``, ``LOAD_V``, and per sub-tile ``S_j``, ``P_j``, ``C_j``, ``O_j``.
    """
    machine = MachineDescription(
        "b200",
        {"TC": 2, "EXP": 1, "TMEM": 1, "TMA": 1},
        registers_per_warp=_REGS_PER_THREAD,
        memories={"smem": _B200_SMEM, "tmem": _B200_TMEM},
        warps=4,
        note="TMA slot + 3 warp groups (2 softmax, 1 correction; MMA issue shares one); "
        "1 cycle = 1024 SM clocks",
    )
    tile = 128 * 128 * 2
    acc = 128 * 128 * 4  # one FP32 128x128 accumulator in TMEM
    ins = _kv_loads(tile)
    edges: list[Edge] = []
    # sub-tiled: two chains of 128-row ops; un-sub-tiled: one chain of 256-row ops, each twice
    # as long (exp, correction) or twice as wide (a GEMM holds both TC units), on 2 warp groups
    k = 1 if subtiled else 2
    for j in (0, 1) if subtiled else ("",):
        s, p, c, o = f"S{j}", f"P{j}", f"C{j}", f"O{j}"
        rows = 128 * k
        ins += [
            Instruction(s, 1, {"TC": (k,)}, footprint={"tmem": acc * k}, spill_cost=0,
                        unit="TC", note=f"{rows}x128x128 UMMA into TMEM: {512 * k} clk"),
            unit_op(p, "EXP", f"exp of {rows}x128: {1024 * k} clk; P aliases S's TMEM columns",
                    cycles=k, regs=128, warps=4 * k, spill_cost=0),
            unit_op(c, "TMEM", "rescale O: tcgen05.ld/st of the accumulator", cycles=k,
                    regs=128, warps=4 * k, spill_cost=0),
            Instruction(o, 1, {"TC": (k,)}, footprint={"tmem": acc * k}, spill_cost=0,
                        unit="TC", note=f"{rows}x128x128 UMMA accumulate: {512 * k} clk"),
        ]  # fmt: skip
        edges += [
            Edge("LOAD_K", s, 0),
            Edge(s, p, 1, blocking=True),
            Edge(p, c, k),
            Edge(p, o, k),
            Edge(c, o, k),
            Edge("LOAD_V", o, 0),
            Edge(p, p, k, 1),
            Edge(o, c, 1, 1, blocking=True),
        ]
    name = "flash_attention_forward_blackwell" + ("" if subtiled else "_unsubtiled")
    return DependenceGraph(name, tuple(ins), tuple(edges), machine)


def simple_gemm_pipeline() -> DependenceGraph:
    """Main loop of a warp-specialised GEMM on H100: TMA producer, WGMMA consumers.

    One k-step of a 128x128 output tile with k-block 64: TMA loads ``A`` (128x64) and ``B``
    (64x128) tiles; two consumer warp groups each multiply a 64-row half,
    ``2*64*128*64 / 4096 = 256`` clocks per WGMMA. One normalised cycle = 256 clocks: each
    ``MMA_j`` is 1 TC cycle, with an accumulator self-edge (distance 1). TMA loads are
    streaming variable-latency ops (zero latency, one cycle of the TMA issue unit). This is the
    CUTLASS sm90 warp-specialised producer/consumer main loop.

    Expected: ResMII = 2 (two WGMMAs on one TC, two TMA issues), minimum I = 2.

    Returns
    -------
    DependenceGraph
        Ops ``TMA_A``, ``TMA_B``, ``MMA0``, ``MMA1``.
    """
    machine = MachineDescription(
        "h100-sxm5",
        {"TC": 1, "TMA": 1},
        registers_per_warp=_REGS_PER_THREAD,
        memories={"smem": _H100_SMEM},
        warps=3,
        note="1 producer warp + 2 consumer warp groups; 1 cycle = 256 SM clocks",
    )
    half = 128 * 64 * 2
    ins = (
        tma_load("TMA_A", half, "TMA load of a 128x64 A tile"),
        tma_load("TMA_B", half, "TMA load of a 64x128 B tile"),
        *(unit_op(m, "TC", "64x128x64 WGMMA: 256 clk", regs=64, warps=4) for m in ("MMA0", "MMA1")),
    )
    edges = tuple(Edge(src, mma, 0) for mma in ("MMA0", "MMA1") for src in ("TMA_A", "TMA_B")) + (
        Edge("MMA0", "MMA0", 1, 1),
        Edge("MMA1", "MMA1", 1, 1),
    )
    return DependenceGraph("simple_gemm_pipeline", ins, edges, machine)


KERNELS: dict[str, Callable[[], DependenceGraph]] = {
    "flash_attention_forward_simplified": flash_attention_forward_simplified,
    "flash_attention_forward_hopper": flash_attention_forward_hopper,
    "flash_attention_forward_blackwell": flash_attention_forward_blackwell,
    "flash_attention_backward_hopper": flash_attention_backward_hopper,
    "flash_attention_backward_blackwell": flash_attention_backward_blackwell,
    "simple_gemm_pipeline": simple_gemm_pipeline,
}


def get_kernel(name: str) -> DependenceGraph:
    """Build the kernel called ``name`` (a key of :data:`KERNELS`).

    Raises
    ------
    KeyError
        With the list of known kernels, when ``name`` is unknown.
    """
    try:
        factory = KERNELS[name]
    except KeyError:
        raise KeyError(f"unknown kernel {name!r}; known: {', '.join(sorted(KERNELS))}") from None
    return factory()
