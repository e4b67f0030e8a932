"""The mappers under the shared SolverOptions: the options' seed, limit and progress callback
are the ones used, and the mappers' own keywords keep working unchanged."""

from __future__ import annotations

from twill.mapping.arch import gemmini_arch
from twill.mapping.cosa import cosa_map
from twill.mapping.mapping import verify_mapping
from twill.mapping.pipeline import map_layer
from twill.mapping.search.exhaustive import exhaustive_search
from twill.mapping.search.hybrid import hybrid_search
from twill.mapping.search.random import random_search
from twill.mapping.workload import Layer
from twill.options import SolverOptions
from twill.results import Status

LAYER = Layer("fc", {"P": 8, "C": 32, "K": 32})
ARCH = gemmini_arch()


def test_options_seed_is_the_keyword_seed():
    by_keyword = random_search(LAYER, ARCH, n_valid=10, seed=4)
    by_options = random_search(LAYER, ARCH, n_valid=10, seed=0, options=SolverOptions(seed=4))
    assert by_options.mapping == by_keyword.mapping and by_options.seed == 4
    other = random_search(LAYER, ARCH, n_valid=10, seed=0)
    assert other.mapping != by_keyword.mapping  # the seed matters, so the check can fail


def test_progress_events_and_stopping_on_the_time_limit():
    events: list[dict] = []
    opts = SolverOptions(time_limit=0.05, on_progress=events.append)
    r = hybrid_search(LAYER, ARCH, n_valid=10**9, max_samples=10**9, options=opts)
    assert r.stats["stopped"] == "time_limit" and r.seconds < 5
    assert events and events[-1]["evaluated"] == r.stats["evaluated"]
    assert r.status is Status.FEASIBLE and verify_mapping(LAYER, ARCH, r.mapping) == []


def test_exhaustive_cut_short_is_never_optimal_nor_infeasible():
    layer, arch = Layer.gemm(4, 4, 4), gemmini_arch(4, 1, 1)
    full = exhaustive_search(layer, arch, options=SolverOptions(seed=2))
    assert full.status is Status.OPTIMAL and "stopped" not in full.stats and full.seed == 2
    cut = exhaustive_search(layer, arch, batch_size=1, options=SolverOptions(time_limit=1e-3))
    assert cut.stats["stopped"] == "time_limit"
    assert cut.status in (Status.FEASIBLE, Status.UNKNOWN)


def test_cosa_takes_options_and_map_layer_passes_them():
    opts = SolverOptions(time_limit=20, seed=3, extra={"num_workers": 1})
    r = cosa_map(LAYER, ARCH, options=opts)
    assert r.settings["time_limit"] == 20.0 and r.seed == 3
    assert r.status is Status.OPTIMAL and verify_mapping(LAYER, ARCH, r.mapping) == []
    via = map_layer(LAYER, ARCH, mapper="cosa", options=opts)
    assert via.mapping == r.mapping and via.seed == 3
    plain = cosa_map(LAYER, ARCH, time_limit=20, seed=3)  # keywords unchanged
    assert plain.mapping == r.mapping and plain.settings == r.settings
