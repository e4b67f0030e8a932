"""The sm_90a Gluon FlashAttention forward: Twill's schedule of the shipped fa_fwd loop -> a plan
-> a cubin with one warp_specialize function per Twill slot (CPU compile only, no GPU here)."""

from __future__ import annotations

import dataclasses
import json
from pathlib import Path

import pytest

pytest.importorskip("triton")

from twill.codegen.gluon import plan as gluon_plan  # noqa: E402
from twill.codegen.gluon.attention_sm90 import (  # noqa: E402
    TURN_ORDER,
    _granted_registers,
    _layout,
    attention_forward_sm90,
    attention_roles_sm90,
    launch_sm90,
    tensor_core_turns,
)
from twill.codegen.gluon.common import SMEM_LIMIT  # noqa: E402
from twill.errors import InvalidProblemError  # noqa: E402
from twill.triton.extract import extract_loops, read_ttgir_file  # noqa: E402
from twill.triton.schedule import graph_ops  # noqa: E402

ROOT = Path(__file__).resolve().parents[3]
TTGIR = ROOT / "src" / "twill" / "data" / "triton" / "fa_fwd.sm_90a.ttgir"
ANSWER = ROOT / "tests" / "data" / "triton_schedules" / "fa_fwd.sm_90a.json"


@pytest.fixture(scope="module")
def shipped() -> tuple[dict, dict]:
    """Twill's checked-in answer for the H100 forward loop and the loop's roles."""
    text = read_ttgir_file(TTGIR)
    loop = extract_loops(text, arch="sm_90a")[0]
    return json.loads(ANSWER.read_text()), attention_roles_sm90(graph_ops(loop, text), loop.graph)


def _plan(answer: dict, roles: dict, assignment: dict | None = None) -> gluon_plan.AttentionPlan:
    return gluon_plan.plan_from_schedule(
        "sm_90a", roles, answer["schedule"], assignment or answer["assignment"],
        answer["I"], answer["L"], "test",
    )  # fmt: skip


@pytest.fixture(scope="module")
def compiled(shipped: tuple[dict, dict]) -> tuple[gluon_plan.AttentionPlan, object]:
    answer, roles = shipped
    plan = _plan(answer, roles)
    return plan, attention_forward_sm90(plan, answer["schedule"])


def test_roles_split_each_sub_tile(shipped: tuple[dict, dict]) -> None:
    _, roles = shipped
    assert roles["load_k"] == ("TMA_k_blk",) and roles["load_v"] == ("TMA_v_blk",)
    assert roles["qk0"] == ("TC_s_18",) and roles["pv1"] == ("TC_acc_53",)
    assert roles["correction0"] == ("FMA_acc_30",)  # O *= alpha reads the pv before
    assert "EXP_p_24" in roles["softmax0"] and "EXP_p_42" in roles["softmax1"]


def test_shipped_schedule_compiles_with_twills_partitions(compiled: tuple) -> None:
    plan, kernel = compiled
    answer = json.loads(ANSWER.read_text())
    assert kernel.cubin and kernel.arch == "sm_90a"
    assert kernel.spills == 0 and kernel.runnable, kernel.why_not_runnable
    assert 0 < kernel.smem_bytes <= SMEM_LIMIT and kernel.regs <= 255
    used = {w for ws in answer["assignment"].values() for w in ws}
    assert {p["slot"] for p in kernel.partitions} == used == {0, 1, 2}
    by_fn = {p["function"]: p for p in kernel.partitions}
    assert by_fn["_fa_producer"]["roles"] == ["load_k", "load_v"]
    assert by_fn["_fa_producer"]["slot"] == answer["assignment"]["TMA_k_blk"][0]
    assert by_fn["_fa_consumer(H=0)"]["slot"] == answer["assignment"]["TC_s_18"][0]
    assert by_fn["_fa_consumer(H=1)"]["slot"] == answer["assignment"]["TC_s_34"][0]
    assert by_fn["_fa_producer"]["warps"] == 1 and by_fn["_fa_producer"]["regs"] == 24
    for p in kernel.partitions:  # the workers get what they ask, the default what is left
        if not p["default"]:
            assert p["regs"] == p["regs_planned"]
        elif p["regs"] < p["regs_planned"]:  # said, never hidden
            assert f"gives {p['regs']} registers, the plan {p['regs_planned']}" in str(kernel.notes)
    # every setmaxnreg value is in the PTX, the TTGIR's partitions have the plan's warps/regs
    assert not [n for n in kernel.notes if "in the PTX" in n or "TTGIR" in n], kernel.notes
    regs = [p["regs_planned"] for p in kernel.partitions if not p["default"]]
    assert f"requestedRegisters = array<i32: {regs[0]}, {regs[1]}>" in kernel.ttgir
    assert "warp_specialize" in kernel.ttgir and kernel.ttgir.count("warp_group_dot") >= 6
    assert "take turns at the tensor core in Twill's order" in " ".join(kernel.notes)


def test_tensor_core_turns_follow_twills_order(shipped: tuple[dict, dict]) -> None:
    answer, roles = shipped
    plan = _plan(answer, roles)
    assert tensor_core_turns(plan, answer["schedule"]) == list(TURN_ORDER)
    other = dict(answer["schedule"], TC_s_34=1)  # sub-tile 1's S right after sub-tile 0's
    assert tensor_core_turns(plan, other) is None


def test_a_plan_with_both_sub_tiles_on_one_slot_is_refused(shipped: tuple[dict, dict]) -> None:
    answer, roles = shipped
    one = {v: ([1] if w != [0] else w) for v, w in answer["assignment"].items()}
    with pytest.raises(InvalidProblemError, match="three partitions"):
        attention_forward_sm90(_plan(answer, roles, one))


def test_other_tiles_or_arch_are_refused(shipped: tuple[dict, dict]) -> None:
    answer, roles = shipped
    plan = _plan(answer, roles)
    with pytest.raises(InvalidProblemError, match="tiles"):
        attention_forward_sm90(dataclasses.replace(plan, block_n=64))
    with pytest.raises(InvalidProblemError, match="sm_100a"):
        attention_forward_sm90(dataclasses.replace(plan, arch="sm_100a"))
    wide = tuple(dataclasses.replace(p, warps=8) if p.default else p for p in plan.partitions)
    with pytest.raises(InvalidProblemError, match="warp group"):
        attention_forward_sm90(dataclasses.replace(plan, partitions=wide))


def test_a_ring_over_the_sm_is_not_runnable(shipped: tuple[dict, dict]) -> None:
    answer, roles = shipped
    kernel = attention_forward_sm90(dataclasses.replace(_plan(answer, roles), kv_stages=4))
    assert kernel.smem_bytes > SMEM_LIMIT and not kernel.runnable
    assert "shared memory" in kernel.why_not_runnable
    assert "no schedule given" in " ".join(kernel.notes)


@pytest.mark.parametrize("kernel", ["gemm", "fa_fwd_plain"])
def test_roles_refuse_other_loops(kernel: str) -> None:
    """The GEMM has no Q sub-tiles, the plain forward one: not the template's family."""
    text = read_ttgir_file(TTGIR.with_name(f"{kernel}.sm_90a.ttgir"))
    loop = extract_loops(text, arch="sm_90a")[0]
    with pytest.raises(InvalidProblemError, match="two Q sub-tiles"):
        attention_roles_sm90(graph_ops(loop, text), loop.graph)


def test_launch_refuses_a_sequence_the_kernel_does_not_tile(shipped: tuple[dict, dict]) -> None:
    """Checked before any launch (the launch itself needs an H100: benchmarks/triton_device.py)."""
    torch = pytest.importorskip("torch")
    answer, roles = shipped
    q = torch.zeros(2 * 200, 128, dtype=torch.float16)
    with pytest.raises(InvalidProblemError, match="multiple of 128"):
        launch_sm90(_plan(answer, roles), q, q, q, 200, 0.1)


@pytest.mark.parametrize(("ask", "default"), [(248, 232), (240, 240), (184, 256)])
def test_registers_setmaxnreg_gives(shipped: tuple[dict, dict], ask: int, default: int) -> None:
    """Triton 3.9's rule: the TMA warp is padded to a warp group at 24 registers, the default
    partition gets what is left of the 64K file (at most 256), the other consumer its ask."""
    answer, roles = shipped
    plan = _plan(answer, roles)
    parts = tuple(p if p.warps == 1 else dataclasses.replace(p, regs=ask) for p in plan.partitions)
    lay = _layout(dataclasses.replace(plan, partitions=parts))
    assert _granted_registers(lay) == (default, ask, 24)
