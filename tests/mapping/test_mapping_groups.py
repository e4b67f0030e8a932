"""Grouped and depthwise convolutions: the group count G through the workload spec, the
problem YAML, the cost model (exactly G times one group), CoSA (verified, proven optimal for
its objective) and the search baselines."""

from __future__ import annotations

import pytest

from twill.io.timeloop import build_layer, layer_yaml, validate_layer
from twill.mapping.arch import gemmini_arch, simba_arch
from twill.mapping.cost import evaluate
from twill.mapping.mapping import verify_mapping
from twill.mapping.pipeline import map_layer
from twill.mapping.result import Status
from twill.mapping.workload import Layer

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
    res = map_layer(DW, arch, mapper="cosa")
    assert res.status is Status.OPTIMAL  # proven optimal for the CoSA objective
    assert verify_mapping(DW, arch, res.mapping) == []
    rep = res.report  # the whole layer: all 32 groups
    assert rep.valid and rep.count == 1 and rep.macs == DW.total_macs
    assert rep.cycles == 32 * evaluate(Layer("one", dict(DW.dims), 2, 2), arch, res.mapping).cycles


def test_cost_is_groups_times_one_group():
    arch = simba_arch()
    one = Layer("one", dict(GROUPED.dims))
    res = map_layer(one, arch, mapper="cosa")
    a = evaluate(GROUPED, arch, res.mapping).weighted()
    b = evaluate(one, arch, res.mapping)
    assert a.energy_pj == pytest.approx(4 * b.energy_pj, rel=1e-12)
    assert a.cycles == 4 * b.cycles and a.macs == GROUPED.total_macs


@pytest.mark.parametrize("mapper", ["random", "hybrid"])
def test_baselines_map_grouped_layers(mapper):
    res = map_layer(GROUPED, simba_arch(), mapper=mapper, seed=1, n_valid=50)
    assert res.mapping is not None and verify_mapping(GROUPED, simba_arch(), res.mapping) == []
    assert res.report.macs == GROUPED.total_macs
