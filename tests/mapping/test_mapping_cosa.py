"""CoSA MIP: reference optima (CoSA spec §4.7), backend agreement, verified mappings."""

from __future__ import annotations

import re

import pytest

from twill.io.timeloop import read_layer
from twill.mapping.arch import gemmini_arch, simba_arch
from twill.mapping.cosa import build_cosa_model, cosa_map
from twill.mapping.mapping import verify_mapping
from twill.mapping.workload import Layer
from twill.results import Status


def _reference(benchmarks) -> dict[tuple[str, str], float]:
    text = (benchmarks / "cosa" / "reference" / "cosa_v010_scip_all_layers.log").read_text()
    out = {}
    for m in re.finditer(r"^(\S+) (\S+) \|.*?SCIP status optimal obj ([\d.]+)", text, re.M):
        out[(m.group(1), m.group(2))] = float(m.group(3))
    return out


def _layer(benchmarks, net, name):
    return read_layer(benchmarks / "cosa" / "workloads" / net / f"{name}.yaml")


class TestModel:
    def test_size_matches_spec(self, shared_benchmarks):
        layer = _layer(shared_benchmarks, "resnet50_graph", "_outputs_input.5")
        model, ix, _ = build_cosa_model(layer, simba_arch(), gb_order="slots")
        assert ix.zn == 23  # 56=2^3*7 twice, 64=2^6 twice, R S N unit factors
        assert sum(1 for n in model.vars if n.startswith("X[")) == 1288  # spec: 1,288 binaries

    def test_tiny_layer_all_units(self):
        res = cosa_map(Layer("unit", {}), simba_arch(), time_limit=10)
        assert res.status is Status.OPTIMAL and res.report.cycles == 1


class TestReferenceOptima:
    """v0.1.0 optima measured with SCIP (shipped reference table), to 1e-3."""

    @pytest.mark.parametrize(
        "net,name",
        [("resnet50_graph", "_outputs_3356"), ("resnet50_graph", "_outputs_input.5")],
    )
    def test_cpsat_reproduces_reference(self, shared_benchmarks, net, name):
        ref = _reference(shared_benchmarks)[(net, name)]
        res = cosa_map(_layer(shared_benchmarks, net, name), simba_arch(), time_limit=60)
        assert res.status is Status.OPTIMAL
        assert res.objective == pytest.approx(ref, abs=1e-3)
        assert verify_mapping(_layer(shared_benchmarks, net, name), simba_arch(), res.mapping) == []

    def test_backends_agree(self, shared_benchmarks):
        layer = _layer(shared_benchmarks, "resnet50_graph", "_outputs_3356")
        a = cosa_map(layer, simba_arch(), backend="cpsat", time_limit=60)
        b = cosa_map(layer, simba_arch(), backend="cbc", time_limit=60)
        assert a.status is Status.OPTIMAL and b.status is Status.OPTIMAL
        assert a.objective == pytest.approx(b.objective, abs=1e-3)
        for r in (a, b):
            assert r.report.valid


class TestTricksDoNotMoveOptimum:
    layer = Layer("small", {"R": 3, "S": 3, "P": 8, "Q": 8, "C": 16, "K": 16})

    def test_symmetry_and_unit_reduction(self):
        base = cosa_map(self.layer, simba_arch(), symmetry=False, reduce_units=False, time_limit=60)
        both = cosa_map(self.layer, simba_arch(), symmetry=True, reduce_units=True, time_limit=60)
        assert base.status is Status.OPTIMAL and both.status is Status.OPTIMAL
        assert base.objective == pytest.approx(both.objective, abs=1e-4)


class TestGemmini:
    def test_respects_spatial_rules(self):
        layer = Layer.gemm(64, 64, 64)
        res = cosa_map(layer, gemmini_arch(), time_limit=30)
        assert res.mapping is not None
        assert verify_mapping(layer, gemmini_arch(), res.mapping) == []
        assert res.report.cycles >= layer.macs / 256
