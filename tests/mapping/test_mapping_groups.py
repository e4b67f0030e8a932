"""Grouped and depthwise convolutions: the group count G through the workload spec, the
problem YAML, the mapping (G factors, DOSA strings, verifier), the cost model (G times one group
when the groups run one after another, less when they share the array), CoSA (G's primes
placed like any dimension; verified, proven optimal for its objective) and the baselines."""

from __future__ import annotations

import pytest

from tests.mapping.mappers import mapped
from twill.io.timeloop import build_layer, layer_yaml, read_mapping, validate_layer
from twill.mapping.arch import gemmini_arch, simba_arch
from twill.mapping.cost import evaluate
from twill.mapping.mapping import parse_dosa_mapping, timeloop_mapping_dict, verify_mapping
from twill.mapping.workload import Dim, Layer
from twill.results import Status

DW = Layer("dw", {"R": 3, "S": 3, "P": 28, "Q": 28}, w_stride=2, h_stride=2, groups=32)
GROUPED = Layer("gc", {"R": 3, "S": 3, "P": 14, "Q": 14, "C": 8, "K": 8}, groups=4)


def test_key_and_yaml_round_trip():
    plain = Layer("p", {"P": 7, "C": 4, "K": 8})
    assert plain.key == "1_1_7_1_4_8_1_1_1_1_1"  # G = 1 leaves the key as it was
    assert DW.key.endswith("_g32") and Layer.from_key(DW.key).groups == 32
    assert DW.total_macs == 32 * 9 * 28 * 28
    doc = layer_yaml(DW)
    assert doc["problem"]["G"] == 32 and "G" not in layer_yaml(plain)["problem"]
    assert validate_layer(doc) == []
    assert build_layer(doc, "dw") == DW
    assert any("G" in m for m in validate_layer({"problem": {"C": 1, "K": 1, "G": 0}}))


@pytest.mark.parametrize("arch", [simba_arch(), gemmini_arch()], ids=["simba", "gemmini"])
def test_cosa_depthwise_verified_and_optimal(arch):
    res = mapped("cosa", DW, arch)
    assert res.status is Status.OPTIMAL  # proven optimal for the CoSA objective
    assert verify_mapping(DW, arch, res.solution.mapping) == []
    assert res.solution.mapping.dim_product(Dim.G) == 32  # G's primes placed by the MIP
    rep = res.solution.report  # the whole layer: all 32 groups
    assert rep.valid and rep.count == 1 and rep.macs == DW.total_macs
    assert rep.to_dict() == evaluate(DW, arch, res.solution.mapping).to_dict()
    if arch.levels[-2].spatial_dims is not None:  # Gemmini: G may not be spatial
        assert all(res.solution.mapping.spatial_factor(m, Dim.G) == 1 for m in range(arch.n_levels))


def test_spreading_groups_beats_one_group_at_a_time():
    """On Simba a depthwise group uses 9 of 1024 MACs; CoSA spreads groups over the PEs."""
    arch = simba_arch()
    spread = mapped("cosa", DW, arch)
    one = mapped("cosa", Layer("one", dict(DW.dims), 2, 2), arch)
    serial = evaluate(DW, arch, one.solution.mapping)  # no G factors: the groups one after another
    assert serial.valid and serial.macs == DW.total_macs
    assert any(spread.solution.mapping.spatial_factor(m, Dim.G) > 1 for m in range(arch.n_levels))
    assert spread.solution.report.cycles < serial.cycles
    assert spread.solution.report.utilisation > serial.utilisation


def test_group_factors_in_strings_and_verifier():
    layer = Layer("g", {"P": 56, "Q": 56, "C": 64, "K": 64}, groups=8)
    text = (
        "L5[WIO] G4 Q7 P2 K2 - L4[IO] P2X Q2X K2X G2X - L3[I] P2X Q4X - L2[W] K2 - "
        "L1[O] K4 C16 C4X K2X - L0[W] P7"
    )
    m = parse_dosa_mapping(text)
    assert str(m) == text and m.group_temporal[5] == 4 and m.group_spatial[4] == 2
    assert verify_mapping(layer, simba_arch(), m) == []
    assert read_mapping(timeloop_mapping_dict(m, simba_arch()), simba_arch()) == m
    g16 = Layer("g", dict(layer.dims), groups=16)
    assert {v.rule for v in verify_mapping(g16, simba_arch(), m)} == {"factors.product"}
    gem = parse_dosa_mapping("L3[WIO] G2 P4 - L2[WI] G4X - L1[O] C2X - L0[W] N1")
    bad = verify_mapping(Layer("x", {"P": 4, "C": 2}, groups=8), gemmini_arch(), gem)
    assert [v.rule for v in bad] == ["spatial.dim"] and bad[0].at["dim"] == "G"


def test_cost_is_groups_times_one_group():
    arch = simba_arch()
    one = Layer("one", dict(GROUPED.dims))
    res = mapped("cosa", one, arch)
    a = evaluate(GROUPED, arch, res.solution.mapping)
    b = evaluate(one, arch, res.solution.mapping)
    assert a.energy_pj == pytest.approx(4 * b.energy_pj, rel=1e-12)
    assert a.cycles == 4 * b.cycles and a.macs == GROUPED.total_macs


@pytest.mark.parametrize("mapper", ["random", "hybrid"])
def test_baselines_map_grouped_layers(mapper):
    """The random and hybrid baselines place G's primes too (spatially where allowed)."""
    res = mapped(mapper, GROUPED, simba_arch(), seed=1, n_valid=50)
    assert (
        res.solution.mapping is not None
        and verify_mapping(GROUPED, simba_arch(), res.solution.mapping) == []
    )
    assert (
        res.solution.mapping.group_temporal is not None
        and res.solution.mapping.dim_product(Dim.G) == 4
    )
    assert res.solution.report.macs == GROUPED.total_macs
    gem = mapped(mapper, DW, gemmini_arch(), seed=1, n_valid=50).solution.mapping
    assert verify_mapping(DW, gemmini_arch(), gem) == [] and gem.dim_product(Dim.G) == 32
