"""The mapping family's ``solve(problem, options)``: the problems' ``check``/``verify``, the
options' seed, limit and progress events, typed method settings, and the deadline of every
layer mapper (issue 40)."""

from __future__ import annotations

import importlib
import time
from dataclasses import replace

import pytest

from tests.deadline import deadline_bound
from twill.errors import InvalidProblemError
from twill.mapping.arch import gemmini_arch
from twill.mapping.cosa.solve import CoSASettings
from twill.mapping.fadiff.plan import FusionPlan
from twill.mapping.fadiff.train import all_dram_mapping
from twill.mapping.network import chain_network
from twill.mapping.problems import LayerMappingProblem, NetworkMappingProblem
from twill.mapping.search.common import SearchSettings
from twill.mapping.workload import Layer
from twill.options import SolverOptions
from twill.progress import ProgressEvent
from twill.results import Status

PROBLEM = LayerMappingProblem(Layer("fc", {"P": 8, "C": 32, "K": 32}), gemmini_arch())


def _solve(module: str):
    return importlib.import_module(f"twill.mapping.{module}").solve


def test_layer_problem_lists_every_defect_and_verifies():
    bad = replace(gemmini_arch(), macs=0)
    with pytest.raises(InvalidProblemError) as err:
        LayerMappingProblem(Layer("l", {"P": 0, "K": -1}), bad).check()
    assert len(err.value.defects) == 3, err.value.defects  # P, K and the arch's macs
    with pytest.raises(InvalidProblemError, match="layer must be a Layer"):
        LayerMappingProblem("fc", gemmini_arch()).check()
    dram = all_dram_mapping(PROBLEM.layer, PROBLEM.arch)
    assert PROBLEM.verify(dram).ok
    tiny = LayerMappingProblem(PROBLEM.layer, gemmini_arch(4, 1, 1))
    wrong = LayerMappingProblem(Layer("fc", {"P": 8, "C": 32, "K": 64}), gemmini_arch())
    assert not wrong.verify(dram).ok and tiny.verify(dram).ok


def test_network_problem_with_fusion_off_refuses_fused_plans():
    a = Layer("a", {"P": 8, "Q": 8, "C": 16, "K": 16})
    b = Layer("b", {"P": 8, "Q": 8, "C": 16, "K": 16})
    net, arch = chain_network([a, b]), gemmini_arch()
    plan = FusionPlan(net.name, tuple(all_dram_mapping(ly, arch) for ly in net.layers))
    NetworkMappingProblem(net, arch).check()
    assert NetworkMappingProblem(net, arch, fusion=False).verify(plan).ok
    fused = plan.with_fused(net.candidates[:1])
    off = NetworkMappingProblem(net, arch, fusion=False).verify(fused)
    assert "fusion.off" in {v.rule for v in off.violations}
    with pytest.raises(InvalidProblemError, match="fusion must be a bool"):
        NetworkMappingProblem(net, arch, fusion="yes").check()


def test_the_options_seed_is_the_seed():
    search = SearchSettings(n_valid=10)
    one = _solve("search.random")(PROBLEM, SolverOptions(seed=4, search=search))
    again = _solve("search.random")(PROBLEM, SolverOptions(seed=4, search=search))
    other = _solve("search.random")(PROBLEM, SolverOptions(seed=0, search=search))
    assert one.solution == again.solution and one.seed == 4
    assert other.solution.mapping != one.solution.mapping  # the seed matters: this can fail


def test_progress_events_and_stopping_on_the_time_limit():
    events: list[ProgressEvent] = []
    big = SearchSettings(n_valid=10**9, max_samples=10**9)
    opts = SolverOptions(time_limit=0.05, on_progress=events.append, search=big)
    r = _solve("search.hybrid")(PROBLEM, opts)
    assert r.stats["stopped"] == "time_limit" and r.timings.total < 5
    assert all(isinstance(e, ProgressEvent) and e.method == "hybrid" for e in events)
    assert events[-1].phase == "done" and events[-1].message == "feasible"
    assert events[-2].step == r.stats["evaluated"]
    assert r.status is Status.FEASIBLE and PROBLEM.verify(r.solution).ok


def test_exhaustive_cut_short_is_never_optimal_nor_infeasible():
    p = LayerMappingProblem(Layer.gemm(4, 4, 4), gemmini_arch(4, 1, 1))
    full = _solve("search.exhaustive")(p, SolverOptions(seed=2))
    assert full.status is Status.OPTIMAL and "stopped" not in full.stats and full.seed == 2
    opts = SolverOptions(time_limit=1e-3, search=SearchSettings(batch_size=1))
    cut = _solve("search.exhaustive")(p, opts)
    assert cut.stats["stopped"] == "time_limit"
    assert cut.status in (Status.FEASIBLE, Status.UNKNOWN)


def test_cosa_reads_its_settings_and_the_shared_options():
    opts = SolverOptions(time_limit=20, seed=3, extra={"num_workers": 1})
    r = _solve("cosa.solve")(PROBLEM, opts)
    assert r.settings["time_limit"] == 20.0 and r.seed == 3 and r.settings["method"] == "cosa"
    assert r.status is Status.OPTIMAL and PROBLEM.verify(r.solution).ok
    cbc = _solve("cosa.solve")(PROBLEM, replace(opts, cosa=CoSASettings(backend="cbc")))
    assert cbc.settings["backend"] == "cbc" and cbc.objective == pytest.approx(r.objective)
    with pytest.raises(InvalidProblemError, match="options.cosa must be a CoSASettings"):
        _solve("cosa.solve")(PROBLEM, SolverOptions(cosa=SearchSettings()))


#: A layer whose CoSA MIP and whose mapping space both need far more than the limit.
_HUGE = Layer("huge", {"R": 3, "S": 3, "P": 224, "Q": 224, "C": 512, "K": 512, "N": 64})
_DEADLINE_CASES = {
    "cosa.solve": (_HUGE, gemmini_arch(), None),
    "cosa.rerank": (_HUGE, gemmini_arch(), None),
    "cosa.edp": (_HUGE, gemmini_arch(), None),
    "search.random": (_HUGE, gemmini_arch(), SearchSettings(n_valid=10**9, max_samples=10**12)),
    "search.hybrid": (_HUGE, gemmini_arch(), SearchSettings(n_valid=10**9, max_samples=10**12)),
    "search.exhaustive": (Layer.gemm(16, 16, 16), gemmini_arch(4, 1, 1),
                          SearchSettings(max_mappings=10**9)),
}  # fmt: skip


@pytest.mark.parametrize("module", sorted(_DEADLINE_CASES))
def test_a_layer_mapper_returns_by_its_deadline(module: str):
    """With a limit of T = 2 s on an instance that needs more, the call returns within
    T + 5 % + 1 s, FEASIBLE with a verified mapping or UNKNOWN (OPTIMAL only when it proved
    it within T), never INFEASIBLE."""
    layer, arch, search = _DEADLINE_CASES[module]
    problem = LayerMappingProblem(layer, arch)
    t0 = time.perf_counter()
    r = _solve(module)(problem, SolverOptions(time_limit=2.0, search=search))
    took = time.perf_counter() - t0
    assert took <= deadline_bound(2.0), took
    # a proof within the limit is an answer too, from the methods that prove: CoSA's MIP of
    # this layer is proved optimal after 1-3 s of solve time (a quiet CI machine can prove it
    # at 1.9 s and return at 2.1 s, so "OPTIMAL only if the call took <= T" was a race), the
    # exhaustive search ends after 6 s of CPU; the random and hybrid searches prove nothing
    provers = {"cosa.solve", "search.exhaustive"}
    allowed = {Status.FEASIBLE, Status.UNKNOWN} | ({Status.OPTIMAL} if module in provers else set())
    assert r.status in allowed, (r.status, took)
    if r.has_solution:
        assert problem.verify(r.solution).ok


def _chain(n: int):
    from twill.mapping.network import chain_network

    layers = [Layer(f"l{i}", {"R": 3, "S": 3, "P": 28, "Q": 28, "C": 64, "K": 64})
              for i in range(n)]  # fmt: skip
    return chain_network(layers)


def test_network_problem_checks_its_plans():
    net, arch = _chain(2), gemmini_arch()
    bad = FusionPlan(net.name, (all_dram_mapping(net.layers[0], arch),))  # one layer short
    with pytest.raises(InvalidProblemError, match=r"candidates\[0\]"):
        NetworkMappingProblem(net, arch, candidates=(bad,)).check()


def test_fadiff_returns_by_its_deadline():
    """FADiff under a 2 s limit on a network whose default run takes far longer: it returns
    within T + 5 % + 1 s with its best verified plan so far."""
    pytest.importorskip("torch")
    from twill.mapping.fadiff.train import FADiffSettings

    warm = SolverOptions(fadiff=FADiffSettings(steps=1, polish=False, group_len=0))
    _solve("fadiff.train")(NetworkMappingProblem(_chain(2), gemmini_arch()), warm)  # imports
    problem = NetworkMappingProblem(_chain(8), gemmini_arch())
    events: list[ProgressEvent] = []
    t0 = time.perf_counter()
    r = _solve("fadiff.train")(problem, SolverOptions(time_limit=2.0, on_progress=events.append))
    took = time.perf_counter() - t0
    assert took <= deadline_bound(2.0), took
    assert r.status is Status.FEASIBLE and problem.verify(r.solution).ok
    assert r.stats["n_iter"] < 400 and events[-1].phase == "done"
