"""Machine descriptions and per-SM throughputs of H100 and B200 (pure data; Twill paper §3.1).

Used by the Triton front end (:mod:`twill.triton.extract`) to turn tensor shapes into SM
clock cycles. Every rate is a public figure or a stated assumption (see ``docs/triton.md``):

* H100 SXM5 tensor cores: 989.4 TFLOP/s dense FP16/BF16 at 132 SMs and a 1.83 GHz boost clock
  (NVIDIA H100 Tensor Core GPU whitepaper): 989.4e12 / (132 * 1.83e9) = **4096 FLOP/clk/SM**.
* B200 tensor cores: 2.25 PFLOP/s dense FP16/BF16 (NVIDIA DGX B200 / Blackwell datasheet),
  148 SMs; per SM and clock that is about twice an H100 SM: **8192 FLOP/clk/SM**.
* MUFU (``ex2``): 16 results/clk/SM; FP32 add/mul/FMA: 128/clk/SM; FP32 min/max and
  conversions: 64/clk/SM (CUDA C++ Programming Guide, arithmetic instruction throughput table,
  compute capabilities 9.0 and 10.0).
* Tensor cores by operand type, dense, from the same documents: FP8/INT8 twice FP16 (H100
  SXM5 1,979 TFLOP/s; B200 4.5 PFLOP/s), FP4 four times (B200 9 PFLOP/s; H100 has none, its
  rate is FP8's), TF32 half (H100 494.7 TFLOP/s; B200 1.1 PFLOP/s).
* Warp shuffle (``shfl.sync``, the lane exchange of a reduction): 32 results/clk/SM (CUDA C++
  Programming Guide, arithmetic instruction throughput table, "warp shuffle").
* Global memory through the load/store path (pointer ``tt.load``/``tt.store``, atomics): the
  HBM bandwidth shared by all SMs, per SM and clock: H100 SXM5 3.35 TB/s (H100 datasheet) /
  (132 SMs x 1.83 GHz) = **13.9 bytes/clk/SM**; B200 8 TB/s (DGX B200 datasheet: 64 TB/s for
  eight GPUs) / (148 SMs x 1.86 GHz, the clock implied by the tensor-core rate) = **29.1
  bytes/clk/SM**.
* Shared memory and TMA: 128 bytes/clk/SM (32 banks x 4 bytes; CUDA Programming Guide).
* Tensor memory (B200): 512 bytes/clk/SM for ``tcgen05.ld/st`` (assumption: four warps, each
  moving 32 lanes x 32 bits per clock).
* Cross-warp hand-off through shared memory: 61 clk + 16.1 clk/KiB (third-party B200
  micro-benchmarks; ``docs/model.md``, "Kernel annotations").
"""

from __future__ import annotations

from dataclasses import dataclass

from twill.sched.ir import MachineDescription

__all__ = ["Rates", "RATES", "ARCHES", "machine_for"]

_KIB = 1024


@dataclass(frozen=True)
class Rates:
    """Per-SM throughputs (per clock) of one GPU."""

    tc_flops: int
    mufu: int = 16
    fp32: int = 128
    fp32_slow: int = 64
    smem_bytes: int = 128
    tmem_bytes: int = 512
    spill_base: float = 61.0
    spill_per_kib: float = 16.1
    gmem_bytes: float = 13.9
    shuffle: int = 32
    fp4_speedup: int = 2  # FP4 over FP16 (H100 has no FP4 tensor cores: FP8's rate)


RATES: dict[str, Rates] = {
    "sm_90a": Rates(tc_flops=4096),
    "sm_100a": Rates(tc_flops=8192, gmem_bytes=29.1, fp4_speedup=4),
}
ARCHES = tuple(RATES)


#: Shared memory one CTA may use on H100 and B200 (227 KiB: the opt-in maximum per block,
#: CUDA C++ Programming Guide, compute capabilities 9.0 and 10.0).
SMEM_PER_CTA = 227 * _KIB
#: B200 tensor memory: 512 columns x 128 lanes of 32 bits.
TMEM_BYTES = 512 * 128 * 4
#: The register file of one SM (64K 32-bit registers, H100 and B200).
REGISTERS_PER_SM = 65536


def machine_for(arch: str) -> MachineDescription:
    """The Phase-1/Phase-2 machine of ``arch`` (``sm_90a``: H100 SXM5, ``sm_100a``: B200).

    Units are SM-wide pipes, each of capacity 1: ``TC`` (tensor cores), ``EXP`` (MUFU),
    ``FMA`` (FP32 pipes), ``TMA`` (global loads/stores), ``SMEM`` (shared-memory traffic) and
    on B200 ``TMEM`` (tensor-memory loads/stores). Warp slots: H100 one producer warp plus two
    consumer warp groups (FA3; 240 registers per thread by ``setmaxnreg``); B200 the
    variable-latency slot plus three warp groups (FA4), 255 registers per thread.
    """
    if arch == "sm_90a":
        return MachineDescription(
            "h100-sxm5",
            {"TC": 1, "EXP": 1, "FMA": 1, "TMA": 1, "SMEM": 1},
            registers_per_warp=240,
            memories={"smem": SMEM_PER_CTA},
            warps=3,
            registers_per_sm=REGISTERS_PER_SM,
            note="1 producer warp + 2 consumer warp groups (FA3 setmaxnreg 240)",
        )
    if arch == "sm_100a":
        return MachineDescription(
            "b200",
            {"TC": 1, "EXP": 1, "FMA": 1, "TMA": 1, "SMEM": 1, "TMEM": 1},
            registers_per_warp=255,
            memories={"smem": SMEM_PER_CTA, "tmem": TMEM_BYTES},
            warps=4,
            registers_per_sm=REGISTERS_PER_SM,
            note="TMA slot + 3 warp groups (FA4)",
        )
    raise KeyError(f"unknown architecture {arch!r}; known: {', '.join(ARCHES)}")
