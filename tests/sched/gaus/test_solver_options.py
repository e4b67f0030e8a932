"""GauSSolver takes the shared SolverOptions (seed, time limit, threads, progress callback)."""

from __future__ import annotations

import pickle

import pytest

from twill.errors import InvalidProblemError
from twill.gaus_solver import GauSSolver, generate_random_dag
from twill.options import SolverOptions
from twill.progress import ProgressEvent


def test_options_replace_the_keywords() -> None:
    events: list[ProgressEvent] = []
    options = SolverOptions(time_limit=30, seed=3, on_progress=events.append)
    s = GauSSolver(generate_random_dag(20, 0.2, 0, seed=2), max_iters=20, options=options)
    assert s.seed == 3 and s.options.time_limit == 30.0 and s.settings.time_limit is None
    r = s.solve_memory()
    assert r.legal and events, "the options' callback saw the Adam steps"


def test_one_argument_progress_callback_gets_typed_events() -> None:
    """Regression (issue 40): a one-argument ``on_progress`` in the options crashed GauS with a
    TypeError, because GauS called it with five positional arguments."""
    seen: list[object] = []
    options = SolverOptions(on_progress=lambda event: seen.append(event))
    r = GauSSolver(generate_random_dag(20, 0.2, 0, seed=2), max_iters=20, options=options)
    assert r.solve_memory().legal
    assert seen and all(isinstance(e, ProgressEvent) for e in seen)
    last = seen[-1]
    assert isinstance(last, ProgressEvent) and last.method == "gaus" and last.total == 20
    assert [e.step for e in seen] == sorted(e.step for e in seen)  # type: ignore[attr-defined]
    assert pickle.loads(pickle.dumps(last)) == last


def test_a_keyword_and_the_options_must_agree() -> None:
    """Regression (issue 40): an explicit keyword is never silently replaced by the options;
    set in one place it is used, set in both places to different values it is an error."""
    g = generate_random_dag(20, 0.2, 0, seed=2)
    assert GauSSolver(g, seed=9, options=SolverOptions(time_limit=5)).seed == 9
    assert GauSSolver(g, threads=2, options=SolverOptions(time_limit=5)).settings.threads == 2
    with pytest.raises(InvalidProblemError, match="seed=9 as a keyword and seed=3 in the options"):
        GauSSolver(g, seed=9, options=SolverOptions(seed=3))


def test_options_give_the_same_run_as_the_keywords() -> None:
    g = generate_random_dag(20, 0.2, 0, seed=2)
    by_keyword = GauSSolver(g, seed=4, max_iters=30).solve_memory()
    by_options = GauSSolver(g, max_iters=30, options=SolverOptions(seed=4)).solve_memory()
    assert by_keyword.schedule == by_options.schedule
    assert by_keyword.objective == by_options.objective
