"""Large-neighbourhood search: pinned models reproduce the schedule, the search stays legal
and never worsens, reaches CP-SAT's proven optimum on a small graph, the capped list
schedules respect their cap, and GauS runs it when ``lns_time`` is set."""

from __future__ import annotations

import numpy as np
import pytest
from ortools.sat.python import cp_model

from twill.errors import InvalidProblemError
from twill.gaus_solver import GauSSolver, generate_random_dag
from twill.io.aiger import read_aiger
from twill.results import Status
from twill.sched.baselines.exact import ModelSpec, build_model, exact_schedule
from twill.sched.baselines.list_sched import capped_list_schedule, list_schedule, start_steps
from twill.sched.gaus.bounds import default_D
from twill.sched.gaus.graph import asap_alap, from_dependence_graph, gaus_view
from twill.sched.gaus.polish_lns import (
    LNSProblem,
    _baseline_starts,
    _free_windows,
    _promising,
    _rounded_starts,
    best_so_far,
    lns_improve,
    lns_search,
)
from twill.sched.gaus.polish_push import Adjacency
from twill.sched.gaus.verify import discrete_objective, resource_profile, schedule_violations


def _list_t(g, formulation: str, D: int) -> np.ndarray:
    t = start_steps(g, formulation, D)
    assert t is not None
    return t


@pytest.mark.parametrize("formulation", ["A", "B"])
def test_pinned_model_reproduces_the_schedule_and_its_objective(formulation: str) -> None:
    g = from_dependence_graph(generate_random_dag(40, 0.1, 0, seed=2))
    D = default_D(g, formulation) + 3
    t = _list_t(g, formulation, D)
    m, s, scale = build_model(g, ModelSpec(formulation, D, None, 100.0, t, t))
    solver = cp_model.CpSolver()
    solver.parameters.num_workers = 1
    assert solver.Solve(m) == cp_model.OPTIMAL
    assert [solver.Value(v) for v in s] == t.tolist()
    want = discrete_objective(g, t, formulation, D=D, ratio=100.0)
    assert solver.ObjectiveValue() / scale == pytest.approx(want)


@pytest.mark.parametrize("formulation", ["A", "B"])
def test_peak_cap_excludes_exactly_the_schedules_above_it(formulation: str) -> None:
    g = from_dependence_graph(generate_random_dag(40, 0.1, 0, seed=2))
    D = default_D(g, formulation) + 3
    t = _list_t(g, formulation, D)
    peak = int(np.ceil(discrete_objective(g, t, formulation, D=D, ratio=0.0) - 1e-9))
    if formulation == "A":
        peak = int(np.ceil(resource_profile(g, t).max()))
    solver = cp_model.CpSolver()
    solver.parameters.num_workers = 1
    for cap, want in ((peak, cp_model.OPTIMAL), (peak - 1, cp_model.INFEASIBLE)):
        m, _, _ = build_model(g, ModelSpec(formulation, D, None, 100.0, t, t, peak_cap=cap))
        assert solver.Solve(m) == want


def test_pinned_ops_that_break_an_edge_make_the_model_infeasible() -> None:
    g = from_dependence_graph(generate_random_dag(20, 0.2, 0, seed=4))
    D = default_D(g, "A") + 3
    t = _list_t(g, "A", D)
    e = int(np.flatnonzero(g.forward & (g.delay > 0))[0])
    broken = t.copy()
    broken[g.dst[e]] = broken[g.src[e]]  # the consumer starts with its producer
    solver = cp_model.CpSolver()
    m, _, _ = build_model(g, ModelSpec("A", D, None, 100.0, broken, broken))
    assert solver.Solve(m) == cp_model.INFEASIBLE


@pytest.mark.parametrize("seed", [1, 6, 9])
def test_narrowed_neighbourhood_windows_keep_the_neighbourhood_optimum(seed: int) -> None:
    """A freed op's window narrowed by its pinned neighbours contains the current start,
    and the pinned model's optimum over it equals the optimum over the ASAP/ALAP window."""
    g = from_dependence_graph(generate_random_dag(30, 0.15, 0, seed=seed))
    D = default_D(g, "A") + 4
    t = _list_t(g, "A", D)
    free = np.sort(np.random.default_rng(seed).choice(g.n, 12, replace=False))
    wide = asap_alap(g, D)
    lo, hi = _free_windows(Adjacency(g), t, free, wide)
    assert np.all(lo <= t) and np.all(t <= hi)
    assert np.all(lo >= wide[0]) and np.all(hi <= wide[1])
    assert np.sum(hi - lo) < np.sum(wide[1][free] - wide[0][free])
    optima = []
    for low, high in (
        (lo, hi),
        (
            np.where(np.isin(np.arange(g.n), free), wide[0], t),
            np.where(np.isin(np.arange(g.n), free), wide[1], t),
        ),
    ):
        m, _, scale = build_model(g, ModelSpec("A", D, None, 100.0, low, high))
        solver = cp_model.CpSolver()
        solver.parameters.num_workers = 1
        assert solver.Solve(m) == cp_model.OPTIMAL
        optima.append(solver.ObjectiveValue() / scale)
    assert optima[0] == pytest.approx(optima[1])


@pytest.mark.parametrize("formulation", ["A", "B"])
def test_search_is_legal_and_reaches_the_proven_optimum(formulation: str) -> None:
    graph = generate_random_dag(14, 0.2, 0, seed=5)
    g = gaus_view(graph)
    D = default_D(g, formulation) + 2
    exact = exact_schedule(graph, formulation, D=D, time_limit=30)
    assert exact.status is Status.OPTIMAL
    t = _list_t(g, formulation, D)
    best, rep = lns_improve(LNSProblem(g, formulation, D), t, time_limit=5.0, size=g.n)
    assert schedule_violations(g, best, D) == []
    assert rep.after == discrete_objective(g, best, formulation, D=D, ratio=100.0)
    assert rep.after == pytest.approx(exact.objective)
    assert rep.after <= rep.before


def test_search_improves_a_move_based_local_optimum_on_epfl_ctrl(benchmark_data) -> None:
    graph = read_aiger(benchmark_data / "epfl" / "ctrl.aig")
    g = gaus_view(graph)
    D = default_D(g, "A")
    r = GauSSolver(graph, D=D, max_iters=200).solve("A")
    t = np.array([r.schedule[name] for name in g.names], dtype=np.int64)
    best, rep, start = lns_search(LNSProblem(g, "A", D), t, time_limit=6.0)
    assert schedule_violations(g, best, D) == []
    assert rep.after < r.objective and start
    assert rep.history[0][1] >= rep.history[-1][1] == rep.after
    # the time-indexed LP's bound (None when the short budget cut an LP) holds against
    # ctrl's optimum, 2246 (proven by CP-SAT with the precedence cuts; docs/benchmarks.md)
    assert rep.lower_bound is None or rep.lower_bound <= 2246


@pytest.mark.parametrize(
    ("formulation", "II", "names"),
    [("B", None, ["ASAP", "ALAP"]), ("C", 6, ["list", "force-directed"])],
)
def test_b_and_c_race_legal_baseline_starts_and_end_no_worse_than_any(
    formulation: str, II: int | None, names: list[str]
) -> None:
    dag = generate_random_dag(50, 0.08, 3 if formulation == "C" else 0, seed=3)
    g = from_dependence_graph(dag).with_caps(6.0)
    D = default_D(g, formulation, II) + 3
    problem = LNSProblem(g, formulation, D, II)
    starts = _baseline_starts(problem)
    assert [name for name, _ in starts] == names
    for _, t in starts:
        assert problem.legal(t)
    worst = max(starts, key=lambda s: problem.objective(s[1]))[1]
    best, rep, start = lns_search(problem, worst, time_limit=4.0)
    assert schedule_violations(g, best, D, II) == []
    assert rep.after == problem.objective(best)
    assert rep.after <= min(problem.objective(t) for _, t in starts)
    assert start in ["GauS", *names]


def test_capped_list_schedule_respects_its_cap() -> None:
    g = from_dependence_graph(generate_random_dag(60, 0.08, 0, seed=4))
    D = default_D(g, "A") + 4
    usage = g.usage[:, 0, 0]
    peaks = []
    for cap in range(int(usage.max()), int(usage.sum()) + 1):
        t = capped_list_schedule(g, D, cap)
        if t is None:
            continue
        assert schedule_violations(g, t, D) == []
        peak = np.bincount(t, weights=usage, minlength=D).max()
        assert peak <= cap + 1e-9
        peaks.append(peak)
    assert peaks, "some cap must be met"
    assert capped_list_schedule(g, D, 0) is None


def test_gaus_runs_the_search_when_asked_and_refuses_a_negative_time() -> None:
    graph = generate_random_dag(30, 0.1, 0, seed=1)
    g = gaus_view(graph)
    D = default_D(g, "A") + 2
    r = GauSSolver(graph, D=D, max_iters=100, lns_time=2.0).solve("A")
    assert r.legal and r.steps_seconds["lns"] > 0
    assert r.objective <= list_schedule(graph, "A", D=D).objective
    with pytest.raises((InvalidProblemError, ValueError)):
        GauSSolver(graph, D=D, lns_time=-1.0)


def test_a_native_cpsat_failure_in_a_neighbourhood_keeps_the_schedule(monkeypatch, caplog) -> None:
    """CP-SAT once raised ``IndexError: absl::btree_map::at`` inside a neighbourhood's solve
    (EPFL ``bar``, formulation A): the search must log it, skip that neighbourhood and go on."""
    from twill.sched.baselines import exact

    real, calls = exact.solve_cpsat, []

    def flaky(solver, model):  # noqa: ANN001, ANN202
        calls.append(1)
        if len(calls) % 2:
            raise IndexError("absl::btree_map::at")
        return real(solver, model)

    monkeypatch.setattr(exact, "solve_cpsat", flaky)
    g = from_dependence_graph(generate_random_dag(30, 0.15, 0, seed=3))
    D = default_D(g, "A") + 2
    t = _list_t(g, "A", D)
    with caplog.at_level("WARNING", logger="twill.sched.baselines.exact"):
        best, rep = lns_improve(LNSProblem(g, "A", D), t, time_limit=2.0)
    assert len(calls) >= 2 and rep.rounds == len(calls)
    assert "absl::btree_map::at" in caplog.text
    assert schedule_violations(g, best, D) == []
    assert rep.after == discrete_objective(g, best, "A", D=D, ratio=100.0) <= rep.before


def test_the_least_communication_start_beats_list_scheduling_on_epfl_priority(
    benchmark_data,
) -> None:
    """On ``priority`` (depth 251, windows of 63 steps and more) the rounded
    least-communication schedule is far better than the list schedule, and legal."""
    g = gaus_view(read_aiger(benchmark_data / "epfl" / "priority.aig"))
    D = default_D(g, "A")
    problem = LNSProblem(g, "A", D)
    t = _list_t(g, "A", D)
    starts = dict(_rounded_starts(problem, t, deadline=float("inf")))
    [least] = [s for name, s in starts.items() if name.startswith("least-communication")]
    assert problem.legal(least) and problem.objective(least) < 0.6 * problem.objective(t)
    assert all(problem.legal(s) and problem.objective(s) < problem.objective(t)
               for s in starts.values())  # fmt: skip


def test_starts_far_behind_the_best_are_not_raced() -> None:
    class ByFirstEntry(LNSProblem):
        def objective(self, t: np.ndarray) -> float:
            return float(t[0])

    g = from_dependence_graph(generate_random_dag(10, 0.2, 0, seed=3))
    problem = ByFirstEntry(g, "A", default_D(g, "A"))
    starts = [(name, np.array([v])) for name, v in (("GauS", 12), ("far", 16), ("near", 15))]
    starts.insert(1, ("best", np.array([10])))
    assert [name for name, _ in _promising(problem, starts)] == ["GauS", "best", "near"]
    in_b = ByFirstEntry(g, "B", default_D(g, "B"))
    starts = [(name, np.array([v])) for name, v in (("GauS", 10), ("far", 31), ("near", 30))]
    assert [name for name, _ in _promising(in_b, starts)] == ["GauS", "near"]


def test_lp_guided_starts_are_skipped_where_the_relaxation_is_too_large(monkeypatch) -> None:
    from twill.sched.gaus import polish_lns

    g = from_dependence_graph(generate_random_dag(30, 0.15, 0, seed=3))
    D = default_D(g, "A") + 3
    problem = LNSProblem(g, "A", D)
    t = _list_t(g, "A", D)
    monkeypatch.setattr(polish_lns, "_LP_MAX_VARIABLES", 0)
    assert polish_lns._lp_guided_starts(problem, t, 10.0, 0) == ([], None)


@pytest.mark.parametrize("slack", [0.0, 0.05])
def test_rounding_below_the_peak_takes_the_lowest_peak_within_the_slack(
    slack: float, benchmark_data
) -> None:
    from twill.sched.baselines.time_indexed import capped_rounding
    from twill.sched.gaus.polish_lns import _rounded_below

    g = gaus_view(read_aiger(benchmark_data / "epfl" / "ctrl.aig"))  # one resource, as in its use
    D = default_D(g, "A")
    problem = LNSProblem(g, "A", D)
    t = asap_alap(g, D)[0].astype(np.int64)  # legal in A; peak 29
    peak, limit = int(resource_profile(g, t).max()), (1 + slack) * problem.objective(t)
    within = []
    for cap in range(22, peak):  # the caps it tries: from 28 down to 0.75 * 29
        for backward in (False, True):
            c = capped_rounding(g, D, t.astype(float), float(cap), backward=backward)
            key = (int(resource_profile(g, c).max()), problem.objective(c))
            if problem.legal(c) and key[0] < peak and key[1] <= limit:
                within.append(key)
    got = _rounded_below(problem, t, slack=slack)
    assert within, "ASAP's peak on ctrl is well above what a capped rounding reaches"
    assert problem.legal(got)
    assert (int(resource_profile(g, got).max()), problem.objective(got)) == min(within)


def test_the_peak_lowering_finish_is_legal_and_no_worse_than_its_start() -> None:
    from twill.sched.gaus import polish_lns

    g = from_dependence_graph(generate_random_dag(40, 0.1, 0, seed=2))
    D = default_D(g, "A") + 3
    problem = LNSProblem(g, "A", D)
    t = _list_t(g, "A", D)
    best, rep = polish_lns._improve_and_lower_the_peak(problem, t, time_limit=3.0, seed=0)
    assert problem.legal(best) and rep.after == problem.objective(best) <= problem.objective(t)
    assert rep.before == problem.objective(t)


@pytest.mark.parametrize(
    ("stage_seconds", "afters", "winner"),
    [
        (1.0, [10.0, 7.0], 1),
        (0.3, [10.0, 7.0, 8.0], 1),
        (0.3, [10.0, 9.0, 6.0], 2),
        (0.2, [10.0, 7.0, 8.0, 6.5, 6.0], 4),
    ],
)
def test_the_peak_lowering_finish_rounds_each_stage_below_its_peak_and_keeps_the_best(
    monkeypatch, stage_seconds: float, afters: list[float], winner: int
) -> None:
    """``time_limit / _STAGE_SECONDS`` stages (at least two); each later stage starts from
    the previous stage's result rounded below its peak, but the last of three or more from
    the best schedule so far; the best stage's schedule is the result, with the rounds of
    all stages counted and the curve the best so far of all."""
    from twill.sched.gaus import polish_lns

    g = from_dependence_graph(generate_random_dag(40, 0.1, 0, seed=2))
    D = default_D(g, "A") + 3
    problem = LNSProblem(g, "A", D)
    t = _list_t(g, "A", D)
    calls, clocks, rounded = [], [], []
    curves = [
        [(0.5, 12.0), (1.0, 10.0)],
        [(2.0, 11.0), (3.0, 7.0)],
        [(4.0, 8.0), (5.0, 6.0)],
        [(6.0, 6.5)],
        [(7.0, 6.0)],
    ]

    def fake(problem, start, *, time_limit, seed, clock):  # noqa: ANN001, ANN202
        calls.append(start)
        clocks.append(clock)
        k = len(calls) - 1
        report = polish_lns.LNSReport(rounds=5, improvements=1, after=afters[k],
                                      history=curves[k])  # fmt: skip
        return start + 1, report

    def lower(problem, result):  # noqa: ANN001, ANN202
        rounded.append(result + 100)
        return rounded[-1]

    shifts = []

    def shift(problem, start, time_limit, seed):  # noqa: ANN001, ANN202
        shifts.append((start, time_limit))
        return start  # found nothing better: the stage's search starts from ``start``

    monkeypatch.setattr(polish_lns, "lns_improve", fake)
    monkeypatch.setattr(polish_lns, "_rounded_below", lower)
    monkeypatch.setattr(polish_lns, "_shifted", shift)
    monkeypatch.setattr(polish_lns, "_STAGE_SECONDS", stage_seconds)
    best, rep = polish_lns._improve_and_lower_the_peak(
        problem, t, time_limit=1.0, seed=0, clock=123.0
    )
    assert len(calls) == len(afters) and calls[0] is t
    last = len(calls) - 1 if len(calls) >= 3 else len(calls)
    assert all(calls[k] is rounded[k - 1] for k in range(1, last))
    assert all(np.array_equal(rounded[k], calls[k] + 101) for k in range(len(rounded)))
    if last < len(calls):  # the last stage searches on from the best of the others
        assert len(rounded) == last - 1
        best_before = min(range(last), key=lambda k: afters[k])
        assert np.array_equal(calls[last], calls[best_before] + 1)
    assert np.array_equal(best, calls[winner] + 1) and rep.after == afters[winner]
    # each stage first tries the whole-schedule shift on its start, with a third of its time
    assert [start for start, _ in shifts] == calls
    assert all(0 < limit <= 1.0 / len(afters) / 3 + 1e-9 for _, limit in shifts[:1])
    assert (rep.rounds, rep.improvements) == (6 * len(afters), len(afters))
    assert rep.before == problem.objective(t)
    assert clocks == [123.0] * len(afters)  # every stage counts from the caller's clock
    assert rep.history == best_so_far([pt for curve in curves[: len(afters)] for pt in curve])
    if len(afters) == 2:
        assert rep.history == [(0.5, 12.0), (1.0, 10.0), (3.0, 7.0)]


@pytest.mark.parametrize("seed", [3, 8])
def test_the_shift_finds_the_best_schedule_within_one_step_of_each_start(seed: int) -> None:
    """:func:`_shifted` against enumeration: the best legal schedule with every op within
    one step of its start (and its window) and no higher peak; the start itself when
    nothing is better."""
    import itertools

    from twill.sched.gaus import polish_lns

    g = from_dependence_graph(generate_random_dag(9, 0.25, 0, seed=seed))
    D = default_D(g, "A") + 2
    problem = LNSProblem(g, "A", D)
    asap, alap = asap_alap(g, D)
    t = alap.astype(np.int64)  # every op as late as it can: long edges to shorten
    peak = polish_lns._peak(g, t)
    ranges = [range(max(asap[i], t[i] - 1), min(alap[i], t[i] + 1) + 1) for i in range(g.n)]
    best = min(
        problem.objective(np.array(c))
        for c in itertools.product(*ranges)
        if problem.legal(np.array(c)) and polish_lns._peak(g, np.array(c)) <= peak
    )
    shifted = polish_lns._shifted(problem, t, 10.0, seed)
    assert problem.legal(shifted) and problem.objective(shifted) == best
    assert (shifted is t) == (best == problem.objective(t))


def test_best_so_far_keeps_each_point_that_lowers_the_best_in_time_order() -> None:
    points = [(2.0, 9.0), (0.0, 12.0), (1.0, 10.0), (1.5, 10.0), (3.0, 11.0), (4.0, 8.0)]
    assert best_so_far(points) == [(0.0, 12.0), (1.0, 10.0), (2.0, 9.0), (4.0, 8.0)]
    assert best_so_far([]) == []


def test_the_search_extends_gaus_any_time_curve_on_the_call_clock() -> None:
    graph = generate_random_dag(60, 0.08, 0, seed=1)
    g = gaus_view(graph)
    D = default_D(g, "A") + 3
    r = GauSSolver(graph, D=D, max_iters=100, lns_time=3.0).solve("A")
    assert "large-neighbourhood search" in r.message  # it improved this instance
    times = [s for s, _ in r.polish_history]
    objectives = [o for _, o in r.polish_history]
    assert times == sorted(times) and times[-1] <= r.seconds
    assert all(a > b for a, b in zip(objectives, objectives[1:], strict=False))
    assert objectives[-1] == r.objective
    # the search runs after GauS's own optimisation: its last point comes after that curve
    assert times[-1] > max(s for s, _ in r.objective_history)


@pytest.mark.parametrize(
    ("gains", "afters", "kept", "winner"),
    [
        ([5.0, 5.0, 5.0], [100.0, 110.0, 120.0], [], 0),
        ([5.0, 1.0, 5.0, 0.0, 0.0], [100.0, 101.0, 120.0, 99.0, 98.0], [0, 1], 1),
        ([5.0, 1.0, 30.0, 0.0, 0.0], [100.0, 110.0, 120.0, 99.0, 97.0], [0, 2], 2),
    ],
)
def test_the_race_gives_a_second_round_only_to_starts_that_could_catch_the_leader(
    monkeypatch, gains: list[float], afters: list[float], kept: list[int], winner: int
) -> None:
    """Each start gets a quarter of the budget over all starts in the first round; those
    that, gaining as much again, would come within ``_RACE_KEEP`` of the leader share the
    second half; the best wins, its rounds of both rounds counted, and a lone leader ends
    the race after the first round."""
    from twill.sched.gaus import polish_lns

    g = from_dependence_graph(generate_random_dag(30, 0.1, 0, seed=4))
    problem = LNSProblem(g, "A", default_D(g, "A") + 2)
    starts = [(f"s{k}", np.full(g.n, 10 * k, dtype=np.int64)) for k in range(3)]
    calls = []

    def fake(problem, start, *, time_limit, seed, clock):  # noqa: ANN001, ANN202
        calls.append((int(start[0]), time_limit, clock))
        after = afters[len(calls) - 1]
        before = after + gains[len(calls) - 1]
        report = polish_lns.LNSReport(rounds=2, improvements=1, before=before, after=after,
                                      history=[(float(len(calls)), after)])  # fmt: skip
        return start + 1, report

    monkeypatch.setattr(polish_lns, "lns_improve", fake)
    k, cand, rep, history = polish_lns._race(problem, starts, 12.0, 0, 5.0)
    first = [(10 * j, 2.0, 5.0) for j in range(3)]
    second = [(10 * j + 1, 6.0 / len(kept), 5.0) for j in kept]
    assert calls == first + second
    assert k == winner and rep.after == min(afters)
    assert np.array_equal(cand, starts[winner][1] + (2 if kept else 1))
    assert rep.rounds == (4 if kept else 2)
    assert sorted(history) == [(float(j + 1), a) for j, a in enumerate(afters)]


@pytest.mark.parametrize(
    ("afters", "expected", "winner", "rounds"),
    [
        # s1 would end its first round at 120 at its glance's pace: cut; s0 and s2 go on
        # (1 s each), then both could catch the leader and share the second half (3 s each)
        (
            [100.0, 130.0, 101.0, 98.0, 99.5, 97.0, 96.0],
            [(0, 1.0), (10, 1.0), (20, 1.0), (1, 1.0), (21, 1.0), (2, 3.0), (22, 3.0)],
            2,
            6,
        ),
        # only s0 is on pace after the glance: it ends its first round and the race
        ([100.0, 130.0, 140.0, 98.0], [(0, 1.0), (10, 1.0), (20, 1.0), (1, 1.0)], 0, 4),
    ],
)
def test_the_race_cuts_starts_off_the_leaders_pace_after_a_glance(
    monkeypatch, afters: list[float], expected: list[tuple[int, float]], winner: int, rounds: int
) -> None:
    """Where a first round is longer than ``_RACE_GLANCE``, each start first gets the
    glance; those that, gaining at its pace to the end of the first round, would not come
    within ``_RACE_KEEP`` of the leader are cut, the others end their first round, and the
    second round follows the usual rule, with each report's ``before`` the start's value."""
    from twill.sched.gaus import polish_lns

    g = from_dependence_graph(generate_random_dag(30, 0.1, 0, seed=4))
    problem = LNSProblem(g, "A", default_D(g, "A") + 2)
    starts = [(f"s{k}", np.full(g.n, 10 * k, dtype=np.int64)) for k in range(3)]
    gains = {0: 5.0, 10: 10.0, 20: 1.0}
    calls = []

    def fake(problem, start, *, time_limit, seed, clock):  # noqa: ANN001, ANN202
        calls.append((int(start[0]), time_limit))
        after = afters[len(calls) - 1]
        report = polish_lns.LNSReport(rounds=2, improvements=1, after=after,
                                      before=after + gains.get(int(start[0]), 0.0),
                                      history=[(float(len(calls)), after)])  # fmt: skip
        return start + 1, report

    monkeypatch.setattr(polish_lns, "lns_improve", fake)
    monkeypatch.setattr(polish_lns, "_RACE_GLANCE", 1.0)
    k, cand, rep, history = polish_lns._race(problem, starts, 12.0, 0, 5.0)
    assert calls == expected
    assert k == winner and rep.after == min(afters)
    assert rep.before == afters[winner] + gains[10 * winner]
    assert rep.rounds == rounds
    assert sorted(history) == [(float(j + 1), a) for j, a in enumerate(afters)]
