"""The no-bypass-refetch MIP restriction and ``cosa-rerank`` (docs/mapping.md): real CP-SAT
solves on small Gemmini / Simba layers, every mapping verified."""

from __future__ import annotations

import itertools

import numpy as np
import pytest

from tests.mapping.mappers import mapped
from twill.mapping.arch import gemmini_arch, simba_arch
from twill.mapping.cosa import CosaModelOptions, build_cosa_model, polish_loop_orders
from twill.mapping.cosa.mip import CosaIndex, bypass_refetch_operands, register_reuse_bound
from twill.mapping.cost.analytical import MappingBatch, evaluate, evaluate_batch
from twill.mapping.mapping import parse_dosa_mapping, verify_mapping
from twill.mapping.workload import Layer, Operand
from twill.results import Status

#: ResNet-50's ``_outputs_input.80`` shape (1x1, 14x14, C 1024, K 256): on Gemmini the pure
#: CoSA optimum leaves C4 at DRAM above an output loop, so partial sums are refetched and the
#: accumulator's bandwidth costs 2.3 % latency over the compute bound.
PSUM = Layer("psum", {"P": 14, "Q": 14, "C": 1024, "K": 256})
#: ResNet-50's ``_outputs_input.39`` shape (1x1, 28x28, C 128, K 512): without refetch the
#: MIP picks P0·Q0 = 8 at the one-word weight registers and the scratchpad bounds latency.
REUSE = Layer("reuse", {"P": 28, "Q": 28, "C": 128, "K": 512})


def _output_fills(layer: Layer, mapping) -> float:
    """Accumulator output fills summed over its utilised instances."""
    rep = evaluate(layer, gemmini_arch(), mapping)
    acc = rep.accesses["Accumulator"]["O"]  # per instance; the accumulator keeps only O
    instances = rep.level_accesses["Accumulator"] / sum(acc.values())
    return acc["fills"] * instances


class TestNoBypassRefetch:
    def test_only_gemmini_outputs_qualify(self):
        g = CosaIndex.build(PSUM, gemmini_arch(), gb_order="loops")
        s = CosaIndex.build(PSUM, simba_arch(), gb_order="loops")
        assert bypass_refetch_operands(g) == (Operand.O,)
        assert bypass_refetch_operands(s) == ()

    def test_simba_model_unchanged(self):
        a, _, _ = build_cosa_model(PSUM, simba_arch())
        b, _, _ = build_cosa_model(PSUM, simba_arch(), CosaModelOptions(no_bypass_refetch=True))
        assert a.rows == b.rows and a.objective == b.objective

    def test_restriction_removes_psum_refetch(self):
        arch = gemmini_arch()
        pure = mapped("cosa", PSUM, arch, time_limit=30)
        restricted = mapped("cosa", PSUM, arch, time_limit=30, no_bypass_refetch=True)
        assert pure.status is Status.OPTIMAL and restricted.status is Status.OPTIMAL
        assert restricted.settings["no_bypass_refetch"] is True
        # A restriction cannot beat the unrestricted optimum of the same objective.
        assert restricted.objective >= pure.objective - 1e-6
        outputs = 14 * 14 * 256  # P·Q·K·N
        assert _output_fills(PSUM, pure.solution.mapping) > outputs  # the MIP optimum refetches
        polished = polish_loop_orders(PSUM, arch, restricted.solution.mapping)
        assert verify_mapping(PSUM, arch, polished) == []
        assert _output_fills(PSUM, polished) == pytest.approx(outputs)  # each output once
        assert evaluate(PSUM, arch, polished).cycles == PSUM.macs // arch.macs


class TestRegisterReuse:
    def test_bound_from_the_architecture(self):
        ix = CosaIndex.build(REUSE, gemmini_arch(), gb_order="loops")
        # 256 registers; the scratchpad serves 32 words/cycle, 16 of them to the C columns.
        assert register_reuse_bound(ix, gemmini_arch()) == (Operand.W, 16.0)
        big = gemmini_arch(32, 256, 64)
        assert register_reuse_bound(CosaIndex.build(REUSE, big, gb_order="loops"), big) == (
            Operand.W,
            32.0,
        )
        simba = CosaIndex.build(REUSE, simba_arch(), gb_order="loops")
        assert register_reuse_bound(simba, simba_arch()) is None  # no bandwidth limits

    def test_restriction_reaches_the_compute_bound(self):
        arch = gemmini_arch()
        only_nbr = mapped("cosa", REUSE, arch, time_limit=30, no_bypass_refetch=True)
        both = mapped(
            "cosa", REUSE, arch, time_limit=30, no_bypass_refetch=True, register_reuse=True
        )
        assert only_nbr.status is Status.OPTIMAL and both.status is Status.OPTIMAL
        assert both.objective >= only_nbr.objective - 1e-6
        assert np.prod(both.solution.mapping.temporal[0]) >= 16  # MACs per weight-register load
        assert np.prod(only_nbr.solution.mapping.temporal[0]) < 16
        polished = polish_loop_orders(REUSE, arch, both.solution.mapping)
        assert evaluate(REUSE, arch, polished).cycles == REUSE.macs // arch.macs
        rr = mapped("cosa-rerank", REUSE, arch, time_limit=30)
        assert rr.stats["chosen"] == "no_bypass_refetch+register_reuse"
        assert rr.solution.report.cycles == REUSE.macs // arch.macs

    def test_infeasible_restriction_leaves_the_other_candidates(self):
        arch = gemmini_arch()
        small = Layer("small", {"P": 2, "Q": 2, "C": 64, "K": 64})  # P·Q·N = 4 < 16
        r = mapped("cosa", small, arch, time_limit=30, register_reuse=True)
        assert r.status is Status.INFEASIBLE and r.solution is None
        rr = mapped("cosa-rerank", small, arch, time_limit=30)
        cands = {c["variant"]: c for c in rr.stats["candidates"]}
        assert cands["no_bypass_refetch+register_reuse"]["mip_status"] == "infeasible"
        assert "cycles" not in cands["no_bypass_refetch+register_reuse"]
        assert (
            rr.status is Status.FEASIBLE and verify_mapping(small, arch, rr.solution.mapping) == []
        )


class TestPolish:
    def test_joint_polish_is_the_best_order(self):
        arch = gemmini_arch()
        layer = Layer("l", {"P": 4, "C": 32, "K": 32})
        m = parse_dosa_mapping("L3[WIO] P2 C2 - L2[WI] K2 K16X - L1[O] P2 C16X - L0[W] N1", layer)
        p = polish_loop_orders(layer, arch, m, metric="lex")
        rep = evaluate(layer, arch, p)
        # Only DRAM has two non-unit loops: brute force all 7! DRAM orders, the rest fixed.
        base = [tuple(d.index for d in lv) for lv in m.order]
        combos = np.array(
            [base[:3] + [o] for o in itertools.permutations(range(7))], dtype=np.int64
        )
        n = len(combos)
        T, Sp = np.array(m.temporal), np.array(m.spatial)
        cost = evaluate_batch(
            layer, arch, MappingBatch(np.repeat(T[None], n, 0), np.repeat(Sp[None], n, 0), combos)
        )
        best = min(zip(cost.cycles, cost.energy_pj, strict=True))
        assert (rep.cycles, rep.energy_pj) == pytest.approx(best)
        assert verify_mapping(layer, arch, p) == []

    def test_never_worse_and_tiling_unchanged(self):
        arch = gemmini_arch()
        r = mapped("cosa", PSUM, arch, time_limit=30)
        for metric in ("lex", "edp", "energy"):
            p = polish_loop_orders(PSUM, arch, r.solution.mapping, metric=metric, max_batch=1)
            assert (
                p.temporal == r.solution.mapping.temporal
                and p.spatial == r.solution.mapping.spatial
            )
            a, b = evaluate(PSUM, arch, p), evaluate(PSUM, arch, r.solution.mapping)
            if metric == "lex":
                assert (a.cycles, a.energy_pj) <= (b.cycles, b.energy_pj)
            elif metric == "edp":
                assert a.edp <= b.edp * (1 + 1e-12)
            else:
                assert a.energy_pj <= b.energy_pj * (1 + 1e-12)

    def test_bad_metric(self):
        r = mapped("cosa", PSUM, gemmini_arch(), time_limit=30)
        with pytest.raises(ValueError, match="metric"):
            polish_loop_orders(PSUM, gemmini_arch(), r.solution.mapping, metric="speed")


class TestRerank:
    def test_gemmini_picks_the_refetch_free_candidate(self):
        arch = gemmini_arch()
        pure = mapped("cosa", PSUM, arch, time_limit=30)
        rr = mapped("cosa-rerank", PSUM, arch, time_limit=30)
        assert (
            rr.settings["method"] == "cosa-rerank" and rr.status is Status.FEASIBLE
        )  # never optimal
        assert rr.objective is None and rr.bound is None
        assert verify_mapping(PSUM, arch, rr.solution.mapping) == []
        assert [c["variant"] for c in rr.stats["candidates"]] == [
            "cosa",
            "no_bypass_refetch",
            "no_bypass_refetch+register_reuse",
        ]
        assert all(c["mip_status"] == "optimal" for c in rr.stats["candidates"])
        assert rr.stats["chosen"] == "no_bypass_refetch"
        assert rr.solution.report.cycles == PSUM.macs // arch.macs < pure.solution.report.cycles
        assert rr.timings.total >= rr.timings.solve > 0 and rr.stats["cpu_seconds"] > 0

    def test_simba_has_one_candidate_and_is_never_worse(self):
        layer = Layer("l", {"P": 14, "Q": 14, "C": 32, "K": 64})
        pure = mapped("cosa", layer, simba_arch(), time_limit=30)
        rr = mapped("cosa-rerank", layer, simba_arch(), time_limit=30)
        assert [c["variant"] for c in rr.stats["candidates"]] == ["cosa"]
        assert rr.solution.mapping.temporal == pure.solution.mapping.temporal
        assert (rr.solution.report.cycles, rr.solution.report.energy_pj) <= (
            pure.solution.report.cycles,
            pure.solution.report.energy_pj,
        )
        assert verify_mapping(layer, simba_arch(), rr.solution.mapping) == []
