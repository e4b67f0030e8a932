"""Algorithm 1 (paper §5): window, first-sat wins, points recorded, probe mode, optimality."""

from __future__ import annotations

from twill.kernels import flash_attention_forward_blackwell, flash_attention_forward_simplified
from twill.options import SolverOptions
from twill.results import Status
from twill.sched.exact.algorithm1 import algorithm1, length_window
from twill.sched.exact.settings import TwillSettings
from twill.sched.verify_warps import WarpRules
from twill.twill_solver import twill_solve


def test_window():
    assert list(length_window(2, 5)) == [5, 6]
    assert list(length_window(4, 4)) == [4]


def test_simplified_optimal_with_warps():
    r = algorithm1(flash_attention_forward_simplified())
    assert (r.I, r.L, r.optimal, r.phase1_I) == (2, 4, True, 2)
    assert r.schedule == {"S": 0, "P": 2, "O": 3} and set(r.warps) == {"S", "P", "O"}
    assert [p.answer for p in r.points] == ["sat"]


def test_probe_mode_ends_unsat_ablation_with_proofs():
    g = flash_attention_forward_blackwell()
    r = algorithm1(
        g,
        SolverOptions(twill=TwillSettings(probe=True)),
        rules=WarpRules.for_graph(g, cross_warp=False),
    )
    assert r.status is Status.INFEASIBLE and r.I is None
    # LEN(M) = 5 is asked first, then one refutation at the window's top covers [5, 6]
    assert [(p.I, p.from_L, p.L, p.answer) for p in r.points] == [
        (2, None, 5, "unsat"), (2, 5, 6, "unsat")]  # fmt: skip
    scan = algorithm1(
        g,
        SolverOptions(twill=TwillSettings(probe=True, window="scan")),
        rules=WarpRules.for_graph(g, cross_warp=False),
    )
    assert [(p.I, p.L, p.answer) for p in scan.points] == [(2, 5, "unsat"), (2, 6, "unsat")]


def test_capped_search_moves_to_larger_I():
    g = flash_attention_forward_blackwell()
    r = algorithm1(g, max_I=3, rules=WarpRules.for_graph(g, warps=3))
    assert r.points[0].answer == "unsat" and r.I in (None, 3)
    if r.I is not None:
        assert r.optimal and r.status is Status.OPTIMAL  # every earlier point proven unsat


def test_twill_solve_returns_warps_points_and_phase1_I():
    r = twill_solve(flash_attention_forward_simplified(), max_I=5)
    d = r.to_dict()
    assert d["I"] == 2 and d["optimal"] and d["phase1_I"] == 2
    assert d["warps"].keys() == {"S", "P", "O"} and d["points"][0]["answer"] == "sat"


def test_options_apply_through_solve(monkeypatch):
    """``solve(problem, options)``: the options' deadline bounds every Phase-2 point and its
    progress callback receives the events (issue 40: no keyword duplicates)."""

    from twill.options import SolverOptions
    from twill.sched.exact import algorithm1 as a1
    from twill.sched.exact.settings import TwillSettings
    from twill.sched.problems import WarpSpecProblem

    limits: list = []

    def spy(graph, ii, low, options, **kw):
        limits.append((options.twill.point_time_limit, options.deadline.remaining()))
        return real(graph, ii, low, options, **kw)

    real = a1.solve_window
    monkeypatch.setattr(a1, "solve_window", spy)
    g = flash_attention_forward_simplified()
    events: list = []
    o = SolverOptions(time_limit=50, on_progress=events.append,
                      twill=TwillSettings(point_time_limit=20))  # fmt: skip
    r = a1.run(WarpSpecProblem(g), o)
    assert events and [lim for lim, _ in limits] == [20]
    assert 0 < limits[0][1] <= 50  # the time left when the point was entered
    assert (r.I, r.L, r.optimal) == (2, 4, True)
    assert a1.solve(WarpSpecProblem(g), o).solution == r.warp_schedule is not None


def test_workers_examine_later_intervals_at_once_with_the_same_answer():
    """With two workers the next I is examined speculatively in a worker process; every
    point, the answer and its proofs equal the sequential run's (Hopper backward: the window
    at Phase 1's I = 5 is unsat, so the search goes on to I = 6 and stops there)."""
    from twill.kernels import flash_attention_backward_hopper

    g = flash_attention_backward_hopper()
    alone = algorithm1(g, SolverOptions(twill=TwillSettings(backend="cpsat")))
    both = algorithm1(
        g, SolverOptions(threads=2, workers=2, twill=TwillSettings(backend="cpsat")), max_I=9
    )
    assert (both.I, both.L, both.optimal, both.L_optimal) == (6, 6, True, True)
    assert (alone.I, alone.L, alone.optimal) == (both.I, both.L, both.optimal)
    assert [(p.I, p.L, p.answer) for p in both.points] == [
        (p.I, p.L, p.answer) for p in alone.points
    ]
    assert both.schedule == alone.schedule and both.assignment == alone.assignment
