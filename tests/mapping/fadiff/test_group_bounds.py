"""The group-consistent capacity bound: exact over its assignments, below every verified
plan, and tighter than the per-layer bound where a group's weights cannot all stay
resident."""

from __future__ import annotations

import itertools
import math

import numpy as np
import pytest

from twill.io.networks import load_network
from twill.mapping.arch import gemmini_arch
from twill.mapping.fadiff.bounds import _dram_words_floor, capacity_bound, group_capacity_bound
from twill.mapping.fadiff.fusion import FusionPlan, evaluate_plan
from twill.mapping.fadiff.group_bounds import (
    _domain,
    _LayerCharge,
    group_dram_words,
    group_edp_floor,
)
from twill.mapping.fadiff.groups import block_mapping
from twill.mapping.fadiff.train import all_dram_mapping
from twill.mapping.network import LayerEdge, Network, chain_network
from twill.mapping.workload import Layer


def _residual_block() -> Network:
    x = Layer("x", {"P": 16, "Q": 16, "C": 16, "K": 32})
    c1 = Layer("c1", {"R": 3, "S": 3, "P": 16, "Q": 16, "C": 32, "K": 16})
    c2 = Layer("c2", {"P": 16, "Q": 16, "C": 16, "K": 32})
    return Network(
        "res",
        (x, c1, c2),
        (LayerEdge(0, 1, "block"), LayerEdge(1, 2, "chain"), LayerEdge(0, 2, "add")),
    )


def _gemm_pair(c: int) -> Network:
    """Two GEMMs with 1024 rows, 128 K-word intermediate, ``128·c`` weight words each."""
    return chain_network([Layer.gemm(1024, c, 128, name="l1"), Layer.gemm(1024, 128, c, name="l2")])


def test_frontier_minimum_equals_brute_force():
    """The dynamic programme returns the least total charge over every assignment of edges
    and modes (enumerated outright on a residual block and a GEMM pair, on two scratchpad
    sizes), in DRAM words and, per weight, in energy and cycles priced together."""
    from twill.mapping.fadiff.edp_floor import Pricing
    from twill.mapping.fadiff.group_bounds import _minimum

    nets = [_residual_block(), _gemm_pair(256)]
    archs = (gemmini_arch(16, 32, 32), gemmini_arch(16, 64, 32))
    for net, arch, pricing in itertools.product(nets, archs, (Pricing(), Pricing.around(30.0))):
        charges = [_LayerCharge.build(net, arch, j, pricing) for j in range(len(net.layers))]
        names = list(dict.fromkeys(v for c in charges for v in c.scope()))
        best = np.full(pricing.size, math.inf)
        for vals in itertools.product(*(_domain(net, v, charges) for v in names)):
            value = dict(zip(names, vals, strict=True)).__getitem__
            total, carried = np.zeros(pricing.size), ()
            for c in charges:  # in execution order, carrying the groups' resident words
                got, carried = c.words(value, carried)
                total = total + got
            best = np.minimum(best, total)
        least, _ = _minimum(net, arch, pricing)
        assert least == pytest.approx(best, rel=1e-12)
        if not pricing.weights:
            assert group_dram_words(net, arch) == pytest.approx(best[0], rel=1e-12)
            words, _ = group_edp_floor(net, arch, 30.0)  # the words ride along the priced pass
            assert words == pytest.approx(best[0], rel=1e-12)


def test_assignment_reproduces_the_bound():
    """The edges and modes that reach the bound are candidates and valid modes, and the
    charges under them, carried in execution order, add up to the bound."""
    from twill.mapping.fadiff.group_bounds import group_dram_assignment

    modes = {"one": 0, "reread": 1, "resident": 2}
    for net in (_residual_block(), _gemm_pair(256)):
        arch = gemmini_arch(16, 64, 32)
        got = group_dram_assignment(net, arch)
        assert set(got.fused) <= set(net.candidates) and len(got.modes) == len(net.layers)
        value = {("z", i): int(i in got.fused) for i in net.candidates}
        value.update({("u", j): modes[m] for j, m in enumerate(got.modes)})
        total, carried = 0.0, ()
        for j in range(len(net.layers)):
            charge, carried = _LayerCharge.build(net, arch, j).words(value.__getitem__, carried)
            total += float(charge[0])
        assert total == pytest.approx(got.words, rel=1e-12)


def _verified_block_plans(net: Network, arch, block_counts, fused_sets):  # noqa: ANN001, ANN202
    """Reports of every verified plan from the block re-mappings (one variant per layer)
    over ``block_counts`` and ``fused_sets``."""
    variants = itertools.product(("resident", "lean", "seed"), repeat=len(net.layers))
    for bp, vs in itertools.product(block_counts, list(variants)):
        maps = [
            block_mapping(ly, arch, all_dram_mapping(ly, arch), bp, variant=v)
            for ly, v in zip(net.layers, vs, strict=True)
        ]
        if None in maps:
            continue
        for fused in fused_sets:
            rep = evaluate_plan(net, arch, FusionPlan(net.name, tuple(maps), fused))
            if rep.valid:
                yield fused, rep


@pytest.mark.parametrize("c", [256, 384])
def test_group_bound_below_every_verified_plan_and_above_per_layer(c):
    """Two GEMMs whose weights each fit beside the blocked intermediate, but not both: the
    per-layer bound lets both stay resident, the group bound makes one of them re-read its
    weights per block (or the pair stay unfused). Every verified plan over block counts,
    re-mapping variants per layer and fused or not moves at least the group bound; at
    ``c = 384`` the best of them meets it."""
    net, arch = _gemm_pair(c), gemmini_arch(16, 64, 32)
    group = group_dram_words(net, arch)
    per_layer = sum(_dram_words_floor(net, arch, j) for j in range(len(net.layers)))
    assert group > 1.5 * per_layer
    moved = [
        r.dram_bytes
        for _, r in _verified_block_plans(net, arch, (1, 2, 4, 8, 16, 32, 64, 128), ((), (0,)))
    ]
    assert moved and min(moved) >= group * (1 - 1e-12)
    if c == 384:
        assert min(moved) == pytest.approx(group, rel=1e-9)


def test_group_bound_below_every_verified_plan_of_a_three_gemm_chain():
    """Three GEMMs whose weights fit two at a time beside the blocked intermediates, not
    three: the resident words carried along the chain keep the bound below every verified
    plan (block counts, a re-mapping variant per layer, any fused subset) and above the
    per-layer bound."""
    c = 192
    layers = [Layer.gemm(1024, c, 128, name="l1"), Layer.gemm(1024, 128, c, name="l2")]
    net = chain_network([*layers, Layer.gemm(1024, c, 128, name="l3")])
    arch = gemmini_arch(16, 64, 32)
    group = group_dram_words(net, arch)
    assert group > 1.3 * sum(_dram_words_floor(net, arch, j) for j in range(3))
    plans = list(_verified_block_plans(net, arch, (1, 4, 16, 64), ((), (0,), (1,), (0, 1))))
    assert all(r.dram_bytes >= group * (1 - 1e-12) for _, r in plans)
    assert sum(bool(fused) for fused, _ in plans) >= 10


def test_group_capacity_bound_between_per_layer_and_unfused(benchmark_data):
    """Never below the per-layer capacity bound (energy; cycles equal), strictly above it
    on ResNet-50 in 128 KB, where a bottleneck's weights cannot all stay resident."""
    from twill.mapping.fadiff.bounds import unfused_bound

    root = benchmark_data / "dosa" / "workloads"
    for name in ("resnet50", "bert"):
        net, arch = load_network(name, root), gemmini_arch()
        (e, c), (eg, cg) = capacity_bound(net, arch), group_capacity_bound(net, arch)
        eu, _ = unfused_bound(net, arch)
        assert e <= eg <= eu * (1 + 1e-12) and cg == c
        if name == "resnet50":
            assert eg > 1.01 * e


def test_wide_fan_out_gives_up_quickly_and_the_bound_stays_valid():
    """A layer read by 20 layers (T5's encoder output feeding every decoder block) would
    enumerate 2^20+ assignments per state: the programme gives up (None) at once and
    fusion_bounds falls back to the per-layer capacity bound, which still bounds every plan."""
    from twill.mapping.fadiff.bounds import fusion_bounds

    src = Layer.gemm(64, 64, 64, name="enc")
    readers = [Layer.gemm(64, 64, 64, name=f"dec{i}") for i in range(20)]
    net = Network(
        "fan", (src, *readers), tuple(LayerEdge(0, i + 1, "chain") for i in range(len(readers)))
    )
    arch = gemmini_arch()
    assert group_dram_words(net, arch) is None
    plan = FusionPlan(net.name, tuple(all_dram_mapping(ly, arch) for ly in net.layers))
    bounds = fusion_bounds(net, arch, plan)
    assert bounds.capacity_edp <= evaluate_plan(net, arch, plan).edp
    assert not bounds.group_floor


def test_a_passed_deadline_gives_the_per_layer_bound_and_says_so():
    """``fusion_bounds(stop=...)``: a deadline already passed stops the group programme
    before its first layer; the capacity bound is then the per-layer one, still a bound of
    the plan, and ``group_floor`` says the group bound is missing. Without a deadline the
    same network gets the group bound, at least as high."""
    from twill.mapping.fadiff.bounds import fusion_bounds

    net = chain_network([Layer.gemm(64, 64, 64, name=f"l{i}") for i in range(3)])
    arch = gemmini_arch()
    plan = FusionPlan(net.name, tuple(all_dram_mapping(ly, arch) for ly in net.layers))
    cut, full = fusion_bounds(net, arch, plan, stop=0.0), fusion_bounds(net, arch, plan)
    assert not cut.group_floor and cut.capacity_edp == cut.capacity_layer_edp
    assert full.group_floor and full.capacity_edp >= cut.capacity_edp
    assert full.capacity_edp <= evaluate_plan(net, arch, plan).edp
