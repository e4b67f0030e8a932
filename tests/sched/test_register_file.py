"""The SM's register file as a capacity of the model (issue 48, item 2): the slots' register
peaks, rounded to setmaxnreg's granule and times their threads, share 64K registers; the
verifier and Phase 2 agree, and a schedule that does not fit is not in the space."""

from __future__ import annotations

from dataclasses import replace

from twill.sched.exact.algorithm1 import algorithm1
from twill.sched.ir import DependenceGraph, Edge, Instruction, MachineDescription
from twill.sched.machines import REGISTERS_PER_SM, SMEM_PER_CTA, TMEM_BYTES, machine_for
from twill.sched.verify_warps import WarpRules, register_file_use, verify_warp_schedule


def _three_tiles(third: int) -> DependenceGraph:
    """Three tiles of 200, 200 and ``third`` registers per thread read by one op: each needs a
    warp group of its own (255 per thread), all live at once."""
    m = MachineDescription("t", {"FMA": 1}, registers_per_warp=255, warps=3)
    ins = (
        Instruction("a", 2, {"FMA": (1, 1)}, regs=200, warps=4),
        Instruction("b", 2, {"FMA": (1, 1)}, regs=200, warps=4),
        Instruction("d", 2, {"FMA": (1, 1)}, regs=third, warps=4),
        Instruction("c", 1, {"FMA": (1,)}, warps=4),
    )
    return DependenceGraph("t", ins, (Edge("a", "c", 2), Edge("b", "c", 2), Edge("d", "c", 2)), m)


def _with_file(g: DependenceGraph) -> DependenceGraph:
    return replace(g, machine=replace(g.machine, registers_per_sm=REGISTERS_PER_SM))


def test_machines_carry_the_capacities() -> None:
    for arch in ("sm_90a", "sm_100a"):
        m = machine_for(arch)
        assert m.registers_per_sm == 65536 and m.memories["smem"] == SMEM_PER_CTA == 232_448
    assert machine_for("sm_100a").memories["tmem"] == TMEM_BYTES == 512 * 128 * 4


def test_register_file_use_rounds_each_peak_to_the_granule() -> None:
    assert register_file_use({0: 200, 1: 200, 2: 150}, WarpRules()) == (200 + 200 + 152) * 128


def test_a_schedule_over_the_register_file_is_refused_and_not_found() -> None:
    g = _three_tiles(150)  # 200 + 200 + 152 registers per thread x 128 threads > 65536
    r = algorithm1(g)
    assert r.I is not None  # without the file's limit
    bad = verify_warp_schedule(_with_file(g), r.schedule, r.assignment, r.I, r.L)
    assert [v.rule for v in bad] == ["register_file"]
    assert algorithm1(_with_file(g)).I is None  # no schedule fits at any I: not in the space


def test_a_schedule_within_the_register_file_is_unchanged() -> None:
    g = _three_tiles(100)  # 500 registers per thread in all: fits
    plain, limited = algorithm1(g), algorithm1(_with_file(g))
    assert (plain.I, plain.L) == (limited.I, limited.L) and limited.optimal
    assert verify_warp_schedule(_with_file(g), limited.schedule, limited.assignment, limited.I,
                                limited.L) == []  # fmt: skip


def test_register_proof_covers_the_one_partition_too() -> None:
    """Two loads of 128 registers per thread both on the variable-latency slot have no
    warp-specialised schedule at any I; on all 8 warps (one partition, 64 registers each) they
    fit, so with the kernel's warps there is no proof and the search decides."""
    from twill.triton import register_conflict

    ops = (
        Instruction("p", 2, {"TMA": (1, 1)}, regs=128, warps=4, variable_latency=True),
        Instruction("q", 2, {"TMA": (1, 1)}, regs=128, warps=4, variable_latency=True),
        Instruction("v", 1, {"FMA": (1,)}, warps=4, unit="FMA"),
    )
    g = DependenceGraph("two_loads", ops, (Edge("p", "v", 2), Edge("q", "v", 2)),
                        machine_for("sm_90a"))  # fmt: skip
    assert register_conflict(g) is not None and "128 + 128" in register_conflict(g)
    assert register_conflict(g, 8) is None
    assert "one partition on all 4 warps neither" in (register_conflict(g, 4) or "")
