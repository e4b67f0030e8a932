"""GauSSolver takes the shared SolverOptions (seed, time limit, progress callback)."""

from __future__ import annotations

from twill.gaus_solver import GauSSolver, generate_random_dag
from twill.options import SolverOptions


def test_options_replace_the_keywords() -> None:
    calls: list[int] = []
    options = SolverOptions(time_limit=30, seed=3, on_progress=lambda step, *_: calls.append(step))
    s = GauSSolver(generate_random_dag(20, 0.2, 0, seed=2), seed=9, max_iters=20, options=options)
    assert s.seed == 3 and s.settings.time_limit == 30.0
    r = s.solve_memory()
    assert r.legal and calls, "the options' callback saw the Adam steps"


def test_options_give_the_same_run_as_the_keywords() -> None:
    g = generate_random_dag(20, 0.2, 0, seed=2)
    by_keyword = GauSSolver(g, seed=4, max_iters=30).solve_memory()
    by_options = GauSSolver(g, max_iters=30, options=SolverOptions(seed=4)).solve_memory()
    assert by_keyword.schedule == by_options.schedule
    assert by_keyword.objective == by_options.objective
