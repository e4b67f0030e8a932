"""Every mapper of the mapping family through the same checks: result shape, status
semantics, the verifier on the returned mapping, determinism for a seed, and a JSON round
trip of ``to_dict()``. Small instances, real solvers."""

from __future__ import annotations

import json

import pytest

from tests.mapping.mappers import fused, mapped
from twill.mapping.arch import gemmini_arch
from twill.mapping.fadiff.fusion import evaluate_plan, verify_plan
from twill.mapping.mapping import verify_mapping
from twill.mapping.network import chain_network
from twill.mapping.result import MappedLayer, layer_json
from twill.mapping.workload import Layer
from twill.results import SolveResult, Status

LAYER = Layer.gemm(4, 4, 8)
ARCH = gemmini_arch(4, 1, 1)  # small enough for the exhaustive search

#: mapper name -> the options of one small, deterministic run
MAPPERS = {
    "cosa": {"seed": 0},
    "cosa-rerank": {"seed": 0},
    "random": {"seed": 3},
    "hybrid": {"seed": 3, "n_valid": 200},
    "exhaustive": {},
}
KEYS = {"layer", "method", "status", "mapping", "objective", "bound", "seconds", "timings"}


@pytest.fixture(scope="module", params=sorted(MAPPERS))
def run(request: pytest.FixtureRequest) -> tuple[str, SolveResult, SolveResult]:
    name = request.param
    opts = MAPPERS[name]
    first = mapped(name, LAYER, ARCH, **opts)
    again = mapped(name, LAYER, ARCH, **opts)
    return name, first, again


def test_result_shape_and_status(run):
    name, res, _ = run
    assert isinstance(res, SolveResult) and isinstance(res.status, Status)
    assert res.settings["method"] == name and isinstance(res.solution, MappedLayer)
    # a solution comes with every status that claims one, and only then
    assert res.status.has_solution == (res.solution is not None)
    assert res.status is not Status.INFEASIBLE  # the layer fits this arch
    if res.status is Status.OPTIMAL:
        assert res.objective is not None


def test_verifier_accepts_the_mapping(run):
    _, res, _ = run
    assert res.solution is not None
    assert verify_mapping(LAYER, ARCH, res.solution.mapping) == []
    assert res.solution.report.valid


def test_same_seed_same_answer(run):
    _, a, b = run
    assert a.solution == b.solution and a.objective == b.objective and a.status == b.status


def test_to_dict_round_trips_through_json(run):
    _, res, _ = run
    d = layer_json(res, LAYER.name)
    assert KEYS <= set(d) and d["solution"]["mapping"] == d["mapping"]
    assert json.loads(json.dumps(d)) == d
    assert d["status"] == res.status.value


def test_fadiff_tiny_network():
    pytest.importorskip("torch")
    from twill.mapping.fadiff.train import FADiffSettings

    a = Layer("a", {"P": 16, "Q": 16, "C": 16, "K": 32})
    b = Layer("b", {"R": 3, "S": 3, "P": 16, "Q": 16, "C": 32, "K": 16})
    net, arch = chain_network([a, b]), gemmini_arch()
    cfg = FADiffSettings(steps=20, eval_every=5, seed=1)
    r1, r2 = fused(net, arch, cfg), fused(net, arch, cfg)
    assert verify_plan(net, arch, r1.solution.plan) == []
    assert (
        r1.solution.report.valid
        and r1.solution.report.edp == evaluate_plan(net, arch, r1.solution.plan).edp
    )
    assert (
        r1.solution.plan.mappings == r2.solution.plan.mappings
        and r1.solution.report.edp == r2.solution.report.edp
    )
    assert json.loads(json.dumps(r1.settings)) == r1.settings
    d = r1.to_dict()
    assert json.loads(json.dumps(d, allow_nan=False)) == d  # strict JSON: no NaN left
    sol = d["solution"]
    assert sol["edp"] == r1.solution.report.edp and len(sol["mappings"]) == 2
    assert d["status"] == "feasible" and r1.status is Status.FEASIBLE
    assert r1.objective == r1.solution.report.edp and r1.seed == 1
