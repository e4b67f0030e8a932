"""Twill Phase 2 (SWP-AND-WS, Figs. 4-6): golden Fig. 1, encodings vs an exhaustive oracle,
liveness corner cases, FA3/FA4 structures and the paper's ablations (spec §4, §9, §10)."""

from __future__ import annotations

import itertools
import random

import pytest

from twill.kernels import (
    flash_attention_forward_blackwell,
    flash_attention_forward_hopper,
    flash_attention_forward_simplified,
)
from twill.sched.exact.phase2 import build_phase2_model, swp_and_ws
from twill.sched.ir import DependenceGraph, Edge, Instruction, MachineDescription
from twill.sched.verify_warps import WarpRules, slots_needed, verify_warp_schedule


def fig1() -> DependenceGraph:
    m = MachineDescription("fig1", {"TC": 1, "EXP": 1}, warps=1)
    ins = (Instruction("S", 1, {"TC": (1,)}), Instruction("P", 1, {"EXP": (1,)}),
           Instruction("O", 1, {"TC": (1,)}))  # fmt: skip
    return DependenceGraph("fig1", ins, (Edge("S", "P", 1), Edge("P", "O", 1),
                                         Edge("O", "O", 1, 1)), m)  # fmt: skip


class TestFig1:
    def test_unsat_below_and_sat_at_2_4(self):
        g = fig1()
        for enc in ("compact", "grid"):
            assert swp_and_ws(g, 1, 3, encoding=enc).answer == "unsat"
            assert swp_and_ws(g, 2, 3, encoding=enc).answer == "unsat"
            r = swp_and_ws(g, 2, 4, encoding=enc)
            assert r.answer == "sat" and r.n == 2 and r.T == 6
            assert r.schedule["S"] == 0 and r.schedule["O"] == 3 and r.schedule["P"] in (1, 2)
            assert verify_warp_schedule(g, r.schedule, r.assignment, 2, 4) == []

    def test_simplified_kernel_with_hint_and_warps(self):
        g = flash_attention_forward_simplified()
        r = swp_and_ws(g, 2, 4, hint={"S": 0, "P": 2, "O": 3})
        assert r.answer == "sat" and r.hint_used and r.schedule == {"S": 0, "P": 2, "O": 3}
        assert set(r.warps) == {"S", "P", "O"}
        assert verify_warp_schedule(g, r.schedule, r.assignment, 2, 4) == []
        assert r.statistics["variables"] > 0 and r.statistics["clauses"] > 0

    def test_loop_carried_edge_beyond_window_is_checked(self):
        # L <= I gives n = 1: O->O (delta 1) is only checked by the copy-0 constraint
        g = fig1().replace(edges=(Edge("S", "O", 1), Edge("O", "S", 5, 1)))
        assert swp_and_ws(g, 4, 2).answer == "unsat"  # needs S(k+1) >= O(k) + 5 - 4
        assert swp_and_ws(g, 6, 2).answer == "sat"


def random_graph(rng: random.Random) -> DependenceGraph:
    n_ops = rng.randint(2, 3)
    names = [f"v{i}" for i in range(n_ops)]
    vl = rng.random() < 0.4
    ins = []
    for i, nm in enumerate(names):
        c = rng.randint(1, 2)
        fu = rng.choice(["A", "B"])
        is_vl = vl and i == 0
        ins.append(Instruction(nm, c, {fu: tuple([1] * c)}, regs=rng.choice([0, 2, 3]),
                               footprint={"m": rng.choice([0, 1, 2])}, variable_latency=is_vl,
                               spill_cost=rng.choice([0, 1]),
                               warps=rng.choice([1, 1, 8]) if not is_vl else 1))  # fmt: skip
    edges = []
    for i in range(n_ops):
        for j in range(n_ops):
            if i < j and rng.random() < 0.6:
                edges.append(Edge(names[i], names[j], rng.randint(0, 2), 0,
                                  blocking=rng.random() < 0.3))  # fmt: skip
            elif i >= j and rng.random() < 0.3:
                edges.append(Edge(names[i], names[j], rng.randint(0, 2), 1))
    m = MachineDescription("tiny", {"A": 1, "B": rng.choice([1, 2])},
                           registers_per_warp=rng.choice([None, 4, 5]), memories={"m": 3},
                           warps=rng.randint(1, 3))  # fmt: skip
    return DependenceGraph("tiny", tuple(ins), tuple(edges), m)


def oracle(g: DependenceGraph, ii: int, length: int, rules: WarpRules) -> bool:
    """Exhaustive enumeration of (schedule, warp assignment) pairs, checked by the verifier."""
    w = rules.num_warps(g)
    has_vl = any(i.variable_latency for i in g.instructions)
    options = []
    for ins in g.instructions:
        if ins.variable_latency:
            options.append([(0,)])
            continue
        pool = [s for s in range(w) if not (has_vl and s == 0)]
        options.append(list(itertools.combinations(pool, slots_needed(ins))))
    ranges = [range(0, length - max(i.cycles, 1) + 1) for i in g.instructions]
    names = g.names
    for starts in itertools.product(*ranges):
        sched = dict(zip(names, starts, strict=True))
        for assign in itertools.product(*options):
            a = dict(zip(names, assign, strict=True))
            if not verify_warp_schedule(g, sched, a, ii, length, rules=rules):
                return True
    return False


def test_encodings_agree_with_exhaustive_oracle():
    rng = random.Random(7)
    checked = sat = 0
    for _ in range(40):
        g = random_graph(rng)
        rules = WarpRules.for_graph(g, spill_blocking=rng.random() < 0.5)
        for ii, length in [(1, 2), (2, 3), (2, 4), (3, 4)]:
            want = oracle(g, ii, length, rules)
            for enc, sym in [("compact", True), ("grid", False), ("compact", False)]:
                r = swp_and_ws(g, ii, length, rules=rules, encoding=enc, symmetry_breaking=sym)
                assert (r.answer == "sat") == want, (g, ii, length, enc, sym)
            checked += 1
            sat += want
    assert checked == 160 and 20 < sat < 140  # both answers are exercised


def test_minimum_I_agrees_with_oracle():
    rng = random.Random(11)
    for _ in range(12):
        g = random_graph(rng)
        rules = WarpRules.for_graph(g)
        for length in (3,):
            smt = next((i for i in range(1, 5) if swp_and_ws(g, i, length, rules=rules).answer
                        == "sat"), None)  # fmt: skip
            brute = next((i for i in range(1, 5) if oracle(g, i, length, rules)), None)
            assert smt == brute


class TestLiveness:
    def graph(self, delay: int) -> DependenceGraph:
        m = MachineDescription("live", {"A": 2}, memories={"smem": 4}, warps=1)
        ins = (Instruction("p", 1, {"A": (1,)}, footprint={"smem": 4}),
               Instruction("c", 1, {"A": (1,)}, footprint={"smem": 4}))  # fmt: skip
        return DependenceGraph("live", ins, (Edge("p", "c", delay),), m)

    def test_same_cycle_use_is_never_live(self):
        # d = 0: p and c may issue together; p's value is then live nowhere (guarded DEADPROP)
        r = swp_and_ws(self.graph(0), 1, 1)
        assert r.answer == "sat" and r.schedule == {"p": 0, "c": 0}

    def test_value_live_until_use_counts(self):
        # d = 1 at I = 1: live on [issue, use), half-open, so copies never overlap
        assert swp_and_ws(self.graph(1), 1, 2).answer == "sat"
        # d = 2 at I = 1: p(k+1) issues while p(k) is live until c(k): 4 + 4 bytes > 4
        g = self.graph(2)
        assert swp_and_ws(g, 1, 3).answer == "unsat"
        big = g.replace(machine=MachineDescription("live", {"A": 2}, memories={"smem": 8}))
        assert swp_and_ws(big, 1, 3).answer == "sat"


def test_model_statistics_and_smt2_dump(tmp_path):
    g = flash_attention_forward_hopper()
    m = build_phase2_model(g, 4, 4)
    st = m.statistics()
    assert st["variables"] == m.num_vars > 0 and st["assertions"] > 0
    assert {"fig4.uniqueness", "fig4.capacity", "fig6.warp_uniqueness"} <= set(st["rows_by_family"])
    path = tmp_path / "m.smt2"
    swp_and_ws(g, 4, 4, dump_smt2=str(path))
    assert "|x[S0," in path.read_text()


class TestHopperFA3:
    def test_ping_pong_between_two_consumer_warp_groups(self):
        g = flash_attention_forward_hopper()
        r = swp_and_ws(g, 4, 4)
        assert r.answer == "sat"
        w = r.warps
        assert w["LOAD_K"] == w["LOAD_V"] == 0  # producer warp
        assert w["S0"] == w["P0"] == w["O0"] != w["S1"] == w["P1"] == w["O1"]
        assert 0 not in (w["S0"], w["S1"])
        # the tensor core alternates between the warp groups: GEMM slots mod I interleave
        tc = sorted((r.schedule[v] % 4, w[v]) for v in ("S0", "O0", "S1", "O1"))
        owners = [slot for _, slot in tc]
        assert owners.count(w["S0"]) == 2 and owners != sorted(owners)
        # one warp group's exp overlaps the other's GEMM
        assert r.schedule["P0"] % 4 in {r.schedule[v] % 4 for v in ("S1", "O1")}


class TestBlackwellFA4:
    WINDOW = (5, 6)  # Phase 1: I = 2, LEN(M) = 5

    def test_structure(self):
        g = flash_attention_forward_blackwell()
        r = swp_and_ws(g, 2, 5)
        assert r.answer == "sat"
        w = r.warps
        gemms = {w[v] for v in ("S0", "S1", "O0", "O1")}
        assert w["LOAD_K"] == w["LOAD_V"] == 0 and 0 not in gemms  # TMA apart from GEMMs
        assert w["P0"] != w["P1"]  # each sub-tile's softmax on its own warp group
        assert {w["C0"], w["C1"]}.isdisjoint({w["P0"], w["P1"]})  # correction elsewhere

    def test_correction_on_a_softmax_warp_is_unsat(self):
        g = flash_attention_forward_blackwell()
        for fixed in ({"P0": 1, "C0": 1}, {"P0": 1, "P1": 1}):
            for length in self.WINDOW:
                assert swp_and_ws(g, 2, length, fixed_warps=fixed).answer == "unsat"

    @pytest.mark.parametrize("kw", [{"cross_warp": False}, {"warps": 3}])
    def test_ablations_unsat_in_first_window(self, kw):
        g = flash_attention_forward_blackwell()
        rules = WarpRules.for_graph(g, **kw)
        for length in self.WINDOW:
            assert swp_and_ws(g, 2, length, rules=rules).answer == "unsat"
