"""Hostile input, round 3 (issue 49): input that was accepted and must be refused.

Each case is a real command line; each must exit 2 with one message naming the file and the
item (no traceback) and leave its inputs as they were.
"""

from __future__ import annotations

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
