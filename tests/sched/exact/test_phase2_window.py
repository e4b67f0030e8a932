"""Phase 2 over a length window (Algorithm 1's inner loop): monotonicity in L, the incremental
window search against independent per-length solves, start windows, time limits."""

from __future__ import annotations

import random

import pytest

from twill.kernels import (
    flash_attention_backward_blackwell,
    flash_attention_backward_hopper,
    flash_attention_forward_blackwell,
    flash_attention_forward_hopper,
)
from twill.options import SolverOptions
from twill.sched.exact.algorithm1 import algorithm1, length_window
from twill.sched.exact.phase1 import solve_phase1
from twill.sched.exact.phase2 import build_phase2_model, start_windows, swp_and_ws
from twill.sched.exact.phase2_window import solve_window
from twill.sched.exact.settings import TwillSettings
from twill.sched.ir import DependenceGraph, Edge, Instruction, MachineDescription
from twill.sched.verify_warps import WarpRules, verify_warp_schedule


def small_graph(rng: random.Random) -> DependenceGraph:
    """3-4 ops on two units, with registers, a memory, spills, blocking and carried edges."""
    k = rng.randint(3, 4)
    ops = []
    for i in range(k):
        c = rng.choice([1, 1, 2])
        unit = "U" if i % 2 else "V"
        ops.append(Instruction(f"o{i}", c, {unit: (1,) * c}, regs=rng.choice([0, 2, 4]),
                               footprint={"mem": rng.choice([0, 2])}, spill_cost=rng.choice([0, 2]),
                               variable_latency=i == 0 and rng.random() < 0.5))  # fmt: skip
    edges = [Edge(f"o{i}", f"o{j}", rng.randint(0, 2), 0, blocking=rng.random() < 0.25)
             for i in range(k) for j in range(i + 1, k) if rng.random() < 0.5]  # fmt: skip
    edges += [Edge(f"o{j}", f"o{i}", rng.randint(1, 3), rng.choice([1, 2]))
              for i in range(k) for j in range(i, k) if rng.random() < 0.25]  # fmt: skip
    machine = MachineDescription("small", {"U": 1, "V": 1}, registers_per_warp=rng.choice([5, 8]),
                                 memories={"mem": 4}, warps=rng.randint(2, 3))  # fmt: skip
    return DependenceGraph("small", tuple(ops), tuple(edges), machine)


def windows(g: DependenceGraph, rules: WarpRules) -> list[tuple[int, int]]:
    """``(I, LEN(M))`` for the first two I with a Phase-1 schedule."""
    out = []
    for ii in range(1, 8):
        p1 = solve_phase1(g, ii, check=False)
        if p1.objective is not None:
            out.append((ii, p1.objective))
        if len(out) == 2:
            break
    return out


def test_sat_lengths_form_a_suffix_of_each_window_and_the_search_finds_its_start():
    rng = random.Random(5)
    windows_seen = sat_windows = 0
    for _ in range(25):
        g = small_graph(rng)
        rules = WarpRules.for_graph(g, spill_blocking=rng.random() < 0.5)
        for ii, low in windows(g, rules):
            answers = [swp_and_ws(g, ii, n, rules=rules).answer for n in length_window(ii, low)]
            assert "unknown" not in answers
            first = answers.index("sat") if "sat" in answers else len(answers)
            assert set(answers[first:]) <= {"sat"}, (g, ii, low, answers)  # monotone in L
            out = solve_window(g, ii, low, rules=rules)
            windows_seen += 1
            if first == len(answers):
                assert out.answer == "unsat" and out.final is None
                continue
            sat_windows += 1
            assert out.answer == "sat" and out.first_proven
            assert out.final.L == low + first
            assert verify_warp_schedule(g, out.final.schedule, out.final.assignment, ii,
                                        out.final.L, rules=rules) == []  # fmt: skip
    assert windows_seen >= 30 and 5 <= sat_windows < windows_seen  # both verdicts exercised


def test_every_selector_answers_like_its_own_model():
    """Checking length L under its selector on the window's top model = the model at L."""
    g = flash_attention_forward_blackwell()
    rules = WarpRules.for_graph(g, warps=3)
    from twill.sched.exact.phase2_window import _Window

    w = _Window(g, 2, 5, rules, {"encoding": "compact", "symmetry_breaking": True})
    for length in (6, 5):
        assert w.check(length, None).answer == swp_and_ws(g, 2, length, rules=rules).answer


@pytest.mark.parametrize(
    "kernel",
    [flash_attention_forward_hopper, flash_attention_forward_blackwell,
     flash_attention_backward_hopper, flash_attention_backward_blackwell],
)  # fmt: skip
def test_monotone_and_scan_searches_agree(kernel):
    g = kernel()
    a, b = algorithm1(g), algorithm1(g, SolverOptions(twill=TwillSettings(window="scan")))
    assert (a.I, a.L, a.optimal, a.L_optimal, a.status) == (b.I, b.L, b.optimal, b.L_optimal,
                                                          b.status)  # fmt: skip
    assert verify_warp_schedule(g, a.schedule, a.assignment, a.I, a.L) == []
    # at the final I: a refutation just below the answer covers the window below it, and at
    # most one more is made, at the window's first length (asked before the top length)
    at_final = [p for p in a.points if p.I == a.I]
    final = [p for p in at_final if p.answer == "unsat"]
    assert len(final) <= 2 and all(p.L < a.L for p in final)
    assert not final or final[-1].L == a.L - 1
    assert len(final) < 2 or (final[0].L == at_final[0].L and final[0].from_L is None)


def test_start_windows_hold_on_solutions_and_close_below_recmii():
    g = flash_attention_backward_blackwell()
    r = algorithm1(g)
    hi = {i.name: r.L - max(i.cycles, 1) for i in g.instructions}
    lo, up = start_windows(g, r.I, hi)
    shift = min(r.schedule.values())
    assert all(lo[v] <= s - shift and s - shift <= up[v] for v, s in r.schedule.items())
    assert any(lo[v] > 0 for v in lo) and any(up[v] < hi[v] for v in up)  # they do cut
    loop = DependenceGraph(
        "loop", (Instruction("a", 1, {"U": (1,)}),), (Edge("a", "a", 3, 1),),
        MachineDescription("m", {"U": 1}, warps=1),
    )  # fmt: skip
    lo, up = start_windows(loop, 2, {"a": 5})  # RecMII is 3
    assert lo["a"] > up["a"]
    assert build_phase2_model(loop, 2, 6).trivially_unsat
    assert swp_and_ws(loop, 2, 6).answer == "unsat"


def test_unknown_window_search_is_an_error():
    from twill.errors import InvalidProblemError

    with pytest.raises(InvalidProblemError, match="window must be one of monotone, scan"):
        algorithm1(
            flash_attention_forward_blackwell(), SolverOptions(twill=TwillSettings(window="binary"))
        )


def test_time_limit_gives_unknown_never_unsat():
    g = flash_attention_forward_blackwell()
    out = solve_window(
        g,
        2,
        5,
        SolverOptions(twill=TwillSettings(point_time_limit=1e-6)),
        rules=WarpRules.for_graph(g, cross_warp=False),
    )
    assert out.answer == "unknown" and out.final is None and not out.first_proven
    # Z3's least timeout is 1 ms: the first check (LEN(M), 0.2-0.7 s unlimited) times out; a
    # later incremental one proved unsat in 1.5-4 ms unlimited at load 10 here, so a fast
    # quiet machine may legitimately finish it within 1 ms (the window stays unknown)
    assert out.checks and out.checks[0].answer == "unknown"
    assert {r.answer for r in out.checks[1:]} <= {"unknown", "unsat"}


def test_unsat_window_with_unproven_length_is_not_infeasible():
    """An unproven LEN(M) leaves the window itself unproven: no INFEASIBLE, no optimal I."""
    import dataclasses

    from twill.results import Status
    from twill.sched.exact.search import search_min_ii

    g = flash_attention_forward_blackwell()
    rules = WarpRules.for_graph(g, cross_warp=False)  # unsat in the whole first window
    p1 = search_min_ii(g)
    assert (
        algorithm1(g, SolverOptions(twill=TwillSettings(probe=True)), phase1=p1, rules=rules).status
        is Status.INFEASIBLE
    )
    unproven = dataclasses.replace(p1, L_optimal=False)
    r = algorithm1(g, SolverOptions(twill=TwillSettings(probe=True)), phase1=unproven, rules=rules)
    assert r.status is Status.UNKNOWN and not r.optimal
    assert r.points and {p.answer for p in r.points} == {"unsat"}  # LEN(M), then the top
