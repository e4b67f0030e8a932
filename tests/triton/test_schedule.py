"""Twill's schedule into Triton and Triton's schedule into Twill's model (issue 41).

The pinned solver is tested on the shipped GEMM graph (no Triton needed). The Triton tests
compile each shipped kernel on both architectures once per session (a few seconds each) and
check the read-back: the pipelined loop's prologue depth and every matched operation's stage
are the ones written from Twill's schedule.
"""

from __future__ import annotations

import json
from functools import cache
from pathlib import Path

import pytest

from twill.cli import main
from twill.results import Status
from twill.sched.exact.pinned import Pins, pins_hold, solve_pinned
from twill.sched.problems import PROBLEM_UNION
from twill.sched.verify_warps import verify_warp_schedule
from twill.triton import SHIPPED_DIR, SHIPPED_VARIANTS, import_triton, kernel_spec, shipped_spec

KERNELS = SHIPPED_DIR / "kernels.py"
GEMM = {"TMA_a_blk": 0, "TMA_b_blk": 0, "TC_acc": 2}  # Triton's default stages on the GEMM


def _gemm(arch: str):  # noqa: ANN202
    return import_triton(SHIPPED_DIR / f"gemm.{arch}.ttgir", arch)


def test_pinned_stages_hold_and_length_is_the_span() -> None:
    g = _gemm("sm_90a")
    pins = Pins(GEMM, (("TC_acc", "TMA_a_blk", "TMA_b_blk"),), {"TC_acc": (1,)})
    r = solve_pinned(g, pins)
    ws = r.solution
    assert r.status is Status.OPTIMAL and ws.I == 8 and r.objective == 8
    assert pins_hold(pins, ws.schedule, ws.I)
    assert verify_warp_schedule(g, ws.schedule, ws.assignment, ws.I, ws.L) == []
    # the MMA two stages after its loads: the iteration spans more than two I, less than three
    assert 2 * ws.I < ws.L < 3 * ws.I
    # I = 8 was shown feasible by a schedule built without a solver (verified); Phase 2 then
    # only searched below its length
    built = [p for p in r.certificate if p[2] == "sat_constructed"]
    assert built == [[8, built[0][1], "sat_constructed"]] and built[0][1] > ws.L
    free = solve_pinned(g, Pins({}, (), None)).solution
    assert free.I == 8 and free.L < ws.L  # Twill's own optimum: same I, shorter L


def test_impossible_stages_are_infeasible() -> None:
    g = _gemm("sm_100a")
    # the MMA a stage before the loads it reads, in the same iteration
    r = solve_pinned(g, Pins({"TMA_a_blk": 1, "TMA_b_blk": 1, "TC_acc": 0}))
    assert r.status is Status.INFEASIBLE and r.solution is None


def test_match_contradicting_a_dependence_is_found() -> None:
    """A body order that puts the MMA before a load it reads, in one stage, is a wrong match
    (no start times meet it), reported as such and never priced as infeasible."""
    from twill.triton.peer import order_contradictions

    g = _gemm("sm_90a")
    good = Pins({"TMA_a_blk": 0, "TC_acc": 0}, (("TMA_a_blk", "TC_acc"),))
    bad = Pins({"TMA_a_blk": 0, "TC_acc": 0}, (("TC_acc", "TMA_a_blk"),))
    assert order_contradictions(g, good) == []
    assert order_contradictions(g, bad) == [("TMA_a_blk", "TC_acc")]
    assert order_contradictions(g, Pins(GEMM, (("TC_acc", "TMA_a_blk"),))) == []  # stages apart


def test_unknown_pinned_op_is_named() -> None:
    from twill.errors import InvalidProblemError

    with pytest.raises(InvalidProblemError, match="nope"):
        solve_pinned(_gemm("sm_90a"), Pins({"nope": 0}))


SCHEDULES = Path(__file__).resolve().parents[1] / "data" / "triton_schedules"
#: How Triton 3.9 takes Twill's partitions (its generic warp_specialize pass, run on both
#: architectures): applied, or the diagnostic or pass that rejects them (the summary must name
#: it); a Phase-1-only schedule has no warp assignment to apply.
PARTITIONS = {
    ("gemm", "sm_90a"): "applied",
    ("gemm", "sm_100a"): "applied",
    ("fa_fwd", "sm_90a"): "NVWSInsertAref",
    ("fa_fwd_plain", "sm_90a"): "applied",
    ("fa_fwd", "sm_100a"): "'tt.reduce' op partition ids",
    ("fa_fwd_plain", "sm_100a"): "'scf.for' op using value defined outside the region",
    ("fa_bwd", "sm_90a"): "NVWSInsertAref",
    ("fa_bwd", "sm_100a"): "NVWSInsertAref",
}

#: Twill instructions with no operation in the loop Triton schedules: on the 8-warp B200
#: forward, the two layout conversions of O that the extraction (num_stages=1) prints are not
#: in Triton's IR at num_stages=3 (its TMEM loads take another layout there).
NOT_EXPRESSED = {("fa_fwd_plain", "sm_100a"): ["SMEM_acc_28", "SMEM_acc_30"]}


def _schedule(name: str, arch: str) -> dict:
    """Twill's schedule of the shipped kernel, checked in (``generate.py`` beside it says
    how it was solved)."""
    return json.loads((SCHEDULES / f"{name}.{arch}.json").read_text())


@pytest.mark.parametrize("arch", ["sm_90a", "sm_100a"])
@pytest.mark.parametrize("name", list(SHIPPED_VARIANTS))
def test_checked_in_schedules_are_twills(name: str, arch: str) -> None:
    """The checked-in schedules pass the verifier on the shipped kernels' graphs as extracted
    now (else regenerate them: tests/data/triton_schedules/generate.py)."""
    from twill.sched.verify import verify_modulo_schedule

    g = import_triton(SHIPPED_DIR / f"{name}.{arch}.ttgir", arch)
    s = _schedule(name, arch)
    assert set(s["schedule"]) == set(g.names)
    if s["assignment"]:
        assert verify_warp_schedule(g, s["schedule"], s["assignment"], s["I"], s["L"]) == []
    else:
        assert s["how"].startswith("Phase 1 only")
        assert verify_modulo_schedule(g, s["schedule"], s["I"]) == []


@cache
def _compiled(name: str, arch: str):  # noqa: ANN202
    """Compile one shipped kernel with Twill's checked-in schedule (cached for the session;
    the solve itself is ``twill compile``'s, tested on the GEMM below)."""
    from twill.triton.build import private_cache
    from twill.triton.peer import compile_twill, twill_graph

    ks = shipped_spec(name, arch)
    s = _schedule(name, arch)
    slots = {v: tuple(w) if isinstance(w, list) else w for v, w in s["assignment"].items()}
    with private_cache():
        lp, ttgir = twill_graph(ks)
        return compile_twill(ks, s["schedule"], slots, s["I"], s["L"], lp, ttgir)


@pytest.mark.slow
@pytest.mark.parametrize("arch", ["sm_90a", "sm_100a"])
@pytest.mark.parametrize("name", list(SHIPPED_VARIANTS))
def test_twill_schedule_survives_the_pipeliner(name: str, arch: str) -> None:
    """After Triton's pipeliner, each op's stage (its copies in the prologue) and each op's
    ``ttg.warp_specialize`` region are Twill's, or the summary names the decision Triton did
    not take: the stage it moved (both stages), the partitions it did not apply (why)."""
    pytest.importorskip("triton")
    from twill.triton.schedule import twill_stages

    s = _compiled(name, arch)
    d = s.data
    written = {v: st for v, (st, _) in twill_stages(_schedule(name, arch)["schedule"],
                                                     d["I"]).items()}  # fmt: skip
    assert d["stages"] == written
    assert d["changed"]["not_expressed"] == NOT_EXPRESSED.get((name, arch), [])
    changed = d["changed"]["stages"]
    missing = set(d["changed"]["not_expressed"])
    assert set(d["kept"]["stages"]) | set(changed) | missing == set(written)  # every op
    assert all(c["twill"] == written[v] and c["triton"] is not None for v, c in changed.items())
    assert len(s.build.cubin) > 1000 and ".entry" in s.build.ptx
    parts = d["partitions"]
    expected = PARTITIONS.get((name, arch), "no warp assignment")
    if expected != "applied":  # stages alone: Hopper keeps every one, to the op
        assert not parts["applied"] and expected in parts["why"]
        assert d["changed"]["partitions"] == sorted(parts["twill"])
        assert arch == "sm_100a" or (not changed and d["prologue_depth"] == d["max_stage"])
        return
    # the warp_specialize pass built regions from Twill's grouping; an op whose region holds
    # exactly the ops of its Twill slot is kept, every other one is listed as changed
    assert parts["applied"] and "ttg.warp_specialize" in s.build.ttgir
    kept, region, slot = d["kept"]["partitions"], parts["regions"], parts["twill"]
    assert sorted(kept + d["changed"]["partitions"]) == sorted(slot)
    for v in kept:
        mates = {u for u in region if region[u] == region[v]}
        assert mates == {u for u in region if slot[u][0] == slot[v][0]}
    if name == "gemm":  # all kept: the loads apart from the MMA
        assert kept == sorted(slot)
        assert region["TMA_a_blk"] == region["TMA_b_blk"] != region["TC_acc"]


@pytest.mark.slow
@pytest.mark.parametrize("name", ["fa_bwd", "fa_fwd_plain"])
def test_shipped_b200_attention_launches(name: str) -> None:
    """At the shipped B200 tile sizes (the backward's 64-row K/V block on 4 warps, the plain
    forward's 128-row Q tile on 8) Twill's schedule compiles to a kernel that launches: no
    trap (its tensor memory fits the 512 columns), shared memory within 227 KiB; the
    backward does not spill (the forward's spills are ptxas's to correct: test_compile.py)."""
    pytest.importorskip("triton")
    d = _compiled(name, "sm_100a").data
    assert d["runnable"], d.get("why_not_runnable")
    assert d["smem_bytes"] <= 227 * 1024
    assert name != "fa_bwd" or d["spills"] == 0


def test_compile_cli_writes_the_summary(tmp_path, capsys: pytest.CaptureFixture[str]) -> None:
    pytest.importorskip("triton")
    out = tmp_path / "OUT"
    rc = main(["compile", f"{KERNELS}:gemm", "--arch", "sm_90a", "-o", str(out), "--json"])
    assert rc == 0
    data = json.loads((out / "summary.json").read_text())
    keys = set("kernel arch I L stages partitions regs smem_bytes spills kept changed".split())
    assert keys <= set(data) and data["kernel"] == "gemm" and data["I"] == 8
    assert (out / "gemm.cubin").stat().st_size > 1000
    assert json.loads(capsys.readouterr().out) == data


TWO_LOOPS = """import triton
import triton.language as tl


@triton.autotune(configs=[triton.Config({"BK": 64}, num_warps=8),
                          triton.Config({"BK": 32}, num_warps=4)], key=["K"])
@triton.jit
def two(a_ptr, b_ptr, c_ptr, M, N, K, BM: tl.constexpr, BN: tl.constexpr, BK: tl.constexpr):
    a_desc = tl.make_tensor_descriptor(a_ptr, [M, K], [K, 1], [BM, BK])
    b_desc = tl.make_tensor_descriptor(b_ptr, [K, N], [N, 1], [BK, BN])
    c_desc = tl.make_tensor_descriptor(c_ptr, [M, N], [N, 1], [BM, BN])
    acc = tl.zeros((BM, BN), dtype=tl.float32)
    for k in range(0, K, BK):  # line 13
        acc = tl.dot(a_desc.load([0, k]), b_desc.load([k, 0]), acc)
    acc2 = tl.zeros((BM, BN), dtype=tl.float32)
    for k in range(0, K, BK):  # line 16
        acc2 = tl.dot(a_desc.load([BM, k]), b_desc.load([k, BN]), acc2)
    c_desc.store([0, 0], (acc + acc2).to(tl.float16))
"""


@pytest.mark.slow
def test_compile_cli_config_and_loop(tmp_path, capsys: pytest.CaptureFixture[str]) -> None:
    """``--config`` takes the autotune config's constexprs and warps, ``--loop`` the loop;
    the kernel's other loop keeps Triton's schedule and the summary says so."""
    pytest.importorskip("triton")
    src = tmp_path / "two.py"
    src.write_text(TWO_LOOPS)
    sig = [f"--signature={a}=*fp16" for a in ("a_ptr", "b_ptr", "c_ptr")]
    sig += [f"--signature={a}=i32" for a in "MNK"] + ["--constexpr=BM=128", "--constexpr=BN=128"]
    out = tmp_path / "out"
    args = ["compile", f"{src}:two", "--arch", "sm_90a", *sig, "-o", str(out)]
    assert main([*args, "--config", "1", "--loop", "16"]) == 0
    d = json.loads((out / "summary.json").read_text())
    assert (d["loop"], d["config"], d["num_warps"]) == (16, 1, 4)
    assert list(d["other_loops"]) == ["13"] and "Triton's own schedule" in d["other_loops"]["13"]
    assert "loop at line 16" in capsys.readouterr().out
    assert main([*args, "--loop", "13"]) == 0  # config 0: BK = 64, twice the MMA of config 1
    first = json.loads((out / "summary.json").read_text())
    assert (first["loop"], first["num_warps"]) == (13, 8) and first["I"] == 2 * d["I"]
    assert main([*args, "--loop", "14"]) == 2
    assert "no loop at that source line" in capsys.readouterr().err


SLICE = "#ttg.slice<{dim = 1, parent = #blocked}>"


@pytest.mark.parametrize(
    ("line", "written"),
    [  # an op inside a region of a scheduled op (an scf.if branch, a tt.reduce combiner)
        (f"%a = tt.make_range {{end = 128 : i32, start = 0 : i32}} : tensor<128xi32, {SLICE}>",
         f"%a = tt.make_range {{end = 128 : i32, start = 0 : i32, P}} : tensor<128xi32, {SLICE}>"),
        (f"%b = tt.expand_dims %r {{axis = 1 : i32}} : tensor<64xi32, {SLICE}> -> tensor<1xi1>",
         f"%b = tt.expand_dims %r {{axis = 1 : i32, P}} : tensor<64xi32, {SLICE}> -> tensor<1xi1>"),
        (f"%c = ttg.convert_layout %r : tensor<64xi32> -> tensor<64xi32, {SLICE}>",
         f"%c = ttg.convert_layout %r {{P}} : tensor<64xi32> -> tensor<64xi32, {SLICE}>"),
        ("%d = arith.cmpi slt, %x, %y : tensor<1x64xi32>",
         "%d = arith.cmpi slt, %x, %y {P} : tensor<1x64xi32>"),
        ("scf.yield %a, %b : tensor<128x64xf16>, tensor<64x128xf16>",
         "scf.yield {P} %a, %b : tensor<128x64xf16>, tensor<64x128xf16>"),
        ("%e = arith.constant dense<0.0> : tensor<128xf32>",
         "%e = arith.constant {P} dense<0.0> : tensor<128xf32>"),
        ("tt.reduce.return %s : f32", "tt.reduce.return %s {P} : f32"),
        # the closing line of an op with regions: the dictionary after the regions
        ("}) : (tensor<64x64xf32>) -> tensor<64xf32>",
         "}) {P} : (tensor<64x64xf32>) -> tensor<64xf32>"),
        ("}) {axis = 1 : i32} : (tensor<64xf32>) -> f32",
         "}) {axis = 1 : i32, P} : (tensor<64xf32>) -> f32"),
        ("}", "} {P}"),
    ],
)  # fmt: skip
def test_partition_goes_where_mlir_reads_an_attribute_dictionary(line: str, written: str) -> None:
    """The partition joins the op's own attribute dictionary, or opens one where the op's
    printed form has it: ``scf.yield`` and ``arith.constant`` take it before their operands
    (after them it does not parse: grouped_gemm_if on B200 failed with "expected ':'")."""
    from twill.triton.schedule import with_partition

    tail = " loc(#loc7)"
    want = written.replace("P", "ttg.partition = array<i32: 2>") + tail
    assert with_partition("    " + line + tail, 2) == "    " + want
    assert with_partition("    " + want, 1) == "    " + want  # already there: unchanged


@pytest.mark.slow
def test_partitions_written_into_an_if_parse(tmp_path) -> None:
    """The K loop of grouped_gemm_if holds an ``scf.if`` whose branches carry Twill's
    partition: the rewritten IR parses, so whatever happens to the partitions is Triton's
    decision, named in the summary (Triton 3.9 rejects them here in its aref insertion, since
    the loop and its yield carry every partition), and the stages are compiled. The
    warp-specialised answer is written (the union's answer is one partition, which writes
    none)."""
    pytest.importorskip("triton")
    from twill.triton.build import private_cache
    from twill.triton.peer import compile_twill, solve_for_compile, twill_graph

    corpus = Path(__file__).resolve().parents[1] / "data" / "triton" / "grouped_gemm_if.py"
    ks = kernel_spec(f"{corpus}:grouped_gemm_if", "sm_100a")
    with private_cache():
        lp, ttgir = twill_graph(ks)
        r = solve_for_compile(lp.graph, 120.0)  # Algorithm 1 alone: warp specialisation
        assert r.assignment and len({w for s in r.assignment.values() for w in s}) > 1
        d = compile_twill(ks, r.schedule, r.assignment, r.I, r.L, lp, ttgir).data
    parts = d["partitions"]
    assert parts["applied"] or "does not parse" not in parts["why"]
    assert parts["applied"] or "NVWSInsertAref" in parts["why"]
    assert d["stages"]


def test_compile_cli_bad_output(tmp_path, capsys: pytest.CaptureFixture[str]) -> None:
    f = tmp_path / "file"
    f.write_text("x")
    assert main(["compile", f"{KERNELS}:gemm", "--arch", "sm_90a", "-o", str(f)]) == 2
    assert "not a folder" in capsys.readouterr().err
    missing = tmp_path / "no" / "dir"
    assert main(["compile", f"{KERNELS}:gemm", "--arch", "sm_90a", "-o", str(missing)]) == 2


def test_solve_compare_triton(capsys: pytest.CaptureFixture[str]) -> None:
    pytest.importorskip("triton")
    rc = main(["solve", f"{KERNELS}:gemm", "--arch", "sm_100a", "--compare-triton", "--json"])
    assert rc == 0
    tri = json.loads(capsys.readouterr().out)["triton"]
    assert tri["stages"] == GEMM and tri["max_stage"] == 2
    assert tri["I"] == tri["twill_I"] == 2 and tri["L"] > tri["twill_L"]
    assert tri["predicted_speedup"] == 1.0 and tri["match"]["twill_only"] == []


def test_compare_triton_needs_a_kernel(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["solve", "simple_gemm_pipeline", "--compare-triton"]) == 2
    assert "FILE.py:KERNEL" in capsys.readouterr().err
    # Triton's schedule is priced with warps: a Phase-1-only I would mix two problems
    args = ["solve", f"{KERNELS}:gemm", "--arch", "sm_90a", "--compare-triton", "--no-phase2"]
    assert main(args) == 2
    assert "drop --no-phase2" in capsys.readouterr().err


def test_context_manager_compiles_with_twill_schedule() -> None:
    """``twill_schedule()`` applies to any Triton compile in the block (a launch included);
    here ``triton.compile``, as a launch would without a GPU to run on."""
    pytest.importorskip("triton")
    import triton
    from triton.backends.compiler import GPUTarget
    from triton.compiler import ASTSource

    from twill.triton import kernel_options, twill_schedule
    from twill.triton.build import private_cache
    from twill.triton.compiler import load_kernel

    fn = load_kernel(KERNELS, "gemm")
    opts = kernel_options(KERNELS, "gemm", "sm_90a")
    names = list(fn.arg_names)
    sig = {n: opts.signature.get(n, "constexpr") for n in names}
    consts = {(names.index(n),): v for n, v in opts.constexprs.items()}
    with private_cache(), twill_schedule() as log:
        k = triton.compile(
            ASTSource(fn, signature=sig, constexprs=consts),
            target=GPUTarget("cuda", 90, 32),
            options={"num_warps": 8},
        )
    assert log == [log[0]] and log[0]["applied"] and log[0]["I"] == 8
    assert "ttg.warp_specialize" not in k.asm["ttgir"] and len(k.asm["cubin"]) > 1000


def _compile_under_twill(fn, signature: dict, constexprs: dict, capability: int):  # noqa: ANN001, ANN202
    """``triton.compile`` of ``fn`` inside ``twill_schedule()``, as a launch would compile it
    without a GPU to run on: the kernel and the context manager's log."""
    import triton
    from triton.backends.compiler import GPUTarget
    from triton.compiler import ASTSource

    from twill.triton import twill_schedule
    from twill.triton.build import private_cache

    names = list(fn.arg_names)
    sig = {n: signature.get(n, "constexpr") for n in names}
    consts = {(names.index(n),): v for n, v in constexprs.items()}
    with private_cache(), twill_schedule(total_time_limit=60) as log:
        k = triton.compile(
            ASTSource(fn, signature=sig, constexprs=consts),
            target=GPUTarget("cuda", capability, 32),
            options={"num_warps": 4},
        )
    return k, log


def test_context_manager_keeps_tritons_schedule_where_twills_cannot_be_written() -> None:
    """Inside ``twill_schedule()`` every kernel of the block still compiles: a kernel with no
    loop, or compiled for an architecture Twill does not model, keeps Triton's schedule, and
    the log and a warning say why (it used to raise out of the user's launch)."""
    pytest.importorskip("triton")
    from twill.triton.compiler import load_kernel

    corpus = Path(__file__).resolve().parents[1] / "data" / "triton" / "helper_twice.py"
    fn = load_kernel(corpus, "helper_twice")
    sig = {"x_ptr": "*fp32", "y_ptr": "*fp32", "n_diag": "i32", "n_rest": "i32"}
    with pytest.warns(UserWarning, match="Triton's own is used"):
        k, log = _compile_under_twill(fn, sig, {"BLOCK": 1024}, 90)  # unpipelined loops
    assert [e["applied"] for e in log] == [False] and "no schedule after" in log[0]["why"]
    assert len(k.asm["cubin"]) > 1000
    with pytest.warns(UserWarning, match="sm_90a .* and sm_100a .* only"):
        k, log = _compile_under_twill(fn, sig, {"BLOCK": 1024}, 80)
    assert log == [{"kernel": "helper_twice", "arch": None, "applied": False,
                    "why": log[0]["why"]}] and len(k.asm["cubin"]) > 1000  # fmt: skip


@pytest.mark.slow
def test_context_manager_says_when_twill_proves_there_is_no_schedule() -> None:
    """A loop whose tiles exceed the registers of every warp-specialised placement keeps
    Triton's schedule inside ``twill_schedule()``. Its one partition (all 32 warps, registers
    spread) is not refuted within a short limit, and then the log claims no proof: "none
    within the limit" (before the union, issue 48, it always said "Twill proves there is
    none")."""
    pytest.importorskip("triton")
    from twill.triton.compiler import load_kernel

    corpus = Path(__file__).resolve().parents[1] / "data" / "triton" / "wide_rows_held.py"
    fn = load_kernel(corpus, "wide_rows_held")
    sig = {"p_ptr": "*fp32", "q_ptr": "*fp32", "out_ptr": "*fp32", "n": "i32"}
    said = "Twill proves there is none|none within the limit"  # a proof needs both parts
    with pytest.warns(UserWarning, match=said):
        k, log = _compile_under_twill(fn, sig, {"BLOCK": 32768}, 90)
    [entry] = log
    assert not entry["applied"] and entry["why"].startswith("no Twill schedule: ")
    assert len(k.asm["cubin"]) > 1000


def test_compile_refuses_a_loop_without_a_schedule_at_any_I(
    tmp_path, capsys: pytest.CaptureFixture[str]
) -> None:
    """A loop whose tiles provably exceed the registers at every I is refused as ``twill
    solve`` refuses it (exit 2, the proof named), not reported as a time-out (exit 1)."""
    pytest.importorskip("triton")
    corpus = Path(__file__).resolve().parents[1] / "data" / "triton" / "wide_rows_held.py"
    out = tmp_path / "out"
    rc = main(["compile", f"{corpus}:wide_rows_held", "--arch", "sm_90a", "-o", str(out)])
    assert rc == 2 and not out.exists()
    err = capsys.readouterr().err
    assert "no schedule at any I" in err and "wide_rows_held" in err and "Traceback" not in err


def test_compile_search_gets_one_deadline(monkeypatch: pytest.MonkeyPatch) -> None:
    """``total_time_limit`` bounds Twill's whole search (a deadline handed to Algorithm 1), not
    each Phase-1 solve alone; the summary says which problem ``optimal`` is about."""
    pytest.importorskip("triton")
    import time

    import twill.triton.peer as peer
    from twill.triton import compile_summary

    seen = []
    real = peer.solve_for_compile

    def spy(graph, time_limit, deadline=None, num_warps=None):  # noqa: ANN001, ANN202
        seen.append((time.monotonic(), time_limit, deadline))
        return real(graph, time_limit, deadline, num_warps)

    monkeypatch.setattr(peer, "solve_for_compile", spy)
    s = compile_summary(f"{KERNELS}:gemm", "sm_90a", total_time_limit=500)
    [(entered, limit, deadline)] = seen
    assert limit == 500 and deadline.end is not None and entered < deadline.end <= entered + 500
    d = s.data
    assert d["optimal"] and d["problem"] == PROBLEM_UNION and "L_optimal" in d


@pytest.mark.slow
def test_unpipelined_loop_priced_as_written_and_compiled_with_twills_stages(
    tmp_path, capsys: pytest.CaptureFixture[str]
) -> None:
    """Triton 3.9 leaves the layer norm's loops unscheduled (no latencies: pointer loads
    feeding reductions): its schedule is priced as it runs (one stage, program order), and
    ``twill compile`` writes Twill's stages onto every op of the loop itself (exit 0) and
    says so."""
    pytest.importorskip("triton")
    from twill.triton.build import private_cache
    from twill.triton.peer import NOT_PIPELINED, price_triton

    corpus = Path(__file__).resolve().parents[1] / "data" / "triton" / "layer_norm.py"
    ks = kernel_spec(f"{corpus}:layer_norm", "sm_90a")
    with private_cache():
        d = price_triton(ks, total_time_limit=60).to_dict()
    assert not d["pipelined"] and d["max_stage"] is None and NOT_PIPELINED in d["notes"]
    assert d["stages"] and set(d["stages"].values()) == {0}
    assert d["status"] == "feasible" and d["I"] >= 1
    out = tmp_path / "out"
    assert main(["compile", f"{corpus}:layer_norm", "--arch", "sm_90a", "-o", str(out)]) == 0
    assert "left this loop unscheduled" in capsys.readouterr().out
    d = json.loads((out / "summary.json").read_text())
    assert not d["triton_scheduled"] and d["stages"] and not d["changed"]["stages"]
    assert d["runnable"] and d["spills"] == 0


def test_unparsable_rewrite_is_named_without_mlir_noise(capfd: pytest.CaptureFixture[str]) -> None:
    """A rewritten TTGIR that does not parse is an error naming MLIR's diagnostic (line and
    column in the rewritten text); nothing of it reaches the user's stderr on its own."""
    pytest.importorskip("triton")
    from triton._C.libtriton import ir

    from twill.errors import InvalidProblemError
    from twill.triton.build import _parse

    ctx = ir.context()
    ir.load_dialects(ctx)
    bad = "module {\n  tt.func @k() {\n    scf.yield %a {x = 1 : i32} : i32\n  }\n}\n"
    with pytest.raises(InvalidProblemError, match="does not parse: line 3, column 17: expected"):
        _parse(bad, ctx)
    assert capfd.readouterr().err == ""
