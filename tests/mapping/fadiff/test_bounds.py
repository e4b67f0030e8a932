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


def test_unfused_bound_below_every_layer_wise_plan():
    """The unfused bound holds for any mappings, including strided 1x1, dilated and depthwise
    layers (2 000 random factorisations each, the valid ones checked), and sits between the
    ideal bound and the cost of real layer-by-layer plans."""
    import numpy as np

    from twill.mapping.cost.analytical import evaluate_batch
    from twill.mapping.fadiff.bounds import unfused_bound
    from twill.mapping.fadiff.networks import Network
    from twill.mapping.search.random import sample_batch
    from twill.mapping.workload import Layer

    arch = gemmini_arch()
    layers = [
        Layer("down", {"P": 28, "Q": 28, "C": 64, "K": 128}, w_stride=2, h_stride=2),
        Layer(
            "dil", {"R": 3, "S": 3, "P": 16, "Q": 16, "C": 32, "K": 32}, w_dilation=2, h_dilation=2
        ),  # fmt: skip
        Layer("dw", {"R": 3, "S": 3, "P": 28, "Q": 28}, groups=64, w_stride=2, h_stride=2),
    ]
    for ly in layers:
        e, c = unfused_bound(Network(ly.name, (ly,)), arch)
        cost = evaluate_batch(ly, arch, sample_batch(ly, arch, 2000, seed=1))
        ok = cost.valid
        assert ok.sum() > 20
        assert np.all(cost.energy_pj[ok] >= e * (1 - 1e-12))
        assert np.all(cost.cycles[ok] >= c * (1 - 1e-12))
    net = Network("p", tuple(layers))
    plan = FusionPlan("p", tuple(all_dram_mapping(ly, arch) for ly in net.layers))
    e, c = unfused_bound(net, arch)
    rep = evaluate_plan(net, arch, plan)
    assert rep.energy_pj >= e and rep.cycles >= c
    ei, ci = ideal_bound(net, arch)
    assert e >= ei and c >= ci


def test_accumulator_floor_holds_for_random_mappings():
    """Partial-sum reads: every valid mapping of a conv, a GEMM and a depthwise layer makes
    at least ``2·MACs/maxdiv(C) - |O|`` accumulator accesses, on two Gemmini sizes, and the
    floor is reached by some mapping's order of magnitude (it is not vacuous)."""
    import numpy as np

    from twill.io.timeloop import read_arch, shipped_archs
    from twill.mapping.cost.analytical import evaluate_batch
    from twill.mapping.fadiff.bounds import _accumulator_floor, _maxdiv
    from twill.mapping.search.random import sample_batch
    from twill.mapping.workload import Dim, Layer

    layers = [
        Layer("conv", {"R": 3, "S": 3, "P": 14, "Q": 14, "C": 64, "K": 64}),
        Layer("gemm", {"P": 128, "C": 768, "K": 96}),
        Layer("dw", {"R": 3, "S": 3, "P": 14, "Q": 14}, groups=32),
    ]
    for arch in (gemmini_arch(), read_arch(shipped_archs()["gemmini_32x32_sp512k_acc128k"])):
        acc = next(m for m, lv in enumerate(arch.levels) if lv.name == "Accumulator")
        for ly in layers:
            u = ly.total_macs / _maxdiv(ly.dim(Dim.C), arch.fanout(1))
            floor = _accumulator_floor(ly, arch, u)
            cost = evaluate_batch(ly, arch, sample_batch(ly, arch, 3000, seed=2))
            ok = cost.valid
            assert ok.sum() > 20
            got = cost.level_accesses[ok, acc]
            assert np.all(got >= floor * (1 - 1e-12))
            assert floor > u or ly.groups > 1  # the reads count where C is unrolled
            assert got.min() <= 4 * floor
