"""Discrete read-out polish: valid, never worse, and it removes a partial-sum split."""

from __future__ import annotations

import numpy as np

from twill.mapping.arch import gemmini_arch
from twill.mapping.cost.analytical import evaluate
from twill.mapping.fadiff.polish import PolishGoal, polish_mapping, polish_mappings
from twill.mapping.mapping import parse_dosa_mapping, verify_mapping
from twill.mapping.workload import Dim, Layer


def test_polish_removes_partial_sums_of_resnet_1x1():
    """ResNet-50's 1x1 128->512 on 28x28 as the layer-wise baselines mapped it: C split at
    DRAM (partial sums, DRAM-bound). One repair pair (C into the scratchpad, Q out to DRAM)
    reaches a compute-bound mapping with |O| output traffic."""
    arch = gemmini_arch()
    ly = Layer.from_key("1_1_28_28_128_512_1_1_1", name="r50")
    m0 = parse_dosa_mapping(
        "L3[WIO] C2 - L2[WI] Q7 P7 K16X - L1[O] K32 C4 C16X - L0[W] Q4 P4", ly, arch
    )
    r0 = evaluate(ly, arch, m0)
    m1 = polish_mapping(ly, arch, m0, PolishGoal(w_energy=1 / r0.energy_pj, w_cycles=1 / r0.cycles))
    assert verify_mapping(ly, arch, m1) == []
    r1 = evaluate(ly, arch, m1)
    assert r0.cycles > r0.compute_cycles  # the start is DRAM-bound
    assert r1.edp < 0.7 * r0.edp
    assert r1.accesses["DRAM"]["O"]["reads"] == 0  # no partial sums left
    assert r1.dram_bytes < r0.dram_bytes


def test_polish_respects_frozen_dram_level_and_tile_limit():
    arch = gemmini_arch()
    ly = Layer.from_key("3_3_14_14_64_64_1_1_1", name="c")
    m0 = parse_dosa_mapping("L3[WIO] P7 K4 - L2[WI] K16X - L1[O] C4 S3 R3 Q14 P2 C16X - L0[W]")
    assert verify_mapping(ly, arch, m0) == []
    r0 = evaluate(ly, arch, m0)
    limit = np.full((arch.n_levels, 3), np.inf)
    limit[2, :] = [r0.tiles["Scratchpad"]["W"], r0.tiles["Scratchpad"]["I"], np.inf]
    m1 = polish_mapping(ly, arch, m0, PolishGoal(freeze_top=True, tile_limit=limit))
    assert m1.temporal[3] == m0.temporal[3] and m1.order[3] == m0.order[3]
    r1 = evaluate(ly, arch, m1)
    assert r1.tiles["Scratchpad"]["W"] <= r0.tiles["Scratchpad"]["W"]
    assert r1.tiles["Scratchpad"]["I"] <= r0.tiles["Scratchpad"]["I"]
    assert r1.energy_pj / r0.energy_pj + r1.cycles / r0.cycles <= 2.0


def test_polish_mappings_never_raise_the_network_edp():
    arch = gemmini_arch()
    layers = [Layer.from_key("1_1_128_1_64_128_1_1_1"), Layer.from_key("1_1_128_1_128_64_1_1_1")]
    starts = [
        parse_dosa_mapping("L3[WIO] K8 C4 P8 - L2[WI] K16X - L1[O] C16X - L0[W] P16"),
        parse_dosa_mapping("L3[WIO] C8 K4 P16 - L2[WI] K16X - L1[O] C16X - L0[W] P8"),
    ]

    def edp(ms):
        rs = [evaluate(ly, arch, m) for ly, m in zip(layers, ms, strict=True)]
        return sum(r.energy_uj for r in rs) * sum(r.cycles for r in rs)

    out = polish_mappings(layers, arch, starts)
    assert all(verify_mapping(ly, arch, m) == [] for ly, m in zip(layers, out, strict=True))
    assert all(verify_mapping(ly, arch, m) == [] for ly, m in zip(layers, starts, strict=True))
    assert edp(out) < edp(starts)
    assert edp(polish_mappings(layers, arch, out)) <= edp(out)


def test_restarts_reach_what_single_moves_miss_on_bert_ffn():
    """BERT's 768x3072 matmul as the layer-wise gradient left it: C and K split at DRAM. The
    one-block re-mapping restart (K only at DRAM) polishes to a lower EDP than the local
    search from the start alone."""
    arch = gemmini_arch()
    ly = Layer.from_key("1_1_128_1_768_3072_1_1_1", name="ffn1")
    m0 = parse_dosa_mapping(
        "L3[WIO] C2 K24 - L2[WI] K2 K16X - L1[O] K4 C24 C16X - L0[W] P128", ly, arch
    )
    assert verify_mapping(ly, arch, m0) == []
    plain = polish_mappings([ly], arch, [m0], restarts=False)[0]
    multi = polish_mappings([ly], arch, [m0])[0]
    assert verify_mapping(ly, arch, multi) == []
    assert evaluate(ly, arch, multi).edp < evaluate(ly, arch, plain).edp
    assert multi.factor(3, Dim.C) == 1  # no DRAM C loop: no partial sums


def test_floor_starts_reach_the_tiling_floor():
    """The floor starts are valid mappings whose DRAM words equal the tiling floor (the
    fewest any mapping can move unfused), on a GEMM and a 3x3 convolution, in the default
    Gemmini and a 32x32 array with 256 KB: the floor is reached, and the starts reach it."""
    from twill.io.timeloop import read_arch, shipped_archs
    from twill.mapping.cost.analytical import batch_from_mappings, evaluate_batch
    from twill.mapping.fadiff.floors import tiling_words_floor
    from twill.mapping.fadiff.polish import floor_starts
    from twill.mapping.fadiff.train import all_dram_mapping

    layers = [
        Layer.gemm(128, 3072, 768, name="ffn2"),
        Layer("conv", {"R": 3, "S": 3, "P": 28, "Q": 28, "C": 128, "K": 128}),
    ]
    for arch in (gemmini_arch(), read_arch(shipped_archs()["gemmini_32x32_sp256k_acc128k"])):
        top = arch.n_levels - 1
        for ly in layers:
            starts = floor_starts(ly, arch, all_dram_mapping(ly, arch))
            assert len(starts) == 3
            assert all(verify_mapping(ly, arch, m) == [] for m in starts)
            c = evaluate_batch(ly, arch, batch_from_mappings(starts))
            words = c.reads[:, top, 0] + c.reads[:, top, 1] + c.updates[:, top, 2]
            words = (words + c.reads[:, top, 2]) * c.instances_used[:, top]
            assert np.allclose(words, tiling_words_floor(ly, arch)[False, False])


def test_floor_starts_lower_bert_ffn_on_a_32x32_array():
    """BERT's FFN down-projection (3072 -> 768) on a 32x32 Gemmini with 256 KB from a
    mapping with 19 % more DRAM words than the floor (K split at DRAM with the input read
    per K block): with the floor starts the polished EDP is lower than without them."""
    from twill.io.timeloop import read_arch, shipped_archs
    from twill.mapping.fadiff.polish import _restarts, floor_starts
    from twill.mapping.fadiff.train import all_dram_mapping

    arch = read_arch(shipped_archs()["gemmini_32x32_sp256k_acc128k"])
    ly = Layer.gemm(128, 3072, 768, name="ffn2")
    m0 = polish_mappings([ly], arch, [all_dram_mapping(ly, arch)], restarts=False)[0]
    plain = min(
        (polish_mapping(ly, arch, x) for x in [m0, *_restarts(ly, arch, m0)]),
        key=lambda m: evaluate(ly, arch, m).edp,
    )
    best = polish_mappings([ly], arch, [m0])[0]
    assert floor_starts(ly, arch, m0)
    assert evaluate(ly, arch, best).edp < evaluate(ly, arch, plain).edp
