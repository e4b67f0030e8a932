"""Fusion upper bounds and the spec §12 fully fused DRAM floor."""

from __future__ import annotations

from twill.io.networks import load_network
from twill.mapping.arch import gemmini_arch
from twill.mapping.fadiff.bounds import dram_floor_bytes, fusion_bounds, ideal_bound
from twill.mapping.fadiff.fusion import FusionPlan, evaluate_plan
from twill.mapping.fadiff.train import all_dram_mapping


def test_resnet50_floor_matches_spec(shared_benchmarks):
    net = load_network("resnet50", shared_benchmarks / "dosa" / "workloads")
    # spec §12: 25 502 912 B weights + 157 323 B input (halo formula) + 1 000 B output
    assert dram_floor_bytes(net) == 25_502_912 + 157_323 + 1_000


def test_bounds_are_ordered_and_below_every_plan(shared_benchmarks):
    arch = gemmini_arch()
    net = load_network("bert", shared_benchmarks / "dosa" / "workloads")
    plan = FusionPlan("bert", tuple(all_dram_mapping(ly, arch) for ly in net.layers))
    b = fusion_bounds(net, arch, plan)
    assert 1.0 <= b.gain_candidates <= b.gain_all <= b.gain_ideal
    rep = evaluate_plan(net, arch, plan)
    assert abs(rep.edp - b.edp) <= 1e-9 * rep.edp
    e, c = ideal_bound(net, arch)
    assert rep.energy_pj >= e and rep.cycles >= c
    assert b.all_free_dram_bytes >= b.floor_dram_bytes
    assert c == 2_957_312  # spec §10 divisor-limited compute bound of BERT
