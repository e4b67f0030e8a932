"""The corpus of Triton kernel shapes (tests/data/triton/, written for these tests): the loops
found, the operations per unit, every reduction present, every op accounted for; from the
checked-in TTGIR of both architectures (no Triton needed)."""

from __future__ import annotations

from collections import Counter
from pathlib import Path

import pytest

from twill.errors import InvalidProblemError
from twill.triton.costs import FOLD_REASONS
from twill.triton.extract import UNITS_PER_BOUND, extract_loops, pick_loop, read_ttgir_file
from twill.triton.ttgir import TtgirOp, parse_ttgir

CORPUS = Path(__file__).parents[1] / "data" / "triton"
SHIPPED = Path(__file__).parents[2] / "src" / "twill" / "data" / "triton"

#: kernel -> per loop (source line, units of its instructions on (sm_90a, sm_100a), reductions)
GOLDEN = {
    "attn_bwd4": [
        (28, {"TMA": 1, "TC": 1, "EXP": 2, "FMA": 8, "SMEM": 1}, {"TMEM": 1}, 2),
        (36, {"TMA": 2, "TC": 4, "EXP": 1, "FMA": 9, "SMEM": 6}, {"TMEM": 2}, 1),
        (49, {"TMA": 2, "TC": 3, "EXP": 1, "FMA": 8, "SMEM": 3}, {"SMEM": 2, "TMEM": 3}, 1),
        (57, {"TMA": 2, "FMA": 1}, {}, 0),
    ],
    "autotuned_gemm": [(30, {"TMA": 2, "SMEM": 2, "TC": 1}, {}, 0)],
    "early_return": [(17, {"TMA": 1}, {}, 0), (22, {"TMA": 1, "FMA": 2}, {}, 0),
                     (27, {"TMA": 2, "FMA": 1}, {}, 0)],
    "grouped_gemm_if": [(24, {"TMA": 2, "SMEM": 5, "TC": 1}, {"SMEM": 4, "TMEM": 1}, 0)],
    "helper_twice": [(15, {"TMA": 1, "FMA": 2, "EXP": 1}, {}, 0),
                     (15, {"TMA": 1, "FMA": 1, "EXP": 1}, {}, 0)],
    "layer_norm": [(16, {"TMA": 1, "FMA": 2}, {}, 0), (21, {"TMA": 1, "FMA": 5}, {}, 0),
                   (27, {"TMA": 4, "FMA": 6}, {}, 0)],
    "persistent_tma_gemm": [(32, {"TMA": 2, "TC": 1}, {}, 0)],
    "scaled_mma_gemm": [(17, {"TMA": 4, "SMEM": 5, "FMA": 6, "TC": 1},
                         {"SMEM": 4, "FMA": 0, "TMEM": 2}, 0)],
    "softmax_loops": [(16, {"TMA": 1, "FMA": 8, "EXP": 2}, {}, 2),
                      (22, {"TMA": 2, "FMA": 3, "EXP": 1}, {}, 0)],
    "wide_rows": [(17, {"FMA": 3}, {}, 1)],  # loads, chain and store streamed as one
    "wide_rows_held": [(16, {"TMA": 2, "FMA": 3}, {}, 2)],  # the loads feed the reductions
}  # fmt: skip
_ALLOWED = set(FOLD_REASONS) | {"instruction", "other branch"}


def _reductions_in(ops: list[TtgirOp]) -> int:
    """tt.reduce / tt.scan ops in a loop body, read from the parsed text (not the graph)."""
    n = 0
    for op in ops:
        n += op.name in ("tt.reduce", "tt.scan")
        if op.name not in ("scf.for", "scf.while"):
            n += sum(_reductions_in(r) for r in op.regions)
    return n


def _innermost(ops: list[TtgirOp], out: list[TtgirOp]) -> bool:
    found = False
    for op in ops:
        inner = any(_innermost(r, out) for r in op.regions)
        if op.name in ("scf.for", "scf.while"):
            found = True
            if not inner:
                out.append(op)
        found |= inner
    return found


@pytest.mark.parametrize("arch", ["sm_90a", "sm_100a"])
@pytest.mark.parametrize("kernel", sorted(GOLDEN))
def test_corpus_loops_units_and_reductions(kernel: str, arch: str) -> None:
    path = CORPUS / f"{kernel}.{arch}.ttgir"
    text = read_ttgir_file(path)
    loops = extract_loops(text, arch, source=str(path), normalize=False)
    golden = GOLDEN[kernel]
    assert [lp.line for lp in loops] == [g[0] for g in golden]
    bodies: list[TtgirOp] = []
    _innermost(parse_ttgir(text).ops, bodies)
    for lp, (_, hopper, blackwell, reductions), body in zip(loops, golden, bodies, strict=True):
        units = hopper if arch == "sm_90a" else {**hopper, **blackwell}
        assert Counter(i.unit for i in lp.graph.instructions) == +Counter(units)
        assert lp.reductions == reductions == _reductions_in(body.regions[0] + body.regions[-1]
                                                             if body.name == "scf.while"
                                                             else body.body)  # fmt: skip
        assert {r for *_, r in lp.accounting} <= _ALLOWED
        assert sum(1 for *_, r in lp.accounting if r == "instruction") == lp.ops


def test_tiny_loop_normalised_to_the_common_resolution() -> None:
    """The early-return copy loop on B200 (load, divide, store: no common divisor) filled
    U = 300 alone (I = 150 units, 45 initiation intervals examined, 124-513 s). Normalised
    again to a bound of at most UNITS_PER_BOUND units, it is solved and proven at the same I in
    SM clocks (399 at U = 300), and the answer passes the verifier."""
    from twill.sched.bounds import mii
    from twill.sched.problems import WarpSpecProblem
    from twill.twill_solver import twill_solve

    loops = extract_loops(read_ttgir_file(CORPUS / "early_return.sm_100a.ttgir"), "sm_100a")
    for lp in loops:
        assert mii(lp.graph) <= UNITS_PER_BOUND
    copy = loops[-1]
    r = twill_solve(copy.graph, backend="cpsat")
    assert r.optimal and r.warp_schedule is not None
    assert WarpSpecProblem(copy.graph).verify(r.warp_schedule).ok
    assert abs(r.I / copy.scale - 399) <= 1 / copy.scale  # one unit of the coarser scale
    # loops whose bound already fits keep the paper's U = 300 (the FA forward graphs)
    (fa,) = extract_loops(read_ttgir_file(SHIPPED / "fa_fwd.sm_90a.ttgir"), "sm_90a")
    assert mii(fa.graph) == 28


def test_a_loop_with_more_costs_than_the_budget_keeps_their_ratios() -> None:
    """A chain of 160 ops (3 and 97 SM clocks) has 319 costs, more than U = 300: it was
    refused ("keep_positive needs U >= 319"; a tl.sort in a loop has 436). It gets four units
    per cost: every cost at least one unit, and a 97-clock op well above a 3-clock one (one
    unit per cost would make every cost one unit)."""
    from twill.sched.ir import DependenceGraph, Edge, Instruction
    from twill.sched.machines import machine_for
    from twill.sched.normalize import graph_costs
    from twill.triton.extract import LARGE_LOOP_UNITS_PER_COST, normalise_loop

    clk = [3 if k % 2 else 97 for k in range(160)]
    ops = tuple(Instruction(f"v{k}", c, {"FMA": (1,) * c}, unit="FMA", note=f"arith.addf ({c} clk)")
                for k, c in enumerate(clk))  # fmt: skip
    edges = tuple(Edge(f"v{k}", f"v{k + 1}", clk[k]) for k in range(159))
    graph = DependenceGraph("long", ops, edges, machine_for("sm_90a"))
    n_costs = len(graph_costs(graph)[0])
    assert n_costs == 319
    normed, report = normalise_loop(graph)
    assert min(report.solution.scaled) >= 1
    assert 300 < sum(report.solution.scaled) <= LARGE_LOOP_UNITS_PER_COST * n_costs
    big, small = normed.instruction("v0").cycles, normed.instruction("v1").cycles
    assert big >= 5 * small


def test_helper_called_twice_gives_two_loops_told_apart_by_the_call() -> None:
    """One helper inlined at lines 27 and 28: two loops at source line 15, each with its call;
    --loop 15 is ambiguous and says which call lines to give; --loop 28 picks the second. The
    masked pass keeps its tl.where (an arith.select on floats at the select rate, 64/clk)."""
    path = CORPUS / "helper_twice.sm_90a.ttgir"
    loops = extract_loops(read_ttgir_file(path), "sm_90a", normalize=False)
    assert [(lp.line, lp.calls) for lp in loops] == [(15, (27,)), (15, (28,))]
    assert len({lp.graph.name for lp in loops}) == 2
    with pytest.raises(InvalidProblemError, match="give the line of its call instead: 27 or 28"):
        pick_loop(loops, 15, str(path))
    assert pick_loop(loops, 28, str(path)) is loops[1]
    (select,) = [i for i in loops[0].graph.instructions if "select" in i.note]
    assert select.unit == "FMA" and select.cycles == 1024 // 64


def test_corpus_nesting_and_branches_are_reported() -> None:
    """The persistent GEMM's tile loop and the grouped GEMM's while loop are context with a
    stated cost; the grouped GEMM's if is predicated on its costlier branch."""
    (tiles,) = extract_loops(read_ttgir_file(CORPUS / "persistent_tma_gemm.sm_90a.ttgir"),
                             "sm_90a", normalize=False)  # fmt: skip
    assert [(c.line, c.ops) for c in tiles.context] == [(28, 3)] and tiles.context[0].cycles > 0
    (k_loop,) = extract_loops(read_ttgir_file(CORPUS / "grouped_gemm_if.sm_90a.ttgir"),
                              "sm_90a", normalize=False)  # fmt: skip
    assert [c.line for c in k_loop.context] == [16]
    assert k_loop.notes and "scf.if at line 26: predicated" in k_loop.notes[0]
    assert any(r == "other branch" for *_, r in k_loop.accounting)


def test_scaled_and_fp8_mma_cost_at_their_rates() -> None:
    """B200's tc_gen5_mma_scaled on FP8 runs at twice the FP16 rate: 2*128*128*128 / 16384."""
    (lp,) = extract_loops(read_ttgir_file(CORPUS / "scaled_mma_gemm.sm_100a.ttgir"), "sm_100a",
                          normalize=False)  # fmt: skip
    (tc,) = [i for i in lp.graph.instructions if i.unit == "TC"]
    assert tc.note.startswith("ttng.tc_gen5_mma_scaled") and tc.cycles == 256


def test_autotuned_kernel_compiles_with_each_config() -> None:
    pytest.importorskip("triton")
    from twill.triton import import_triton_loops

    spec = f"{CORPUS / 'autotuned_gemm.py'}:autotuned_gemm"
    first = import_triton_loops(spec, "sm_90a")
    assert "config 0 of 2" in first.notes[0] and "num_stages=1" in first.notes[-1]
    second = import_triton_loops(spec, "sm_90a", config=1)
    assert "BM=64" in second.notes[0] and "num_warps=4" in second.notes[0]
    assert second.picked.cycles < first.picked.cycles  # a smaller tile


_UNROLLED = """
import triton
import triton.language as tl


@triton.jit
def scale(x_ptr, y_ptr, n, BLOCK: tl.constexpr):
    for off in tl.range(0, n, BLOCK, loop_unroll_factor=UNROLL):
        cols = off + tl.arange(0, BLOCK)
        x = tl.load(x_ptr + cols, mask=cols < n)
        tl.store(y_ptr + cols, tl.exp(x), mask=cols < n)
"""


@pytest.mark.parametrize("unroll", [1, 2])
def test_a_loop_asking_to_be_unrolled_is_read_as_written(tmp_path: Path, unroll: int) -> None:
    """``tl.range(..., loop_unroll_factor=2)``: Triton unrolls in its TTIR stage, so the
    request is removed before it (it was removed only after: two loops at line 8, an unrolled
    body of 6 ops and a remainder of 3). One loop of 3 ops, as with no request."""
    pytest.importorskip("triton")
    from twill.triton import import_triton_loops

    (tmp_path / "unrolled.py").write_text(_UNROLLED.replace("UNROLL", str(unroll)), "utf-8")
    got = import_triton_loops(f"{tmp_path / 'unrolled.py'}:scale", "sm_90a",
                              signature={"x_ptr": "*fp32", "y_ptr": "*fp32", "n": "i32"},
                              constexprs={"BLOCK": 1024}, num_warps=4)  # fmt: skip
    assert [(lp.line, lp.ops) for lp in got.loops] == [(8, 3)]
    assert "loop_unroll_factor" in got.notes[-1]


def test_solve_takes_the_kernel_flags(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """``solve FILE.py:KERNEL`` takes --constexpr/--num-warps/--loop as import-triton does; a
    dtype constexpr on the command line; the compile notes are printed."""
    pytest.importorskip("triton")
    import json

    from twill.cli import main

    spec = f"{CORPUS / 'early_return.py'}:early_return"
    args = ["--arch", "sm_90a", "--constexpr", "BLOCK=256", "--num-warps", "4", "--loop", "17"]
    assert main(["solve", spec, *args, "--json"]) == 0
    out = json.loads(capsys.readouterr().out)
    assert out["loop"] == 17 and [e["line"] for e in out["loops"]] == [17]
    assert any("num_stages=1" in n for n in out["notes"])
    gemm = f"{CORPUS / 'autotuned_gemm.py'}:autotuned_gemm"
    target = tmp_path / "g.json"
    assert main(["import-triton", gemm, "--arch", "sm_100a", "--constexpr", "OUT=tl.bfloat16",
                 "--config", "1", "-o", str(target)]) == 0  # fmt: skip
    printed = capsys.readouterr().out
    assert "config 1 of 2" in printed and "line 30" in printed
    assert json.loads(target.read_text(encoding="utf-8"))["arch"] == "sm_100a"
    assert main(["import-triton", gemm, "--arch", "sm_90a", "--config", "5"]) == 2
    assert "--config 5 out of range" in capsys.readouterr().err


def test_registers_too_wide_for_the_warp_groups_are_named() -> None:
    """A wide element-wise chain (each result 128 registers on two of H100's three slots):
    an op reading two of them has no schedule at any I, and the reason says so; with one
    warp slot each the same chain fits (no claim)."""
    from twill.sched.ir import DependenceGraph, Edge, Instruction
    from twill.sched.machines import machine_for
    from twill.triton import explain_joint_I, register_conflict

    def chain(warps: int) -> DependenceGraph:
        ops = tuple(Instruction(n, 2, {"FMA": (1, 1)}, regs=128, warps=warps, unit="FMA",
                                note="arith.mulf") for n in "abv")  # fmt: skip
        edges = (Edge("a", "b", 2), Edge("a", "v", 2), Edge("b", "v", 2))
        return DependenceGraph("wide", ops, edges, machine_for("sm_90a"))

    why = register_conflict(chain(8))
    assert why is not None and "no schedule at any I: v" in why and "128 + 128" in why
    assert register_conflict(chain(4)) is None
    # the exact search agrees: nothing up to I = 12 with two slots each, a schedule with one
    from twill.twill_solver import twill_solve

    wide = twill_solve(chain(8), backend="cpsat", max_I=12)
    assert wide.I is None and wide.status.value == "infeasible"
    assert twill_solve(chain(4), backend="cpsat", max_I=12).I is not None
    # without a proof for every I, the relaxation probe names the rule (same answer here)
    why = explain_joint_I(chain(8), wide)
    assert why is not None and why.startswith(
        "no schedule up to the maximum I because of the register"
    )
