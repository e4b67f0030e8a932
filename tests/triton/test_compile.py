"""Triton front end end to end: compile each shipped kernel, extract, solve (needs Triton)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from twill.cli import main
from twill.errors import InvalidProblemError
from twill.options import SolverOptions
from twill.sched.exact.settings import TwillSettings
from twill.sched.validate import check_graph
from twill.triton import SHIPPED_DIR, import_triton, import_triton_loops

KERNELS = SHIPPED_DIR / "kernels.py"


@pytest.mark.parametrize("arch", ["sm_90a", "sm_100a"])
@pytest.mark.parametrize("kernel", ["gemm", "fa_fwd", "fa_bwd"])
def test_compile_extract_solve(kernel: str, arch: str) -> None:
    pytest.importorskip("triton")
    from twill.sched.bounds import mii
    from twill.sched.exact.algorithm1 import algorithm1
    from twill.sched.verify_warps import verify_warp_schedule

    g = import_triton(f"{KERNELS}:{kernel}", arch)
    check_graph(g)
    golden = import_triton(SHIPPED_DIR / f"{kernel}.{arch}.ttgir", arch, normalize=False)
    assert g.names == golden.names  # the golden file is what Triton prints today
    # Phase 1 (no time limit: its length must be proven for the window to be exact, whatever
    # the machine's load), then Phase 2 on the window at the Phase-1 minimum I (the full search
    # is the benchmark's job): every kernel is sat there (the backward kernels are bound by their dQ
    # atomic add through global memory, so the joint I is the modulo one); a point's 300 s
    # limit is a guard (60 s was too close at load 20: test_triton_extract.py)
    r = algorithm1(
        g,
        SolverOptions(
            twill=TwillSettings(
                probe=True, backend="cpsat", solve_time_limit=None, point_time_limit=300
            )
        ),
    )
    assert r.phase1_I == mii(g) and r.phase1.optimal
    assert r.optimal and r.I == mii(g)
    assert verify_warp_schedule(g, r.schedule, r.assignment, r.I, r.L) == []


def test_wide_register_tile_spans_two_warp_groups() -> None:
    """The un-sub-tiled 256-row B200 forward tile would need 256 > 255 registers per thread
    of one warp group, so it spans two warp groups at 128 each."""
    pytest.importorskip("triton")
    g = import_triton(f"{KERNELS}:fa_fwd", "sm_100a", constexprs={"SUBTILES": 1, "BM": 256},
                      num_warps=4, normalize=False)  # fmt: skip
    tiles = [i for i in g.instructions if i.regs > 64]
    assert tiles and {(i.regs, i.warps) for i in tiles} == {(128, 8)}
    assert all(i.regs <= g.machine.registers_per_warp for i in g.instructions)


def test_missing_signature_type_is_named(capsys: pytest.CaptureFixture[str]) -> None:
    pytest.importorskip("triton")
    rc = main(["import-triton", f"{KERNELS}:gemm", "--arch", "sm_90a", "--signature",
               "a_ptr=*fp16", "--constexpr", "BM=128"])  # fmt: skip
    # kernels.yaml beside the file fills the rest, so this succeeds
    assert rc == 0
    with pytest.raises(InvalidProblemError, match="no type for argument.*b_ptr"):
        from twill.triton.compiler import compile_ttgir

        compile_ttgir(KERNELS, "gemm", "sm_90a", {"a_ptr": "*fp16"}, {"BM": 128})


_ROWS = """
import triton
import triton.language as tl


@triton.jit
def rows(x_ptr, y_ptr, n, BLOCK: tl.constexpr):
    for off in range(0, n, BLOCK):
        acc = tl.zeros([BLOCK], dtype=tl.float32)
        tl.store(y_ptr + off + tl.arange(0, BLOCK), acc)
"""


def test_triton_refusals_say_why_and_where(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """Triton's compile errors are chained: the outer one quotes the kernel's line with a
    caret under it (the message was that caret line, blank), the innermost says why. An
    unknown signature type was Triton's bare ``KeyError: 'fp99'``."""
    pytest.importorskip("triton")
    (tmp_path / "rows.py").write_text(_ROWS, "utf-8")
    spec = f"{tmp_path / 'rows.py'}:rows"
    sig = ["--signature", "x_ptr=*fp32", "--signature", "n=i32"]
    args = ["import-triton", spec, "--arch", "sm_90a", *sig, "--num-warps", "4"]
    assert main([*args, "--signature", "y_ptr=*fp32", "--constexpr", "BLOCK=1000"]) == 2
    err = capsys.readouterr().err
    assert "Shape element 0 must be a power of 2" in err
    assert "(at `acc = tl.zeros([BLOCK], dtype=tl.float32)`)" in err
    assert main([*args, "--signature", "y_ptr=*fp99", "--constexpr", "BLOCK=1024"]) == 2
    assert "--signature y_ptr=*fp99: not a Triton type" in capsys.readouterr().err


_OPTIONAL = """
import triton
import triton.language as tl


@triton.jit
def add_bias(x_ptr, bias_ptr, y_ptr, n, BLOCK: tl.constexpr):
    for off in range(0, n, BLOCK):
        cols = off + tl.arange(0, BLOCK)
        x = tl.load(x_ptr + cols, mask=cols < n)
        if bias_ptr is not None:
            x += tl.load(bias_ptr + cols, mask=cols < n)
        tl.store(y_ptr + cols, x, mask=cols < n)
"""


def test_an_optional_pointer_is_left_out_with_none(tmp_path: Path) -> None:
    """``--constexpr bias_ptr=None`` passes ``None``, as a launch without the bias does (it was
    the string 'None', and Triton failed on ``tl.load`` of it); with a pointer the bias is
    loaded and added: two ops more."""
    from twill.triton import parse_assignments

    got = parse_assignments(["b=None", "s='None'"], "--constexpr", True)
    assert got == {"b": None, "s": "'None'"}  # quoted: the string None (unquoted when compiled)
    pytest.importorskip("triton")
    (tmp_path / "bias.py").write_text(_OPTIONAL, "utf-8")
    spec, sig = f"{tmp_path / 'bias.py'}:add_bias", {"x_ptr": "*fp32", "y_ptr": "*fp32", "n": "i32"}
    cx = parse_assignments(["bias_ptr=None", "BLOCK=1024"], "--constexpr", True)
    without = import_triton(spec, "sm_90a", signature=sig, constexprs=cx, num_warps=4)
    cx = parse_assignments(["BLOCK=1024"], "--constexpr", True)
    sig["bias_ptr"] = "*fp32"
    with_bias = import_triton(spec, "sm_90a", signature=sig, constexprs=cx, num_warps=4)
    assert (len(without.instructions), len(with_bias.instructions)) == (2, 4)


def test_a_constexpr_default_of_the_kernel_is_taken(tmp_path: Path) -> None:
    """``BLOCK: tl.constexpr = 512`` and ``ACT: tl.constexpr = "relu"`` not given: the kernel's
    defaults, as a launch without them (it was an error, "no type for argument(s) BLOCK,
    ACT"); a value given wins. The relu is one op."""
    pytest.importorskip("triton")
    kernel = _OPTIONAL.replace("def add_bias(x_ptr, bias_ptr, y_ptr, n, BLOCK: tl.constexpr)",
                               'def add_bias(x_ptr, bias_ptr, y_ptr, n, BLOCK: tl.constexpr = 512, '
                               'ACT: tl.constexpr = "relu")').replace(
        "        tl.store(", '        if ACT == "relu":\n            x = tl.maximum(x, 0.0)\n'
        "        tl.store(")  # fmt: skip
    (tmp_path / "dflt.py").write_text(kernel, "utf-8")
    spec, sig = f"{tmp_path / 'dflt.py'}:add_bias", {"x_ptr": "*fp32", "y_ptr": "*fp32", "n": "i32"}
    got = import_triton_loops(spec, "sm_90a", signature=sig, constexprs={"bias_ptr": None},
                              num_warps=4)  # fmt: skip
    assert got.notes[0] == "constexpr default(s) of the kernel taken: BLOCK=512, ACT=relu"
    assert got.picked.ops == 3 and got.picked.cycles == 2 * round(512 * 4 / 13.9) + 8
    given = import_triton_loops(spec, "sm_90a", signature=sig, num_warps=4,
                                constexprs={"bias_ptr": None, "ACT": "'none'"})  # fmt: skip
    assert given.notes[0].endswith("taken: BLOCK=512") and given.picked.ops == 2
    from twill.triton.build import build_kernel  # Triton's own build (--compare-triton)
    from twill.triton.compiler import load_kernel

    fn = load_kernel(tmp_path / "dflt.py", "add_bias")
    build_kernel(fn, "sm_90a", sig, {"bias_ptr": None}, num_warps=4)  # was: None < int


def test_solve_ttgir_from_cli(capsys: pytest.CaptureFixture[str]) -> None:
    rc = main(["solve", str(SHIPPED_DIR / "gemm.sm_100a.ttgir"), "--arch", "sm_100a", "--json"])
    assert rc == 0
    out = capsys.readouterr().out
    assert '"optimal": true' in out and '"backend": "cpsat"' in out  # CP-SAT with --arch
    args = [str(SHIPPED_DIR / "gemm.sm_100a.ttgir"), "--arch", "sm_100a", "--json"]
    assert main(["solve", *args, "--backend", "cbc"]) == 0
    assert '"backend": "cbc"' in capsys.readouterr().out


def test_ttgir_is_read_for_its_own_target(capsys: pytest.CaptureFixture[str]) -> None:
    """A saved TTGIR names the target Triton compiled it for (``ttg.target``): without
    ``--arch`` it is read for that target (with CP-SAT, as a kernel is), and an ``--arch`` that
    contradicts it is refused. Pricing Hopper's ``warp_group_dot`` at Blackwell's rates gave
    a schedule "optimal" for a kernel that cannot exist."""
    ttgir = str(SHIPPED_DIR / "gemm.sm_90a.ttgir")
    assert main(["solve", ttgir, "--json"]) == 0
    alone = json.loads(capsys.readouterr().out)
    assert alone["arch"] == "sm_90a" and alone["backend"] == "cpsat"
    assert main(["solve", ttgir, "--arch", "sm_90a", "--json"]) == 0
    given = json.loads(capsys.readouterr().out)
    assert (given["I"], given["L"]) == (alone["I"], alone["L"])
    assert main(["solve", ttgir, "--arch", "sm_100a"]) == 2
    err = capsys.readouterr().err
    assert "compiled for sm_90a" in err and "--arch sm_100a" in err and "Traceback" not in err


def test_unmodelled_or_missing_ttgir_target_is_refused() -> None:
    from twill.triton.extract import ttgir_arch

    text = (SHIPPED_DIR / "gemm.sm_90a.ttgir").read_text()
    with pytest.raises(InvalidProblemError, match="cuda:80"):
        ttgir_arch(text.replace('"cuda:90"', '"cuda:80"'), None, "k.ttgir")
    untargeted = text.replace('ttg.target = "cuda:90", ', "")
    with pytest.raises(InvalidProblemError, match="give --arch"):
        ttgir_arch(untargeted, None, "k.ttgir")
    assert ttgir_arch(untargeted, "sm_100a", "k.ttgir") == "sm_100a"


def test_kernel_file_needs_arch(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["import-triton", f"{KERNELS}:gemm"]) == 2
    assert "needs --arch" in capsys.readouterr().err


def test_launch_hints_follow_tritons_specialisation() -> None:
    """``*fp16:16`` and ``i32:16`` mark an argument divisible by 16, ``i32:1`` makes it the
    constant 1, as a launch specialises them; ``specialize`` assumes every pointer aligned and
    says so; a hint Triton never gives is refused, naming the argument."""
    from twill.triton.compiler import launch_hints

    sig = {"a": "*fp16", "b": "*bf16:16", "n": "i32:16", "s": "i32:1", "x": "fp32"}
    types, ones, div, notes = launch_hints(sig, specialize=False)
    assert types == {"a": "*fp16", "b": "*bf16", "n": "i32", "x": "fp32"}
    assert ones == {"s": 1} and div == ["b", "n"] and "assumed" not in notes[0]
    types, ones, div, notes = launch_hints(sig, specialize=True)
    assert div == ["a", "b", "n"] and "assumed for a: aligned tensors" in notes[0]
    assert launch_hints({"x": "fp32"}, specialize=True)[3] == []
    with pytest.raises(InvalidProblemError, match="n=i32:8"):
        launch_hints({"n": "i32:8"}, specialize=True)


@pytest.mark.slow
def test_masked_matmul_compiles_with_a_launchs_hints(tmp_path: Path) -> None:
    """The masked pointer-load matmul on sm_90a: with the hints a launch on aligned,
    row-major tensors gets, Triton's schedule_loops schedules the loop (its loads made
    asynchronous), Twill's stages are written and kept, and ``twill compile`` writes a runnable
    kernel that does not spill, and the summary says what was assumed;
    with --no-specialize Triton leaves the loop unscheduled and Twill's stages are written
    onto it by twill."""
    pytest.importorskip("triton")
    user = Path(__file__).resolve().parents[1] / "data" / "triton_user" / "masked_matmul.py"
    hints = [f"stride_{s}=i32:1" for s in ("ak", "bn", "cn")]
    hints += [f"stride_{s}=i32:16" for s in ("am", "bk", "cm")]
    argv = ["compile", f"{user}:matmul", "--arch", "sm_90a", "--total-time-limit", "120"]
    argv += [a for h in hints for a in ("--signature", h)]
    out = tmp_path / "out"
    assert main([*argv, "-o", str(out)]) == 0
    d = json.loads((out / "summary.json").read_text())
    assert (out / "matmul.cubin").stat().st_size > 0
    assert d["runnable"] and d["spills"] == 0 and d["regs"] <= 255
    assert "a_ptr divisible by 16" in d["assumed"][0] and "stride_ak = 1" in d["assumed"][0]
    assert d["kept"]["stages"] and not d["changed"]["stages"]  # Twill's stages reach the loop
    assert d["triton_scheduled"]
    assert main([*argv, "--no-specialize", "-o", str(tmp_path / "none")]) == 0
    d = json.loads((tmp_path / "none" / "summary.json").read_text())
    assert not d["triton_scheduled"] and d["assumed"][-1] == "--no-specialize: none"
