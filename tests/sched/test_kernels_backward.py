"""FlashAttention backward kernels (paper §5.3, §6): structure, Phase 1 vs Phase 2."""

from __future__ import annotations

import dataclasses

from twill.kernels import (
    KERNELS,
    flash_attention_backward_blackwell,
    flash_attention_backward_hopper,
)
from twill.sched.bounds import res_mii
from twill.sched.exact.algorithm1 import algorithm1
from twill.sched.exact.phase2 import swp_and_ws
from twill.sched.validate import check_graph
from twill.sched.verify_warps import verify_warp_schedule

GEMMS = ("S", "dP", "dV", "dK", "dQ")


def test_five_gemms_one_exp_one_atomic_and_registered():
    for factory in (flash_attention_backward_hopper, flash_attention_backward_blackwell):
        g = factory()
        check_graph(g)
        assert KERNELS[g.name] is factory
        units = [i.unit for i in g.instructions]
        assert units.count("TC") == 5 and units.count("EXP") == 1
        assert [v for v in g.names if g.instruction(v).unit == "TC"] == list(GEMMS)
        add = g.instruction("DQ_ADD")
        assert add.variable_latency and not add.streaming
        assert res_mii(g) == 5


class TestHopperBackward:
    def test_only_intra_iteration_parallelism(self):
        g = flash_attention_backward_hopper()
        r = algorithm1(g)
        assert (r.phase1_I, r.phase1_L) == (5, 5)
        # the joint constraints raise I above Phase 1's, every earlier point proven unsat
        assert (r.I, r.L, r.optimal) == (6, 6, True)
        # window [5, 5] at I = 5 unsat; at I = 6 the length 5 is unsat, then 6 is sat
        assert [(p.I, p.L, p.answer) for p in r.points] == [
            (5, 5, "unsat"), (6, 5, "unsat"), (6, 6, "sat")
        ]  # fmt: skip
        assert verify_warp_schedule(g, r.schedule, r.assignment, r.I, r.L) == []
        assert r.L <= r.I  # one copy: no overlap across iterations (register-bound FA3)
        m = r.schedule
        # intra-iteration parallelism: the exp runs while the tensor core computes a GEMM
        assert m["P"] in {m[v] for v in GEMMS}
        assert r.assignment["DQ_ADD"] == (0,) and r.assignment["dQ"] != (0,)

    def test_dq_hand_off_is_what_raises_I(self):
        g = flash_attention_backward_hopper()
        assert swp_and_ws(g, 5, 5).answer == "unsat"
        cheap = g.replace(
            instructions=tuple(
                dataclasses.replace(i, spill_cost=0) if i.name == "dQ" else i
                for i in g.instructions
            )
        )
        assert swp_and_ws(cheap, 5, 5).answer == "sat"


class TestBlackwellBackward:
    def test_joint_constraints_lengthen_the_pipeline(self):
        g = flash_attention_backward_blackwell()
        r = algorithm1(g)
        assert (r.phase1_I, r.phase1_L) == (5, 7)
        assert r.optimal and r.I == 5 and r.L > r.phase1_L
        # LEN(M) = 7 alone, then the lengths 7..8 are proven unsat, 9 is sat
        unsat = [(p.from_L, p.L) for p in r.points if p.answer == "unsat"]
        assert unsat == [(None, 7), (7, 8)] and r.L_optimal and r.L == 9
        assert verify_warp_schedule(g, r.schedule, r.assignment, r.I, r.L) == []
        assert r.L > r.I  # overlapped copies
        w = r.warps
        assert w["LOAD_Q"] == w["LOAD_DO"] == w["DQ_ADD"] == 0
        assert 0 not in {w[v] for v in GEMMS}
