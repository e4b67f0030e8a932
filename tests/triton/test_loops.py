"""Triton front end on whole kernels: every loop, every op accounted, reductions, malformed
TTGIR (checked-in TTGIR; no Triton needed)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from twill.cli import main
from twill.errors import InputFormatError, InvalidProblemError
from twill.triton import SHIPPED_DIR
from twill.triton.costs import FOLD_REASONS
from twill.triton.extract import extract_loops, read_ttgir_file

CORPUS = Path(__file__).parents[1] / "data" / "triton"
_ALLOWED = set(FOLD_REASONS) | {"instruction", "other branch"}


def _loops(path: Path, arch: str, **kw: object):  # noqa: ANN202
    return extract_loops(read_ttgir_file(path), arch, source=str(path), normalize=False, **kw)


def _every_op_accounted(loop) -> None:  # noqa: ANN001
    """Each op of the body is an instruction, folded for a documented reason, or in a dropped
    branch of a predicated scf.if; the instructions counted match the graph."""
    assert {reason for _, _, reason in loop.accounting} <= _ALLOWED
    assert sum(1 for *_, r in loop.accounting if r == "instruction") == loop.ops


@pytest.mark.parametrize("arch", ["sm_90a", "sm_100a"])
@pytest.mark.parametrize("kernel", ["fa_fwd", "fa_fwd_plain", "fa_bwd", "gemm"])
def test_shipped_kernels_keep_every_reduction(kernel: str, arch: str) -> None:
    (loop,) = _loops(SHIPPED_DIR / f"{kernel}.{arch}.ttgir", arch)
    text = read_ttgir_file(SHIPPED_DIR / f"{kernel}.{arch}.ttgir")
    assert loop.reductions == text.count('"tt.reduce"')  # all in the loop body here
    assert {"fa_fwd": 4, "fa_fwd_plain": 2}.get(kernel, 0) == loop.reductions
    _every_op_accounted(loop)


def test_reduction_cost_follows_the_layout() -> None:
    """Row max of a 64x128 FP32 tile in the wgmma layout (4 lanes along a row, one warp):
    8192 max / 64 per clock in threads, then 2 shuffle rounds of 256 partials at 32 shuffles
    and 64 max per clock: 128 + 24 = 152 clocks; the row sum (adds, 128 per clock): 64 + 20."""
    (loop,) = _loops(SHIPPED_DIR / "fa_fwd.sm_90a.ttgir", "sm_90a")
    reds = [i.cycles for i in loop.graph.instructions if i.note.startswith("tt.reduce")]
    assert reds == [152, 84, 152, 84]


def test_early_return_kernel_has_three_loops_and_the_costliest_is_picked() -> None:
    loops = _loops(CORPUS / "early_return.sm_90a.ttgir", "sm_90a")
    assert [lp.line for lp in loops] == [17, 22, 27]
    assert [lp.ops for lp in loops] == [1, 3, 3]  # store; load + 2 FMA; load + div + store
    for lp in loops:
        _every_op_accounted(lp)
    assert "predicated" in loops[2].notes[0] and loops[2].reductions == 0
    # a pointer load of 1024 FP32 at 13.9 B/clk/SM: 295 clocks
    assert [i.cycles for i in loops[1].graph.instructions][0] == 295
    from twill.triton.extract import pick_loop

    assert pick_loop(loops, None, "x").line == 27 and pick_loop(loops, 22, "x").line == 22
    with pytest.raises(InvalidProblemError, match=r"--loop 5: .* 17, 22, 27"):
        pick_loop(loops, 5, "x")


def test_solve_reports_every_loop(capsys: pytest.CaptureFixture[str]) -> None:
    path = CORPUS / "early_return.sm_90a.ttgir"
    assert main(["solve", str(path), "--arch", "sm_90a", "--json"]) == 0
    out = json.loads(capsys.readouterr().out)
    assert out["loop"] == 27 and [e["line"] for e in out["loops"]] == [17, 22, 27]
    for e in out["loops"]:
        assert {"line", "ops", "reductions", "I", "L", "optimal", "warps"} <= set(e)
    assert out["I"] == out["loops"][2]["I"]
    assert main(["solve", str(path), "--arch", "sm_90a", "--json", "--loop", "22"]) == 0
    out = json.loads(capsys.readouterr().out)
    assert [e["line"] for e in out["loops"]] == [22] and out["loop"] == 22


def test_loop_entry_counts_every_warp_slot_an_op_spans(capsys: pytest.CaptureFixture[str]) -> None:
    """softmax_loops' second loop (8 warps, no tensor core): its tiles span two warp groups
    (the union's answer is one partition on all 8 warps, loads included). Each loop entry
    gives every slot of each op (``assignment``) and the text counts every slot used (it
    counted each op's first slot only)."""
    path = str(CORPUS / "softmax_loops.sm_90a.ttgir")
    assert main(["solve", path, "--arch", "sm_90a", "--loop", "22", "--json"]) == 0
    (e,) = json.loads(capsys.readouterr().out)["loops"]
    spans = {w for ws in e["assignment"].values() for w in ws}
    assert len(spans) >= 2 and e["warps"] == {v: min(ws) for v, ws in e["assignment"].items()}
    assert any(len(ws) == 2 for ws in e["assignment"].values())
    assert main(["solve", path, "--arch", "sm_90a", "--loop", "22"]) == 0
    assert f"warp slots used {len(spans)}" in capsys.readouterr().out


def test_graph_json_records_arch_and_solves_the_same(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    src = str(SHIPPED_DIR / "gemm.sm_90a.ttgir")
    out = tmp_path / "g.json"
    assert main(["import-triton", src, "--arch", "sm_90a", "-o", str(out)]) == 0
    assert json.loads(out.read_text(encoding="utf-8"))["arch"] == "sm_90a"
    capsys.readouterr()
    assert main(["solve", src, "--arch", "sm_90a", "--json"]) == 0
    direct = json.loads(capsys.readouterr().out)
    assert main(["solve", str(out), "--json"]) == 0
    saved = json.loads(capsys.readouterr().out)
    assert saved["backend"] == direct["backend"] == "cpsat"
    assert (saved["I"], saved["L"], saved["schedule"]) == (direct["I"], direct["L"],
                                                           direct["schedule"])  # fmt: skip


_BASE = """module attributes {ttg.target = "cuda:90", "ttg.num-warps" = 4 : i32} {
  tt.func public @k(%a: i32 loc("a"(#loc)), %p: tensor<64xf32> loc("p"(#loc))) {
    %r = scf.for %i = %a to %a step %a iter_args(%x = %p) -> (tensor<64xf32>)  : i32 {
      %y = math.exp2 %x : tensor<64xf32> loc(#loc2)
      scf.yield %y : tensor<64xf32> loc(#loc2)
    } loc(#loc2)
    tt.return loc(#loc)
  } loc(#loc)
} loc(#loc)
#loc = loc("k.py":1:1)
#loc2 = loc("k.py":7:9)
"""

HOSTILE = {
    "unknown element type": (("math.exp2 %x : tensor<64xf32>", "math.exp2 %x : tensor<64xq7>"),
                             r"line 4: unknown element type 'q7'"),
    "negative shape": (("math.exp2 %x : tensor<64xf32>", "math.exp2 %x : tensor<-4xf32>"),
                       r"line 4: tensor dimension -4 is not positive"),
    "zero shape": (("math.exp2 %x : tensor<64xf32>", "math.exp2 %x : tensor<0xf32>"),
                   r"line 4: tensor dimension 0 is not positive"),
    "undefined value": (("math.exp2 %x :", "math.exp2 %nowhere :"),
                        r"line 4: SSA value %nowhere is used but never defined"),
    "duplicate value": (("%y = math.exp2", "%x = math.exp2"),
                        r"line 4: SSA value %x is defined twice"),
    "missing yield": (("      scf.yield %y : tensor<64xf32> loc(#loc2)\n", ""),
                      r"line 3: scf.for carries 1 value\(s\) but its body does not end"),
    "unclosed region": (("    } loc(#loc2)\n    tt.return loc(#loc)\n  } loc(#loc)\n} loc(#loc)\n",
                         ""), r"line 3: unclosed region of scf.for"),
}  # fmt: skip


def test_a_warp_specialised_ttgir_is_refused_with_its_line(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """A TTGIR saved after Triton's warp specialisation (each partition a copy of the loop,
    its values region arguments) was read as one partition's loop, or refused as malformed
    ("SSA value %arg14 is used but never defined"). It is refused naming the op's line and
    the way in that works."""
    ws = "    %w:2 = ttg.warp_specialize(%a) attributes {requestedRegisters = array<i32: 24>}\n"
    text = _BASE.replace("    tt.return loc(#loc)\n", ws + "    tt.return loc(#loc)\n")
    path = tmp_path / "k.ttgir"
    path.write_text(text, encoding="utf-8")
    assert main(["solve", str(path)]) == 2  # read for its own target, cuda:90
    err = capsys.readouterr().err
    assert "k.ttgir: line 7: ttg.warp_specialize" in err and "FILE.py:KERNEL" in err
    assert "Traceback" not in err


@pytest.mark.parametrize("case", sorted(HOSTILE))
def test_malformed_ttgir_is_a_clear_error(case: str) -> None:
    (old, new), message = HOSTILE[case]
    assert old in _BASE
    with pytest.raises(InputFormatError, match=message):
        extract_loops(_BASE.replace(old, new), "sm_90a")


@pytest.mark.parametrize("case", ["unknown element type", "missing yield"])
def test_malformed_ttgir_file_exits_2(
    case: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    (old, new), _ = HOSTILE[case]
    path = tmp_path / "bad.ttgir"
    path.write_text(_BASE.replace(old, new), encoding="utf-8")
    assert main(["solve", str(path), "--arch", "sm_90a"]) == 2
    err = capsys.readouterr().err
    assert "bad.ttgir" in err and "Traceback" not in err


def test_non_utf8_and_oversized_ttgir_exit_2(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    path = tmp_path / "bin.ttgir"
    path.write_bytes(b"\xff\xfe module \x80")
    assert main(["import-triton", str(path), "--arch", "sm_90a"]) == 2
    assert "not a UTF-8 text file" in capsys.readouterr().err
    import twill.text

    path.write_text(_BASE, encoding="utf-8")
    monkeypatch.setattr(twill.text, "MAX_INPUT_BYTES", 100)
    assert main(["solve", str(path), "--arch", "sm_90a"]) == 2
    assert "100-byte limit" in capsys.readouterr().err


_OPS_LOOP = (
    _BASE.replace('"cuda:90"', '"cuda:CAP"')
    .replace('%a: i32 loc("a"(#loc)), %p: tensor<64xf32> loc("p"(#loc))', "ARGS")
    .replace("      %y = math.exp2", "      OP\n      %y = math.exp2")
)
_F8 = "tensor<128x64xf8E4M3FN>"
_I8 = "tensor<128x64xi8>"
_F8T = "tensor<64x128xf8E4M3FN>"
_I8T = "tensor<64x128xi8>"
NEW_OPS = {
    # op line, arch, unit (None: folded), SM clocks
    "bitcast": ("%v = tt.bitcast %x : tensor<64xf32> -> tensor<64xi32>", "sm_90a", None, 0),
    "atomic add": ("%v = tt.atomic_rmw fadd, acq_rel, gpu, %ptrs, %x : (tensor<64x!tt.ptr<f32>>,"
                   " tensor<64xf32>) -> tensor<64xf32>", "sm_90a", "TMA", 37),  # 512 B / 13.9
    "fp8 dot": (f"%c = arith.constant dense<0.0> : {_F8}\n%e = arith.constant dense<0.0> : "
                f"{_F8T}\n%v = tt.dot %c, %e, %c : {_F8} * {_F8T} -> tensor<128x128xf32>",
                "sm_90a", "TC", 256),  # 2*128*128*64 / 8192
    "gather": ("%g = tt.descriptor_gather %desc[%a, %a] : (!tt.tensordesc<tensor<1x128xf16>>, "
               "i32, i32) -> tensor<32x128xf16>", "sm_100a", "TMA", 64),  # 8 KiB / 128
    "tmem copy": ("%s = ttg.local_alloc : () -> !ttg.memdesc<128x32xi8, #shared, #smem>\n"
                  "%t = ttng.tmem_alloc : () -> !ttg.memdesc<128x32xi8, #tm, "
                  "#ttng.tensor_memory>\nttng.tmem_copy %s, %t : !ttg.memdesc<128x32xi8, "
                  "#shared, #smem>, !ttg.memdesc<128x32xi8, #tm, #ttng.tensor_memory>",
                  "sm_100a", "TMEM", 32),  # 4 KiB from shared memory at 128 B/clk
    "fp4 dot_scaled": (f"%c = arith.constant dense<0> : {_I8}\n%e = arith.constant dense<0> : "
                       f"{_I8T}\n%s = arith.constant dense<0> : tensor<128x4xi8>\n%v = "
                       "tt.dot_scaled %c scale %s, %e scale %s, %x lhs = e2m1 rhs = e2m1 : "
                       f"{_I8}, tensor<128x4xi8> * {_I8T}, tensor<128x4xi8> -> "
                       "tensor<128x128xf32>", "sm_100a", "TC", 128),  # K 128: 4x FP16's rate
}  # fmt: skip


@pytest.mark.parametrize("case", sorted(NEW_OPS))
def test_newer_operations_cost_at_their_rates(case: str) -> None:
    line, arch, unit, cycles = NEW_OPS[case]
    args = "%a: i32, %p: tensor<64xf32>, %ptrs: tensor<64x!tt.ptr<f32>>, %desc: !tt.tensordesc<"
    text = _OPS_LOOP.replace("CAP", arch[3:-1]).replace("OP", line)
    text = text.replace("ARGS", args + "tensor<1x128xf16>>")  # one line, as Triton prints it
    (loop,) = extract_loops(text, arch, normalize=False)
    mine = [i for i in loop.graph.instructions if i.name != "EXP_y"]
    if unit is None:
        assert mine == [] and any(r.startswith("view") for *_, r in loop.accounting)
    else:
        assert [(i.unit, i.cycles) for i in mine] == [(unit, cycles)]


def test_large_joint_I_names_its_cause() -> None:
    from twill.kernels import KERNELS
    from twill.triton import explain_joint_I
    from twill.twill_solver import twill_solve

    g = KERNELS["flash_attention_backward_hopper"]()
    r = twill_solve(g, backend="cpsat")
    assert r.I > r.extra["phase1_I"]
    assert "cross-warp register hand-offs" in explain_joint_I(g, r)
    assert (
        explain_joint_I(g, twill_solve(KERNELS["simple_gemm_pipeline"](), backend="cpsat")) is None
    )


def test_a_spin_wait_loop_is_not_a_kernel_loop() -> None:
    """A lock's spin wait (layer-norm backward of Triton's tutorial 05) is not scheduled as the
    kernel's loop: alone, it is a refusal naming the limitation."""
    text = """module attributes {ttg.target = "cuda:90", "ttg.num-warps" = 4 : i32} {
  tt.func public @k(%lock: !tt.ptr<i32>, %a: i32) {
    scf.for %i = %a to %a step %a  : i32 {
      %v = tt.atomic_cas acq_rel, gpu, %lock, %a, %a : (!tt.ptr<i32>, i32, i32) -> i32 loc(#loc2)
    } loc(#loc2)
    tt.return loc(#loc)
  } loc(#loc)
} loc(#loc)
#loc = loc("k.py":1:1)
#loc2 = loc("k.py":4:5)
"""
    with pytest.raises(InvalidProblemError, match=r"line 4\) wait on a lock \(spin-wait"):
        extract_loops(text, "sm_90a")


def test_a_compiler_hint_in_the_loop_is_folded() -> None:
    """``tl.assume`` in a loop is ``llvm.intr.assume``: no code, folded with its reason (it was
    refused as an operation with no functional-unit mapping)."""
    hint = "      %t = arith.cmpi sgt, %a, %a : i32 loc(#loc2)\n" \
        "      llvm.intr.assume %t : i1 loc(#loc2)\n"  # fmt: skip
    text = _BASE.replace("      %y = math.exp2", hint + "      %y = math.exp2")
    (loop,) = extract_loops(text, "sm_90a", normalize=False)
    assert loop.ops == 1 and ("llvm.intr.assume", "compiler hint (no code)") in {
        (name, reason) for _, name, reason in loop.accounting
    }
    _every_op_accounted(loop)


def test_a_register_gather_costs_a_pass_through_shared_memory() -> None:
    """``tl.gather`` (``tt.gather``) was refused as an operation with no unit mapping; it is
    an SMEM instruction of one pass of its 64 x 4 bytes at 128 bytes per clock: 2 clocks."""
    gather = "      %j = arith.fptosi %x : tensor<64xf32> to tensor<64xi32> loc(#loc2)\n" \
        "      %g = tt.gather %x[%j] {axis = 0 : i32} : (tensor<64xf32>, tensor<64xi32>) " \
        "-> tensor<64xf32> loc(#loc2)\n"  # fmt: skip
    text = _BASE.replace("      %y = math.exp2 %x", gather + "      %y = math.exp2 %g")
    (loop,) = extract_loops(text, "sm_90a", normalize=False)
    units = {i.note.split()[0]: (i.unit, i.cycles) for i in loop.graph.instructions}
    assert units == {"tt.gather": ("SMEM", 2), "math.exp2": ("EXP", 4)}
    _every_op_accounted(loop)


def test_a_loop_without_a_schedule_is_listed_with_its_status() -> None:
    """A loop solved without an answer is listed as 'no schedule (infeasible)' (it printed
    'I = None (not proven optimal, about None SM clocks), L = None'); the total is left out."""
    from twill.cli.triton_cmd import format_loops

    entry = {"line": 81, "ops": 20, "reductions": 2, "cycles": 7578, "I": None, "L": None,
             "optimal": False, "status": "infeasible", "I_clk": None, "context": [],
             "notes": [], "why_I": "no schedule up to the maximum I"}  # fmt: skip
    text = format_loops([entry], ())
    assert "line 81: 20 ops, 2 reductions, 7578 SM clocks one after another, no schedule " \
        "(infeasible)" in text  # fmt: skip
    assert "None" not in text and "total" not in text


def test_solve_takes_no_normalize_as_import_triton_does(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """``solve FILE --no-normalize`` solves in SM clocks (it was an unknown flag: solve takes
    every flag import-triton takes); the early-return kernel's load-scale-store loop is bound
    by its 295-clock load. On a graph file the flag is refused, as the other kernel flags are."""
    path = str(CORPUS / "early_return.sm_90a.ttgir")
    args = ["solve", path, "--arch", "sm_90a", "--loop", "22", "--json"]
    assert main([*args, "--no-normalize"]) == 0
    out = json.loads(capsys.readouterr().out)
    assert (out["I"], out["time_unit"], out["optimal"]) == (295, "cycles", True)
    graph = tmp_path / "g.json"
    assert main(["import-triton", path, "--arch", "sm_90a", "--loop", "22", "-o", str(graph)]) == 0
    capsys.readouterr()
    assert main(["solve", str(graph), "--no-normalize"]) == 2
    assert "--no-normalize only apply to a Triton" in capsys.readouterr().err
