"""Loops without tensor-core work as Triton runs them (twill.triton.stream): tiles over the
kernel's warps, and wide element-wise chains streamed as one instruction. Checked-in TTGIR and
built graphs; no Triton needed."""

from __future__ import annotations

from pathlib import Path

import pytest

from twill.cli import main
from twill.sched.ir import DependenceGraph, Edge, Instruction
from twill.sched.machines import machine_for
from twill.sched.verify_warps import verify_warp_schedule
from twill.triton import SHIPPED_DIR, register_conflict
from twill.triton.costs import STREAMED
from twill.triton.extract import extract_loops, read_ttgir_file
from twill.triton.stream import placement, spread_warps, stream_wide
from twill.triton.ttgir import TtgirOp
from twill.twill_solver import twill_solve

CORPUS = Path(__file__).parents[1] / "data" / "triton"


def _solved(graph: DependenceGraph):  # noqa: ANN202 (a TwillResult)
    r = twill_solve(graph, backend="cpsat", time_limit=60, total_time_limit=120)
    assert r.I is not None and r.warp_schedule is not None
    assert verify_warp_schedule(r.warp_schedule) == []  # the independent verifier agrees
    return r


@pytest.mark.parametrize("arch", ["sm_90a", "sm_100a"])
def test_wide_row_loop_is_streamed_and_gets_a_verified_schedule(arch: str) -> None:
    """32768-element FP32 blocks on 32 warps: 256 registers per thread on one warp group,
    over the limit; the loads, the chain and the store are one instruction, the reduction
    stays its own, and Phase 2 finds a schedule the verifier accepts."""
    (lp,) = extract_loops(read_ttgir_file(CORPUS / f"wide_rows.{arch}.ttgir"), arch)
    streamed = [i for i in lp.graph.instructions if "streamed" in i.note]
    assert len(streamed) == 1 and streamed[0].note.startswith("tt.load + tt.load + arith.subf")
    assert not streamed[0].variable_latency and {"TMA", "FMA"} <= set(streamed[0].reservation)
    assert lp.reductions == 1 and any(i.note.startswith("tt.reduce") for i in lp.graph.instructions)
    assert sum(1 for *_, r in lp.accounting if r == STREAMED) == 5
    # the tile it hands to the reduction is held: spread over the compute warp groups
    groups = machine_for(arch).warps - 1
    assert streamed[0].warps == 4 * groups and streamed[0].regs == -(-32768 // (128 * groups))
    r = _solved(lp.graph)
    assert r.extra.get("phase1_I") is not None and r.I >= r.extra["phase1_I"]


def _wide_chain(streamed: bool) -> DependenceGraph:
    """Two wide pointer loads (variable latency, 128 registers each on H100's slot 0), an
    element-wise chain over both and a store: before streaming both loads are held on slot 0
    (256 > 240 registers); streamed, nothing wide is held."""
    wide = {"regs": 128, "warps": 8, "spill_cost": 3}
    ins = (
        Instruction("p", 4, {"TMA": (1,) * 4}, variable_latency=True, streaming=True,
                    unit="TMA", note="tt.load", **wide),
        Instruction("q", 4, {"TMA": (1,) * 4}, variable_latency=True, streaming=True,
                    unit="TMA", note="tt.load", **wide),
        Instruction("d", 1, {"FMA": (1,)}, unit="FMA", note="arith.subf", **wide),
        Instruction("e", 1, {"FMA": (1,)}, unit="FMA", note="arith.mulf", **wide),
        Instruction("s", 4, {"TMA": (1,) * 4}, variable_latency=True, unit="TMA",
                    note="tt.store"),
    )  # fmt: skip
    edges = (Edge("p", "d", 0), Edge("q", "d", 0), Edge("p", "e", 0), Edge("d", "e", 1),
             Edge("e", "s", 1))  # fmt: skip
    g = DependenceGraph("chain", ins, edges, machine_for("sm_90a"))
    if not streamed:
        return g
    names = ("tt.load", "tt.load", "arith.subf", "arith.mulf", "tt.store")
    ops = {i.name: TtgirOp(n, [], [], n, None, 1) for i, n in zip(ins, names, strict=True)}
    out, into = stream_wide(g, {"p", "q", "d", "e"}, ops)
    assert into == {"q": "p", "d": "p", "e": "p", "s": "p"}
    return out


def test_stream_wide_merges_a_built_chain_and_it_then_fits() -> None:
    raw = _wide_chain(streamed=False)
    unstreamed = twill_solve(raw, backend="cpsat", max_I=20)  # slot 0 cannot hold p and q
    assert unstreamed.I is None and unstreamed.status.value == "infeasible"
    g = _wide_chain(streamed=True)
    (only,) = g.instructions
    assert only.cycles == 14 and only.regs == 0 and not only.variable_latency
    assert only.reservation["TMA"] == (1,) * 8 + (0, 0) + (1,) * 4
    assert only.reservation["FMA"] == (0,) * 8 + (1, 1) + (0,) * 4
    assert register_conflict(g) is None
    assert _solved(g).I == 14  # the TMA unit, 12 of 14 cycles, and one op at a time


def test_tiles_of_a_plain_loop_span_the_kernels_warps_and_tensor_core_loops_keep_theirs() -> None:
    """softmax_loops (8 warps, no tensor-core op): every register tile on both H100 warp
    groups, as Triton's layout puts it; the shipped FlashAttention loop (tensor cores) keeps
    each tile on one warp group (Twill's warp-specialised model, unchanged)."""
    assert spread_warps(8, 3) == 8 and spread_warps(32, 3) == 8 and spread_warps(32, 4) == 12
    assert spread_warps(2, 3) == 0 and placement(2048, 240, 8) == (8, 8)
    assert placement(32768, 240, 0) == (128, 8) and placement(32768, 255, 12) == (86, 12)
    for lp in extract_loops(read_ttgir_file(CORPUS / "softmax_loops.sm_90a.ttgir"), "sm_90a"):
        assert all(i.warps == 8 for i in lp.graph.instructions if i.regs and not i.variable_latency)
    (fa,) = extract_loops(read_ttgir_file(SHIPPED_DIR / "fa_fwd.sm_90a.ttgir"), "sm_90a")
    assert {i.warps for i in fa.graph.instructions if i.regs} == {4}
    assert not any("streamed" in i.note for i in fa.graph.instructions)


def test_rows_held_across_their_reductions_are_refused_on_h100_with_the_proof(
    capsys: pytest.CaptureFixture[str],
) -> None:
    """Two 32768-element FP32 rows read by their row maxima and by the chain after them are
    held whole on H100's variable-latency slot (2 x 128 > 240 registers at every I): exit 2
    before any search, naming the limitation. On B200 (86 registers each over 12 warps) there
    is no such proof."""
    path = CORPUS / "wide_rows_held.sm_90a.ttgir"
    assert main(["solve", str(path), "--arch", "sm_90a", "--json"]) == 2
    err = capsys.readouterr().err
    assert "loop at line 16: no schedule at any I" in err and "both on the variable-latency" in err
    assert "no register spilling" in err
    (lp,) = extract_loops(read_ttgir_file(CORPUS / "wide_rows_held.sm_100a.ttgir"), "sm_100a")
    assert register_conflict(lp.graph) is None


def test_a_graph_written_by_import_triton_is_refused_as_its_kernel_is(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """The round trip gives the same answer: the H100 graph of ``wide_rows_held`` written by
    ``import-triton`` and solved as JSON exits 2 with the same register proof as the TTGIR
    (before, it searched I up to its range and ended in exit 1, "infeasible"). The corpus
    benchmark reports it as ``refused`` with the proof and the documented limitation."""
    import sys

    path, out = CORPUS / "wide_rows_held.sm_90a.ttgir", tmp_path / "g.json"
    assert main(["import-triton", str(path), "--arch", "sm_90a", "-o", str(out)]) == 0
    capsys.readouterr()
    assert main(["solve", str(out), "--json"]) == 2
    err = capsys.readouterr().err
    assert "graph 'wide_rows_held': no schedule at any I" in err
    assert "both on the variable-latency" in err and "no register spilling" in err
    sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "benchmarks"))
    from triton_corpus import run

    row = run("wide_rows_held", "sm_90a", time_limit=10)
    assert row["status"] == "refused" and row["loops"][0]["I"] is None
    assert "no schedule at any I" in row["message"] and "register spilling" in row["message"]
