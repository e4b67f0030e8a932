"""Twill's schedule into Triton and Triton's schedule into Twill's model (issue 41).

The pinned solver is tested on the shipped GEMM graph (no Triton needed). The Triton tests
compile each shipped kernel on both architectures once per session (a few seconds each) and
check the read-back: the pipelined loop's prologue depth and every matched operation's stage
are the ones written from Twill's schedule.
"""

from __future__ import annotations

import json
from functools import cache

import pytest

from twill.cli import main
from twill.sched.exact.pinned import Pins, pins_hold, solve_pinned
from twill.sched.verify_warps import verify_warp_schedule
from twill.triton import SHIPPED_DIR, import_triton, kernel_spec

KERNELS = SHIPPED_DIR / "kernels.py"
GEMM = {"TMA_a_blk": 0, "TMA_b_blk": 0, "TC_acc": 2}  # Triton's default stages on the GEMM


def _gemm(arch: str):  # noqa: ANN202
    return import_triton(SHIPPED_DIR / f"gemm.{arch}.ttgir", arch)


def test_pinned_stages_hold_and_length_is_the_span() -> None:
    g = _gemm("sm_90a")
    pins = Pins(GEMM, (("TC_acc", "TMA_a_blk", "TMA_b_blk"),), {"TC_acc": (1,)})
    r = solve_pinned(g, pins)
    assert r.status == "feasible" and r.optimal and r.I == 8
    assert pins_hold(pins, r.schedule, r.I)
    assert verify_warp_schedule(g, r.schedule, r.assignment, r.I, r.L) == []
    # the MMA two stages after its loads: the iteration spans more than two I, less than three
    assert 2 * r.I < r.L < 3 * r.I
    free = solve_pinned(g, Pins({}, (), None))
    assert free.I == 8 and free.L < r.L  # Twill's own optimum: same I, shorter L


def test_impossible_stages_are_infeasible() -> None:
    g = _gemm("sm_100a")
    # the MMA a stage before the loads it reads, in the same iteration
    r = solve_pinned(g, Pins({"TMA_a_blk": 1, "TMA_b_blk": 1, "TC_acc": 0}))
    assert r.status == "infeasible" and r.I is None


def test_unknown_pinned_op_is_named() -> None:
    from twill.errors import InvalidProblemError

    with pytest.raises(InvalidProblemError, match="nope"):
        solve_pinned(_gemm("sm_90a"), Pins({"nope": 0}))


VARIANTS = {
    "gemm": ("gemm", {}),
    "fa_fwd": ("fa_fwd", {}),
    "fa_fwd_plain": ("fa_fwd", {"SUBTILES": 1}),
    "fa_bwd": ("fa_bwd", {}),
}


@cache
def _compiled(name: str, arch: str):  # noqa: ANN202
    """Compile one shipped kernel with a Twill schedule (cached for the session): the full
    search where it takes seconds; for the backward kernel, whose joint search takes half a
    minute, Phase 1's proven modulo schedule (its stages are Twill's all the same)."""
    from twill.io.triton_build import private_cache
    from twill.io.triton_peer import compile_twill, twill_graph
    from twill.sched.exact.search import search_min_ii
    from twill.twill_solver import twill_solve

    kernel, consts = VARIANTS[name]
    ks = kernel_spec(f"{KERNELS}:{kernel}", arch, constexprs=consts)
    with private_cache():
        lp, ttgir = twill_graph(ks)
        g = lp.graph
        if name == "fa_bwd":
            p1 = search_min_ii(g, backend="cpsat", time_limit=60)
            sched, assign, ii = p1.schedule, {}, p1.I
            length = max(
                s + max(i.cycles, 1) for i, s in ((g.instruction(v), s) for v, s in sched.items())
            )
        else:
            r = twill_solve(g, backend="cpsat", total_time_limit=120, phase2_time_limit=60)
            ws = r.warp_schedule
            sched, assign, ii, length = ws.schedule, ws.assignment, r.I, r.L
        return compile_twill(ks, sched, assign, ii, length, lp, ttgir)


@pytest.mark.slow
@pytest.mark.parametrize("arch", ["sm_90a", "sm_100a"])
@pytest.mark.parametrize("name", ["gemm"])  # every shipped kernel: benchmarks/twill_vs_triton.py
def test_twill_stages_survive_the_pipeliner(name: str, arch: str) -> None:
    pytest.importorskip("triton")
    s = _compiled(name, arch)
    d = s.data
    assert d["changed"]["not_expressed"] == []
    changed = set(d["changed"]["stages"])
    assert set(d["kept"]["stages"]) | changed == set(d["stages"])  # every op accounted for
    if arch == "sm_90a":  # Hopper's pipeliner keeps Twill's stages: the prologue is Twill's
        assert d["prologue_depth"] == d["max_stage"] and not changed
    else:  # Blackwell's may move ops (asynchronous MMAs, partitions); each move is named
        assert all(c["triton"] is not None for c in d["changed"]["stages"].values())
    assert len(s.build.cubin) > 1000 and ".entry" in s.build.ptx
    parts = d["partitions"]
    if arch == "sm_90a":  # Hopper's warp specialisation runs before the schedule is written
        assert not parts["applied"] and parts["why"]
    else:  # Blackwell's warp_specialize pass takes the grouping: loads apart from the MMA
        assert parts["applied"] and d["kept"]["partitions"] == sorted(parts["twill"])
        region = parts["regions"]
        assert region["TMA_a_blk"] == region["TMA_b_blk"] != region["TC_acc"]


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


def test_context_manager_compiles_with_twill_schedule() -> None:
    """``twill_schedule()`` applies to any Triton compile in the block (a launch included);
    here ``triton.compile``, as a launch would without a GPU to run on."""
    pytest.importorskip("triton")
    import triton
    from triton.backends.compiler import GPUTarget
    from triton.compiler import ASTSource

    from twill.io.triton_build import private_cache
    from twill.io.triton_compile import _load_kernel
    from twill.triton import kernel_options, twill_schedule

    fn = _load_kernel(KERNELS, "gemm")
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
