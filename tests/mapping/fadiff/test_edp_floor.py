"""EDP floors with energy and cycles priced together per scratchpad tile: the geometry is
exact, every sampled mapping lies above its layer's floors, and the bound is tighter than
the product of separate floors where the tile with the fewest DRAM words leaves the array
idle."""

from __future__ import annotations

import itertools
import math

import numpy as np
import pytest

from twill.mapping.arch import gemmini_arch
from twill.mapping.fadiff.bounds import layer_edp_floor, unfused_bound
from twill.mapping.fadiff.edp_floor import (
    Pricing,
    lower_hull,
    min_product_of_sums,
    min_product_over_lines,
)
from twill.mapping.network import Network
from twill.mapping.workload import Layer


def _random_layers(rng: np.random.Generator, n: int) -> list[np.ndarray]:
    return [rng.uniform(1, 10, size=(int(rng.integers(1, 7)), 2)) for _ in range(n)]


def test_min_product_of_sums_equals_brute_force():
    """One point per layer, least (ΣE)·(ΣD): the Minkowski sum of the hulls finds the
    exact minimum of every combination (200 random instances of 1-4 layers)."""
    rng = np.random.default_rng(3)
    for _ in range(200):
        layers = _random_layers(rng, int(rng.integers(1, 5)))
        hulls = [lower_hull(p[:, 0], p[:, 1]) for p in layers]
        e, c = min_product_of_sums(hulls)
        best = min(
            sum(p[0] for p in pick) * sum(p[1] for p in pick) for pick in itertools.product(*layers)
        )
        assert e * c == pytest.approx(best, rel=1e-12)


def test_min_product_over_lines_is_a_lower_bound_and_tight_with_many_lines():
    """Lines ``a·E + b·D ≥ min Σ (a·E_j + b·D_j)`` from the same instances: never above the
    exact minimum, and within 1 % of it with weights over a wide range."""
    rng = np.random.default_rng(5)
    for _ in range(100):
        layers = _random_layers(rng, 3)
        hulls = [lower_hull(p[:, 0], p[:, 1]) for p in layers]
        e, c = min_product_of_sums(hulls)
        weights = [(1.0, 0.0), (0.0, 1.0)] + [(1.0, 2 ** (k / 8)) for k in range(-40, 41)]
        lines = [
            (a, b, sum(float((a * p[:, 0] + b * p[:, 1]).min()) for p in layers))
            for a, b in weights
        ]
        got = min_product_over_lines(lines)
        assert got <= e * c * (1 + 1e-12)
        assert got >= 0.99 * e * c


def test_lower_hull_keeps_only_the_convex_pareto_front():
    e = np.array([1.0, 2.0, 3.0, 2.0, 4.0, np.inf])
    c = np.array([5.0, 2.0, 1.9, 4.0, 1.0, 0.5])
    assert lower_hull(e, c) == [(1.0, 5.0), (2.0, 2.0), (4.0, 1.0)]
    assert lower_hull(np.array([np.inf]), np.array([1.0])) == []


def test_priced_floors_hold_for_random_and_polished_mappings():
    """Lemma behind the per-tile floors: every valid mapping of a conv, a GEMM, a depthwise,
    a strided 1×1 and a strided ResNet stage-4 1×1 on three Gemmini sizes (random
    factorisations and loop orders, and the read-out polish from the all-DRAM mapping and
    the floor starts) has ``a·E + b·D`` at least the least price over its layer's tiles
    for every weight, and an EDP at least the layer's unfused EDP floor. The polished
    mappings come within 5 % of the floors for every weight: they are tight."""
    from twill.io.timeloop import read_arch, shipped_archs
    from twill.mapping.cost.analytical import batch_from_mappings, evaluate_batch
    from twill.mapping.fadiff.floors import tile_row_chunks
    from twill.mapping.fadiff.polish import floor_starts, polish_mapping
    from twill.mapping.fadiff.train import all_dram_mapping
    from twill.mapping.search.random import sample_batch

    layers = [
        Layer("conv", {"R": 3, "S": 3, "P": 14, "Q": 14, "C": 64, "K": 64}),
        Layer("gemm", {"P": 128, "C": 768, "K": 96}),
        Layer("dw", {"R": 3, "S": 3, "P": 14, "Q": 14}, groups=32),
        Layer("down", {"P": 28, "Q": 28, "C": 64, "K": 128}, w_stride=2, h_stride=2),
        Layer("s4", {"P": 28, "Q": 28, "C": 256, "K": 512}, w_stride=2, h_stride=2),
    ]
    wide = read_arch(shipped_archs()["gemmini_32x32_sp128k_acc64k"])
    for arch in (gemmini_arch(), gemmini_arch(16, 32, 32), wide):
        for ly in layers:
            start = all_dram_mapping(ly, arch)
            starts = [start, *floor_starts(ly, arch, start)]
            polished = batch_from_mappings([polish_mapping(ly, arch, m) for m in starts])
            sampled = evaluate_batch(ly, arch, sample_batch(ly, arch, 2000, seed=7))
            tuned = evaluate_batch(ly, arch, polished)
            assert sampled.valid.sum() >= 10 and tuned.valid.all()
            energy = np.concatenate([sampled.energy_pj[sampled.valid], tuned.energy_pj])
            cycles = np.concatenate([sampled.cycles[sampled.valid], tuned.cycles])
            pricing = Pricing.around(float(np.median(tuned.energy_pj / tuned.cycles)))
            least = np.full(pricing.size, np.inf)
            for rows in tile_row_chunks(ly, arch):
                words = rows.row_words(False, False, False, 0.0, np.ones(3, dtype=np.int64))
                least = np.minimum(least, pricing.least(rows, words, arch))
            for (a, b), floor in zip(pricing.weights, least, strict=True):
                price = a * energy + b * cycles
                assert np.all(price >= floor * (1 - 1e-9)), (ly.name, arch.name, a, b)
                assert price.min() <= 1.05 * floor, (ly.name, arch.name, a, b)
            net = Network(ly.name, (ly,))
            assert np.all(energy * cycles >= layer_edp_floor(net, arch, unfused=True) * (1 - 1e-9))


def test_priced_floor_is_tighter_where_the_fewest_words_idle_the_array():
    """RetinaNet's P3 3×3 head on the default Gemmini: the tile that reads each word once
    keeps a 115 K-word input slab and leaves room for 4-8 output channels, so a quarter of
    the array's columns or less compute; priced together, the EDP floor rises above the
    product of the separate floors."""
    ly = Layer("p3_2", {"R": 3, "S": 3, "P": 28, "Q": 28, "C": 256, "K": 256})
    net, arch = Network("p3", (ly,)), gemmini_arch()
    e, c = unfused_bound(net, arch)
    priced = layer_edp_floor(net, arch, unfused=True)
    assert priced > 1.05 * e * c
    assert math.isfinite(priced)


def test_register_reuse_rule_only_on_gemmini_shaped_levels():
    """With more than one register per PE a weight may be reused across loops the rule does
    not count, so the per-tile floors fall back to reading each weight once."""
    import dataclasses

    from twill.mapping.fadiff.floors import _one_weight_registers

    arch = gemmini_arch()
    wider = dataclasses.replace(arch.levels[0], entries=4)
    other = dataclasses.replace(arch, levels=(wider, *arch.levels[1:]))
    assert _one_weight_registers(arch) and not _one_weight_registers(other)
    ly = Layer("s4", {"P": 28, "Q": 28, "C": 256, "K": 512}, w_stride=2, h_stride=2)
    net = Network("s4", (ly,))
    assert layer_edp_floor(net, other, unfused=True) < layer_edp_floor(net, arch, unfused=True)
