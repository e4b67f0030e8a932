"""Co-design by gradient and its sampling baselines (issue 52, item 4) on a two-layer network:
every answer is a legal Gemmini within the area budget whose mappings verify and whose EDP is
the exact model's, the baselines spend at most the budget they are given, the same seed gives
the same answer."""

from __future__ import annotations

import pytest

pytest.importorskip("torch")

from twill.mapping.area import gemmini_area_mm2  # noqa: E402
from twill.mapping.cost.analytical import evaluate  # noqa: E402
from twill.mapping.mapping import verify_mapping  # noqa: E402
from twill.mapping.search.codesign import (  # noqa: E402
    CodesignPoint,
    CodesignSettings,
    codesign_gradient,
    codesign_grid,
    codesign_random,
    is_legal,
)
from twill.mapping.workload import Layer  # noqa: E402

LAYERS = [
    Layer("conv", {"P": 14, "Q": 14, "C": 32, "K": 64, "R": 3, "S": 3}, count=2),
    Layer.gemm(64, 128, 96),
]
CFG = CodesignSettings(steps=10, readout_every=5, seed=1, pe_dims=(8, 16),
                       scratchpad_kbs=(64, 128), accumulator_kbs=(16, 32))  # fmt: skip


def _check(point: CodesignPoint | None, budget: float) -> CodesignPoint:
    assert point is not None
    hw = (point.pe_dim, point.scratchpad_kb, point.accumulator_kb)
    assert is_legal(hw, CFG) and gemmini_area_mm2(*hw) <= budget * (1 + 1e-12)
    arch = point.arch
    reports = [evaluate(ly, arch, m) for ly, m in zip(LAYERS, point.mappings, strict=True)]
    for ly, m in zip(LAYERS, point.mappings, strict=True):
        assert verify_mapping(ly, arch, m) == []
    energy = sum(ly.count * r.energy_uj for ly, r in zip(LAYERS, reports, strict=True))
    cycles = sum(ly.count * r.cycles for ly, r in zip(LAYERS, reports, strict=True))
    assert point.energy_uj == pytest.approx(energy, rel=1e-12)
    assert point.cycles == cycles
    return point


def test_gradient_gives_a_legal_verified_point_and_counts_its_evaluations():
    got = _check(codesign_gradient(LAYERS, CFG), CFG.budget_mm2)
    # 3 dataflows x 2 layers per step, and per read-out (3: steps 0, 5, 10) on at most two
    # roundings of the hardware
    assert 10 * 6 < got.evaluations <= 10 * 6 + 3 * 2 * 6
    again = codesign_gradient(LAYERS, CFG)
    assert again is not None and (again.edp, again.evaluations) == (got.edp, got.evaluations)


@pytest.mark.parametrize("method", [codesign_random, codesign_grid])
def test_baselines_spend_at_most_the_budget(method):
    got = _check(method(LAYERS, 400, CFG), CFG.budget_mm2)
    assert 0 < got.evaluations <= 400


def test_a_tighter_area_budget_is_respected():
    cfg = CodesignSettings(steps=10, readout_every=5, seed=0, area_budget_mm2=0.2)
    for point in (codesign_gradient(LAYERS, cfg), codesign_random(LAYERS, 300, cfg)):
        assert point is not None and point.area_mm2 <= 0.2
