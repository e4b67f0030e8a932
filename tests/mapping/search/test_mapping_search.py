"""Search baselines: seeds reproduce, exhaustive is a lower bound, every result verifies."""

from __future__ import annotations

import pytest

from tests.mapping.mappers import mapped
from twill.errors import InvalidProblemError
from twill.mapping.arch import gemmini_arch, simba_arch
from twill.mapping.mapping import verify_mapping
from twill.mapping.workload import Layer
from twill.results import Status

SMALL = Layer("small", {"P": 4, "C": 4, "K": 4})


class TestRandom:
    def test_seed_reproduces(self):
        a = mapped("random", SMALL, simba_arch(), n_valid=5, seed=7)
        b = mapped("random", SMALL, simba_arch(), n_valid=5, seed=7)
        assert str(a.solution.mapping) == str(b.solution.mapping) and a.objective == b.objective

    def test_best_of_more_is_no_worse(self):
        layer = Layer("l", {"P": 14, "Q": 14, "C": 32, "K": 32})
        five = mapped("random", layer, simba_arch(), n_valid=5, seed=1)
        many = mapped("random", layer, simba_arch(), n_valid=2000, seed=1)
        assert many.objective <= five.objective
        assert many.stats["valid"] == 2000

    def test_result_verifies(self):
        r = mapped("random", SMALL, gemmini_arch(), n_valid=5, seed=0)
        assert verify_mapping(SMALL, gemmini_arch(), r.solution.mapping) == []


class TestHybrid:
    def test_counts_and_seed(self):
        a = mapped("hybrid", SMALL, simba_arch(), n_valid=1000, seed=2)
        b = mapped("hybrid", SMALL, simba_arch(), n_valid=1000, seed=2)
        assert a.stats["evaluated"] == 1000 and a.objective == b.objective
        assert a.solution.report.valid


class TestExhaustive:
    def test_lower_bound_of_every_search(self):
        arch = gemmini_arch(4, 1, 1)
        layer = Layer.gemm(4, 4, 8)
        ex = mapped("exhaustive", layer, arch, metric="edp")
        assert ex.status is Status.OPTIMAL
        for r in (
            mapped("random", layer, arch, n_valid=200, seed=0),
            mapped("hybrid", layer, arch, n_valid=500, seed=0),
        ):
            assert ex.objective <= r.objective + 1e-9

    def test_refuses_large_spaces(self):
        with pytest.raises(InvalidProblemError, match="max_mappings"):
            mapped(
                "exhaustive",
                Layer("big", {"P": 56, "Q": 56, "C": 64, "K": 64}),
                simba_arch(),
                max_mappings=1000,
            )
