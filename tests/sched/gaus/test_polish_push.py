"""Push moves: dependants shift along, legality holds, the objective-first descent never
gets worse, and on a design with delays it beats the single-move search."""

from __future__ import annotations

import numpy as np
import pytest

from twill.gaus_solver import GauSSolver, generate_random_dag
from twill.io.aiger import read_aiger
from twill.sched.baselines.list_sched import start_steps
from twill.sched.gaus.bounds import default_D
from twill.sched.gaus.graph import from_dependence_graph, gaus_view
from twill.sched.gaus.polish import polish_resource
from twill.sched.gaus.polish_push import Adjacency, PushMoves, polish_push_resource, push_closure
from twill.sched.gaus.verify import objective_a, schedule_violations


def _list_t(g, D: int) -> np.ndarray:
    t = start_steps(g, "A", D)
    assert t is not None
    return t


@pytest.mark.parametrize("seed", [0, 1])
def test_push_closure_keeps_every_dependence(seed: int) -> None:
    g = from_dependence_graph(generate_random_dag(80, 0.06, 0, seed=seed))
    D = default_D(g, "A") + 6
    t = _list_t(g, D)
    adj = Adjacency(g)
    for i in range(0, g.n, 7):
        for b in (0, int(t[i]) - 3, int(t[i]) + 3, D - 1):
            new = push_closure(adj, t, i, b, D, cap=g.n)
            if new is None:
                continue
            moved = t.copy()
            moved[list(new)] = list(new.values())
            assert moved[i] == b and schedule_violations(g, moved, D) == []


@pytest.mark.parametrize("peak_first", [False, True])
def test_descent_is_legal(peak_first: bool) -> None:
    g = from_dependence_graph(generate_random_dag(60, 0.08, 0, seed=3))
    D = default_D(g, "A") + 4
    t = _list_t(g, D)
    out, _ = polish_push_resource(g, t, D, 100.0, moves=PushMoves(peak_first=peak_first))
    assert schedule_violations(g, out, D) == []
    if not peak_first:
        assert objective_a(g, out, 100.0) <= objective_a(g, t, 100.0)


def test_router_beats_the_single_move_search(benchmark_data) -> None:
    g = gaus_view(read_aiger(benchmark_data / "epfl" / "router.aig"))
    D = default_D(g, "A")
    single, _ = polish_resource(g, _list_t(g, D), D, 100.0)
    pushed, moves = polish_push_resource(g, single, D, 100.0, time_limit=20)
    assert moves > 0 and schedule_violations(g, pushed, D) == []
    assert objective_a(g, pushed, 100.0) < objective_a(g, single, 100.0)


def test_solver_reports_push_moves(benchmark_data) -> None:
    graph = read_aiger(benchmark_data / "epfl" / "ctrl.aig")
    r = GauSSolver(graph, max_iters=300).solve_resource()
    assert r.legal and "push moves" in r.message
    assert r.objective is not None and r.objective < r.gaus_objective
