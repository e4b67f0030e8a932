"""sched/problems.py: check() lists every defect; verify() reports every violation."""

from __future__ import annotations

import dataclasses

import pytest

from twill.errors import InvalidProblemError
from twill.kernels import flash_attention_forward_simplified
from twill.results import WarpSchedule
from twill.sched.problems import ModuloProblem, WarpSpecProblem


class TestCheck:
    def test_valid_instance_passes(self) -> None:
        ModuloProblem(flash_attention_forward_simplified(), min_II=1, max_II=5).check()

    def test_every_defect_is_listed(self) -> None:
        g = flash_attention_forward_simplified()
        bad_edge = dataclasses.replace(g.edges[0], dst="nowhere")
        g = dataclasses.replace(g, edges=(bad_edge, *g.edges[1:]))
        with pytest.raises(InvalidProblemError) as err:
            ModuloProblem(g, min_II=0, max_II=True).check()  # type: ignore[arg-type]
        text = "\n".join(err.value.defects)
        assert "nowhere" in text and "min_II" in text and "max_II" in text
        assert len(err.value.defects) >= 3

    def test_min_above_max(self) -> None:
        p = ModuloProblem(flash_attention_forward_simplified(), min_II=4, max_II=2)
        assert p.defects() == ["min_II (4) must not exceed max_II (2)"]


class TestVerify:
    def test_fig1_schedule_and_a_broken_one(self) -> None:
        p = ModuloProblem(flash_attention_forward_simplified())
        assert p.verify({"S": 0, "P": 2, "O": 3}, 2).ok
        verdict = p.verify({"S": 0, "P": 0, "O": 3}, 2)
        assert not verdict.ok and {v.rule for v in verdict.violations} == {"dependence"}

    def test_warp_schedule_checked_for_both_models(self) -> None:
        g = flash_attention_forward_simplified()
        good = WarpSchedule.of(g, {"S": 0, "P": 2, "O": 3}, {"S": 0, "P": 0, "O": 0}, 2, 4)
        assert WarpSpecProblem(g).verify(good).ok
        clash = WarpSchedule.of(g, {"S": 0, "P": 2, "O": 2}, {"S": 0, "P": 0, "O": 0}, 2, 4)
        assert not WarpSpecProblem(g).verify(clash).ok
