"""Where ptxas spills a compiled schedule, the register model is corrected (issue 48): the
limit set below the spilled schedule's peak in the model, the loop solved again, compiled."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from twill.cli import main
from twill.kernels import flash_attention_forward_simplified
from twill.results import WarpSchedule
from twill.sched.verify_warps import WarpRules, register_peaks, verify_warp_schedule
from twill.triton import SHIPPED_DIR


def test_register_peaks_is_the_limit_the_verifier_checks() -> None:
    """The peak :func:`register_peaks` reports is exactly the least register limit the
    verifier accepts: at the peak no ``registers`` violation, one below there is one."""
    g = flash_attention_forward_simplified()
    ws = WarpSchedule.of(g, {"S": 0, "P": 2, "O": 3}, dict.fromkeys("SPO", 0), 2, 4)
    peak = register_peaks(ws)[0]
    assert peak > max(i.regs for i in g.instructions)  # more than one value live at once

    def broken(limit: int) -> set[str]:
        rules = WarpRules.for_graph(g, registers_per_warp=limit)
        return {v.rule for v in verify_warp_schedule(ws, rules=rules)}

    assert "registers" not in broken(peak)
    assert "registers" in broken(peak - 1)


@pytest.mark.slow
def test_spilling_backward_is_corrected_to_no_spills(tmp_path: Path) -> None:
    """The H100 FlashAttention backward: Twill's optimum at the machine's 240 registers (I 30)
    spills in ptxas (2,392 bytes in Triton 3.9.0); ``twill compile`` lowers the model's limit
    below each spilled schedule's peak and solves again until ptxas spills nothing, and the
    summary says so: every try's limit, I, model peak and spill bytes, and the problem named
    with the limit it was solved under."""
    pytest.importorskip("triton")
    out = tmp_path / "out"
    argv = ["compile", f"{SHIPPED_DIR / 'kernels.py'}:fa_bwd", "--arch", "sm_90a"]
    assert main([*argv, "--total-time-limit", "60", "-o", str(out)]) == 0
    d = json.loads((out / "summary.json").read_text())
    assert (out / "fa_bwd.cubin").stat().st_size > 0
    assert d["spills"] == 0 and d["runnable"]
    reg = d["registers"]
    tries = reg["tries"]
    assert reg["corrected"] and len(tries) >= 2 and tries[0]["registers_per_warp"] == 240
    assert all(t["spills"] > 0 for t in tries[:-1]) and tries[-1]["spills"] == 0
    for before, after in zip(tries, tries[1:], strict=False):  # one below the spilled peak
        assert after["registers_per_warp"] == before["model_peak"] - 1
        assert after["model_peak"] <= after["registers_per_warp"]
    assert reg["limit"] == tries[-1]["registers_per_warp"]
    assert d["problem"].endswith(f"+registers<={reg['limit']}")
    assert d["I"] == tries[-1]["I"] >= tries[0]["I"]
