"""CoSA MIP: reference optima (CoSA v0.1.0's model), backend agreement, verified mappings."""

from __future__ import annotations

import re

import pytest

from tests.mapping.mappers import mapped
from twill.io.timeloop import read_layer
from twill.mapping.arch import gemmini_arch, simba_arch
from twill.mapping.cosa import CosaModelOptions, build_cosa_model
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
    def test_size_matches_spec(self, benchmark_data):
        layer = _layer(benchmark_data, "resnet50_graph", "_outputs_input.5")
        model, ix, _ = build_cosa_model(layer, simba_arch(), CosaModelOptions(gb_order="slots"))
        assert ix.zn == 23  # 56=2^3*7 twice, 64=2^6 twice, R S N unit factors
        assert sum(1 for n in model.vars if n.startswith("X[")) == 1288  # as in CoSA's model

    def test_tiny_layer_all_units(self):
        res = mapped("cosa", Layer("unit", {}), simba_arch(), time_limit=10)
        assert res.status is Status.OPTIMAL and res.solution.report.cycles == 1


class TestReferenceOptima:
    """v0.1.0 optima measured with SCIP (shipped reference table), to 1e-3."""

    @pytest.mark.parametrize(
        "net,name",
        [("resnet50_graph", "_outputs_3356"), ("resnet50_graph", "_outputs_input.5")],
    )
    def test_cpsat_reproduces_reference(self, benchmark_data, net, name):
        ref = _reference(benchmark_data)[(net, name)]
        res = mapped("cosa", _layer(benchmark_data, net, name), simba_arch(), time_limit=60)
        assert res.status is Status.OPTIMAL
        assert res.objective == pytest.approx(ref, abs=1e-3)
        assert (
            verify_mapping(_layer(benchmark_data, net, name), simba_arch(), res.solution.mapping)
            == []
        )

    def test_backends_agree(self, benchmark_data):
        layer = _layer(benchmark_data, "resnet50_graph", "_outputs_3356")
        a = mapped("cosa", layer, simba_arch(), backend="cpsat", time_limit=60)
        b = mapped("cosa", layer, simba_arch(), backend="cbc", time_limit=60)
        assert a.status is Status.OPTIMAL and b.status is Status.OPTIMAL
        assert a.objective == pytest.approx(b.objective, abs=1e-3)
        for r in (a, b):
            assert r.solution.report.valid

    def test_gap_limited_solve_is_never_optimal(self, benchmark_data):
        """A CBC solve with a relative gap limit stops "within 50 %": FEASIBLE, no bound."""
        layer = _layer(benchmark_data, "resnet50_graph", "_outputs_3356")
        r = mapped("cosa", layer, simba_arch(), backend="cbc", time_limit=60, extra={"gap": 0.5})
        assert r.status is Status.FEASIBLE and r.solution.mapping is not None
        assert verify_mapping(layer, simba_arch(), r.solution.mapping) == []


_AGREE_LAYERS = ["_outputs_3356", "_outputs_input.2", "_outputs_input.15", "_outputs_input.40"]


class TestScipBackend:
    """Two exact backends prove the same optimum (CP-SAT in process, SCIP in a child process).
    The benchmark (``benchmarks/cosa_networks.py --agree scip``) covers all 24 ResNet-50
    layers; this is a representative subset (FC, 7x7 s2, 1x1 at 56x56, 1x1 s2)."""

    @pytest.mark.parametrize("name", _AGREE_LAYERS)
    def test_scip_and_cpsat_prove_the_reference_optimum(self, benchmark_data, name):
        layer = _layer(benchmark_data, "resnet50_graph", name)
        ref = _reference(benchmark_data)[("resnet50_graph", name)]
        a = mapped("cosa", layer, simba_arch(), backend="cpsat", time_limit=60)
        b = mapped("cosa", layer, simba_arch(), backend="scip", time_limit=60)
        assert a.status is Status.OPTIMAL and b.status is Status.OPTIMAL
        assert a.objective == pytest.approx(ref, abs=1e-3)
        assert b.objective == pytest.approx(ref, abs=1e-3)
        assert b.bound == pytest.approx(b.objective, abs=1e-3)  # proof: bound meets objective
        for r in (a, b):
            assert verify_mapping(layer, simba_arch(), r.solution.mapping) == []

    def test_unknown_backend_names_the_choices(self):
        from twill.errors import BackendUnavailableError

        with pytest.raises(BackendUnavailableError, match="cpsat"):
            mapped("cosa", Layer("fc", {"C": 4, "K": 4}), simba_arch(), backend="gurobi")

    def test_worker_failure_is_an_error_status_not_a_crash(self):
        from twill.mapping.cosa.worker import solve_in_subprocess

        bad = {"model": {"vars": {}, "rows": [["r", {"x": 1.0}, "<=", 1.0]], "objective": {}}}
        ans = solve_in_subprocess({**bad, "backend": "scip", "time_limit": 5})
        assert ans["status"] == "error" and "KeyError" in ans["error"]

    def test_missing_backend_is_reported(self):
        from twill.mapping.cosa.worker import solve_in_subprocess

        try:
            import highspy  # noqa: F401
        except ImportError:
            ans = solve_in_subprocess(
                {
                    "model": {"vars": {}, "rows": [], "objective": {}},
                    "backend": "highs",
                    "time_limit": 5,
                }
            )
            assert ans["status"] == "unavailable" and "highspy" in ans["error"]
        else:
            res = mapped("cosa", Layer("fc", {"C": 8, "K": 8}), simba_arch(), backend="highs")
            assert res.status is Status.OPTIMAL


class TestGbLoopSlots:
    """``gb_order="loops"`` (one GB slot per dimension) has the optimum of the paper's one slot
    per prime factor, for CoSA's weights and for the pure traffic objective, where
    the GB order (``G_v``) weighs most."""

    @pytest.mark.parametrize(
        "dims,weights",
        [
            ({"R": 3, "S": 3, "P": 8, "Q": 8, "C": 16, "K": 16}, None),
            ({"R": 3, "S": 3, "P": 8, "Q": 8, "C": 16, "K": 16}, "traffic"),
            ({"R": 3, "P": 6, "Q": 4, "C": 8, "K": 12, "N": 2, "Wstride": 2}, None),
        ],
    )
    def test_same_optimum_as_factor_slots(self, dims, weights):
        from twill.mapping.cosa import CosaWeights

        w = CosaWeights.pure(weights) if weights else None
        layer = Layer(
            "small",
            {k: v for k, v in dims.items() if k != "Wstride"},
            w_stride=dims.get("Wstride", 1),
        )
        slots = mapped("cosa", layer, simba_arch(), gb_order="slots", weights=w, time_limit=60)
        loops = mapped("cosa", layer, simba_arch(), gb_order="loops", weights=w, time_limit=60)
        assert slots.status is Status.OPTIMAL and loops.status is Status.OPTIMAL
        assert loops.objective == pytest.approx(slots.objective, abs=1e-4)

    def test_loops_model_is_smaller(self, benchmark_data):
        layer = _layer(benchmark_data, "resnet50_graph", "_outputs_input.5")
        big, _, _ = build_cosa_model(layer, simba_arch(), CosaModelOptions(gb_order="slots"))
        small, _, _ = build_cosa_model(layer, simba_arch(), CosaModelOptions(gb_order="loops"))
        assert len(small.vars) * 3 < len(big.vars)


class TestTricksDoNotMoveOptimum:
    layer = Layer("small", {"R": 3, "S": 3, "P": 8, "Q": 8, "C": 16, "K": 16})

    def test_symmetry_and_unit_reduction(self):
        base = mapped(
            "cosa", self.layer, simba_arch(), symmetry=False, reduce_units=False, time_limit=60
        )
        both = mapped(
            "cosa", self.layer, simba_arch(), symmetry=True, reduce_units=True, time_limit=60
        )
        assert base.status is Status.OPTIMAL and both.status is Status.OPTIMAL
        assert base.objective == pytest.approx(both.objective, abs=1e-4)


class TestGemmini:
    def test_respects_spatial_rules(self):
        layer = Layer.gemm(64, 64, 64)
        res = mapped("cosa", layer, gemmini_arch(), time_limit=30)
        assert res.solution.mapping is not None
        assert verify_mapping(layer, gemmini_arch(), res.solution.mapping) == []
        assert res.solution.report.cycles >= layer.macs / 256


def test_settings_object_and_keywords_are_the_same_run():
    from twill.mapping.cosa.solve import CoSASettings

    layer = Layer("fc", {"C": 64, "K": 32})
    a = mapped("cosa", layer, simba_arch(), time_limit=20, halo="corrected")
    b = mapped("cosa", layer, simba_arch(), CoSASettings(time_limit=20, halo="corrected"))
    assert a.settings == b.settings and a.settings["halo"] == "corrected"
    assert list(a.settings)[-1] == "weights" and a.solution.mapping == b.solution.mapping
