"""FSRCNN at 1080p (a built-in network written in code) and the no-gradient ablation."""

from __future__ import annotations

import pytest

from tests.mapping.mappers import fused
from twill.errors import InvalidProblemError
from twill.io.networks import load_network
from twill.mapping.arch import gemmini_arch
from twill.mapping.fadiff.bounds import fusion_bounds, ideal_bound
from twill.mapping.fadiff.fusion import FusionPlan, evaluate_plan, verify_plan
from twill.mapping.fadiff.heuristics import greedy_fusion
from twill.mapping.fadiff.train import all_dram_mapping, discrete_only
from twill.mapping.network import chain_network, fsrcnn
from twill.mapping.workload import Layer, Operand


def test_fsrcnn_1080p_shapes_follow_the_paper():
    net = load_network("fsrcnn")
    assert [ly.name for ly in net.layers][0] == "0_extract" and len(net.layers) == 8
    assert net.check() == [] and len(net.candidates) == 7
    # per LR pixel: 5x5x1x56 + 56x12 + 4 x 3x3x12x12 + 12x56 + deconv 4 phases x 5x5x56
    per_pixel = 25 * 56 + 56 * 12 + 4 * 9 * 144 + 12 * 56 + 4 * 25 * 56
    assert net.macs == 1920 * 1080 * per_pixel
    # the intermediates dwarf the weights: the case fusion is for
    inter = sum(ly.footprint(Operand.O) for ly in net.layers[:-1])
    weights = sum(ly.footprint(Operand.W) for ly in net.layers)
    assert inter > 10_000 * weights
    assert fsrcnn(64, 32, m=2).layers[2].dims == net.layers[2].dims | {"P": 64, "Q": 32}


def test_unknown_network_lists_the_image_networks():
    with pytest.raises(InvalidProblemError, match="fsrcnn"):
        load_network("srcnn")


def _small():
    a = Layer("a", {"R": 3, "S": 3, "P": 32, "Q": 32, "C": 8, "K": 32})
    b = Layer("b", {"P": 32, "Q": 32, "C": 32, "K": 8})
    c = Layer("c", {"R": 3, "S": 3, "P": 32, "Q": 32, "C": 8, "K": 32})
    return chain_network([a, b, c], "small")


def test_no_gradient_ablation_is_verified_and_beats_its_start():
    net, arch = _small(), gemmini_arch()
    start = FusionPlan("small", tuple(all_dram_mapping(ly, arch) for ly in net.layers))
    plan, rep, source = discrete_only(net, arch, [start])
    assert verify_plan(net, arch, plan) == []
    assert rep.edp == pytest.approx(evaluate_plan(net, arch, plan).edp)
    assert rep.edp <= evaluate_plan(net, arch, greedy_fusion(net, arch, start)).edp
    assert source
    # the ideal bound holds for every plan found, the ablation's included
    e, c = ideal_bound(net, arch)
    assert rep.energy_pj >= e and rep.cycles >= c
    assert fusion_bounds(net, arch, start).ideal_edp <= rep.edp
    with pytest.raises(InvalidProblemError):
        discrete_only(net, arch, [])


def test_fadiff_is_never_worse_than_its_gradient_off_ablation():
    """The ablation's start (each candidate, polished) seeds FADiff's group search too, so
    FADiff's plan is at least as good on the same candidates, whatever the gradient finds."""

    net, arch = _small(), gemmini_arch()
    start = FusionPlan("small", tuple(all_dram_mapping(ly, arch) for ly in net.layers))
    _, ablation, _ = discrete_only(net, arch, [start])
    result = fused(net, arch, steps=40, seed=0, candidates=[start])
    assert verify_plan(net, arch, result.solution.plan) == []
    assert result.solution.report.edp <= ablation.edp * (1 + 1e-12)
