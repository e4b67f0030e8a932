"""Hostile input, round 3 (issue 49): input that was accepted and must be refused.

Each case is a real command line; each must exit 2 with one message naming the file and the
item (no traceback) and leave its inputs as they were.
"""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest

from tests.cli.test_hostile_round2 import run

DATA = Path(__file__).resolve().parents[1] / "data"
GEMM = DATA / "triton" / "autotuned_gemm.py"
GEMM_TTGIR = DATA / "triton" / "autotuned_gemm.sm_90a.ttgir"


@pytest.mark.parametrize("flag", [["--num-warps", "4"], ["--config", "1"],
                                  ["--constexpr", "BM=64"], ["--signature", "M=i32"]])  # fmt: skip
@pytest.mark.parametrize("command", ["import-triton", "solve"])
def test_build_options_on_a_ttgir_are_refused(capsys, command, flag):
    code, _, err = run(capsys, command, str(GEMM_TTGIR), *flag)
    assert code == 2 and f"{flag[0]} cannot apply to a .ttgir" in err, err
    assert str(GEMM_TTGIR) in err and len(err.strip().splitlines()) == 1


def test_loop_given_a_ttgir_line_is_refused_with_the_source_lines(capsys):
    ttgir_line = next(
        i for i, t in enumerate(GEMM_TTGIR.read_text().splitlines(), 1) if "scf.for" in t
    )
    code, _, err = run(capsys, "import-triton", str(GEMM_TTGIR), "--loop", str(ttgir_line))
    assert code == 2 and "that is a TTGIR line" in err and "source line(s) 30" in err, err
    code, _, err = run(capsys, "import-triton", str(GEMM_TTGIR), "--loop", "31")
    assert code == 2 and "no loop at that source line" in err and "line(s) 30" in err, err


@pytest.mark.parametrize("warps", ["0", "3", "64", "-4"])
def test_an_autotune_config_with_bad_num_warps_is_refused(capsys, tmp_path, warps):
    pytest.importorskip("triton")
    kernel = tmp_path / "autotuned_gemm.py"
    kernel.write_text(GEMM.read_text().replace("num_warps=8", f"num_warps={warps}"))
    shutil.copy(DATA / "triton" / "kernels.yaml", tmp_path / "kernels.yaml")
    before = kernel.read_bytes()
    code, _, err = run(capsys, "import-triton", f"{kernel}:autotuned_gemm", "--arch", "sm_90a")
    assert code == 2 and "config 0's num_warps must be one of 1, 2, 4, 8, 16, 32" in err, err
    assert kernel.read_bytes() == before


@pytest.mark.parametrize(
    "text",
    [
        b"aag 3 2 0 1 1\n2\n4\n99\n6 2 4\n",  # ASCII: output literal 99 > 2 M + 1 = 7
        b"aag 3 2 0 1 1\n2\n4\n8\n6 2 4\n",  # just past the last literal
        b"aig 3 2 0 1 1\n99\n\x02\x02",  # binary
    ],
)
@pytest.mark.parametrize("baseline", [[], ["--baseline", "list"]])
def test_an_aiger_output_literal_out_of_range_is_refused(capsys, tmp_path, text, baseline):
    path = tmp_path / "bad.aig"
    path.write_bytes(text)
    code, _, err = run(capsys, "gaus", str(path), *baseline)
    assert code == 2 and "output 0: literal" in err and "the header has M = 3" in err, err
    assert str(path) in err and len(err.strip().splitlines()) == 1


def test_an_aiger_output_at_the_last_literal_is_accepted(capsys, tmp_path):
    path = tmp_path / "ok.aig"
    path.write_bytes(b"aag 3 2 0 1 1\n2\n4\n7\n6 2 4\n")
    assert run(capsys, "gaus", str(path), "--baseline", "list")[0] == 0


ARCH = Path(__file__).resolve().parents[2] / "src" / "twill" / "data" / "arch"
LAYER = "problem:\n  R: 1\n  S: 1\n  P: 4\n  Q: 4\n  C: 8\n  K: 8\n  N: 1\n"


@pytest.mark.parametrize(
    ("old", "new", "needle"),
    [
        ("- name: Accumulator", "- name: Scratchpad", "duplicate level name"),
        ("entries: 131072", "entries: 1  # smaller than the level below", "run innermost"),
        ("entries: 512", "entries: 999999", "outside [1, 131072]"),
    ],
)
def test_an_arch_with_duplicate_or_reversed_levels_is_refused(capsys, tmp_path, old, new, needle):
    text = (ARCH / "gemmini_16x16_sp128k_acc32k.yaml").read_text()
    assert old in text
    arch = tmp_path / "arch.yaml"
    arch.write_text(text.replace(old, new, 1))
    layer = tmp_path / "layer.yaml"
    layer.write_text(LAYER)
    code, _, err = run(capsys, "map", str(layer), "--arch", str(arch), "--method", "random")
    assert code == 2 and needle in err and str(arch) in err, err


@pytest.mark.parametrize(("ops", "blocking"), [(3, 100_000), (1, 4000), (40, 400)])
@pytest.mark.parametrize("command", ["solve", "gaus"])
def test_hatschet_reservations_too_long_to_model_are_refused(capsys, tmp_path, command, ops,
                                                             blocking):  # fmt: skip
    """A unit blocked for ``blocking`` cycles per op: the modulo resource rows grow as the
    blocking time times the schedule length, and one op at 4,000 cycles did not finish in
    120 s; refused with the estimate and the limit (docs/formats.md)."""
    nodes = "".join(f'<node id="{i}"><data key="name">n{i}</data>'
                    f'<data key="uses_resource">A</data></node>' for i in range(ops))  # fmt: skip
    (tmp_path / "l.graphml").write_text(f'<graphml><graph edgedefault="directed">{nodes}'
                                        "</graph></graphml>")  # fmt: skip
    (tmp_path / "lRM.xml").write_text('<M><Resources><Resource name="A" limit="1" latency="1" '
                                      f'blockingTime="{blocking}"/></Resources></M>')  # fmt: skip
    code, _, err = run(capsys, command, str(tmp_path / "l.graphml"))
    assert code == 2 and "reservations too long to model" in err and "limit" in err, err


@pytest.mark.parametrize("command", ["solve", "import-triton", "bounds"])
def test_a_kernel_file_without_its_kernel_names_the_form_and_the_kernels(capsys, command):
    argv = [command, str(GEMM)] + (["--arch", "sm_90a"] if command != "bounds" else [])
    code, _, err = run(capsys, *argv)
    assert code == 2 and "FILE.py:KERNEL" in err and "autotuned_gemm.py:autotuned_gemm" in err
    assert "unsupported file type" not in err and len(err.strip().splitlines()) == 1


def test_warnings_reach_the_user_as_one_line_notes(capsys, monkeypatch):
    import warnings

    from twill.cli import _warnings_as_notes
    from twill.errors import ConvergenceWarning

    monkeypatch.delenv("TWILL_DEBUG", raising=False)
    with _warnings_as_notes():
        for _ in range(2):  # each distinct text once
            warnings.warn("lbfgs failed\nto converge", ConvergenceWarning, stacklevel=1)
    err = capsys.readouterr().err
    assert err == "twill: note: lbfgs failed to converge (ConvergenceWarning)\n", err


def test_the_exact_baseline_says_its_real_status(capsys):
    """``gaus --baseline exact`` on formulation C printed "CP-SAT OPTIMAL" beside status
    *feasible* (the model's objective is a proxy): the words now start with the status."""
    pytest.importorskip("ortools")
    argv = ["gaus", str(DATA.parent.parent / "data" / "epfl" / "ctrl.aig"), "--baseline", "exact",
            "--formulation", "C", "--II", "3", "--json"]  # fmt: skip
    code, out, _ = run(capsys, *argv)
    d = json.loads(out)
    assert code == 0 and d["message"].startswith(d["status"]), d["message"]
    assert "proxy model" in d["message"]
