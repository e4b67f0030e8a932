"""The Gluon route on B200: Twill's schedule of the FlashAttention forward -> a plan (roles ->
partitions, ring depth) -> a Gluon kernel compiled to a cubin without a GPU. Numerics are
not checked here (no GPU): benchmarks/triton_device.py runs the kernel against torch when one
is lent."""

from __future__ import annotations

import json
import re
from functools import cache
from pathlib import Path

import pytest

from twill.codegen.gluon.plan import (
    AttentionPlan,
    Partition,
    attention_roles,
    pin_roles,
    plan_from_schedule,
    split_roles,
)
from twill.errors import InvalidProblemError

TESTS = Path(__file__).resolve().parents[2]
SHIPPED = TESTS.parent / "src" / "twill" / "data" / "triton"


@cache
def _loop():  # noqa: ANN202
    from twill.triton.extract import extract_loops
    from twill.triton.schedule import graph_ops

    text = (SHIPPED / "fa_fwd.sm_100a.ttgir").read_text()
    loop = extract_loops(text, "sm_100a")[0]
    return loop.graph, attention_roles(graph_ops(loop, text), loop.graph)


def _checked_in() -> dict:
    return json.loads((TESTS / "data" / "triton_schedules" / "fa_fwd.sm_100a.json").read_text())


def test_roles_cover_the_loop() -> None:
    """Every op of the forward loop is in exactly one role; each sub-tile's QK^T and PV are
    its two tensor-core ops, its correction the accumulator's load, product and store."""
    graph, roles = _loop()
    placed = [v for vs in roles.values() for v in vs]
    assert sorted(placed) == sorted(graph.names)
    for t in (0, 1):
        assert [graph.instruction(v).unit for v in roles[f"qk{t}"] + roles[f"pv{t}"]] == ["TC"] * 2
        units = sorted(graph.instruction(v).unit for v in roles[f"correction{t}"])
        assert units == ["FMA", "TMEM", "TMEM"]
        assert any(graph.instruction(v).unit == "EXP" for v in roles[f"softmax{t}"])
    assert roles["load_k"] == ("TMA_k_blk",) and roles["load_v"] == ("TMA_v_blk",)


def test_another_family_is_not_the_templates() -> None:
    """The plain forward (one Q sub-tile) is not the template's loop: refused with the reason
    (``twill compile`` then takes the attribute route, the reason in ``gluon.why``)."""
    from twill.triton.extract import extract_loops
    from twill.triton.schedule import graph_ops

    text = (SHIPPED / "fa_fwd_plain.sm_100a.ttgir").read_text()
    loop = extract_loops(text, "sm_100a")[0]
    with pytest.raises(InvalidProblemError, match="two Q sub-tiles; found 2 load.*1 sub-tile"):
        attention_roles(graph_ops(loop, text), loop.graph)


def test_a_split_role_is_refused() -> None:
    """A warp assignment that runs one role on two slots is not expressible: refused, naming
    the role and its slots (the checked-in answer splits softmax0's row sum this way)."""
    graph, roles = _loop()
    s = _checked_in()
    assert split_roles(roles, s["assignment"])  # Twill's answer as solved splits roles
    with pytest.raises(InvalidProblemError, match=r"splits template roles.*softmax0 on slots"):
        plan_from_schedule("sm_100a", roles, s["schedule"], s["assignment"], s["I"], s["L"], "p")
    whole = pin_roles(roles, s["assignment"], graph)
    assert not split_roles(roles, whole)
    assert {w for ws in whole.values() for w in ws} == {0, 1, 2, 3}


def _plan() -> AttentionPlan:
    graph, roles = _loop()
    s = _checked_in()
    whole = pin_roles(roles, s["assignment"], graph)
    return plan_from_schedule("sm_100a", roles, s["schedule"], whole, s["I"], s["L"], "p")


def test_the_plan_reads_twills_slots() -> None:
    """One partition per Twill slot in use, each running the roles Twill put there; the TMA
    slot a 1-warp worker; ring depth from the stages (at least double buffering)."""
    graph, roles = _loop()
    s = _checked_in()
    whole = pin_roles(roles, s["assignment"], graph)
    plan = _plan()
    assert sorted(p.slot for p in plan.partitions) == sorted({w[0] for w in whole.values()})
    for p in plan.partitions:
        assert all(whole[v] == (p.slot,) for r in p.roles for v in roles[r])
    load = [p for p in plan.partitions if "load_k" in p.roles]
    assert load[0].warps == 1 and load[0].roles == ("load_k", "load_v")
    assert plan.partitions[0].default and plan.kv_stages >= 2


def test_a_ring_that_does_not_fit_is_refused() -> None:
    pytest.importorskip("triton")
    from dataclasses import replace

    from twill.codegen.gluon.attention_sm100 import attention_forward_sm100

    with pytest.raises(InvalidProblemError, match="shared memory"):
        attention_forward_sm100(replace(_plan(), kv_stages=3))


def test_a_fifth_partition_is_refused() -> None:
    pytest.importorskip("triton")
    from dataclasses import replace

    from twill.codegen.gluon.attention_sm100 import attention_forward_sm100

    plan = _plan()
    extra = (*plan.partitions, Partition(4, (), 4, 64))
    with pytest.raises(InvalidProblemError, match="2 to 4 partitions"):
        attention_forward_sm100(replace(plan, partitions=extra))


@pytest.mark.slow
def test_the_kernel_compiles_and_fits() -> None:
    """The plan's kernel: a cubin, no spill, no trap, 512 tensor-memory columns, shared
    memory under 227 KiB, one warp_specialize partition per Twill slot with the plan's
    registers (setmaxnreg), PV reading P from tensor memory."""
    pytest.importorskip("triton")
    from twill.codegen.gluon.attention_sm100 import attention_forward_sm100

    plan = _plan()
    k = attention_forward_sm100(plan)
    assert k.cubin and k.spills == 0 and k.runnable, k.why_not_runnable
    assert k.tmem_columns == 512 and 0 < k.smem_bytes <= 227 * 1024
    workers = plan.partitions[1:]
    assert re.search(rf"ttg.warp_specialize.*requestedRegisters = array<i32: "
                     rf"{', '.join(str(p.regs) for p in workers)}>", k.ttgir)  # fmt: skip
    assert len(re.findall(r"^\s*partition\d+\(", k.ttgir, re.M)) == len(workers)
    grows = set(re.findall(r"setmaxnreg\.\w+\.sync\.aligned\.u32\s+(\d+)", k.ptx))
    assert {str(p.regs) for p in workers} <= grows
    assert re.search(r"tcgen05\.mma\.cta_group::1\.kind::f16 \[[^]]+\], \[", k.ptx)  # A in TMEM
    assert [p["slot"] for p in k.partitions] == [p.slot for p in plan.partitions]


@pytest.mark.slow
def test_twill_compile_takes_the_gluon_route(capsys: pytest.CaptureFixture[str]) -> None:
    """``twill compile`` on the shipped forward (sm_100a): the Gluon route, Twill's I and L,
    a runnable kernel without spills, Twill's slots as the partitions; roles Twill's answer
    split are named, with the problem."""
    pytest.importorskip("triton")
    from twill.triton import compile_summary
    from twill.triton.gluon_route import PINNED_SUFFIX

    d = compile_summary(f"{SHIPPED / 'kernels.py'}:fa_fwd", "sm_100a", total_time_limit=300).data
    assert d["route"] == "gluon" and d["runnable"] and d["spills"] == 0
    assert (d["I"], d["L"]) == (20, 32)
    parts = d["partitions"]
    assert parts["applied"]
    used = {w for ws in parts["twill"].values() for w in ws}
    assert sorted(f["slot"] for f in parts["functions"]) == sorted(used)
    assert d["problem"].endswith(PINNED_SUFFIX) == bool(parts["moved_to_keep_roles_whole"])
    for v, slot in parts["regions"].items():
        fn = next(f for f in parts["functions"] if f["function"] == slot)
        assert parts["twill"][v] == [fn["slot"]]
    from twill.cli.compile_cmd import print_summary

    print_summary(d, [])
    out = capsys.readouterr().out
    assert "Gluon route" in out and "slot 0 -> worker_slot0: load_k, load_v" in out
    assert "spills 0 bytes" in out and "NOT RUNNABLE" not in out


def test_why_not_runnable_names_each_limit() -> None:
    from twill.codegen.gluon.common import why_not_runnable

    ok = ("sm_100a", "tcgen05.mma ...", 168, 199028, 512)
    assert why_not_runnable(*ok) is None
    assert "trap" in why_not_runnable("sm_100a", "trap;", 168, 1, 1)
    assert "256 registers" in why_not_runnable("sm_100a", "", 256, 1, 1)
    assert "shared memory" in why_not_runnable("sm_100a", "", 168, 227 * 1024 + 1, 1)
    assert "tensor-memory columns" in why_not_runnable("sm_100a", "", 168, 1, 513)
    assert why_not_runnable("sm_90a", "", 168, 1, 0) is None


@pytest.mark.slow
def test_twill_compile_takes_the_gluon_route_on_h100(tmp_path: Path) -> None:
    """The same on sm_90a, through the H100 template (attention_sm90), as a user runs it: a
    new process whose stderr stays empty (no native teardown report after the answer)."""
    pytest.importorskip("triton")
    import os
    import subprocess
    import sys

    argv = [
        sys.executable,
        "-m",
        "twill",
        "compile",
        f"{SHIPPED / 'kernels.py'}:fa_fwd",
        "--arch",
        "sm_90a",
        "-o",
        str(tmp_path / "out"),
        "--time-limit",
        "300",
        "--json",
    ]
    env = {**os.environ, "PYTHONPATH": str(TESTS.parent / "src")}
    done = subprocess.run(argv, capture_output=True, text=True, env=env, check=False)
    assert done.returncode == 0 and done.stderr == "", done.stderr[-2000:]
    d = json.loads(done.stdout)
    assert d["route"] == "gluon" and d["runnable"] and d["spills"] == 0
    assert (d["I"], d["L"]) == (28, 43) and d["partitions"]["applied"]
    used = {w for ws in d["partitions"]["twill"].values() for w in ws}
    assert sorted(f["slot"] for f in d["partitions"]["functions"]) == sorted(used)
    assert (tmp_path / "out" / "fa_fwd.cubin").stat().st_size > 0
